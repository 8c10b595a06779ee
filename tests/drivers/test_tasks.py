"""Tools the server runs as tasks (MCP 2025-11-25 basic/utilities/tasks), on each driver,
against the reference server-everything over stdio and Streamable HTTP: its
``simulate-research-query`` requires a task and reports four stages about a second apart.

What each test checks is on the server's side too: a task the client gave up on is listed
``cancelled`` by the server afterwards, so ``tasks/cancel`` reached it.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

import mcp_core as core
from tests.conftest import children_of, everything_argv, wait_until
from tests.drivers.facade import Facade

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

RESEARCH = "simulate-research-query"
STAGES = [
    "Gathering sources...",
    "Analyzing content...",
    "Synthesizing findings...",
    "Generating report...",
    "completed",
]


@pytest.fixture(name="no_children_left", autouse=True)
def _no_children_left() -> Iterator[None]:
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


@pytest.fixture(name="connect", params=["stdio", "http"])
def _connect(request: pytest.FixtureRequest, everything_http: Any) -> Callable[..., Facade]:
    """A client of server-everything for the test's driver, over stdio or Streamable HTTP."""
    driver = request.getfixturevalue("driver")

    def make(**fields: Any) -> Facade:
        if request.param == "stdio":
            argv = everything_argv()
            return Facade(driver, command=argv[0], args=argv[1:], **fields)
        return Facade(driver, url=everything_http("streamableHttp").url, **fields)

    return make


async def wait_for_status(client: Facade, task_id: str, status: str) -> core.TaskStatus:
    """Ask the server until the task reaches ``status`` (the deadline is the test's)."""
    with anyio.fail_after(20):
        while True:
            found = {t.task_id: t for t in await client.list_tasks()}
            if task_id in found and found[task_id].status == status:
                return found[task_id]
            await anyio.sleep(0.1)  # polling the server, not waiting out a race


async def test_call_tool_follows_a_required_task_to_its_result(
    connect: Callable[..., Facade],
) -> None:
    seen: list[tuple[float, str | None]] = []
    async with connect() as client:
        assert client.status().tools is None  # not listed yet: the call lists them first
        result = await client.call_tool(
            RESEARCH, {"topic": "tides"}, progress=lambda p, t, m: seen.append((p, m))
        )
        plain = await client.call_tool(RESEARCH, {"topic": "tides"}, task=False)
    assert not result.is_error and "# Research Report: tides" in result.text
    # Polled once a second, a stage as short as a poll may pass unseen: those seen are in order.
    messages = [m for _, m in seen]
    assert messages[-1] == "completed" and len(messages) >= 2
    assert messages == [m for m in STAGES if m in messages]
    assert [p for p, _ in seen] == [float(n) for n in range(1, len(seen) + 1)]
    assert plain.is_error and "task" in plain.text.lower()  # the tool requires one


async def test_start_tool_gives_a_handle_to_poll_list_wait_and_attach(
    connect: Callable[..., Facade],
) -> None:
    async with connect() as client:
        task = await client.start_tool(RESEARCH, {"topic": "reefs"})
        assert task.id and task.handle.last is not None
        assert task.handle.last.status == "working" and task.handle.last.poll_interval == 1.0
        status = await task.status()
        assert status.task_id == task.id and status.status in ("working", "completed")
        assert task.id in [t.task_id for t in await client.list_tasks()]
        result = await client.task(task.id).result(timeout=30)
        assert "# Research Report: reefs" in result.text
        assert (await task.status()).status == "completed"
        with pytest.raises(core.JsonRpcError) as refused:
            await task.cancel()  # a task that ended cannot be cancelled
        assert refused.value.code == -32602


async def test_a_deadline_cancels_the_task_on_the_server(connect: Callable[..., Facade]) -> None:
    async with connect() as client:
        with pytest.raises(core.RequestTimeout, match="cancelled on the server") as timed_out:
            await client.call_tool(RESEARCH, {"topic": "x"}, timeout=3.0)
        task_id = str(timed_out.value).split("'")[1]
        await wait_for_status(client, task_id, "cancelled")
        # Waiting on a handle is another matter: its deadline leaves the task running.
        task = await client.start_tool(RESEARCH, {"topic": "y"})
        assert task.id is not None
        with pytest.raises(core.RequestTimeout, match="it goes on"):
            await task.result(timeout=0.5)
        assert (await task.status()).status == "working"
        assert (await task.cancel()) is not None
        await wait_for_status(client, task.id, "cancelled")
        with pytest.raises(core.TaskCancelled):
            await task.result(timeout=10)


async def test_a_caller_that_gives_up_cancels_its_task(
    connect: Callable[..., Facade], driver: str
) -> None:
    if driver == "sync":
        pytest.skip("a blocked thread cannot be cancelled; its deadline is tested above")
    started = threading.Event()  # set from the driver's callback, whatever thread it runs on
    async with connect() as client:
        with anyio.move_on_after(20) as scope:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    await client.call_tool(
                        RESEARCH, {"topic": "z"}, progress=lambda *_: started.set()
                    )

                group.start_soon(call)
                assert await anyio.to_thread.run_sync(started.wait, 20)
                group.cancel_scope.cancel()
        assert not scope.cancelled_caught
        (task,) = [t for t in await client.list_tasks() if t.status != "completed"]
        await wait_for_status(client, task.task_id, "cancelled")


async def test_input_required_is_answered_by_the_elicitation_handler(
    connect: Callable[..., Facade],
) -> None:
    asked: list[dict[str, Any]] = []

    def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"interpretation": "snake"}}

    async with connect(elicitation=elicitation) as client:
        result = await client.call_tool(RESEARCH, {"topic": "python", "ambiguous": True})
    assert len(asked) == 1 and "python" in str(asked[0].get("message")).lower()
    assert not result.is_error and "# Research Report: python" in result.text
    assert "snake" in result.text


async def test_a_server_that_dies_mid_task_fails_the_call(driver: str) -> None:
    argv = everything_argv()
    started = threading.Event()
    async with (
        Facade(driver, command=argv[0], args=argv[1:]) as client,
        anyio.create_task_group() as group,
    ):

        async def kill() -> None:
            assert await anyio.to_thread.run_sync(started.wait, 20)
            for pid in children_of(os.getpid(), include_zombies=False):
                os.kill(pid, signal.SIGKILL)

        group.start_soon(kill)
        with pytest.raises(core.ServerExited):
            await client.call_tool(RESEARCH, {"topic": "x"}, progress=lambda *_: started.set())
