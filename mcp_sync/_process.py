# Written twice, by hand (mcp_asyncio/_process.py is its twin): the pipes of a server process
# are read by a shared I/O thread or the waiting caller's own thread here, by event-loop
# callbacks (asyncio) or tasks (trio) there, and each waits for the process its own way. What
# the two share without any waiting (wording a failed spawn) is _mcp_io's.
"""The I/O handles of one stdio slot: a child process and its pipes, watched by the I/O thread
that every session of this process shares.

Nothing here decides anything about the protocol. The slot turns OS results into core events
and hands them to ``feed`` (the client's single entry into the machine), which may be called
from the shared I/O thread or from a caller's thread.

Theory of operation: the shared threads
---------------------------------------
An idle session holds no thread of its own. ``SharedLoop`` is one thread of the process that
waits, in one ``select``, for every session's pipes (stdout and stderr readable, stdin writable
while a write waits for room, a pidfd once stdout ended) and for deadlines, and calls back.
There are two, each started by the first client that needs it and ended (and joined) when the
last one stops: ``io`` (``mcp-sync-io``) runs the slots' callbacks, ``timer``
(``mcp-sync-timer``) every client's timer, so that a callback that blocks in the I/O thread
(a progress callback, a logging handler) never holds back a timeout. Whatever the I/O thread
feeds runs there: the actions a feed returns (progress callbacks, Log records,
``elicitation_complete``) run in the thread that read the bytes, a reading caller's own or the
I/O thread, and one that blocks there holds up the pipes of every session of the process, as
on an event loop. stdin is written by the caller thread that queued first (``write``,
``flush``); the I/O thread writes only once the pipe is full, or for the main thread.

Theory of operation: who reads stdout
-------------------------------------
A caller that waits alone (its session decides: ``Session._alone``) reads its own answer from
stdout in its own thread (``read_until``) instead of waiting for the I/O thread to read it
and wake it: two thread switches fewer per sequential call. Its request was written from its
own thread too (``write(alone=True)``), so a sequential call needs no other thread at all.

- **A step** is one read of stdout and the feed of what it gave (for a caller, after a poll of
  [stdout, wake-up pipe]). A step runs under ``_reading``, always taken with ``with`` by a
  caller and without blocking by the I/O thread: two threads never read or feed stdout at the
  same time, and events reach ``feed`` in byte order whoever reads. ``with`` releases the lock
  even when KeyboardInterrupt unwinds the step (since 3.11 no interrupt can land between
  ``__enter__`` and the protected block), so the lock never stays taken by a thread that left.
  A caller's poll lasts at most ``_READ_SLICE_MS``; a caller that finds another thread's step
  in progress waits for it in such slices (``_renew``), renewing its lease and watching its
  ``done``, so a timeout or stop() still reaches it there.
- **The turn is a lease**, a time (``_lease_until``) and no count: while it lies ahead, the
  I/O thread leaves stdout to the callers. A reading caller renews it, to ``_LEASE`` ahead,
  before each step and while it waits for one; on its way out it shortens it (to ``_LINGER``
  ahead, or to now when other callers still wait, waking the I/O thread). Nothing has to run
  to end a lease: a caller that stops renewing for any reason (an exception, or a second
  Ctrl-C that skipped ``_give_back``) loses it at most ``_LEASE`` after its last renewal, and
  the I/O thread then reads on (notifications, late replies, EOF). Stale lease state costs
  time, never progress.
- **The I/O thread** reads stdout when it is readable and no lease runs. When stdout is
  readable during a lease (usually the lone caller's own answer) it *parks* the slot: it stops
  watching stdout (else ``select`` would return at once, again and again) and looks at the
  lease again when it runs out, at the latest every ``_LINGER`` (a caller that shortens its
  lease does not wake it: no thread switch per call), or at once when a caller ends the lease
  (``_give_back`` without linger, ``kill``). It never blocks on ``_reading``: if a caller's
  step holds it, it parks too.
- **The wake-up pipe** gets a byte from ``wake`` when another thread answers a reading caller
  (the timer's RequestTimeout, stop()'s Close, a step of another reader), so its poll ends at
  once. Bytes are drained by whoever polls it; a stale one costs one empty step.
- **EOF**: whoever reads it sets ``_eof``; the I/O thread then tells the end of the process
  (StdoutClosed, then ProcessExited once it is reaped and stderr ended) and closes the
  wake-up pipe. ``kill`` ends any lease, so stop() never waits for one.

Theory of operation: fork
-------------------------
``os.fork()`` copies only the thread that forks (POSIX ``fork``): in a child the shared threads
do not exist, and ``SharedLoop`` objects copied in a started state would never run a callback.
``_after_fork_in_child`` (``os.register_at_fork``) forgets them, so the first client made in
the child starts threads of its own, and closes the child's copies of their descriptors and of
every server pipe: those stay open in the parent, whose sessions go on unaffected, and a
server still sees EOF on stdin when the parent closes its end. The clients copied into the
child refuse every use there (``UsedAfterFork``, ``_mcp_io/fork.py``) and never reach this
module.

Lock order: ``_reading`` -> the client's lock -> ``_turns`` (and ``_freed``, the same lock)
or ``_stdin_lock`` -> a shared loop's lock. Only ``_reading`` is held across a wait for data or
a callback; the others are held only for non-blocking work (a non-blocking pipe write
included), and no thread takes ``_reading`` while it holds ``_turns``.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import math
import os
import queue
import select
import selectors
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import ClassVar, Literal

from _mcp_io.client import spawn_failure
from mcp_core import (
    Event,
    ProcessExited,
    ProcessSpawned,
    Spawn,
    SpawnFailed,
    StderrReceived,
    StdoutClosed,
    StdoutReceived,
    WriteFailed,
)
from mcp_core.driver import inherit_environment

__all__ = ["ProcessSlot", "SharedLoop"]

_log = logging.getLogger(__name__)

_READ_SIZE = 65536
# A dead child makes writes fail at once and closes stderr; only a grandchild that inherited
# the pipes can keep them busy, and it must not hold ProcessExited back for long.
_DRAIN_BOUND = 1.0
# What is left of a caller's lease once it returns with nobody else waiting: a caller that
# calls again meanwhile still holds the turn, without waking the I/O thread. It is also how
# often that thread looks at a lease, so how late a notification can be seen between calls.
_LINGER = 0.01
# A caller reading stdout polls in slices of this many ms, so KeyboardInterrupt reaches the
# main thread promptly whichever thread the signal was delivered to (the client's _WAIT_SLICE).
_READ_SLICE_MS = 100
# How far ahead a caller renews its lease before each step: a few slices, so a live caller
# never loses it in the middle of one. The longest the I/O thread waits for a caller that
# stopped renewing without giving the turn back.
_LEASE = 3 * _READ_SLICE_MS / 1000
# Without a pidfd the reaper polls waitpid from this interval, doubling up to the longest.
_REAP_POLL = (0.001, 0.05)


class Timer:
    """A callback that ``SharedLoop.call_at`` will run; ``cancel`` makes it a no-op."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback: Callable[[], None] | None = callback

    def cancel(self) -> None:
        self.callback = None


