"""The fast lane for the answer to a call in flight (``_session/inbox.py``, ``Inbox.decoded``):
the actions are those of the general path, answer for answer, and what is not a plain final
result of a call never takes it."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_core as core
from tests.core.harness import TEXT_RESULT, Harness
from tests.core.session.test_tasks import task

RESULTS: list[dict[str, Any]] = [
    TEXT_RESULT,
    {"content": [{"type": "text", "text": "hi"}], "isError": True},
    {"content": [{"type": "text", "text": "hi", "annotations": {"priority": 1}}]},
    {"content": [], "structuredContent": {"n": 1}, "_meta": {"k": "v"}},
    {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]},
    {"structuredContent": {"n": "not a number"}},  # fails the tool's outputSchema
    {"content": "not a list"},  # InvalidResponse
    {"content": [], "resultType": "complete"},
]


def connected(era: str) -> Harness:
    h = Harness(era="auto" if era == "modern" else era)
    h.connect_modern() if era == "modern" else h.connect_legacy()
    listed = h.list_tools()
    schema = {"type": "object", "properties": {"n": {"type": "number"}}}
    tool = {"name": "echo", "inputSchema": {"type": "object"}, "outputSchema": schema}
    h.answer(h.last_request("tools/list")["id"], {"tools": [tool]})
    assert h.result(listed)
    h.take()
    return h


def answered(era: str, result: dict[str, Any], general: bool) -> list[str]:
    """The actions that answering a call with ``result`` gives, through the lane or (with an
    ``"error": null`` member, which classify reads as a result too) the general path."""
    h = connected(era)
    h.call("echo", {"x": 1}, progress=True)
    h.call("echo", {"x": 2})  # a second call in flight: the answer is not the only one
    request = h.messages()[0]
    h.take()
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    if general:
        message["error"] = None
    h.stdout(message)
    return [repr(action) for action in h.take()]


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("result", RESULTS, ids=range(len(RESULTS)))
def test_the_lane_acts_as_the_general_path(era: str, result: dict[str, Any]) -> None:
    fast = answered(era, result, general=False)
    assert fast == answered(era, result, general=True)
    assert len(fast) == 1 and fast[0].startswith("Reply(ticket=2,")


def test_a_batch_of_answers_takes_the_lane_item_by_item() -> None:
    h = connected("legacy")
    first, second = h.call("echo", {"x": 1}), h.call("echo", {"x": 2})
    ids = [m["id"] for m in h.messages()]
    h.take()
    h.stdout([{"jsonrpc": "2.0", "id": i, "result": TEXT_RESULT} for i in reversed(ids)])
    assert [a.ticket for a in h.of(core.Reply)] == [second, first]
    assert h.result(first).text == "hi" and h.machine.in_flight == 0


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": True, "result": TEXT_RESULT},  # a bool is no id
        {"jsonrpc": "2.0", "id": "1", "result": TEXT_RESULT},  # ours are integers
        {"jsonrpc": "2.0", "id": 99, "result": TEXT_RESULT},  # no such request
        {"jsonrpc": "2.0", "id": 0, "result": [1]},  # no object result
    ],
    ids=["bool-id", "str-id", "unknown-id", "array-result"],
)
def test_what_is_not_an_answer_to_a_call_leaves_it_waiting(message: dict[str, Any]) -> None:
    h = connected("legacy")
    ticket = h.call("echo", {"x": 1})
    request_id = h.last_request("tools/call")["id"]
    h.take()
    h.stdout(message)
    assert ticket not in h.replies and h.machine.in_flight == 1
    h.answer(request_id, TEXT_RESULT)
    assert h.result(ticket).text == "hi"


def test_an_answer_to_a_list_a_task_or_an_input_request_is_no_calls_result() -> None:
    h = connected("modern")
    listed = h.list_tools(refresh=True)
    h.answer(h.last_request("tools/list")["id"], {"tools": []})
    assert h.result(listed) == []
    # The server made the call a task: the answer goes the general way, and is polled.
    ticket = h.call("echo", {"x": 1})
    h.answer(h.last_request("tools/call")["id"], {"resultType": "task", **task()})
    assert ticket not in h.replies and h.machine.next_deadline() is not None
    h.take()
    # The server asks for input first (2026-07-28 basic/patterns/mrtr): no result yet, the
    # call is sent again with the (here, no) inputs.
    asking = h.call("echo", {"x": 2})
    h.answer(h.last_request("tools/call")["id"], {"resultType": "input_required"})
    assert asking not in h.replies and h.machine.in_flight == 2
    assert [m["params"].get("inputResponses") for m in h.messages()] == [None, {}]


def test_a_plain_call_goes_out_as_the_general_path_writes_it() -> None:
    """The request lane (``Calls._send_work``) writes the bytes the general path writes: the
    same keys in the same order."""
    h = connected("legacy")
    h.call("echo", {"x": 1})
    h.call("echo", {"x": 1}, meta={"k": "v"})  # the general path: a caller's _meta
    h.call("echo")
    lines = [a.data for a in h.of(core.WriteStdin)]
    assert lines == [
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":'
        b'{"x":1}}}\n',
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":'
        b'{"x":1},"_meta":{"k":"v"}}}\n',
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo"}}\n',
    ]
