"""The session machine: everything the protocol decides, and nothing else.

Theory of operation
===================

A ``SessionMachine`` is fed events (``_events.py``) and answers each with a list of actions
(``_actions.py``). It owns no socket, thread, clock or random source: time arrives as ``now``
on every event, and the one timer a driver keeps is re-armed to ``next_deadline()`` after every
event. Feeding the same events with the same ``now`` values always yields the same actions,
which is what makes recorded sessions replayable (SPEC §13).

Connections ("slots"). A spec with ``concurrency='pooled'`` runs ``pool_size`` server
processes, each with an in-flight cap of one; every other policy runs one process, with a cap
of one (``serialized``) or ``pool_size`` (``stateless``) (SPEC §6). Each slot walks through
these phases::

    idle --Spawn--> spawning --ProcessSpawned--> probing --> initializing --> ready
      ^                                              |            |             |
      +---- retry timer <-- (process gone) <-- stopping <---------+-------------+  (on failure)

``probing`` sends ``server/discover`` (era='auto' only, verdict not cached); ``initializing``
sends the legacy ``initialize``; the modern era needs neither and goes straight to ``ready``.
Any failure (exit, spawn error, handshake error or timeout, broken pipe) answers the work it
affects, stops the process if it still runs (close stdin, grace, SIGTERM to the group, grace,
SIGKILL, grace) and, once it is gone, arms the retry timer with doubling, jittered backoff that
resets only when a slot reaches ``ready`` (SPEC §7). Permanent failures (missing executable,
unsupported protocol version) arm nothing.

Caller work. ``CallTool`` and ``ListTools`` are "work" identified by the caller's ticket. Work
is admitted only while some slot is ready (otherwise the caller is answered at once:
``ConnectFailed`` after a failed connect, else ``NotReady``), goes to a ready slot with room,
else waits FIFO in a queue of ``queue_limit``, else is refused with ``Busy``. Every admitted
piece of work carries a deadline from admission; on expiry the caller gets ``RequestTimeout``
and a sent request is cancelled with ``notifications/cancelled``. Progress pushes a call's
deadline out, never past ``max_call_timeout`` from admission. Hence, after any sequence of
events, ``in_flight + queued <= cap * slots + queue_limit``, and every ticket is answered
exactly once (or not at all after ``CancelCall``).

Everything that changes state is in this file; the smaller pure pieces it composes (framing,
JSON-RPC shapes, eras, models, jitter, the stderr ring) hold no session state of their own.
"""

from __future__ import annotations

import heapq
import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

from . import _jsonrpc as rpc
from ._actions import (
    AbortHttp,
    Action,
    CloseStdin,
    ElicitationComplete,
    HandleServerRequest,
    Log,
    ProgressUpdate,
    Reply,
    SettleReservation,
    SignalProcess,
    Spawn,
    StartHttp,
    WriteStdin,
)
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
    SessionRejected,
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
from ._framing import LineDecoder, Message, NotJson, Oversized, encode_message
from ._http import (
    content_type,
    find_header,
    http_error,
    parse_json_body,
    parse_retry_after,
    request_headers,
)
from ._jitter import Jitter, backoff_delay
from ._models import CallToolResult, Status, Tool
from ._spec import Spec
from ._sse import SseDecoder, SseFrame, SseTooLarge
from ._stdio import INHERITED_ENV, StderrRing

__all__ = ["HANDLED_REQUESTS", "SessionMachine"]

# 2026-07-28 basic/patterns/mrtr: the server may answer input_required again and again; a
# client that gives up needs no error answer. We give up after this many rounds.
MAX_INPUT_ROUNDS = 8

# URL elicitations remembered until the server reports them complete; the oldest is forgotten
# beyond this (a server that never completes them must not grow our memory).
MAX_ELICITATIONS = 64
_ELICITATION_MODES = frozenset({"form", "url"})

# tools/list pagination guard: a server that pages forever must not hold a caller forever.
MAX_TOOL_PAGES = 100

# Internal requests a slot can have in flight next to caller work.
_DISCOVER = "server/discover"
_INITIALIZE = "initialize"

# Server requests an application may answer, by the capability that announces the handler.
HANDLED_REQUESTS: Mapping[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}

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

# Stages of stopping one process (SPEC §8): close stdin, then SIGTERM, then SIGKILL, each
# followed by ``shutdown_grace`` seconds of waiting for ``ProcessExited``.
_STOP_NONE, _STOP_STDIN, _STOP_TERM, _STOP_KILL = 0, 1, 2, 3


@dataclass(slots=True, eq=False)
class _Work:
    """One caller's tools/call or tools/list, from admission to its single reply."""

    ticket: int
    method: str
    admitted_at: float
    timeout: float
    deadline: float
    name: str = ""
    arguments: Mapping[str, Any] | None = None
    progress: bool = False
    reserved: bool = False  # holds a reservation not yet settled (SPEC §10)
    meta: Mapping[str, Any] | None = None  # the caller's own _meta entries (trace context)
    # 2026-07-28 multi round-trip requests: what the next round sends back. The containers
    # here and below are made when first needed: one _Work is built per call.
    rounds: int = 0
    awaiting: set[str] | None = None  # input keys the handlers still owe
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None
    slot: int | None = None  # set while a request for it is in flight
    request_id: int | None = None
    # tools/list paging
    tools: list[Tool] | None = None
    cursors: set[str] | None = None
    generation: int = 0


@dataclass(slots=True, eq=False)
class _Stream:
    """One HTTP request of a slot and what its answer has shown so far."""

    kind: str  # "post" | "get" | "delete" | "sse" (the HTTP+SSE transport's one GET stream)
    request_id: int | None  # the JSON-RPC request this POST (or resuming GET) answers
    carried_session: bool
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    body: bytearray | None = None  # a JSON (or error) answer, collected whole, capped
    sse: SseDecoder | None = None
    resumes: int = 0


@dataclass(slots=True, eq=False)
class _Resume:
    """A dropped SSE answer to resume with GET + Last-Event-ID once ``at`` has come."""

    at: float
    request_id: int
    last_event_id: str
    attempt: int


