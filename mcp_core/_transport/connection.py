"""The state every layer of the machine shares: a connection (and, in ``work.py``, the caller
work it carries); and the calls between the session and its transport, both ways
(``Transport`` down, ``Session`` up).

A ``Connection`` is one server process (stdio) or one HTTP session: its phase (the table in
``_vocabulary/phases.py``), the handshake it reached, and the JSON-RPC requests it has in
flight. The transport layers keep what only they need (pipes and stop stages, streams and
session ids) in their own per-connection records, indexed like these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._vocabulary.errors import McpError
from .._vocabulary.events import Event
from .._vocabulary.phases import Phase, SessionPhase, Step, connection_step
from .._wire import jsonrpc as rpc
from .eras import Handshake
from .work import Work

__all__ = [
    "DISCOVER",
    "INITIALIZE",
    "Connection",
    "Requests",
    "Session",
    "SseTransport",
    "Transport",
    "Work",
]

# The machine's own requests a connection can have in flight next to caller work.
DISCOVER = "server/discover"
INITIALIZE = "initialize"


@dataclass(slots=True, eq=False)
class Connection:
    """One connection as the session sees it, whatever the transport."""

    index: int
    phase: Phase = Phase.IDLE
    # JSON-RPC request id -> the caller work it answers, or DISCOVER / INITIALIZE.
    requests: dict[int, Work | str] = field(default_factory=dict)
    handshake: Handshake | None = None
    busy: int = 0  # caller work in its window (a count: admission reads it per call)
    attempt: int = 0  # failed attempts since it was last ready (the backoff's exponent)
    retry_at: float | None = None
    connect_deadline: float | None = None  # the handshake must be done by then
    probe_deadline: float | None = None  # no answer to server/discover by then: legacy
    # Why it is stopping; the retry is armed once the transport is gone (not if permanent).
    failure: McpError | None = None
    failure_permanent: bool = False
    retry_after: float | None = None  # a server's Retry-After, honoured by the next retry
    # Which session of this connection this is: one more for each connect and each new
    # session (HTTP 404): a message held for an earlier session is not sent on this one.
    epoch: int = 0

    @property
    def modern(self) -> bool:
        return self.handshake is not None and self.handshake.era == "modern"

    def move(self, step: type[Event] | Step) -> None:
        """Take ``step`` through the connection table (``UnexpectedEvent`` if not allowed)."""
        self.phase = connection_step(self.phase, step, self.index)


class Requests(Protocol):
    """How the session's inner layers (caller work, the handshake) reach the wire: through
    the session, which numbers requests and hands them to the transport."""

    @property
    def now(self) -> float: ...

    def request(
        self,
        connection: Connection,
        method: str,
        params: dict[str, Any],
        owner: Work | str,
        meta: dict[str, Any] | None = None,
    ) -> int:
        """Send a request (``owner`` gets its answer); its id."""

    def log(self, level: str, message: str) -> None: ...


class Session(Protocol):
    """What a transport layer may ask of the session above it: the transports tell it what
    happened on a connection; it decides what that means for callers and the handshake."""

    @property
    def now(self) -> float: ...

    @property
    def phase(self) -> SessionPhase: ...

    @property
    def closing(self) -> bool: ...

    def transport_up(self, connection: Connection) -> None:
        """The connection is ``OPEN``: the process runs, or there is an endpoint to POST to."""

    def decoded(self, connection: Connection, item: object) -> None:
        """One decoded JSON value (not a batch) arrived on the connection."""

    def received(self, connection: Connection, message: rpc.Incoming) -> None:
        """One JSON-RPC message (or an invalid one) arrived on the connection."""

    def oversized(self, connection: Connection, request_id: object, size: int) -> None:
        """A message beyond ``max_message_bytes`` was dropped; ``request_id`` as far as read."""

    def unreadable(self, connection: Connection, request_id: object, excerpt: str) -> None:
        """A message shaped like the answer to ``request_id`` could not be read (not JSON, not
        UTF-8); ``excerpt`` is its start."""

    def lose(
        self,
        connection: Connection,
        owner: Work | str,
        error: McpError,
        request_id: int | None = None,
    ) -> None:
        """A request (``request_id``), already taken out of ``connection.requests``, will get
        no answer."""

    def spawn_failed(self, connection: Connection, reason: str, missing: bool) -> None:
        """The process could not start; the connection is ``IDLE``."""

    def exited(
        self, connection: Connection, was: Phase, returncode: int | None, stderr: str
    ) -> None:
        """The process ended; the connection, ``was`` in that phase, is ``IDLE`` now.
        ``stderr``: the last of what it wrote there."""

    def fail(self, connection: Connection, error: McpError, *, permanent: bool = False) -> None:
        """The connection cannot go on: answer what it affects, stop it, retry later."""

    def send_initialize(self, connection: Connection) -> None:
        """Send ``initialize``: the HTTP+SSE endpoint is known now, or (HTTP 404) the server
        forgot the session and a new one replaces it while admitted work waits."""

    def confirmed(self, connection: Connection) -> None:
        """HTTP: the server answered (or the request for) ``notifications/initialized``."""

    def gone(self, connection: Connection) -> None:
        """The connection was ``STOPPING`` and nothing of it is left to wait for."""

    def log(self, level: str, message: str) -> None:
        """A line for the client's logger."""


