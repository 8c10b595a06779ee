"""The session machine: everything the protocol decides, and nothing else.

Theory of operation
===================

A ``SessionMachine`` is fed events (``_events.py``) and answers each with a list of actions
(``_actions.py``). It owns no socket, thread, clock or random source: time arrives as ``now``
on every event, and the one timer a driver keeps is re-armed to ``next_deadline()`` after every
event. Feeding the same events with the same ``now`` values always yields the same actions,
which is what makes recorded sessions replayable (SPEC §13).

Layers. The machine is four small machines stacked the way aioquic splits a connection; each
file holds one and reads top to bottom:

- ``_phases.py``: the transition tables. Every phase change of the session, of a connection
  and of a process being stopped goes through them; a move they do not list raises
  ``UnexpectedEvent`` (naming the phase and the event) before anything changes.
- ``_admission.py``: the in-flight window, the queue behind it and every caller's deadline.
- a transport: ``_stdio_transport.py`` (spawn, framing, stderr, the stop sequence) or
  ``_http_transport.py`` (requests and streams, session ids, what a status means, SSE
  resumption, HTTP+SSE). Both offer the same calls (``open``, ``send``, ``acknowledge``,
  ``cancel``, ``forget``, ``fail``, ``close``) and report back through the ``Session``
  protocol (``_connection.py``), which this class implements.
- this file: the session. Caller work, the era handshake, messages from the server, and what
  a failure means for callers and retries. ``_server_requests.py`` keeps the server's own
  requests to the application.

A new layer goes between two of these without touching either: the authorization layer wraps
the HTTP transport (same calls, plus its own events for the metadata, registration and token
requests the driver performs), adds the token to each request and holds a 401 until a fresh
token lets it send the request again; ``_http_transport.py`` says where.

Connections ("slots"). A spec with ``concurrency='pooled'`` runs ``pool_size`` connections,
each with an in-flight cap of one; every other policy runs one, with a cap of one
(``serialized``) or ``pool_size`` (``stateless``) (SPEC §6). A connection goes
``IDLE -> SPAWNING -> OPEN -> PROBING -> INITIALIZING -> READY`` (HTTP: no SPAWNING, and a
``CONFIRMING`` step), see ``docs/states.md``. ``PROBING`` sends ``server/discover`` (era='auto'
only, verdict not cached); ``INITIALIZING`` sends the legacy ``initialize``; the modern era
needs neither. Any failure (exit, spawn error, handshake error or timeout, broken pipe)
answers the work it affects, stops the transport (``STOPPING``) and, once it is gone
(``IDLE``), arms the retry timer with doubling, jittered backoff that resets only when a
connection reaches ``READY`` (SPEC §7). Permanent failures (missing executable, unsupported
protocol version, refused credentials) arm nothing.

Caller work. ``CallTool`` and ``ListTools`` are "work" identified by the caller's ticket. Work
is admitted only while some connection is ready (otherwise the caller is answered at once:
``ConnectFailed`` after a failed connect, else ``NotReady``), then as ``_admission.py`` says.
Every admitted piece of work carries a deadline from admission; on expiry the caller gets
``RequestTimeout`` and a sent request is cancelled. Progress pushes a call's deadline out,
never past ``max_call_timeout`` from admission. Every ticket is answered exactly once (or not
at all after ``CancelCall``), and ``Close`` is answered within ``3 * shutdown_grace +
CLOSE_MARGIN`` seconds whatever the driver reports: that deadline is in ``next_deadline()``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, MutableMapping
from typing import Any

from . import _jsonrpc as rpc
from ._actions import Action, Log, ProgressUpdate, Reply
from ._admission import Admission
from ._connection import DISCOVER, INITIALIZE, Connection, Work
from ._eras import (
    MODERN_VERSION,
    Handshake,
    client_capabilities,
    discover_params,
    initialize_params,
    modern_meta,
    parse_discover_result,
    parse_initialize_result,
)
from ._errors import (
    Busy,
    ConnectFailed,
    InitializationFailed,
    InvalidResponse,
    JsonRpcError,
    McpError,
    MessageTooLarge,
    NotReady,
    RequestTimeout,
    ServerExited,
    UnmeteredCall,
    UnsupportedVersion,
    UrlElicitationRequired,
)
from ._events import (
    AwaitReady,
    CallTool,
    CancelCall,
    Close,
    Connect,
    Event,
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
    ListTools,
    ProcessExited,
    ProcessSpawned,
    ServerRequestAnswered,
    SpawnFailed,
    StderrReceived,
    StdoutClosed,
    StdoutReceived,
    TimerFired,
    WriteFailed,
)
from ._http_transport import HttpTransport
from ._jitter import Jitter, backoff_delay
from ._models import Status, Tool
from ._phases import Phase, SessionPhase, Step, session_step
from ._results import (
    MAX_INPUT_ROUNDS,
    MAX_TOOL_PAGES,
    call_result,
    input_requests,
    names_our_modern_version,
    rpc_error,
    tools_page,
)
from ._server_requests import ELICITATION_MODES, HANDLED_REQUESTS, ServerRequests
from ._spec import Spec
from ._stdio_transport import StdioTransport

__all__ = [
    "CLOSE_MARGIN",
    "HANDLED_REQUESTS",
    "MAX_INPUT_ROUNDS",
    "MAX_TOOL_PAGES",
    "SessionMachine",
]

# Close is answered at most this long after the stop sequence (3 * shutdown_grace) could have
# ended: time for a driver to report the outcome of a spawn that was under way.
CLOSE_MARGIN = 5.0

# RFC 5424 levels of notifications/message mapped to Python logging levels.
_LOG_LEVELS = {
    "debug": "DEBUG",
    "info": "INFO",
    "notice": "INFO",
    "warning": "WARNING",
    "error": "ERROR",
    "critical": "CRITICAL",
    "alert": "CRITICAL",
    "emergency": "CRITICAL",
}

_ESTABLISHED = (Phase.READY, Phase.REINITIALIZING)  # work may be admitted
_HANDSHAKING = (Phase.PROBING, Phase.INITIALIZING, Phase.CONFIRMING, Phase.REINITIALIZING)


class SessionMachine:
    """The pure MCP client session. See the module docstring for the theory of operation.

    ``era_cache`` maps a server key (the command line) to the era verdict ('legacy' or
    'modern') of an earlier probe; pass the same mapping to every machine of a process so a
    server is probed once (SPEC §5). The machine reads its key once, when it is built (the
    verdict it starts from is ``known_era``, which a recording keeps so that a replay starts
    from the same one), and writes the verdicts it learns.
    """

    def __init__(
        self,
        spec: Spec,
        *,
        era_cache: MutableMapping[str, str] | None = None,
        handlers: Iterable[str] = (),
        elicitation_modes: Iterable[str] = ("form",),
        known_era: str | None = None,
    ) -> None:
        """``handlers`` names the server requests the application answers: any of
        'elicitation', 'sampling', 'roots'. They are declared as client capabilities and
        arrive as ``HandleServerRequest``; every other server request gets -32601.

        ``elicitation_modes`` are the elicitation modes the 'elicitation' handler takes:
        'form' (the default, declared as ``elicitation: {}``) and/or 'url' (2025-11-25), which
        the handler then gets too (``mode``, ``url``, ``elicitationId``, ``message``). A
        request in another mode gets -32602. ``ValueError`` for an unknown or empty set of
        modes, or for modes other than form alone without an 'elicitation' handler."""
        unknown = set(handlers) - set(HANDLED_REQUESTS.values())
        if unknown:
            raise ValueError(
                f"unknown handlers {sorted(unknown)}; known: elicitation, sampling, roots"
            )
        self.handlers = frozenset(handlers)
        modes = frozenset(elicitation_modes)
        if not modes or modes - ELICITATION_MODES:
            raise ValueError(
                f"elicitation_modes must be 'form', 'url' or both, got {sorted(modes)}"
            )
        if modes != {"form"} and "elicitation" not in self.handlers:
            raise ValueError("elicitation_modes needs an elicitation handler")
        self.elicitation_modes = modes
        self.spec = spec
        self.now = 0.0
        self._phase = SessionPhase.NEW
        self._out: list[Action] = []
        self._capabilities = client_capabilities(self.handlers, modes)
        self._asks = ServerRequests(self.handlers, modes, self._out)
        http = spec.transport == "http"
        self._era_cache: MutableMapping[str, str] = {} if era_cache is None else era_cache
        # SPEC §5: the verdict is cached per server: its command line, or its origin + path.
        self._era_key = json.dumps(
            ["http", (spec.url or "").split("?")[0].split("#")[0]]
            if http
            else [spec.command, *spec.args]
        )
        # Read once: another client of the process writing the shared cache mid-session must
        # not change what this machine does (replay would then differ from the session).
        # ``known_era`` given (a replay) wins over the cache.
        self._known_era = known_era if known_era is not None else self._era_cache.get(self._era_key)
        self.known_era: str | None = self._known_era  # the verdict this machine started from
        pooled = spec.concurrency == "pooled"
        self._connections = [Connection(index=i) for i in range(spec.pool_size if pooled else 1)]
        self._admission = Admission(
            self._connections, spec.queue_limit, lambda: self.in_flight_cap, self._out
        )
        self._transport: StdioTransport | HttpTransport = (
            HttpTransport(spec, self._connections, self, self._out)
            if http
            else StdioTransport(spec, self._connections, self, self._out)
        )
        self._waiters: dict[int, float] = {}  # await_ready ticket -> deadline
        # The waiters (a subset of _waiters) that a failed attempt answers (fail_fast).
        self._fail_fast_waiters: set[int] = set()
        self._close_tickets: list[int] = []
        self._close_deadline: float | None = None
        self._next_id = 0
        self._jitter = Jitter(spec.jitter_seed)
        self._tools: list[Tool] | None = None
        self._tools_generation = 0
        self._connect_error: ConnectFailed | None = None  # last connect failed; cleared on ready
        self._permanent: ConnectFailed | None = None
        self._last_error: McpError | None = None
        self._logger = f"mcp_client.{spec.name}"
        self._server_logger = f"mcp.server.{spec.name}"

    # --- public surface ----------------------------------------------------------------

    def handle(self, event: Event) -> list[Action]:
        """Consume one event; return the actions to perform, in order.

        ``UnexpectedEvent`` (nothing changed) for an event the transition tables do not allow
        in the current phase: a driver bug, never a server's doing."""
        phase = session_step(self._phase, event)
        self.now = event.now
        if type(event) is Connect:
            self._on_connect(phase)
        else:
            _DISPATCH[type(event)](self, event)
        out = self._out[:]
        self._out.clear()
        return out

    def next_deadline(self) -> float | None:
        """The earliest time at which ``TimerFired`` has something to do, or ``None``."""
        # Drivers ask after every event, so this builds nothing: one pass, no list.
        best = self._admission.earliest_deadline()
        if self._waiters:
            earliest = min(self._waiters.values())
            best = earliest if best is None or earliest < best else best
        if self._close_deadline is not None and (best is None or self._close_deadline < best):
            best = self._close_deadline
        for connection in self._connections:
            for t in (
                connection.retry_at,
                connection.probe_deadline,
                connection.connect_deadline if connection.phase in _HANDSHAKING else None,
            ):
                if t is not None and (best is None or t < best):
                    best = t
        return self._transport.next_deadline(best)

    @property
    def phase(self) -> SessionPhase:
        """Where the session is in ``SESSION_TABLE``."""
        return self._phase

    @property
    def phases(self) -> tuple[Phase, ...]:
        """Each connection's phase in ``CONNECTION_TABLE``, by slot."""
        return tuple(connection.phase for connection in self._connections)

    @property
    def closing(self) -> bool:
        return self._phase is SessionPhase.CLOSING

    @property
    def state(self) -> str:
        """'starting' | 'initializing' | 'ready' | 'closed' (SPEC §3)."""
        if self._phase is not SessionPhase.RUNNING:
            return "closed"
        phases = {connection.phase for connection in self._connections}
        if Phase.READY in phases:
            return "ready"
        if phases.intersection(_HANDSHAKING):
            return "initializing"
        if Phase.SPAWNING in phases or Phase.OPEN in phases:
            return "starting"
        return "closed"

    @property
    def concurrency(self) -> str:
        """The in-flight policy in force: the spec's, else the transport's and era's default
        (SPEC §6: stdio and modern HTTP stateless, legacy HTTP serialized)."""
        if isinstance(self._transport, StdioTransport):  # the era changes nothing on stdio
            return self.spec.default_concurrency(None)
        ready = next((c.handshake for c in self._connections if c.handshake is not None), None)
        return self.spec.default_concurrency(ready.era if ready else None)

    @property
    def in_flight_cap(self) -> int:
        """Requests one connection may have in flight at once."""
        return self.spec.pool_size if self.concurrency == "stateless" else 1

    @property
    def in_flight(self) -> int:
        return self._admission.in_flight

    @property
    def queued(self) -> int:
        return len(self._admission.queue)

    def status(self, now: float) -> Status:
        """A snapshot for callers; never changes state."""
        ready = next((c.handshake for c in self._connections if c.phase is Phase.READY), None)
        retries = [c.retry_at for c in self._connections if c.retry_at is not None]
        return Status(
            name=self.spec.name,
            state=self.state,
            era=ready.era if ready else None,
            protocol_version=ready.protocol_version if ready else None,
            transport="sse" if self._transport.sse else self.spec.transport,
            concurrency=self.concurrency,
            in_flight=self.in_flight,
            queued=self.queued,
            tools=len(self._tools) if self._tools is not None else None,
            last_error=str(self._last_error) if self._last_error else None,
            retry_in=max(0.0, min(retries) - now) if retries else None,
            server_info=ready.server_info if ready else None,
        )

    def __repr__(self) -> str:
        return (
            f"<SessionMachine {self.spec.name!r} state={self.state} "
            f"in_flight={self.in_flight} queued={self.queued}>"
        )

    # --- caller events -------------------------------------------------------------------

    def _on_connect(self, phase: SessionPhase) -> None:
        if self._phase in (SessionPhase.RUNNING, SessionPhase.CLOSING):
            # Already running: ignored; still stopping: a restart waits for the stop to end.
            self._log("DEBUG", "Connect while started or still stopping: ignored")
            return
        self._phase = phase
        self._permanent = self._connect_error = None
        for connection in self._connections:  # all IDLE: never started, or stopped
            self._connect(connection)

    def _on_await_ready(self, event: AwaitReady) -> None:
        # The caller's choice for this wait, else the spec's (a group waits fail-fast on
        # clients whose own await_ready waits through retries).
        fail_fast = self.spec.fail_fast if event.fail_fast is None else event.fail_fast
        if self.state == "ready":
            self._reply(event.ticket, self.status(self.now))
        elif self._permanent is not None:
            self._reply(event.ticket, error=self._permanent)
        elif fail_fast and self._connect_error and self.state == "closed":
            # SPEC §7 fail_fast: a caller arriving while closed after a failure is answered
            # at once; without fail_fast, await_ready waits through the retries.
            self._reply(event.ticket, error=self._connect_error)
        elif self._phase is not SessionPhase.RUNNING or event.timeout == 0:
            self._reply(event.ticket, error=NotReady(self.state))
        else:
            self._waiters[event.ticket] = self.now + event.timeout
            if fail_fast:
                self._fail_fast_waiters.add(event.ticket)

    def _on_list_tools(self, event: ListTools) -> None:
        if self._tools is not None and not event.refresh and self.state == "ready":
            self._reply(event.ticket, list(self._tools))
            return
        self._admit(
            Work(
                ticket=event.ticket,
                method="tools/list",
                admitted_at=self.now,
                timeout=event.timeout or self.spec.call_timeout,
                deadline=self.now + (event.timeout or self.spec.call_timeout),
                generation=self._tools_generation,
                tools=[],
                cursors=set(),
            )
        )

    def _on_call_tool(self, event: CallTool) -> None:
        timeout = event.timeout or self.spec.call_timeout
        facts = event.reservation
        work = Work(
            ticket=event.ticket,
            method="tools/call",
            admitted_at=self.now,
            timeout=timeout,
            deadline=self.now + timeout,
            name=event.name,
            arguments=event.arguments,
            progress=event.progress,
            meta=event.meta,
            # Every unused reservation handed to a call is settled exactly once by the client.
            reserved=facts is not None and facts.get("fresh") is True,
        )
        refusal = self._unmetered(event.name, facts)
        if refusal is not None:
            self._admission.settle(work, commit=False)
            self._reply(event.ticket, error=refusal)
            return
        if event.name not in self.spec.prices and work.reserved:
            self._admission.settle(work, commit=False)  # a free tool needs no money back
        self._admit(work)

    def _unmetered(self, tool: str, facts: Mapping[str, Any] | None) -> UnmeteredCall | None:
        """SPEC §10: a priced tool without a valid reservation is refused before sending."""
        price = self.spec.prices.get(tool)
        if price is None:
            return None
        if facts is None:
            return UnmeteredCall(tool, f"it costs {price}")
        if facts.get("fresh") is not True:
            return UnmeteredCall(tool, "this reservation was already used")
        if facts.get("server") != self.spec.name or facts.get("tool") != tool:
            return UnmeteredCall(
                tool,
                f"the reservation is for {facts.get('tool')!r} on {facts.get('server')!r}",
            )
        reserved = facts.get("price")
        if not isinstance(reserved, int) or reserved < price:
            return UnmeteredCall(tool, f"{reserved} was reserved but it costs {price}")
        return None

    def _on_cancel(self, event: CancelCall) -> None:
        self._waiters.pop(event.ticket, None)
        self._fail_fast_waiters.discard(event.ticket)
        work = self._admission.works.pop(event.ticket, None)
        if work is not None:
            self._withdraw(work, "the caller cancelled the request")
            self._pump()

    def _on_close(self, event: Close) -> None:
        if self._phase is not SessionPhase.RUNNING:
            if self._phase is SessionPhase.CLOSING:
                self._close_tickets.append(event.ticket)
            else:
                self._reply(event.ticket, None)  # nothing to stop
            return
        self._phase = SessionPhase.CLOSING
        self._close_tickets.append(event.ticket)
        self._close_deadline = self.now + 3 * self.spec.shutdown_grace + CLOSE_MARGIN
        stopped = NotReady("closed", "the client was stopped before this request finished")
        for work in self._drain_works():
            self._reply(work.ticket, error=stopped)
        self._answer_waiters(stopped)
        for connection in self._connections:
            connection.retry_at = connection.probe_deadline = connection.connect_deadline = None
            connection.requests.clear()  # a late handshake answer must not start a new step
            connection.move(Step.STOP)
            if connection.phase is Phase.STOPPING and not self._transport.close(connection):
                connection.move(Step.GONE)
        self._check_closed()

    def _on_server_request_answered(self, event: ServerRequestAnswered) -> None:
        asker = self._asks.answered(event.handle)
        if asker is None:
            return
        connection, request_id = asker
        if isinstance(connection, int):  # an input round of a call: (ticket, input key)
            self._on_input_answered(connection, str(request_id), event)
        elif connection.phase is not Phase.READY or self._phase is not SessionPhase.RUNNING:
            # The connection that asked is gone; its server no longer waits for this answer.
            self._log("DEBUG", f"dropped the answer to server request {request_id!r}")
        elif event.result is not None:
            self._send(connection, rpc.result_response(request_id, event.result))
        else:
            # The application's handler failed: the error is on our side of the request.
            self._send(
                connection,
                rpc.error_response(
                    request_id, rpc.INTERNAL_ERROR, f"the client's handler failed: {event.failed}"
                ),
            )

    # --- time ------------------------------------------------------------------------------

    def _on_timer(self, event: TimerFired) -> None:
        now = self.now
        for work in self._admission.expired(now):
            self._withdraw(work, "timed out")
            self._reply(
                work.ticket,
                error=RequestTimeout(
                    f"{work.method} {work.name or ''} got no answer within {work.timeout:g} s; "
                    "the server was told to cancel it (raise timeout= or call_timeout if the "
                    "tool is slow)".replace("  ", " ")
                ),
            )
        for ticket, deadline in sorted(self._waiters.items()):
            if deadline <= now:
                del self._waiters[ticket]
                self._fail_fast_waiters.discard(ticket)
                self._reply(ticket, error=self._not_ready())
        for connection in self._connections:
            self._connection_timers(connection, now)
        if self._close_deadline is not None and self._close_deadline <= now:
            self._log("ERROR", "stopping took too long; answering Close without the rest")
            self._answer_close()
        self._pump()

    def _connection_timers(self, connection: Connection, now: float) -> None:
        self._transport.expire(connection, now)
        if connection.probe_deadline is not None and connection.probe_deadline <= now:
            connection.probe_deadline = None
            self._forget_internal(connection, DISCOVER)
            self._log("DEBUG", "no answer to server/discover: treating the server as legacy")
            self._send_initialize(connection)
        if (
            connection.phase in _HANDSHAKING
            and connection.connect_deadline is not None
            and connection.connect_deadline <= now
        ):
            self.fail(
                connection,
                ConnectFailed(
                    f"the server did not complete the handshake within "
                    f"init_timeout={self.spec.init_timeout:g} s"
                ),
            )
        if connection.retry_at is not None and connection.retry_at <= now:
            self._connect(connection)
        self._transport.resume_due(connection, now)

    # --- what the transports report (the Session protocol) -----------------------------------

    def _on_transport(self, event: Event) -> None:
        self._transport.handle(event)  # type: ignore[arg-type]

    def transport_up(self, connection: Connection) -> None:
        """The transport is up (process running, or an HTTP endpoint to talk to): start the
        handshake the era needs, or stop at once if the session is closing."""
        if self.closing:
            connection.move(Step.STOP)
            self._transport.close(connection)
            return
        era = self.spec.era if self.spec.era != "auto" else self._known_era
        if era == "sse" and isinstance(self._transport, HttpTransport):
            self._transport.open_sse(connection)
        elif era == "modern":
            self._ready(connection, Handshake("modern", MODERN_VERSION, None, {}))
        elif era == "legacy":
            self._send_initialize(connection)
        else:
            # 2026-07-28 transports/stdio §Backward Compatibility: a dual-era client "SHOULD
            # probe with server/discover" before any other request; no answer within a short
            # timeout means a legacy server. Over HTTP the answer's status and body decide
            # (streamable-http §Backward Compatibility).
            connection.move(Step.PROBE)
            # Over HTTP an answer always comes (its status decides), so the probe may take half
            # the connect budget; on stdio a silent legacy server is the reason for the timeout.
            probe_wait = (
                max(self.spec.probe_timeout, self.spec.init_timeout / 2)
                if isinstance(self._transport, HttpTransport)
                else self.spec.probe_timeout
            )
            connection.probe_deadline = self.now + probe_wait
            self._request(connection, DISCOVER, discover_params(self._capabilities), DISCOVER)

    def received(self, connection: Connection, message: rpc.Incoming) -> None:
        if isinstance(message, rpc.Response):
            self._on_response(connection, message)
        elif isinstance(message, rpc.Request):
            answer = self._asks.answer_for(message)
            if answer is None:
                self._asks.ask_application(connection, message)
            else:
                self._send(connection, answer)
        elif isinstance(message, rpc.Notification):
            self._on_notification(connection, message)
        else:
            self._log("WARNING", f"skipped an invalid message from the server: {message.reason}")

    def oversized(self, connection: Connection, request_id: object, size: int) -> None:
        error = MessageTooLarge(size, self.spec.max_message_bytes)
        owner = connection.requests.get(request_id) if isinstance(request_id, int) else None
        if isinstance(owner, Work):
            del connection.requests[request_id]  # type: ignore[arg-type]
            self._finish(owner, error=error)
        elif owner is not None:
            self.fail(connection, ConnectFailed(error.message))
        else:
            self._log("WARNING", f"discarded a message for no known request: {error.message}")

    def lose(self, connection: Connection, owner: Work | str, error: McpError) -> None:
        if isinstance(owner, Work):
            self._finish(owner, error=error)
        elif owner == DISCOVER:
            # No usable answer to the probe: a legacy server ("anything else").
            connection.probe_deadline = None
            self._send_initialize(connection)
        else:
            self.fail(connection, ConnectFailed(error.message))

    def spawn_failed(self, connection: Connection, reason: str, missing: bool) -> None:
        if self.closing:
            self._check_closed()
            return
        self.fail(connection, ConnectFailed(reason, permanent=missing), permanent=missing)

    def exited(
        self, connection: Connection, was: Phase, returncode: int | None, stderr: str
    ) -> None:
        if self.closing:
            self._check_closed()
        elif connection.failure is not None:
            self._arm_retry(connection)
        elif was is Phase.READY:
            self._fail(connection, ServerExited(returncode, stderr), was=was)
        else:
            detail = f"the server exited with code {returncode} during the handshake"
            error = ConnectFailed(f"{detail}; last stderr:\n{stderr}" if stderr else detail)
            self._fail(connection, error, was=was)

    def fail(self, connection: Connection, error: McpError, *, permanent: bool = False) -> None:
        self._fail(connection, error, permanent=permanent)

    def _fail(
        self,
        connection: Connection,
        error: McpError,
        *,
        permanent: bool = False,
        was: Phase | None = None,
    ) -> None:
        """The connection failed (it ``was`` in that phase; default: the one it is in):
        answer what it affects, stop its transport, and arm the retry once that is gone
        (nothing is armed for a permanent failure)."""
        was_ready = (was or connection.phase) in _ESTABLISHED
        if connection.phase is not Phase.IDLE:  # IDLE: the process is gone already
            connection.move(Step.FAIL)
        connection.handshake = None
        connection.probe_deadline = connection.connect_deadline = None
        self._last_error = error
        for owner in list(connection.requests.values()):
            if isinstance(owner, Work):
                del self._admission.works[owner.ticket]
                self._admission.release(owner)
                self._reply(owner.ticket, error=error)
        connection.requests.clear()
        self._asks.forget(connection)
        for work in [w for w in self._admission.works.values() if w.slot == connection.index]:
            del self._admission.works[work.ticket]  # between input rounds: nothing on the wire
            self._admission.release(work)
            self._reply(work.ticket, error=error)
        if not any(c.phase is Phase.READY for c in self._connections):
            for work in self._drain_works():
                self._reply(work.ticket, error=error)
        if not was_ready:
            connect_error = (
                error if isinstance(error, ConnectFailed) else ConnectFailed(error.message)
            )
            self._connect_error = connect_error
            if permanent:
                self._permanent = connect_error
                self._answer_waiters(connect_error)
            else:
                # SPEC §7 fail_fast: each failed attempt answers the await_ready callers that
                # wait fail-fast; the others wait through the retries.
                self._answer_waiters(connect_error, fail_fast_only=True)
        connection.failure, connection.failure_permanent = error, permanent
        if connection.phase is Phase.IDLE:
            self._arm_retry(connection)
        elif not self._transport.fail(connection):
            self.gone(connection)

    def send_initialize(self, connection: Connection) -> None:
        self._send_initialize(connection)

    def confirmed(self, connection: Connection) -> None:
        assert connection.handshake is not None
        self._ready(connection, connection.handshake)

    def gone(self, connection: Connection) -> None:
        connection.move(Step.GONE)
        if self.closing:
            self._check_closed()
        else:
            self._arm_retry(connection)

    def log(self, level: str, message: str) -> None:
        self._out.append(Log(level=level, logger=self._logger, message=message))

    _log = log

    # --- the handshake -----------------------------------------------------------------------

    def _connect(self, connection: Connection) -> None:
        self._asks.forget(connection)
        connection.retry_at = None
        connection.failure, connection.failure_permanent = None, False
        connection.requests.clear()
        connection.handshake = None
        connection.connect_deadline = self.now + self.spec.init_timeout
        if self._transport.open(connection):
            self.transport_up(connection)

    def _learn_era(self, era: str) -> None:
        self._known_era = self._era_cache[self._era_key] = era

    def _send_initialize(self, connection: Connection) -> None:
        connection.move(Step.INITIALIZE)
        self._request(connection, INITIALIZE, initialize_params(self._capabilities), INITIALIZE)

    def _on_discover_answer(self, connection: Connection, response: rpc.Response) -> None:
        connection.probe_deadline = None
        handshake = parse_discover_result(response.result) if response.result else None
        if handshake is None and names_our_modern_version(response.error):
            handshake = Handshake("modern", MODERN_VERSION, None, {})
        if handshake is None:
            # "Fallback MUST NOT be keyed to one error code": anything else means legacy.
            self._send_initialize(connection)
        else:
            self._learn_era("modern")
            self._ready(connection, handshake)

    def _on_initialize_answer(self, connection: Connection, response: rpc.Response) -> None:
        if names_our_modern_version(response.error) and self.spec.era == "auto":
            # A modern-only server refusing initialize (the probe got no usable answer in
            # time): "a recognized modern JSON-RPC error ... do not fall back" (2026-07-28).
            self._learn_era("modern")
            self._ready(connection, Handshake("modern", MODERN_VERSION, None, {}))
            return
        if response.error is not None:
            failure = InitializationFailed(rpc_error(response.error).message)
            self.fail(connection, ConnectFailed(failure.message))
            return
        assert response.result is not None
        try:
            handshake = parse_initialize_result(response.result)
        except UnsupportedVersion as exc:
            self.fail(connection, ConnectFailed(exc.message, permanent=True), permanent=True)
            return
        except InvalidResponse as exc:
            self.fail(connection, ConnectFailed(exc.message))
            return
        self._learn_era("sse" if self._transport.speaks_sse(connection) else "legacy")
        connection.handshake = handshake  # so the notification carries MCP-Protocol-Version
        if self._transport.acknowledge(connection, rpc.notification("notifications/initialized")):
            connection.move(Step.CONFIRM)  # HTTP: ready once the server answered that POST
        else:
            self._ready(connection, handshake)

    def _ready(self, connection: Connection, handshake: Handshake) -> None:
        connection.move(Step.READY)
        connection.handshake = handshake
        connection.attempt = 0  # SPEC §7: the backoff resets only when a session is ready
        connection.connect_deadline = connection.probe_deadline = None
        self._connect_error = None
        status = self.status(self.now)
        for ticket in sorted(self._waiters):
            self._reply(ticket, status)
        self._waiters.clear()
        self._fail_fast_waiters.clear()
        self._pump()

    def _arm_retry(self, connection: Connection) -> None:
        """The failed connection is gone: retry it after the backoff (not if permanent)."""
        permanent = connection.failure_permanent
        connection.failure, connection.failure_permanent = None, False
        if permanent or self.closing:
            return
        delay = backoff_delay(
            connection.attempt, self.spec.reconnect, self.spec.max_backoff, self._jitter
        )
        # A server's Retry-After (429/503) wins when it asks for longer than our backoff.
        connection.retry_at = self.now + max(delay, connection.retry_after or 0.0)
        connection.retry_after = None
        connection.attempt += 1

    def _check_closed(self) -> None:
        if self.closing and all(c.phase is Phase.IDLE for c in self._connections):
            self._phase = SessionPhase.CLOSED
            self._answer_close()

    def _answer_close(self) -> None:
        self._close_deadline = None
        tickets, self._close_tickets = self._close_tickets, []
        for ticket in tickets:
            self._reply(ticket, None)

    # --- messages from the server --------------------------------------------------------

    def _on_notification(self, connection: Connection, note: rpc.Notification) -> None:
        params = note.params
        if note.method == "notifications/progress":
            self._on_progress(connection, params)
        elif note.method == "notifications/tools/list_changed":
            self._tools = None
            self._tools_generation += 1
        elif note.method == "notifications/cancelled":
            self._asks.cancelled(connection, params.get("requestId"))
        elif note.method == "notifications/elicitation/complete":
            if not self._asks.completed(params.get("elicitationId")):
                self._log("DEBUG", "ignored a completion of an unknown URL elicitation")
        elif note.method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), "INFO")
            data = params.get("data")
            text = data if isinstance(data, str) else json.dumps(data)
            self._out.append(Log(level=level, logger=self._server_logger, message=text[:4000]))

    def _on_progress(self, connection: Connection, params: Mapping[str, Any]) -> None:
        token, progress = params.get("progressToken"), params.get("progress")
        work = connection.requests.get(token) if isinstance(token, int) else None
        if not isinstance(work, Work) or not isinstance(progress, int | float):
            return  # progress for a finished or unknown request: ignored, as the spec allows
        # 2025-03-26 basic/lifecycle §Timeouts: progress MAY reset the timeout clock, but
        # a maximum timeout SHOULD always be enforced.
        work.deadline = min(self.now + work.timeout, work.admitted_at + self.spec.max_call_timeout)
        self._admission.arm(work)
        if work.progress:
            total = params.get("total")
            message = params.get("message")
            self._out.append(
                ProgressUpdate(
                    ticket=work.ticket,
                    progress=float(progress),
                    total=float(total) if isinstance(total, int | float) else None,
                    message=message if isinstance(message, str) else None,
                )
            )

    def _on_response(self, connection: Connection, response: rpc.Response) -> None:
        requests = connection.requests
        owner = requests.pop(response.id, None) if isinstance(response.id, int) else None
        if owner is None:
            # A late answer to a request that timed out or was cancelled: the cancellation
            # page says the sender "SHOULD ignore" it.
            self._log("DEBUG", f"ignored an answer to unknown request id {response.id!r}")
        elif owner == DISCOVER:
            self._on_discover_answer(connection, response)
        elif owner == INITIALIZE:
            self._on_initialize_answer(connection, response)
        else:
            assert isinstance(owner, Work)
            self._on_work_answer(connection, owner, response)

    def _on_work_answer(self, connection: Connection, work: Work, response: rpc.Response) -> None:
        if response.error is not None:
            error = rpc_error(response.error)
            if isinstance(error, UrlElicitationRequired):
                for elicitation in error.elicitations:
                    self._asks.expect_completion(elicitation["elicitationId"])
            self._finish(work, error=error)
            return
        result = response.result
        assert result is not None
        result_type = result.get("resultType", "complete")
        if result_type == "input_required" and work.method == "tools/call":
            self._on_input_required(connection, work, result)
        elif result_type != "complete":
            # "MUST treat an unrecognized value as invalid" (2026-07-28 basic/index).
            self._finish(
                work,
                error=InvalidResponse(
                    work.method,
                    f"resultType {str(result_type)[:40]!r} is not one this client knows",
                ),
            )
        elif work.method == "tools/call":
            value, problem = call_result(result)
            self._finish(work, value, error=problem)
        else:
            self._on_tools_page(connection, work, result)

    def _on_input_required(
        self, connection: Connection, work: Work, result: Mapping[str, Any]
    ) -> None:
        """2026-07-28 basic/patterns/mrtr: fulfil ``inputRequests`` with the application's
        handlers, then retry as a new request with ``inputResponses`` and ``requestState``
        echoed byte for byte (never one the server did not send)."""
        work.rounds += 1
        requests, state, problem = input_requests(result, work.rounds)
        if problem is None:
            problem = self._asks.input_problem(requests)
        if problem is not None:
            self._finish(work, error=InvalidResponse(work.method, problem))
            return
        work.request_state = state
        work.input_responses = {}
        work.awaiting = set(requests)
        for key, ask in requests.items():
            params = ask.get("params")
            self._asks.ask_input(
                work.ticket, key, ask["method"], params if isinstance(params, dict) else {}
            )
        if not work.awaiting:
            self._retry_with_inputs(connection, work)  # "MAY retry immediately" with none

    def _on_input_answered(self, ticket: int, key: str, event: ServerRequestAnswered) -> None:
        work = self._admission.works.get(ticket)
        if work is None or not work.awaiting or key not in work.awaiting or work.slot is None:
            return  # the call ended meanwhile (timeout, cancel, loss)
        if event.result is None:
            self._finish(
                work,
                error=JsonRpcError(
                    rpc.INTERNAL_ERROR, f"the client's handler failed: {event.failed}", None
                ),
            )
            return
        work.awaiting.discard(key)
        assert work.input_responses is not None  # made with awaiting
        work.input_responses[key] = dict(event.result)
        if not work.awaiting:
            self._retry_with_inputs(self._connections[work.slot], work)

    def _retry_with_inputs(self, connection: Connection, work: Work) -> None:
        # A connection that fails answers the work waiting between rounds, so it is ready.
        assert connection.phase is Phase.READY
        extra: dict[str, Any] = {"inputResponses": work.input_responses}
        if work.request_state is not None:
            extra["requestState"] = work.request_state
        self._send_work(connection, work, extra)

    def _on_tools_page(self, connection: Connection, work: Work, result: Mapping[str, Any]) -> None:
        assert work.tools is not None and work.cursors is not None  # a tools/list work
        cursor, problem, warning = tools_page(result, work.tools, work.cursors)
        if problem is not None:
            self._finish(work, error=InvalidResponse("tools/list", problem))
            return
        if cursor is not None:
            work.cursors.add(cursor)
            self._send_work(connection, work, {"cursor": cursor})
            return
        if warning is not None:
            self._log("WARNING", warning)
        if work.generation == self._tools_generation:
            self._tools = list(work.tools)
        self._finish(work, list(work.tools))

    # --- admission -------------------------------------------------------------------------

    def _refusal(self) -> McpError | None:
        """Why new work cannot be admitted now, or ``None`` when it can."""
        if self._phase is not SessionPhase.RUNNING:
            return NotReady("closed")
        if self._permanent is not None:
            return self._permanent
        for connection in self._connections:  # re-established: work waits for its session
            if connection.phase in _ESTABLISHED:
                return None
        return self._connect_error or NotReady(self.state)

    def _not_ready(self) -> NotReady:
        """NotReady naming the last connect failure, if a retry is what we are waiting for."""
        if self._connect_error is None:
            return NotReady(self.state)
        return NotReady(
            self.state,
            f"the session is {self.state}, not ready; still retrying after: "
            f"{self._connect_error.reason}",
        )

    def _admit(self, work: Work) -> None:
        refusal = self._refusal()
        if refusal is not None:
            self._admission.settle(work, commit=False)
            self._reply(work.ticket, error=refusal)
            return
        placed = self._admission.admit(work)
        if isinstance(placed, Connection):
            self._send_work(placed, work, None)
        elif placed is False:
            self._admission.settle(work, commit=False)
            self._reply(
                work.ticket,
                error=Busy(
                    f"{self.in_flight} requests are in flight and {self.queued} queued, "
                    f"the most this spec allows; nothing was sent (retry later, or raise "
                    f"pool_size/queue_limit)"
                ),
            )

    def _pump(self) -> None:
        while (next_up := self._admission.next_queued()) is not None:
            self._send_work(*next_up, None)

    def _send_work(
        self, connection: Connection, work: Work, extra: Mapping[str, Any] | None
    ) -> None:
        params: dict[str, Any] = {}
        meta: dict[str, Any] = dict(work.meta) if work.meta else {}
        if work.method == "tools/call":
            params["name"] = work.name
            if work.arguments is not None:
                params["arguments"] = dict(work.arguments)
        if extra is not None:
            params.update(extra)  # the next page's cursor, or a retry's inputResponses
        assert connection.handshake is not None
        if connection.handshake.era == "modern":
            meta.update(modern_meta(self._capabilities))
        if work.progress:
            # The token is the request id: unique among active requests, as progress requires.
            meta["progressToken"] = self._next_id + 1
        self._admission.enter(work, connection)
        work.request_id = self._request(connection, work.method, params, work, meta)

    def _withdraw(self, work: Work, reason: str) -> None:
        """Take work out of the queue or off its connection; cancel it on the wire if sent."""
        if work.slot is None:
            self._admission.release(work)
            return
        connection = self._connections[work.slot]
        assert work.request_id is not None
        if connection.requests.pop(work.request_id, None) is None:
            # Waiting for input handlers between two rounds: nothing is on the wire.
            self._admission.release(work)
            return
        # Work that is still ours and sent is always on a live, ready connection: a failing
        # one answers its work first. Legacy basic/utilities/cancellation; 2026-07-28 stdio:
        # cancellation "MUST be" notifications/cancelled, only for a request actually issued.
        tell = self._transport.cancel(connection, work.request_id)
        self._admission.release(work)
        if tell:
            self._send(
                connection,
                rpc.notification(
                    "notifications/cancelled", {"requestId": work.request_id, "reason": reason}
                ),
            )

    def _finish(self, work: Work, value: object = None, *, error: McpError | None = None) -> None:
        self._admission.finish(work)
        self._reply(work.ticket, value, error=error)
        self._pump()

    def _drain_works(self) -> list[Work]:
        """Remove every piece of work (in ticket order) and forget their requests."""
        works = self._admission.drain()
        for connection in self._connections:
            requests = connection.requests
            for request_id in [k for k, v in requests.items() if isinstance(v, Work)]:
                del requests[request_id]
        return works

    # --- small helpers ---------------------------------------------------------------------

    def _request(
        self,
        connection: Connection,
        method: str,
        params: dict[str, Any],
        owner: Work | str,
        meta: dict[str, Any] | None = None,
    ) -> int:
        self._next_id += 1
        if meta:
            params = {**params, "_meta": meta}
        connection.requests[self._next_id] = owner
        self._transport.send(connection, rpc.request(self._next_id, method, params), self._next_id)
        return self._next_id

    def _send(self, connection: Connection, message: Mapping[str, Any]) -> None:
        """Send a message that expects no answer (a notification, or our response)."""
        self._transport.send(connection, message, None)

    def _forget_internal(self, connection: Connection, owner: str) -> None:
        for request_id in [k for k, v in connection.requests.items() if v == owner]:
            del connection.requests[request_id]
            self._transport.forget(connection, request_id)

    def _reply(self, ticket: int, value: object = None, *, error: McpError | None = None) -> None:
        self._out.append(Reply(ticket=ticket, value=value, error=error))

    def _answer_waiters(self, error: McpError, *, fail_fast_only: bool = False) -> None:
        for ticket in sorted(self._fail_fast_waiters if fail_fast_only else self._waiters):
            del self._waiters[ticket]
            self._reply(ticket, error=error)
        self._fail_fast_waiters.clear()


_DISPATCH: dict[type[Event], Any] = {
    CallTool: SessionMachine._on_call_tool,
    StdoutReceived: SessionMachine._on_transport,
    **dict.fromkeys(
        (ProcessSpawned, SpawnFailed, StdoutClosed, StderrReceived, ProcessExited, WriteFailed),
        SessionMachine._on_transport,
    ),
    **dict.fromkeys(
        (HttpResponseStarted, HttpBodyReceived, HttpResponseEnded, HttpFailed),
        SessionMachine._on_transport,
    ),
    AwaitReady: SessionMachine._on_await_ready,
    ListTools: SessionMachine._on_list_tools,
    CancelCall: SessionMachine._on_cancel,
    Close: SessionMachine._on_close,
    ServerRequestAnswered: SessionMachine._on_server_request_answered,
    TimerFired: SessionMachine._on_timer,
}
