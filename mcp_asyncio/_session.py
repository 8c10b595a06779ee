# Written twice, by hand (mcp_sync/_session.py is its twin): this is where the drivers differ.
# Here one task group, hosted in a task of its own, runs the session's background work on the
# event loop, a caller awaits a future (asyncio) or parks its task (trio), and the timer is a
# handle of the loop; there, threads feed the machine under a lock and callers block on
# events. What is the same, Client (_client.py), is written once: see scripts/unasync.py.
"""The anyio driver's session: one loop that feeds the ``SessionMachine`` and performs its
actions.

``Client`` (``_client.py``) is what the application holds; ``Session`` is what runs: the
machine, the waiters, the processes and every background task. Nothing the session holds
refers back to its ``Client``, so a client that the application drops without stopping it can
be noticed.

Everything enters through ``feed(event)``, which is synchronous: it records the event, calls
``machine.handle`` and performs each action without awaiting. Work that needs awaiting runs in
tasks of the session's task group: one ``ProcessSlot.run`` per spawned process (the pipes are
read by callbacks, see ``_process``). The one timer is re-armed to ``machine.next_deadline()``
when a feed moves it earlier: on asyncio a handle in the event loop's own timer heap (shared
by every client on the loop, no task), on trio a timer task. Callers wait on one ``_Waiter``
per ticket (a bare future on asyncio). There is no protocol decision here.

The host. The task group lives in a task of its own from ``start()`` until the shutdown has
ended: on asyncio a task of the loop (``loop.create_task``), on trio a system task
(``trio.lowlevel.spawn_system_task``). It used to be entered in ``start()`` and left in
``stop()``, inside the caller's own task, so a client that was never stopped left a task group
open in a task that had returned. trio cannot end such a run: a nursery outlives the task that
opened it, the host task in it (shielded, so that a cancelled caller cannot cut the shutdown in
half) is never cancelled, and when ``trio.run``'s main task returned, trio's own shutdown
found a task it did not expect and raised ``TrioInternalError``, with the server left running
after the run. Now:

- trio: system tasks are cancelled when the main task returns (trio's documentation of
  ``spawn_system_task``). The host stays shielded (its shutdown needs the timer and the pipes),
  so a second system task, the watcher, is the one cancelled: if the client was not stopped it
  warns (``ResourceWarning``, as an unclosed file does) and has the host shut the session down
  as ``stop()`` would: stdin closed, SIGTERM, SIGKILL on the machine's deadlines, reaped.
- asyncio: ``asyncio.run`` cancels every task still pending when the main coroutine returns and
  runs the loop until they have finished (asyncio's documentation of ``Runner.close``). The
  host is cancelled with them (anyio's shield holds off anyio's cancellation, not a task's
  own ``cancel()``), and so is each process's task, which kills its process group and reaps
  it; the host warns.
- a ``Client`` garbage-collected while running (``weakref.finalize``): the same warning, and
  the host is asked, through the loop (``call_soon_threadsafe``, trio's ``run_sync_soon``), to
  shut the session down; if the loop no longer runs, the server's process group is killed and
  reaped there and then.

The caller's edge. Each public call first compares the running loop with the client's
(``WrongEventLoop``: asyncio's own futures and handles would fail in another loop) and the
process with the one the client started in (``_mcp_io.fork``: ``UsedAfterFork``, nothing
touched). A caller that gives up withdraws, with its own ticket, every other waiter that has
given up in the same moment (one cancel scope over many calls), so that the machine frees their
slots at once and promotes none of their queued calls into a freed slot.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import itertools
import logging
import math
import os
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from _mcp_io.client import ProgressCallback, Reservations, report, settle
from _mcp_io.device import DeviceCode, device_code_failed, device_code_of, show_on_stderr
from _mcp_io.fork import Origin as ProcessOrigin
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
    WrongEventLoop,
)

from ._http import HttpExecutor
from ._process import Flag, ProcessSlot, callback_context

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
_log = logging.getLogger("mcp_asyncio._client")

# What a call to a client never started raises with NotReady('new').
_NOT_STARTED = "the client was not started: await start() or use it in an async with block first"

# Verdicts of era='auto' probes, shared by every client of this driver (per server).
_ERA_CACHE: dict[str, str] = {}

# Every session whose host runs: the loop holds a task only weakly (asyncio's documentation
# of create_task), and a session the application dropped must still finish its shutdown.
_HOSTED: set[Session] = set()

# The running asyncio loop, None outside one (and on trio): one C call, no exception.
_running_loop = asyncio._get_running_loop


def _now() -> float:
    return time.monotonic()


class _Waiter:
    """A caller waiting for the ``Reply`` to its ticket.

    A reply that comes after its caller gave up is dropped by ``_perform`` (the waiter was
    removed first). ``abandoned()`` says that the caller's task has been cancelled (or
    interrupted) in its wait and will raise there, though it may not have run yet: when one
    cancel scope ends many waits at once, the first of them to run withdraws them all.
    """

    __slots__ = ("progress", "reply", "ticket")

    ticket: int
    progress: ProgressCallback | None
    reply: Reply | None  # set once answered

    def set(self, reply: Reply) -> None:
        raise NotImplementedError

    async def wait(self) -> None:
        raise NotImplementedError

    def abandoned(self) -> bool:
        raise NotImplementedError


class _FutureWaiter(_Waiter):
    """asyncio: a bare future of the client's loop (an ``anyio.Event`` per call cost a backend
    lookup, an ``asyncio.Event`` and its own future: bench/results/REPORT.md).

    ``Task.cancel()`` cancels the future its task waits on, at once (asyncio's documentation
    of ``Task.cancel``), and a cancelled anyio cancel scope calls it, in one pass, for every
    task of the scope that has started; a task that has not started yet has no waiter (it is
    cancelled at its first wait, in a later pass). So ``future.cancelled()`` tells a waiter
    whose task has not run its ``except`` block yet."""

    __slots__ = ("future",)

    def __init__(
        self, ticket: int, progress: ProgressCallback | None, future: asyncio.Future[None]
    ) -> None:
        self.ticket = ticket
        self.progress = progress
        self.reply = None
        self.future = future

    def set(self, reply: Reply) -> None:
        self.reply = reply
        if not self.future.done():  # cancelled: its caller gave up
            self.future.set_result(None)

    async def wait(self) -> None:
        await self.future

    def abandoned(self) -> bool:
        return self.future.cancelled()


@functools.cache
def _trio_waiter() -> Callable[[int, ProgressCallback | None], _Waiter]:
    """trio: the waiting task sleeps in ``trio.lowlevel.wait_task_rescheduled``, and its abort
    function, which trio calls at once for every task of a cancel scope that is cancelled
    (trio's documentation of ``wait_task_rescheduled``), marks the waiter abandoned. trio is
    imported here, once a client runs on it."""
    import trio

    lowlevel = trio.lowlevel
    reschedule, current_task = lowlevel.reschedule, lowlevel.current_task
    checkpoint, wait_task_rescheduled = lowlevel.checkpoint, lowlevel.wait_task_rescheduled
    succeeded = lowlevel.Abort.SUCCEEDED

    class _TrioWaiter(_Waiter):
        __slots__ = ("gone", "task")

        def __init__(self, ticket: int, progress: ProgressCallback | None) -> None:
            self.ticket = ticket
            self.progress = progress
            self.reply = None
            self.task: trio.lowlevel.Task | None = None
            self.gone = False

        def set(self, reply: Reply) -> None:
            self.reply = reply
            task, self.task = self.task, None
            if task is not None:
                reschedule(task)

        async def wait(self) -> None:
            if self.reply is not None:
                await checkpoint()  # answered at once (a cached list): still a checkpoint
                return
            self.task = current_task()
            await wait_task_rescheduled(self._abort)

        def _abort(self, raise_cancel: object) -> trio.lowlevel.Abort:
            self.task = None
            self.gone = True
            return succeeded

        def abandoned(self) -> bool:
            return self.gone

    return _TrioWaiter


class Session:
    """What a ``Client`` runs: its machine, its waiters, its processes, its background tasks.

    Refers to no ``Client``: the background tasks, the reader callbacks and the timer hold
    this, so that a ``Client`` the application dropped can be collected (``abandon``).
    """

    __slots__ = (
        "__weakref__", "_armed", "_assertion", "_authorize", "_browser", "_closing",
        "_deadline_changed", "_elicitation_complete", "_handlers", "_host_done", "_host_id",
        "_host_scope", "_host_task", "_http", "_loop", "_network", "_on_device_code",
        "_on_list_changed", "_origin", "_phase", "_record", "_record_file", "_recorder",
        "_running", "_slots", "_spec", "_stop_asked", "_tasks", "_tickets", "_timer",
        "_timer_context", "_timing", "_tokens", "_trio_token", "_waiter_class", "_waiters", "lock",
        "machine", "on_update", "reservations",
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
        self._record = record
        self._elicitation_complete = elicitation_complete
        self._on_list_changed = on_list_changed
        self._handlers = handlers
        check_assertion_source(spec, assertion)  # InvalidSpec: no source for the JWT, or two
        self._assertion = assertion
        self._on_device_code = on_device_code
        self._tokens = TokenKeeper(token_store, _now, _log)
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
        self._authorize = authorize
        self._browser = BrowserStep(spec, authorize, _now)
        self._phase = "new"  # -> "running" -> "stopping" -> "stopped": a client runs once
        self._origin: ProcessOrigin | None = None  # the process start() ran in
        self._loop: asyncio.AbstractEventLoop | None = None  # set on asyncio (see _Waiter)
        self._trio_token: Any = None  # trio: the run's token (abandon() reaches the run by it)
        # trio: _trio_waiter()
        self._waiter_class: Callable[[int, ProgressCallback | None], _Waiter] | None = None
        self._tasks: TaskGroup | None = None
        self._stop_asked: Flag | None = None  # set: the host shuts the session down
        self._closing: _Waiter | None = None  # Close, fed by a stop() from a task of ours
        self._host_done: Flag | None = None  # set once the host has ended
        self._record_file: IO[str] | None = None
        self._recorder: Recorder | None = None
        self._tickets = itertools.count(1)
        self._waiters: dict[int, _Waiter] = {}
        self.on_update: dict[str, UpdateCallback] = {}  # subscribed URI -> its callback
        # What the blocking twin guards on_update with: here every feed and caller runs in the
        # loop's one thread, so there is nothing to lock.
        self.lock = contextlib.nullcontext()
        self.reservations = Reservations()
        self._slots: dict[int, ProcessSlot] = {}
        self._running: set[ProcessSlot] = set()
        self._http: HttpExecutor | None = None
        self._deadline_changed: anyio.Event | None = None  # trio: wakes the timer task
        self._armed: float | None = None  # the deadline the timer is armed for
        self._timer: asyncio.TimerHandle | None = None  # asyncio: the armed timer
        self._timer_context: contextvars.Context | None = None  # asyncio: it runs in this
        self._timing = False  # asyncio: feeds can (re)arm the timer
        self._host_scope: anyio.CancelScope | None = None  # made in start(): needs a loop
        self._host_id = 0  # anyio's id of the host task
        self._host_task: asyncio.Task[None] | None = None  # asyncio: the host

    # --- the caller's edge ---------------------------------------------------------------

    def check(self) -> None:
        """Raise ``UsedAfterFork`` in a forked child, ``WrongEventLoop`` on another loop
        (while the client runs); nothing otherwise."""
        origin = self._origin
        if origin is not None and not origin.here():
            raise UsedAfterFork(self._spec.name, origin.pid, os.getpid())
        if self._phase in ("running", "stopping") and _running_loop() is not self._loop:
            raise WrongEventLoop(self._spec.name)

    def status(self) -> Status:
        """``Client.status()``: the machine's status now."""
        self.check()
        return self.machine.status(_now())

    def _refuse(self) -> None:
        """Why ``call`` cannot go on: always raises."""
        self.check()
        if self._phase == "new":
            raise NotReady("new", _NOT_STARTED)
        raise NotReady("closed")

    async def call(
        self, make: Callable[[int], Event], progress: ProgressCallback | None = None
    ) -> object:
        # One identity comparison: a client that runs, called on its own loop. In a forked
        # child asyncio has no running loop (CPython checks the pid, or resets it at fork),
        # so only trio, whose loop is None, needs the fork check too (one int comparison).
        if self._phase != "running" or _running_loop() is not self._loop:
            self._refuse()
        if self._loop is None and (self._origin is None or not self._origin.here()):
            self._refuse()
        waiter = self._submit(make, progress)
        try:
            await waiter.wait()
        except BaseException:
            if self._waiters.pop(waiter.ticket, None) is not None:
                # Gave up before the answer: the machine drops the work and sends no reply.
                self._withdraw(waiter.ticket)
            raise
        reply = waiter.reply
        assert reply is not None
        if reply.error is not None:
            raise reply.error
        return reply.value

    def _withdraw(self, ticket: int) -> None:
        """Cancel ``ticket`` and, with it, every waiter abandoned in the same moment whose task
        has not run its own ``except`` block yet (they then find nothing to cancel): one
        ``CancelCall``, so that no slot one of them frees goes to another one's queued call."""
        waiters = self._waiters
        others = tuple(other for other, waiter in waiters.items() if waiter.abandoned())
        for other in others:
            del waiters[other]
        self.feed(CancelCall(now=_now(), ticket=ticket, others=others))

    def _submit(
        self, make: Callable[[int], Event], progress: ProgressCallback | None = None
    ) -> _Waiter:
        ticket = next(self._tickets)
        event = make(ticket)  # may raise ValueError for a bad timeout; nothing registered yet
        if self._loop is not None:
            waiter: _Waiter = _FutureWaiter(ticket, progress, self._loop.create_future())
        else:
            assert self._waiter_class is not None
            waiter = self._waiter_class(ticket, progress)
        self._waiters[ticket] = waiter
        self.feed(event)
        return waiter

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self, owner: object) -> None:
        """Start the host and the session; nothing if it runs already (on this loop). Once
        started, ``owner`` (the ``Client``) collected while the session runs calls
        ``abandon`` (``weakref.finalize``: the session never refers to it)."""
        if self._phase in ("running", "stopping"):
            self.check()
            return
        if self._phase == "stopped":
            raise NotReady("closed")
        if self._record is not None:
            # Closed by the host once its task group has ended.
            file = self._record_file = open(self._record, "w", encoding="utf-8")  # noqa: SIM115
            from mcp_core.replay import Recorder  # imported only by a session that records

            self._recorder = Recorder(
                self._spec,
                file.write,
                handlers=self.machine.handlers,
                elicitation_modes=self.machine.elicitation_modes,
                sampling_tools=self.machine.sampling_tools,
                accept_tasks=self.machine.accept_tasks,
                known_era=self.machine.known_era,
                list_changed=self.machine.list_changed,
            )
        self._origin = ProcessOrigin()
        self._loop = _running_loop()
        self._host_scope = anyio.CancelScope(shield=True)
        # Awaited by the host alone; by every stop() under way.
        self._stop_asked, self._host_done = Flag(self._loop), Flag(self._loop, shared=True)
        ready = Flag(self._loop)
        context = contextvars.copy_context()  # the caller's (tracing, logging context)
        if self._loop is None:
            import trio

            _protect_background_tasks()
            self._waiter_class = _trio_waiter()
            self._deadline_changed = anyio.Event()
            self._trio_token = trio.lowlevel.current_trio_token()
            spawn = trio.lowlevel.spawn_system_task
            spawn(self._host, ready, name=f"mcp_asyncio host {self._spec.name}", context=context)
            spawn(self._watch, name=f"mcp_asyncio watch {self._spec.name}", context=context)
        else:
            self._timer_context = callback_context()
            self._timing = True
            # Held here as well as in _HOSTED: the loop holds its tasks only weakly.
            self._host_task = self._loop.create_task(self._host(ready), context=context)
        _HOSTED.add(self)
        with anyio.CancelScope(shield=True):  # a step of the loop: the host opens its group
            await ready.wait()
        self._phase = "running"
        if self._spec.url is not None:  # a stdio session holds no HTTP executor
            assert self._tasks is not None
            self._http = HttpExecutor(
                self.feed,
                _now,
                self._tasks,
                pool_size=self._spec.pool_size,
                network=self._network,
            )
        now = _now()  # and the time of day, for the tasks the server asks this client to run
        self.feed(Connect(now=now, wall_offset=time.time() - now))
        weakref.finalize(owner, self.abandon)

    async def stop(self) -> None:
        if self._phase == "new":
            self._phase = "stopped"  # never started: a client runs once, so it never will
            # The machine too, so that its status says closed, not new (its answer: nothing to
            # stop, and nobody waits for it).
            self.machine.handle(Close(now=_now(), ticket=next(self._tickets)))
            return
        origin, done = self._origin, self._host_done
        if origin is None or done is None or not origin.here() or done.is_set():
            return  # a forked child (the session is the parent's), or stopped
        if _running_loop() is not self._loop:
            raise WrongEventLoop(self._spec.name)
        assert self._stop_asked is not None
        if anyio.get_current_task().parent_id == self._host_id:
            # A task of ours (a handler, a callback) cannot wait for the shutdown, which ends
            # it. Close is fed now, before the task goes on: its calls fail at once, and what it
            # does next (a handler's answer, which the server may answer a call for) meets a
            # closing session, whichever task the loop runs first.
            if self._phase == "running" and self._closing is None:
                self._phase = "stopping"  # new calls are refused from here on
                self._closing = self._submit(lambda ticket: Close(now=_now(), ticket=ticket))
            self._stop_asked.set()
            return
        self._stop_asked.set()
        with anyio.CancelScope(shield=True):
            await done.wait()

    async def _host(self, ready: Flag) -> None:
        """The session's background tasks, in a task group of this task's own, until the
        shutdown (asked by ``stop()``, the watcher or ``abandon()``) has ended.

        Shielded, so that only the shutdown ends the group: it needs the timer and the pipes
        to run the machine's shutdown. On asyncio the loop's own end cancels this task (see the
        module docstring): the processes are then killed and reaped by their tasks.
        """
        assert self._host_scope is not None and self._stop_asked is not None
        self._host_id = anyio.get_current_task().id
        try:
            with self._host_scope:
                async with anyio.create_task_group() as tasks:
                    if self._loop is None:
                        tasks.start_soon(self._run_timer)
                    self._tasks = tasks
                    ready.set()
                    try:
                        await self._stop_asked.wait()
                    except BaseException:
                        if self._loop is not None:
                            await self._cut_short()
                        raise
                    await self._shutdown()
        except Exception:  # a bug: log it rather than lose it (on trio it would end the run)
            _log.exception("the background tasks of client %r failed", self._spec.name)
        finally:
            self._ended()

    async def _cut_short(self) -> None:
        """asyncio: the loop ends (``asyncio.run`` cancels every task at once, the process
        tasks too, which kill their process groups and reap them): no ordinary shutdown can
        run. Warn if nobody stopped the client, close what is left."""
        self._forgotten("its event loop ended")
        if self._phase == "running":  # the machine closes the session (and says so)
            self.feed(Close(now=_now(), ticket=next(self._tickets)))
        self._phase = "stopped"
        self._disarm()
        for slot in list(self._running):
            slot.kill()  # its own task reaps it
        if self._http is not None:
            await self._http.aclose()
        self._browser.close()

    async def _watch(self) -> None:
        """trio: a system task, cancelled when the run's main task returns (the host is
        shielded): a client still running then was forgotten; the host shuts it down."""
        assert self._host_done is not None and self._stop_asked is not None
        try:
            await self._host_done.wait()
        finally:
            if self._phase == "running":
                self._stop_asked.set()
                self._forgotten("its trio run ended")

    def _forgotten(self, when: str) -> None:
        """Warn that the session is being stopped without ``stop()``, as an unclosed file
        is: a ``ResourceWarning`` (shown with ``python -X dev`` or ``-W default``, and by
        pytest)."""
        if self._phase != "running":
            return
        message = (
            f"unclosed client {self._spec.name!r}: it was never stopped and {when}; its "
            "server is stopped now (use 'async with Client(...)' or call stop())"
        )
        try:
            warnings.warn(message, ResourceWarning, stacklevel=3)
        except Exception:  # warnings made errors (-W error): the shutdown must still run
            _log.error("%s", message)

    def abandon(self) -> None:
        """``weakref.finalize`` of the ``Client``: dropped (or left at interpreter exit)
        while running. Any thread: the shutdown is asked for through the loop; without a loop
        that runs, the processes are killed and reaped here. Nothing in a forked child."""
        if self._phase != "running" or self._origin is None or not self._origin.here():
            return
        assert self._stop_asked is not None
        try:
            if self._loop is not None:
                if not self._loop.is_running():
                    raise RuntimeError("the loop is not running")
                self._loop.call_soon_threadsafe(self._stop_asked.set)
            else:
                self._trio_token.run_sync_soon(self._stop_asked.set)  # RunFinishedError
        except RuntimeError:  # trio.RunFinishedError is one too
            self._forgotten("it was garbage-collected")
            self._phase = "stopped"
            for slot in list(self._running):
                slot.kill_and_reap()
        else:
            self._forgotten("it was garbage-collected")

    async def _shutdown(self) -> None:
        # In the host, shielded: a cancelled caller must not cut the shutdown in half.
        self._phase = "stopping"  # new calls are refused from here on
        try:
            waiter = self._closing or self._submit(lambda ticket: Close(now=_now(), ticket=ticket))
            # No bound of our own: the machine answers Close by a deadline of its own,
            # which the timer fires like any other (SessionMachine.next_deadline).
            await waiter.wait()
        finally:
            self._phase = "stopped"  # from here on late events are dropped, not fed
            self._recorder = None  # its file closes once the task group has ended
            self._disarm()
            for slot in list(self._running):  # safety net: the machine should leave none
                slot.kill()
            if self._http is not None:  # the machine has aborted its requests already
                await self._http.aclose()
            self._browser.close()  # a browser step still waiting ends its thread
            if self._host_scope is not None:
                self._host_scope.cancel()  # process tasks reap their processes

    def _ended(self) -> None:
        """The host has ended: every task of the session is gone, every process reaped."""
        self._phase = "stopped"
        self._recorder = None
        self._disarm()
        self._browser.close()
        if self._record_file is not None:
            self._record_file.close()
        # Callers still waiting (only if the host failed): the session is closed for them.
        waiters, self._waiters = self._waiters, {}
        for waiter in waiters.values():
            waiter.set(Reply(ticket=waiter.ticket, error=NotReady("closed")))
        _HOSTED.discard(self)
        assert self._host_done is not None
        self._host_done.set()

    # --- the loop ------------------------------------------------------------------------

    def feed(self, event: Event) -> None:
        if self._phase == "stopped":
            return  # late reader output after stop: nobody listens any more
        if self._recorder is not None:
            self._recorder.record(event, secret=self.machine.is_secret(event))
        for action in self.machine.handle(event):
            self._perform(action)
        if self._timing or self._deadline_changed is not None:
            deadline = self.machine.next_deadline()
            # Re-arm the timer only for an earlier deadline: a later one is found when the
            # armed one passes (one spare wake-up per deadline instead of one per event).
            if deadline is not None and (self._armed is None or deadline < self._armed):
                if self._deadline_changed is not None:
                    self._deadline_changed.set()
                else:
                    self._arm(deadline)

    def _perform(self, action: Action) -> None:
        match action:  # the most frequent actions first
            case WriteStdin():
                if action.slot in self._slots:
                    self._slots[action.slot].write(action.data)
            case Reply():
                self.reservations.take(action.ticket)  # never settled: not ours
                waiter = self._waiters.pop(action.ticket, None)
                if waiter is not None:
                    waiter.set(action)
            case Spawn():
                # The machine drops the events of a process it replaced (by generation).
                slot = self._slots[action.slot] = ProcessSlot(action, self.feed, _now)
                assert self._tasks is not None
                self._tasks.start_soon(self._run_slot, slot)
            case CloseStdin():
                if action.slot in self._slots:
                    self._slots[action.slot].close_stdin()
            case SignalProcess():
                if action.slot in self._slots:
                    self._slots[action.slot].signal(action.signal)
            case StartHttp():
                if action.dpop is not None:  # RFC 9449: the proof is signed right before sending
                    action = self._tokens.dpop.sign(action)
                if self._http is not None:
                    self._http.start(action)
            case AbortHttp():
                if self._http is not None:
                    self._http.abort(action.stream)
            case SettleReservation():
                reservation = self.reservations.take(action.ticket)
                if reservation is not None:
                    settle(reservation, action.commit, _log)
            case HandleServerRequest():
                assert self._tasks is not None
                self._tasks.start_soon(self._answer, self._handlers[action.method], action)
            case ProgressUpdate():
                waiter = self._waiters.get(action.ticket)
                if waiter is not None and waiter.progress is not None:
                    report(waiter.progress, action, _log)
            case ResourceUpdated():
                on_update = self.on_update.get(action.uri)
                if on_update is not None:
                    assert self._tasks is not None
                    self._tasks.start_soon(self._updated, on_update, action.uri)
            case ListChanged():
                if self._on_list_changed is not None:
                    assert self._tasks is not None
                    name = "on_list_changed callback"
                    self._tasks.start_soon(self._updated, self._on_list_changed, action.kind, name)
            case Log():
                level = logging.getLevelNamesMapping().get(action.level, logging.WARNING)
                logging.getLogger(action.logger).log(level, "%s", action.message)
            case ElicitationComplete():
                assert self._tasks is not None
                self._tasks.start_soon(self._completed, action.elicitation_id)
            case PrepareAuthorization():
                assert self._tasks is not None
                self._tasks.start_soon(self._feed_result, self._browser.prepare)
            case Authorize():
                assert self._tasks is not None
                self._tasks.start_soon(self._authorize_step, action.url, action.state)
            case SignAssertion():
                assert self._tasks is not None
                sign = functools.partial(sign_assertion, action, self._spec, _now)
                self._tasks.start_soon(self._feed_result, sign, True)
            case ObtainAssertion():
                assert self._tasks is not None
                if self._assertion is not None:
                    self._tasks.start_soon(self._assertion_step)
                else:
                    obtain = functools.partial(obtain_assertion, action, self._spec, _now)
                    self._tasks.start_soon(self._feed_result, obtain, True)
            case ShowDeviceCode():
                assert self._tasks is not None
                self._tasks.start_soon(self._show_device_code, action)
            case SaveAuthorization():
                # In order, here: a store keeps a record in memory or writes one small file.
                self._tokens.take(action)()
            case _:
                raise TypeError(f"unknown action {action!r}")

    async def _feed_result(self, make: Callable[[], Event], in_thread: bool = False) -> None:
        self.feed(await anyio.to_thread.run_sync(make) if in_thread else make())

    async def _authorize_step(self, url: str, state: str) -> None:
        """``Authorize``: the ``authorize=`` callback (plain or async; the core checks the
        state of its answer), or the user's browser and the redirect listener, which waits
        for ``state``, in a worker thread (``stop()`` closes the listener, which ends the
        thread)."""
        callback = self._authorize
        event: Event
        if callback is None:
            wait = self._browser.wait_for_browser
            event = await anyio.to_thread.run_sync(wait, url, state, abandon_on_cancel=True)
        else:
            try:
                answer: object = callback(url)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as exc:
                event = self._browser.failed(exc)
            else:
                event = self._browser.answered(answer)
        self.feed(event)

    async def _assertion_step(self) -> None:
        """``ObtainAssertion`` with the ``assertion=`` callback (plain or async)."""
        callback = self._assertion
        assert callback is not None
        try:
            answer: object = callback()
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            self.feed(assertion_failed(exc, _now))
        else:
            self.feed(assertion_answer(answer, _now))

    async def _show_device_code(self, action: ShowDeviceCode) -> None:
        """``ShowDeviceCode``: the ``on_device_code=`` callback (plain or async), else the
        instructions on stderr; a callback that raises ends the login."""
        code = device_code_of(action, self._spec.name)
        callback = self._on_device_code
        try:
            if callback is None:
                show_on_stderr(code)
            else:
                shown = callback(code)
                if inspect.isawaitable(shown):
                    await shown
        except Exception as exc:
            self.feed(device_code_failed(exc, _now))

    async def _completed(self, elicitation_id: str) -> None:
        """Tell the application a URL elicitation is complete; without a callback, log it."""
        callback = self._elicitation_complete
        if callback is None:
            _log.info("server %r completed URL elicitation %r", self._spec.name, elicitation_id)
            return
        try:
            result = callback(elicitation_id)
            if inspect.isawaitable(result):
                await result
        except Exception:
            _log.exception("the elicitation_complete callback raised")

    async def _updated(
        self,
        callback: UpdateCallback,
        value: str,
        name: str = "on_update callback of a subscription",
    ) -> None:
        """Run a subscriber's callback or ``on_list_changed`` (plain or async); its exception
        is logged."""
        try:
            result = callback(value)
            if inspect.isawaitable(result):
                await result
        except Exception:
            _log.exception("the %s raised", name)

    async def _answer(self, handler: Handler, action: HandleServerRequest) -> None:
        """Run the application's handler (plain or async); its failure, or an answer that is
        no mapping, is the server's -32603, never ours."""
        try:
            result = handler(action.params)
            if inspect.isawaitable(result):
                result = await result
            answer = ServerRequestAnswered(now=_now(), handle=action.handle, result=dict(result))
        except Exception as exc:
            _log.exception("the %s handler raised; the server gets an error", action.method)
            answer = ServerRequestAnswered(
                now=_now(), handle=action.handle, failed=type(exc).__name__
            )
        self.feed(answer)

    async def _run_slot(self, slot: ProcessSlot) -> None:
        self._running.add(slot)
        try:
            await slot.run()
        finally:
            self._running.discard(slot)

    def _arm(self, deadline: float) -> None:
        """asyncio: fire ``_on_timer`` at ``deadline`` instead of at the armed one."""
        assert self._loop is not None
        if self._timer is not None:
            self._timer.cancel()
        self._armed = deadline
        self._timer = self._loop.call_later(
            max(0.0, deadline - _now()), self._on_timer, context=self._timer_context
        )

    def _disarm(self) -> None:
        self._timing = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        """asyncio: the armed deadline passed. Feed ``TimerFired`` if the machine's deadline is
        due (the feed re-arms for the next one), else re-arm for it. A deadline the machine
        fails to clear re-arms with no delay: a callback of the loop, so it cannot starve it."""
        self._timer = self._armed = None
        deadline = self.machine.next_deadline()
        if deadline is None or not self._timing:
            return
        if _now() >= deadline:
            self.feed(TimerFired(now=_now()))
        else:
            self._arm(deadline)

    async def _run_timer(self) -> None:
        # trio: one timer task, sleeping until machine.next_deadline(), or until a feed moved it.
        while True:
            changed = self._deadline_changed = anyio.Event()
            deadline = self._armed = self.machine.next_deadline()
            if deadline is not None and _now() >= deadline:
                self.feed(TimerFired(now=_now()))
            # After a feed the deadline is in the past or `changed` is set: the wait below is
            # then only a checkpoint, so a deadline the machine fails to clear cannot starve
            # the event loop.
            delay = math.inf if deadline is None else deadline - _now()
            with anyio.move_on_after(delay):
                await changed.wait()


