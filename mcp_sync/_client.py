"""The blocking driver: threads and pipes around one ``SessionMachine``; no event loop.

Every thread (callers, readers, writers, the timer) enters the machine through ``_feed``,
which holds one lock while it records the event, runs ``machine.handle`` and performs the
actions that cannot block (writing to a pipe that has room, or queueing the write, keeps
per-slot write order equal to feed order). Actions that may block or run user code (spawning,
progress callbacks, logging) run after the lock is released. An idle session holds no thread
of its own: the client's one timer is a deadline in the ``timer`` thread that every client of
the process shares, re-armed when a feed moves the machine's ``next_deadline()`` earlier, and
its server's pipes are watched by the shared ``io`` thread (``_process.SharedLoop``).

On stdio, a caller that waits alone (as did the callers of the busy spell before) writes its
request and reads the server's stdout itself, instead of handing both to the I/O thread:
three thread switches fewer per sequential call (``_process.py``). Many callers at once leave
both to that thread, which batches.

Theory of operation: a client nobody stopped
--------------------------------------------
The shared threads, the HTTP workers and the updates thread hold a client only through weak
references (``_weakly``), so a client whose owner dropped every reference without calling
``stop()`` is collected like any object. What it owns outside itself (server processes, shared
loops, connections) is in ``_Owned``, which holds no reference to the client: its
``weakref.finalize`` (``_forgotten``) warns (``ResourceWarning``, as an unclosed file does) and
hands the servers' shutdown to the shared timer thread, which runs it in a thread of its own
(``_reap``): close stdin, SIGTERM, SIGKILL of the process group, each after
``shutdown_grace``, as stop() does (MCP 2025-11-25 basic/lifecycle §Shutdown, stdio). At
interpreter exit (``atexit``) every client still running is stopped by its ``stop()``, all at
once, with the same warning. A forked child does neither for the clients it inherited: their
servers are the parent's.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import queue
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, ParamSpec, cast

from _mcp_io.client import ProgressCallback as ProgressCallback
from _mcp_io.client import (
    Reservations,
    output_adapter,
    report,
    require_http_stack,
    settle,
    with_data,
)
from _mcp_io.fork import Origin
from _mcp_io.http import client_network
from _mcp_io.oauth import BrowserStep, TokenKeeper, sign_assertion
from _mcp_io.otel import end_call_span, start_call_span
from mcp_core import (
    HANDLED_REQUESTS,
    AbortHttp,
    Action,
    Authorize,
    AwaitReady,
    CallTool,
    CallToolResult,
    CancelCall,
    Close,
    CloseStdin,
    Completion,
    Connect,
    ElicitationComplete,
    Event,
    GetPromptResult,
    HandleServerRequest,
    ListItems,
    ListTools,
    Log,
    NotReady,
    PrepareAuthorization,
    ProgressUpdate,
    Prompt,
    ReadResourceResult,
    Reply,
    Request,
    Reservation,
    Resource,
    ResourceTemplate,
    ResourceUpdated,
    RootsChanged,
    SaveAuthorization,
    ServerRequestAnswered,
    SessionMachine,
    SettleReservation,
    SignalProcess,
    SignAssertion,
    Spawn,
    Spec,
    StartHttp,
    Status,
    Subscribe,
    TimerFired,
    TokenStore,
    Tool,
    Unsubscribe,
    UsedAfterFork,
    WriteStdin,
)
from mcp_core.driver import CompletionRef, completion_params
from mcp_core.replay import Recorder

from ._http import HttpExecutor, HttpRequest
from ._process import ProcessSlot, SharedLoop, Timer

if TYPE_CHECKING:
    import ssl

__all__ = ["Client"]

_log = logging.getLogger(__name__)

# Protocol eras learned per server, shared by every client of this driver.
_ERA_CACHE: dict[str, str] = {}
# Callers wait in slices so that KeyboardInterrupt reaches the main thread promptly everywhere.
_WAIT_SLICE = 0.1
# How long stop() waits for threads after the machine closed and every child was killed.
_JOIN_BOUND = 5.0

P = ParamSpec("P")


@dataclass(slots=True)
class _Waiter:
    ticket: int
    progress: ProgressCallback | None = None
    done: threading.Event = field(default_factory=threading.Event)
    reply: Reply | None = None
    # The slot whose stdout the caller reads itself while it waits alone, and its thread.
    reader: ProcessSlot | None = None
    thread: int = 0
    # HTTP: the request its own feed started, which the caller runs itself (_http.py).
    http: HttpRequest | None = None


class _Owned:
    """What a started client holds outside itself, which ``stop()`` gives back: its server
    processes (``slots``, the same dict as the client's), the shared loops it acquired, its
    HTTP connections, its browser step, its updates thread, its recording. It holds no
    reference to the client, so the finalizer of a client nobody stopped can have it."""

    __slots__ = (
        "browser",
        "claimed",
        "grace",
        "http",
        "io",
        "name",
        "old_slots",
        "origin",
        "reaped",
        "record_file",
        "slots",
        "timer",
        "timers",
        "updates",
    )

    def __init__(
        self,
        name: str,
        grace: float,
        http: HttpExecutor,
        browser: BrowserStep,
        updates: queue.SimpleQueue[tuple[UpdateCallback, str] | None],
    ) -> None:
        self.name = name
        self.grace = grace  # the spec's shutdown_grace
        self.http = http
        self.browser = browser
        self.updates = updates
        self.slots: dict[int, ProcessSlot] = {}
        # Replaced processes not yet reaped, kept for stop() to join.
        self.old_slots: list[ProcessSlot] = []
        self.origin = Origin()  # the process that started the client (set by start())
        self.timers: SharedLoop | None = None  # the shared timer thread, while running
        self.io: SharedLoop | None = None  # the shared I/O thread, from the first spawn
        self.timer: Timer | None = None  # the client's deadline, in the timer thread
        self.record_file: IO[str] | None = None
        # Once the client was collected without stop(): whether a _reap took it (under
        # _REAP_LOCK), and when it is done.
        self.claimed = False
        self.reaped = threading.Event()


class Client:
    """A client for one MCP server, blocking and safe to use from many threads at once.

    A client belongs to the process that started it. In a child made by ``os.fork()``, the
    pipes, sockets and request ids are the parent's session's, which goes on unaffected:
    every call there (``call_tool``, the lists, ``request``, ``ping``, ``await_ready``,
    ``status``, ``start``, ...) raises ``UsedAfterFork`` and touches nothing, and ``stop()``
    (so the end of a ``with`` block) returns at once without raising, leaving the parent's
    server and pipes alone (the child's copies of the descriptors are closed at the fork). A
    new client made in the child works.

    A started client that is never stopped is stopped for you: once its owner dropped every
    reference it is collected, with a ``ResourceWarning`` ("unclosed client ..."), and its
    server is shut down as by ``stop()`` (close stdin, SIGTERM, SIGKILL of the process group,
    each after ``shutdown_grace``), in a thread of the driver's own; one still running at
    interpreter exit is stopped by ``stop()`` then (``atexit``), with the same warning. Call
    ``stop()`` or use ``with`` rather than rely on either.
    """

    def __init__(
        self,
        spec: Spec | Mapping[str, Any] | None = None,
        /,
        *,
        wait: bool = True,
        record: str | os.PathLike[str] | None = None,
        elicitation: Handler | None = None,
        elicitation_modes: Iterable[str] = ("form",),
        elicitation_complete: CompletionCallback | None = None,
        sampling: Handler | None = None,
        roots: Handler | None = None,
        authorize: AuthorizeCallback | None = None,
        token_store: TokenStore | None = None,
        interactive: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        **fields: Any,
    ) -> None:
        """Raises ``InvalidSpec`` for a refused spec, ``NoHttpClient`` for an https URL on a
        Python without ``ssl``, ``ValueError`` for impossible ``elicitation_modes``; nothing is
        started. See ``Handler`` and
        ``CompletionCallback`` for the handlers.

        OAuth (MCP 2025-11-25 basic/authorization; a ``url`` server without an ``Authorization``
        header, unless the spec's ``oauth`` says ``enabled: false``): when the server answers
        401 the client discovers its authorization server, registers if it must, and gets a
        token, then sends the request again. ``token_store`` keeps logins
        (``mcp_core.TokenStore``; by default an ``InMemoryTokenStore`` of this client's own):
        its record for the server is read here (a store that raises, such as a corrupt token
        file, raises here) and used without any flow while it lasts. The browser step opens the
        user's browser and receives the redirect on a one-shot listener on 127.0.0.1 (the spec's
        ``oauth.redirect_port``, else any port) for up to 5 minutes; ``authorize=`` replaces it
        (see ``AuthorizeCallback``). ``interactive=False``: no browser step at all, a flow that
        needs one fails with ``AuthorizationRequired``. Leave room for the user in
        ``init_timeout``: ``with Client(...)`` waits that long for readiness.

        The network (docs/networks.md): the
        spec's ``verify`` and ``cert``, or ``ssl_context`` (an ``ssl.SSLContext`` used for
        every https connection of this client, its OAuth requests included; not with
        ``verify`` or ``cert``: ``InvalidSpec``; ignored for a stdio server); a proxy from the
        spec's ``proxy``, else from ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` (and their
        lower-case spellings), read here, once. A CA bundle or client certificate that cannot
        be loaded, or a proxy variable that is not an http:// URL, raises ``InvalidSpec``."""
        self._spec = Spec.build(spec, **fields)
        require_http_stack(self._spec)  # NoHttpClient: an https URL without ssl
        self._network = client_network(self._spec, ssl_context, os.environ)
        self._wait = wait
        self._record_path = record
        self._elicitation_complete = elicitation_complete
        # Only a feature with a handler is declared to the server (MCP 2025-11-25
        # basic/lifecycle §Capability Negotiation).
        given = {
            "elicitation/create": elicitation,
            "sampling/createMessage": sampling,
            "roots/list": roots,
        }
        self._handlers: dict[str, Handler] = {m: h for m, h in given.items() if h is not None}
        self._tokens = TokenKeeper(token_store, time.monotonic, _log)
        self._machine = SessionMachine(
            self._spec,
            era_cache=_ERA_CACHE,
            handlers=[HANDLED_REQUESTS[method] for method in self._handlers],
            elicitation_modes=elicitation_modes,
            **self._tokens.machine_keywords(self._spec, interactive=interactive),
        )
        self._browser = BrowserStep(self._spec, authorize, time.monotonic)
        self._lock = threading.Lock()
        # What the shared threads, HTTP workers and handler threads call back: weakly, so that
        # none of them keeps a client nobody stopped alive (see the module docstring).
        self._weak_feed = _weakly(self._feed)
        self._weak_on_timer = _weakly(self._on_timer)
        self._origin: Origin | None = None  # the process that started it
        self._finalizer: weakref.finalize[[_Owned], Client] | None = None  # start() to stop()
        self._armed: float | None = None  # the deadline the timer is armed for
        self._phase = "new"  # -> "running" -> "stopping" -> "stopped"; driver bookkeeping only
        self._last_now = 0.0
        self._tickets = itertools.count(1)
        self._waiters: dict[int, _Waiter] = {}
        self._on_update: dict[str, UpdateCallback] = {}  # subscribed URI -> its callback
        # Updates to deliver, in order, by one thread started at the first one: a callback
        # may call the client (read_resource), which a reader thread must not do.
        self._updates: queue.SimpleQueue[tuple[UpdateCallback, str] | None] = queue.SimpleQueue()
        self._updater: threading.Thread | None = None
        # The most callers waiting at once since none last waited, and whether the busy spell
        # before had a single one. Only then does a caller waiting alone use the pipes itself:
        # threads calling in a loop all find themselves alone at the start of each round of
        # answers, and taking the pipes over then cost about 20% at 256 in flight (measured).
        self._peak = 0
        self._solo = True
        self._reservations = Reservations()
        self._recorder: Recorder | None = None
        self._http = HttpExecutor(
            self._weak_feed,
            time.monotonic,
            pool_size=self._spec.pool_size,
            network=self._network,
            feed_many=_weakly(self._feed_many),
        )
        self._own = _Owned(
            self._spec.name, self._spec.shutdown_grace, self._http, self._browser, self._updates
        )
        self._slots = self._own.slots
        self._old_slots = self._own.old_slots
        self._stopped = threading.Event()

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def spec(self) -> Spec:
        """The validated spec this client runs (its ``repr`` is redacted)."""
        return self._spec

    def __repr__(self) -> str:
        return f"<mcp_sync.Client {self.name!r} {self._machine.state}>"

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Start connecting in the background and return at once. A second call does nothing;
        a call after stop() raises ``NotReady('closed')``, one in a forked child of the
        process that started it ``UsedAfterFork``."""
        self._check_origin()
        with self._lock:
            if self._phase != "new":
                if self._phase == "running":
                    return
                raise NotReady("closed")
            own = self._own
            if self._record_path is not None:  # an OSError here leaves the client unstarted
                record_file = open(self._record_path, "w", encoding="utf-8")  # noqa: SIM115
                own.record_file = record_file
                self._recorder = Recorder(
                    self._spec,
                    record_file.write,
                    handlers=self._machine.handlers,
                    elicitation_modes=self._machine.elicitation_modes,
                    known_era=self._machine.known_era,
                )
            self._phase = "running"
            self._origin = own.origin = Origin()
            own.timers = SharedLoop.acquire("timer")
            # Not self: the finalizer must not keep the client alive. Not at exit: _at_exit
            # stops the clients still running then, with stop().
            self._finalizer = weakref.finalize(self, _forgotten, own)
            self._finalizer.atexit = False
            _RUNNING.add(self)
            # Connect is handled before the lock is released, so a concurrent stop() always
            # feeds Close after it.
            later = self._handle(Connect(now=time.monotonic()))
        _run(later)

    def stop(self) -> None:
        """Close the session and wait until every server process is gone. Calls still waiting
        get their error; later calls raise ``NotReady('closed')``. Idempotent.

        In a forked child of the process that started the client it returns at once and
        never raises: the session is the parent's, and nothing of it is touched (no write, no
        signal, no wait), so that a ``with Client(...)`` block unwinds in the child too."""
        if not self._origin_here():
            return
        closing = self._close()
        if closing is None:
            while not self._stopped.wait(_WAIT_SLICE):
                pass  # another thread's stop() is still shutting down
            return
        self._closed(closing)

    def _close(self) -> _Waiter | None:
        """The first half of ``stop()``: feed Close and return its waiter; None if the client
        was not running (never started, or another thread's stop() came first)."""
        with self._lock:
            state = self._phase
            if state == "new":
                self._phase = "stopped"
                self._stopped.set()
            elif state == "running":
                self._phase = "stopping"
        if state != "running":
            return None
        try:
            return self._submit(lambda t: Close(now=time.monotonic(), ticket=t), closing=True)
        except BaseException:
            self._teardown()
            raise

    def _closed(self, waiter: _Waiter) -> None:
        """The second half of ``stop()``: wait for the Close reply, then tear down."""
        try:
            # No bound of our own: the machine answers Close by a deadline of its own, which
            # the timer thread fires like any other (SessionMachine.next_deadline).
            while not waiter.done.wait(_WAIT_SLICE):
                pass
        finally:
            self._teardown()

    def __enter__(self) -> Client:
        self.start()
        if self._wait:
            try:
                self.await_ready(self._spec.init_timeout)
            except BaseException:
                self.stop()
                raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- calls ---------------------------------------------------------------------------

    def await_ready(self, timeout: float = 60.0, *, fail_fast: bool | None = None) -> Status:
        """Wait until the session is ready; raises ``ConnectFailed`` or ``NotReady`` if not
        by ``timeout``. ``fail_fast`` decides this wait only: True raises ``ConnectFailed`` at
        the first failed attempt (the client keeps retrying), False waits through retries,
        None follows the spec's ``fail_fast``."""
        value = self._call(
            lambda t: AwaitReady(
                now=time.monotonic(), ticket=t, timeout=timeout, fail_fast=fail_fast
            )
        )
        assert isinstance(value, Status)
        return value

    def list_tools(self, *, refresh: bool = False, timeout: float | None = None) -> list[Tool]:
        """The server's tools, from the cache unless ``refresh``."""
        value = self._call(
            lambda t: ListTools(now=time.monotonic(), ticket=t, refresh=refresh, timeout=timeout)
        )
        assert isinstance(value, list)
        return value

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        reservation: Reservation | None = None,
        progress: ProgressCallback | None = None,
        output_type: Any = None,
    ) -> CallToolResult:
        """Call tool ``name``. ``progress(progress, total, message)`` is called for each
        progress notification from the thread that read it: this caller's own while it reads
        its answer itself (over HTTP, its own request; over stdio, while it waits alone), else
        a driver thread (over stdio, the I/O thread every session of the process shares: keep
        it quick); its exceptions are logged. A priced tool (the spec's ``prices``) needs
        ``reservation=`` from your ``SpendGate`` (else ``UnmeteredCall``, nothing sent); the
        client commits it once the request is sent and
        releases it if the call fails before that. With OpenTelemetry configured,
        the call is a client span and its trace context goes in ``_meta`` (``_mcp_io/otel.py``).

        ``timeout`` (default: the spec's ``call_timeout``) counts from admission; each progress
        notification pushes the deadline out by it, never past ``max_call_timeout`` from
        admission and never in. A ``timeout`` above ``max_call_timeout`` is honoured, not
        refused: it is the caller's own finite bound, and the cap is there only so that
        progress cannot keep a call alive for ever.

        ``output_type=T`` (a pydantic model, a dataclass, ``list[int]``, ...; the ``pydantic``
        extra): ``result.data`` is the structured content validated as a ``T``; content that
        is missing or does not fit raises ``OutputValidationError`` (its ``path`` says where),
        a tool's own failure comes back as it is with ``data`` None. Without pydantic this
        raises ``ImportError`` before anything is sent."""
        self._check_origin()
        adapter = None if output_type is None else output_adapter(output_type)
        meta, span = start_call_span(self.name, name, self._spec.transport)
        try:
            value = self._call(
                lambda t: self._reservations.call(
                    t,
                    reservation,
                    lambda facts: CallTool(
                        now=time.monotonic(),
                        ticket=t,
                        name=name,
                        arguments=arguments,
                        timeout=timeout,
                        progress=progress is not None,
                        reservation=facts,
                        meta=meta,
                    ),
                ),
                progress=progress,
            )
        except BaseException as exc:
            if span is not None:
                end_call_span(span, error=exc)
            raise
        assert isinstance(value, CallToolResult)
        if span is not None:
            end_call_span(span, value)
        return value if adapter is None else with_data(value, name, adapter)

    # Beyond tools: resources, prompts, completion, logging, ping. A method whose capability the
    # server did not declare raises ``NotSupported`` before anything is sent; other failures
    # raise ``McpError`` as ``call_tool`` does (``RequestTimeout``, ``JsonRpcError``,
    # ``InvalidResponse``, ...).

    def list_resources(
        self, *, refresh: bool = False, timeout: float | None = None
    ) -> list[Resource]:
        """The server's resources, every page; from the cache unless ``refresh`` (kept until
        the server says the list changed, and no longer than a 2026-07-28 server's ``ttlMs``)."""
        return cast(list[Resource], self._list("resources", refresh, timeout))

    def list_resource_templates(
        self, *, refresh: bool = False, timeout: float | None = None
    ) -> list[ResourceTemplate]:
        """The server's resource templates, every page (cached like ``list_resources``)."""
        return cast(list[ResourceTemplate], self._list("resource_templates", refresh, timeout))

    def list_prompts(self, *, refresh: bool = False, timeout: float | None = None) -> list[Prompt]:
        """The server's prompts, every page (cached like ``list_resources``)."""
        return cast(list[Prompt], self._list("prompts", refresh, timeout))

    def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult:
        """Read resource ``uri`` (a listed one, or a template filled in): its contents, text
        or ``blob`` bytes."""
        return cast(ReadResourceResult, self._request("resources/read", {"uri": uri}, timeout))

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> GetPromptResult:
        """Prompt ``name`` filled in with ``arguments`` (strings): its messages."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return cast(GetPromptResult, self._request("prompts/get", params, timeout))

    def complete(
        self,
        ref: CompletionRef,
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Values the server suggests for ``argument`` of a prompt or resource template
        (``ref``: ``{"type": "ref/prompt", "name": ...}``, ``{"type": "ref/resource",
        "uri": ...}``, a ``PromptRef`` or a ``ResourceRef``), given what the user typed so far
        (``value``) and the arguments already chosen (``context``); ``ValueError`` for another
        ``ref``."""
        params = completion_params(ref, argument, value, context)
        return cast(Completion, self._request("completion/complete", params, timeout))

    def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Ask the server to send its log messages at ``level`` and above (one of
        ``mcp_core.LOG_LEVELS``, else ``ValueError``); they go to the ``logging`` logger
        ``mcp.server.<name>``. The level is kept: every later session gets it too."""
        self._request("logging/setLevel", {"level": level}, timeout)

    def ping(self, *, timeout: float | None = None) -> float:
        """Ask the server whether it is there: the round trip in seconds."""
        return cast(float, self._request("ping", None, timeout))

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send request ``method`` with ``params`` and return its result as received: for
        what this client has no method of its own for. ``ValueError`` for a method it does
        have one for (``tools/call``, the lists, subscriptions: their method says why), or a
        notification."""
        return cast(dict[str, Any], self._request(method, params, timeout, raw=True))

    def subscribe(
        self, uri: str, on_update: UpdateCallback, *, timeout: float | None = None
    ) -> None:
        """Have ``on_update(uri)`` called each time the server says resource ``uri`` changed
        (read it again for the new contents), until ``unsubscribe(uri)``. Returns once the
        server accepted it (2026-07-28: once the listen stream asking for it was sent);
        subscribing again replaces the callback. The subscription outlives reconnects. If it
        fails, the callback it replaced (if any) stays."""
        self._check_origin()
        with self._lock:
            previous = self._on_update.get(uri)
            # Before the answer: an update may be performed right after it, in the same feed.
            self._on_update[uri] = on_update
        try:
            self._call(
                lambda t: Subscribe(now=time.monotonic(), ticket=t, uri=uri, timeout=timeout)
            )
        except BaseException:
            with self._lock:
                if self._on_update.get(uri) is on_update:  # not replaced meanwhile
                    if previous is None:
                        del self._on_update[uri]
                    else:
                        self._on_update[uri] = previous
            raise

    def unsubscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """Stop the updates of ``uri``: its callback is not called from now on, even if this
        raises (after telling the server failed)."""
        self._check_origin()
        with self._lock:
            self._on_update.pop(uri, None)
        self._call(lambda t: Unsubscribe(now=time.monotonic(), ticket=t, uri=uri, timeout=timeout))

    def notify_roots_changed(self) -> None:
        """Tell the server the answer of the ``roots=`` handler changed, so that it asks again
        (legacy sessions; 2026-07-28 servers ask on every request that needs roots). Never
        blocks; does nothing without a ``roots=`` handler or a ready session."""
        self._check_origin()
        self._feed(RootsChanged(now=time.monotonic()))

    def status(self) -> Status:
        """The session's status now; never waits for I/O. In a forked child it raises
        ``UsedAfterFork`` (the parent's session is not this process's to report)."""
        self._check_origin()
        with self._lock:
            return self._machine.status(max(self._last_now, time.monotonic()))

    def _list(self, kind: str, refresh: bool, timeout: float | None) -> object:
        return self._call(
            lambda t: ListItems(
                now=time.monotonic(), ticket=t, kind=kind, refresh=refresh, timeout=timeout
            )
        )

    def _request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        timeout: float | None,
        raw: bool = False,
    ) -> object:
        return self._call(
            lambda t: Request(
                now=time.monotonic(),
                ticket=t,
                method=method,
                params=params,
                timeout=timeout,
                raw=raw,
            )
        )

    # --- the loop ------------------------------------------------------------------------

    def _call(
        self, make: Callable[[int], Event], progress: ProgressCallback | None = None
    ) -> object:
        """Submit the event built for a new ticket and wait for its Reply; on any interruption
        (KeyboardInterrupt included) feed CancelCall(ticket) and re-raise."""
        self._check_origin()
        waiter = self._submit(make, progress)
        try:
            if waiter.http is not None:
                self._http.run(waiter.http, waiter.done)  # its own request, in this thread
            if waiter.reader is not None:
                # (read without the lock: a caller added before this reply was popped shows)
                waiter.reader.read_until(waiter.done, lambda: bool(self._waiters))
            while not waiter.done.wait(_WAIT_SLICE):
                pass
        except BaseException:
            later: list[Callable[[], None]] = []
            with self._lock:
                if self._waiters.pop(waiter.ticket, None) is not None:
                    # Gave up before the answer: the machine drops the work, sends no reply.
                    later = self._handle(CancelCall(now=time.monotonic(), ticket=waiter.ticket))
            self._http.release(waiter.http)  # after the cancel: see HttpExecutor.release
            _run(later)
            raise
        assert waiter.reply is not None
        if waiter.reply.error is not None:
            raise waiter.reply.error
        return waiter.reply.value

    def _origin_here(self) -> bool:
        """True unless this is a forked child of the process that started the client."""
        origin = self._origin
        return origin is None or origin.here()

    def _check_origin(self) -> None:
        """``UsedAfterFork`` in a forked child of the process that started this client, before
        anything is touched (a lock copied from the parent may be held for ever)."""
        origin = self._origin
        if origin is not None and not origin.here():
            raise UsedAfterFork(self.name, origin.pid, os.getpid())

    def _submit(
        self,
        make: Callable[[int], Event],
        progress: ProgressCallback | None = None,
        *,
        closing: bool = False,
    ) -> _Waiter:
        """Register a waiter and feed its event. Raises ``NotReady('closed')`` unless running
        (stopping, for Close) and ``ValueError`` for a bad argument; nothing is fed then."""
        with self._lock:
            if self._phase != ("stopping" if closing else "running"):
                raise NotReady("closed")
            ticket = next(self._tickets)
            event = make(ticket)
            waiter = self._waiters[ticket] = _Waiter(ticket, progress)
            self._peak = max(self._peak, len(self._waiters))
            later = self._handle(event, None if closing else waiter)
            if not closing and self._alone() and len(self._slots) == 1:
                # Alone (and one process): read its answer in this thread (see _process.py).
                (waiter.reader,) = self._slots.values()
                waiter.thread = threading.get_ident()
        try:
            _run(later)
        except BaseException:
            self._http.release(waiter.http)  # will not be run here: a worker runs it
            raise
        return waiter

    def _handle(self, event: Event, caller: _Waiter | None = None) -> list[Callable[[], None]]:
        """With the lock held: record and handle ``event``, perform the actions that cannot
        block, and return the others (to run once the lock is released). ``caller``: the
        waiter whose own event this is; it runs the HTTP request its event starts."""
        if self._phase == "stopped":
            return []  # late reader output after stop: nobody listens any more
        # Threads read the clock before taking the lock: keep `now` monotonic in feed order.
        if event.now < self._last_now:
            event = replace(event, now=self._last_now)
        self._last_now = event.now
        if self._recorder is not None:
            self._recorder.record(event, secret=self._machine.is_secret(event))
        later: list[Callable[[], None]] = []
        for action in self._machine.handle(event):
            self._perform(action, caller, later)
        deadline = self._machine.next_deadline()
        # Re-arm the timer only for an earlier deadline: a later one is found when the armed
        # one passes (one spare wake-up per deadline instead of one per event).
        if deadline is not None and (self._armed is None or deadline < self._armed):
            self._arm(deadline)
        return later

    def _arm(self, deadline: float) -> None:
        """With the lock held: have the shared timer thread call ``_on_timer`` at
        ``deadline`` instead of at the armed one."""
        own = self._own
        assert own.timers is not None
        if own.timer is not None:
            own.timer.cancel()
        self._armed = deadline
        own.timer = own.timers.call_at(deadline, self._weak_on_timer)

    def _perform(
        self, action: Action, caller: _Waiter | None, later: list[Callable[[], None]]
    ) -> None:
        """With the lock held: perform ``action`` if it cannot block, else append it to
        ``later`` (run once the lock is released). ``caller``: see ``_handle``."""
        match action:  # the most frequent actions first
            case WriteStdin():
                if action.slot in self._slots:
                    slot = self._slots[action.slot]
                    if slot.write(action.data, alone=self._alone()):
                        later.append(slot.flush)  # this thread writes what gathers meanwhile
            case Reply():
                self._reservations.take(action.ticket)  # never settled: not ours
                waiter = self._waiters.pop(action.ticket, None)
                if waiter is not None:  # else the caller gave up: ignore
                    if not self._waiters:
                        self._solo, self._peak = self._peak <= 1, 0
                    waiter.reply = action
                    waiter.done.set()
                    if waiter.reader is not None and waiter.thread != threading.get_ident():
                        waiter.reader.wake()  # it may be polling stdout for this reply
            case Spawn():
                # Registered now, so writes queue up in order until the process runs. The old
                # process of the slot is kept for stop() to join until its threads are done;
                # the machine drops its late events (by generation).
                self._old_slots[:] = [old for old in self._old_slots if not old.finished]
                if action.slot in self._slots:
                    self._old_slots.append(self._slots[action.slot])
                own = self._own
                if own.io is None:
                    own.io = SharedLoop.acquire("io")
                slot = self._slots[action.slot] = ProcessSlot(
                    action, self._weak_feed, time.monotonic, own.io
                )
                later.append(slot.start)
            case CloseStdin():
                if action.slot in self._slots:
                    slot = self._slots[action.slot]
                    if slot.close_stdin():
                        later.append(slot.flush)
            case SignalProcess():
                if action.slot in self._slots:
                    self._slots[action.slot].signal(action.signal)
            case StartHttp():
                if caller is not None and caller.http is None:
                    caller.http = self._http.start(action, inline=True)  # see _http.py
                else:
                    self._http.start(action)  # starts a thread; never blocks
            case AbortHttp():
                self._http.abort(action.stream)  # shuts its socket down; never blocks
            case SettleReservation():
                reservation = self._reservations.take(action.ticket)
                if reservation is not None:
                    later.append(partial(settle, reservation, action.commit, _log))
            case HandleServerRequest():
                handler = self._handlers[action.method]
                later.append(partial(self._answer_in_thread, handler, action))
            case ProgressUpdate():
                waiter = self._waiters.get(action.ticket)
                if waiter is not None and waiter.progress is not None:
                    later.append(partial(report, waiter.progress, action, _log))
            case ResourceUpdated():
                on_update = self._on_update.get(action.uri)
                if on_update is not None:  # the updates thread runs it, outside the lock
                    self._updates.put((on_update, action.uri))
                    if self._updater is None:
                        self._updater = threading.Thread(
                            target=_run_updates,
                            args=(self._updates,),
                            name=f"mcp-{self.name}-updates",
                            daemon=True,
                        )
                        self._updater.start()
            case Log():
                level = logging.getLevelNamesMapping().get(action.level, logging.WARNING)
                log = logging.getLogger(action.logger).log
                later.append(partial(log, level, "%s", action.message))
            case ElicitationComplete():
                later.append(partial(self._completed, action.elicitation_id))
            case PrepareAuthorization():
                later.append(partial(self._feed_result, self._browser.prepare))
            case Authorize():
                later.append(partial(self._authorize_in_thread, action.url, action.state))
            case SignAssertion():
                sign = partial(sign_assertion, action, self._spec, time.monotonic)
                later.append(partial(self._feed_result, sign))
            case SaveAuthorization():
                later.append(self._tokens.take(action))
            case _:
                raise TypeError(f"unknown action {action!r}")

    def _alone(self) -> bool:
        """With the lock held: at most one caller waits, as in the busy spell before."""
        return len(self._waiters) <= 1 and self._solo

    def _completed(self, elicitation_id: str) -> None:
        """Tell the application a URL elicitation is complete (in the thread that read the
        notification, outside the lock); without a callback, log it."""
        if self._elicitation_complete is None:
            _log.info("server %r completed URL elicitation %r", self.name, elicitation_id)
            return
        try:
            self._elicitation_complete(elicitation_id)
        except Exception:
            _log.exception("the elicitation_complete callback raised")

    def _answer_in_thread(self, handler: Handler, action: HandleServerRequest) -> None:
        # The handler may block on a person: it runs in its own thread, never under the lock,
        # holding the client weakly (as the shared threads do).
        feed = self._weak_feed

        def run() -> None:
            feed(_answer(handler, action))

        threading.Thread(target=run, name=f"mcp-{self.name}-handler", daemon=True).start()

    def _authorize_in_thread(self, url: str, state: str) -> None:
        # The user may take minutes: a thread of its own; stop() closes the listener it
        # waits on (a callback that blocks is left to finish: its answer is dropped then).
        feed, browser = self._weak_feed, self._browser

        def run() -> None:
            feed(browser.run(url, state))

        threading.Thread(target=run, name=f"mcp-{self.name}-authorize", daemon=True).start()

    def _feed_result(self, make: Callable[[], Event]) -> None:
        self._feed(make())

    def _feed(self, event: Event) -> None:
        """Feed ``event`` from any thread: a process's (the machine drops those of a process it
        replaced, by generation), an HTTP request's (and those of a stream it aborted), a
        handler's answer."""
        with self._lock:
            later = self._handle(event)
        _run(later)

    def _feed_many(self, events: Sequence[Event]) -> None:
        """Feed ``events`` in order under one hold of the lock (what one HTTP read brought)."""
        later: list[Callable[[], None]] = []
        with self._lock:
            for event in events:
                later += self._handle(event)
        _run(later)

    def _on_timer(self) -> None:
        """In the shared timer thread: the armed deadline passed. Feed ``TimerFired`` if the
        machine's deadline is due (the feed re-arms for the next one), else re-arm for it."""
        with self._lock:
            self._own.timer = self._armed = None
            deadline = self._machine.next_deadline()
            if self._phase == "stopped" or deadline is None:
                return
            now = time.monotonic()
            if now < deadline:
                self._arm(deadline)
                return
            later = self._handle(TimerFired(now=now))
        _run(later)

    def _teardown(self) -> None:
        """After the Close reply (or an interrupted stop): stop the timer, kill whatever process
        is still held (a safety net: the machine has already shut them down), join every
        thread within a bound and close the replay file."""
        deadline = time.monotonic() + _JOIN_BOUND
        if self._finalizer is not None:
            self._finalizer.detach()  # stopped: nothing left for it to do
        _RUNNING.discard(self)
        own = self._own
        with self._lock:
            self._phase = "stopped"
            if own.timer is not None:
                own.timer.cancel()
            timers, own.timers = own.timers, None
        if timers is not None:  # the last client's release ends the shared thread
            timers.release(deadline)
        with self._lock:
            slots = [*self._old_slots, *self._slots.values()]
            io, own.io = own.io, None
        for slot in slots:
            slot.kill()
            slot.join(deadline)
        if io is not None:
            io.release(deadline)
        self._http.close(deadline)  # the machine has aborted its requests already
        self._browser.close()  # a browser step still waiting ends within 0.1 s
        if self._updater is not None:  # it runs the updates already queued, then ends
            self._updates.put(None)
            if self._updater is not threading.current_thread():  # stop() from a callback
                self._updater.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._recorder = None
            if own.record_file is not None:
                own.record_file.close()
        self._stopped.set()


