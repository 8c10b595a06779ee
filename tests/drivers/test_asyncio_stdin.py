"""The anyio driver's stdin pipe (mcp_asyncio/_process.py): written at once while the pipe
takes it, the rest kept in order and flushed by the writer task, closed only after everything
before the close, and a failed write reported as ``WriteFailed`` by the writer, never from
``write`` itself. Real child processes, on asyncio and on trio."""

from __future__ import annotations

import hashlib
import os
import signal
import sys

import anyio
import pytest

from mcp_asyncio._process import ProcessSlot
from mcp_core import Event, ProcessExited, Spawn, StdoutReceived, WriteFailed
from tests.drivers.backends import anyio_backends  # noqa: F401 (asyncio and trio)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

PIPE_BUFFER = 65536  # Linux's default pipe capacity: a bigger write cannot go out at once


class Events:
    """What a slot feeds, with a way to wait for one kind."""

    def __init__(self) -> None:
        self.seen: list[Event] = []
        self._changed = anyio.Event()

    def feed(self, event: Event) -> None:
        self.seen.append(event)
        self._changed.set()

    async def wait_for(self, kind: type[Event]) -> Event:
        with anyio.fail_after(30):
            while True:
                for event in self.seen:
                    if isinstance(event, kind):
                        return event
                self._changed = anyio.Event()
                await self._changed.wait()

    def stdout(self) -> bytes:
        return b"".join(e.data for e in self.seen if isinstance(e, StdoutReceived))


def _spawn(code: str) -> Spawn:
    return Spawn(
        slot=0, generation=1, argv=(sys.executable, "-c", code), env={}, cwd=None, inherit=("PATH",)
    )


async def test_writes_beyond_the_pipe_buffer_arrive_whole_and_in_order() -> None:
    # The child reads only when told (SIGUSR1), so the writes below must fill the pipe.
    code = (
        "import hashlib, signal, sys\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
        "print('ready', flush=True)\n"
        "signal.sigwait({signal.SIGUSR1})\n"
        "data = sys.stdin.buffer.read()\n"
        "print(len(data), hashlib.sha256(data).hexdigest(), flush=True)\n"
    )
    events = Events()
    slot = ProcessSlot(_spawn(code), events.feed, lambda: 0.0)
    chunks = [bytes([65 + i % 26]) * (PIPE_BUFFER // 2 + i) for i in range(8)]
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(slot.run)
        await events.wait_for(StdoutReceived)  # "ready": the signal is blocked, not fatal
        for chunk in chunks:
            slot.write(chunk)
        assert slot._backlog, "the pipe should have filled: nothing was left to the writer"
        slot.close_stdin()
        slot.write(b"after the close: dropped")
        assert slot.process is not None
        os.kill(slot.process.pid, signal.SIGUSR1)
        await events.wait_for(ProcessExited)
    whole = b"".join(chunks)
    assert events.stdout().split() == [
        b"ready",
        str(len(whole)).encode(),
        hashlib.sha256(whole).hexdigest().encode(),
    ]
    assert not any(isinstance(e, WriteFailed) for e in events.seen)


async def test_a_write_to_a_closed_pipe_is_reported_by_the_writer() -> None:
    # The child closes its stdin, says so, and lingers until it is killed.
    code = "import os, time\nos.close(0)\nprint('closed', flush=True)\ntime.sleep(60)\n"
    events = Events()
    slot = ProcessSlot(_spawn(code), events.feed, lambda: 0.0)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(slot.run)
        await events.wait_for(StdoutReceived)
        slot.write(b"x" * 10)  # EPIPE: nothing is fed from here
        assert not any(isinstance(e, WriteFailed) for e in events.seen)
        failed = await events.wait_for(WriteFailed)
        assert isinstance(failed, WriteFailed) and "BrokenPipeError" in failed.reason
        slot.write(b"later writes are dropped")
        slot.kill()
    assert sum(isinstance(e, WriteFailed) for e in events.seen) == 1