Handler = Callable[[Mapping[str, Any]], Mapping[str, Any] | Awaitable[Mapping[str, Any]]]
"""Answers one kind of server request, given its params: ``elicitation=`` gets
``elicitation/create`` (``message``, ``requestedSchema``) and returns an ElicitResult such as
``{"action": "accept", "content": {...}}``; ``sampling=`` gets ``sampling/createMessage`` and
returns a CreateMessageResult (with ``sampling_tools=True`` it may be given ``tools`` and
answer with ``tool_use`` blocks; ``mcp_core.CreateMessageRequest.from_params(params)`` is the
typed view of its params, docs/server-requests.md); ``roots=`` gets ``roots/list`` and
returns ``{"roots": [...]}``.
It may be a plain function or a coroutine function. An exception becomes a -32603 answer.

With ``elicitation_modes=("form", "url")`` the elicitation handler also gets URL-mode requests
(``mode`` ``"url"``, ``url``, ``elicitationId``, ``message``; 2025-11-25): show the user the
URL's host and message, open the URL only with their consent (never fetch it yourself), and
return ``{"action": "accept"}`` (consent given; the interaction itself happens out of band),
``"decline"`` or ``"cancel"``."""

AuthorizeCallback = Callable[
    [str], str | Mapping[str, str] | Awaitable[str] | Awaitable[Mapping[str, str]]
]
"""``authorize=``: the browser step of an OAuth login, instead of the user's browser. It gets
the authorization URL (it holds the state and the PKCE challenge: keep it out of logs), has
the user (or a headless test) authorize there, and returns the URL the authorization server
redirected to, or that redirect's query parameters as a mapping (``code``, ``state``,
``iss``, or ``error``); the client checks them. A plain function or a coroutine function, run
in a task of the client (a plain one runs on the event loop: it must not block); an exception
abandons the login (the error names its class only). The redirect URI it stands for is its
``redirect_uri`` attribute when it has one (a callable object running a listener of its own),
else ``http://127.0.0.1:<oauth.redirect_port>/callback``."""