Handler = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Answers one kind of server request, given its params: ``elicitation=`` gets
``elicitation/create`` (``message``, ``requestedSchema``) and returns an ElicitResult such as
``{"action": "accept", "content": {...}}``; ``sampling=`` gets ``sampling/createMessage`` and
returns a CreateMessageResult; ``roots=`` gets ``roots/list`` and returns ``{"roots": [...]}``.
It runs in a thread of its own and may block (e.g. to ask a person). An exception becomes a
-32603 answer.

With ``elicitation_modes=("form", "url")`` the elicitation handler also gets URL-mode requests
(``mode`` ``"url"``, ``url``, ``elicitationId``, ``message``; 2025-11-25): show the user the
URL's host and message, open the URL only with their consent (never fetch it yourself), and
return ``{"action": "accept"}`` (consent given; the interaction itself happens out of band),
``"decline"`` or ``"cancel"``."""

AuthorizeCallback = Callable[[str], str | Mapping[str, str]]
"""``authorize=``: the browser step of an OAuth login, instead of the user's browser. It gets
the authorization URL (it holds the state and the PKCE challenge: keep it out of logs), has
the user (or a headless test) authorize there, and returns the URL the authorization server
redirected to, or that redirect's query parameters as a mapping (``code``, ``state``,
``iss``, or ``error``); the client checks them. It runs in a thread of its own and may block;
an exception abandons the login (the error names its class only). The redirect URI it stands
for is its ``redirect_uri`` attribute when it has one (a callable object running a listener of
its own), else ``http://127.0.0.1:<oauth.redirect_port>/callback``."""

