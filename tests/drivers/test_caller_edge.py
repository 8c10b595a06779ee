"""What the caller does wrong, or merely does, on every driver (asyncio, trio, sync) against
real servers: arguments JSON cannot carry, and lists longer than the spec allows.

Each row is one scenario run on each driver; docs/guarantees.md ("At the caller's edge") says
the same in words. The other rows of that table live beside the driver code they test:
one cancel scope over many calls (tests/drivers/test_mass_cancel.py), fork and forgotten
clients (tests/drivers/test_lifecycle_anyio.py, tests/drivers/test_lifecycle_sync.py).
"""

from __future__ import annotations

import datetime
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest

import mcp_core as core
from tests.conftest import SERVERS_DIR, nested, py_server_argv
from tests.drivers.facade import Facade

pytestmark = pytest.mark.anyio


def _cycle() -> dict[str, Any]:
    looped: dict[str, Any] = {}
    looped["text"] = looped
    return looped


# Each one raised a plain TypeError/ValueError/RecursionError and kept the call's slot.
BAD_ARGUMENTS = [
    {"text": {"a", "b"}},
    {"text": datetime.datetime(2026, 1, 1)},
    {"text": b"bytes"},
    {"text": object()},
    {"text": float("nan")},
    _cycle(),
    {"text": nested(5000)},
]


def _server(**fields: Any) -> dict[str, Any]:
    argv = py_server_argv()
    return {"command": argv[0], "args": argv[1:], "call_timeout": 10.0, **fields}


async def bad_arguments_take_no_slot(driver: str) -> None:
    """More refused calls than the window holds, then a good one: each refused at once with
    the path to the bad value; nothing in flight; the good call answered."""
    async with Facade(driver, **_server(pool_size=2, queue_limit=0)) as client:
        for arguments in BAD_ARGUMENTS * 2:
            with pytest.raises(core.InvalidArguments) as refused:
                await client.call_tool("echo", arguments)
            assert refused.value.path.startswith("arguments.text"), refused.value
            assert isinstance(refused.value, TypeError) and isinstance(refused.value, ValueError)
            assert client.status().in_flight == 0 and client.status().queued == 0
        assert (await client.call_tool("echo", {"text": "still fine"})).text == "still fine"


async def a_bad_argument_behind_a_call_in_flight(driver: str) -> None:
    """With the one slot taken by a slow call, a refused call is refused at once (not when the
    slot frees, in the middle of the other call's answer), and the slow call gets its own
    result."""
    started = threading.Event()  # the slow call's first progress: it is in flight
    results: list[Any] = []

    async def slow(client: Facade) -> None:
        results.append(
            await client.call_tool(
                "slow", {"seconds": 3, "steps": 6}, progress=lambda *_: started.set()
            )
        )

    async with Facade(driver, **_server(pool_size=1, queue_limit=4)) as client:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(slow, client)
            assert await anyio.to_thread.run_sync(started.wait, 20.0)
            with pytest.raises(core.InvalidArguments):
                await client.call_tool("echo", {"text": {"not", "json"}})
            assert (client.status().in_flight, client.status().queued) == (1, 0)
        assert [r.text for r in results] == ["done"]


def _many_tools(total: int, page: int, **fields: Any) -> dict[str, Any]:
    argv = [sys.executable, str(SERVERS_DIR / "many_tools_server.py"), str(total), str(page)]
    return {"command": argv[0], "args": argv[1:], "call_timeout": 60.0, **fields}


async def a_long_list_comes_back_whole(driver: str) -> None:
    """10,008 tools in pages of 100 (101 pages, under the default 1,000): all of them."""
    async with Facade(driver, **_many_tools(10_008, 100)) as client:
        tools = await client.list_tools()
        assert len(tools) == 10_008 and tools[-1].name == "tool_10007"


async def a_list_past_max_list_pages_is_an_error(driver: str) -> None:
    """The same list with max_list_pages=100: ListTooLong, never 10,000 of the 10,008."""
    async with Facade(driver, **_many_tools(10_008, 100, max_list_pages=100)) as client:
        with pytest.raises(core.ListTooLong) as too_long:
            await client.list_tools()
        assert (too_long.value.pages, too_long.value.items) == (100, 10_000)
        assert (await client.call_tool("tool_1")).text == "ok tool_1"


ROWS: dict[str, Callable[[str], Awaitable[None]]] = {
    "arguments JSON cannot carry": bad_arguments_take_no_slot,
    "a bad argument behind a call in flight": a_bad_argument_behind_a_call_in_flight,
    "10,008 tools in 101 pages": a_long_list_comes_back_whole,
    "a list past max_list_pages": a_list_past_max_list_pages_is_an_error,
}


@pytest.mark.parametrize("row", list(ROWS))
async def test_caller_edge(row: str, driver: str) -> None:
    with anyio.fail_after(120):
        await ROWS[row](driver)