AssertionCallback = Callable[[], str | Awaitable[str]]
"""``assertion=``: the workload's identity JWT for ``oauth={"grant": "jwt_bearer"}`` (SEP-1933),
in place of an ``assertion_file``: called for each token request (the platform rotates the
JWT: fetch a current one, e.g. from a cloud metadata endpoint or a SPIFFE Workload API), it
returns the JWT as a string. A plain function or a coroutine function, run in a task of the
client (a plain one runs on the event loop: it must not block); an exception, or an answer
that is not a non-empty string, ends the flow (the error names its class only).
With ``oauth={"grant": "enterprise"}`` (enterprise-managed authorization, SEP-990) it returns
the user's current ID token from the enterprise sign-on instead, in place of an
``id_token_file``, called for each exchange at the identity provider."""

DeviceCodeCallback = Callable[[DeviceCode], object | Awaitable[object]]
"""``on_device_code=``: shows the user how to approve a device login (``oauth={"grant":
"device_code", ...}``, RFC 8628): it gets a ``DeviceCode`` (``user_code``,
``verification_uri``, ``verification_uri_complete``, ``expires_in``, ``server``) and returns
at once (plain or async); the client polls the authorization server meanwhile and goes on by
itself once the user approved. Without it the instructions go to stderr. An exception ends the
login (``AuthorizationRequired``, naming its class only). Keep the user code out of logs."""

