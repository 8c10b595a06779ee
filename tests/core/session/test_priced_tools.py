"""Priced tools: no valid reservation, nothing sent; every accepted reservation is
settled exactly once: committed when the request went out, released when it did not."""

from __future__ import annotations

import pytest

import mcp_core as core
from mcp_core.driver import reservation_facts
from tests.core.harness import TEXT_RESULT, Harness


def facts(server: str = "shop", tool: str = "buy", price: int = 5, fresh: bool = True) -> dict:
    return {"server": server, "tool": tool, "price": price, "fresh": fresh}


def priced(**fields: object) -> Harness:
    fields.setdefault("name", "shop")
    h = Harness(prices={"buy": 5}, **fields)
    h.connect_legacy()
    return h


def settled(h: Harness) -> list[core.SettleReservation]:
    return h.of(core.SettleReservation)


@pytest.mark.parametrize(
    ("given", "detail", "released"),
    [
        (None, "costs 5", False),
        (facts(fresh=False), "already used", False),
        (facts(tool="sell"), "'sell' on 'shop'", True),
        (facts(server="other"), "on 'other'", True),
        (facts(price=4), "4 was reserved", True),
        ({"server": "shop", "tool": "buy", "price": "5", "fresh": True}, "reserved", True),
    ],
)
def test_a_priced_tool_needs_a_matching_unused_reservation(
    given: dict | None, detail: str, released: bool
) -> None:
    h = priced()
    t = h.call("buy", {"n": 1}, reservation=given)
    err = h.error(t)
    assert isinstance(err, core.UnmeteredCall) and err.tool == "buy" and detail in str(err)
    assert h.messages() == []  # nothing was sent
    assert settled(h) == ([core.SettleReservation(ticket=t, commit=False)] if released else [])


def test_a_sent_call_commits_and_a_free_tool_gives_the_money_back() -> None:
    h = priced()
    t = h.call("buy", None, reservation=facts(price=7))
    assert settled(h) == [core.SettleReservation(ticket=t, commit=True)]
    h.answer(h.last_request("tools/call")["id"], {**TEXT_RESULT, "isError": True})
    assert h.result(t).is_error  # a tool failure after sending: the money stays spent
    assert len(settled(h)) == 1
    h.take()
    free = h.call("echo", None, reservation=facts(tool="echo"))
    assert settled(h) == [core.SettleReservation(ticket=free, commit=False)]
    assert h.last_request("tools/call")["params"]["name"] == "echo"


@pytest.mark.parametrize("ending", ["busy", "cancel", "close", "not_ready"])
def test_a_call_that_never_went_out_releases(ending: str) -> None:
    h = priced(concurrency="serialized", queue_limit=0 if ending == "busy" else 1)
    h.call("echo")
    if ending == "not_ready":
        h.exited(1)
    h.take()
    t = h.call("buy", None, reservation=facts(), timeout=1.0)
    if ending == "cancel":
        h.feed(core.CancelCall(now=h.now, ticket=t))
    elif ending == "close":
        h.close()
    assert settled(h) == [core.SettleReservation(ticket=t, commit=False)]


def test_a_queued_call_that_times_out_releases() -> None:
    h = priced(concurrency="serialized", queue_limit=1)
    h.call("echo", timeout=100.0)
    h.take()
    t = h.call("buy", None, reservation=facts(), timeout=1.0)
    h.advance(1.0)
    assert isinstance(h.error(t), core.RequestTimeout)
    assert settled(h) == [core.SettleReservation(ticket=t, commit=False)]


def test_a_queued_call_lost_with_the_server_releases() -> None:
    h = priced(concurrency="serialized", queue_limit=1)
    sent = h.call("buy", None, reservation=facts())
    queued = h.call("buy", None, reservation=facts())
    h.exited(1)
    assert isinstance(h.error(queued), core.ServerExited)
    assert settled(h) == [
        core.SettleReservation(ticket=sent, commit=True),
        core.SettleReservation(ticket=queued, commit=False),
    ]


def test_in_memory_spend_gate() -> None:
    gate = core.InMemorySpendGate(budget=10)
    first = gate.reserve("shop", "buy", 6)
    assert isinstance(first, core.Reservation)
    assert (gate.held, gate.remaining) == (6, 4)
    with pytest.raises(core.BudgetExhausted, match="only 4"):
        gate.reserve("shop", "buy", 5)
    first.commit()
    assert (gate.spent, gate.held, gate.remaining) == (6, 0, 4)
    with pytest.raises(RuntimeError, match="already committed"):
        first.release()
    second = gate.reserve("shop", "buy", 4)
    second.release()
    assert gate.remaining == 4
    with pytest.raises(ValueError):
        gate.reserve("shop", "buy", 0)
    assert reservation_facts(second, fresh=True) == facts(price=4, fresh=False)  # settled
    assert reservation_facts(gate.reserve("shop", "buy", 4), fresh=True) == facts(price=4)
    assert reservation_facts(object(), fresh=True)["fresh"] is False