@dataclass(slots=True, eq=False)
class _Slot:
    """One connection: a server process and the requests in flight on it."""

    index: int
    decoder: LineDecoder
    generation: int = 0  # the Spawn whose process events count; 0: none (given up on)
    stderr: StderrRing = field(default_factory=StderrRing)
    phase: str = "idle"  # idle | spawning | probing | initializing | ready
    alive: bool = False  # a process was spawned and has not exited
    requests: dict[int, _Work | str] = field(default_factory=dict)
    handshake: Handshake | None = None
    attempt: int = 0
    retry_at: float | None = None
    connect_deadline: float | None = None
    probe_deadline: float | None = None
    stop_stage: int = _STOP_NONE
    stop_deadline: float | None = None
    broken_pipe_deadline: float | None = None  # a write failed: fail then unless it exited
    # Why the process is being stopped; the retry is armed when it is gone.
    failure: McpError | None = None
    failure_permanent: bool = False
    retry_after: float | None = None  # a server's Retry-After, honoured by the next retry
    reinitializing: bool = False  # HTTP: a new session replaces one the server forgot
    confirming: int | None = None  # HTTP: the initialized POST the session waits for
    # HTTP only: the session the server assigned, and the streams open for this slot.
    session_id: str | None = None
    # HTTP+SSE (2024-11-05): the endpoint the server's `endpoint` event named, once known.
    sse: bool = False
    sse_endpoint: str | None = None
    streams: dict[int, _Stream] = field(default_factory=dict)
    resumes: list[_Resume] = field(default_factory=list)

    busy: int = 0  # caller work in flight here (kept as a count: admission reads it per call)


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
        if not modes or modes - _ELICITATION_MODES:
            raise ValueError(
                f"elicitation_modes must be 'form', 'url' or both, got {sorted(modes)}"
            )
        if modes != {"form"} and "elicitation" not in self.handlers:
            raise ValueError("elicitation_modes needs an elicitation handler")
        self.elicitation_modes = modes
        self._capabilities = client_capabilities(self.handlers, modes)
        # URL elicitations we were asked for and not yet told are complete (2025-11-25: the
        # client "MUST ignore notifications referencing unknown or already-completed IDs").
        self._elicitations: dict[str, None] = {}
        self._server_requests: dict[int, tuple[_Slot, int | str]] = {}
        self._input_asks: dict[int, tuple[int, str]] = {}  # handle -> (ticket, input key)
        self._next_handle = 0
        self.spec = spec
        self._http = spec.transport == "http"
        self._era_cache: MutableMapping[str, str] = {} if era_cache is None else era_cache
        # SPEC §5: the verdict is cached per server: its command line, or its origin + path.
        self._era_key = json.dumps(
            ["http", (spec.url or "").split("?")[0].split("#")[0]]
            if self._http
            else [spec.command, *spec.args]
        )
        # Read once: another client of the process writing the shared cache mid-session must
        # not change what this machine does (replay would then differ from the session).
        # ``known_era`` given (a replay) wins over the cache.
        self._known_era = known_era if known_era is not None else self._era_cache.get(self._era_key)
        self.known_era: str | None = self._known_era  # the verdict this machine started from
        pooled = spec.concurrency == "pooled"
        self._stream_slots: dict[int, _Slot] = {}  # HTTP stream -> its slot
        self._next_stream = 0
        self._slots = [
            _Slot(index=i, decoder=LineDecoder(spec.max_message_bytes))
            for i in range(spec.pool_size if pooled else 1)
        ]
        self._out: list[Action] = []
        self._queue: deque[_Work] = deque()
        self._deadlines: list[tuple[float, int]] = []  # a heap of (deadline, ticket)
        self._works: dict[int, _Work] = {}  # ticket -> work, queued or in flight
        self._waiters: dict[int, float] = {}  # await_ready ticket -> deadline
        # The waiters (a subset of _waiters) that a failed attempt answers (fail_fast).
        self._fail_fast_waiters: set[int] = set()
        self._close_tickets: list[int] = []
        self._started = False
        self._closing = False
        self._generations = 0  # Spawn actions so far: the last one's generation
        self._next_id = 0
        self._jitter = Jitter(spec.jitter_seed)
        self._tools: list[Tool] | None = None
        self._tools_generation = 0
        self._connect_error: ConnectFailed | None = None  # last connect failed; cleared on ready
        self._permanent: ConnectFailed | None = None
        self._last_error: McpError | None = None
        self._logger = f"mcp_client.{spec.name}"
        self._server_logger = f"mcp.server.{spec.name}"
        self._handlers: dict[type[Event], Callable[[Any], None]] = {
            Connect: self._on_connect,
            AwaitReady: self._on_await_ready,
            ListTools: self._on_list_tools,
            CallTool: self._on_call_tool,
            CancelCall: self._on_cancel,
            Close: self._on_close,
            ProcessSpawned: self._on_spawned,
            SpawnFailed: self._on_spawn_failed,
            StdoutReceived: self._on_stdout,
            StdoutClosed: self._on_stdout_closed,
            StderrReceived: self._on_stderr,
            ProcessExited: self._on_exited,
            WriteFailed: self._on_write_failed,
            HttpResponseStarted: self._on_http_head,
            HttpBodyReceived: self._on_http_body,
            HttpResponseEnded: self._on_http_end,
            HttpFailed: self._on_http_failed,
            ServerRequestAnswered: self._on_server_request_answered,
            TimerFired: self._on_timer,
        }

    # --- public surface ----------------------------------------------------------------

    def handle(self, event: Event) -> list[Action]:
        """Consume one event; return the actions to perform, in order."""
        self._now = event.now
        self._handlers[type(event)](event)
        out, self._out = self._out, []
        return out

    def next_deadline(self) -> float | None:
        """The earliest time at which ``TimerFired`` has something to do, or ``None``."""
        # Drivers ask after every event, so this builds nothing: one pass, no list.
        best = self._earliest_work_deadline()
        if self._waiters:
            earliest = min(self._waiters.values())
            best = earliest if best is None or earliest < best else best
        for slot in self._slots:
            for t in (
                slot.retry_at,
                slot.probe_deadline,
                slot.stop_deadline,
                slot.broken_pipe_deadline,
                slot.connect_deadline if slot.phase in ("probing", "initializing") else None,
            ):
                if t is not None and (best is None or t < best):
                    best = t
            for resume in slot.resumes:
                if best is None or resume.at < best:
                    best = resume.at
        return best

    @property
    def state(self) -> str:
        """'starting' | 'initializing' | 'ready' | 'closed' (SPEC §3)."""
        if self._closing or not self._started:
            return "closed"
        phases = {slot.phase for slot in self._slots}
        if "ready" in phases:
            return "ready"
        if phases & {"probing", "initializing"}:
            return "initializing"
        if "spawning" in phases:
            return "starting"
        return "closed"

    @property
    def concurrency(self) -> str:
        """The in-flight policy in force: the spec's, else the transport's and era's default
        (SPEC §6: stdio and modern HTTP stateless, legacy HTTP serialized)."""
        if not self._http:  # stdio: the era changes nothing (admission asks on every call)
            return self.spec.default_concurrency(None)
        ready = next((s.handshake for s in self._slots if s.handshake is not None), None)
        return self.spec.default_concurrency(ready.era if ready else None)

    @property
    def in_flight_cap(self) -> int:
        """Requests one slot may have in flight at once."""
        return self.spec.pool_size if self.concurrency == "stateless" else 1

    @property
    def in_flight(self) -> int:
        return sum(slot.busy for slot in self._slots)

    @property
    def queued(self) -> int:
        return len(self._queue)

    def status(self, now: float) -> Status:
        """A snapshot for callers; never changes state."""
        ready = next((s.handshake for s in self._slots if s.phase == "ready"), None)
        retries = [s.retry_at for s in self._slots if s.retry_at is not None]
        return Status(
            name=self.spec.name,
            state=self.state,
            era=ready.era if ready else None,
            protocol_version=ready.protocol_version if ready else None,
            transport="sse" if any(s.sse for s in self._slots) else self.spec.transport,
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

    def _on_connect(self, event: Connect) -> None:
        if self._started and not (self._closing and self._all_gone()):
            # Already running, or still stopping: a restart waits for the stop to finish.
            self._log("DEBUG", "Connect while started or still stopping: ignored")
            return
        self._started, self._closing = True, False
        self._permanent = self._connect_error = None
        for slot in self._slots:
            self._spawn(slot)

    def _on_await_ready(self, event: AwaitReady) -> None:
        # The caller's choice for this wait, else the spec's (a group waits fail-fast on
        # clients whose own await_ready waits through retries).
        fail_fast = self.spec.fail_fast if event.fail_fast is None else event.fail_fast
        if self.state == "ready":
            self._reply(event.ticket, self.status(self._now))
        elif self._permanent is not None:
            self._reply(event.ticket, error=self._permanent)
        elif fail_fast and self._connect_error and self.state == "closed":
            # SPEC §7 fail_fast: a caller arriving while closed after a failure is answered
            # at once; without fail_fast, await_ready waits through the retries.
            self._reply(event.ticket, error=self._connect_error)
        elif self._closing or not self._started or event.timeout == 0:
            self._reply(event.ticket, error=NotReady(self.state))
        else:
            self._waiters[event.ticket] = self._now + event.timeout
            if fail_fast:
                self._fail_fast_waiters.add(event.ticket)

    def _on_list_tools(self, event: ListTools) -> None:
        if self._tools is not None and not event.refresh and self.state == "ready":
            self._reply(event.ticket, list(self._tools))
            return
        self._admit(
            _Work(
                ticket=event.ticket,
                method="tools/list",
                admitted_at=self._now,
                timeout=event.timeout or self.spec.call_timeout,
                deadline=self._now + (event.timeout or self.spec.call_timeout),
                generation=self._tools_generation,
                tools=[],
                cursors=set(),
            )
        )

    def _on_call_tool(self, event: CallTool) -> None:
        timeout = event.timeout or self.spec.call_timeout
        facts = event.reservation
        work = _Work(
            ticket=event.ticket,
            method="tools/call",
            admitted_at=self._now,
            timeout=timeout,
            deadline=self._now + timeout,
            name=event.name,
            arguments=event.arguments,
            progress=event.progress,
            meta=event.meta,
            # Every unused reservation handed to a call is settled exactly once by the client.
            reserved=facts is not None and facts.get("fresh") is True,
        )
        refusal = self._unmetered(event.name, facts)
        if refusal is not None:
            self._settle(work, commit=False)
            self._reply(event.ticket, error=refusal)
        elif event.name not in self.spec.prices and work.reserved:
            self._settle(work, commit=False)  # a free tool needs no money: give it back
            self._admit(work)
        else:
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

    def _settle(self, work: _Work, *, commit: bool) -> None:
        if work.reserved:
            work.reserved = False
            self._out.append(SettleReservation(ticket=work.ticket, commit=commit))

    def _on_cancel(self, event: CancelCall) -> None:
        self._waiters.pop(event.ticket, None)
        self._fail_fast_waiters.discard(event.ticket)
        work = self._works.pop(event.ticket, None)
        if work is not None:
            self._withdraw(work, "the caller cancelled the request")
            self._pump()

    def _on_close(self, event: Close) -> None:
        if not self._started or (self._closing and self._all_gone()):
            self._reply(event.ticket, None)
            return
        self._close_tickets.append(event.ticket)
        if self._closing:
            return
        self._closing = True
        stopped = NotReady("closed", "the client was stopped before this request finished")
        for work in self._drain_works():
            self._reply(work.ticket, error=stopped)
        self._answer_waiters(stopped)
        for slot in self._slots:
            slot.retry_at = slot.probe_deadline = slot.connect_deadline = None
            slot.requests.clear()  # a late handshake answer must not start a new step
            slot.resumes.clear()
            if slot.phase != "spawning":
                slot.phase = "idle"  # no handshake step may write to a process being stopped
            if self._http:
                self._close_http(slot)
            elif slot.alive:
                self._begin_stop(slot)
        self._check_closed()

    # --- process events ------------------------------------------------------------------

    def _process_slot(
        self,
        event: ProcessSpawned
        | SpawnFailed
        | StdoutReceived
        | StdoutClosed
        | StderrReceived
        | ProcessExited
        | WriteFailed,
    ) -> _Slot | None:
        """The slot of a process event, or None when the event is from a process the slot
        no longer runs (given up on after SIGKILL, or replaced): such events are dropped."""
        slot = self._slots[event.slot]
        return slot if event.generation == slot.generation else None

    def _on_spawned(self, event: ProcessSpawned) -> None:
        slot = self._process_slot(event)
        if slot is None:
            return
        slot.alive = True
        if self._closing:
            slot.phase = "idle"
            self._begin_stop(slot)
            return
        self._open(slot)

    def _learn_era(self, era: str) -> None:
        self._known_era = self._era_cache[self._era_key] = era

    def _open(self, slot: _Slot) -> None:
        """The transport is up (process running, or an HTTP endpoint to talk to): start the
        handshake the era needs."""
        era = self.spec.era if self.spec.era != "auto" else self._known_era
        if era == "sse" and self._http:
            self._open_sse(slot)
        elif era == "modern":
            self._ready(slot, Handshake("modern", MODERN_VERSION, None, {}))
        elif era == "legacy":
            self._send_initialize(slot)
        else:
            # 2026-07-28 transports/stdio §Backward Compatibility: a dual-era client "SHOULD
            # probe with server/discover" before any other request; no answer within a short
            # timeout means a legacy server. Over HTTP the answer's status and body decide
            # (streamable-http §Backward Compatibility).
            slot.phase = "probing"
            # Over HTTP an answer always comes (its status decides), so the probe may take half
            # the connect budget; on stdio a silent legacy server is the reason for the timeout.
            probe_wait = (
                max(self.spec.probe_timeout, self.spec.init_timeout / 2)
                if self._http
                else self.spec.probe_timeout
            )
            slot.probe_deadline = self._now + probe_wait
            self._send_request(slot, _DISCOVER, discover_params(self._capabilities), _DISCOVER)

    def _on_spawn_failed(self, event: SpawnFailed) -> None:
        slot = self._process_slot(event)
        if slot is None:
            return
        slot.phase = "idle"
        if self._closing:
            self._check_closed()
            return
        self._fail_slot(
            slot, ConnectFailed(event.reason, permanent=event.missing), permanent=event.missing
        )

    def _on_stdout(self, event: StdoutReceived) -> None:
        slot = self._process_slot(event)
        if slot is None:
            return
        for frame in slot.decoder.feed(event.data):
            if isinstance(frame, Message):
                # 2025-03-26 basic/index: implementations "MUST support receiving" batches.
                items = frame.payload if isinstance(frame.payload, list) else [frame.payload]
                for item in items:
                    self._on_message(slot, rpc.classify(item))
            elif isinstance(frame, NotJson):
                # Servers "MUST NOT write non-MCP output to stdout", yet many print banners.
                self._log("WARNING", f"skipped a non-JSON line on stdout: {frame.excerpt}")
            else:
                self._on_oversized(slot, frame)

    def _on_stdout_closed(self, event: StdoutClosed) -> None:
        if self._process_slot(event) is not None:
            self._log("DEBUG", f"slot {event.slot}: stdout closed")

    def _on_stderr(self, event: StderrReceived) -> None:
        slot = self._process_slot(event)
        if slot is not None:
            slot.stderr.feed(event.data)

    def _on_exited(self, event: ProcessExited) -> None:
        slot = self._process_slot(event)
        if slot is not None:
            self._exited(slot, event.returncode)

    def _exited(self, slot: _Slot, returncode: int | None) -> None:
        slot.alive = False
        slot.broken_pipe_deadline = None
        slot.stop_stage, slot.stop_deadline = _STOP_NONE, None
        if self._closing:
            slot.phase = "idle"
            self._check_closed()
        elif slot.failure is not None:
            self._process_gone(slot)
        elif slot.phase == "ready":
            self._fail_slot(slot, ServerExited(returncode, slot.stderr.tail()))
        else:
            detail = f"the server exited with code {returncode} during the handshake"
            tail = slot.stderr.tail()
            self._fail_slot(
                slot, ConnectFailed(f"{detail}; last stderr:\n{tail}" if tail else detail)
            )

    def _on_write_failed(self, event: WriteFailed) -> None:
        # A broken pipe is nearly always the server exiting: its exit status and stderr say
        # more than "broken pipe", so the failure waits up to shutdown_grace for
        # ProcessExited; a server that closed its stdin and lives on is failed then.
        slot = self._process_slot(event)
        if (
            slot is not None
            and slot.alive
            and slot.failure is None
            and not self._closing
            and slot.broken_pipe_deadline is None
        ):
            slot.broken_pipe_deadline = self._now + self.spec.shutdown_grace
            self._log("DEBUG", f"slot {slot.index}: {event.reason}; waiting for the exit")

    # --- time ------------------------------------------------------------------------------

    def _earliest_work_deadline(self) -> float | None:
        """The top of the deadline heap, after dropping entries that no longer hold (work
        answered, or its deadline pushed out by progress): each entry is dropped once."""
        heap = self._deadlines
        while heap:
            deadline, ticket = heap[0]
            work = self._works.get(ticket)
            if work is not None and work.deadline == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    def _arm(self, work: _Work) -> None:
        heapq.heappush(self._deadlines, (work.deadline, work.ticket))

    def _on_timer(self, event: TimerFired) -> None:
        now = self._now
        while (deadline := self._earliest_work_deadline()) is not None and deadline <= now:
            work = self._works.pop(heapq.heappop(self._deadlines)[1])
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
        for slot in self._slots:
            self._slot_timers(slot, now)
        self._pump()

    def _slot_timers(self, slot: _Slot, now: float) -> None:
        if slot.stop_deadline is not None and slot.stop_deadline <= now:
            self._escalate_stop(slot)
        if slot.broken_pipe_deadline is not None and slot.broken_pipe_deadline <= now:
            slot.broken_pipe_deadline = None
            if slot.alive and slot.failure is None and not self._closing:
                self._fail_slot(slot, ServerExited(None, slot.stderr.tail()))
        if slot.probe_deadline is not None and slot.probe_deadline <= now:
            slot.probe_deadline = None
            self._forget_internal(slot, _DISCOVER)
            self._log("DEBUG", "no answer to server/discover: treating the server as legacy")
            self._send_initialize(slot)
        if (
            slot.phase in ("probing", "initializing")
            and slot.connect_deadline is not None
            and slot.connect_deadline <= now
        ):
            self._fail_slot(
                slot,
                ConnectFailed(
                    f"the server did not complete the handshake within "
                    f"init_timeout={self.spec.init_timeout:g} s"
                ),
            )
        if slot.retry_at is not None and slot.retry_at <= now:
            self._spawn(slot)
        for resume in [r for r in slot.resumes if r.at <= now]:
            slot.resumes.remove(resume)
            if resume.request_id in slot.requests:
                self._resume(slot, resume)

    # --- messages from the server --------------------------------------------------------

    def _on_message(self, slot: _Slot, message: rpc.Incoming) -> None:
        if isinstance(message, rpc.Response):
            self._on_response(slot, message)
        elif isinstance(message, rpc.Request):
            self._on_server_request(slot, message)
        elif isinstance(message, rpc.Notification):
            self._on_notification(slot, message)
        else:
            self._log("WARNING", f"skipped an invalid message from the server: {message.reason}")

    def _on_server_request(self, slot: _Slot, request: rpc.Request) -> None:
        if request.method == "ping":
            # Legacy basic/utilities/ping: the receiver "MUST respond promptly with an empty
            # result".
            self._write(slot, rpc.result_response(request.id, {}))
        elif (
            request.method == "elicitation/create"
            and (mode := _elicitation_mode(request.params)) not in self.elicitation_modes
        ):
            # 2025-11-25 client/elicitation: a mode the client did not declare "MUST" get
            # -32602 (a request without `mode` is form mode).
            self._write(
                slot,
                rpc.error_response(
                    request.id,
                    rpc.INVALID_PARAMS,
                    f"this client does not take {str(mode)[:20]!r} elicitation; it declared "
                    f"{', '.join(sorted(self.elicitation_modes))}",
                ),
            )
        elif HANDLED_REQUESTS.get(request.method) in self.handlers:
            elicitation_id = request.params.get("elicitationId")
            if request.method == "elicitation/create" and isinstance(elicitation_id, str):
                self._expect_completion(elicitation_id)  # a URL-mode request
            self._next_handle += 1
            self._server_requests[self._next_handle] = (slot, request.id)
            self._out.append(
                HandleServerRequest(
                    handle=self._next_handle, method=request.method, params=request.params
                )
            )
        else:
            # No roots/sampling/elicitation handler is declared, so: method not found
            # (the roots page of every legacy version names -32601 for this case).
            self._write(
                slot,
                rpc.error_response(
                    request.id,
                    rpc.METHOD_NOT_FOUND,
                    f"Method not found: this client has no handler for {request.method}",
                ),
            )

    def _on_server_request_answered(self, event: ServerRequestAnswered) -> None:
        asked_by_result = self._input_asks.pop(event.handle, None)
        if asked_by_result is not None:
            self._on_input_answered(*asked_by_result, event)
            return
        found = self._server_requests.pop(event.handle, None)
        if found is None:
            return
        slot, request_id = found
        if slot.phase != "ready" or self._closing:
            # The connection that asked is gone; its server no longer waits for this answer.
            self._log("DEBUG", f"dropped the answer to server request {request_id!r}")
        elif event.result is not None:
            self._write(slot, rpc.result_response(request_id, event.result))
        else:
            # The application's handler failed: the error is on our side of the request.
            self._write(
                slot,
                rpc.error_response(
                    request_id, rpc.INTERNAL_ERROR, f"the client's handler failed: {event.failed}"
                ),
            )

    def _on_notification(self, slot: _Slot, note: rpc.Notification) -> None:
        params = note.params
        if note.method == "notifications/progress":
            self._on_progress(slot, params)
        elif note.method == "notifications/tools/list_changed":
            self._tools = None
            self._tools_generation += 1
        elif note.method == "notifications/cancelled":
            # Legacy basic/utilities/cancellation: the server gave up a request it sent us;
            # its answer "SHOULD" not be sent. The handler still runs; its answer is dropped.
            for handle, (asker, request_id) in list(self._server_requests.items()):
                if asker is slot and request_id == params.get("requestId"):
                    del self._server_requests[handle]
        elif note.method == "notifications/elicitation/complete":
            # 2025-11-25 client/elicitation: only an elicitation we were asked for and not yet
            # told of reaches the application; the client "MUST ignore" any other.
            elicitation_id = params.get("elicitationId")
            if isinstance(elicitation_id, str) and elicitation_id in self._elicitations:
                del self._elicitations[elicitation_id]
                self._out.append(ElicitationComplete(elicitation_id=elicitation_id))
            else:
                self._log("DEBUG", "ignored a completion of an unknown URL elicitation")
        elif note.method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), "INFO")
            data = params.get("data")
            text = data if isinstance(data, str) else json.dumps(data)
            self._out.append(Log(level=level, logger=self._server_logger, message=text[:4000]))

    def _on_progress(self, slot: _Slot, params: Mapping[str, Any]) -> None:
        token, progress = params.get("progressToken"), params.get("progress")
        work = slot.requests.get(token) if isinstance(token, int) else None
        if not isinstance(work, _Work) or not isinstance(progress, int | float):
            return  # progress for a finished or unknown request: ignored, as the spec allows
        # 2025-03-26 basic/lifecycle §Timeouts: progress MAY reset the timeout clock, but
        # a maximum timeout SHOULD always be enforced.
        work.deadline = min(self._now + work.timeout, work.admitted_at + self.spec.max_call_timeout)
        self._arm(work)
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

    def _on_response(self, slot: _Slot, response: rpc.Response) -> None:
        owner = slot.requests.pop(response.id, None) if isinstance(response.id, int) else None
        if owner is None:
            # A late answer to a request that timed out or was cancelled: the cancellation
            # page says the sender "SHOULD ignore" it.
            self._log("DEBUG", f"ignored an answer to unknown request id {response.id!r}")
        elif owner == _DISCOVER:
            self._on_discover_answer(slot, response)
        elif owner == _INITIALIZE:
            self._on_initialize_answer(slot, response)
        else:
            assert isinstance(owner, _Work)
            self._on_work_answer(slot, owner, response)

    def _on_discover_answer(self, slot: _Slot, response: rpc.Response) -> None:
        slot.probe_deadline = None
        handshake = parse_discover_result(response.result) if response.result else None
        if handshake is None and _names_our_modern_version(response.error):
            handshake = Handshake("modern", MODERN_VERSION, None, {})
        if handshake is None:
            # "Fallback MUST NOT be keyed to one error code": anything else means legacy.
            self._send_initialize(slot)
        else:
            self._learn_era("modern")
            self._ready(slot, handshake)

    def _on_initialize_answer(self, slot: _Slot, response: rpc.Response) -> None:
        if _names_our_modern_version(response.error) and self.spec.era == "auto":
            # A modern-only server refusing initialize (the probe got no usable answer in
            # time): "a recognized modern JSON-RPC error ... do not fall back" (2026-07-28).
            self._learn_era("modern")
            self._ready(slot, Handshake("modern", MODERN_VERSION, None, {}))
            return
        if response.error is not None:
            failure = InitializationFailed(_rpc_error(response.error).message)
            self._fail_slot(slot, ConnectFailed(failure.message))
            return
        assert response.result is not None
        try:
            handshake = parse_initialize_result(response.result)
        except UnsupportedVersion as exc:
            self._fail_slot(slot, ConnectFailed(exc.message, permanent=True), permanent=True)
            return
        except InvalidResponse as exc:
            self._fail_slot(slot, ConnectFailed(exc.message))
            return
        self._learn_era("sse" if slot.sse else "legacy")
        slot.handshake = handshake  # so the notification carries MCP-Protocol-Version
        self._write(slot, rpc.notification("notifications/initialized"))
        if self._http:
            # Legacy lifecycle: the client "MUST send an initialized notification" before
            # normal operations. Over HTTP each message is its own POST, on a connection of
            # its own when the initialize answer still streams: a call made once ready could
            # overtake it. So the session is ready once the server has answered that POST.
            slot.confirming = self._next_stream
            return
        self._ready(slot, handshake)

    def _on_confirmed(self, slot: _Slot) -> None:
        """HTTP: the server answered (or the request for) ``notifications/initialized``."""
        slot.confirming = None
        assert slot.handshake is not None
        self._ready(slot, slot.handshake)
        if slot.session_id is not None:
            self._listen(slot)

    def _on_work_answer(self, slot: _Slot, work: _Work, response: rpc.Response) -> None:
        if response.error is not None:
            error = _rpc_error(response.error)
            if isinstance(error, UrlElicitationRequired):
                for elicitation in error.elicitations:
                    self._expect_completion(elicitation["elicitationId"])
            self._finish(work, error=error)
            return
        result = response.result
        assert result is not None
        result_type = result.get("resultType", "complete")
        if result_type == "input_required" and work.method == "tools/call":
            self._on_input_required(slot, work, result)
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
            try:
                value = CallToolResult.from_wire(result)
            except ValueError as exc:
                self._finish(work, error=InvalidResponse(work.method, str(exc)))
            else:
                self._finish(work, value)
        else:
            self._on_tools_page(slot, work, result)

    def _on_input_required(self, slot: _Slot, work: _Work, result: Mapping[str, Any]) -> None:
        """2026-07-28 basic/patterns/mrtr: fulfil ``inputRequests`` with the application's
        handlers, then retry as a new request with ``inputResponses`` and ``requestState``
        echoed byte for byte (never one the server did not send)."""
        requests = result.get("inputRequests") or {}
        state = result.get("requestState")
        work.rounds += 1
        problem = None
        if work.rounds > MAX_INPUT_ROUNDS:
            problem = f"the server asked for input {MAX_INPUT_ROUNDS} times; gave up"
        elif not isinstance(requests, dict) or not (state is None or isinstance(state, str)):
            problem = "inputRequests or requestState has the wrong shape"
        else:
            for ask in requests.values():
                method = ask.get("method") if isinstance(ask, dict) else None
                params = ask.get("params") if isinstance(ask, dict) else None
                mode = _elicitation_mode(params if isinstance(params, dict) else {})
                if HANDLED_REQUESTS.get(str(method)) not in self.handlers:
                    problem = f"the server asked for {str(method)[:60]!r}, which was not declared"
                elif method == "elicitation/create" and mode not in self.elicitation_modes:
                    # 2026-07-28: the server "MUST NOT" ask for what the request did not
                    # declare in its clientCapabilities.
                    problem = f"the server asked for {str(mode)[:20]!r} elicitation, not declared"
        if problem is not None:
            self._finish(work, error=InvalidResponse(work.method, problem))
            return
        work.request_state = state
        work.input_responses = {}
        work.awaiting = set(requests)
        for key, ask in requests.items():
            self._next_handle += 1
            self._input_asks[self._next_handle] = (work.ticket, key)
            params = ask.get("params")
            self._out.append(
                HandleServerRequest(
                    handle=self._next_handle,
                    method=ask["method"],
                    params=params if isinstance(params, dict) else {},
                )
            )
        if not work.awaiting:
            self._retry_with_inputs(slot, work)  # "MAY retry immediately" with no requests

    def _on_input_answered(self, ticket: int, key: str, event: ServerRequestAnswered) -> None:
        work = self._works.get(ticket)
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
            self._retry_with_inputs(self._slots[work.slot], work)

    def _retry_with_inputs(self, slot: _Slot, work: _Work) -> None:
        # A slot that fails answers the work waiting between rounds, so this one is ready.
        assert slot.phase == "ready"
        extra: dict[str, Any] = {"inputResponses": work.input_responses}
        if work.request_state is not None:
            extra["requestState"] = work.request_state
        self._send_work(slot, work, extra)

    def _on_tools_page(self, slot: _Slot, work: _Work, result: Mapping[str, Any]) -> None:
        raw = result.get("tools")
        assert work.tools is not None and work.cursors is not None  # a tools/list work
        try:
            if not isinstance(raw, list):
                raise ValueError("'tools' is missing or not a list")
            work.tools.extend(Tool.from_wire(item) for item in raw)
        except ValueError as exc:
            self._finish(work, error=InvalidResponse("tools/list", str(exc)))
            return
        cursor = result.get("nextCursor")
        # 2026-07-28 pagination: only an absent or null nextCursor ends the list.
        if isinstance(cursor, str) and cursor not in work.cursors:
            if len(work.cursors) + 1 < MAX_TOOL_PAGES:
                work.cursors.add(cursor)
                self._send_work(slot, work, {"cursor": cursor})
                return
            self._log("WARNING", f"tools/list stopped after {MAX_TOOL_PAGES} pages")
        elif isinstance(cursor, str):
            self._log("WARNING", "tools/list repeated a cursor; stopped paging")
        if work.generation == self._tools_generation:
            self._tools = list(work.tools)
        self._finish(work, list(work.tools))

    def _on_oversized(self, slot: _Slot, frame: Oversized) -> None:
        error = MessageTooLarge(frame.size, self.spec.max_message_bytes)
        owner = slot.requests.get(frame.request_id) if isinstance(frame.request_id, int) else None
        if isinstance(owner, _Work):
            del slot.requests[frame.request_id]  # type: ignore[arg-type]
            self._finish(owner, error=error)
        elif owner is not None:
            self._fail_slot(slot, ConnectFailed(error.message))
        else:
            self._log("WARNING", f"discarded a message for no known request: {error.message}")

    # --- admission -------------------------------------------------------------------------

    def _refusal(self) -> McpError | None:
        """Why new work cannot be admitted now, or ``None`` when it can."""
        if self._closing or not self._started:
            return NotReady("closed")
        if self._permanent is not None:
            return self._permanent
        for slot in self._slots:  # "ready" or re-established: work waits for its session
            if slot.phase == "ready" or slot.reinitializing:
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

    def _admit(self, work: _Work) -> None:
        refusal = self._refusal()
        if refusal is not None:
            self._settle(work, commit=False)
            self._reply(work.ticket, error=refusal)
            return
        slot = self._free_slot()
        if slot is not None:
            self._works[work.ticket] = work
            self._arm(work)
            self._send_work(slot, work, None)
        elif len(self._queue) < self.spec.queue_limit:
            self._works[work.ticket] = work
            self._arm(work)
            self._queue.append(work)
        else:
            self._settle(work, commit=False)
            self._reply(
                work.ticket,
                error=Busy(
                    f"{self.in_flight} requests are in flight and {len(self._queue)} queued, "
                    f"the most this spec allows; nothing was sent (retry later, or raise "
                    f"pool_size/queue_limit)"
                ),
            )

    def _free_slot(self) -> _Slot | None:
        cap = 0
        for slot in self._slots:
            if slot.phase == "ready":
                cap = cap or self.in_flight_cap
                if slot.busy < cap:
                    return slot
        return None

    def _pump(self) -> None:
        while self._queue:
            slot = self._free_slot()
            if slot is None:
                return
            self._send_work(slot, self._queue.popleft(), None)

    def _send_work(self, slot: _Slot, work: _Work, cursor: Mapping[str, Any] | None) -> None:
        params: dict[str, Any] = {}
        meta: dict[str, Any] = dict(work.meta) if work.meta else {}
        if work.method == "tools/call":
            params["name"] = work.name
            if work.arguments is not None:
                params["arguments"] = dict(work.arguments)
        if cursor is not None:
            params.update(cursor)  # the next page's cursor, or a retry's inputResponses
        assert slot.handshake is not None
        if slot.handshake.era == "modern":
            meta.update(modern_meta(self._capabilities))
        if work.progress:
            # The token is the request id: unique among active requests, as progress requires.
            meta["progressToken"] = self._next_id + 1
        if work.slot is None:
            slot.busy += 1
            self._settle(work, commit=True)  # the request goes out now: the money is spent
        work.slot, work.request_id = (
            slot.index,
            self._send_request(slot, work.method, params, work, meta),
        )

    def _withdraw(self, work: _Work, reason: str) -> None:
        """Take work out of the queue or off its slot; cancel it on the wire if it was sent."""
        if work.slot is None:
            self._queue.remove(work)
            self._release(work)
            return
        slot = self._slots[work.slot]
        assert work.request_id is not None
        if slot.requests.pop(work.request_id, None) is None:
            # Waiting for input handlers between two rounds: nothing is on the wire.
            self._release(work)
            return
        # Work that is still ours and sent is always on a live, ready slot: a failing slot
        # answers its work first. Legacy basic/utilities/cancellation; 2026-07-28 stdio:
        # cancellation "MUST be" notifications/cancelled, only for a request actually issued.
        stream = self._stream_of(slot, work.request_id)
        if stream is not None:
            # HTTP: stop reading the answer. 2026-07-28: closing the stream IS the cancel.
            self._abort(stream)
        self._release(work)
        if self._http and self._modern(slot):
            return
        self._write(
            slot,
            rpc.notification(
                "notifications/cancelled", {"requestId": work.request_id, "reason": reason}
            ),
        )

    def _release(self, work: _Work) -> None:
        """Work leaves its slot's window (answered, withdrawn or lost); a reservation it still
        holds was never spent (the request was not sent) and goes back."""
        self._settle(work, commit=False)
        if work.slot is not None:
            self._slots[work.slot].busy -= 1
            work.slot = None

    def _finish(self, work: _Work, value: object = None, *, error: McpError | None = None) -> None:
        del self._works[work.ticket]
        self._release(work)
        self._reply(work.ticket, value, error=error)
        self._pump()

    def _drain_works(self) -> list[_Work]:
        """Remove every piece of work (in ticket order) and forget their requests."""
        works = sorted(self._works.values(), key=lambda w: w.ticket)
        self._works.clear()
        self._queue.clear()
        for work in works:
            self._release(work)
        for slot in self._slots:
            for request_id in [k for k, v in slot.requests.items() if isinstance(v, _Work)]:
                del slot.requests[request_id]
        return works

    # --- connections -----------------------------------------------------------------------

    def _forget_server_requests(self, slot: _Slot) -> None:
        """The connection that asked is gone: an answer must not reach its successor."""
        for handle in [h for h, (asker, _) in self._server_requests.items() if asker is slot]:
            del self._server_requests[handle]

    def _spawn(self, slot: _Slot) -> None:
        self._forget_server_requests(slot)
        slot.phase = "spawning"
        slot.broken_pipe_deadline = None
        slot.retry_at = None
        slot.failure, slot.failure_permanent = None, False
        slot.requests.clear()
        slot.handshake = None
        slot.decoder = LineDecoder(self.spec.max_message_bytes)
        slot.stderr.clear()
        slot.connect_deadline = self._now + self.spec.init_timeout
        if self._http:
            slot.session_id = slot.sse_endpoint = None
            slot.sse = False
            self._open(slot)
            return
        assert self.spec.command is not None
        self._generations += 1
        slot.generation = self._generations
        self._out.append(
            Spawn(
                slot=slot.index,
                generation=slot.generation,
                argv=(self.spec.command, *self.spec.args),
                inherit=INHERITED_ENV,
                env=dict(self.spec.env),
                cwd=self.spec.cwd,
            )
        )

    def _send_initialize(self, slot: _Slot) -> None:
        slot.phase = "initializing"
        self._send_request(slot, _INITIALIZE, initialize_params(self._capabilities), _INITIALIZE)

    def _ready(self, slot: _Slot, handshake: Handshake) -> None:
        slot.phase = "ready"
        slot.reinitializing = False
        slot.handshake = handshake
        slot.attempt = 0  # SPEC §7: the backoff resets only when a session reaches ready
        slot.connect_deadline = slot.probe_deadline = None
        self._connect_error = None
        status = self.status(self._now)
        for ticket in sorted(self._waiters):
            self._reply(ticket, status)
        self._waiters.clear()
        self._fail_fast_waiters.clear()
        self._pump()

    def _fail_slot(self, slot: _Slot, error: McpError, *, permanent: bool = False) -> None:
        """The slot's connection failed: answer what it affects, stop its process, and arm
        the retry once the process is gone (nothing is armed for a permanent failure)."""
        was_ready = slot.phase == "ready" or slot.reinitializing
        slot.phase = "idle"
        slot.reinitializing = False
        slot.confirming = None
        slot.handshake = None
        slot.probe_deadline = slot.connect_deadline = None
        self._last_error = error
        for owner in list(slot.requests.values()):
            if isinstance(owner, _Work):
                del self._works[owner.ticket]
                self._release(owner)
                self._reply(owner.ticket, error=error)
        slot.requests.clear()
        self._forget_server_requests(slot)
        for work in [w for w in self._works.values() if w.slot == slot.index]:
            del self._works[work.ticket]  # between input rounds: nothing on the wire
            self._release(work)
            self._reply(work.ticket, error=error)
        if not any(s.phase == "ready" for s in self._slots):
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
        slot.failure, slot.failure_permanent = error, permanent
        if self._http:
            self._abort_streams(slot)
            slot.session_id = None
            slot.resumes.clear()
        if slot.alive:
            self._begin_stop(slot)
        else:
            self._process_gone(slot)

    def _process_gone(self, slot: _Slot) -> None:
        permanent = slot.failure_permanent
        slot.failure, slot.failure_permanent = None, False
        if permanent or self._closing:
            return
        delay = backoff_delay(
            slot.attempt, self.spec.reconnect, self.spec.max_backoff, self._jitter
        )
        # A server's Retry-After (429/503) wins when it asks for longer than our backoff.
        slot.retry_at = self._now + max(delay, slot.retry_after or 0.0)
        slot.retry_after = None
        slot.attempt += 1

    def _begin_stop(self, slot: _Slot) -> None:
        # Legacy basic/lifecycle §Shutdown (stdio): close stdin, wait, SIGTERM, wait, SIGKILL.
        slot.stop_stage = _STOP_STDIN
        slot.stop_deadline = self._now + self.spec.shutdown_grace
        self._out.append(CloseStdin(slot=slot.index))

    def _escalate_stop(self, slot: _Slot) -> None:
        if self._http:
            # The DELETE of the session got no answer in time: stop waiting for it.
            self._abort_streams(slot)
            self._http_gone(slot)
            return
        slot.stop_deadline = self._now + self.spec.shutdown_grace
        if slot.stop_stage == _STOP_STDIN:
            slot.stop_stage = _STOP_TERM
            self._out.append(SignalProcess(slot=slot.index, signal="SIGTERM"))
        elif slot.stop_stage == _STOP_TERM:
            slot.stop_stage = _STOP_KILL
            self._out.append(SignalProcess(slot=slot.index, signal="SIGKILL"))
        else:
            # SIGKILL cannot be ignored; a process still not reported gone is the driver's to
            # reap. Stop waiting so that nothing hangs on it.
            self._log("ERROR", f"slot {slot.index}: process not reported gone after SIGKILL")
            slot.generation = 0  # whatever that process still sends is dropped
            self._exited(slot, None)

    def _check_closed(self) -> None:
        if self._closing and self._all_gone():
            tickets, self._close_tickets = self._close_tickets, []
            for ticket in tickets:
                self._reply(ticket, None)

    def _all_gone(self) -> bool:
        return not any(slot.alive or slot.phase == "spawning" for slot in self._slots)

    # --- HTTP ------------------------------------------------------------------------------

    def _modern(self, slot: _Slot) -> bool:
        return slot.handshake is not None and slot.handshake.era == "modern"

    def _start_stream(
        self,
        slot: _Slot,
        stream: _Stream,
        method: Literal["GET", "POST", "DELETE"],
        headers: tuple[tuple[str, str], ...],
        body: bytes | None = None,
        url: str | None = None,
    ) -> None:
        self._next_stream += 1
        slot.streams[self._next_stream] = stream
        self._stream_slots[self._next_stream] = slot
        url = url or self.spec.url
        assert url is not None
        self._out.append(
            StartHttp(stream=self._next_stream, method=method, url=url, headers=headers, body=body)
        )

    def _headers(
        self, slot: _Slot, method: str, message: Mapping[str, Any] | None
    ) -> tuple[tuple[str, str], ...]:
        probe = message is not None and message.get("method") == _DISCOVER
        handshake = message is not None and message.get("method") == _INITIALIZE
        modern = probe or self._modern(slot)
        if modern:
            version: str | None = MODERN_VERSION
        elif handshake or slot.handshake is None or slot.sse:
            version = None  # "not on the initialize POST itself" (2025-06-18 transports)
        else:
            version = slot.handshake.protocol_version
        return request_headers(
            user_headers=self.spec.headers,
            method=method,
            body=message,
            session_id=None if handshake or modern else slot.session_id,
            protocol_version=version,
            modern=modern,
        )

    def _post(self, slot: _Slot, message: Mapping[str, Any], request_id: int | None) -> None:
        """Legacy and modern Streamable HTTP: every message is its own POST."""
        headers = self._headers(slot, "POST", message)
        stream = _Stream(
            kind="post",
            request_id=request_id,
            carried_session=find_header(headers, "mcp-session-id") is not None,
        )
        body = encode_message(message)[:-1]
        self._start_stream(slot, stream, "POST", headers, body, slot.sse_endpoint)

    def _listen(self, slot: _Slot) -> None:
        """2025-03-26+ transports §Listening: the optional GET stream for server messages
        (405 means the server offers none)."""
        self._start_stream(
            slot,
            _Stream(kind="get", request_id=None, carried_session=True),
            "GET",
            self._headers(slot, "GET", None),
        )

    def _resume(self, slot: _Slot, resume: _Resume) -> None:
        """2025-11-25 transports §Resumability: resumption is "always via GET +
        Last-Event-ID", even for a stream that a POST opened."""
        headers = (*self._headers(slot, "GET", None), ("Last-Event-ID", resume.last_event_id))
        stream = _Stream(
            kind="get", request_id=resume.request_id, carried_session=True, resumes=resume.attempt
        )
        self._start_stream(slot, stream, "GET", headers)

    def _stream_of(self, slot: _Slot, request_id: int) -> int | None:
        for stream_id, stream in slot.streams.items():
            if stream.request_id == request_id:
                return stream_id
        return None

    def _abort(self, stream_id: int) -> None:
        slot = self._stream_slots.pop(stream_id)
        del slot.streams[stream_id]
        self._out.append(AbortHttp(stream=stream_id))

    def _abort_streams(self, slot: _Slot) -> None:
        for stream_id in list(slot.streams):
            self._abort(stream_id)

    def _close_http(self, slot: _Slot) -> None:
        """Stop: abort every stream, then (legacy, with a session) DELETE the session, as the
        client "SHOULD" (2025-03-26+ transports §Session Management); wait for it at most
        ``shutdown_grace``."""
        self._abort_streams(slot)
        if slot.session_id is None or self._modern(slot):
            return
        headers = self._headers(slot, "DELETE", None)
        slot.session_id = None
        slot.alive = True  # until the DELETE is answered
        slot.stop_deadline = self._now + self.spec.shutdown_grace
        self._start_stream(
            slot, _Stream(kind="delete", request_id=None, carried_session=True), "DELETE", headers
        )

    def _http_gone(self, slot: _Slot) -> None:
        slot.alive = False
        slot.stop_deadline = None
        self._check_closed()

    def _take_stream(self, stream_id: int) -> tuple[_Slot, _Stream] | None:
        """The slot and stream of an event, or None for a stream already aborted."""
        slot = self._stream_slots.get(stream_id)
        return None if slot is None else (slot, slot.streams[stream_id])

    def _on_http_head(self, event: HttpResponseStarted) -> None:
        found = self._take_stream(event.stream)
        if found is None:
            return
        slot, stream = found
        if slot.confirming == event.stream:
            self._on_confirmed(slot)
        stream.status, stream.headers = event.status, event.headers
        ok = 200 <= event.status < 300
        owner = slot.requests.get(stream.request_id) if stream.request_id is not None else None
        if ok and owner == _INITIALIZE:
            # "A server MAY assign a session ID ... on the HTTP response containing the
            # InitializeResult"; the client "MUST" echo it afterwards.
            slot.session_id = find_header(event.headers, "mcp-session-id")
        if ok and content_type(event.headers) == "text/event-stream":
            stream.sse = SseDecoder(self.spec.max_message_bytes)
        else:
            stream.body = bytearray()

    def _on_http_body(self, event: HttpBodyReceived) -> None:
        found = self._take_stream(event.stream)
        if found is None:
            return
        slot, stream = found
        if stream.sse is not None:
            self._on_sse_frames(slot, event.stream, stream.sse.feed(event.data))
        else:
            assert stream.body is not None, "body before the response head"
            stream.body += event.data
            if len(stream.body) > self.spec.max_message_bytes:
                self._http_too_large(slot, event.stream, len(stream.body))

    def _on_sse_frames(self, slot: _Slot, stream_id: int, frames: list[SseFrame]) -> None:
        for frame in frames:
            if isinstance(frame, SseTooLarge):
                self._http_too_large(slot, stream_id, frame.size)
                return
            if frame.event == "endpoint" and slot.streams[stream_id].kind == "sse":
                self._on_endpoint(slot, frame.data)
                continue
            if frame.event != "message":
                continue  # priming and unknown event types carry no JSON-RPC message
            payload = parse_json_body(frame.data.encode("utf-8"))
            self._on_payload(slot, payload, "an SSE event")

    def _on_payload(self, slot: _Slot, payload: object, where: str) -> None:
        if isinstance(payload, dict | list):
            items = payload if isinstance(payload, list) else [payload]
            for item in items:
                self._on_message(slot, rpc.classify(item))
        else:
            self._log("WARNING", f"skipped {where} that is not a JSON-RPC message")

    def _http_too_large(self, slot: _Slot, stream_id: int, size: int) -> None:
        request_id = slot.streams[stream_id].request_id
        self._abort(stream_id)
        error = MessageTooLarge(size, self.spec.max_message_bytes)
        if request_id is not None and request_id in slot.requests:
            self._lose_request(slot, slot.requests.pop(request_id), error)

    def _on_http_end(self, event: HttpResponseEnded) -> None:
        found = self._take_stream(event.stream)
        if found is None:
            return
        slot, stream = found
        del self._stream_slots[event.stream], slot.streams[event.stream]
        if stream.kind == "delete":
            self._http_gone(slot)
        elif stream.sse is not None:
            self._on_sse_frames(slot, event.stream, stream.sse.close())
            self._unanswered(slot, stream, "the SSE stream ended")
        elif 200 <= stream.status < 300:
            body = bytes(stream.body or b"")
            if body.strip() and stream.request_id is not None:
                self._on_payload(slot, parse_json_body(body), "an HTTP body")
            self._unanswered(slot, stream, f"HTTP {stream.status} came with no answer")
        else:
            self._on_http_status(slot, stream, bytes(stream.body or b""))

    def _on_http_failed(self, event: HttpFailed) -> None:
        found = self._take_stream(event.stream)
        if found is None:
            return
        slot, stream = found
        del self._stream_slots[event.stream], slot.streams[event.stream]
        if slot.confirming == event.stream:
            self._on_confirmed(slot)  # whether it arrived cannot be known: go on
        if stream.kind == "delete":
            self._http_gone(slot)
        else:
            self._unanswered(slot, stream, f"the HTTP request failed: {event.reason}")

    def _unanswered(self, slot: _Slot, stream: _Stream, what: str) -> None:
        """A response is over; if its request is still unanswered, resume or fail it."""
        if stream.kind == "sse":
            # The HTTP+SSE stream carries every answer: losing it loses the connection.
            self._fail_slot(slot, ConnectFailed(f"the HTTP+SSE stream is gone: {what}"))
            return
        request_id = stream.request_id
        if request_id is None or request_id not in slot.requests:
            return
        if slot.sse and stream.kind == "post" and 200 <= stream.status < 300:
            return  # HTTP+SSE: a POST is only accepted; its answer comes on the SSE stream
        sse = stream.sse
        if sse is not None and sse.last_event_id and not self._modern(slot) and stream.resumes < 3:
            # "the client MUST honor the retry field" before reconnecting (2025-11-25).
            delay = (sse.retry or 0) / 1000
            slot.resumes.append(
                _Resume(self._now + delay, request_id, sse.last_event_id, stream.resumes + 1)
            )
            return
        owner = slot.requests.pop(request_id)
        method = owner.method if isinstance(owner, _Work) else owner
        self._lose_request(slot, owner, InvalidResponse(method, f"{what} before the answer"))

    def _lose_request(self, slot: _Slot, owner: _Work | str, error: McpError) -> None:
        """A request (already taken out of ``slot.requests``) will never be answered."""
        if isinstance(owner, _Work):
            self._finish(owner, error=error)
        elif owner == _DISCOVER:
            # No usable answer to the probe: a legacy server ("anything else").
            slot.probe_deadline = None
            self._send_initialize(slot)
        else:
            self._fail_slot(slot, ConnectFailed(error.message))

    def _on_http_status(self, slot: _Slot, stream: _Stream, body: bytes) -> None:
        """A non-2xx answer: what it means depends on the status, the era and the request."""
        status = stream.status
        owner = slot.requests.get(stream.request_id) if stream.request_id is not None else None
        if stream.kind == "sse":
            permanent = status in (401, 403)
            failed = ConnectFailed(
                f"the server answered the HTTP+SSE GET with HTTP {status}",
                permanent=permanent,
                http_error=http_error(status, stream.headers),
            )
            self._fail_slot(slot, failed, permanent=permanent)
            return
        if owner is None or stream.request_id is None:
            level = "DEBUG" if stream.kind == "get" else "WARNING"
            self._log(level, f"HTTP {status} to a {stream.kind.upper()} with no pending request")
            return
        request_id = stream.request_id
        error = http_error(status, stream.headers)
        handshake = not isinstance(owner, _Work)
        if status in (401, 403):
            del slot.requests[request_id]
            if handshake:
                # SPEC §7: credentials were resolved once; retrying presents them again.
                failed = ConnectFailed(
                    f"the server answered HTTP {status} (check the credentials in headers)",
                    permanent=True,
                    http_error=error,
                )
                self._fail_slot(slot, failed, permanent=True)
            else:
                self._lose_request(slot, owner, error)
            return
        if status == 404 and stream.carried_session:
            # "On 404 for a request that carried a session id, the client MUST start a new
            # session with a fresh InitializeRequest" (2025-03-26+ transports).
            del slot.requests[request_id]
            self._reinitialize(slot)
            self._lose_request(
                slot,
                owner,
                SessionRejected(
                    "the server no longer knows this session (HTTP 404); the client opened a "
                    "new one: retry the call"
                ),
            )
            return
        payload = parse_json_body(body)
        if (
            isinstance(payload, dict)
            and isinstance(payload.get("error"), dict)
            and payload.get("id") in (None, request_id)
        ):
            # Modern errors come as 4xx with a JSON-RPC error body (2026-07-28 §Errors).
            self._on_response(slot, rpc.Response(request_id, None, payload["error"]))
            return
        del slot.requests[request_id]
        if handshake and (status == 429 or status >= 500):
            slot.retry_after = parse_retry_after(find_header(stream.headers, "retry-after"))
            self._fail_slot(slot, ConnectFailed(f"the server answered HTTP {status}"))
        elif owner == _INITIALIZE and status in (400, 404, 405) and not slot.sse:
            # 2025-03-26+ transports §Backwards Compatibility: a 4xx to the initialize POST
            # (2025-11-25: 400, 404 or 405) means an HTTP+SSE server: GET the URL.
            self._open_sse(slot)
        elif owner == _INITIALIZE:
            self._fail_slot(
                slot,
                ConnectFailed(
                    f"the server answered initialize with HTTP {status}", http_error=error
                ),
            )
        else:
            self._lose_request(slot, owner, error)

    def _open_sse(self, slot: _Slot) -> None:
        """2024-11-05 HTTP with SSE: GET the URL; the stream's first event names the endpoint
        that every message is POSTed to, and every answer comes back on the stream."""
        slot.sse, slot.sse_endpoint = True, None
        slot.phase = "initializing"
        stream = _Stream(kind="sse", request_id=None, carried_session=False)
        self._start_stream(slot, stream, "GET", self._headers(slot, "GET", None))

    def _on_endpoint(self, slot: _Slot, data: str) -> None:
        assert self.spec.url is not None
        endpoint = urljoin(self.spec.url, data.strip())
        if _origin(endpoint) != _origin(self.spec.url):
            # The spec's headers (credentials) go to the configured origin only.
            refused = ConnectFailed(
                "the HTTP+SSE server named an endpoint on another origin; refused",
                permanent=True,
            )
            self._fail_slot(slot, refused, permanent=True)
        elif slot.sse_endpoint is None:
            slot.sse_endpoint = endpoint
            self._send_initialize(slot)

    def _reinitialize(self, slot: _Slot) -> None:
        slot.session_id = None
        slot.confirming = None
        slot.reinitializing = True
        self._abort_streams(slot)
        self._send_initialize(slot)

    # --- small helpers ---------------------------------------------------------------------

    def _send_request(
        self,
        slot: _Slot,
        method: str,
        params: dict[str, Any],
        owner: _Work | str,
        meta: dict[str, Any] | None = None,
    ) -> int:
        self._next_id += 1
        if meta:
            params = {**params, "_meta": meta}
        slot.requests[self._next_id] = owner
        message = rpc.request(self._next_id, method, params)
        if self._http:
            self._post(slot, message, self._next_id)
        else:
            self._write(slot, message)
        return self._next_id

    def _forget_internal(self, slot: _Slot, owner: str) -> None:
        for request_id in [k for k, v in slot.requests.items() if v == owner]:
            del slot.requests[request_id]
            stream = self._stream_of(slot, request_id)
            if stream is not None:
                self._abort(stream)  # HTTP: stop waiting on the connection too

    def _write(self, slot: _Slot, message: Mapping[str, Any]) -> None:
        """Send a message that expects no answer (a notification, or our response)."""
        if self._http:
            self._post(slot, message, None)
        else:
            self._out.append(WriteStdin(slot=slot.index, data=encode_message(message)))

    def _reply(self, ticket: int, value: object = None, *, error: McpError | None = None) -> None:
        self._out.append(Reply(ticket=ticket, value=value, error=error))

    def _answer_waiters(self, error: McpError, *, fail_fast_only: bool = False) -> None:
        for ticket in sorted(self._fail_fast_waiters if fail_fast_only else self._waiters):
            del self._waiters[ticket]
            self._reply(ticket, error=error)
        self._fail_fast_waiters.clear()

    def _expect_completion(self, elicitation_id: str) -> None:
        """Remember a URL elicitation until the server reports it complete (bounded)."""
        self._elicitations.pop(elicitation_id, None)
        self._elicitations[elicitation_id] = None
        if len(self._elicitations) > MAX_ELICITATIONS:
            del self._elicitations[next(iter(self._elicitations))]

    def _log(self, level: str, message: str) -> None:
        self._out.append(Log(level=level, logger=self._logger, message=message))