UpdateCallback = Callable[[str], object]
"""``subscribe(uri, on_update)``: called with the URI each time the server says that resource
changed (``notifications/resources/updated``). It runs in a thread of the client's own, one
update at a time, in the order they came; it may call the client, e.g. ``read_resource(uri)``
(a callback still running makes ``stop()`` wait, up to 5 s). Its exceptions are logged."""

CompletionCallback = Callable[[str], object]
"""``elicitation_complete=``: called with the ``elicitationId`` of a URL elicitation the server
reports complete (``notifications/elicitation/complete``), only for one this client was asked
for, once; e.g. to retry a call that raised ``UrlElicitationRequired``. It runs in a driver
thread and should return quickly; its exceptions are logged. Without one, the completion is
logged at INFO."""


def _answer(handler: Handler, action: HandleServerRequest) -> ServerRequestAnswered:
    """Run the application's handler; its failure is the server's -32603, never ours."""
    now = time.monotonic
    try:
        result = handler(action.params)
    except Exception as exc:
        _log.exception("the %s handler raised; the server gets an error", action.method)
        return ServerRequestAnswered(now=now(), handle=action.handle, failed=type(exc).__name__)
    return ServerRequestAnswered(now=now(), handle=action.handle, result=dict(result))


def _run(later: list[Callable[[], None]]) -> None:
    for perform in later:
        perform()


