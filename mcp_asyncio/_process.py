# Written twice, by hand (mcp_sync/_process.py is its twin): the pipes of a server process are
# read by event-loop callbacks (asyncio) or tasks (trio) here, by a shared I/O thread or the
# waiting caller's own thread there, and each waits for the process its own way. What the two
# share without any waiting (wording a failed spawn) is _mcp_io's.
"""One stdio server process: spawn it, pump its pipes, reap it (the anyio I/O edge).

A ``ProcessSlot`` holds only I/O handles, never protocol state. It turns what happens to the
process into events through ``feed`` and performs the stdio actions the machine asks for.
Library exceptions are mapped to events here and nowhere else.

What an idle session's process holds: on asyncio one task, the one that awaits
``run``, and no thread. The pipes are read by callbacks: on asyncio the event loop calls them
when a pipe is readable (``loop.add_reader``: no task, no thread); on trio a task waits for
each pipe (``anyio.wait_readable``: stdout in the process's own task, stderr and the stdin
writer in two more, as before) and calls the same callback. The process is spawned with
``subprocess.Popen`` rather than asyncio's subprocess support, whose child watcher is a thread
per process on Python < 3.12; it is reaped once its stdout ended, by waiting for its pidfd
(Linux) or, elsewhere, by polling ``waitpid``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import signal
import subprocess
from collections.abc import Callable
from typing import Literal

import anyio

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

try:
    import sniffio
except ImportError:  # anyio then finds asyncio by its running loop, which callbacks have
    sniffio = None  # type: ignore[assignment]

__all__ = ["ProcessSlot", "callback_context"]

# Once the process is reaped its stderr is at EOF too, unless a grandchild still holds the pipe:
# wait this long for the last stderr bytes (the tail of ServerExited), then stop reading.
_STDERR_DRAIN = 1.0
_READ_SIZE = 65536
# Without a pidfd the reaper polls waitpid from this interval, doubling up to the longest.
_REAP_POLL = (0.001, 0.05)
# A killed process exits at once unless the kernel holds it (uninterruptible sleep): how long
# kill_and_reap waits for it, blocking, when there is no loop to wait in.
_REAP_WITHOUT_LOOP = 1.0


class ProcessSlot:
    """The process of one ``Spawn`` action and the writes to its stdin, in order.

    stdin is a pipe of our own whose write end is non-blocking: ``write`` writes at once, in
    the caller's own step, what the pipe takes (one system call, no task switch: the common
    case), and leaves the rest in a backlog that is flushed when the pipe can take more (by a
    writable callback on asyncio, a writer task on trio); later writes join the backlog, so
    order holds. ``write``/``close_stdin`` never block and never feed an event (they run while
    the client performs actions): a failed write is reported later, as ``WriteFailed``.
    """

    def __init__(
        self, spawn: Spawn, feed: Callable[[Event], None], now: Callable[[], float]
    ) -> None:
        self.slot = spawn.slot
        self.generation = spawn.generation  # echoed by every event of this process
        self._spawn_action = spawn
        self._feed = feed
        self._now = now
        self.process: subprocess.Popen[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # asyncio: callbacks, not tasks
        self._stdin: int | None = None  # our end of the stdin pipe, while it is open
        # Written in order once the pipe takes more (a list: an empty deque is 760 bytes).
        self._backlog: list[bytes | memoryview] = []
        self._closing = False  # close_stdin() was called: close once the backlog is written
        self._failure: str | None = None  # a write failed: later writes are dropped
        self._watching_stdin = False  # asyncio: a writable callback is registered
        self._wake: anyio.Event | None = None  # trio: set when the writer task has work
        self._stdout_done: Flag | None = None  # set at stdout EOF
        self._stderr_done: Flag | None = None  # set at stderr EOF
        self._stdout_fd = self._stderr_fd = -1

    def write(self, data: bytes) -> None:
        """Write ``data`` to stdin now, or after what is already waiting. Dropped once stdin is
        closed, a write failed, or the process is gone."""
        if self._stdin is None or self._closing or self._failure is not None:
            return
        if self._backlog:
            self._backlog.append(data)
        else:
            # At once, not batched per loop iteration: measured, the server starting on each
            # request while the next callers run beats fewer system calls (about 42k vs 34k calls/s
            # at 256 in flight). Sending the first write of an iteration at once and joining the
            # rest lost too on a quiet machine (37k vs 47k; it won only under heavy load).
            self._write_now(data)

    def close_stdin(self) -> None:
        """Close stdin after every write made before."""
        if self._stdin is None or self._closing:
            return
        self._closing = True
        if not self._backlog:
            self._close_pipe()

    def _write_now(self, data: bytes) -> None:
        assert self._stdin is not None
        try:
            written = os.write(self._stdin, data)
        except BlockingIOError:
            written = 0
        except OSError as exc:  # EPIPE: the server closed its stdin or exited
            self._fail(exc)
            return
        if written < len(data):
            self._backlog.append(data[written:])
            self._stdin_has_work()

    def _fail(self, exc: OSError) -> None:
        self._failure = f"cannot write to the server's stdin: {type(exc).__name__}"
        self._backlog.clear()
        self._stdin_has_work()

    def _stdin_has_work(self) -> None:
        """A backlog to flush or a failure to report: on asyncio the loop calls
        ``_service_stdin`` once the pipe is writable (a broken pipe is "writable" too)."""
        if self._loop is None:
            if self._wake is not None:
                self._wake.set()
        elif not self._watching_stdin and self._stdin is not None:
            self._watching_stdin = True
            self._loop.add_writer(self._stdin, callback_context().run, self._service_stdin)

    def _service_stdin(self) -> None:
        """Flush what the pipe takes; once the backlog is gone, stop watching it, close stdin
        if asked, and feed ``WriteFailed`` after a failed write (asyncio's writable callback,
        and one round of the trio writer task)."""
        if self._backlog and self._stdin is not None:
            self._flush()
            if self._backlog:
                return  # wait for more room
        self._unwatch_stdin()
        if self._failure is not None:
            if self._stdin is not None:  # reported once: the pipe closes here
                self._close_pipe()
                self._feed(
                    WriteFailed(
                        now=self._now(),
                        slot=self.slot,
                        generation=self.generation,
                        reason=self._failure,
                    )
                )
        elif self._closing:
            self._close_pipe()

    def _unwatch_stdin(self) -> None:
        if self._watching_stdin:
            self._watching_stdin = False
            assert self._loop is not None and self._stdin is not None
            self._loop.remove_writer(self._stdin)

    def _close_pipe(self) -> None:
        self._unwatch_stdin()
        if self._stdin is not None:
            fd, self._stdin = self._stdin, None
            os.close(fd)

    def signal(self, name: Literal["SIGTERM", "SIGKILL"]) -> None:
        """Send ``name`` to the process group; nothing happens if it has no process (yet)."""
        if self.process is not None:
            _killpg(self.process.pid, signal.Signals[name])

    def kill(self) -> None:
        """Safety net: SIGKILL the group if the process has not been reaped."""
        if self.process is not None and self.process.returncode is None:
            _killpg(self.process.pid, signal.SIGKILL)

    def kill_and_reap(self) -> None:
        """No event loop runs any more (a client dropped after its loop ended): SIGKILL the
        group and reap the process here, waiting for it at most ``_REAP_WITHOUT_LOOP``."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        _killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            process.wait(timeout=_REAP_WITHOUT_LOOP)

    async def run(self) -> None:
        """Spawn, pump the pipes until stdout EOF, reap, feed ``ProcessExited``: the process's
        whole life, in the task that awaits it.

        A failed spawn is fed as ``SpawnFailed`` (``missing`` for a missing or unusable
        executable or cwd). If cancelled, the process group is killed and the process reaped.
        """
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:  # trio: its writer task waits for this
            self._wake = anyio.Event()
        process = self._spawn(self._spawn_action)
        if process is None:
            return
        assert process.stdout is not None and process.stderr is not None
        stdout = self._stdout_fd = process.stdout.fileno()
        stderr = self._stderr_fd = process.stderr.fileno()
        self.process = process
        self._stdout_done, self._stderr_done = Flag(self._loop), Flag(self._loop)
        try:
            self._feed(
                ProcessSpawned(
                    now=self._now(), slot=self.slot, generation=self.generation, pid=process.pid
                )
            )
            if self._loop is not None:
                self._loop.add_reader(stdout, callback_context().run, self._on_stdout)
                self._loop.add_reader(stderr, callback_context().run, self._on_stderr)
                try:
                    returncode = await self._life(process)
                finally:
                    # No-ops for a reader its EOF removed already.
                    self._loop.remove_reader(stdout)
                    self._loop.remove_reader(stderr)
            else:
                async with anyio.create_task_group() as pumps:
                    pumps.start_soon(self._write_stdin)
                    pumps.start_soon(self._pump, stderr, self._on_stderr, self._stderr_done)
                    await self._pump(stdout, self._on_stdout, self._stdout_done)  # this task
                    returncode = await self._life(process)
                    pumps.cancel_scope.cancel()  # the writer, and a stderr held by a grandchild
            self._feed(
                ProcessExited(
                    now=self._now(),
                    slot=self.slot,
                    generation=self.generation,
                    returncode=returncode,
                )
            )
        finally:
            self._backlog.clear()
            self._close_pipe()  # later writes are dropped once the process is gone
            with anyio.CancelScope(shield=True):
                self.kill()
                await _reap(process)
            process.stdout.close()
            process.stderr.close()

    async def _life(self, process: subprocess.Popen[bytes]) -> int:
        """Wait for stdout's end, reap the process, then give stderr up to ``_STDERR_DRAIN``
        for its last bytes. Returns the exit status."""
        assert self._stdout_done is not None and self._stderr_done is not None
        await self._stdout_done.wait()
        returncode = await _reap(process)
        with anyio.move_on_after(_STDERR_DRAIN):
            await self._stderr_done.wait()
        return returncode

    @classmethod
    def background_functions(cls) -> tuple[Callable[..., object], ...]:
        """The coroutine functions that run as background tasks (see ``_client``'s KI note)."""
        return (cls._write_stdin, cls._pump)

    def _spawn(self, spawn: Spawn) -> subprocess.Popen[bytes] | None:
        env = inherit_environment(os.environ, spawn.inherit) | dict(spawn.env)
        # Both ends are non-inheritable (PEP 446): the child gets the read end as its fd 0 only.
        # Popen returns once the child has exec'd (or failed to): no await, so no cancellation
        # can lose a process that was already created.
        theirs, ours = os.pipe()
        try:
            process = subprocess.Popen(
                list(spawn.argv),
                stdin=theirs,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=env,
                cwd=spawn.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(ours)
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
            return None
        finally:
            os.close(theirs)
        assert process.stdout is not None and process.stderr is not None
        for fd in (ours, process.stdout.fileno(), process.stderr.fileno()):
            os.set_blocking(fd, False)
        self._stdin = ours
        return process

    async def _pump(self, fd: int, on_readable: Callable[[], None], done: Flag) -> None:
        """trio: call ``on_readable`` each time ``fd`` is readable, until its EOF."""
        while not done.is_set():
            await anyio.wait_readable(fd)
            on_readable()

    async def _write_stdin(self) -> None:
        """trio: flush the backlog whenever ``write`` leaves one, report a failed write, close
        stdin when asked (``_service_stdin``)."""
        while True:
            assert self._wake is not None
            await self._wake.wait()
            self._wake = anyio.Event()
            while self._backlog and self._stdin is not None:
                await anyio.wait_writable(self._stdin)
                self._flush()
            self._service_stdin()
            if self._stdin is None:
                return

    def _flush(self) -> None:
        """Write the backlog, joined into one write, as far as the pipe takes it."""
        assert self._stdin is not None
        if not self._backlog:
            return
        backlog = self._backlog
        data = backlog[0] if len(backlog) == 1 else memoryview(b"".join(backlog))
        try:
            written = os.write(self._stdin, data)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            self._fail(exc)
            return
        # A memoryview: what is left of a big write is not copied again.
        self._backlog = [memoryview(data)[written:]] if written < len(data) else []

    def _on_stdout(self) -> None:
        data = _read(self._stdout_fd)
        if data:
            self._feed(
                StdoutReceived(
                    now=self._now(), slot=self.slot, generation=self.generation, data=data
                )
            )
        elif data is not None:  # the end
            assert self._stdout_done is not None
            if self._loop is not None:
                self._loop.remove_reader(self._stdout_fd)
            self._stdout_done.set()
            self._feed(StdoutClosed(now=self._now(), slot=self.slot, generation=self.generation))

    def _on_stderr(self) -> None:
        data = _read(self._stderr_fd)
        if data:
            self._feed(
                StderrReceived(
                    now=self._now(), slot=self.slot, generation=self.generation, data=data
                )
            )
        elif data is not None:
            assert self._stderr_done is not None
            if self._loop is not None:
                self._loop.remove_reader(self._stderr_fd)
            self._stderr_done.set()


class Flag:
    """Set once and awaited: a bare future on asyncio (an ``anyio.Event`` holds an
    ``asyncio.Event`` and its deque, about 760 bytes an idle session need not keep), anyio's
    event on trio. On asyncio a cancelled wait cancels the future: one with ``shared`` waiters
    shields it (about 400 bytes per wait), so that one waiter's timeout or cancellation is not
    every waiter's; one with a single waiter need not."""

    __slots__ = ("_event", "_future", "_shared")

    def __init__(self, loop: asyncio.AbstractEventLoop | None, *, shared: bool = False) -> None:
        self._future = None if loop is None else loop.create_future()
        self._event = anyio.Event() if loop is None else None
        self._shared = shared

    def set(self) -> None:
        if self._future is None:
            assert self._event is not None
            self._event.set()
        elif not self._future.done():  # a wait that timed out cancelled it
            self._future.set_result(None)

    def is_set(self) -> bool:
        if self._future is None:
            assert self._event is not None
            return self._event.is_set()
        return self._future.done() and not self._future.cancelled()

    async def wait(self) -> None:
        if self._future is None:
            assert self._event is not None
            await self._event.wait()
        elif self._shared:
            await asyncio.shield(self._future)
        else:
            await self._future


def callback_context() -> contextvars.Context:
    """A copy of the current context in which anyio knows it runs on asyncio, for what the
    event loop calls outside any task (a reader callback, a timer handle): a feed there may
    start a task (``start_soon``), and anyio, when sniffio is installed, looks for the async
    library in a context variable or else in the current task, which a callback has not."""
    context = contextvars.copy_context()
    if sniffio is not None:
        context.run(sniffio.current_async_library_cvar.set, "asyncio")
    return context


def _read(fd: int) -> bytes | None:
    """One read of a readable pipe: its bytes, ``b""`` at its end (a broken pipe ends it like
    EOF does), None when there was nothing after all."""
    try:
        return os.read(fd, _READ_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""


async def _reap(process: subprocess.Popen[bytes]) -> int:
    """Wait for ``process`` to exit and reap it, without a thread: on Linux its pidfd becomes
    readable when it exits; elsewhere ``waitpid`` is polled, from 1 ms up to every 50 ms."""
    if process.returncode is not None:
        return process.returncode
    pidfd = -1
    if hasattr(os, "pidfd_open"):
        with contextlib.suppress(OSError):  # ENOSYS (an old kernel): poll instead
            pidfd = os.pidfd_open(process.pid)
    if pidfd >= 0:
        try:
            await anyio.wait_readable(pidfd)
        finally:
            os.close(pidfd)
        return process.wait()
    delay, longest = _REAP_POLL
    while (returncode := process.poll()) is None:
        await anyio.sleep(delay)
        delay = min(2 * delay, longest)
    return returncode


def _killpg(pid: int, signum: int) -> None:
    # The process leads its own session (start_new_session), so its group id is its pid.
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass  # already gone
    except PermissionError:
        pass  # macOS answers EPERM for a group whose members are all zombies
