"""The caller's edge, in the core: a refused argument takes nothing and touches no other
caller; one cancel scope over calls in flight and queued sends none of the queued ones; a list
longer than ``max_list_pages`` is an error, never a list cut short."""

from __future__ import annotations

import datetime
import decimal
import inspect
import sys
from typing import Any

import pytest

import mcp_core as core
from tests.conftest import nested
from tests.core.harness import TEXT_RESULT, Harness


def _cycle() -> dict[str, Any]:
    looped: dict[str, Any] = {"name": "x"}
    looped["again"] = [looped]
    return looped


BAD_ARGUMENTS = [
    ({"tags": {"a", "b"}}, "arguments.tags", "a set (pass a list)"),
    ({"when": datetime.datetime(2026, 1, 1)}, "arguments.when", "a datetime"),
    ({"blob": b"\x00"}, "arguments.blob", "bytes"),
    ({"thing": object()}, "arguments.thing", "an object"),
    ({"price": decimal.Decimal("1.5")}, "arguments.price", "a Decimal"),
    ({"items": [1, 2, float("nan")]}, "arguments.items[2]", "is nan"),
    ({"limit": float("inf")}, "arguments.limit", "is inf"),
    (_cycle(), "arguments.again[0]", "contains itself"),
    ({"deep": nested(5000)}, "arguments.deep[0]", "deeper than 512"),
    ({"map": {(1, 2): "x"}}, "arguments.map", "key of type tuple"),
    ({"map": {float("nan"): "x"}}, "arguments.map", "the key nan"),
    ({"odd key": {"x": {1}}}, "arguments['odd key'].x", "a set"),
]


@pytest.mark.parametrize(("arguments", "path", "problem"), BAD_ARGUMENTS)
def test_a_refused_argument_takes_no_slot_and_sends_nothing(
    arguments: dict[str, Any], path: str, problem: str
) -> None:
    h = Harness(pool_size=1, queue_limit=0)
    h.connect_legacy()
    h.take()
    bad = h.call("echo", arguments)
    error = h.error(bad)
    assert isinstance(error, core.InvalidArguments)
    assert isinstance(error, TypeError) and isinstance(error, ValueError)
    assert error.path.startswith(path) and problem in error.problem, error
    assert "nothing was sent" in str(error)
    assert h.messages() == [] and h.machine.status(h.now).in_flight == 0
    # The one slot is free: a good call goes out at once.
    good = h.call("echo", {"text": "hi"})
    h.answer(h.last_request("tools/call")["id"], TEXT_RESULT)
    assert h.result(good).text == "hi"


def test_a_refused_argument_behind_a_call_in_flight_touches_no_one() -> None:
    h = Harness(pool_size=1)
    h.connect_legacy()
    first = h.call("echo", {"text": "hi"})
    sent = h.last_request("tools/call")
    bad = h.call("echo", {"tags": {1}})  # refused now, not when the slot frees
    assert isinstance(h.error(bad), core.InvalidArguments)
    assert h.machine.status(h.now).queued == 0
    h.take()
    h.answer(sent["id"], TEXT_RESULT)
    assert h.result(first).text == "hi" and h.messages() == []


def test_params_and_meta_of_any_request_are_checked_the_same_way() -> None:
    h = Harness()
    h.connect_legacy()
    h.take()
    t = h.ticket()
    h.feed(core.Request(now=h.now, ticket=t, method="x/y", params={"at": {1, 2}}))
    assert h.error(t) == core.InvalidArguments(
        "x/y", "params.at", "is a set (pass a list), not a JSON value"
    )
    t = h.call("echo", {"text": "hi"}, meta={"trace": b"id"})
    assert isinstance(h.error(t), core.InvalidArguments) and h.error(t).path == "_meta.trace"
    assert h.messages() == []


def test_a_refused_argument_releases_the_reservation() -> None:
    h = Harness(name="shop", prices={"buy": 5})
    h.connect_legacy()
    facts = {"server": "shop", "tool": "buy", "price": 5, "fresh": True}
    t = h.call("buy", {"n": {1}}, reservation=facts)
    assert isinstance(h.error(t), core.InvalidArguments)
    assert h.of(core.SettleReservation) == [core.SettleReservation(ticket=t, commit=False)]


def test_keys_json_turns_into_strings_and_big_integers_are_sent() -> None:
    h = Harness()
    h.connect_legacy()
    h.call("echo", {"map": {1: "a", 2.5: "b", False: "c", None: "d"}, "n": 2**80})
    arguments = h.last_request("tools/call")["params"]["arguments"]
    assert arguments == {"map": {"1": "a", "2.5": "b", "false": "c", "null": "d"}, "n": 2**80}


