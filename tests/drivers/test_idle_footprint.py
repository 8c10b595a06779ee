"""What an idle stdio session holds: counts, never times.

On asyncio a session holds two tasks (the one that holds its task group open, and the one that
awaits its process) and no thread: its pipes are read by event-loop callbacks, its timer is a
handle in the loop's own heap, and its process is reaped without asyncio's child-watcher
thread. The blocking driver's sessions hold no thread of their own: two threads serve them
all (the shared I/O thread and the shared timer thread), and both end with the last client.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import tracemalloc

import pytest

import mcp_asyncio
import mcp_core as core
import mcp_sync
from tests.conftest import children_of, fault_server_argv, wait_until

pytestmark = pytest.mark.timeout(120)

SESSIONS = 5


def _fields() -> dict[str, object]:
    argv = fault_server_argv()
    return {"name": "idle", "command": argv[0], "args": argv[1:]}


def _new_threads(before: set[threading.Thread]) -> list[str]:
    """Threads started since ``before`` that still run (threads of earlier tests may end
    meanwhile: they are not counted either way)."""
    return sorted(t.name for t in set(threading.enumerate()) - before)


def test_an_idle_asyncio_session_holds_two_tasks_and_no_thread() -> None:
    async def main() -> tuple[int, list[str], int, list[str]]:
        # One session first, so that whatever a first session starts once is not counted.
        async with mcp_asyncio.Client(**_fields()) as warm:
            await warm.call_tool("echo", {"text": "warm"})
        tasks, threads = len(asyncio.all_tasks()), set(threading.enumerate())
        clients = [mcp_asyncio.Client(**_fields()) for _ in range(SESSIONS)]
        try:
            for client in clients:
                await client.__aenter__()
                assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
            held = len(asyncio.all_tasks()) - tasks, _new_threads(threads)
        finally:
            for client in reversed(clients):
                await client.__aexit__(None, None, None)
        return (*held, len(asyncio.all_tasks()) - tasks, _new_threads(threads))

    tasks, threads, tasks_after, threads_after = asyncio.run(main())
    assert tasks == 2 * SESSIONS
    assert threads == []
    assert (tasks_after, threads_after) == (0, [])
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


def _driver_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("mcp-sync"))


def test_idle_sync_sessions_share_two_threads_that_end_with_the_last_client() -> None:
    threads = set(threading.enumerate())
    clients = [mcp_sync.Client(**_fields()) for _ in range(SESSIONS)]
    try:
        for client in clients:
            client.start()
            client.await_ready(30)
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert _new_threads(threads) == ["mcp-sync-io", "mcp-sync-timer"]
        # A timeout is still fired (by the shared timer thread) while the other sessions idle.
        with pytest.raises(core.RequestTimeout):
            clients[0].call_tool("slow_progress", {"steps": 1, "delay": 5.0}, timeout=0.1)
        for client in clients[1:]:
            client.stop()
        assert _driver_threads() == ["mcp-sync-io", "mcp-sync-timer"]  # one client still runs
    finally:
        for client in clients:
            client.stop()
    assert _driver_threads() == []
    assert _new_threads(threads) == []
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


# What an idle stdio session may hold, in bytes the interpreter allocated for it (tracemalloc,
# averaged over MEASURED sessions started after a first one, each having answered a call):
# about 22 KiB on the blocking driver and 25 KiB on asyncio when this was written, with some
# room for other Python versions. bench/ measures the resident memory these come to.
MEASURED = 20
MAX_SYNC_BYTES = 26 * 1024
MAX_ASYNCIO_BYTES = 29 * 1024


def _allocated(before: tracemalloc.Snapshot) -> int:
    gc.collect()
    after = tracemalloc.take_snapshot()
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


def test_an_idle_sync_session_holds_few_bytes() -> None:
    with mcp_sync.Client(**_fields()) as warm:
        warm.call_tool("echo", {"text": "warm"})
    clients: list[mcp_sync.Client] = []
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        clients += [mcp_sync.Client(**_fields()) for _ in range(MEASURED)]
        for client in clients:
            client.start()
            client.await_ready(30)
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        held = _allocated(before) // MEASURED
    finally:
        tracemalloc.stop()
        for client in clients:
            client.stop()
    assert held <= MAX_SYNC_BYTES, f"{held} bytes per idle session"


def test_an_idle_asyncio_session_holds_few_bytes() -> None:
    async def main() -> int:
        async with mcp_asyncio.Client(**_fields()) as warm:
            await warm.call_tool("echo", {"text": "warm"})
        clients: list[mcp_asyncio.Client] = []
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            clients += [mcp_asyncio.Client(**_fields()) for _ in range(MEASURED)]
            for client in clients:
                await client.__aenter__()
                assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
            return _allocated(before) // MEASURED
        finally:
            tracemalloc.stop()
            for client in reversed(clients):
                await client.__aexit__(None, None, None)

    held = asyncio.run(main())
    assert held <= MAX_ASYNCIO_BYTES, f"{held} bytes per idle session"
