# Written twice, by hand (mcp_asyncio/_session.py is its twin): this is where the drivers differ.
# Here threads (callers, the shared I/O and timer threads, HTTP workers, handler threads) feed
# the machine under one lock and a caller blocks on a threading.Event, reading its own answer
# when it waits alone; there, one task group on the event loop does the work and a caller
# awaits. What is the same, Client (_client.py), is generated from the anyio driver's: see
# scripts/unasync.py.
"""The blocking driver's session: threads and pipes around one ``SessionMachine``; no event
loop. ``Client`` (``_client.py``) is what the application holds; ``Session`` is what runs.

Every thread (callers, readers, writers, the timer) enters the machine through ``feed``,
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
The shared threads, the HTTP workers and the updates thread hold a session only through weak
references (``_weakly``), and only its ``Client`` holds it, so a client whose owner dropped
every reference without calling ``stop()`` is collected like any object, its session with it.
What it owns outside itself (server processes, shared loops, connections) is in ``_Owned``,
which holds no reference to either: the client's ``weakref.finalize`` (``_forgotten``) warns
(``ResourceWarning``, as an unclosed file does) and hands the servers' shutdown to the shared
timer thread, which runs it in a thread of its own (``_reap``): close stdin, SIGTERM, SIGKILL
of the process group, each after ``shutdown_grace``, as stop() does (MCP 2025-11-25
basic/lifecycle §Shutdown, stdio). At interpreter exit (``atexit``) every client still
running is stopped by its ``stop()``, all at once, with the same warning. A forked child does
neither for the clients it inherited: their servers are the parent's.
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
from typing import IO, TYPE_CHECKING, Any, Concatenate, ParamSpec

from _mcp_io.client import ProgressCallback, Reservations, report, settle
from _mcp_io.device import DeviceCode, show_device_code
from _mcp_io.fork import Origin
from _mcp_io.oauth import (
    BrowserStep,
    TokenKeeper,
    assertion_answer,
    assertion_failed,
    check_assertion_source,
    obtain_assertion,
    sign_assertion,
)
from mcp_core import (
    HANDLED_REQUESTS,
    AbortHttp,
    Action,
    Authorize,
    CancelCall,
    Close,
    CloseStdin,
    Connect,
    ElicitationComplete,
    Event,
    HandleServerRequest,
    ListChanged,
    Log,
    NotReady,
    ObtainAssertion,
    PrepareAuthorization,
    ProgressUpdate,
    Reply,
    ResourceUpdated,
    SaveAuthorization,
    ServerRequestAnswered,
    SessionMachine,
    SettleReservation,
    ShowDeviceCode,
    SignalProcess,
    SignAssertion,
    Spawn,
    Spec,
    StartHttp,
    Status,
    TimerFired,
    TokenStore,
    UsedAfterFork,
    WriteStdin,
)

from ._http import HttpExecutor, HttpRequest
from ._process import ProcessSlot, SharedLoop, Timer

if TYPE_CHECKING:
    from _mcp_io.http import Network
    from mcp_core.replay import Recorder

__all__ = [
    "AssertionCallback",
    "AuthorizeCallback",
    "CompletionCallback",
    "DeviceCodeCallback",
    "Handler",
    "ListChangedCallback",
    "Session",
    "UpdateCallback",
]

# The name it logged under when the session was part of _client.py: kept for log filters.
_log = logging.getLogger("mcp_sync._client")

# What a call to a client never started raises with NotReady('new').
_NOT_STARTED = "the client was not started: call start() or use it in a with block first"

# Protocol eras learned per server, shared by every client of this driver.
_ERA_CACHE: dict[str, str] = {}
# Callers wait in slices so that KeyboardInterrupt reaches the main thread promptly everywhere.
_WAIT_SLICE = 0.1
# How long stop() waits for threads after the machine closed and every child was killed.
_JOIN_BOUND = 5.0

P = ParamSpec("P")

# What the updates thread runs: a callback, its argument (a URI, a list's kind), its name.
_Update = tuple[Callable[[str], object], str, str]


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
        http: HttpExecutor | None,
        browser: BrowserStep,
        updates: queue.SimpleQueue[_Update | None],
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
        # Made when the client is forgotten (an Event holds about 1.2 KiB, and most clients
        # are stopped): set once a _reap is done with it.
        self.reaped: threading.Event | None = None


class Session:
    """What a ``Client`` runs: its machine, its waiters, its processes, its threads.

    Refers to no ``Client``, and the threads that call it back hold it only weakly, so that a
    client its owner dropped without ``stop()`` is collected (the module docstring).
    """

    __slots__ = (
        "__weakref__", "_armed", "_assertion", "_browser", "_down", "_elicitation_complete",
        "_finalizer", "_handlers", "_http", "_last_now", "_network", "_old_slots",
        "_on_device_code", "_on_list_changed", "_origin", "_own", "_peak", "_phase",
        "_record_path", "_recorder", "_slots", "_solo", "_spec", "_stopped", "_tickets", "_tokens",
        "_updater", "_updates", "_waiters", "_weak_feed", "_weak_on_timer", "lock", "machine",
        "on_update", "reservations",
    )  # fmt: skip

    def __init__(
        self,
        spec: Spec,
        network: Network,
        *,
        record: str | os.PathLike[str] | None,
        handlers: dict[str, Handler],
        elicitation_modes: Iterable[str],
        sampling_tools: bool,
        accept_tasks: bool,
        elicitation_complete: CompletionCallback | None,
        authorize: AuthorizeCallback | None,
        assertion: AssertionCallback | None,
        on_device_code: DeviceCodeCallback | None,
        token_store: TokenStore | None,
        interactive: bool,
        on_list_changed: ListChangedCallback | None,
    ) -> None:
        self._spec = spec
        self._network = network
        self._record_path = record
        self._elicitation_complete = elicitation_complete
        self._on_list_changed = on_list_changed
        self._handlers = handlers
        check_assertion_source(spec, assertion)  # InvalidSpec: no source for the JWT, or two
        self._assertion = assertion
        self._on_device_code = on_device_code
        self._tokens = TokenKeeper(token_store, time.monotonic, _log)
        self.machine = SessionMachine(
            spec,
            era_cache=_ERA_CACHE,
            handlers=[HANDLED_REQUESTS[method] for method in handlers],
            elicitation_modes=elicitation_modes,
            sampling_tools=sampling_tools,
            list_changed=on_list_changed is not None,
            accept_tasks=accept_tasks,
            **self._tokens.machine_keywords(spec, interactive=interactive),
        )
        self._browser = BrowserStep(spec, authorize, time.monotonic)
        # Guards the machine and everything below, on_update too (Client.subscribe).
        self.lock = threading.Lock()
        # What the shared threads, HTTP workers and handler threads call back: weakly, so that
        # none of them keeps a client nobody stopped alive (see the module docstring).
        weak = weakref.ref(self)
        self._weak_feed = _weakly(weak, Session.feed)
        self._weak_on_timer = _weakly(weak, Session._on_timer)
        self._origin: Origin | None = None  # the process that started it
        self._finalizer: weakref.finalize[[_Owned], object] | None = None  # start() to stop()
        self._armed: float | None = None  # the deadline the timer is armed for
        self._phase = "new"  # -> "running" -> "stopping" -> "stopped"; driver bookkeeping only
        self._last_now = 0.0
        self._tickets = itertools.count(1)
        self._waiters: dict[int, _Waiter] = {}
        self.on_update: dict[str, UpdateCallback] = {}  # subscribed URI -> its callback
        # Updates and list changes to deliver, in order, by one thread started at the first one:
        # a callback may call the client (read_resource, list_tools), which a reader thread
        # must not do.
        self._updates: queue.SimpleQueue[_Update | None] = queue.SimpleQueue()
        self._updater: threading.Thread | None = None
        # The most callers waiting at once since none last waited, and whether the busy spell
        # before had a single one. Only then does a caller waiting alone use the pipes itself:
        # threads calling in a loop all find themselves alone at the start of each round of
        # answers, and taking the pipes over then cost about 20% at 256 in flight (measured).
        self._peak = 0
        self._solo = True
        self.reservations = Reservations()
        self._recorder: Recorder | None = None
        # Its HTTP requests' threads and connections: none for a server on stdio (its locks
        # and conditions would be about 3 KiB of every session).
        self._http = (
            HttpExecutor(
                self._weak_feed,
                time.monotonic,
                pool_size=self._spec.pool_size,
                network=self._network,
                feed_many=_weakly(weak, Session._feed_many),
            )
            if spec.transport == "http"
            else None
        )
        self._own = _Owned(
            self._spec.name, self._spec.shutdown_grace, self._http, self._browser, self._updates
        )
        self._slots = self._own.slots
        self._old_slots = self._own.old_slots
        self._down = False  # stop() has torn everything down
        # What a second stop() waits on while the first tears down: made only then (an Event
        # holds about 1.2 KiB).
        self._stopped: threading.Event | None = None

    # --- lifecycle -----------------------------------------------------------------------

    def start(self, owner: object) -> None:
        """Start connecting in the background and return at once; nothing if it runs
        already. Once started, ``owner`` (the ``Client``) collected while the session runs
        has its servers stopped (``_forgotten``: the session never refers to it)."""
        self.check()
        with self.lock:
            if self._phase != "new":
                if self._phase == "running":
                    return
                raise NotReady("closed")
            own = self._own
            if self._record_path is not None:  # an OSError here leaves the client unstarted
                record_file = open(self._record_path, "w", encoding="utf-8")  # noqa: SIM115
                own.record_file = record_file
                from mcp_core.replay import Recorder  # imported only by a session that records

                self._recorder = Recorder(
                    self._spec,
                    record_file.write,
                    handlers=self.machine.handlers,
                    elicitation_modes=self.machine.elicitation_modes,
                    sampling_tools=self.machine.sampling_tools,
                    accept_tasks=self.machine.accept_tasks,
                    known_era=self.machine.known_era,
                    list_changed=self.machine.list_changed,
                )
            self._phase = "running"
            self._origin = own.origin = Origin()
            own.timers = SharedLoop.acquire("timer")
            # On the client, called with what it owns outside itself, not with self (this
            # session is the client's: the finalizer must keep neither alive). Not at exit:
            # _at_exit stops the clients still running then, with stop().
            self._finalizer = weakref.finalize(owner, _forgotten, own)
            self._finalizer.atexit = False
            _RUNNING.add(self)
            # Connect is handled before the lock is released, so a concurrent stop() always
            # feeds Close after it.
            now = time.monotonic()  # and the time of day, for the tasks the server asks for
            later = self._handle(Connect(now=now, wall_offset=time.time() - now))
        _run(later)

    def stop(self) -> None:
        """``Client.stop()``: close the session and wait until every server process is gone;
        in a forked child, return at once, touching nothing."""
        if not self.origin_here():
            return
        closing = self._close()
        if closing is None:
            with self.lock:
                if self._down:
                    return
                if self._stopped is None:
                    self._stopped = threading.Event()
                stopped = self._stopped
            while not stopped.wait(_WAIT_SLICE):
                pass  # another thread's stop() is still shutting down
            return
        self._closed(closing)

    def _close(self) -> _Waiter | None:
        """The first half of ``stop()``: feed Close and return its waiter; None if the client
        was not running (never started, or another thread's stop() came first)."""
        with self.lock:
            state = self._phase
            if state == "new":
                self._phase = "stopped"
                # The machine too, so that its status says closed, not new (its answer:
                # nothing to stop, and nobody waits for it).
                self.machine.handle(Close(now=time.monotonic(), ticket=next(self._tickets)))
                self._down = True  # nobody waits: nothing ran
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

    # --- the loop ------------------------------------------------------------------------

    def call(
        self, make: Callable[[int], Event], progress: ProgressCallback | None = None
    ) -> object:
        """Submit the event built for a new ticket and wait for its Reply; on any interruption
        (KeyboardInterrupt included) feed CancelCall(ticket) and re-raise."""
        self.check()
        waiter = self._submit(make, progress)
        try:
            if waiter.http is not None:
                assert self._http is not None
                self._http.run(waiter.http, waiter.done)  # its own request, in this thread
            if waiter.reader is not None:
                # (read without the lock: a caller added before this reply was popped shows)
                waiter.reader.read_until(waiter.done, lambda: bool(self._waiters))
            while not waiter.done.wait(_WAIT_SLICE):
                pass
        except BaseException:
            later: list[Callable[[], None]] = []
            with self.lock:
                if self._waiters.pop(waiter.ticket, None) is not None:
                    # Gave up before the answer: the machine drops the work, sends no reply.
                    later = self._handle(CancelCall(now=time.monotonic(), ticket=waiter.ticket))
            if self._http is not None:  # after the cancel: see HttpExecutor.release
                self._http.release(waiter.http)
            _run(later)
            raise
        assert waiter.reply is not None
        if waiter.reply.error is not None:
            raise waiter.reply.error
        return waiter.reply.value

    def origin_here(self) -> bool:
        """True unless this is a forked child of the process that started the client."""
        origin = self._origin
        return origin is None or origin.here()

    def check(self) -> None:
        """``UsedAfterFork`` in a forked child of the process that started this client, before
        anything is touched (a lock copied from the parent may be held for ever)."""
        origin = self._origin
        if origin is not None and not origin.here():
            raise UsedAfterFork(self._spec.name, origin.pid, os.getpid())

    def status(self) -> Status:
        """``Client.status()``: the machine's status now, never before the last event's."""
        self.check()
        with self.lock:
            return self.machine.status(max(self._last_now, time.monotonic()))

    def _submit(
        self,
        make: Callable[[int], Event],
        progress: ProgressCallback | None = None,
        *,
        closing: bool = False,
    ) -> _Waiter:
        """Register a waiter and feed its event. Raises ``NotReady`` unless running (stopping,
        for Close): ``'new'`` before ``start()``, else ``'closed'``; ``ValueError`` for a bad
        argument; nothing is fed then."""
        with self.lock:
            if self._phase != ("stopping" if closing else "running"):
                if self._phase == "new":
                    raise NotReady("new", _NOT_STARTED)
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
            if self._http is not None:  # will not be run here: a worker runs it
                self._http.release(waiter.http)
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
            self._recorder.record(event, secret=self.machine.is_secret(event))
        later: list[Callable[[], None]] = []
        for action in self.machine.handle(event):
            self._perform(action, caller, later)
        deadline = self.machine.next_deadline()
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
                self.reservations.take(action.ticket)  # never settled: not ours
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
                assert self._http is not None  # a session over HTTP
                if action.dpop is not None:  # RFC 9449: the proof is signed right before sending
                    action = self._tokens.dpop.sign(action)
                if caller is not None and caller.http is None:
                    caller.http = self._http.start(action, inline=True)  # see _http.py
                else:
                    self._http.start(action)  # starts a thread; never blocks
            case AbortHttp():
                assert self._http is not None
                self._http.abort(action.stream)  # shuts its socket down; never blocks
            case SettleReservation():
                reservation = self.reservations.take(action.ticket)
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
                on_update = self.on_update.get(action.uri)
                if on_update is not None:
                    self._update((on_update, action.uri, "on_update callback of a subscription"))
            case ListChanged():
                if self._on_list_changed is not None:
                    self._update((self._on_list_changed, action.kind, "on_list_changed callback"))
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
            case ObtainAssertion():
                obtain: Callable[[], Event] = (
                    partial(_call_assertion, self._assertion)
                    if self._assertion is not None
                    else partial(obtain_assertion, action, self._spec, time.monotonic)
                )
                later.append(partial(self._feed_result, obtain))
            case ShowDeviceCode():
                later.append(partial(self._show_device_code, action))
            case SaveAuthorization():
                later.append(self._tokens.take(action))
            case _:
                raise TypeError(f"unknown action {action!r}")

    def _update(self, update: _Update) -> None:
        """With the lock held: have the updates thread run a callback, outside the lock."""
        self._updates.put(update)
        if self._updater is None:
            self._updater = threading.Thread(
                target=_run_updates,
                args=(self._updates,),
                name=f"mcp-{self._spec.name}-updates",
                daemon=True,
            )
            self._updater.start()

    def _alone(self) -> bool:
        """With the lock held: at most one caller waits, as in the busy spell before."""
        return len(self._waiters) <= 1 and self._solo

    def _completed(self, elicitation_id: str) -> None:
        """Tell the application a URL elicitation is complete (in the thread that read the
        notification, outside the lock); without a callback, log it."""
        if self._elicitation_complete is None:
            _log.info("server %r completed URL elicitation %r", self._spec.name, elicitation_id)
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

        threading.Thread(target=run, name=f"mcp-{self._spec.name}-handler", daemon=True).start()

    def _authorize_in_thread(self, url: str, state: str) -> None:
        # The user may take minutes: a thread of its own; stop() closes the listener it
        # waits on (a callback that blocks is left to finish: its answer is dropped then).
        feed, browser = self._weak_feed, self._browser

        def run() -> None:
            feed(browser.run(url, state))

        threading.Thread(target=run, name=f"mcp-{self._spec.name}-authorize", daemon=True).start()

    def _show_device_code(self, action: ShowDeviceCode) -> None:
        """``ShowDeviceCode``: the ``on_device_code=`` callback, else the instructions on
        stderr; a callback that raises ends the login."""
        failed = show_device_code(action, self._on_device_code, self._spec.name, time.monotonic)
        if failed is not None:
            self.feed(failed)

    def _feed_result(self, make: Callable[[], Event]) -> None:
        self.feed(make())

    def feed(self, event: Event) -> None:
        """Feed ``event`` from any thread: a process's (the machine drops those of a process it
        replaced, by generation), an HTTP request's (and those of a stream it aborted), a
        handler's answer."""
        with self.lock:
            later = self._handle(event)
        _run(later)

    def _feed_many(self, events: Sequence[Event]) -> None:
        """Feed ``events`` in order under one hold of the lock (what one HTTP read brought)."""
        later: list[Callable[[], None]] = []
        with self.lock:
            for event in events:
                later += self._handle(event)
        _run(later)

    def _on_timer(self) -> None:
        """In the shared timer thread: the armed deadline passed. Feed ``TimerFired`` if the
        machine's deadline is due (the feed re-arms for the next one), else re-arm for it."""
        with self.lock:
            self._own.timer = self._armed = None
            deadline = self.machine.next_deadline()
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
        with self.lock:
            self._phase = "stopped"
            if own.timer is not None:
                own.timer.cancel()
            timers, own.timers = own.timers, None
        if timers is not None:  # the last client's release ends the shared thread
            timers.release(deadline)
        with self.lock:
            slots = [*self._old_slots, *self._slots.values()]
            io, own.io = own.io, None
        for slot in slots:
            slot.kill()
            slot.join(deadline)
        if io is not None:
            io.release(deadline)
        if self._http is not None:  # the machine has aborted its requests already
            self._http.close(deadline)
        self._browser.close()  # a browser step still waiting ends within 0.1 s
        if self._updater is not None:  # it runs the updates already queued, then ends
            self._updates.put(None)
            if self._updater is not threading.current_thread():  # stop() from a callback
                self._updater.join(max(0.0, deadline - time.monotonic()))
        with self.lock:
            self._recorder = None
            if own.record_file is not None:
                own.record_file.close()
            self._down, stopped = True, self._stopped
        if stopped is not None:
            stopped.set()


Handler = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""Answers one kind of server request, given its params: ``elicitation=`` gets
``elicitation/create`` (``message``, ``requestedSchema``) and returns an ElicitResult such as
``{"action": "accept", "content": {...}}``; ``sampling=`` gets ``sampling/createMessage`` and
returns a CreateMessageResult (with ``sampling_tools=True`` it may be given ``tools`` and
answer with ``tool_use`` blocks; ``mcp_core.CreateMessageRequest.from_params(params)`` is the
typed view of its params, docs/server-requests.md); ``roots=`` gets ``roots/list`` and
returns ``{"roots": [...]}``.
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

AssertionCallback = Callable[[], str]
"""``assertion=``: the workload's identity JWT for ``oauth={"grant": "jwt_bearer"}`` (SEP-1933),
in place of an ``assertion_file``: called for each token request (the platform rotates the
JWT: fetch a current one, e.g. from a cloud metadata endpoint or a SPIFFE Workload API), it
returns the JWT as a string. It runs in the calling thread, briefly blocking it; an exception,
or an answer that is not a non-empty string, ends the flow (the error names its class only).
With ``oauth={"grant": "enterprise"}`` (enterprise-managed authorization, SEP-990) it returns
the user's current ID token from the enterprise sign-on instead, in place of an
``id_token_file``, called for each exchange at the identity provider."""

DeviceCodeCallback = Callable[[DeviceCode], object]
"""``on_device_code=``: shows the user how to approve a device login (``oauth={"grant":
"device_code", ...}``, RFC 8628): it gets a ``DeviceCode`` (``user_code``,
``verification_uri``, ``verification_uri_complete``, ``expires_in``, ``server``) and returns
at once; the client polls the authorization server meanwhile and goes on by itself once the
user approved. Without it the instructions go to stderr. It runs in the thread that fed the
machine; an exception ends the login (``AuthorizationRequired``, naming its class only). Keep
the user code out of logs."""


def _call_assertion(callback: AssertionCallback) -> Event:
    """``ObtainAssertion`` with the ``assertion=`` callback."""
    try:
        answer: object = callback()
    except Exception as exc:
        return assertion_failed(exc, time.monotonic)
    return assertion_answer(answer, time.monotonic)


UpdateCallback = Callable[[str], object]
"""``subscribe(uri, on_update)``: called with the URI each time the server says that resource
changed (``notifications/resources/updated``). It runs in a thread of the client's own, one
update at a time, in the order they came; it may call the client, e.g. ``read_resource(uri)``
(a callback still running makes ``stop()`` wait, up to 5 s). Its exceptions are logged."""

ListChangedCallback = Callable[[str], object]
"""``on_list_changed=``: called with ``"tools"``, ``"prompts"`` or ``"resources"`` each time the
server says that list changed (``notifications/<kind>/list_changed``; ``"resources"`` covers the
resource templates too), after the client dropped its cache of it: a ``list_tools()`` (or
``list_prompts()``, ...) from the callback asks the server. It runs in the client's updates
thread, with the ``on_update`` callbacks, one at a time, in the order they came (a callback
still running makes ``stop()`` wait, up to 5 s); its exceptions are logged. In the 2026-07-28
era the server sends changes only on a ``subscriptions/listen`` stream that asks for them,
which the client keeps open while the session is ready (docs/resources.md)."""

CompletionCallback = Callable[[str], object]
"""``elicitation_complete=``: called with the ``elicitationId`` of a URL elicitation the server
reports complete (``notifications/elicitation/complete``), only for one this client was asked
for, once; e.g. to retry a call that raised ``UrlElicitationRequired``. It runs in a driver
thread and should return quickly; its exceptions are logged. Without one, the completion is
logged at INFO."""


def _answer(handler: Handler, action: HandleServerRequest) -> ServerRequestAnswered:
    """Run the application's handler; its failure, or an answer that is no mapping, is the
    server's -32603, never ours."""
    now = time.monotonic
    try:
        result = dict(handler(action.params))
        return ServerRequestAnswered(now=now(), handle=action.handle, result=result)
    except Exception as exc:
        _log.exception("the %s handler raised; the server gets an error", action.method)
        return ServerRequestAnswered(now=now(), handle=action.handle, failed=type(exc).__name__)


def _run(later: list[Callable[[], None]]) -> None:
    for perform in later:
        perform()


def _run_updates(updates: queue.SimpleQueue[_Update | None]) -> None:
    """The updates thread: run each subscriber's callback (and ``on_list_changed``) in turn
    until stop() (or the reaper of a client nobody stopped) puts None; an exception is logged.
    It holds the queue, not the client."""
    while (update := updates.get()) is not None:
        callback, value, name = update
        try:
            callback(value)
        except Exception:
            _log.exception("the %s raised", name)


def _weakly(
    ref: weakref.ref[Session], method: Callable[Concatenate[Session, P], None]
) -> Callable[P, None]:
    """``method`` of the session ``ref`` refers to, called through that weak reference: whoever
    holds the result (a shared thread, an HTTP worker) does not keep the client alive; once
    the client is collected, a call does nothing. (One reference for all of a session's
    callbacks: a ``WeakMethod`` each cost about 400 bytes.)"""

    def call(*args: P.args, **kwargs: P.kwargs) -> None:
        session = ref()
        if session is not None:
            method(session, *args, **kwargs)

    return call


# --- clients nobody stopped ------------------------------------------------------------------

# The session of every client started in this process and not stopped yet, for _at_exit.
_RUNNING: weakref.WeakSet[Session] = weakref.WeakSet()
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
        own.reaped = threading.Event()
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
            if own.http is not None:
                own.http.close(deadline)
            own.browser.close()
            own.updates.put(None)
            if own.record_file is not None:
                own.record_file.close()
    finally:
        for own in mine:
            _REAPING.discard(own)
            if own.reaped is not None:  # every client _reap gets was forgotten first
                own.reaped.set()


@atexit.register
def _at_exit() -> None:
    """At interpreter exit (after the non-daemon threads ended, while the shared ones still
    run): stop every client of this process still running, as ``stop()`` does, all at once
    (Close is fed to each, then each is waited for), each with a ``ResourceWarning``, and
    finish stopping the servers of the clients collected without stop(). A client inherited
    from the parent by a forked child is left alone: its session is the parent's."""
    running = [session for session in list(_RUNNING) if session.origin_here()]
    closing: list[tuple[Session, _Waiter | None]] = []
    for session in running:
        name = session.machine.spec.name
        _warn_unclosed(name, "the interpreter is exiting", stacklevel=2)
        try:
            closing.append((session, session._close()))
        except Exception:
            _log.exception("stopping client %r at exit failed", name)
    forgotten = [own for own in _REAPING.copy() if own.origin.here()]
    _reap(forgotten)  # those a reaper thread did not claim yet
    for own in forgotten:  # and those it did
        if own.reaped is not None:
            own.reaped.wait(3 * own.grace + _JOIN_BOUND)
    for session, waiter in closing:
        try:
            if waiter is not None:
                session._closed(waiter)
        except Exception:
            _log.exception("stopping client %r at exit failed", session.machine.spec.name)
