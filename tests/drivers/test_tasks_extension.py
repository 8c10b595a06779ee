"""The 2026-07-28 Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) on each driver,
against a FastMCP server with fastmcp-tasks from PyPI (tests/servers/fastmcp_tasks_server.py,
in its own virtual environment made by ``make test``), over stdio and Streamable HTTP.

The client declares the extension on a call only when asked to, or once the server says the
tool needs it (-32021), so every required-task tool here also checks that retry.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

import mcp_core as core
from tests.conftest import children_of, fastmcp_tasks_argv, wait_until
from tests.drivers.facade import Facade

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, fastmcp_tasks_http: Any) -> Callable[..., Facade]:
    driver = request.getfixturevalue("driver")

    def make(**fields: Any) -> Facade:
        if request.param == "stdio":
            argv = fastmcp_tasks_argv()
            return Facade(driver, command=argv[0], args=argv[1:], era="auto", **fields)
        return Facade(driver, url=fastmcp_tasks_http().url, era="auto", **fields)

    return make


async def test_required_tasks_are_followed_to_their_results(connect: Callable[..., Facade]) -> None:
    seen: list[str | None] = []
    async with connect() as client:
        status = client.status()
        assert status.era == "modern"
        assert "io.modelcontextprotocol/tasks" in (status.extensions or {})
        quick = await client.call_tool("quick_task", {"text": "hi"})
        staged = await client.call_tool(
            "staged_task",
            {"stages": 3, "delay_ms": 150},
            progress=lambda p, t, m: seen.append(m),
        )
        failing = await client.call_tool("failing_task")
        with pytest.raises(core.JsonRpcError, match="erroring_task failed on purpose"):
            await client.call_tool("erroring_task")
        plain = await client.call_tool("sync_echo", {"text": "plain"}, task=True)
    assert quick.text == "quick: hi" and not quick.is_error
    assert staged.text == "staged: 3 stages"
    assert seen[-1] == "completed" and "stage 3/3" in seen
    assert [m for m in seen if m and m.startswith("stage")] == sorted(
        {m for m in seen if m and m.startswith("stage")}
    )
    assert failing.is_error and "failing_task failed on purpose" in failing.text
    assert plain.text == "plain"


async def test_input_requests_are_answered_by_the_elicitation_handler(
    connect: Callable[..., Facade],
) -> None:
    asked: list[dict[str, Any]] = []

    def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"answer": "Ada"}}

    async with connect(elicitation=elicitation) as client:
        result = await client.call_tool("ask_task", {"question": "Your name?"})
    assert result.text == "answer: Ada"
    assert [a["message"] for a in asked] == ["Your name?"]


async def test_a_deadline_cancels_the_task_and_a_handle_attaches_and_cancels(
    connect: Callable[..., Facade],
) -> None:
    async with connect() as client:
        with pytest.raises(core.RequestTimeout, match="cancelled on the server") as timed_out:
            await client.call_tool("forever_task", task=True, timeout=3.0)
        task_id = str(timed_out.value).split("'")[1]
        with anyio.fail_after(20):
            while (await client.task(task_id).status()).status != "cancelled":
                await anyio.sleep(0.05)  # asking the server, not waiting out a race
        task = await client.start_tool("forever_task")
        assert task.id is not None and task.handle.last is not None
        assert task.handle.last.poll_interval == pytest.approx(0.05)
        assert (await task.status()).status == "working"
        with pytest.raises(core.RequestTimeout, match="it goes on"):
            await task.result(timeout=0.3)
        assert await task.cancel() is None  # the extension acknowledges with nothing
        with pytest.raises(core.TaskCancelled):
            await client.task(task.id).result(timeout=20)
        quick = await client.start_tool("quick_task", {"text": "later"})
        assert (await quick.result(timeout=20)).text == "quick: later"
        at_once = await client.start_tool("sync_echo", {"text": "now"})
        assert at_once.id is None and (await at_once.result()).text == "now"
        assert (await at_once.status()).status == "completed"
        with pytest.raises(core.NotSupported, match="2025-11-25 only"):
            await client.list_tasks()
        with pytest.raises(core.JsonRpcError) as unknown:
            await client.task("no-such-task").status()
        assert unknown.value.code == -32602


async def test_a_server_that_dies_mid_task_fails_the_call(driver: str) -> None:
    argv = fastmcp_tasks_argv()
    async with Facade(driver, command=argv[0], args=argv[1:], era="modern") as client:
        with pytest.raises(core.ServerExited) as exited:
            await client.call_tool("die_task", {"delay_ms": 300})
    assert exited.value.code == 3
