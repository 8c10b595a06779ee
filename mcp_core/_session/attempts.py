"""Failed connect attempts: how many in a row, what to log of each, and when a wait gives up.

A session counts the attempts that failed since it was last ready (or started). Each is
logged: the first of a run at WARNING with its cause (the stderr tail, the HTTP status and
URL), and so is one that fails differently from the one before; the rest at INFO, so a
server down for hours costs a line per retry, not a warning each time.

A readiness wait (``await_ready``, and so a ``with`` block) ends on a failed attempt when the
attempt is permanent, when the wait asked to fail fast, or when the last two attempts failed
the same way (``failure_key``): a server that exits with the same error at every start, or a
URL that answers 404 to everything, would only repeat it until ``init_timeout``. What the
wait raises then, or at its deadline, is ``gave_up``: one ``ConnectFailed`` saying how many
attempts failed for how long, then the last one's reason, with its typed cause. The client
itself keeps retrying with backoff (not after a permanent failure) until it is stopped.
"""

from __future__ import annotations

from .._vocabulary.errors import (
    ConnectFailed,
    HttpError,
    InitializationFailed,
    McpError,
    NotReady,
    ServerExited,
)

__all__ = ["Attempts", "failure_key"]

_LATER = (408, 429)  # HTTP statuses that say "later", not "no"


def failure_key(error: ConnectFailed) -> tuple[object, ...] | None:
    """What makes two failed attempts fail "the same way": a process that exited before the
    handshake with the same code and the same last line of stderr (a missing module, a bad
    flag), an HTTP 4xx with the same status (a wrong path: 404), or the same error to
    ``initialize``. ``None`` for what may pass by itself: a timeout, nothing answering at the
    URL (a server still starting), a 5xx or 429, an answer of the wrong shape."""
    cause = error.cause
    if isinstance(cause, ServerExited) and cause.code is not None:
        lines = [line for line in cause.stderr_tail.splitlines() if line.strip()]
        return ("exited", cause.code, lines[-1] if lines else "")
    if isinstance(cause, HttpError) and 400 <= cause.status < 500 and cause.status not in _LATER:
        return ("http", cause.status)
    if isinstance(cause, InitializationFailed):
        return ("initialize", cause.reason)
    return None


class Attempts:
    """The run of failed connect attempts of one session; see the module docstring."""

    __slots__ = ("_key", "count", "repeated", "since")

    def __init__(self) -> None:
        self.count = 0  # failed in a row
        self.since = 0.0  # when the run began: the session started, or was last ready
        self.repeated = False  # the last two failed the same way
        self._key: tuple[object, ...] | None = None

    def reset(self, now: float) -> None:
        """A new run begins: the session started, became ready, or lost a ready connection."""
        self.count, self.since, self.repeated, self._key = 0, now, False, None

    def failed(self, error: ConnectFailed, permanent: bool) -> tuple[str, str]:
        """Count ``error`` (its ``attempts`` is set); the level and line of its log record."""
        self.count += 1
        error.attempts = self.count
        key = failure_key(error)
        level = "WARNING" if self.count == 1 or key != self._key else "INFO"
        self.repeated = key is not None and key == self._key
        self._key = key
        then = "it will not be retried" if permanent else "retrying with backoff"
        return level, f"could not connect (attempt {self.count}): {error.reason}; {then}"

    def wait_over(self, last: ConnectFailed | None, state: str, now: float) -> McpError:
        """What a readiness wait raises when it ends: ``gave_up`` on the run's latest failure,
        or ``NotReady`` when no attempt has failed yet (the first is still under way)."""
        return NotReady(state) if last is None else self.gave_up(last, now)

    def gave_up(self, last: ConnectFailed, now: float) -> ConnectFailed:
        """What a readiness wait raises when it ends on ``last``, the run's latest failure."""
        how = f"{self.count} attempt{'' if self.count == 1 else 's'} in {now - self.since:.1f} s"
        if self.repeated:
            how += ", the last two failing the same way"
        return ConnectFailed(
            last.reason,
            http_error=last.http_error,
            cause=last.cause,
            attempts=self.count,
            gave_up=how,
        )
