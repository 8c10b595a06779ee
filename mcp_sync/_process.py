"""The I/O handles of one stdio slot: a child process, two reader threads and a writer thread.

Nothing here decides anything about the protocol. The slot turns OS results into core events
and hands them to ``feed`` (the client's single entry into the machine), which may be called
from any of these threads.

Theory of operation: who reads stdout
-------------------------------------
A caller that waits alone (the client decides: ``Client._alone``) reads its own answer from
stdout in its own thread (``read_until``) instead of waiting for the stdout thread to read it
and wake it: two thread switches fewer per sequential call. Its request was written from its
own thread too (``write(alone=True)``), so a sequential call needs no other thread at all.

- **A step** is one read of stdout and the feed of what it gave (for a caller, after a poll of
  [stdout, wake-up pipe]). A step runs under ``_reading``, always taken with ``with``: two
  threads never read or feed stdout at the same time, and events reach ``feed`` in byte order
  whoever reads. ``with`` releases the lock even when KeyboardInterrupt unwinds the step
  (since 3.11 no interrupt can land between ``__enter__`` and the protected block), so the
  lock never stays taken by a thread that left. A caller's poll lasts at most
  ``_READ_SLICE_MS``; a caller that finds another thread's step in progress waits for it in
  such slices (``_renew``), renewing its lease and watching its ``done``, so a timeout or
  stop() still reaches it there.
- **The turn is a lease**, a time (``_lease_until``) and no count: while it lies ahead, the
  stdout thread leaves stdout to the callers. A reading caller renews it, to ``_LEASE`` ahead,
  before each step and while it waits for one; on its way out it shortens it (to ``_LINGER``
  ahead, or to now when other callers still wait, with a notify). Nothing has to run to end a
  lease: a caller that stops renewing for any reason (an exception, or a second Ctrl-C that
  skipped ``_give_back``) loses it at most ``_LEASE`` after its last renewal, and the stdout
  thread then reads on (notifications, late replies, EOF). Stale lease state costs time,
  never progress.
- **The stdout thread** waits on ``_turns`` while a lease runs, looking again every
  ``_LINGER`` (a caller that shortens its lease does not wake it: no thread switch per call).
  Once the lease ran out it reads, in one of two ways. After a lone caller (or before any):
  it polls stdout holding no lock and takes a step only if the data is still there and no
  lease was renewed meanwhile, so the next lone caller gets the turn at once. After a crowd
  (the last lease was handed back to other waiting callers, ``_crowd``): it waits for data
  in a plain blocking read under ``_reading``, one system call per chunk as before this
  design (a poll first adds a system call and a GIL round trip per chunk: in one interleaved
  series that was about 4% fewer calls/s at 16 and 256 in flight). A lone caller that comes
  then waits for that read (its own answer ends it) and is handed its answer once; its lease
  then brings the stdout thread back to the first way.
- **The wake-up pipe** gets a byte from ``wake`` when another thread answers a reading caller
  (the timer's RequestTimeout, stop()'s Close, a step of another reader), so its poll ends at
  once. Bytes are drained by whoever polls it; a stale one costs one empty step.
- **EOF** is left to the stdout thread: a caller that reads it sets ``_eof`` and returns; the
  stdout thread then tells the end of the process (StdoutClosed, ProcessExited) and closes
  the wake-up pipe. ``kill`` ends any lease, so stop() never waits for one.

Which thread runs callbacks: the actions a feed returns (progress callbacks, Log records,
``elicitation_complete``) run in the thread that read the bytes, inside its step: a reading
caller's own thread, or the stdout thread. A callback that blocks holds up stdout either way.

Lock order: ``_reading`` -> the client's lock -> ``_turns`` (and ``_freed``, the same lock)
or ``_stdin_lock``. Only ``_reading`` is held across a wait for data or a callback; ``_turns``
and ``_stdin_lock`` are held only for non-blocking work (a non-blocking pipe write included),
and no thread takes ``_reading`` while it holds ``_turns``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Literal

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

__all__ = ["ProcessSlot"]


_READ_SIZE = 65536
# A dead child makes writes fail at once and closes stderr; only a grandchild that inherited
# the pipes can keep them busy, and it must not hold ProcessExited back for long.
_DRAIN_BOUND = 1.0
# What is left of a caller's lease once it returns with nobody else waiting: a caller that
# calls again meanwhile still holds the turn, without waking the stdout thread. It is also how
# often that thread looks at a lease, so how late a notification can be seen between calls.
_LINGER = 0.01
# A caller reading stdout polls in slices of this many ms, so KeyboardInterrupt reaches the
# main thread promptly whichever thread the signal was delivered to (the client's _WAIT_SLICE).
_READ_SLICE_MS = 100
# How far ahead a caller renews its lease before each step: a few slices, so a live caller
# never loses it in the middle of one. The longest the stdout thread waits for a caller that
# stopped renewing without giving the turn back.
_LEASE = 3 * _READ_SLICE_MS / 1000


class ProcessSlot:
    """One server process of one slot. Writes queued before the process exists are kept and
    written, in order, once it runs; writes to a slot whose spawn failed are dropped."""

    def __init__(
        self, spawn: Spawn, feed: Callable[[Event], None], now: Callable[[], float]
    ) -> None:
        self.slot = spawn.slot
        self.generation = spawn.generation  # echoed by every event of this process
        self._spawn_action = spawn
        self._feed = feed
        self._now = now
        self._proc: subprocess.Popen[bytes] | None = None
        # bytes to write, or None: close stdin and stop the writer.
        self._writes: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        # Writes queued (counted by callers, under the client's lock) and written in full
        # (counted by the writer thread): each count has one writer, so neither needs a lock.
        self._queued_writes = self._written = 0
        self._stdin_lock = threading.Lock()  # guards _stdin: a direct write vs. the close
        self._stdin = -1  # stdin's fd (non-blocking) while the writer thread runs
        self._threads: list[threading.Thread] = []
        # Held across a whole spawn, so stop() never misses a process that is being started.
        self._spawning = threading.Lock()
        self._closed = False
        # Held with `with` for each step (poll, read, feed): one reader of stdout at a time.
        self._reading = threading.Lock()
        self._poll = select.poll()  # stdout and the wake-up pipe; used under _reading only
        self._stdout = -1  # stdout's fd, set before any reader starts
        turns = threading.Lock()  # guards the fields below; never held for blocking work
        self._turns = threading.Condition(turns)  # the stdout thread waits for leases to end
        self._freed = threading.Condition(turns)  # callers wait for a step in progress to end
        self._lease_until = 0.0  # callers read stdout until then (monotonic): the lease
        self._lessee = 0  # the thread that renewed it last (only it shortens it)
        self._step_waiters = 0  # callers in _freed.wait (a count left too high costs a notify)
        # The last lease was handed back to a crowd of waiting callers: the stdout thread then
        # waits for data in a blocking read under _reading (see the theory above).
        self._crowd = False
        self._eof = False  # stdout ended: nobody polls it any more
        # Ends a reader's poll at once; -1 before spawn and once closed.
        self._wake_r = self._wake_w = -1

    def write(self, data: bytes, *, alone: bool = False) -> None:
        """Write ``data`` to stdin after every write before (a failed write is fed back as
        WriteFailed by the writer thread); never blocks. Call it under the client's lock (it
        is, from ``Client._perform``): that keeps the write order the feed order.

        With ``alone`` (the client has at most one caller waiting) a message of up to PIPE_BUF
        bytes goes to the pipe at once from this thread when everything queued before has been
        written, saving the writer thread's wake-up; if the pipe has no room it is queued.
        Otherwise the writer thread writes whatever gathered meanwhile in one system call:
        measured, many callers each writing at once made the server read one message per
        wake-up and cost 40% at 256 in flight."""
        self._write(data, alone)

    def close_stdin(self) -> None:
        """Close stdin behind every write before; never blocks."""
        self._queued_writes += 1  # never counted as written: no direct write after it
        self._writes.put(None)

    def _write(self, data: bytes, alone: bool) -> None:
        """Called under the client's lock, so callers count ``_queued_writes`` one at a time."""
        if alone and self._written == self._queued_writes and len(data) <= select.PIPE_BUF:
            # Nothing queued is still unwritten, so nothing can be overtaken. Up to PIPE_BUF a
            # pipe write is all or nothing: an interrupt never leaves half a message behind.
            # An error is left for the writer thread to meet again and feed.
            with self._stdin_lock, contextlib.suppress(OSError):
                if self._stdin >= 0:
                    os.write(self._stdin, data)
                    return
        # Counted before it is queued: a count too high only turns direct writes off; too low
        # would let one overtake a write in progress. (No call in between, so no interrupt.)
        self._queued_writes += 1
        self._writes.put(data)

    def start(self) -> None:
        """Spawn the process and start its threads, feeding ProcessSpawned (before any reader
        feeds) or SpawnFailed. Blocks only for fork/exec; call it without holding the machine
        lock. Does nothing once ``kill`` ran."""
        with self._spawning:
            if not self._closed:
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
            # Missing, not executable or a bad cwd is permanent (SPEC §7).
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
            return
        assert proc.stdout is not None
        self._proc = proc
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        self._poll.register(proc.stdout.fileno(), select.POLLIN)
        self._poll.register(wake_r, select.POLLIN)
        with self._turns:
            self._stdout, self._wake_r, self._wake_w = proc.stdout.fileno(), wake_r, wake_w
        self._feed(
            ProcessSpawned(
                now=self._now(), slot=self.slot, generation=self.generation, pid=proc.pid
            ),
        )
        writer = self._thread(self._write_loop, "stdin")
        stderr = self._thread(self._stderr_loop, "stderr")
        self._thread(lambda: self._stdout_loop(writer, stderr), "stdout")

    @property
    def finished(self) -> bool:
        """True once the process (if any) was reaped and every thread of this slot ended."""
        return not any(thread.is_alive() for thread in self._threads)

    def signal(self, name: Literal["SIGTERM", "SIGKILL"]) -> None:
        """Signal the process group; a group that is already gone is not an error."""
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, getattr(signal, name))

    def kill(self) -> None:
        """Safety net: SIGKILL the group (whatever the machine did), spawn nothing any more,
        end any lease and stop the writer. Never blocks for long; ``join`` waits."""
        with self._spawning:
            self._closed = True
        with self._turns:  # no lease outlives stop(): the stdout thread reads the EOF at once
            self._lease_until = 0.0
            self._turns.notify()
        self.signal("SIGKILL")
        self._writes.put(None)

    def join(self, deadline: float) -> None:
        """After ``kill``: reap the child and join the threads by ``deadline`` (threads still
        blocked then are daemons and are left behind)."""
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(max(0.0, deadline - time.monotonic()))
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # --- reading stdout --------------------------------------------------------------------

    def read_until(self, done: threading.Event, others_waiting: Callable[[], bool]) -> None:
        """Read stdout in the calling thread, feeding what it reads, until ``done`` is set
        (by this thread's feed, or by another thread that then calls ``wake``) or stdout ends
        (the stdout thread then tells the end of the process). Returns at once before spawn.
        On the way out the lease is shortened: to now when ``others_waiting()`` (their answers
        are the stdout thread's to read) or on an exception, else to ``_LINGER`` ahead. If that
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
        crowd = others_waiting()
        self._give_back(me, linger=not crowd, crowd=crowd)

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

    def _give_back(self, me: int, *, linger: bool, crowd: bool = False) -> None:
        """Shorten the lease this caller renewed last (a later renewal by another caller
        stands): to ``_LINGER`` ahead, or end it and wake the stdout thread. ``crowd``: other
        callers wait, so the stdout thread reads the way it does for many callers."""
        with self._turns:
            if self._lessee == me:
                self._lessee, self._crowd = 0, crowd
                if linger:
                    self._lease_until = time.monotonic() + _LINGER
                else:
                    self._lease_until = 0.0
                    self._turns.notify()

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
        """Under ``_reading``: read stdout and feed what came (a caller reads once its poll saw
        data; after a crowd the stdout thread's read waits for it). False at EOF, which is
        recorded for everyone."""
        data = os.read(self._stdout, _READ_SIZE)
        if not data:
            with self._turns:
                self._eof = True
                self._turns.notify()  # the stdout thread tells the end of the process
                self._freed.notify_all()  # callers waiting for a step: nothing left to read
            return False
        self._feed(
            StdoutReceived(now=self._now(), slot=self.slot, generation=self.generation, data=data),
        )
        return True

    def _stdout_loop(self, writer: threading.Thread, stderr: threading.Thread) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        idle = select.poll()  # stdout alone: this thread's wait for data, under no lock
        idle.register(self._stdout, select.POLLIN)
        while True:
            with self._turns:
                # While a lease runs, callers read. Look again every _LINGER: a caller that
                # shortens its lease does not notify (that would be a thread switch per call).
                while not self._eof and (left := self._lease_until - time.monotonic()) > 0:
                    self._turns.wait(min(left, _LINGER))
                crowd = self._crowd
            if self._eof:
                break
            if not crowd:
                idle.poll()  # data or EOF, without the lock: a lone caller may take it first
            with self._reading:
                # Not if a caller renewed its lease meanwhile, or took the data. In a crowd
                # the read itself waits for the data.
                ours = self._lease_until <= time.monotonic() and (crowd or bool(idle.poll(0)))
                if self._eof or (ours and not self._read()):
                    break
            if self._step_waiters:
                with self._turns:
                    self._freed.notify()
        with self._turns:  # nobody polls any more (_eof): the fds can go
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1
        self._proc.stdout.close()
        self._feed(StdoutClosed(now=self._now(), slot=self.slot, generation=self.generation))
        returncode = self._proc.wait()
        # Everything this process caused (write failures, the stderr tail the error message
        # quotes) is fed before ProcessExited, so a respawn never sees stale events.
        self._writes.put(None)
        writer.join(_DRAIN_BOUND)
        stderr.join(_DRAIN_BOUND)
        self._feed(
            ProcessExited(
                now=self._now(),
                slot=self.slot,
                generation=self.generation,
                returncode=returncode,
            ),
        )

    # ---------------------------------------------------------------------------------------

    def _thread(self, target: Callable[[], None], what: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=f"mcp-sync-{what}-{self.slot}", daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def _stderr_loop(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        fd = self._proc.stderr.fileno()
        while data := os.read(fd, _READ_SIZE):
            self._feed(
                StderrReceived(
                    now=self._now(), slot=self.slot, generation=self.generation, data=data
                ),
            )
        self._proc.stderr.close()

    def _write_loop(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        stdin = self._proc.stdin
        os.set_blocking(stdin.fileno(), False)
        room = select.poll()
        room.register(stdin.fileno(), select.POLLOUT)
        with self._stdin_lock:
            self._stdin = stdin.fileno()
        try:
            while (data := self._writes.get()) is not None:
                # Batch what is already queued into one write (many threads calling at once).
                batch, closing = [data], False
                while True:
                    try:
                        more = self._writes.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        closing = True
                        break
                    batch.append(more)
                view = memoryview(b"".join(batch) if len(batch) > 1 else data)
                while view:
                    try:
                        view = view[os.write(stdin.fileno(), view) :]
                    except BlockingIOError:
                        # A dead reader makes the pipe "writable" (the write then fails), and
                        # stop kills the process: this wait ends.
                        room.poll()
                self._written += len(batch)
                if closing:
                    break
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            self._feed(
                WriteFailed(
                    now=self._now(), slot=self.slot, generation=self.generation, reason=reason
                ),
            )
        finally:
            with self._stdin_lock:
                self._stdin = -1  # no direct write from here on (the fd number may be reused)
            with contextlib.suppress(OSError):
                stdin.close()