def _run_updates(updates: queue.SimpleQueue[tuple[UpdateCallback, str] | None]) -> None:
    """The updates thread: run each subscriber's callback in turn until stop() (or the reaper
    of a client nobody stopped) puts None; an exception is logged. It holds the queue, not
    the client."""
    while (update := updates.get()) is not None:
        on_update, uri = update
        try:
            on_update(uri)
        except Exception:
            _log.exception("the on_update callback of a subscription raised")


def _weakly(method: Callable[P, None]) -> Callable[P, None]:
    """``method`` of a client, called through a weak reference: whoever holds the result (a
    shared thread, an HTTP worker) does not keep the client alive; once the client is
    collected, a call does nothing."""
    ref = weakref.WeakMethod(method)

    def call(*args: P.args, **kwargs: P.kwargs) -> None:
        bound = ref()
        if bound is not None:
            bound(*args, **kwargs)

    return call


# --- clients nobody stopped ------------------------------------------------------------------

# Every client started in this process and not stopped yet, for _at_exit.
_RUNNING: weakref.WeakSet[Client] = weakref.WeakSet()
# What clients collected without stop() held, until _reap is done with it (added by their
# finalizer: set.add takes no lock of ours), and the lock under which a _reap claims it.
_REAPING: set[_Owned] = set()
_REAP_LOCK = threading.Lock()


