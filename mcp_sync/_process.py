"""The I/O handles of one stdio slot: a child process, two reader threads and a writer thread.

Nothing here decides anything about the protocol. The slot turns OS results into core events
and hands them to ``feed`` (the client's single entry into the machine), which may be called
from any of these threads.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Literal

from mcp_core import (
    CloseStdin,
    Event,
    ProcessExited,
    ProcessSpawned,
    SignalProcess,
    Spawn,
    SpawnFailed,
    StderrReceived,
    StdoutClosed,
    StdoutReceived,
    WriteFailed,
    WriteStdin,
    inherit_environment,
)

__all__ = ["ProcessSlot"]

Feed = Callable[["ProcessSlot", Event], None]

_READ_SIZE = 65536
# A dead child makes writes fail at once and closes stderr; only a grandchild that inherited
# the pipes can keep them busy, and it must not hold ProcessExited back for long.
_DRAIN_BOUND = 1.0


class ProcessSlot:
    """One server process of one slot. Writes queued before the process exists are kept and
    written, in order, once it runs; writes to a slot whose spawn failed are dropped."""

    def __init__(self, slot: int, feed: Feed) -> None:
        self.slot = slot
        self._feed = feed
        self._proc: subprocess.Popen[bytes] | None = None
        # bytes to write, or None: close stdin and stop the writer.
        self._writes: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        # Held across a whole spawn, so stop() never misses a process that is being started.
        self._spawning = threading.Lock()
        self._closed = False

    def perform(self, action: WriteStdin | CloseStdin | SignalProcess) -> None:
        """Queue a write (a failed one is fed back as WriteFailed) or the closing of stdin
        behind the writes queued before, or send a signal; never blocks."""
        if isinstance(action, WriteStdin):
            self._writes.put(action.data)
        elif isinstance(action, CloseStdin):
            self._writes.put(None)
        else:
            self.signal(action.signal)

    def spawn(self, action: Spawn) -> None:
        """Start the process and its threads, feeding ProcessSpawned (before any reader feeds)
        or SpawnFailed. Blocks only for fork/exec; call it without holding the machine lock.
        Does nothing once ``kill_and_join`` ran."""
        with self._spawning:
            if not self._closed:
                self._spawn(action)

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
            # Missing, not executable or a bad cwd is permanent (SPEC §7). exc.filename is the
            # executable or the cwd: the reason never shows env values.
            missing = isinstance(exc, FileNotFoundError | PermissionError | NotADirectoryError)
            reason = exc.strerror or type(exc).__name__
            if exc.filename is not None:
                reason = f"{reason}: {exc.filename}"
            self._feed(
                self,
                SpawnFailed(now=time.monotonic(), slot=self.slot, reason=reason, missing=missing),
            )
            return
        self._proc = proc
        self._feed(self, ProcessSpawned(now=time.monotonic(), slot=self.slot, pid=proc.pid))
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

    def kill_and_join(self, deadline: float) -> None:
        """Last-resort cleanup: kill the group, reap the child, join the threads by ``deadline``
        (threads still blocked then are daemons and are left behind)."""
        with self._spawning:
            self._closed = True
        self.signal("SIGKILL")
        self._writes.put(None)
        if self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(max(0.0, deadline - time.monotonic()))
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _thread(self, target: Callable[[], None], what: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=f"mcp-sync-{what}-{self.slot}", daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def _stdout_loop(self, writer: threading.Thread, stderr: threading.Thread) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while data := os.read(fd, _READ_SIZE):
            self._feed(self, StdoutReceived(now=time.monotonic(), slot=self.slot, data=data))
        self._proc.stdout.close()
        self._feed(self, StdoutClosed(now=time.monotonic(), slot=self.slot))
        returncode = self._proc.wait()
        # Everything this process caused (write failures, the stderr tail the error message
        # quotes) is fed before ProcessExited, so a respawn never sees stale events.
        self._writes.put(None)
        writer.join(_DRAIN_BOUND)
        stderr.join(_DRAIN_BOUND)
        self._feed(self, ProcessExited(now=time.monotonic(), slot=self.slot, returncode=returncode))

    def _stderr_loop(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        fd = self._proc.stderr.fileno()
        while data := os.read(fd, _READ_SIZE):
            self._feed(self, StderrReceived(now=time.monotonic(), slot=self.slot, data=data))
        self._proc.stderr.close()

    def _write_loop(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        stdin = self._proc.stdin
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
                    view = view[os.write(stdin.fileno(), view) :]
                if closing:
                    break
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            self._feed(self, WriteFailed(now=time.monotonic(), slot=self.slot, reason=reason))
        finally:
            with contextlib.suppress(OSError):
                stdin.close()
