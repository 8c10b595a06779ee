"""``Status``: a snapshot of one client, and the names its fields take.

``print(status)`` is one line for a person; the fields hold the rest (the server's info,
capabilities and instructions). ``SessionState``, ``TransportName`` and ``SessionEra`` are the
``Literal`` types of ``state``, ``transport`` and ``era``, so a type checker refuses a
misspelled state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .icons import Icon, icons_from_wire

__all__ = ["SessionEra", "SessionState", "Status", "TransportName"]

# The values of ``Status.state``, ``.transport`` and ``.era`` (see ``Status``). A test keeps
# ``SessionState`` equal to what ``mcp_core.states.session_state`` can return.
SessionState = Literal["new", "starting", "initializing", "ready", "closed"]
TransportName = Literal["stdio", "http", "sse", "unknown"]
SessionEra = Literal["legacy", "modern"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Status:
    """A snapshot of one client.

    ``state`` (``SessionState``) is ``'new'`` (never started: ``start()`` or a ``with`` block
    has not run yet), ``'starting'`` (a process is being spawned, or the transport is up
    before its handshake), ``'initializing'`` (a handshake is under way), ``'ready'`` (calls
    go out) or ``'closed'`` (stopped, even before it started; every connection failed:
    ``last_error`` says why and ``retry_in`` when the next attempt is; or a server a
    ``ClientGroup`` refused, which never starts: ``last_error`` says why);
    ``docs/states.md`` shows how the session's phases give it. ``transport``
    (``TransportName``) is ``'stdio'``, ``'http'``, ``'sse'`` (an HTTP server found to speak
    the 2024-11-05 HTTP+SSE transport) or ``'unknown'``: only for a server a ``ClientGroup``
    refused before it had a spec and whose entry does not say, as one ``load_config``
    skipped (it keeps only the reason) or one with neither ``command`` nor ``url``; a refused
    entry that names one gets its transport. ``era`` (``SessionEra``) is ``'legacy'``,
    ``'modern'`` or None (no session is ready); ``concurrency`` the policy in force
    (``'unknown'`` for that same refused server). ``in_flight`` and ``queued`` count caller
    work only; ``last_error`` is already redacted; ``retry_in`` is seconds until the next
    connect attempt, or None when none is scheduled. ``extensions`` are the extensions the
    server declared (identifier -> settings, SEP-2133; ``{}`` for none), None until a session
    is ready or when the server was not asked (``era='modern'`` without a probe).
    """

    name: str
    state: SessionState
    transport: TransportName
    concurrency: str
    era: SessionEra | None = None
    protocol_version: str | None = None
    in_flight: int = 0
    queued: int = 0
    tools: int | None = None
    last_error: str | None = None
    retry_in: float | None = None
    server_info: Mapping[str, Any] | None = None
    # What the server declared it offers (``initialize`` or ``server/discover``), and the
    # ``instructions`` it gave for using it; None until a session is ready.
    capabilities: Mapping[str, Any] | None = None
    instructions: str | None = None
    # The extensions the server declared (identifier -> settings, SEP-2133), None until then.
    extensions: Mapping[str, Mapping[str, Any]] | None = None

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    @property
    def server_icons(self) -> tuple[Icon, ...]:
        """The icons of ``server_info`` (2025-11-25 ``Implementation.icons``), typed; entries
        that cannot be read are left out, and there are none before a session is ready. Data
        only: ``Icon`` says what a host that renders them must check first."""
        return icons_from_wire(self.server_info.get("icons")) if self.server_info else ()

    def __str__(self) -> str:
        """One line for a person: name, state, transport and era, work, tools, and the last
        error. The server's info, capabilities and instructions (which may run to pages) are
        left to the fields and to ``repr``."""
        era = f", {self.era}" if self.era else ""
        if self.era and self.protocol_version:
            era += f" {self.protocol_version}"
        parts = [f"{self.name}: {self.state} ({self.transport}{era})"]
        if self.in_flight or self.queued:
            parts.append(f"{self.in_flight} in flight, {self.queued} queued")
        if self.tools is not None:
            parts.append(f"{self.tools} tool{'' if self.tools == 1 else 's'}")
        if self.last_error is not None:
            retry = f" (next attempt in {self.retry_in:.1f} s)" if self.retry_in is not None else ""
            parts.append(f"last error: {_shorten(self.last_error, 160)}{retry}")
        return "; ".join(parts)


def _shorten(text: str, most: int) -> str:
    """``text`` on one line, cut to ``most`` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= most else line[: most - 1] + "…"