UpdateCallback = Callable[[str], object]
"""``subscribe(uri, on_update)``: called with the URI each time the server says that resource
changed (``notifications/resources/updated``). A plain function or a coroutine function, run
in a task of the client, one task per update (a plain one runs on the event loop: it must not
block); it may await the client, e.g. ``read_resource(uri)``. Its exceptions are logged."""

ListChangedCallback = Callable[[str], object]
"""``on_list_changed=``: called with ``"tools"``, ``"prompts"`` or ``"resources"`` each time the
server says that list changed (``notifications/<kind>/list_changed``; ``"resources"`` covers the
resource templates too), after the client dropped its cache of it: a ``list_tools()`` (or
``list_prompts()``, ...) from the callback asks the server. A plain function or a coroutine
function, run in a task of the client, one task per change (a plain one runs on the event
loop: it must not block); its exceptions are logged. In the 2026-07-28 era the server sends
changes only on a ``subscriptions/listen`` stream that asks for them, which the client keeps
open while the session is ready (docs/resources.md)."""

CompletionCallback = Callable[[str], object]
"""``elicitation_complete=``: called with the ``elicitationId`` of a URL elicitation the server
reports complete (``notifications/elicitation/complete``), only for one this client was asked
for, once; e.g. to retry a call that raised ``UrlElicitationRequired``. A plain function or a
coroutine function, run in a task of the client; its exceptions are logged. Without one, the
completion is logged at INFO."""


def _protect_background_tasks() -> None:
    """On trio, mark the driver's background tasks KI-protected.

    Trio raises KeyboardInterrupt in whatever unprotected code runs when Ctrl-C arrives; inside
    one of our reader or timer tasks it would tear the driver down mid-bookkeeping and leave
    the caller's task with an exception group. Protected, the interrupt reaches the caller's
    own task instead, whose ``async with`` then stops the server. Trio keys protection on the
    code object, so marking once is enough. asyncio turns SIGINT into cancelling the main
    task and needs nothing. Called on trio only.
    """
    import trio

    for function in (
        Session._host,
        Session._watch,
        Session._run_timer,
        Session._run_slot,
        ProcessSlot.run,
        *ProcessSlot.background_functions(),
        *HttpExecutor.background_functions(),
    ):
        trio.lowlevel.enable_ki_protection(function)