class Transport(Protocol):
    """What the session asks of its transport. ``StdioTransport`` and ``HttpTransport``
    implement it, and the authorization layer (``_auth.layer.Authorization``) wraps an HTTP
    transport behind the same calls; the machine holds its transport as a ``Transport``, so
    mypy checks all three against this protocol."""

    @property
    def events(self) -> frozenset[type[Event]]:
        """The driver's events ``handle`` takes; the machine refuses the others (an HTTP event
        fed to a stdio session is a driver bug)."""
        ...

    @property
    def sse(self) -> bool:
        """Whether the server speaks HTTP+SSE (2024-11-05): ``Status.transport`` says 'sse'."""
        ...

    def speaks_sse(self, connection: Connection) -> bool:
        """Whether this connection's session is HTTP+SSE."""
        ...

    def open(self, connection: Connection) -> bool:
        """Start the connection (spawn, or nothing to wait for); whether it is open at once."""
        ...

    def send(
        self, connection: Connection, message: Mapping[str, Any], request_id: int | None
    ) -> None:
        """Send one JSON-RPC message; ``request_id`` when it is a request awaiting an answer."""
        ...

    def acknowledge(self, connection: Connection, message: Mapping[str, Any]) -> bool:
        """Send ``notifications/initialized``; whether the session waits for it to be taken
        (HTTP: its POST answered) before it is ready."""
        ...

    def cancel(self, connection: Connection, request_id: int) -> bool:
        """A caller gave up ``request_id``; whether the server must be told (it has it)."""
        ...

    def forget(self, connection: Connection, request_id: int) -> None:
        """No answer to ``request_id`` is wanted any more (HTTP: its stream is closed)."""
        ...

    def fail(self, connection: Connection) -> bool:
        """The connection failed: stop what runs; whether something is still to stop."""
        ...

    def close(self, connection: Connection) -> bool:
        """Stop the connection (``Close``); whether it goes on stopping (it is not gone yet)."""
        ...

    def next_deadline(self, best: float | None) -> float | None:
        """The earlier of ``best`` and this transport's own deadlines."""
        ...

    def expire(self, connection: Connection, now: float) -> None:
        """Act on this transport's deadlines that passed for the connection."""
        ...

    def resume_due(self, connection: Connection, now: float) -> None:
        """Reopen what was due to be reopened by ``now`` (HTTP: a stream to resume)."""
        ...

    def handle(self, event: Any) -> None:
        """One of ``events``, fed by the driver."""
        ...


class SseTransport(Transport, Protocol):
    """An HTTP transport (or the authorization layer around one), which can also open an
    HTTP+SSE (2024-11-05) connection: the endpoint GET first."""

    def open_sse(self, connection: Connection) -> None:
        """Open the connection as HTTP+SSE: the GET whose first event names the POST URL."""
        ...
