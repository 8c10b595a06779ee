"""What both drivers' ``Client`` and ``ClientGroup`` do the same way, with no event loop and no
thread of their own: keeping the reservations callers pass for priced tools (and the one
record, for the whole process, of which were used), running the application's progress
callbacks and reservation methods without letting them break the driver, wording a failed
spawn, the group's keywords and per-server log, the params of ``completion/complete``, and
``call_tool(..., output_type=T)``'s pydantic step.

Each helper that logs takes the driver's logger, so a record still names the driver it came
from (``mcp_asyncio._client`` or ``mcp_sync._client``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
import os
import re
import sys
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from mcp_core import (
    CallToolResult,
    Event,
    InvalidArguments,
    McpError,
    NoHttpClient,
    NotSupported,
    OutputValidationError,
    ProgressUpdate,
    Reservation,
    Spec,
)
from mcp_core.driver import reservation_facts
from mcp_core.group import Named, NameTable

__all__ = [
    "ProgressCallback",
    "Reservations",
    "caller_meta",
    "client_keywords",
    "output_adapter",
    "publish",
    "recording_file",
    "recording_files",
    "replaying_spec",
    "report",
    "require_http_stack",
    "server_log",
    "settle",
    "spawn_failure",
    "with_data",
]

class ProgressCallback(Protocol):
    """A call's progress callback (``call_tool(..., progress=...)``), called with each
    ``notifications/progress`` the server sends for that call, as ``(progress, total,
    message)``: ``progress`` grows with each, ``total`` is None when the server does not know
    it, ``message`` is the server's words or None. A plain function: an ``async def`` is
    called but not awaited. What it returns is ignored; an exception it raises is logged and
    the call goes on."""

    def __call__(self, progress: float, total: float | None, message: str | None, /) -> object:
        """One progress notification."""

"""What ``complete`` completes an argument of: ``{"type": "ref/prompt", "name": ...}``,
``{"type": "ref/resource", "uri": ...}`` (a resource template's URI), or the matching
``mcp_core.PromptRef`` / ``mcp_core.ResourceRef``."""

# A spawn that fails for one of these will fail again: the executable or the cwd is missing
# or unusable.
_MISSING = (FileNotFoundError, PermissionError, NotADirectoryError)


class _Handed:
    """Every reservation handed to any client of this process, by identity, while it lives:
    a reservation already used by any client or group in the process, not only by this one,
    is refused.

    One record for both drivers and every ``Client`` and ``ClientGroup``: this module is the
    one both import. Identity, not equality: two equal reservations are two reservations (an
    application's dataclass compares by value), and an unhashable one is tracked too. Entries
    go when their reservation is collected; a reservation that cannot be weakly referenced
    cannot be tracked without keeping it for ever, so only its own ``settled`` judges it.
    Thread-safe: sync clients on many threads share it."""

    __slots__ = ("_by_id", "_lock")

    def __init__(self) -> None:
        self._by_id: weakref.WeakValueDictionary[int, Reservation] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def first(self, reservation: Reservation) -> bool:
        """Record ``reservation``; True if no client was handed it before."""
        with self._lock:
            if self._by_id.get(id(reservation)) is reservation:
                return False
            with contextlib.suppress(TypeError):  # not weak-referenceable: not kept
                self._by_id[id(reservation)] = reservation
            return True

    def forget(self, reservation: Reservation) -> None:
        """Undo ``first``: the call it was handed to was refused before it became work."""
        with self._lock:
            if self._by_id.get(id(reservation)) is reservation:
                del self._by_id[id(reservation)]


_HANDED = _Handed()


class Reservations:
    """The reservations callers passed for priced tools, by ticket, until the machine says to
    settle them; whether one is fresh is judged across the process (``_Handed``).
    Not thread-safe itself: the sync client uses it under its lock."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[int, Reservation] = {}  # ticket -> reservation to settle

    def hold(self, ticket: int, reservation: Reservation | None) -> dict[str, Any] | None:
        """Describe ``reservation`` to the machine and keep it until it is settled. One that
        any client of the process was handed before, or that says it is settled, is not
        fresh: it works once."""
        if reservation is None:
            return None
        fresh = _HANDED.first(reservation)
        self._held[ticket] = reservation
        return reservation_facts(reservation, fresh=fresh)

    def call(
        self,
        ticket: int,
        reservation: Reservation | None,
        make: Callable[[dict[str, Any] | None], Event],
    ) -> Event:
        """``make(facts)``: the ``CallTool`` of ``ticket`` with ``reservation`` held. If making
        it raises (``ValueError`` for a bad timeout), nothing was held or used: the caller may
        pass the same reservation again."""
        facts = self.hold(ticket, reservation)
        try:
            return make(facts)
        except BaseException:
            self._held.pop(ticket, None)
            if reservation is not None and facts is not None and facts["fresh"]:
                _HANDED.forget(reservation)
            raise

    def take(self, ticket: int) -> Reservation | None:
        """The reservation of ``ticket``, no longer held: to settle (``SettleReservation``), or
        to forget (a ``Reply`` for a reservation never settled: not ours to settle)."""
        return self._held.pop(ticket, None)


def settle(reservation: Reservation, commit: bool, log: logging.Logger) -> None:
    """Commit or release ``reservation``; its exception is logged, never raised."""
    try:
        reservation.commit() if commit else reservation.release()
    except Exception:
        log.exception("the reservation's %s raised", "commit" if commit else "release")


def report(callback: ProgressCallback, update: ProgressUpdate, log: logging.Logger) -> None:
    """Call a caller's progress callback; its exception is logged, never raised."""
    try:
        result = callback(update.progress, update.total, update.message)
    except Exception:
        log.exception("the progress callback raised; the call goes on")
        return
    if inspect.iscoroutine(result):
        result.close()  # async callbacks are not awaited; closing avoids a "never awaited" warning


# The W3C trace context the client puts in a call's _meta (``_mcp_io/otel.py``).
_TRACE_KEYS = ("traceparent", "tracestate")


def caller_meta(
    method: str, meta: Mapping[str, Any] | None, trace: Mapping[str, str] | None = None
) -> Mapping[str, Any] | None:
    """The ``_meta`` entries of a request: the caller's ``meta=`` and the trace context the
    client adds to a call. A caller's ``traceparent`` or ``tracestate`` is refused
    (``InvalidArguments``, nothing sent) on every request, whether tracing is configured or
    not, so that the same code does not fail only where it is; the machine refuses the keys it
    sets itself, and values JSON cannot carry."""
    if meta is None:
        return trace
    if not isinstance(meta, Mapping):  # untyped code: the machine refuses it
        return meta  # type: ignore[unreachable]
    for key in _TRACE_KEYS:
        if key in meta:
            raise InvalidArguments(
                method,
                f"_meta[{key!r}]",
                "is a key the client sets itself",
                "trace context comes from OpenTelemetry when it is configured: docs/tracing.md",
            )
    return {**meta, **trace} if trace else meta


def require_http_stack(spec: Spec) -> None:
    """A ``url`` spec this Python has no HTTP stack for raises ``NoHttpClient`` from
    the constructor, before anything starts. The stack is ours (h11 and the socket module,
    both imported with the driver), so the one part that can be missing is ``ssl``, which a
    Python built without OpenSSL lacks: an ``https://`` URL needs it; ``http://`` does not
    (an OAuth flow with an https authorization server would still fail, when it starts)."""
    if spec.url is None or not spec.url.lower().startswith("https:"):
        return
    try:
        import ssl  # noqa: F401  (here: a stdio or http:// client never pays for it)
    except ImportError:
        raise NoHttpClient(
            "an https:// URL needs Python's ssl module, and this Python was built without it "
            "(no OpenSSL); use a Python with ssl, or http:// for a server on this machine"
        ) from None


# Spec fields that say how to reach a server: a replaying client reaches its replay peer.
_REACHING = frozenset(
    {"command", "args", "env", "cwd", "url", "headers", "oauth", "verify", "cert", "proxy"}
    | {"concurrency", "era"}
)
_PACKAGES = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # holds _mcp_io


def replaying_spec(
    path: str | os.PathLike[str],
    spec: Spec | Mapping[str, Any] | None,
    fields: Mapping[str, Any],
) -> Spec:
    """The spec of ``Client(spec, replay=path, **fields)``: its server is the replay peer,
    ``python -m _mcp_io.replay_peer path`` (``_mcp_io/replay_peer.py``), which answers from
    the recording. The recording's name and prices are the defaults; the given spec's other
    fields apply, except those that say how to reach a server (``_REACHING``). ``OSError``
    when the recording cannot be read, ``ValueError`` when it is not a recording."""
    from mcp_core.replay import read_recording  # imported only by a client that replays

    path = os.path.abspath(os.fspath(path))
    with open(path, encoding="utf-8") as file:
        recorded, _ = read_recording([file.readline()])
    if isinstance(spec, Spec):
        spec = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
    given = {k: v for k, v in {**(spec or {}), **fields}.items() if k not in _REACHING}
    return Spec.from_mapping(
        {
            "name": recorded.name,
            "prices": recorded.prices,
            **given,
            "command": sys.executable,
            "args": ["-m", "_mcp_io.replay_peer", path],
            # The peer imports this package and mcp_core, wherever they are installed.
            "env": {"PYTHONPATH": _PACKAGES},
        }
    )


_UNSAFE_IN_FILE_NAMES = re.compile(r"[^A-Za-z0-9_.-]+")


def recording_file(directory: str | os.PathLike[str], server: str) -> str:
    """Where a group keeps the recording of ``server`` (its key in the group's specs) in
    ``directory``: ``<server>.jsonl``, each run of characters other than ASCII letters,
    digits, ``_``, ``.`` and ``-`` made one ``_``. ``mcp_pytest`` names files the same way."""
    return os.path.join(directory, f"{_UNSAFE_IN_FILE_NAMES.sub('_', server)}.jsonl")


def recording_files(
    record: str | os.PathLike[str] | None, replay: str | os.PathLike[str] | None
) -> Callable[[str], tuple[str | None, str | None]]:
    """A group's ``record=`` or ``replay=`` directory, as each client's ``(record, replay)``
    keywords (``recording_file``). Recording makes the directory; ``ValueError`` for both at
    once."""
    if record is not None and replay is not None:
        raise ValueError("record= and replay= together: a group records or replays")
    if record is not None:
        os.makedirs(record, exist_ok=True)

    def files(name: str) -> tuple[str | None, str | None]:
        return (
            None if record is None else recording_file(record, name),
            None if replay is None else recording_file(replay, name),
        )

    return files


def spawn_failure(exc: OSError) -> tuple[str, bool]:
    """``(reason, missing)`` of a spawn that raised ``exc``: the reason names the file (the
    command or the cwd), never an env value; ``missing`` when trying again cannot help."""
    reason = exc.strerror or type(exc).__name__
    if exc.filename is not None:
        reason = f"{reason}: {exc.filename}"
    return reason, isinstance(exc, _MISSING)


def client_keywords(client: type) -> frozenset[str]:
    """The keywords a group passes on to every client as they are (the rest are spec
    fields): the keyword-only parameters of ``client``."""
    return frozenset(
        p.name
        for p in inspect.signature(client).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    )


def server_log(server: str) -> logging.Logger:
    """The client's own notes about a server go to ``mcp_client.<name>`` (docs/choices.md,
    "Logs")."""
    return logging.getLogger(f"mcp_client.{server}")


def publish(table: NameTable[Named], server: str, items: Sequence[Named]) -> list[Named]:
    """``items`` (tools or prompts) of ``server`` under their group names; what the table
    noted is logged."""
    renamed, notes = table.publish(server, items)
    for note in notes:
        server_log(server).warning("server %r: %s", server, note)
    return renamed


def left_out(server: str, what: str, exc: McpError) -> None:
    """Log why ``server`` is missing from a group listing: at info for a server that does not
    offer ``what`` at all (nothing was sent), as a warning for a failure."""
    if isinstance(exc, NotSupported):
        server_log(server).info("server %r offers no %s: %s", server, what, exc)
    else:
        server_log(server).warning("%s of server %r left out: %s", what, server, exc)


# --- call_tool(..., output_type=T) --------------------------------------------------------------

_NO_PYDANTIC = (
    "call_tool(..., output_type=...) needs pydantic: pip install 'mcp-sansio-client[pydantic]'"
)


def output_adapter(output_type: Any) -> Any:
    """A ``pydantic.TypeAdapter`` for ``output_type``, built before the call is sent so that a
    missing pydantic (``ImportError`` naming the extra) or a type pydantic cannot take
    (pydantic's own error) fails at once, with nothing sent. pydantic is imported here only:
    ``import mcp_sync`` / ``import mcp_asyncio`` never load it."""
    try:
        import pydantic
    except ImportError:
        raise ImportError(_NO_PYDANTIC) from None
    try:
        return _cached_adapter(output_type)
    except TypeError:  # unhashable (a type built at run time): not cached
        return pydantic.TypeAdapter(output_type)


@functools.lru_cache(maxsize=128)
def _cached_adapter(output_type: Any) -> Any:
    # Building an adapter compiles a validator (about a millisecond); a type is usually given
    # on every call, so each is built once.
    import pydantic

    return pydantic.TypeAdapter(output_type)


def with_data(result: CallToolResult, tool: str, adapter: Any) -> CallToolResult:
    """``result`` with ``data`` set to its structured content validated by ``adapter``.

    A tool's own failure (``is_error``) is returned as it is, ``data`` None. No structured
    content, or content the type refuses: ``OutputValidationError`` naming where (``$`` is
    the whole content, ``$.items[0].name`` a part) and pydantic's message for the first
    problem; the content itself is not repeated (it came from the server)."""
    if result.is_error:
        return result
    if result.structured_content is None:
        raise OutputValidationError(tool, "$", "the result has no structured content")
    import pydantic  # loaded already: output_adapter made the adapter

    try:
        data = adapter.validate_python(result.structured_content)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False)
        path, problem = (json_path(errors[0]["loc"]), errors[0]["msg"]) if errors else ("$", "")
        raise OutputValidationError(tool, path, problem or exc.title) from None
    return dataclasses.replace(result, data=data)


def json_path(location: Sequence[str | int]) -> str:
    """A pydantic error location as a JSONPath: ``("a", 0, "b c")`` -> ``$.a[0]['b c']``."""
    path = "$"
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part.isidentifier():
            path += f".{part}"
        else:
            path += "[" + repr(part) + "]"
    return path
