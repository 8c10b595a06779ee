"""An agent's burst of calls with the DEFAULT window and queue: every call waits its turn.

500 calls at once on one client, no ``pool_size``, ``queue_limit`` or ``concurrency`` given,
on each driver (asyncio and trio tasks; mcp_sync from 500 threads) and each way a server is
reached: stdio (tests/servers/py_server.py), modern Streamable HTTP (stateless: 8 in flight)
and legacy-era HTTP (serialized: 1 in flight, 499 queued). No call may get ``Busy`` and every
one must be answered with its own text. Counts only: the whole burst is awaited with a
deadline, never a sleep, and no time is asserted.
"""

from __future__ import annotations

import concurrent.futures
import sys
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest

import mcp_core as core
from tests.conftest import py_server_argv
from tests.drivers.facade import Facade

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

CALLS = 500
DEADLINE = 120.0  # for the whole burst: far above what it takes, only against a hang


async def burst(client: Facade, n: int) -> list[object]:
    """``n`` concurrent ``echo`` calls; each one's result or exception, in call order."""
    outcomes: list[object] = [None] * n
    if client.aio is not None:
        aio = client.aio

        async def one(i: int) -> None:
            try:
                outcomes[i] = await aio.call_tool("echo", {"text": f"call {i}"})
            except Exception as error:  # counted below
                outcomes[i] = error

        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tasks:
                for i in range(n):
                    tasks.start_soon(one, i)
        return outcomes
    sync = client.sync
    assert sync is not None

    def threads() -> list[object]:
        with concurrent.futures.ThreadPoolExecutor(max_workers=n) as pool:
            futures = [pool.submit(sync.call_tool, "echo", {"text": f"call {i}"}) for i in range(n)]
            _, pending = concurrent.futures.wait(futures, timeout=DEADLINE)
            assert not pending, f"{len(pending)} calls still unanswered at the deadline"
            return [f.exception() or f.result() for f in futures]

    return await anyio.to_thread.run_sync(threads)


@pytest.fixture(params=["stdio", "modern-http", "legacy-http"])
def default_client(request: pytest.FixtureRequest, driver: str) -> tuple[Callable[[], Facade], str]:
    """A client with every concurrency field left at its default, over the parameter's
    transport, and the policy the defaults give it there; ``era`` is pinned only to reach the
    legacy era over HTTP (the official SDK's HTTP server speaks both, and ``auto`` finds the
    modern one)."""
    where: dict[str, Any]
    if request.param == "stdio":
        where = {"command": sys.executable, "args": py_server_argv()[1:]}
    elif request.param == "modern-http":
        where = {"url": request.getfixturevalue("py_http_server")("modern").url}
    else:
        where = {"url": request.getfixturevalue("py_http_server")("stateful").url, "era": "legacy"}
    # call_timeout runs from admission: the 500th call of a serialized burst waits for 499
    # others, which a loaded machine may stretch past the default 30 s. The subject here is the
    # window and the queue, so the calls get the burst's own deadline.
    where["call_timeout"] = DEADLINE
    policy = "serialized" if request.param == "legacy-http" else "stateless"
    return (lambda: Facade(driver, name="agent", **where)), policy


async def test_500_calls_at_once_all_answered_none_busy(
    default_client: tuple[Callable[[], Facade], str],
) -> None:
    make, policy = default_client
    async with make() as client:
        outcomes = await burst(client, CALLS)
        status = client.status()
    busy = [o for o in outcomes if isinstance(o, core.Busy)]
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    answered = [
        i
        for i, o in enumerate(outcomes)
        if isinstance(o, core.CallToolResult) and not o.is_error and o.text == f"call {i}"
    ]
    assert (len(busy), len(failed), len(answered)) == (0, 0, CALLS), failed[:3]
    assert status.concurrency == policy  # the defaults were the ones in force
