"""Requests the server asks the client to run as tasks (MCP 2025-11-25 basic/utilities/tasks,
the client as receiver): declared only with ``accept_tasks`` and only for the handlers given,
answered at once with a CreateTaskResult, the handler's answer kept for ``tasks/result``, and
``tasks/get``, ``tasks/list``, ``tasks/cancel`` served on the connection that created them,
with the error codes the spec names."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import mcp_core as core
from mcp_core._session.client_tasks import (
    MAX_CLIENT_TASKS,
    MAX_TTL_MS,
    RELATED_TASK,
    _ttl,
    wall_time,
)
from mcp_core.replay import Recorder, replay, replay_lines
from tests.core.harness import Harness

META = "io.modelcontextprotocol/clientCapabilities"
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
          "maxTokens": 10}
ANSWER = {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}
FORM = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
# 2025-11-25T10:30:00Z is this many seconds after 1970.
NOV_25 = 1764066600.0


def _machine(h: Harness, handlers: tuple[str, ...] = ("sampling", "elicitation"),
             **kw: Any) -> core.SessionMachine:
    kw.setdefault("accept_tasks", True)
    h.machine = core.SessionMachine(h.spec, handlers=handlers, **kw)
    return h.machine


def _client(handlers: tuple[str, ...] = ("sampling", "elicitation"), wall: float = NOV_25,
            **fields: Any) -> Harness:
    fields.setdefault("era", "legacy")
    h = Harness(**fields)
    _machine(h, handlers)
    h.feed(core.Connect(now=0.0, wall_offset=wall))
    h.connect_legacy()
    return h


def _request(h: Harness, method: str, params: dict[str, Any], request_id: object = "r1",
             slot: int = 0) -> list[dict[str, Any]]:
    """The server sends a request; what the client wrote back (after a take())."""
    h.take()
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    h.stdout({**message, "params": params}, slot)
    return h.messages()


def _task(h: Harness, method: str = "sampling/createMessage", ttl: object = 60000,
          request_id: object = "r1", slot: int = 0) -> tuple[str, int]:
    """A task-augmented request answered with its CreateTaskResult: (task id, handle)."""
    params = SAMPLE if method == "sampling/createMessage" else FORM
    [created] = _request(h, method, {**params, "task": {"ttl": ttl}}, request_id, slot)
    assert created["id"] == request_id
    task = created["result"]["task"]
    [ask] = h.of(core.HandleServerRequest)
    assert ask.method == method and ask.params["task"] == {"ttl": ttl}
    return task["taskId"], ask.handle


def _ask(h: Harness, method: str, task_id: object = None, request_id: object = "q",
         slot: int = 0, **params: Any) -> dict[str, Any]:
    """The server's tasks/* request and the client's one answer."""
    if task_id is not None:
        params["taskId"] = task_id
    [answer] = _request(h, method, params, request_id, slot)
    assert answer["id"] == request_id
    return answer


def _answer(h: Harness, handle: int, **kw: Any) -> None:
    h.take()
    h.feed(core.ServerRequestAnswered(now=h.now, handle=handle, **kw))


# --- the declaration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("handlers", "accept", "declared"),
    [
        (("sampling", "elicitation"), True,
         {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}),
        (("sampling", "roots"), True, {"sampling": {"createMessage": {}}}),
        (("elicitation",), True, {"elicitation": {"create": {}}}),
        (("sampling", "elicitation"), False, None),
    ],
)
def test_tasks_are_declared_only_when_accepted_and_only_for_the_handlers_given(
    handlers: tuple[str, ...], accept: bool, declared: dict[str, Any] | None
) -> None:
    h = Harness(era="legacy")
    _machine(h, handlers, accept_tasks=accept)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    caps = h.last_request("initialize")["params"]["capabilities"]
    if declared is None:
        assert "tasks" not in caps
    else:
        assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": declared}


def test_the_2026_era_declares_no_tasks_capability() -> None:
    h = Harness(era="auto")
    _machine(h)
    h.connect_modern()
    h.call("t")
    [call] = [m for m in h.messages() if m.get("method") == "tools/call"]
    assert call["params"]["_meta"][META] == {"elicitation": {}, "sampling": {}}


@pytest.mark.parametrize("handlers", [(), ("roots",)])
def test_accept_tasks_needs_a_sampling_or_elicitation_handler(handlers: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="accept_tasks needs a sampling or an elicitation"):
        core.SessionMachine(core.Spec(name="t", command="s"), handlers=handlers,
                            accept_tasks=True)


# --- a task from creation to its result -----------------------------------------------------


def test_a_sampling_task_is_created_at_once_and_its_result_kept_for_tasks_result() -> None:
    h = _client()
    h.now = 0.5
    task_id, handle = _task(h, ttl=60000)
    created = {
        "taskId": task_id, "status": "working", "createdAt": "2025-11-25T10:30:00.500Z",
        "lastUpdatedAt": "2025-11-25T10:30:00.500Z", "ttl": 60000, "pollInterval": 1000,
    }
    assert _ask(h, "tasks/get", task_id)["result"] == created
    assert _ask(h, "tasks/list")["result"] == {"tasks": [created]}
    h.now = 2.25
    _answer(h, handle, result={**ANSWER, "_meta": {"mine": 1}})
    assert h.messages() == []  # nothing goes back on the request: it was answered
    done = _ask(h, "tasks/get", task_id)["result"]
    assert done == {**created, "status": "completed",
                    "lastUpdatedAt": "2025-11-25T10:30:02.250Z"}
    result = _ask(h, "tasks/result", task_id, request_id=7)
    assert result == {"jsonrpc": "2.0", "id": 7, "result": {
        **ANSWER, "_meta": {"mine": 1, RELATED_TASK: {"taskId": task_id}}}}
    # asked again: the same answer
    assert _ask(h, "tasks/result", task_id, request_id=8)["result"] == result["result"]


def test_tasks_result_is_held_until_the_handler_answers() -> None:
    h = _client()
    task_id, handle = _task(h, "elicitation/create")
    assert _request(h, "tasks/result", {"taskId": task_id}, 3) == []  # held
    assert _request(h, "tasks/result", {"taskId": task_id}, 4) == []
    # the server gives up one of them: it gets no answer
    h.stdout({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 3}})
    _answer(h, handle, result={"action": "decline", "_meta": "not an object"})
    assert h.messages() == [{"jsonrpc": "2.0", "id": 4, "result": {
        "action": "decline", "_meta": {RELATED_TASK: {"taskId": task_id}}}}]


def test_a_failed_handler_fails_the_task_with_the_error_the_request_would_get() -> None:
    h = _client()
    task_id, handle = _task(h)
    _answer(h, handle, failed="RuntimeError")
    task = _ask(h, "tasks/get", task_id)["result"]
    assert task["status"] == "failed"
    assert task["statusMessage"] == "the client's handler failed: RuntimeError"
    assert _ask(h, "tasks/result", task_id, request_id=5) == {
        "jsonrpc": "2.0", "id": 5,
        "error": {"code": -32603, "message": "the client's handler failed: RuntimeError"}}


def test_a_refused_sampling_answer_fails_the_task_and_is_logged() -> None:
    h = _client()
    task_id, handle = _task(h)
    use = {"type": "tool_use", "id": "c1", "name": "n", "input": {}}  # no tools were offered
    _answer(h, handle, result={**ANSWER, "content": [use], "stopReason": "toolUse"})
    assert any("refused" in log.message for log in h.of(core.Log) if log.level == "WARNING")
    task = _ask(h, "tasks/get", task_id)["result"]
    assert task["status"] == "failed" and "refused" in task["statusMessage"]


def test_an_answer_that_is_not_json_fails_the_task() -> None:
    h = _client()
    task_id, handle = _task(h, "elicitation/create")
    _answer(h, handle, result={"action": "accept", "content": {"n": math.nan}})
    assert _ask(h, "tasks/get", task_id)["result"]["status"] == "failed"


# --- cancel, unknown ids, cursors -----------------------------------------------------------


def test_cancel_ends_a_working_task_and_drops_the_handlers_answer() -> None:
    h = _client()
    task_id, handle = _task(h)
    assert _request(h, "tasks/result", {"taskId": task_id}, 9) == []  # held
    h.take()
    h.now = 1.0
    h.stdout({"jsonrpc": "2.0", "id": 10, "method": "tasks/cancel",
              "params": {"taskId": task_id}})
    held, cancelled = h.messages()
    assert held == {"jsonrpc": "2.0", "id": 9, "error": {
        "code": -32602, "message": f"task {task_id!r} was cancelled"}}
    assert cancelled["id"] == 10 and cancelled["result"]["status"] == "cancelled"
    assert cancelled["result"]["statusMessage"] == "cancelled by the server"
    assert cancelled["result"]["lastUpdatedAt"] == "2025-11-25T10:30:01.000Z"
    _answer(h, handle, result=ANSWER)
    assert h.messages() == []  # dropped
    assert _ask(h, "tasks/get", task_id)["result"]["status"] == "cancelled"
    assert _ask(h, "tasks/result", task_id)["error"]["code"] == -32602
    again = _ask(h, "tasks/cancel", task_id)["error"]
    assert again == {"code": -32602,
                     "message": f"cannot cancel task {task_id!r}: already cancelled"}


def test_a_task_that_ended_cannot_be_cancelled() -> None:
    h = _client()
    task_id, handle = _task(h)
    _answer(h, handle, result=ANSWER)
    assert "already completed" in _ask(h, "tasks/cancel", task_id)["error"]["message"]


@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/cancel"])
@pytest.mark.parametrize("task_id", ["task-99", 12, None])
def test_an_unknown_task_id_is_invalid_params(method: str, task_id: object) -> None:
    h = _client()
    _task(h)
    answer = _request(h, method, {} if task_id is None else {"taskId": task_id}, "q")
    assert answer == [{"jsonrpc": "2.0", "id": "q", "error": {
        "code": -32602, "message": f"unknown task {str(task_id)!r}"}}]


def test_a_cursor_is_invalid_params_since_none_is_given_out() -> None:
    h = _client()
    assert _ask(h, "tasks/list", cursor="next")["error"] == {
        "code": -32602, "message": "unknown cursor"}
    assert _ask(h, "tasks/list", cursor=None)["result"] == {"tasks": []}


def test_tasks_are_bound_to_the_connection_that_created_them() -> None:
    h = Harness(era="legacy", concurrency="pooled", pool_size=2)
    _machine(h)
    h.connect_legacy(slot=0)
    h.connect_legacy(slot=1)
    mine, handle = _task(h, slot=0)
    theirs, _ = _task(h, request_id="r2", slot=1)
    assert mine != theirs
    assert _ask(h, "tasks/get", mine, slot=1)["error"]["code"] == -32602
    assert [t["taskId"] for t in _ask(h, "tasks/list", slot=1)["result"]["tasks"]] == [theirs]
    # a cancellation on the other connection is not for this task's held result
    assert _request(h, "tasks/result", {"taskId": mine}, 5, slot=0) == []
    h.stdout({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 5}}, slot=1)
    _answer(h, handle, result=ANSWER)
    [result] = h.messages()
    assert result["id"] == 5 and result["result"]["model"] == "m"


# --- not a task ---------------------------------------------------------------------------


def test_without_the_opt_in_task_is_ignored_and_tasks_requests_are_unknown() -> None:
    h = Harness(era="legacy")
    _machine(h, accept_tasks=False)
    h.connect_legacy()
    assert _request(h, "sampling/createMessage", {**SAMPLE, "task": {"ttl": 1000}}) == []
    [ask] = h.of(core.HandleServerRequest)
    _answer(h, ask.handle, result=ANSWER)
    assert h.messages() == [{"jsonrpc": "2.0", "id": "r1", "result": ANSWER}]
    assert _ask(h, "tasks/get", "task-1")["error"]["code"] == -32601
    assert h.machine.next_deadline() is None


@pytest.mark.parametrize("params", [{**FORM, "task": True}, FORM])  # no task object, no task
def test_a_request_without_a_task_object_is_answered_plainly(params: dict[str, Any]) -> None:
    h = _client()
    assert _request(h, "elicitation/create", params) == []
    [ask] = h.of(core.HandleServerRequest)
    _answer(h, ask.handle, result={"action": "cancel"})
    assert h.messages()[0]["result"] == {"action": "cancel"}


def test_an_invalid_request_gets_its_error_and_no_task() -> None:
    h = _client(handlers=("sampling",))
    [refused] = _request(h, "elicitation/create", {**FORM, "task": {}})
    assert refused["error"]["code"] == -32601
    assert _ask(h, "tasks/list")["result"] == {"tasks": []}


def test_a_modern_connection_serves_no_tasks() -> None:
    h = Harness(era="auto")
    _machine(h)
    h.connect_modern()
    assert _request(h, "elicitation/create", {**FORM, "task": {}}) == []  # answered plainly
    [ask] = h.of(core.HandleServerRequest)
    _answer(h, ask.handle, result={"action": "cancel"})
    assert h.messages()[0]["result"] == {"action": "cancel"}
    assert _ask(h, "tasks/list")["error"]["code"] == -32601


# --- time, bounds, endings ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("ttl", "kept"),
    [(60000, 60000), (10, 1000), (10**9, MAX_TTL_MS), (None, MAX_TTL_MS), (True, MAX_TTL_MS),
     ("60000", MAX_TTL_MS), (2500.7, 2500)],
)
def test_the_ttl_is_the_requested_one_within_bounds(ttl: object, kept: int) -> None:
    h = _client()
    params = {**SAMPLE, "task": {} if ttl is None else {"ttl": ttl}}
    [created] = _request(h, "sampling/createMessage", params)
    assert created["result"]["task"]["ttl"] == kept
    assert h.machine.next_deadline() == pytest.approx(h.now + kept / 1000)


def test_an_infinite_ttl_is_the_longest_one() -> None:
    # JSON has no infinity; a number too large for a float reads as one
    assert _ttl(math.inf) == _ttl(-math.inf) == _ttl(math.nan) == MAX_TTL_MS


def test_a_task_expires_ttl_after_its_creation_whatever_its_status() -> None:
    h = _client()
    short, short_handle = _task(h, ttl=2000)
    h.now = 1.0
    long, long_handle = _task(h, request_id="r2", ttl=5000)
    assert h.machine.next_deadline() == 2.0
    assert _request(h, "tasks/result", {"taskId": short}, 11) == []  # held
    h.take()
    h.fire_due()
    assert h.messages() == [{"jsonrpc": "2.0", "id": 11, "error": {
        "code": -32602, "message": f"task {short!r} expired"}}]
    assert h.machine.next_deadline() == 6.0
    _answer(h, short_handle, result=ANSWER)
    assert h.messages() == []  # its answer is dropped
    assert _ask(h, "tasks/get", short)["error"]["code"] == -32602
    assert _ask(h, "tasks/get", long)["result"]["status"] == "working"
    _answer(h, long_handle, result=ANSWER)
    h.fire_due()
    assert h.machine.next_deadline() is None
    assert _ask(h, "tasks/get", long)["error"]["code"] == -32602


def test_at_most_max_client_tasks_are_held() -> None:
    h = _client()
    created = [_task(h, request_id=f"r{i}") for i in range(MAX_CLIENT_TASKS)]
    [refused] = _request(h, "sampling/createMessage", {**SAMPLE, "task": {}}, "full")
    assert refused["error"]["code"] == -32603 and "at most 64 tasks" in refused["error"]["message"]
    assert h.of(core.HandleServerRequest) == []  # the handler is not asked
    second_id, second_handle = created[1]
    _answer(h, second_handle, result=ANSWER)
    _answer(h, created[2][1], result=ANSWER)
    new_id, _ = _task(h, request_id="again")  # replaces the oldest that ended
    listed = [t["taskId"] for t in _ask(h, "tasks/list")["result"]["tasks"]]
    assert len(listed) == MAX_CLIENT_TASKS and second_id not in listed
    assert listed[-1] == new_id and created[2][0] in listed


def test_a_connection_that_fails_or_closes_takes_its_tasks_along() -> None:
    h = _client()
    task_id, handle = _task(h)
    h.exited(1)
    h.fire_due()  # the retry
    h.connect_legacy()
    assert h.machine.next_deadline() is None  # no task left to expire
    _answer(h, handle, result=ANSWER)
    assert h.messages() == []
    assert _ask(h, "tasks/get", task_id)["error"]["code"] == -32602
    _task(h, request_id="r2")
    assert h.machine.next_deadline() == pytest.approx(h.now + 60.0)
    h.close()
    h.exited(0)
    assert h.machine.state == "closed" and h.machine.next_deadline() is None


def test_a_restart_takes_the_new_wall_offset() -> None:
    h = _client(wall=0.0)
    _task(h)
    assert _ask(h, "tasks/get", "task-1")["result"]["createdAt"] == "1970-01-01T00:00:00.000Z"
    h.close()
    h.exited(0)
    h.feed(core.Connect(now=h.now, wall_offset=NOV_25))
    h.connect_legacy()
    task_id, _ = _task(h)
    assert task_id == "task-2"  # ids are never reused
    assert _ask(h, "tasks/get", task_id)["result"]["createdAt"].startswith("2025-11-25T10:30")


def test_wall_time_is_iso_8601_in_utc_within_four_digit_years() -> None:
    assert wall_time(NOV_25 + 0.0005) == "2025-11-25T10:30:00.000Z"
    assert wall_time(-5.0) == "1970-01-01T00:00:00.000Z"
    assert wall_time(1e15) == "9999-12-31T23:59:59.000Z"
    with pytest.raises(ValueError, match="finite"):
        core.Connect(now=0.0, wall_offset=math.nan)


# --- recordings ---------------------------------------------------------------------------


def test_a_recording_keeps_the_opt_in_and_the_wall_offset(tmp_path: Any) -> None:
    spec = core.Spec(name="r", command="srv", era="legacy")
    lines: list[str] = []
    recorder = Recorder(spec, lines.append, handlers=["sampling"], accept_tasks=True)
    machine = core.SessionMachine(spec, handlers=["sampling"], accept_tasks=True)
    request = {"jsonrpc": "2.0", "id": "s", "method": "sampling/createMessage",
               "params": {**SAMPLE, "task": {"ttl": 5000}}}
    get = {"jsonrpc": "2.0", "id": "g", "method": "tasks/get", "params": {"taskId": "task-1"}}
    events = [
        core.Connect(now=0.0, wall_offset=NOV_25),
        core.ProcessSpawned(now=0.0, slot=0, generation=1, pid=1),
        core.StdoutReceived(
            now=0.1, slot=0, generation=1,
            data=b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}\n'
            + json.dumps(request).encode() + b"\n",
        ),
        core.ServerRequestAnswered(now=0.2, handle=1, result=ANSWER),
        core.StdoutReceived(now=0.3, slot=0, generation=1, data=json.dumps(get).encode() + b"\n"),
    ]
    live = []
    for event in events:
        recorder.record(event)
        live.extend(machine.handle(event))
    header = json.loads(lines[0])
    assert header["accept_tasks"] is True
    assert json.loads(lines[1])["wall_offset"] == NOV_25
    path = tmp_path / "r.jsonl"
    path.write_text("".join(lines))
    assert replay(str(path)) == live
    assert b"2025-11-25T10:30:00.100Z" in live[-1].data  # type: ignore[attr-defined]
    # a recording made before either existed still loads (no opt-in, 1970)
    old_header = {k: v for k, v in header.items() if k != "accept_tasks"}
    old_connect = {"event": "Connect", "now": 0.0}
    assert replay_lines([json.dumps(old_header), json.dumps(old_connect)])
    header["accept_tasks"] = "yes"
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(ValueError, match="accept_tasks"):
        replay(str(path))
