"""One cancel scope over calls in flight and calls queued, on asyncio and trio: only the calls
in flight were ever sent.

pool_size 8 and queue_limit 8: 8 ``hang`` calls in flight, 8 queued, every one a priced call
with its reservation. Each cancelled caller used to withdraw its own call alone, so each slot
it freed went to a queued call whose caller was cancelled too but had not run yet: that call
was sent (and its reservation charged), then withdrawn with ``notifications/cancelled``
(12 to 16 requests reached the server, 120 to 140 were charged instead of 80). Now the first
cancelled caller to run withdraws every caller whose wait the scope ended with it.

The fault server records the id of every ``notifications/cancelled`` it receives
(``cancelled_ids``): each call sent and then given up is one, so 8 means that only the 8 calls
in flight were sent.
"""

from __future__ import annotations

import json

import anyio
import pytest

from mcp_asyncio import Client
from mcp_core import InMemorySpendGate
from tests.drivers.backends import anyio_backends  # noqa: F401 (asyncio and trio)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

PRICE = 10
POOL = QUEUE = 8


def _client(argv: list[str]) -> Client:
    return Client(
        name="shop",
        command=argv[0],
        args=argv[1:],
        pool_size=POOL,
        queue_limit=QUEUE,
        prices={"hang": PRICE},
    )


async def _hang(client: Client, gate: InMemorySpendGate) -> None:
    await client.call_tool("hang", reservation=gate.reserve("shop", "hang", PRICE))


async def _start_calls(
    tasks: anyio.abc.TaskGroup, client: Client, gate: InMemorySpendGate, count: int
) -> None:
    """Start ``count`` callers and return once each one waits for its answer."""
    for _ in range(count):
        tasks.start_soon(_hang, client, gate)
    await anyio.wait_all_tasks_blocked()


async def _cancelled_ids(client: Client) -> list[object]:
    return list(json.loads((await client.call_tool("cancelled_ids")).text))


async def test_one_scope_over_calls_in_flight_and_queued_sends_only_those_in_flight(
    fault_server_argv,
) -> None:
    gate = InMemorySpendGate(budget=1000)
    async with _client(fault_server_argv()) as client:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tasks:
                await _start_calls(tasks, client, gate, POOL + QUEUE)
                status = client.status()
                assert (status.in_flight, status.queued) == (POOL, QUEUE)
                scope.cancel()
        status = client.status()
        assert (status.in_flight, status.queued) == (0, 0)
        # The 8 in flight were sent, then withdrawn; the 8 queued never left the client.
        assert len(await _cancelled_ids(client)) == POOL
        assert (gate.spent, gate.held) == (POOL * PRICE, 0)
        assert (await client.call_tool("echo", {"text": "still here"})).text == "still here"


async def test_queued_calls_of_another_scope_still_go_out(fault_server_argv) -> None:
    # 8 in flight and 4 queued under the cancelled scope, 4 more queued under another: those
    # 4 are promoted into the freed slots and sent; the 4 cancelled while queued are not.
    gate = InMemorySpendGate(budget=1000)
    async with _client(fault_server_argv()) as client:
        async with anyio.create_task_group() as survivors:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tasks:
                    await _start_calls(tasks, client, gate, POOL + 4)
                    await _start_calls(survivors, client, gate, 4)
                    status = client.status()
                    assert (status.in_flight, status.queued) == (POOL, QUEUE)
                    scope.cancel()
            status = client.status()
            assert (status.in_flight, status.queued) == (4, 0)
            assert (gate.spent, gate.held) == ((POOL + 4) * PRICE, 0)
            survivors.cancel_scope.cancel()
        assert len(await _cancelled_ids(client)) == POOL + 4
        assert (gate.spent, gate.held) == ((POOL + 4) * PRICE, 0)
