"""One stdio server process: spawn it, pump its pipes, reap it (the anyio I/O edge).

A ``ProcessSlot`` holds only I/O handles, never protocol state. It turns what happens to the
process into events through ``feed`` and performs the stdio actions the machine asks for.
Library exceptions are mapped to events here and nowhere else (STYLE 12).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
from collections.abc import Callable
from typing import Literal

import anyio
from anyio.abc import Process

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
    inherit_environment,
)

__all__ = ["ProcessSlot"]

# Once the process is reaped its stderr is at EOF too, unless a grandchild still holds the pipe:
# wait this long for the last stderr bytes (the tail of ServerExited), then stop reading.
_STDERR_DRAIN = 1.0

_CLOSE = None  # the CloseStdin marker in the write queue

_MISSING = (FileNotFoundError, PermissionError, NotADirectoryError)


class ProcessSlot:
    """The process of one ``Spawn`` action and the ordered queue of writes to its stdin.

    Writes and the stdin close are queued at once (``write``/``close_stdin`` never block) and
    performed in order by a writer task, so a full pipe never blocks the machine.
    """

    def __init__(
        self, slot: int, feed: Callable[[ProcessSlot, Event], None], now: Callable[[], float]
    ) -> None:
        self.slot = slot
        self._feed_to = feed
        self._now = now
        self._send, self._receive = anyio.create_memory_object_stream[bytes | None](math.inf)
        self.process: Process | None = None

    def write(self, data: bytes) -> None:
        """Queue ``data`` for stdin. Dropped if the process is already gone."""
        self._put(data)

    def close_stdin(self) -> None:
        """Queue the close of stdin, after every write queued before it."""
        self._put(_CLOSE)

    def _feed(self, event: Event) -> None:
        self._feed_to(self, event)

    def _put(self, item: bytes | None) -> None:
        # Once the process has ended its writer is gone: the machine gets ProcessExited.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._send.send_nowait(item)

    def signal(self, name: Literal["SIGTERM", "SIGKILL"]) -> None:
        """Send ``name`` to the process group; nothing happens if it has no process (yet)."""
        if self.process is not None:
            _killpg(self.process.pid, signal.Signals[name])

    def kill(self) -> None:
        """Safety net: SIGKILL the group if the process has not been reaped."""
        if self.process is not None and self.process.returncode is None:
            _killpg(self.process.pid, signal.SIGKILL)

    async def run(self, spawn: Spawn) -> None:
        """Spawn, pump the pipes until stdout EOF, reap, feed ``ProcessExited``.

        A failed spawn is fed as ``SpawnFailed`` (``missing`` for a missing or unusable
        executable or cwd). If cancelled, the process group is killed and the process reaped.
        """
        with self._send, self._receive:  # later writes are dropped once the process is gone
            process = await self._spawn(spawn)
            if process is None:
                return
            self.process = process
            try:
                self._feed(ProcessSpawned(now=self._now(), slot=self.slot, pid=process.pid))
                async with anyio.create_task_group() as pumps:
                    pumps.start_soon(self._write_stdin, process)
                    stderr_done = anyio.Event()
                    pumps.start_soon(self._read_stderr, process, stderr_done)
                    await self._read_stdout(process)
                    returncode = await process.wait()
                    with anyio.move_on_after(_STDERR_DRAIN):
                        await stderr_done.wait()
                    pumps.cancel_scope.cancel()  # the writer: nobody reads stdin any more
                self._feed(ProcessExited(now=self._now(), slot=self.slot, returncode=returncode))
            finally:
                with anyio.CancelScope(shield=True):
                    self.kill()
                    await process.aclose()

    @classmethod
    def background_functions(cls) -> tuple[Callable[..., object], ...]:
        """The coroutine functions that run as background tasks (see ``_client``'s KI note)."""
        return (cls._spawn, cls._write_stdin, cls._read_stdout, cls._read_stderr)

    async def _spawn(self, spawn: Spawn) -> Process | None:
        env = inherit_environment(os.environ, spawn.inherit) | dict(spawn.env)
        try:
            # Shielded so that a cancellation cannot lose a process that was already created.
            with anyio.CancelScope(shield=True):
                process = await anyio.open_process(
                    list(spawn.argv),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=env,
                    cwd=spawn.cwd,
                    start_new_session=True,
                )
        except OSError as exc:
            # The reason names the file (the command or the cwd), never an env value.
            reason = exc.strerror or type(exc).__name__
            if exc.filename is not None:
                reason = f"{reason}: {exc.filename}"
            missing = isinstance(exc, _MISSING)
            self._feed(SpawnFailed(now=self._now(), slot=self.slot, reason=reason, missing=missing))
            return None
        return process

    async def _write_stdin(self, process: Process) -> None:
        assert process.stdin is not None
        done = False  # after a failure or the close, later items are dropped
        async for item in self._receive:
            if done:
                continue
            try:
                if item is _CLOSE:
                    done = True
                    await process.stdin.aclose()
                    continue
                # Batch what is already queued into one write: many callers at once would
                # otherwise cost a system call (and a scheduler turn) per message.
                batch = [item]
                closing = False
                while True:
                    try:
                        queued = self._receive.receive_nowait()
                    except anyio.WouldBlock:
                        break
                    if queued is _CLOSE:
                        closing = True
                        break
                    batch.append(queued)
                await process.stdin.send(b"".join(batch) if len(batch) > 1 else item)
                if closing:
                    done = True
                    await process.stdin.aclose()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                done = True
                reason = f"cannot write to the server's stdin: {type(exc).__name__}"
                self._feed(WriteFailed(now=self._now(), slot=self.slot, reason=reason))

    async def _read_stdout(self, process: Process) -> None:
        assert process.stdout is not None
        try:
            async for chunk in process.stdout:
                self._feed(StdoutReceived(now=self._now(), slot=self.slot, data=chunk))
        except (anyio.BrokenResourceError, OSError):
            pass  # a broken pipe ends the stream like EOF does
        self._feed(StdoutClosed(now=self._now(), slot=self.slot))

    async def _read_stderr(self, process: Process, done: anyio.Event) -> None:
        assert process.stderr is not None
        try:
            async for chunk in process.stderr:
                self._feed(StderrReceived(now=self._now(), slot=self.slot, data=chunk))
        except (anyio.BrokenResourceError, OSError):
            pass
        done.set()


def _killpg(pid: int, signum: int) -> None:
    # The process leads its own session (start_new_session), so its group id is its pid.
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass  # already gone
    except PermissionError:
        pass  # macOS answers EPERM for a group whose members are all zombies