def _forgotten(own: _Owned) -> None:
    """The ``weakref.finalize`` of a started client collected without ``stop()``. It runs at
    gc time, in whatever thread dropped the last reference, maybe one holding a lock of this
    driver: it takes no lock and never blocks. It warns as an unclosed file does and hands
    the shutdown of the servers to the shared timer thread (``SharedLoop.hand_over``), which
    starts ``_reap`` in a thread of its own. In a forked child it does nothing: the servers
    and loops are the parent's."""
    if not own.origin.here():
        return
    timer = own.timer
    if timer is not None:
        timer.cancel()  # an attribute set: no lock
    if own.timers is not None:  # None only once a stop() got as far as its teardown
        _REAPING.add(own)
        own.timers.hand_over(partial(_start_reaper, own))
    # Past weakref.finalize, the warning points where the last reference was dropped.
    _warn_unclosed(own.name, "it was garbage-collected", stacklevel=4)


def _warn_unclosed(name: str, when: str, stacklevel: int) -> None:
    """The ``ResourceWarning`` of a client stopped without ``stop()``, as an unclosed file
    gets (shown by ``python -X dev``, ``-W default`` and pytest)."""
    message = (
        f"unclosed client {name!r}: it was never stopped and {when}; its server is stopped "
        "now (use 'with Client(...)' or call stop())"
    )
    try:
        warnings.warn(message, ResourceWarning, stacklevel=stacklevel)
    except Exception:  # warnings made errors (-W error): nothing else may fail for it
        _log.error("%s", message)


