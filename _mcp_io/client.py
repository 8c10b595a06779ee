"""What both drivers' ``Client`` and ``ClientGroup`` do the same way, with no event loop and no
thread of their own: keeping the reservations callers pass for priced tools, running the
application's progress callbacks and reservation methods without letting them break the
driver, wording a failed spawn, and the group's keywords and per-server log.

Each helper that logs takes the driver's logger, so a record still names the driver it came
from (``mcp_asyncio._client`` or ``mcp_sync._client``).
"""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from mcp_core import ProgressUpdate, Reservation, Tool
from mcp_core.driver import reservation_facts
from mcp_core.group import ToolTable

__all__ = [
    "ProgressCallback",
    "Reservations",
    "client_keywords",
    "publish",
    "report",
    "server_log",
    "settle",
    "spawn_failure",
]

ProgressCallback = Callable[[float, float | None, str | None], object]

# A spawn that fails for one of these will fail again: the executable or the cwd is missing
# or unusable (SPEC §7).
_MISSING = (FileNotFoundError, PermissionError, NotADirectoryError)


class Reservations:
    """The reservations callers passed for priced tools, by ticket, until the machine says to
    settle them (SPEC §10). Not thread-safe: the sync client uses it under its lock."""

    __slots__ = ("_held", "_seen")

    def __init__(self) -> None:
        self._held: dict[int, Reservation] = {}  # ticket -> reservation to settle
        self._seen: weakref.WeakSet[Reservation] = weakref.WeakSet()

    def hold(self, ticket: int, reservation: Reservation | None) -> dict[str, Any] | None:
        """Describe ``reservation`` to the machine and keep it until it is settled. A
        reservation seen before is not fresh: it works once (SPEC §10)."""
        if reservation is None:
            return None
        try:
            fresh = reservation not in self._seen
            self._seen.add(reservation)
        except TypeError:  # not weak-referenceable: cannot be tracked, trust it
            fresh = True
        self._held[ticket] = reservation
        return reservation_facts(reservation, fresh=fresh)

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
    """The client's own notes about a server go to ``mcp_client.<name>`` (README "Logs")."""
    return logging.getLogger(f"mcp_client.{server}")


def publish(table: ToolTable, server: str, tools: Sequence[Tool]) -> list[Tool]:
    """``tools`` of ``server`` under their group names; what the table noted is logged."""
    renamed, notes = table.publish(server, tools)
    for note in notes:
        server_log(server).warning("server %r: %s", server, note)
    return renamed
