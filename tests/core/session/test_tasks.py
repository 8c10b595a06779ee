"""Tool calls run as tasks: 2025-11-25 basic/utilities/tasks and the 2026-07-28 Tasks
extension (SEP-2663), through the public events only."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_core as core
from mcp_core.driver import lists_tools_first
from tests.core.harness import TEXT_RESULT, Harness, HttpHarness

TASKS = "io.modelcontextprotocol/tasks"
LEGACY_CAPS = {
    "tools": {},
    "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
}
MODERN_CAPS = {"tools": {}, "extensions": {TASKS: {}}}


def task(status: str = "working", **extra: Any) -> dict[str, Any]:
    wire = {
        "taskId": "t-1",
        "status": status,
        "createdAt": "2026-12-04T10:00:00Z",
        "lastUpdatedAt": "2026-12-04T10:00:01Z",
    }
    return {**wire, **extra}


def legacy(caps: dict[str, Any] | None = None, **fields: Any) -> Harness:
    """A ready 2025-11-25 stdio session whose server declares ``caps``."""
    h = Harness(era="legacy", **fields)
    h.machine = core.SessionMachine(h.spec, handlers=("elicitation",))
    h.feed(core.Connect(now=h.now))
    h.spawned()
    init = h.last_request("initialize")
    capabilities = LEGACY_CAPS if caps is None else caps
    h.answer(
        init["id"],
        {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "serverInfo": {"name": "s"},
        },
    )
    h.take()
    return h


def modern(caps: dict[str, Any] | None = None) -> HttpHarness:
    """A ready 2026-07-28 HTTP session whose server declares ``caps``."""
    h = HttpHarness(era="auto")
    h.machine = core.SessionMachine(h.spec, handlers=("elicitation",))
    h.feed(core.Connect(now=h.now))
    h.result_for(
        h.request("server/discover"),
        {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": MODERN_CAPS if caps is None else caps,
        },
    )
    h.take()
    return h


def list_tools(h: Harness, *tools: dict[str, Any]) -> None:
    h.list_tools()
    h.answer(h.last_request("tools/list")["id"], {"tools": list(tools)})
    h.take()


def required(name: str, support: str = "required") -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, "execution": {"taskSupport": support}}


def declared(h: HttpHarness, request: core.StartHttp) -> bool:
    meta = h.body(request)["params"]["_meta"]
    extensions = meta["io.modelcontextprotocol/clientCapabilities"].get("extensions", {})
    return TASKS in extensions


# --- 2025-11-25 -------------------------------------------------------------------------------


def test_a_required_tool_is_called_as_a_task_and_followed_to_its_result() -> None:
    h = legacy()
    list_tools(h, required("research"), required("quick", "optional"))
    ticket = h.call("research", {"topic": "x"}, progress=True)
    call = h.last_request("tools/call")
    assert call["params"]["task"] == {}
    h.answer(call["id"], {"task": task(statusMessage="queued", pollInterval=500, ttl=60000)})
    assert ticket not in h.replies
    assert h.machine.next_deadline() == pytest.approx(0.5)
    assert [(p.progress, p.message) for p in h.of(core.ProgressUpdate)] == [(1.0, "queued")]
    h.take()
    h.fire_due()
    poll = h.last_request("tasks/get")
    assert poll["params"] == {"taskId": "t-1"}
    h.answer(poll["id"], task(statusMessage="stage 2 of 4", pollInterval=700))
    assert [(p.progress, p.message) for p in h.of(core.ProgressUpdate)] == [(2.0, "stage 2 of 4")]
    h.take()
    assert h.machine.next_deadline() == pytest.approx(h.now + 0.7)
    h.fire_due()
    h.answer(h.last_request("tasks/get")["id"], task("completed", statusMessage="stage 2 of 4"))
    assert h.of(core.ProgressUpdate)[0].message == "completed"
    result = h.last_request("tasks/result")
    assert result["params"] == {"taskId": "t-1"}
    h.answer(result["id"], TEXT_RESULT)
    assert h.result(ticket).text == "hi"
    assert h.machine.in_flight == 0 and h.machine.next_deadline() is None


def test_a_task_that_ends_as_its_last_stage_begins_reports_both() -> None:
    """server-everything ends its research task with its last stage's message left as it
    was: a poll that never saw that stage at work reports the message, then the end."""
    h = legacy()
    list_tools(h, required("research"))
    ticket = h.call("research", {"topic": "x"}, progress=True)
    h.answer(h.last_request("tools/call")["id"], {"task": task(statusMessage="stage 1")})
    h.take()
    h.fire_due()
    h.answer(h.last_request("tasks/get")["id"], task("completed", statusMessage="stage 2"))
    updates = [(p.progress, p.message) for p in h.of(core.ProgressUpdate)]
    assert updates == [(2.0, "stage 2"), (3.0, "completed")]
    h.answer(h.last_request("tasks/result")["id"], TEXT_RESULT)
    assert h.result(ticket).text == "hi"


def test_an_optional_tool_is_called_plainly_unless_asked_and_false_never_asks() -> None:
    h = legacy()
    list_tools(h, required("quick", "optional"), required("research"))
    h.call("quick")
    assert "task" not in h.last_request("tools/call")["params"]
    h.call("quick", task=True)
    assert h.last_request("tools/call")["params"]["task"] == {}
    h.call("research", task=False)
    assert "task" not in h.last_request("tools/call")["params"]
    h.call("unknown-tool")
    assert "task" not in h.last_request("tools/call")["params"]


def test_a_task_is_never_asked_of_a_listed_tool_that_does_not_run_as_one() -> None:
    h = legacy()
    plain = {"name": "plain", "inputSchema": {"type": "object"}}
    list_tools(h, plain, required("odd", "sometimes"), required("never", "forbidden"))
    for name, kw in [("plain", {"task": True}), ("never", {"detach": True})]:
        ticket = h.call(name, **kw)
        error = h.error(ticket)
        assert isinstance(error, core.InvalidArguments) and error.path == "task"
        assert "does not run as a task" in str(error) and "not start_tool" in str(error)
    assert "'sometimes'" in str(h.error(h.call("odd", task=True)))
    assert not h.messages() and h.machine.in_flight == 0
    h.call("plain")  # a plain call of it goes out
    assert "task" not in h.last_request("tools/call")["params"]


def test_a_required_tool_is_called_plainly_where_the_server_runs_no_tool_tasks() -> None:
    h = legacy({"tools": {}, "tasks": {"list": {}}})
    list_tools(h, required("research"))
    h.call("research")
    assert "task" not in h.last_request("tools/call")["params"]


def test_asking_for_a_task_is_refused_where_the_server_runs_none() -> None:
    h = legacy({"tools": {}})
    ticket = h.call("research", task=True)
    error = h.error(ticket)
    assert isinstance(error, core.NotSupported)
    assert "tasks.requests.tools.call" in str(error)
    assert not h.messages()
    with pytest.raises(ValueError, match="detach needs a task"):
        core.CallTool(now=0.0, ticket=1, name="x", task=False, detach=True)


def test_detach_answers_with_the_task_status() -> None:
    h = legacy()
    ticket = h.call("research", detach=True)
    call = h.last_request("tools/call")
    h.answer(call["id"], {"task": task(pollInterval=1000, ttl=300000, statusMessage="m")})
    status = h.result(ticket)
    assert isinstance(status, core.TaskStatus)
    assert (status.task_id, status.status, status.message) == ("t-1", "working", "m")
    assert (status.poll_interval, status.ttl, status.done) == (1.0, 300.0, False)
    assert status.created_at == "2026-12-04T10:00:00Z"
    assert h.machine.in_flight == 0


def test_a_task_handle_that_cannot_be_read_fails_the_call() -> None:
    h = legacy()
    ticket = h.call("research", task=True)
    h.answer(h.last_request("tools/call")["id"], {"task": {"taskId": "t", "status": "sleeping"}})
    error = h.error(ticket)
    assert isinstance(error, core.InvalidResponse)
    assert "status is 'sleeping'" in str(error)


def test_a_plain_result_to_a_task_call_is_the_result() -> None:
    h = legacy()
    ticket = h.call("research", task=True)
    h.answer(h.last_request("tools/call")["id"], TEXT_RESULT)
    assert h.result(ticket).text == "hi"


def test_input_required_asks_for_the_result_at_once() -> None:
    h = legacy()
    ticket = h.call("research", task=True)
    h.answer(h.last_request("tools/call")["id"], {"task": task()})
    h.take()
    h.fire_due()
    h.answer(h.last_request("tasks/get")["id"], task("input_required"))
    result = h.last_request("tasks/result")
    h.take()
    # The server's own request arrives while tasks/result is held: the handler gets it.
    h.stdout(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "elicitation/create",
            "params": {"message": "which?", "requestedSchema": {"type": "object"}},
        }
    )
    ask = h.of(core.HandleServerRequest)[0]
    h.feed(core.ServerRequestAnswered(now=h.now, handle=ask.handle, result={"action": "decline"}))
    assert h.messages()[-1]["id"] == 0
    h.answer(result["id"], TEXT_RESULT)
    assert h.result(ticket).text == "hi"


def test_a_failed_task_gets_the_error_tasks_result_answers() -> None:
    h = legacy()
    ticket = h.call("research", task=True)
    h.answer(h.last_request("tools/call")["id"], {"task": task("failed")})
    h.answer_error(h.last_request("tasks/result")["id"], -32603, "it broke")
    error = h.error(ticket)
    assert isinstance(error, core.JsonRpcError) and error.code == -32603


def test_a_task_cancelled_elsewhere_ends_the_call_with_task_cancelled() -> None:
    h = legacy()
    ticket = h.call("research", task=True)
    h.answer(
        h.last_request("tools/call")["id"], {"task": task("cancelled", statusMessage="by admin")}
    )
    error = h.error(ticket)
    assert isinstance(error, core.TaskCancelled) and error.task_id == "t-1"
    assert str(error) == "task 't-1' was cancelled on the server: by admin"
    assert str(core.TaskCancelled("t-2")) == "task 't-2' was cancelled on the server"


def test_a_poll_that_fails_or_cannot_be_read_fails_the_call() -> None:
    h = legacy()
    first = h.call("research", task=True)
    h.answer(h.last_request("tools/call")["id"], {"task": task()})
    h.fire_due()
    h.answer_error(h.last_request("tasks/get")["id"], -32602, "unknown task")
    assert isinstance(h.error(first), core.JsonRpcError)
    second = h.call("research", task=True)
    h.answer(h.last_request("tools/call")["id"], {"task": task()})
    h.fire_due()
    h.answer(h.last_request("tasks/get")["id"], {"status": "working"})
    error = h.error(second)
    assert isinstance(error, core.InvalidResponse) and "taskId" in str(error)


def test_a_deadline_cancels_the_task_with_tasks_cancel() -> None:
    h = legacy()
    ticket = h.call("research", task=True, timeout=5.0)
    h.answer(h.last_request("tools/call")["id"], {"task": task(pollInterval=2000)})
    h.fire_due()
    poll = h.last_request("tasks/get")
    h.take()
    h.advance(5.0)
    error = h.error(ticket)
    assert isinstance(error, core.RequestTimeout)
    assert str(error) == (
        "task 't-1' (status working) did not finish within 5 s; it was cancelled on the "
        "server (raise timeout= if the tool is slow)"
    )
    sent = h.messages()
    assert [m.get("method") for m in sent] == ["tasks/cancel"]
    assert sent[0]["params"] == {"taskId": "t-1"}
    h.answer(poll["id"], task())  # the late answer to the poll is ignored
    h.answer_error(sent[0]["id"], -32602, "already done")
    logs = [a.message for a in h.of(core.Log) if a.level == "WARNING"]
    assert logs == ["the server refused tasks/cancel: already done"]
    assert h.machine.in_flight == 0 and h.machine.next_deadline() is None


def test_a_caller_that_gives_up_cancels_its_task() -> None:
    h = legacy()
    ticket = h.call("research", task=True)
    h.answer(h.last_request("tools/call")["id"], {"task": task()})
    h.take()
    h.feed(core.CancelCall(now=h.now, ticket=ticket))
    assert [m.get("method") for m in h.messages()] == ["tasks/cancel"]
    assert ticket not in h.replies


def test_a_server_that_dies_mid_task_fails_the_call() -> None:
    h = legacy()
    ticket = h.call("research", task=True)
    h.answer(h.last_request("tools/call")["id"], {"task": task()})
    h.exited(1)
    assert isinstance(h.error(ticket), core.ServerExited)
    assert h.machine.next_deadline() != 0.0


def test_follow_task_attaches_by_id_and_leaves_the_task_running_at_its_deadline() -> None:
    h = legacy()
    ticket = h.ticket()
    h.feed(core.FollowTask(now=h.now, ticket=ticket, task_id="t-9", timeout=3.0))
    poll = h.last_request("tasks/get")
    assert poll["params"] == {"taskId": "t-9"}
    h.answer(poll["id"], task(taskId="t-9"))
    h.take()
    h.advance(3.0)
    error = h.error(ticket)
    assert "it goes on: attach again with its id" in str(error)
    assert not h.messages()  # no tasks/cancel: the caller only attached
    again = h.ticket()
    h.feed(core.FollowTask(now=h.now, ticket=again, task_id="t-9", cancel=True))
    h.answer(h.last_request("tasks/get")["id"], task("completed", taskId="t-9"))
    h.answer(h.last_request("tasks/result")["id"], TEXT_RESULT)
    assert h.result(again).text == "hi"
    with pytest.raises(ValueError, match="task_id"):
        core.FollowTask(now=0.0, ticket=1, task_id="")
    with pytest.raises(ValueError, match="timeout"):
        core.FollowTask(now=0.0, ticket=1, task_id="x", timeout=0)


def test_follow_task_is_refused_where_the_server_has_no_tasks_and_checks_meta() -> None:
    h = legacy({"tools": {}})
    ticket = h.ticket()
    h.feed(core.FollowTask(now=h.now, ticket=ticket, task_id="t"))
    assert "'tasks'" in str(h.error(ticket))
    other = h.ticket()
    h.feed(core.FollowTask(now=h.now, ticket=other, task_id="t", meta={"progressToken": 1}))
    assert isinstance(h.error(other), core.InvalidArguments)


def test_list_tasks_pages_and_is_never_cached() -> None:
    h = legacy()
    for _ in range(2):
        ticket = h.ticket()
        h.feed(core.ListItems(now=h.now, ticket=ticket, kind="tasks"))
        first = h.last_request("tasks/list")
        h.answer(first["id"], {"tasks": [task()], "nextCursor": "c"})
        second = h.last_request("tasks/list")
        assert second["params"] == {"cursor": "c"}
        h.answer(second["id"], {"tasks": [task("completed", taskId="t-2")]})
        assert [t.task_id for t in h.result(ticket)] == ["t-1", "t-2"]
        h.take()
    refused = legacy({"tools": {}, "tasks": {"cancel": {}}})
    ticket = refused.ticket()
    refused.feed(core.ListItems(now=refused.now, ticket=ticket, kind="tasks"))
    assert "tasks.list" in str(refused.error(ticket))


def test_tasks_get_and_cancel_requests_give_task_statuses() -> None:
    h = legacy()
    get, cancel = h.ticket(), h.ticket()
    h.feed(core.Request(now=h.now, ticket=get, method="tasks/get", params={"taskId": "t-1"}))
    h.answer(h.last_request("tasks/get")["id"], task("completed"))
    assert h.result(get).done is True
    h.feed(core.Request(now=h.now, ticket=cancel, method="tasks/cancel", params={"taskId": "t-1"}))
    h.answer(h.last_request("tasks/cancel")["id"], task("cancelled"))
    assert h.result(cancel).status == "cancelled"
    for method in ("tasks/result", "tasks/list", "tasks/update"):
        with pytest.raises(ValueError, match="is not sent with Request"):
            core.Request(now=0.0, ticket=1, method=method)


# --- 2026-07-28 -------------------------------------------------------------------------------


def test_a_call_refused_for_want_of_the_extension_is_sent_again_declaring_it() -> None:
    h = modern()
    ticket = h.call("research", {"topic": "x"}, progress=True)
    first = h.request("tools/call")
    assert not declared(h, first)
    data = {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    h.respond(
        first,
        400,
        {
            "jsonrpc": "2.0",
            "id": h.body(first)["id"],
            "error": {"code": -32021, "message": "needs tasks", "data": data},
        },
    )
    second = h.request("tools/call")
    assert second is not first and declared(h, second)
    assert h.body(second)["params"]["arguments"] == {"topic": "x"}
    h.result_for(second, {"resultType": "task", **task(pollIntervalMs=250, ttlMs=None)})
    # The task's start is news too, with no message of the server's: its status says it.
    assert [(p.progress, p.message) for p in h.of(core.ProgressUpdate)] == [(1.0, "working")]
    h.take()
    h.fire_due()
    poll = h.request("tasks/get")
    assert h.header(poll, "Mcp-Name") == "t-1" and h.header(poll, "Mcp-Method") == "tasks/get"
    assert declared(h, poll)
    h.result_for(poll, {"resultType": "complete", **task("completed", result=TEXT_RESULT)})
    assert h.result(ticket).text == "hi"
    assert [(p.progress, p.message) for p in h.of(core.ProgressUpdate)] == [(2.0, "completed")]


def test_a_second_refusal_or_one_for_another_extension_is_the_callers_error() -> None:
    h = modern()
    ticket = h.call("research", task=True)
    post = h.request("tools/call")
    assert declared(h, post)
    data = {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    error = {"code": -32021, "message": "no", "data": data}
    h.respond(post, 400, {"jsonrpc": "2.0", "id": h.body(post)["id"], "error": error})
    assert isinstance(h.error(ticket), core.MissingClientCapability)
    plain = h.call("research")
    post = h.request("tools/call")
    error = {"code": -32021, "message": "no", "data": {"requiredCapabilities": {"roots": {}}}}
    h.respond(post, 400, {"jsonrpc": "2.0", "id": h.body(post)["id"], "error": error})
    assert isinstance(h.error(plain), core.MissingClientCapability)
    other = h.call("research")
    post = h.request("tools/call")
    h.respond(
        post,
        200,
        {"jsonrpc": "2.0", "id": h.body(post)["id"], "error": {"code": -32021, "message": "x"}},
    )
    assert isinstance(h.error(other), core.JsonRpcError)


def test_a_modern_task_that_fails_or_is_malformed() -> None:
    h = modern()
    outcomes: list[tuple[dict[str, Any], type[core.McpError], str]] = [
        (task("failed", error={"code": -32603, "message": "boom"}), core.JsonRpcError, "boom"),
        (task("failed"), core.InvalidResponse, "failed without error"),
        (task("completed"), core.InvalidResponse, "completed without result"),
        (task("completed", result={"content": 3}), core.InvalidResponse, "content"),
        (task("input_required", inputRequests=[]), core.InvalidResponse, "no object"),
        (
            task("input_required", inputRequests={"k": {"method": "roots/list"}}),
            core.InvalidResponse,
            "roots/list",
        ),
    ]
    for answer, kind, words in outcomes:
        ticket = h.call("research", task=True)
        h.result_for(h.request("tools/call"), {"resultType": "task", **task()})
        h.take()
        h.fire_due()
        h.result_for(h.request("tasks/get"), {"resultType": "complete", **answer})
        error = h.error(ticket)
        assert isinstance(error, kind) and words in str(error), error
        h.take()


def test_input_requests_are_answered_once_through_tasks_update() -> None:
    h = modern()
    ticket = h.call("research", task=True)
    h.result_for(h.request("tools/call"), {"resultType": "task", **task(pollIntervalMs=10)})
    h.take()
    h.fire_due()
    assert h.machine.next_deadline() is not None
    ask = {"method": "elicitation/create", "params": {"message": "which?"}}
    h.result_for(
        h.request("tasks/get"),
        {"resultType": "complete", **task("input_required", inputRequests={"k1": ask, "k2": ask})},
    )
    handles = [a.handle for a in h.of(core.HandleServerRequest)]
    assert len(handles) == 2
    h.take()
    h.feed(core.ServerRequestAnswered(now=h.now, handle=handles[0], result={"action": "accept"}))
    assert not h.requests()  # one input is still owed
    h.feed(core.ServerRequestAnswered(now=h.now, handle=handles[1], result={"action": "decline"}))
    update = h.request("tasks/update")
    assert h.header(update, "Mcp-Name") == "t-1"
    assert h.body(update)["params"]["inputResponses"] == {
        "k1": {"action": "accept"},
        "k2": {"action": "decline"},
    }
    h.result_for(update, {"resultType": "complete"})
    h.take()
    h.fire_due()
    # The server has not read the update yet: the same keys again are not asked again.
    h.result_for(
        h.request("tasks/get"),
        {"resultType": "complete", **task("input_required", inputRequests={"k1": ask})},
    )
    assert not h.of(core.HandleServerRequest)
    h.take()
    h.fire_due()
    h.result_for(h.request("tasks/get"), {"resultType": "complete", **task(result=TEXT_RESULT)})
    h.take()
    h.fire_due()
    h.result_for(
        h.request("tasks/get"), {"resultType": "complete", **task("completed", result=TEXT_RESULT)}
    )
    assert h.result(ticket).text == "hi"


def test_a_failing_input_handler_or_update_fails_the_call() -> None:
    h = modern()
    ask = {"method": "elicitation/create", "params": {"message": "which?"}}
    for failing_handler in (True, False):
        ticket = h.call("research", task=True)
        h.result_for(h.request("tools/call"), {"resultType": "task", **task()})
        h.fire_due()
        h.result_for(
            h.request("tasks/get"),
            {"resultType": "complete", **task("input_required", inputRequests={"k": ask})},
        )
        handle = h.of(core.HandleServerRequest)[-1].handle
        if failing_handler:
            h.feed(core.ServerRequestAnswered(now=h.now, handle=handle, failed="ValueError"))
            assert "handler failed: ValueError" in str(h.error(ticket))
        else:
            h.feed(core.ServerRequestAnswered(now=h.now, handle=handle, result={"action": "x"}))
            update = h.request("tasks/update")
            error = {"code": -32602, "message": "expired"}
            h.respond(update, 200, {"jsonrpc": "2.0", "id": h.body(update)["id"], "error": error})
            assert "expired" in str(h.error(ticket))
        h.take()


def test_an_input_answer_after_the_call_ended_is_dropped() -> None:
    h = modern()
    ask = {"method": "elicitation/create", "params": {"message": "which?"}}
    ticket = h.call("research", task=True, timeout=2.0)
    h.result_for(h.request("tools/call"), {"resultType": "task", **task()})
    h.fire_due()
    h.result_for(
        h.request("tasks/get"),
        {"resultType": "complete", **task("input_required", inputRequests={"k": ask})},
    )
    handle = h.of(core.HandleServerRequest)[-1].handle
    h.advance(2.0)
    assert isinstance(h.error(ticket), core.RequestTimeout)
    cancel = h.request("tasks/cancel")
    assert h.header(cancel, "Mcp-Name") == "t-1" and declared(h, cancel)
    h.take()
    h.feed(core.ServerRequestAnswered(now=h.now, handle=handle, result={"action": "accept"}))
    assert not h.requests()


def test_modern_task_methods_need_the_servers_extension() -> None:
    h = modern({"tools": {}})
    for method in ("tasks/get", "tasks/list"):
        ticket = h.ticket()
        if method == "tasks/list":
            h.feed(core.ListItems(now=h.now, ticket=ticket, kind="tasks"))
        else:
            h.feed(core.Request(now=h.now, ticket=ticket, method=method, params={"taskId": "t"}))
        assert isinstance(h.error(ticket), core.NotSupported)
    ticket = h.call("research", task=True)  # the server still decides: sent, declared
    assert declared(h, h.request("tools/call"))
    h.result_for(h.request("tools/call"), TEXT_RESULT)
    assert h.result(ticket).text == "hi"


def test_modern_cancel_is_acknowledged_with_nothing_and_list_is_2025_only() -> None:
    h = modern()
    ticket = h.ticket()
    h.feed(core.Request(now=h.now, ticket=ticket, method="tasks/cancel", params={"taskId": "t"}))
    post = h.request("tasks/cancel")
    assert declared(h, post) and h.header(post, "Mcp-Name") == "t"
    h.result_for(post, {"resultType": "complete"})
    assert h.result(ticket) is None
    listing = h.ticket()
    h.feed(core.ListItems(now=h.now, ticket=listing, kind="tasks"))
    assert "2025-11-25 only" in str(h.error(listing))


def test_a_modern_follow_task_polls_at_once() -> None:
    h = modern({**MODERN_CAPS, "logging": {}})
    level = h.ticket()
    h.feed(
        core.Request(now=h.now, ticket=level, method="logging/setLevel", params={"level": "info"})
    )
    assert h.result(level) is None
    ticket = h.ticket()
    h.feed(core.FollowTask(now=h.now, ticket=ticket, task_id="t-1", progress=True))
    poll = h.request("tasks/get")
    assert h.header(poll, "Mcp-Name") == "t-1"
    assert h.body(poll)["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "info"
    h.result_for(poll, {"resultType": "complete", **task("cancelled")})
    assert isinstance(h.error(ticket), core.TaskCancelled)


# --- TaskStatus ---------------------------------------------------------------------------------


def test_task_status_reads_either_version_and_writes_the_modern_one() -> None:
    legacy_task = core.TaskStatus.from_wire(task(ttl=1500, pollInterval=250))
    modern_task = core.TaskStatus.from_wire(task(ttlMs=1500, pollIntervalMs=250, ttl="x"))
    assert legacy_task == modern_task
    assert modern_task.to_wire() == {**task(), "ttlMs": 1500, "pollIntervalMs": 250}
    bare = core.TaskStatus.from_wire({"taskId": "a", "status": "completed", "ttlMs": None})
    assert bare.to_wire() == {"taskId": "a", "status": "completed"}
    assert (bare.ttl, bare.poll_interval, bare.done) == (None, None, True)
    for wire, words in [
        ([], "not an object"),
        ({"status": "working"}, "taskId"),
        ({"taskId": "a", "status": 3}, "not a string"),
    ]:
        with pytest.raises(ValueError, match=words):
            core.TaskStatus.from_wire(wire)


def test_a_driver_lists_the_tools_first_only_where_that_decides_a_task() -> None:
    def first(h: Harness) -> bool:
        """The answer both ways: from a status, and the machine's own (asked per call)."""
        assert h.machine.lists_tools_first is lists_tools_first(h.machine.status(h.now))
        return h.machine.lists_tools_first

    h = legacy()
    assert first(h) is True
    list_tools(h, required("research"))
    assert first(h) is False
    assert first(legacy({"tools": {}})) is False
    assert first(modern()) is False
    assert first(Harness()) is False
    h = legacy()
    h.exited()  # no ready connection
    assert first(h) is False