def test_one_cancel_scope_over_calls_in_flight_and_queued_sends_none_of_the_queued() -> None:
    h = Harness(pool_size=8, queue_limit=8)
    h.connect_legacy()
    h.take()
    tickets = [h.call("echo", {"text": str(i)}) for i in range(16)]
    assert len([m for m in h.messages() if m.get("method") == "tools/call"]) == 8
    h.take()
    # The first task to run its cancel handler names every caller whose wait was cancelled.
    h.feed(core.CancelCall(now=h.now, ticket=tickets[0], others=tuple(tickets[1:])))
    written = h.messages()
    assert [m["method"] for m in written] == ["notifications/cancelled"] * 8
    assert h.replies == {} or all(t not in h.replies for t in tickets)
    status = h.machine.status(h.now)
    assert (status.in_flight, status.queued) == (0, 0)
    # Cancelling them again (each task's own handler) changes nothing.
    h.take()
    h.feed(core.CancelCall(now=h.now, ticket=tickets[5]))
    assert h.messages() == []


def test_a_cancel_of_some_still_promotes_the_queued_call_of_a_caller_still_waiting() -> None:
    h = Harness(pool_size=2, queue_limit=2)
    h.connect_legacy()
    a, b, c, d = (h.call("echo", {"text": str(i)}) for i in range(4))
    h.take()
    h.feed(core.CancelCall(now=h.now, ticket=a, others=(c,)))  # a in flight, c queued
    sent = [m for m in h.messages() if m.get("method") == "tools/call"]
    assert [m["params"]["arguments"]["text"] for m in sent] == ["3"]  # d, not c
    assert b not in h.replies and d not in h.replies


def _pages(h: Harness, pages: int, per_page: int = 2, last_has_cursor: bool = True) -> int:
    t = h.list_tools(refresh=True)
    for page in range(pages):
        tools = [
            {"name": f"t{page}_{i}", "inputSchema": {"type": "object"}} for i in range(per_page)
        ]
        result: dict[str, Any] = {"tools": tools}
        if page < pages - 1 or last_has_cursor:
            result["nextCursor"] = f"p{page + 1}"
        h.answer(h.last_request("tools/list")["id"], result)
    return t


def test_a_list_longer_than_max_list_pages_is_an_error_not_a_short_list() -> None:
    h = Harness(max_list_pages=3)
    h.connect_legacy()
    t = _pages(h, 3)
    error = h.error(t)
    assert isinstance(error, core.ListTooLong)
    assert (error.method, error.pages, error.items) == ("tools/list", 3, 6)
    assert "raise max_list_pages" in str(error)
    h.take()
    again = _pages(h, 3, last_has_cursor=False)  # nothing was cached: asked again
    assert len(h.result(again)) == 6


def test_the_default_page_cap_is_a_thousand_pages() -> None:
    h = Harness()
    assert h.spec.max_list_pages == 1000
    h.connect_legacy()
    t = _pages(h, 101, per_page=100, last_has_cursor=False)  # 10,100 tools
    assert len(h.result(t)) == 10_100
    error = h.error(_pages(h, 1000, per_page=1))
    assert isinstance(error, core.ListTooLong) and error.pages == 1000


@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True])
def test_max_list_pages_must_be_a_positive_integer(value: object) -> None:
    with pytest.raises(core.InvalidSpec, match="max_list_pages"):
        core.Spec(name="s", command="x", max_list_pages=value)  # type: ignore[arg-type]


def test_nesting_the_encoder_has_no_stack_left_for_is_refused_not_raised() -> None:
    h = Harness()
    h.connect_legacy()
    h.take()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 150)  # too shallow for 400 levels
    try:
        t = h.call("echo", {"deep": nested(400)})
    finally:
        sys.setrecursionlimit(limit)
    error = h.error(t)
    assert isinstance(error, core.InvalidArguments) and "too deeply" in error.problem
    assert h.messages() == []


def test_a_handler_answer_json_cannot_carry_fails_like_a_handler_that_raised() -> None:
    h = Harness(era="legacy")
    h.machine = core.SessionMachine(h.spec, handlers=["elicitation"])
    h.feed(core.Connect(now=0.0))
    h.spawned()
    init = h.last_request("initialize")
    h.answer(init["id"], {"protocolVersion": "2025-11-25", "capabilities": {}})
    h.take()
    params = {"message": "name?", "requestedSchema": {"type": "object"}}
    h.stdout({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": params})
    [ask] = h.of(core.HandleServerRequest)
    h.take()
    answer = {"action": "accept", "content": {"when": datetime.date(2026, 1, 1)}}
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=answer))
    assert h.messages() == [
        {
            "jsonrpc": "2.0",
            "id": "e1",
            "error": {
                "code": -32603,
                "message": "the client's handler failed: its answer is not JSON "
                "(is a date (pass .isoformat()), not a JSON value)",
            },
        }
    ]
    [log] = [a for a in h.of(core.Log) if a.level == "WARNING"]
    assert "result.content.when is a date" in log.message
