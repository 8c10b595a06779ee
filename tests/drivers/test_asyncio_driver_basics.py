"""Direct tests of the anyio driver against real servers, on asyncio and on trio (the shared
scenario table covers both drivers; these pin down what only mcp_asyncio has: tasks,
cancellation scopes, the background task group)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from mcp_asyncio import Client
from mcp_core import ConnectFailed, InvalidSpec, NotReady, Spec
from tests.drivers.backends import anyio_backends  # noqa: F401 (asyncio and trio)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def _client(argv: list[str], **fields: object) -> Client:
    return Client(name="peer", command=argv[0], args=argv[1:], **fields)


async def test_start_and_stop_leave_nothing_behind(everything_argv, children_of) -> None:
    client = _client(everything_argv())
    assert client.status().state == "new" and repr(client).endswith(" new>")
    with pytest.raises(NotReady, match="not started") as refused:
        await client.list_tools()  # before start(): nothing is fed, nothing runs
    assert refused.value.state == "new"
    await client.start()
    status = await client.await_ready(30)
    assert status.state == "ready"
    assert client.status().state == "ready"
    assert children_of(os.getpid())
    await client.stop()
    assert client.status().state == "closed"
    assert children_of(os.getpid()) == []
    with pytest.raises(NotReady):
        await client.call_tool("echo", {"message": "late"})
    await client.stop()  # idempotent


async def test_a_client_stopped_before_it_started_never_starts(
    everything_argv, children_of
) -> None:
    # As on the blocking driver: a client runs once, and stop() ends its one run even when it
    # comes first.
    client = _client(everything_argv())
    await client.stop()
    assert client.status().state == "closed" and repr(client).endswith(" closed>")
    with pytest.raises(NotReady, match="closed"):
        await client.start()
    with pytest.raises(NotReady, match="closed"):
        await client.list_tools()
    await client.stop()  # idempotent
    assert children_of(os.getpid()) == []


async def test_with_block_lists_tools_and_calls_echo(everything_argv, children_of) -> None:
    async with _client(everything_argv()) as client:
        assert client.name == "peer"
        names = {tool.name for tool in await client.list_tools()}
        assert "echo" in names
        result = await client.call_tool("echo", {"message": "hello"})
        assert not result.is_error
        assert "hello" in result.text
    assert children_of(os.getpid()) == []


async def test_many_tasks_call_at_once(everything_argv) -> None:
    # 16 callers: 8 in flight (pool_size), 8 queued, far from queue_limit.
    results: dict[int, str] = {}
    async with _client(everything_argv()) as client, anyio.create_task_group() as tasks:
        for index in range(16):

            async def call(index: int = index) -> None:
                result = await client.call_tool("echo", {"message": f"task {index}"})
                results[index] = result.text

            tasks.start_soon(call)
    assert all(f"task {i}" in results[i] for i in range(16))


async def test_spec_object_progress_and_invalid_spec(py_server_argv) -> None:
    argv = py_server_argv()
    spec = Spec(name="py", command=argv[0], args=tuple(argv[1:]))
    async with Client(spec, call_timeout=10) as client:
        assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
        updates: list[tuple[float, float | None, str | None]] = []
        result = await client.call_tool(
            "slow",
            {"seconds": 0.2, "steps": 2},
            progress=lambda *update: updates.append(update),
        )
        assert result.text == "done"
        assert updates == [(1, 2, "step 1/2"), (2, 2, "step 2/2")]
    with pytest.raises(InvalidSpec):
        Client(spec, no_such_field=1)


async def test_cancelled_call_is_withdrawn(fault_server_argv) -> None:
    async with _client(fault_server_argv()) as client:
        # The first progress update says the request is in flight; cancel the caller then.
        with anyio.CancelScope() as scope:
            await client.call_tool(
                "slow_progress",
                {"steps": 1000, "delay": 0.05},
                progress=lambda *_: scope.cancel(),
            )
        assert scope.cancelled_caught
        assert client.status().in_flight == 0
        # The server was told: notifications/cancelled named the withdrawn request.
        cancelled = await client.call_tool("cancelled_ids")
        assert len(json.loads(cancelled.text)) == 1
        assert (await client.call_tool("echo", {"text": "still here"})).text == "still here"


async def test_cancelled_with_block_still_shuts_down(fault_server_argv, children_of) -> None:
    # The caller's cancel scope surrounds the driver's task group; the shutdown (stdin close,
    # SIGTERM, SIGKILL on their timers) must still run to the end.
    argv = fault_server_argv("--ignore-stdin-eof", "--ignore-sigterm")
    with anyio.CancelScope() as scope:
        async with _client(argv, shutdown_grace=0.2) as client:
            await client.call_tool(
                "slow_progress",
                {"steps": 1000, "delay": 0.05},
                progress=lambda *_: scope.cancel(),
            )
    assert scope.cancelled_caught
    assert client.status().state == "closed"
    assert children_of(os.getpid()) == []


async def test_missing_executable_fails_at_once(tmp_path: Path, children_of) -> None:
    with anyio.fail_after(5), pytest.raises(ConnectFailed) as failure:
        async with Client(name="gone", command=str(tmp_path / "no-such-server")):
            pass
    assert failure.value.permanent
    assert "no-such-server" in failure.value.reason
    assert children_of(os.getpid()) == []


async def test_record_writes_every_event(tmp_path: Path, py_server_argv) -> None:
    path = tmp_path / "session.jsonl"
    async with _client(py_server_argv(), record=path) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    events = [line["event"] for line in lines[1:]]
    assert "spec" in lines[0]
    assert events[0] == "Connect"
    assert {"ProcessSpawned", "StdoutReceived", "CallTool", "Close"} <= set(events)
    assert events[-1] == "ProcessExited"
