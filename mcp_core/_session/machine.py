"""The session machine: everything the protocol decides, and nothing else.

Theory of operation
===================

A ``SessionMachine`` is fed events (``_vocabulary/events.py``) and answers each with a list of
actions (``_vocabulary/actions.py``). It owns no socket, thread, clock or random source: time
arrives as ``now`` on every event, and the one timer a driver keeps is re-armed to
``next_deadline()`` after every event. Feeding the same events with the same ``now`` values
always yields the same actions, which is what makes recorded sessions replayable.

Layers. The machine is small machines stacked the way aioquic splits a connection; each file
holds one and reads top to bottom (``docs/architecture.md`` draws the packages they live in):

- ``_vocabulary/phases.py``: the transition tables every phase change goes through.
- ``admission.py``: the in-flight window, the queue behind it and every caller's deadline;
  ``calls.py``: caller work on top of it (tools/call, lists, any request, progress,
  cancellation, paging, input rounds), ``results.py`` reading the answers.
- ``opening.py``: the handshake each era needs, and the era cache; ``attempts.py``: failed
  connect attempts, what is logged of each, and when a readiness wait gives up on them.
- ``inbox.py``: what the server sends, to the layer it concerns; ``server_requests.py``: the
  server's own requests to the application; ``subscriptions.py``: 2026-07-28 listen streams.
- a ``Transport`` (``_transport/connection.py``): ``_transport/stdio.py`` (spawn, framing,
  stderr, the stop sequence) or ``_transport/http.py`` (requests and streams, session ids,
  statuses, SSE resumption, HTTP+SSE), possibly wrapped by the authorization layer
  (``_auth/layer.py``: the same calls; it adds the token and holds a 401 until a fresh token
  lets it send the request again). Each reports back through the ``Session`` protocol, which
  this class implements.
- this file: the session that composes them: the lifecycle, ``await_ready``, what a failure
  means for callers and retries, and ``Close``.

Connections ("slots"). A spec with ``concurrency='pooled'`` runs ``pool_size`` connections,
each with an in-flight cap of one; every other policy runs one, with a cap of one
(``serialized``) or ``pool_size`` (``stateless``). A connection goes
``IDLE -> SPAWNING -> OPEN -> PROBING -> INITIALIZING -> READY`` (HTTP: no SPAWNING, and a
``CONFIRMING`` step), see ``docs/states.md``. ``PROBING`` sends ``server/discover`` (era='auto'
only, verdict not cached); ``INITIALIZING`` sends the legacy ``initialize``; the modern era
needs neither. Any failure (exit, spawn error, handshake error or timeout, broken pipe)
answers the work it affects, stops the transport (``STOPPING``) and, once it is gone
(``IDLE``), arms the retry timer with doubling, jittered backoff that resets only when a
connection reaches ``READY``. Permanent failures (missing executable, unsupported
protocol version, refused credentials) arm nothing.

Caller work. ``CallTool`` and ``ListTools`` are "work" identified by the caller's ticket. Work
is admitted only while some connection is ready (otherwise the caller is answered at once:
``ConnectFailed`` after a failed connect, else ``NotReady``), then as ``_session/admission.py``
says. Every admitted piece of work carries a deadline from admission; on expiry the caller gets
``RequestTimeout`` and a sent request is cancelled. Progress only ever pushes a call's
deadline out, never past ``max_call_timeout`` from admission (or the call's own ``timeout=``,
when that is longer: it is honoured). Every ticket is answered exactly once (or not
at all after ``CancelCall``), and ``Close`` is answered within ``3 * shutdown_grace +
CLOSE_MARGIN`` seconds whatever the driver reports: that deadline is in ``next_deadline()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any

from .._config.enterprise import declared_extensions
from .._config.oauth_settings import OAuthSettings
from .._config.spec import Spec
from .._transport.connection import DISCOVER, INITIALIZE, Connection, SseTransport, Transport, Work
from .._transport.eras import (
    Handshake,
    client_capabilities,
)
from .._transport.jitter import Jitter, backoff_delay
from .._vocabulary.actions import Action, Log, Reply
from .._vocabulary.errors import (
    ConnectFailed,
    InvalidResponse,
    McpError,
    MessageTooLarge,
    NotReady,
    RequestTimeout,
    ServerExited,
    UnexpectedEvent,
)
from .._vocabulary.events import (
    AUTHORIZATION_EVENTS,
    DRIVER_REPORTS,
    AwaitReady,
    CallTool,
    CancelCall,
    Close,
    Connect,
    Event,
    FollowTask,
    ListItems,
    ListTools,
    Request,
    RootsChanged,
    ServerRequestAnswered,
    Subscribe,
    TimerFired,
    Unsubscribe,
)
from .._vocabulary.phases import (
    ESTABLISHED,
    HANDSHAKING,
    Phase,
    SessionPhase,
    SessionStep,
    Step,
    session_state,
    session_step,
)
from .._vocabulary.status import SessionState, Status
from .._vocabulary.tokens import StoredAuthorization
from .._wire import jsonrpc as rpc
from .admission import Admission
from .attempts import Attempts
from .calls import Calls
from .client_tasks import ClientTasks
from .inbox import Inbox
from .opening import Opening
from .results import MAX_INPUT_ROUNDS
from .server_requests import (
    HANDLED_REQUESTS,
    ServerRequests,
    answer_response,
    answered_requests,
)
from .snapshot import snapshot
from .subscriptions import LISTEN, Subscriptions
from .tasks import tools_first
from .transports import build_transport

if TYPE_CHECKING:  # the OAuth layer is imported when a machine needs it (transports.py)
    from .._auth.layer import AuthEvent, Authorization

__all__ = [
    "CLOSE_MARGIN",
    "HANDLED_REQUESTS",
    "MAX_INPUT_ROUNDS",
    "SessionMachine",
]

# Close is answered at most this long after the stop sequence (3 * shutdown_grace) could have
# ended: time for a driver to report the outcome of a spawn that was under way.
CLOSE_MARGIN = 5.0


class SessionMachine:
    """The pure MCP client session. See the module docstring for the theory of operation.

    ``era_cache`` maps a server key (the command line) to the era verdict ('legacy' or
    'modern') of an earlier probe; pass the same mapping to every machine of a process so a
    server is probed once. The machine reads its key once, when it is built (the
    verdict it starts from is ``known_era``, which a recording keeps so that a replay starts
    from the same one), and writes the verdicts it learns.
    """

    __slots__ = (
        "_admission", "_asks", "_attempts", "_auth", "_calls", "_capabilities", "_close_deadline",
        "_close_tickets", "_connect_error", "_connections", "_fail_fast_waiters", "_http",
        "_inbox", "_jitter", "_last_error", "_logger", "_next_id", "_opening", "_out",
        "_permanent", "_phase", "_route", "_subscriptions", "_transport", "_waiters",
        "accept_tasks", "elicitation_modes", "handlers", "known_era", "list_changed", "now",
        "sampling_tools", "spec",
    )  # fmt: skip

    def __init__(
        self,
        spec: Spec,
        *,
        era_cache: MutableMapping[str, str] | None = None,
        handlers: Iterable[str] = (),
        elicitation_modes: Iterable[str] = ("form",),
        sampling_tools: bool = False,
        accept_tasks: bool = False,
        known_era: str | None = None,
        list_changed: bool = False,
        oauth: OAuthSettings | None = None,
        authorization: StoredAuthorization | None = None,
    ) -> None:
        """``handlers`` names the server requests the application answers: any of
        'elicitation', 'sampling', 'roots'. They are declared as client capabilities and
        arrive as ``HandleServerRequest``; every other server request gets -32601.

        ``elicitation_modes`` are the elicitation modes the 'elicitation' handler takes:
        'form' (the default, declared as ``elicitation: {}``) and/or 'url' (2025-11-25), which
        the handler then gets too (``mode``, ``url``, ``elicitationId``, ``message``). A
        request in another mode gets -32602. ``ValueError`` for an unknown or empty set of
        modes, or for modes other than form alone without an 'elicitation' handler.
        ``sampling_tools`` declares ``sampling: {"tools": {}}`` (2025-11-25): the 'sampling'
        handler (without one: ``ValueError``) then gets requests with tools (``sampling.py``).
        ``list_changed``: list changes become ``ListChanged`` actions too (``subscriptions.py``).
        ``accept_tasks``: the server may run those handlers' requests as tasks (2025-11-25
        basic/utilities/tasks, ``client_tasks.py``; without either handler: ``ValueError``).

        ``oauth`` (HTTP only, and not with an ``Authorization`` header in the spec): run the
        OAuth flow when the server asks for a token (``_auth/layer.py``), starting from the
        token store's ``authorization`` for this server if there is one. ``ValueError`` for
        either misuse."""
        self.handlers, modes = answered_requests(handlers, elicitation_modes, sampling_tools)
        self.elicitation_modes, self.sampling_tools = modes, sampling_tools
        self.list_changed = list_changed
        self.accept_tasks = accept_tasks
        self.spec = spec
        self.now = 0.0
        self._phase = SessionPhase.NEW
        self._out: list[Action] = []
        extensions = declared_extensions(spec.extensions, spec.oauth, spec.oauth_enabled)
        self._capabilities = client_capabilities(
            self.handlers, modes, sampling_tools, extensions, accept_tasks
        )
        tasks = ClientTasks(self.handlers, accept_tasks, self)  # ValueError: no handler for it
        self._asks = ServerRequests(self.handlers, modes, self._out, sampling_tools, tasks=tasks)
        http = spec.transport == "http"
        pooled = spec.concurrency == "pooled"
        self._connections = [Connection(index=i) for i in range(spec.pool_size if pooled else 1)]
        # stdio's window never depends on the era: one number, not a lookup per call.
        stdio_cap = spec.pool_size if spec.default_concurrency(None) == "stateless" else 1
        self._admission = Admission(
            self._connections,
            spec.queue_limit,
            (lambda: stdio_cap) if not http else (lambda: self.in_flight_cap),
            self._out,
        )
        self._transport: Transport
        self._http: SseTransport | None  # the transport again, when it is HTTP
        self._auth: Authorization | None
        self._transport, self._http, self._auth = build_transport(
            spec, self._connections, self, self._out, oauth, authorization
        )
        self._opening = Opening(
            spec, self._transport, self._http, self._capabilities, self,
            era_cache=era_cache, known_era=known_era,
        )  # fmt: skip
        self.known_era = self._opening.known_era  # the verdict this machine started from
        self._calls = Calls(
            spec, self._connections, self._admission, self._asks, self._capabilities, self,
            self._out,
        )  # fmt: skip
        self._subscriptions = Subscriptions(
            self._connections, self._calls, self._capabilities, self, list_changed
        )
        self._calls.subscriptions_changed = self._subscriptions.sync
        self._inbox = Inbox(
            self._calls, self._asks, self._subscriptions, self._opening, self.send, self.log,
            self._out, f"mcp.server.{spec.name}", list_changed,
        )  # fmt: skip
        # Each event type's handler, bound once: handle() is on every call's path. The driver's
        # reports of a transport this session does not have are in no route: refused.
        self._route: dict[type[Event], Callable[[Any], None]] = {
            CallTool: self._calls.call_tool,
            FollowTask: self._calls.follow_task,
            Connect: self._on_connect,
            **dict.fromkeys(self._transport.events, self._transport.handle),
            AwaitReady: self._on_await_ready,
            ListTools: self._calls.list_tools,
            ListItems: self._calls.list_tools,
            Request: self._calls.request,
            Subscribe: self._calls.subscribe,
            Unsubscribe: self._calls.subscribe,
            RootsChanged: self._on_roots_changed,
            CancelCall: self._on_cancel,
            Close: self._on_close,
            ServerRequestAnswered: self._on_server_request_answered,
            **dict.fromkeys(AUTHORIZATION_EVENTS, self._on_authorization),
            TimerFired: self._on_timer,
        }
        self._waiters: dict[int, float] = {}  # await_ready ticket -> deadline
        # The waiters (a subset of _waiters) that a failed attempt answers (fail_fast).
        self._fail_fast_waiters: set[int] = set()
        self._close_tickets: list[int] = []
        self._close_deadline: float | None = None
        self._next_id = 0
        self._jitter = Jitter(spec.jitter_seed)
        self._connect_error: ConnectFailed | None = None  # last connect failed; cleared on ready
        self._attempts = Attempts()  # failed in a row since last ready or started
        self._permanent: ConnectFailed | None = None
        self._last_error: McpError | None = None
        self._logger = f"mcp_client.{spec.name}"

    # --- public surface ----------------------------------------------------------------

    def handle(self, event: Event) -> list[Action]:
        """Consume one event; return the actions to perform, in order.

        ``UnexpectedEvent`` (nothing changed) for an event the transition tables do not allow
        in the current phase: a driver bug, never a server's doing."""
        kind = type(event)
        route = self._route.get(kind)
        if route is None or (self._phase is SessionPhase.NEW and kind in DRIVER_REPORTS):
            raise UnexpectedEvent(self._phase.name, kind.__name__)
        self.now = event.now
        route(event)
        out = self._out
        if not out:
            return []
        actions = out[:]
        out.clear()
        return actions

    def next_deadline(self) -> float | None:
        """The earliest time at which ``TimerFired`` has something to do, or ``None``."""
        # Drivers ask after every event, so this builds nothing: one pass, no list.
        best = self._admission.earliest_deadline()
        # Every event asks: the task stores are asked only when they hold something.
        calls, asks = self._calls.tasks, self._asks.tasks
        for again in (
            min(self._waiters.values()) if self._waiters else None,
            self._close_deadline,
            self._subscriptions.next_deadline(),
            calls.next_deadline(self._admission.works) if calls.followed else None,
            asks.next_deadline() if asks.held else None,
        ):
            if again is not None and (best is None or again < best):
                best = again
        for connection in self._connections:
            for t in (
                connection.retry_at,
                connection.probe_deadline,
                connection.connect_deadline if connection.phase in HANDSHAKING else None,
            ):
                if t is not None and (best is None or t < best):
                    best = t
        return self._transport.next_deadline(best)

    def is_secret(self, event: Event) -> bool:
        """Whether ``event`` carries a credential (an answer of the authorization server's
        token or registration endpoint): a driver records it with ``secret=True``. Ask before
        handling the event."""
        return self._auth is not None and self._auth.is_secret(event)  # type: ignore[arg-type]

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
    def state(self) -> SessionState:
        """'new' | 'starting' | 'initializing' | 'ready' | 'closed' (``session_state``'s
        rules)."""
        return session_state(self._phase, (connection.phase for connection in self._connections))

    @property
    def concurrency(self) -> str:
        """The in-flight policy in force: the spec's, else the transport's and era's default
        (stdio and modern HTTP stateless, legacy HTTP serialized)."""
        if self._http is None:  # the era changes nothing on stdio
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

    @property
    def lists_tools_first(self) -> bool:
        """``mcp_core.driver.lists_tools_first(status)``, at no cost: asked before each call."""
        return tools_first(self._calls.tools, self._connections)

    def status(self, now: float) -> Status:
        """A snapshot for callers; never changes state (``snapshot.py``)."""
        load = (self.in_flight, self.queued)
        sse, tools = self._transport.sse, self._calls.tools
        return snapshot(
            self.spec, self.state, sse, self.concurrency, load, self._connections, tools,
            self._last_error, now,
        )  # fmt: skip

    def __repr__(self) -> str:
        return (
            f"<SessionMachine {self.spec.name!r} state={self.state} "
            f"in_flight={self.in_flight} queued={self.queued}>"
        )

    # --- caller events -------------------------------------------------------------------

    def _on_connect(self, event: Connect) -> None:
        was, self._phase = self._phase, session_step(self._phase, Connect)
        if was in (SessionPhase.RUNNING, SessionPhase.CLOSING):
            # Already running: ignored; still stopping: a restart waits for the stop to end.
            self.log("DEBUG", "Connect while started or still stopping: ignored")
            return
        self._permanent = self._connect_error = None
        self._asks.tasks.wall_offset = event.wall_offset
        self._attempts.reset(self.now)
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
            # fail_fast: a caller arriving while closed after a failure is answered
            # at once; without fail_fast, await_ready waits through the retries, unless the
            # last two attempts failed the same way (``_session/attempts.py``).
            self._reply(event.ticket, error=self._connect_error)
        elif self._attempts.repeated and self.state == "closed":
            self._reply(event.ticket, error=self._wait_over())
        elif self._phase is not SessionPhase.RUNNING or event.timeout == 0:
            self._reply(event.ticket, error=NotReady(self.state))
        else:
            self._waiters[event.ticket] = self.now + event.timeout
            if fail_fast:
                self._fail_fast_waiters.add(event.ticket)

    def _on_cancel(self, event: CancelCall) -> None:
        tickets = (event.ticket, *event.others)
        for ticket in tickets:
            self._waiters.pop(ticket, None)
            self._fail_fast_waiters.discard(ticket)
        self._calls.cancel(tickets)

    def _on_close(self, event: Close) -> None:
        was, self._phase = self._phase, session_step(self._phase, Close)
        if was is not SessionPhase.RUNNING:
            if was is SessionPhase.CLOSING:
                self._close_tickets.append(event.ticket)
            else:
                self._reply(event.ticket, None)  # nothing to stop
            return
        self._close_tickets.append(event.ticket)
        self._close_deadline = self.now + 3 * self.spec.shutdown_grace + CLOSE_MARGIN
        stopped = NotReady("closed", "the client was stopped before this request finished")
        self._calls.fail_all(stopped)
        self._answer_waiters(stopped)
        if self._auth is not None:
            self._auth.stop()
        for connection in self._connections:
            connection.retry_at = connection.probe_deadline = connection.connect_deadline = None
            connection.requests.clear()  # a late handshake answer must not start a new step
            self._asks.tasks.forget(connection)
            connection.move(Step.STOP)
            if connection.phase is Phase.STOPPING and not self._transport.close(connection):
                connection.move(Step.GONE)
        self._check_closed()

    def _on_roots_changed(self, event: RootsChanged) -> None:
        """2025-11-25 client/roots: a client that declared ``listChanged`` "MUST" send the
        notification when its roots change; the modern era has none to send."""
        if "roots" not in self.handlers:
            return
        for connection in self._connections:
            if connection.phase is Phase.READY and not connection.modern:
                self.send(connection, rpc.notification("notifications/roots/list_changed", {}))

    def _on_server_request_answered(self, event: ServerRequestAnswered) -> None:
        asker, event, warning = self._asks.answered(event)
        if warning is not None:
            self.log("WARNING", warning)
        if asker is None:  # dropped, unknown, or a task's (kept for its tasks/result)
            return
        connection, request_id = asker
        if isinstance(connection, int):  # an input round of a call: (ticket, input key)
            self._calls.input_answered(connection, str(request_id), event)
        elif connection.phase is not Phase.READY or self._phase is not SessionPhase.RUNNING:
            # The connection that asked is gone; its server no longer waits for this answer.
            self.log("DEBUG", f"dropped the answer to server request {request_id!r}")
        else:
            self.send(connection, answer_response(request_id, event))

    # --- time ------------------------------------------------------------------------------

    def _on_timer(self, event: TimerFired) -> None:
        now = self.now
        self._calls.expire(now)
        self._calls.poll_tasks(now)
        self._asks.tasks.expire(now)
        self._subscriptions.expire(now)
        # Connections first: a handshake past its init_timeout is then a failed attempt, which
        # the readiness waits ending now report (the ``async with`` block's ends with it).
        for connection in self._connections:
            self._connection_timers(connection, now)
        for ticket, deadline in sorted(self._waiters.items()):
            if deadline <= now:
                del self._waiters[ticket]
                self._fail_fast_waiters.discard(ticket)
                self._reply(ticket, error=self._wait_over())
        if self._close_deadline is not None and self._close_deadline <= now:
            self.log("ERROR", "stopping took too long; answering Close without the rest")
            self._answer_close()
        self._calls.pump()

    def _connection_timers(self, connection: Connection, now: float) -> None:
        self._transport.expire(connection, now)
        if connection.probe_deadline is not None and connection.probe_deadline <= now:
            self._opening.probe_expired(connection)
        if (
            connection.phase in HANDSHAKING
            and connection.connect_deadline is not None
            and connection.connect_deadline <= now
        ):
            late = RequestTimeout(
                f"the server did not complete the handshake within "
                f"init_timeout={self.spec.init_timeout:g} s"
            )
            self.fail(connection, ConnectFailed(str(late), cause=late))
        if connection.retry_at is not None and connection.retry_at <= now:
            self._connect(connection)
        self._transport.resume_due(connection, now)

    # --- what the transports report (the Session protocol) -----------------------------------

    def _on_authorization(self, event: AuthEvent) -> None:
        if self._auth is None:
            raise UnexpectedEvent(self._phase.name, type(event).__name__, " (no OAuth here)")
        self._auth.handle_auth(event)

    def transport_up(self, connection: Connection) -> None:
        """The transport is up (process running, or an HTTP endpoint to talk to): start the
        handshake the era needs, or stop at once if the session is closing."""
        if self.closing:
            connection.move(Step.STOP)
            self._transport.close(connection)
            return
        self._opening.start(connection)

    def decoded(self, connection: Connection, item: object) -> None:
        self._inbox.decoded(connection, item)

    def received(self, connection: Connection, message: rpc.Incoming) -> None:
        self._inbox.received(connection, message)

    def oversized(self, connection: Connection, request_id: object, size: int) -> None:
        self._unanswerable(
            connection, request_id, MessageTooLarge(size, self.spec.max_message_bytes)
        )

    def unreadable(self, connection: Connection, request_id: object, excerpt: str) -> None:
        owner = connection.requests.get(request_id) if isinstance(request_id, int) else None
        method = owner.method if isinstance(owner, Work) else str(owner or "a request")
        error = InvalidResponse(method, f"the answer is not JSON or not UTF-8: {excerpt[:80]!r}")
        self._unanswerable(connection, request_id, error)

    def _unanswerable(self, connection: Connection, request_id: object, error: McpError) -> None:
        """The answer to ``request_id`` arrived but cannot be used: the request fails with
        ``error`` at once (a handshake fails the connection)."""
        owner = connection.requests.get(request_id) if isinstance(request_id, int) else None
        if isinstance(owner, Work):
            del connection.requests[request_id]  # type: ignore[arg-type]
            self._calls.finish(owner, error=error)
        elif owner in (DISCOVER, INITIALIZE):
            self.fail(connection, ConnectFailed(str(error), cause=error))
        elif owner is not None:  # a listen or a renewal: lost, like an HTTP stream that broke
            assert isinstance(request_id, int)
            del connection.requests[request_id]
            self.lose(connection, owner, error, request_id)
        else:
            self.log("WARNING", f"discarded a message for no known request: {error.message}")

    def lose(
        self,
        connection: Connection,
        owner: Work | str,
        error: McpError,
        request_id: int | None = None,
    ) -> None:
        if isinstance(owner, Work):
            self._calls.finish(owner, error=error)
        elif owner == DISCOVER:
            # No usable answer to the probe: a legacy server ("anything else").
            connection.probe_deadline = None
            self._opening.send_initialize(connection)
        elif owner == INITIALIZE:
            self.fail(connection, ConnectFailed(str(error), cause=error))
        elif owner == LISTEN and request_id is not None:
            self._subscriptions.ended(connection, request_id, error)
        else:  # a renewal (log level, subscription) the next session sends again
            self.log("DEBUG", f"{owner} was lost: {error.message}")

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
            error = ConnectFailed(
                f"{detail}; last stderr:\n{stderr}" if stderr else detail,
                cause=ServerExited(returncode, stderr),
            )
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
        was_ready = (was or connection.phase) in ESTABLISHED
        if connection.phase is not Phase.IDLE:  # IDLE: the process is gone already
            connection.move(Step.FAIL)
        connection.handshake = None
        connection.probe_deadline = connection.connect_deadline = None
        self._last_error = error
        self._asks.forget(connection)
        self._calls.connection_failed(connection, error)
        if was_ready:
            self._attempts.reset(self.now)  # the attempts to come start a new run
        else:
            connect_error = (
                error
                if isinstance(error, ConnectFailed)
                else ConnectFailed(str(error), cause=error)
            )
            self._attempt_failed(connect_error, permanent)
        connection.failure, connection.failure_permanent = error, permanent
        if connection.phase is Phase.IDLE:
            self._arm_retry(connection)
        elif not self._transport.fail(connection):
            self.gone(connection)

    def _attempt_failed(self, error: ConnectFailed, permanent: bool) -> None:
        """A connect attempt failed: log it, end the readiness waits it ends (a permanent
        failure, two in a row the same way, or fail-fast waits: ``_session/attempts.py``)."""
        self.log(*self._attempts.failed(error, permanent))
        self._connect_error = error
        if permanent:
            self._permanent = error
            self._answer_waiters(error)
        elif self._attempts.repeated:
            self._answer_waiters(self._wait_over())
        else:
            self._answer_waiters(error, fail_fast_only=True)

    def send_initialize(self, connection: Connection) -> None:
        # A new session (HTTP+SSE endpoint, or one replacing a session the server forgot)
        # owes no answer to what an earlier session asked: the stdio restart does the same.
        self._asks.forget(connection)
        connection.epoch += 1
        self._opening.send_initialize(connection)

    def confirmed(self, connection: Connection) -> None:
        assert connection.handshake is not None
        self.ready(connection, connection.handshake)

    def gone(self, connection: Connection) -> None:
        connection.move(Step.GONE)
        if self.closing:
            self._check_closed()
        else:
            self._arm_retry(connection)

    def log(self, level: str, message: str) -> None:
        self._out.append(Log(level=level, logger=self._logger, message=message))

    # --- the handshake -----------------------------------------------------------------------

    def _connect(self, connection: Connection) -> None:
        self._asks.forget(connection)
        connection.epoch += 1
        connection.retry_at = None
        connection.failure, connection.failure_permanent = None, False
        connection.requests.clear()
        connection.handshake = None
        connection.connect_deadline = self.now + self.spec.init_timeout
        if self._transport.open(connection):
            self.transport_up(connection)

    def ready(self, connection: Connection, handshake: Handshake) -> None:
        """The connection is open: answer the callers waiting for that, send queued work."""
        connection.move(Step.READY)
        connection.handshake = handshake
        connection.attempt = 0  # the backoff resets only when a session is ready
        connection.connect_deadline = connection.probe_deadline = None
        self._connect_error = None
        self._attempts.reset(self.now)
        self._calls.connection_ready(connection)
        self._subscriptions.connection_ready(connection)
        status = self.status(self.now)
        for ticket in sorted(self._waiters):
            self._reply(ticket, status)
        self._waiters.clear()
        self._fail_fast_waiters.clear()
        self._calls.pump()

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
            self._phase = session_step(self._phase, SessionStep.STOPPED)
            self._answer_close()

    def _answer_close(self) -> None:
        self._close_deadline = None
        tickets, self._close_tickets = self._close_tickets, []
        for ticket in tickets:
            self._reply(ticket, None)

    # --- admission -------------------------------------------------------------------------

    @property
    def next_request_id(self) -> int:
        return self._next_id + 1

    def cancel(self, connection: Connection, request_id: int) -> bool:
        return self._transport.cancel(connection, request_id)

    def refusal(self) -> McpError | None:
        """Why new work cannot be admitted now, or ``None`` when it can."""
        if self._phase is not SessionPhase.RUNNING:
            return NotReady("closed")
        if self._permanent is not None:
            return self._permanent
        for connection in self._connections:  # re-established: work waits for its session
            if connection.phase in ESTABLISHED:
                return None
        return self._connect_error or NotReady(self.state)

    # --- small helpers ---------------------------------------------------------------------

    def _wait_over(self) -> McpError:
        return self._attempts.wait_over(self._connect_error, self.state, self.now)

    def request(
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

    def send(self, connection: Connection, message: Mapping[str, Any]) -> None:
        """Send a message that expects no answer (a notification, or our response)."""
        self._transport.send(connection, message, None)

    def _reply(self, ticket: int, value: object = None, *, error: McpError | None = None) -> None:
        self._out.append(Reply(ticket=ticket, value=value, error=error))

    def _answer_waiters(self, error: McpError, *, fail_fast_only: bool = False) -> None:
        for ticket in sorted(self._fail_fast_waiters if fail_fast_only else self._waiters):
            del self._waiters[ticket]
            self._reply(ticket, error=error)
        self._fail_fast_waiters.clear()
