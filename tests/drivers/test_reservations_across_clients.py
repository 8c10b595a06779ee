"""A reservation for a priced tool works once in the whole process: not once per
client, but across every client and group of both drivers; and one that says it is settled is
refused before anything is sent. Each test runs on asyncio, trio and sync, against the fault
server, and waits for events only (no sleep)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_core as core
from tests.conftest import children_of, fault_server_argv, wait_until
from tests.drivers.facade import Facade, gather
from tests.drivers.test_group import Group

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

PRICE = 3


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


def shop_fields() -> dict[str, Any]:
    argv = fault_server_argv()
    return {"name": "shop", "command": argv[0], "args": argv[1:], "prices": {"echo": PRICE}}


def shop(driver: str) -> Facade:
    return Facade(driver, **shop_fields())


def twin(driver: str) -> str:
    """The other driver that can run under this test's event loop (sync runs in threads)."""
    return "asyncio" if driver == "sync" else "sync"


def settle_failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the clients logged of a commit() or release() that raised (a second settle)."""
    return [r.getMessage() for r in caplog.records if "the reservation's" in r.getMessage()]


async def test_a_reservation_spent_on_one_client_is_refused_by_another(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A regression: single use was tracked per Client, so the second client sent the
    paid call and only its commit() failed, after the fact."""
    caplog.set_level(logging.ERROR)
    gate = core.InMemorySpendGate(budget=10)
    reservation = gate.reserve("shop", "echo", PRICE)
    async with shop(driver) as first, shop(driver) as second, shop(twin(driver)) as other:
        assert (await first.call_tool("echo", {"text": "paid"}, reservation=reservation)).text
        for client in (second, other):
            with pytest.raises(core.UnmeteredCall, match="already used"):
                await client.call_tool("echo", {"text": "again"}, reservation=reservation)
    assert (gate.spent, gate.held) == (PRICE, 0)
    assert settle_failures(caplog) == []


async def test_a_group_restart_does_not_make_a_spent_reservation_fresh(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    gate = core.InMemorySpendGate(budget=10)
    reservation = gate.reserve("shop", "echo", PRICE)
    specs = {"shop": shop_fields()}
    async with Group(driver, specs) as group:
        (echo,) = [t.name for t in await group.list_tools() if t.name.endswith("echo")]
        await group.call_tool(echo, {"text": "paid"}, reservation=reservation)
    async with Group(driver, specs) as again:  # the same servers, new clients
        (echo,) = [t.name for t in await again.list_tools() if t.name.endswith("echo")]
        with pytest.raises(core.UnmeteredCall, match="already used"):
            await again.call_tool(echo, {"text": "again"}, reservation=reservation)
    assert (gate.spent, gate.held) == (PRICE, 0)
    assert settle_failures(caplog) == []


async def test_one_reservation_on_two_clients_at_once_goes_out_once(driver: str) -> None:
    gate = core.InMemorySpendGate(budget=10)
    reservation = gate.reserve("shop", "echo", PRICE)
    async with shop(driver) as first, shop(driver) as second:
        outcomes = await gather(
            *(
                lambda c=c: c.call_tool("echo", {"text": "paid"}, reservation=reservation)
                for c in (first, second)
            )
        )
    refused = [o for o in outcomes if isinstance(o, core.UnmeteredCall)]
    assert len(refused) == 1 and len(outcomes) == 2, outcomes
    assert (gate.spent, gate.held) == (PRICE, 0)


async def test_a_reservation_that_says_it_is_settled_is_refused(driver: str) -> None:
    gate = core.InMemorySpendGate(budget=10)
    given_back = gate.reserve("shop", "echo", PRICE)
    given_back.release()  # settled by the application itself, never handed to a client
    paid_elsewhere = gate.reserve("shop", "echo", PRICE)
    paid_elsewhere.commit()
    async with shop(driver) as client:
        for reservation in (given_back, paid_elsewhere):
            with pytest.raises(core.UnmeteredCall, match="already used"):
                await client.call_tool("echo", {"text": "x"}, reservation=reservation)
    assert (gate.spent, gate.held, gate.remaining) == (PRICE, 0, 10 - PRICE)


@dataclasses.dataclass(eq=True)
class Ticket:
    """An application's own reservation: a plain dataclass, so equal by value and unhashable."""

    server: str
    tool: str
    price: int
    settled_as: list[str] = dataclasses.field(default_factory=list)

    def commit(self) -> None:
        self.settled_as.append("commit")

    def release(self) -> None:
        self.settled_as.append("release")


async def test_reservations_are_told_apart_by_identity(driver: str) -> None:
    """An unhashable reservation is still tracked (it was trusted, so it worked twice); two
    equal reservations are two reservations (one cannot spend the other)."""
    first, second = Ticket("shop", "echo", PRICE), Ticket("shop", "echo", PRICE)
    assert first == second
    async with shop(driver) as client:
        await client.call_tool("echo", {"text": "one"}, reservation=first)
        with pytest.raises(core.UnmeteredCall, match="already used"):
            await client.call_tool("echo", {"text": "one again"}, reservation=first)
        await client.call_tool("echo", {"text": "two"}, reservation=second)
    assert (first.settled_as, second.settled_as) == (["commit"], ["commit"])


async def test_a_call_refused_for_its_arguments_does_not_spend_the_reservation(
    driver: str,
) -> None:
    gate = core.InMemorySpendGate(budget=10)
    reservation = gate.reserve("shop", "echo", PRICE)
    async with shop(driver) as client:
        with pytest.raises(ValueError):
            await client.call_tool("echo", {"text": "x"}, reservation=reservation, timeout=0)
        assert (await client.call_tool("echo", {"text": "y"}, reservation=reservation)).text
    assert (gate.spent, gate.held) == (PRICE, 0)