def _names_our_modern_version(error: Mapping[str, Any] | None) -> bool:
    """An UnsupportedProtocolVersion error (-32022) that lists 2026-07-28 as supported."""
    if error is None or error.get("code") != rpc.UNSUPPORTED_PROTOCOL_VERSION:
        return False
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    return isinstance(supported, list) and MODERN_VERSION in supported


def _elicitation_mode(params: Mapping[str, Any]) -> str | None:
    """An elicitation request's mode (None if it is not a string); "Clients MUST treat
    requests without a mode field as form mode" (2025-11-25 client/elicitation)."""
    mode = params.get("mode", "form")
    return mode if isinstance(mode, str) else None


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.rsplit("@", 1)[-1].lower()


def _rpc_error(error: Mapping[str, Any]) -> JsonRpcError:
    code = error.get("code")
    message = error.get("message")
    text = str(message)[:500] if message is not None else ""
    data = error.get("data")
    if code == UrlElicitationRequired.CODE:
        return UrlElicitationRequired(text, _url_elicitations(data), data)
    return JsonRpcError(code if isinstance(code, int) else 0, text, data)


def _url_elicitations(data: object) -> tuple[dict[str, str], ...]:
    """The well-formed URL elicitations of a -32042 error's ``data.elicitations`` (each "MUST
    be" URL mode with an ``elicitationId``: 2025-11-25 client/elicitation); others are
    dropped, and at most ``MAX_ELICITATIONS`` are kept."""
    listed = data.get("elicitations") if isinstance(data, dict) else None
    found: list[dict[str, str]] = []
    for item in listed if isinstance(listed, list) else ():
        if not isinstance(item, dict) or item.get("mode", "url") != "url":
            continue
        elicitation_id, url = item.get("elicitationId"), item.get("url")
        message = item.get("message")
        if isinstance(elicitation_id, str) and isinstance(url, str):
            found.append(
                {
                    "mode": "url",
                    "elicitationId": elicitation_id,
                    "url": url,
                    "message": message if isinstance(message, str) else "",
                }
            )
    return tuple(found[:MAX_ELICITATIONS])