def _start_reaper(own: _Owned) -> None:
    """In the shared timer thread: ``_reap`` may wait for seconds, so it runs in a thread of
    its own. Not a daemon: the interpreter waits for it at exit (and ``_at_exit`` reaps what
    no reaper claimed yet)."""
    threading.Thread(target=_reap, args=([own],), name=f"mcp-sync-reaper-{own.name}").start()


def _reap(owns: list[_Owned]) -> None:
    """Stop the servers of collected clients as their ``stop()`` would have, all at once and
    without the session (it went with the client): the stdio shutdown sequence of MCP
    2025-11-25 basic/lifecycle §Shutdown (close stdin; SIGTERM if the server has not exited
    within ``shutdown_grace``; SIGKILL if it still has not within another), then the process
    group's SIGKILL of stop()'s safety net; wait for each to be reaped, and give back what
    else the client held (shared loops, HTTP connections, its browser step, updates thread
    and recording). What another ``_reap`` claimed already is left to it."""
    with _REAP_LOCK:
        mine = [own for own in owns if not own.claimed]
        for own in mine:
            own.claimed = True
    try:
        slots = [(own, slot) for own in mine for slot in [*own.old_slots, *own.slots.values()]]
        begun = time.monotonic()
        for _, slot in slots:
            if slot.close_stdin():
                slot.flush()
        for own, slot in slots:
            slot.join(begun + own.grace)
        for _, slot in slots:
            if not slot.finished:
                slot.signal("SIGTERM")
        for own, slot in slots:
            slot.join(begun + 2 * own.grace)
        for _, slot in slots:
            slot.kill()
        for own, slot in slots:
            slot.join(begun + 3 * own.grace)
        deadline = time.monotonic() + _JOIN_BOUND
        for own in mine:
            timers, own.timers = own.timers, None
            io, own.io = own.io, None
            for loop in (timers, io):
                if loop is not None:
                    loop.release(deadline)
            own.http.close(deadline)
            own.browser.close()
            own.updates.put(None)
            if own.record_file is not None:
                own.record_file.close()
    finally:
        for own in mine:
            _REAPING.discard(own)
            own.reaped.set()


@atexit.register
def _at_exit() -> None:
    """At interpreter exit (after the non-daemon threads ended, while the shared ones still
    run): stop every client of this process still running, as ``stop()`` does, all at once
    (Close is fed to each, then each is waited for), each with a ``ResourceWarning``, and
    finish stopping the servers of the
    clients collected without stop(). A client inherited from the parent by a forked child is
    left alone: its session is the parent's."""
    running = [client for client in list(_RUNNING) if client._origin_here()]
    closing: list[tuple[Client, _Waiter | None]] = []
    for client in running:
        _warn_unclosed(client.name, "the interpreter is exiting", stacklevel=2)
        try:
            closing.append((client, client._close()))
        except Exception:
            _log.exception("stopping client %r at exit failed", client.name)
    forgotten = [own for own in _REAPING.copy() if own.origin.here()]
    _reap(forgotten)  # those a reaper thread did not claim yet
    for own in forgotten:  # and those it did
        own.reaped.wait(3 * own.grace + _JOIN_BOUND)
    for client, waiter in closing:
        try:
            if waiter is not None:
                client._closed(waiter)
        except Exception:
            _log.exception("stopping client %r at exit failed", client.name)