class SharedLoop:
    """One thread of this process that waits for file descriptors and deadlines, and calls
    back. ``acquire(kind)`` returns the running one of that kind (starting it), ``release``
    gives it back; the last release ends its thread and joins it (unless called from it).

    ``call_soon`` and ``call_at`` may be called from any thread; ``watch`` and ``unwatch`` only
    from the loop's own thread (use ``call_soon`` to get there); ``hand_over`` from anywhere,
    a finalizer at gc time included. A callback that raises is logged; the loop goes on. After
    the last release the thread ends once no file descriptor is watched and no timer is left.
    """

    _guard = threading.Lock()
    _running: ClassVar[dict[str, SharedLoop]] = {}

    def __init__(self, kind: str) -> None:
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._lock = threading.Lock()  # guards the fields below
        self._soon: list[Callable[[], None]] = []
        self._timers: list[tuple[float, int, Timer]] = []  # a heap by deadline
        self._order = itertools.count()
        self._woken = False  # a byte is in the wake-up pipe
        self._until = -math.inf  # when the thread's select ends by itself (-inf: not in one)
        self._users = 0
        self._ending = False
        # Callbacks from hand_over: a queue.SimpleQueue takes them without a lock of ours.
        self._handed: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._fds_open = True  # False (before they are closed) once the thread ended
        self.thread = threading.Thread(target=self._run, name=f"mcp-sync-{kind}", daemon=True)
        _LOOPS.add(self)

    @classmethod
    def acquire(cls, kind: str) -> SharedLoop:
        with cls._guard:
            loop = cls._running.get(kind)
            if loop is None:
                loop = cls._running[kind] = SharedLoop(kind)
                loop.thread.start()
            loop._users += 1
            return loop

    def release(self, deadline: float) -> None:
        """Give the loop back; the last user ends its thread and joins it by ``deadline``."""
        with SharedLoop._guard:
            self._users -= 1
            if self._users > 0:
                return
            for kind, loop in list(SharedLoop._running.items()):
                if loop is self:
                    del SharedLoop._running[kind]
            with self._lock:
                self._ending = True
                self._wake()
        if threading.current_thread() is not self.thread:
            self.thread.join(max(0.0, deadline - time.monotonic()))

    def call_soon(self, callback: Callable[[], None]) -> None:
        with self._lock:
            self._soon.append(callback)
            if self._until > -math.inf:  # else the thread is awake and looks before selecting
                self._wake()

    def hand_over(self, callback: Callable[[], None]) -> None:
        """``call_soon`` for a caller that may hold any lock of this driver: a finalizer, which
        runs at gc time in whatever thread collected its object. No lock is taken: the callback
        goes into a ``queue.SimpleQueue`` (whose ``put`` is reentrant, for such callers: Python
        docs, queue.SimpleQueue.put) and a byte into the wake-up pipe (a spare byte costs one
        empty look). Call it only while this loop is acquired (its thread is running)."""
        self._handed.put(callback)
        fd = self._wake_w
        if fd >= 0:
            with contextlib.suppress(OSError):  # full: a wake-up is pending already
                os.write(fd, b"\0")

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        """Run ``callback`` at ``when`` (``time.monotonic``), unless cancelled first."""
        timer = Timer(callback)
        with self._lock:
            heapq.heappush(self._timers, (when, next(self._order), timer))
            if when < self._until:
                self._wake()
        return timer

    def watch(self, fd: int, events: int, callback: Callable[[], None]) -> None:
        """In the loop's thread: call ``callback`` while ``fd`` is ready for ``events``."""
        self._selector.register(fd, events, callback)

    def unwatch(self, fd: int) -> None:
        """In the loop's thread: stop watching ``fd`` (nothing happens if it is not)."""
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(fd)

    def _wake(self) -> None:
        """Under ``_lock``: end the thread's select (at most one byte waits in the pipe)."""
        if not self._woken and self._wake_w >= 0:  # -1: the thread ended, nobody looks
            self._woken = True
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_w, b"\0")

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    # Ended by the last release, once nothing is left to watch or to run: a
                    # process whose client stopped from a callback of this thread (and so
                    # could not wait for it) is still reaped.
                    if (
                        self._ending
                        and not self._soon
                        and self._handed.empty()
                        and len(self._selector.get_map()) <= 1
                        and not any(timer.callback for _, _, timer in self._timers)
                    ):
                        return
                    now = time.monotonic()
                    due: list[Callable[[], None] | None] = []
                    while self._timers and self._timers[0][0] <= now:
                        due.append(heapq.heappop(self._timers)[2].callback)
                    due += self._soon
                    self._soon = []
                    while not self._handed.empty():
                        due.append(self._handed.get_nowait())
                    if due:
                        timeout: float | None = 0.0
                    elif self._timers:
                        timeout = self._timers[0][0] - now
                    else:
                        timeout = None
                    self._until = math.inf if timeout is None else now + timeout
                for callback in due:
                    if callback is not None:
                        self._call(callback)
                ready = self._selector.select(timeout)
                with self._lock:
                    self._until = -math.inf  # awake: a new deadline is seen before the next
                for key, _ in ready:
                    if key.fd == self._wake_r:
                        with self._lock:
                            self._woken = False
                            with contextlib.suppress(BlockingIOError):
                                os.read(self._wake_r, 4096)
                    else:
                        self._call(key.data)
        finally:
            with self._lock:
                self._fds_open = False  # before they are closed: see _close_copies
                wake_r, wake_w = self._wake_r, self._wake_w
                self._wake_r = self._wake_w = -1
            self._selector.close()
            os.close(wake_r)
            os.close(wake_w)

    def _close_copies(self) -> None:
        """In a forked child, where this loop's thread does not exist: close the child's
        copies of its descriptors (the lock may be a copy held by a parent's thread: not
        taken; the flag is cleared before the thread closes them, so none is closed twice)."""
        if self._fds_open:
            self._fds_open = False
            self._selector.close()
            for fd in (self._wake_r, self._wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._wake_r = self._wake_w = -1

    @classmethod
    def _forget(cls) -> None:
        """In a forked child: no loop runs here; the next ``acquire`` starts a new one."""
        cls._guard = threading.Lock()  # the copy may be held by a parent's thread
        cls._running = {}

    @staticmethod
    def _call(callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception:
            _log.exception("a callback of the shared I/O thread raised")


class ProcessSlot:
    """One server process of one slot, watched by the shared ``io`` loop. Writes queued before
    the process exists are kept and written, in order, once it runs; writes to a slot whose
    spawn failed are dropped."""

    def __init__(
        self,
        spawn: Spawn,
        feed: Callable[[Event], None],
        now: Callable[[], float],
        loop: SharedLoop,
    ) -> None:
        self.slot = spawn.slot
        self.generation = spawn.generation  # echoed by every event of this process
        self._spawn_action = spawn
        self._feed = feed
        self._now = now
        self._loop = loop
        self._proc: subprocess.Popen[bytes] | None = None
        # Writes queued (counted by callers, under the client's lock) and written in full
        # (counted by the I/O thread): each count has one writer, so neither needs a lock.
        self._queued_writes = self._written = 0
        self._stdin_lock = threading.Lock()  # guards _stdin, _pending, _flushing, _close_asked
        self._stdin = -1  # stdin's fd (non-blocking) while it is open
        self._pending: deque[bytes] = deque()  # queued writes, for the I/O thread
        self._flushing = False  # a writer owns the queue (see ``flush``)
        self._close_asked = False  # close_stdin(): close once everything before is written
        self._give_up = False  # the process ended: close stdin without waiting for room
        self._stdin_closed = False  # closed for good: later writes are dropped
        self._out: memoryview | None = None  # the writer's batch, while partly written
        self._out_count = 0  # how many writes that batch holds
        self._watching_stdin = False  # the I/O thread is the writer, waiting for room
        # Held across a whole spawn, so stop() never misses a process that is being started.
        self._spawning = threading.Lock()
        self._closed = False
        self._finished = threading.Event()  # ProcessExited fed (or no process at all)
        # Held with `with` for each step (poll, read, feed): one reader of stdout at a time.
        self._reading = threading.Lock()
        self._poll = select.poll()  # stdout and the wake-up pipe; used under _reading only
        self._stdout = -1  # stdout's fd, set before any reader starts
        self._turns = threading.Lock()  # guards the fields below; never held for blocking work
        self._freed = threading.Condition(self._turns)  # callers wait for a step to end
        self._lease_until = 0.0  # callers read stdout until then (monotonic): the lease
        self._lessee = 0  # the thread that renewed it last (only it shortens it)
        self._step_waiters = 0  # callers in _freed.wait (a count left too high costs a notify)
        self._parked = False  # the I/O thread stopped watching stdout while a lease runs
        self._unpark_timer: Timer | None = None
        self._eof = False  # stdout ended: nobody polls it any more
        # Ends a reader's poll at once; -1 before spawn and once closed.
        self._wake_r = self._wake_w = -1
        # The end of the process, in the I/O thread.
        self._returncode: int | None = None
        self._stderr = -1  # stderr's fd while it is open
        self._pidfd = -1
        self._drain_timer: Timer | None = None
        _SLOTS.add(self)

    def write(self, data: bytes, *, alone: bool = False) -> bool:
        """Write ``data`` to stdin after every write before (a failed write is fed back as
        WriteFailed by the writer); never blocks. Call it under the session's lock (it is,
        from ``Session._perform``): that keeps the write order the feed order. True: the
        caller is now the writer and must call ``flush`` once the lock is released.

        With ``alone`` (the client has at most one caller waiting) a message of up to PIPE_BUF
        bytes goes to the pipe at once from this thread when everything queued before has been
        written; if the pipe has no room it is queued. Otherwise it is queued, and one writer
        at a time writes whatever gathered meanwhile in one system call: measured, many callers
        each writing at once made the server read one message per wake-up and cost 40% at 256
        in flight. The writer is the first thread that queued (with the shared I/O thread as
        the writer, 256 in flight ran at 0.73 of the former separate reader and writer threads;
        this way at about 1.0), or the I/O thread when the pipe is full."""
        if alone and self._written == self._queued_writes and len(data) <= select.PIPE_BUF:
            # Nothing queued is still unwritten, so nothing can be overtaken. Up to PIPE_BUF a
            # pipe write is all or nothing: an interrupt never leaves half a message behind.
            # An error is left for the I/O thread to meet again and feed.
            with self._stdin_lock, contextlib.suppress(OSError):
                if self._stdin >= 0:
                    os.write(self._stdin, data)
                    return False
        # Counted before it is queued: a count too high only turns direct writes off; too low
        # would let one overtake a write in progress. (No call in between, so no interrupt.)
        self._queued_writes += 1
        with self._stdin_lock:
            if self._close_asked:
                return False  # behind the close: never written
            self._pending.append(data)
            own = not self._flushing
            self._flushing = True
        return own and self._writer_here()

    def close_stdin(self) -> bool:
        """Close stdin behind every write before; never blocks. True: as ``write``."""
        self._queued_writes += 1  # never counted as written: no direct write after it
        with self._stdin_lock:
            self._close_asked = True
            own = not self._flushing
            self._flushing = True
        return own and self._writer_here()

    def _writer_here(self) -> bool:
        """The calling thread just became the writer (``flush``): True to write from here,
        False when it is the main thread, which hands the writing to the I/O thread: Ctrl-C
        could land there between taking the queue and writing it, or before ``flush`` ran,
        and leave the queue without a writer."""
        if threading.current_thread() is threading.main_thread():
            self._loop.call_soon(self.flush)
            return False
        return True

    def start(self) -> None:
        """Spawn the process and have the I/O thread watch its pipes, feeding ProcessSpawned
        (before any reader feeds) or SpawnFailed. Blocks only for fork/exec; call it without
        holding the machine lock. Does nothing once ``kill`` ran."""
        with self._spawning:
            if self._closed:
                self._finished.set()
            else:
                self._spawn(self._spawn_action)

    def _spawn(self, action: Spawn) -> None:
        env = inherit_environment(os.environ, action.inherit) | dict(action.env)
        try:
            proc = subprocess.Popen(
                action.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=env,
                cwd=action.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            # Missing, not executable or a bad cwd is permanent.
            reason, missing = spawn_failure(exc)
            self._feed(
                SpawnFailed(
                    now=self._now(),
                    slot=self.slot,
                    generation=self.generation,
                    reason=reason,
                    missing=missing,
                )
            )
            self._finished.set()
            return
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self._proc = proc
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            os.set_blocking(pipe.fileno(), False)
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        self._poll.register(proc.stdout.fileno(), select.POLLIN)
        self._poll.register(wake_r, select.POLLIN)
        self._stderr = proc.stderr.fileno()
        with self._turns:
            self._stdout, self._wake_r, self._wake_w = proc.stdout.fileno(), wake_r, wake_w
        with self._stdin_lock:
            self._stdin = proc.stdin.fileno()
            own = not self._flushing  # writes queued before the spawn go out first
            self._flushing = True
        self._feed(
            ProcessSpawned(
                now=self._now(), slot=self.slot, generation=self.generation, pid=proc.pid
            ),
        )
        if own and self._writer_here():
            self.flush()
        self._loop.call_soon(self._watch)

    @property
    def finished(self) -> bool:
        """True once the process (if any) was reaped and its end fed (``ProcessExited``)."""
        return self._proc is None or self._finished.is_set()

    def signal(self, name: Literal["SIGTERM", "SIGKILL"]) -> None:
        """Signal the process group; a group that is already gone is not an error."""
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, getattr(signal, name))

    def kill(self) -> None:
        """Safety net: SIGKILL the group (whatever the machine did), spawn nothing any more and
        end any lease. Never blocks for long; ``join`` waits."""
        with self._spawning:
            self._closed = True
        self._end_lease()  # no lease outlives stop(): the I/O thread reads the EOF at once
        self.signal("SIGKILL")

    def join(self, deadline: float) -> None:
        """After ``kill``: wait by ``deadline`` until the process was reaped and its end fed
        (a process still unreaped then is left to the I/O thread). In the I/O thread itself
        (stop() from a callback) it does not wait: that thread finishes the end afterwards."""
        if self._proc is not None and threading.current_thread() is not self._loop.thread:
            self._finished.wait(max(0.0, deadline - time.monotonic()))

    # --- reading stdout --------------------------------------------------------------------

    def read_until(self, done: threading.Event, others_waiting: Callable[[], bool]) -> None:
        """Read stdout in the calling thread, feeding what it reads, until ``done`` is set
        (by this thread's feed, or by another thread that then calls ``wake``) or stdout ends
        (the I/O thread then tells the end of the process). Returns at once before spawn.
        On the way out the lease is shortened: to now when ``others_waiting()`` (their answers
        are the I/O thread's to read) or on an exception, else to ``_LINGER`` ahead. If that
        is skipped (an exception inside it), the lease runs out by itself within ``_LEASE``."""
        me = threading.get_ident()
        try:
            while self._renew(me, done):
                with self._reading:
                    ended = not done.is_set() and not self._step(_READ_SLICE_MS)
                if self._step_waiters:
                    with self._turns:
                        self._freed.notify()
                if ended:
                    break
        except BaseException:
            self._give_back(me, linger=False)
            raise
        self._give_back(me, linger=not others_waiting())

    def _renew(self, me: int, done: threading.Event) -> bool:
        """Renew the caller's lease, and wait (renewing) while another thread's step runs: it
        ends within its poll slice, at a wake-up or when its data came. False when there is
        nothing to read: ``done``, not spawned yet, or stdout ended."""
        with self._turns:
            while not (done.is_set() or self._stdout < 0 or self._eof):
                self._lessee, self._lease_until = me, time.monotonic() + _LEASE
                if not self._reading.locked():
                    return True
                self._step_waiters += 1
                try:
                    self._freed.wait(_READ_SLICE_MS / 1000)
                finally:
                    self._step_waiters -= 1
            return False

    def _give_back(self, me: int, *, linger: bool) -> None:
        """Shorten the lease this caller renewed last (a later renewal by another caller
        stands): to ``_LINGER`` ahead, or end it and have the I/O thread read at once."""
        with self._turns:
            if self._lessee != me:
                return
            self._lessee = 0
            if linger:
                self._lease_until = time.monotonic() + _LINGER
                return
        self._end_lease()

    def _end_lease(self) -> None:
        with self._turns:
            self._lease_until = 0.0
            if self._parked:
                self._loop.call_soon(self._unpark)

    def wake(self) -> None:
        """End a reading caller's poll at once (never blocks; call it when setting the
        ``done`` of a ``read_until`` running in another thread)."""
        with self._turns:
            if self._wake_w >= 0:
                with contextlib.suppress(BlockingIOError):  # full: a wake-up is pending
                    os.write(self._wake_w, b"\0")

    def _step(self, timeout_ms: int) -> bool:
        """Under ``_reading``: poll stdout and the wake-up pipe up to ``timeout_ms`` and feed
        what stdout gave. False once stdout ended (nobody polls it again)."""
        if self._eof:
            return False
        for fd, _ in self._poll.poll(timeout_ms):
            if fd == self._wake_r:
                with contextlib.suppress(BlockingIOError):
                    os.read(fd, 4096)
            elif not self._read():
                return False
        return True

    def _read(self) -> bool:
        """Under ``_reading``: read stdout and feed what came (whoever saw it readable).
        False at EOF, which is recorded for everyone and handed to the I/O thread."""
        try:
            data = os.read(self._stdout, _READ_SIZE)
        except BlockingIOError:
            return True  # another look found nothing after all
        except OSError:
            data = b""  # a broken pipe ends the stream like EOF does
        if not data:
            with self._turns:
                self._eof = True
                self._freed.notify_all()  # callers waiting for a step: nothing left to read
            self._loop.call_soon(self._stdout_ended)
            return False
        self._feed(
            StdoutReceived(now=self._now(), slot=self.slot, generation=self.generation, data=data),
        )
        return True

    # --- the I/O thread's callbacks --------------------------------------------------------

    def _watch(self) -> None:
        """Start watching the new process's stdout and stderr; write what was queued."""
        assert self._proc is not None
        self._loop.watch(self._stdout, selectors.EVENT_READ, self._on_stdout)
        self._loop.watch(self._stderr, selectors.EVENT_READ, self._on_stderr)

    def _on_stdout(self) -> None:
        """stdout is readable: read it unless a caller holds the lease or is in a step, in
        which case park (see the theory above)."""
        with self._turns:
            if self._eof:
                return  # _stdout_ended (scheduled) stops watching it
            left = self._lease_until - time.monotonic()
            if left > 0 or self._reading.locked():
                self._park(left)
                return
        if not self._reading.acquire(blocking=False):
            with self._turns:
                self._park(0.0)
            return
        try:
            self._read()
        finally:
            self._reading.release()
        if self._step_waiters:
            with self._turns:
                self._freed.notify()

    def _park(self, left: float) -> None:
        """Under ``_turns``, in the I/O thread: stop watching stdout and look again when the
        lease runs out, at the latest in ``_LINGER``."""
        if not self._parked:
            self._parked = True
            self._loop.unwatch(self._stdout)
        if self._unpark_timer is not None:
            self._unpark_timer.cancel()
        # A lease that ran out under a caller's step still in progress: look again in _LINGER.
        delay = min(left, _LINGER) if left > 0 else _LINGER
        self._unpark_timer = self._loop.call_at(time.monotonic() + delay, self._unpark)

    def _unpark(self) -> None:
        with self._turns:
            if not self._parked or self._eof:
                return
            left = self._lease_until - time.monotonic()
            if left > 0 or self._reading.locked():
                self._park(left)
                return
            self._parked = False
            if self._unpark_timer is not None:
                self._unpark_timer.cancel()
                self._unpark_timer = None
        self._loop.watch(self._stdout, selectors.EVENT_READ, self._on_stdout)

    def _stdout_ended(self) -> None:
        """stdout's EOF was read: close it and the wake-up pipe (nobody polls them any more:
        ``_eof``), tell StdoutClosed, and wait for the process to exit."""
        assert self._proc is not None and self._proc.stdout is not None
        if self._stdout < 0:
            return  # already told
        self._loop.unwatch(self._stdout)
        with self._turns:
            self._parked = False
            if self._unpark_timer is not None:
                self._unpark_timer.cancel()
                self._unpark_timer = None
            # Forgotten before closed, so a fork in between never closes them twice.
            wake_r, wake_w = self._wake_r, self._wake_w
            self._wake_r = self._wake_w = self._stdout = -1
            os.close(wake_r)
            os.close(wake_w)
        self._proc.stdout.close()
        self._feed(StdoutClosed(now=self._now(), slot=self.slot, generation=self.generation))
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):  # ENOSYS (an old kernel): poll instead
                self._pidfd = os.pidfd_open(self._proc.pid)
                self._loop.watch(self._pidfd, selectors.EVENT_READ, self._reap)
                return
        self._poll_exit(_REAP_POLL[0])

    def _poll_exit(self, delay: float) -> None:
        assert self._proc is not None
        if self._proc.poll() is not None:
            self._reap()
        else:
            later = min(2 * delay, _REAP_POLL[1])
            self._loop.call_at(time.monotonic() + delay, lambda: self._poll_exit(later))

    def _reap(self) -> None:
        """The process exited: reap it. What it caused is fed before ProcessExited: the last
        queued writes meet the closed pipe (WriteFailed), and stderr gets up to
        ``_DRAIN_BOUND`` for its last bytes (the tail the error message quotes)."""
        assert self._proc is not None
        if self._pidfd >= 0:
            self._loop.unwatch(self._pidfd)
            pidfd, self._pidfd = self._pidfd, -1
            os.close(pidfd)
        self._returncode = self._proc.wait()
        with self._stdin_lock:
            self._close_asked = True
            own = not self._flushing
            self._flushing = True
        if own:
            self.flush()
        if self._stderr < 0:
            self._finish()
        else:
            self._drain_timer = self._loop.call_at(time.monotonic() + _DRAIN_BOUND, self._finish)

    def _on_stderr(self) -> None:
        try:
            data = os.read(self._stderr, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._feed(
                StderrReceived(
                    now=self._now(), slot=self.slot, generation=self.generation, data=data
                ),
            )
            return
        self._close_stderr()
        if self._returncode is not None:
            self._finish()

    def _close_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        if self._stderr >= 0:
            self._loop.unwatch(self._stderr)
            self._stderr = -1
            self._proc.stderr.close()

    def _finish(self) -> None:
        """Feed ProcessExited, once, after everything else this process caused."""
        if self._finished.is_set():
            return
        assert self._returncode is not None
        if self._drain_timer is not None:
            self._drain_timer.cancel()
        self._close_stderr()  # held by a grandchild: given up on
        with self._stdin_lock:
            self._give_up = True  # whoever writes stdin closes it now
            own = not self._flushing
            self._flushing = True
        if own or self._watching_stdin:  # no writer, or this thread waits for room
            self._close_stdin()
        self._feed(
            ProcessExited(
                now=self._now(),
                slot=self.slot,
                generation=self.generation,
                returncode=self._returncode,
            ),
        )
        self._finished.set()

    # --- writing stdin ----------------------------------------------------------------------

    def flush(self) -> None:
        """Write what was queued, batched into one system call, in order, and close stdin once
        asked and everything before is written. Only the writer runs it: the thread whose
        ``write`` or ``close_stdin`` returned True (after the client's lock is released), or
        the I/O thread once the pipe was full (it waits for room, then goes on). Only the
        writer writes the queue, counts it written or closes stdin, so none of that needs
        the lock; a lone caller's direct write is only made while nothing queued is unwritten.
        """
        while True:
            if self._out is None:
                with self._stdin_lock:
                    if self._stdin < 0:  # not spawned yet (kept for the spawn), or closed
                        if self._stdin_closed:
                            self._pending.clear()
                        self._flushing = False
                        return
                    if not self._pending:
                        if self._close_asked or self._give_up:
                            break
                        self._flushing = False
                        self._unwatch_stdin()
                        return
                    batch = list(self._pending)
                    self._pending.clear()
                self._out = memoryview(b"".join(batch) if len(batch) > 1 else batch[0])
                self._out_count = len(batch)
            try:
                written = os.write(self._stdin, self._out)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                self._close_stdin()
                self._feed(
                    WriteFailed(
                        now=self._now(),
                        slot=self.slot,
                        generation=self.generation,
                        reason=exc.strerror or type(exc).__name__,
                    ),
                )
                return
            self._out = self._out[written:]
            if self._out:
                if self._give_up:
                    break
                # The pipe is full: the I/O thread waits for room and goes on. A dead reader
                # makes the pipe "writable" (the write then fails), and stop kills the process:
                # this wait ends.
                if not self._watching_stdin:
                    self._loop.call_soon(self._wait_for_room)
                return
            self._out = None
            self._written += self._out_count
        self._close_stdin()

    def _wait_for_room(self) -> None:
        """In the I/O thread, now the writer: call ``flush`` once the pipe takes more."""
        self._watching_stdin = True
        self._loop.watch(self._stdin, selectors.EVENT_WRITE, self.flush)

    def _unwatch_stdin(self) -> None:
        if self._watching_stdin:  # only while the I/O thread is the writer
            self._watching_stdin = False
            self._loop.unwatch(self._stdin)

    def _close_stdin(self) -> None:
        """By the writer: no write from here on (the fd number may be reused)."""
        assert self._proc is not None and self._proc.stdin is not None
        self._unwatch_stdin()
        with self._stdin_lock:
            self._stdin = -1
            self._stdin_closed = True
            self._pending.clear()
            self._flushing = False
            self._out = None
        with contextlib.suppress(OSError):
            self._proc.stdin.close()

    def _close_copies(self) -> None:
        """In a forked child: close the child's copies of this process's pipes and of the
        wake-up pipe and pidfd. The parent's stay open (its session is unaffected); the
        parent's server sees EOF on stdin once the parent closes it, not once every child
        that inherited it has. No lock is taken (a copy may be held by a parent's thread); a
        descriptor is forgotten before it is closed, so none is closed twice."""
        if self._proc is not None:
            for pipe in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        for name in ("_wake_r", "_wake_w", "_pidfd"):
            fd = getattr(self, name)
            if fd >= 0:
                setattr(self, name, -1)
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._stdin = self._stdout = self._stderr = -1


# Every loop and slot of this process, for the forked child to close its copies of their
# descriptors (_after_fork_in_child).
_LOOPS: weakref.WeakSet[SharedLoop] = weakref.WeakSet()
_SLOTS: weakref.WeakSet[ProcessSlot] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """``os.register_at_fork(after_in_child=...)``: see "Theory of operation: fork"."""
    SharedLoop._forget()
    for loop in list(_LOOPS):
        loop._close_copies()
    for slot in list(_SLOTS):
        slot._close_copies()


os.register_at_fork(after_in_child=_after_fork_in_child)
