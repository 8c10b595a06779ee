"""The Tasks-extension peer works: raw JSON-RPC over stdio and Streamable HTTP, no client code.

tests/servers/fastmcp_tasks_server.py (FastMCP 4.1.4 with fastmcp-tasks, run by the interpreter
of .venv-tasks) is the real peer of the Tasks extension `io.modelcontextprotocol/tasks` of
MCP 2026-07-28 (SEP-2663). These tests pin what the client's tests rely on: a declared call of a
task tool answers a task handle (`resultType: "task"`), and `tasks/get` takes it to its terminal
status (`completed`, `failed`, `cancelled`), through `input_required` and `tasks/update` for an
elicitation. Without the peer venv they fail, saying that `make test` creates it.

Polling `tasks/get` is how the extension reports progress (there is no event to wait for): the
loops below poll at the server's `pollIntervalMs`, each bounded by a deadline.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any, Protocol

import httpcore
import pytest

from tests.conftest import fastmcp_tasks_argv, require_tasks_venv
from tests.servers.http_peers import HttpPeer, start_fastmcp_tasks_http
from tests.servers.test_http_peers_smoke import ACCEPT, JSON_BODY, TIMEOUTS, header, messages_of
from tests.servers.test_servers_smoke import RawPeer

DEADLINE = 30.0
MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
POLL_INTERVAL_MS = 50  # the server's --poll-interval-ms default
TTL_MS = 900_000  # Docket's execution TTL, the server's --ttl-ms default


def meta(declare: bool) -> dict[str, Any]:
    """The per-request `_meta` of 2026-07-28, declaring the Tasks extension or not."""
    extensions: dict[str, Any] = {"extensions": {TASKS: {}}} if declare else {}
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "smoke", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": extensions,
    }


class Wire(Protocol):
    """One peer, one transport: a request in, its JSON-RPC answer and HTTP status out (None
    on stdio)."""

    def request(
        self, method: str, params: dict[str, Any], *, declare: bool = True
    ) -> tuple[dict[str, Any], int | None]: ...


class StdioWire:
    def __init__(self, peer: RawPeer) -> None:
        self.peer = peer

    def request(
        self, method: str, params: dict[str, Any], *, declare: bool = True
    ) -> tuple[dict[str, Any], int | None]:
        answer, before = self.peer.request(method, {**params, "_meta": meta(declare)})
        assert before == [], before  # the peer sends nothing unasked
        return answer, None


class HttpWire:
    """Modern Streamable HTTP by hand: Mcp-Method always, Mcp-Name = the tool name of
    tools/call and the taskId of tasks/* (SEP-2663)."""

    def __init__(self, pool: httpcore.ConnectionPool, url: str) -> None:
        self.pool = pool
        self.url = url
        self.next_id = 0

    def post(
        self, method: str, params: dict[str, Any], *, declare: bool = True, name: str | None = None
    ) -> tuple[dict[str, Any], httpcore.Response]:
        self.next_id += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": method,
            "params": {**params, "_meta": meta(declare)},
        }
        headers = [ACCEPT, JSON_BODY, ("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)]
        name = name if name is not None else params.get("taskId", params.get("name"))
        if name is not None:
            headers.append(("Mcp-Name", name))
        response = self.pool.request(
            "POST",
            self.url,
            headers=headers,
            content=json.dumps(message).encode(),
            extensions={"timeout": TIMEOUTS},
        )
        answers = [m for m in messages_of(response) if m.get("id") == self.next_id]
        assert len(answers) == 1, (response.status, response.content)
        return answers[0], response

    def request(
        self, method: str, params: dict[str, Any], *, declare: bool = True
    ) -> tuple[dict[str, Any], int | None]:
        answer, response = self.post(method, params, declare=declare)
        return answer, response.status


@pytest.fixture(scope="module")
def stdio_peer() -> Iterator[RawPeer]:
    peer = RawPeer(fastmcp_tasks_argv())
    yield peer
    stop_stdio(peer)


def stop_stdio(peer: RawPeer) -> None:
    if peer.proc.poll() is None:
        peer.proc.kill()
    peer.proc.wait(timeout=DEADLINE)
    for pipe in (peer.proc.stdin, peer.proc.stdout, peer.proc.stderr):
        if pipe is not None:
            pipe.close()


@pytest.fixture(scope="module")
def http_peer() -> Iterator[HttpPeer]:
    require_tasks_venv()
    with start_fastmcp_tasks_http() as peer:
        yield peer


@pytest.fixture
def pool() -> Iterator[httpcore.ConnectionPool]:
    with httpcore.ConnectionPool() as pool:
        yield pool


@pytest.fixture(params=["stdio", "http"])
def wire(request: pytest.FixtureRequest, pool: httpcore.ConnectionPool) -> Wire:
    if request.param == "stdio":
        return StdioWire(request.getfixturevalue("stdio_peer"))
    return HttpWire(pool, request.getfixturevalue("http_peer").url)


def result_of(wire: Wire, method: str, params: dict[str, Any], **kw: Any) -> dict[str, Any]:
    answer, status = wire.request(method, params, **kw)
    assert "result" in answer and status in (None, 200), (status, answer)
    result: dict[str, Any] = answer["result"]
    return result


def error_of(wire: Wire, method: str, params: dict[str, Any], **kw: Any) -> tuple[int, int | None]:
    """The JSON-RPC error code of a refused request and its HTTP status (None on stdio)."""
    answer, status = wire.request(method, params, **kw)
    assert "error" in answer, (status, answer)
    return answer["error"]["code"], status


def start_task(wire: Wire, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    handle = result_of(wire, "tools/call", {"name": tool, "arguments": arguments})
    assert handle["resultType"] == "task", handle
    assert handle["status"] == "working", handle
    return handle


def poll(wire: Wire, task_id: str, *statuses: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """tasks/get every pollIntervalMs until the status is one of `statuses`: the answer that
    had it and every answer before it. AssertionError at the deadline."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + DEADLINE
    while True:
        task = result_of(wire, "tasks/get", {"taskId": task_id})
        assert task["taskId"] == task_id and task["resultType"] == "complete", task
        if task["status"] in statuses:
            return task, seen
        seen.append(task)
        assert time.monotonic() < deadline, f"task still {task['status']} after {DEADLINE} s"
        time.sleep(task["pollIntervalMs"] / 1000)  # the extension's own pacing (see above)


def text_of(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


# --- the tests ---


def test_discover_declares_the_tasks_extension(wire: Wire) -> None:
    discovered = result_of(wire, "server/discover", {})
    assert discovered["supportedVersions"] == [MODERN]
    assert discovered["capabilities"]["extensions"][TASKS] == {}


def test_declared_call_answers_a_task_that_completes(wire: Wire) -> None:
    handle = start_task(wire, "quick_task", {"text": "hi"})
    assert isinstance(handle["taskId"], str) and handle["taskId"]
    assert handle["pollIntervalMs"] == POLL_INTERVAL_MS
    assert handle["ttlMs"] == TTL_MS
    assert handle["createdAt"] == handle["lastUpdatedAt"]
    task, before = poll(wire, handle["taskId"], "completed")
    assert {earlier["status"] for earlier in before} <= {"working"}
    assert task["result"]["isError"] is False
    assert text_of(task["result"]) == "quick: hi"


def test_undeclared_calls_are_plain_or_refused(wire: Wire) -> None:
    plain = result_of(
        wire, "tools/call", {"name": "sync_echo", "arguments": {"text": "x"}}, declare=False
    )
    assert plain["resultType"] == "complete" and text_of(plain) == "x"
    # An optional task tool runs in the foreground for a client that did not declare Tasks.
    optional = result_of(
        wire, "tools/call", {"name": "optional_task", "arguments": {"text": "x"}}, declare=False
    )
    assert optional["resultType"] == "complete" and text_of(optional) == "optional: x"
    # A required one is refused with MissingRequiredClientCapability (HTTP 400).
    code, status = error_of(
        wire, "tools/call", {"name": "quick_task", "arguments": {"text": "x"}}, declare=False
    )
    assert (code, status) in ((-32021, None), (-32021, 400))


def test_declared_sync_tool_answers_a_plain_result(wire: Wire) -> None:
    plain = result_of(wire, "tools/call", {"name": "sync_echo", "arguments": {"text": "x"}})
    assert plain["resultType"] == "complete" and text_of(plain) == "x"


def test_staged_task_reports_its_stage_as_status_message(wire: Wire) -> None:
    handle = start_task(wire, "staged_task", {"stages": 2, "delay_ms": 1000})
    task, before = poll(wire, handle["taskId"], "completed")
    messages = {earlier.get("statusMessage") for earlier in before} - {None}
    assert messages and messages <= {"stage 1/2", "stage 2/2"}, messages
    assert text_of(task["result"]) == "staged: 2 stages"


def test_a_raising_tool_completes_with_an_error_result(wire: Wire) -> None:
    handle = start_task(wire, "failing_task", {})
    task, _ = poll(wire, handle["taskId"], "completed", "failed")
    assert task["status"] == "completed"
    assert task["result"]["isError"] is True
    assert text_of(task["result"]) == "failing_task failed on purpose"


def test_a_protocol_error_fails_the_task(wire: Wire) -> None:
    handle = start_task(wire, "erroring_task", {})
    task, _ = poll(wire, handle["taskId"], "completed", "failed")
    assert task["status"] == "failed"
    assert task["error"] == {"code": -32603, "message": "erroring_task failed on purpose"}
    assert "result" not in task


def test_cancel_ends_a_running_task_cancelled(wire: Wire) -> None:
    handle = start_task(wire, "forever_task", {})
    task_id = handle["taskId"]
    assert result_of(wire, "tasks/get", {"taskId": task_id})["status"] == "working"
    assert result_of(wire, "tasks/cancel", {"taskId": task_id})["resultType"] == "complete"
    task, _ = poll(wire, task_id, "cancelled", "completed", "failed")
    assert task["status"] == "cancelled"
    # Cancelling it again is acknowledged and changes nothing.
    result_of(wire, "tasks/cancel", {"taskId": task_id})
    assert result_of(wire, "tasks/get", {"taskId": task_id})["status"] == "cancelled"


def test_input_required_then_update_completes_with_the_answer(wire: Wire) -> None:
    handle = start_task(wire, "ask_task", {"question": "Your name?"})
    task_id = handle["taskId"]
    task, _ = poll(wire, task_id, "input_required", "completed", "failed")
    assert task["status"] == "input_required", task
    [(key, request)] = task["inputRequests"].items()
    assert key.startswith(f"{task_id}:")  # keys are minted by the server
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Your name?"
    assert request["params"]["requestedSchema"]["required"] == ["answer"]
    # An answer under a key the server did not ask is acknowledged and ignored.
    stray = {"nope": {"action": "accept", "content": {"answer": "x"}}}
    result_of(wire, "tasks/update", {"taskId": task_id, "inputResponses": stray})
    assert result_of(wire, "tasks/get", {"taskId": task_id})["status"] == "input_required"
    answer = {key: {"action": "accept", "content": {"answer": "Ada"}}}
    updated = result_of(wire, "tasks/update", {"taskId": task_id, "inputResponses": answer})
    assert updated["resultType"] == "complete"
    task, _ = poll(wire, task_id, "completed", "failed")
    assert text_of(task["result"]) == "answer: Ada"


def test_unknown_task_and_removed_methods(wire: Wire) -> None:
    for method in ("tasks/get", "tasks/cancel"):
        code, status = error_of(wire, method, {"taskId": "no-such-task"})
        assert code == -32602 and status in (None, 400)
    # tasks/result and tasks/list are 2025-11-25 methods the extension removed.
    code, status = error_of(wire, "tasks/list", {})
    assert code == -32601 and status in (None, 404)


def test_tasks_methods_need_the_declaration(wire: Wire) -> None:
    handle = start_task(wire, "quick_task", {"text": "d"})
    code, status = error_of(wire, "tasks/get", {"taskId": handle["taskId"]}, declare=False)
    assert code == -32021 and status in (None, 400)


def test_http_mcp_name_must_match_the_task_id(
    http_peer: HttpPeer, pool: httpcore.ConnectionPool
) -> None:
    wire = HttpWire(pool, http_peer.url)
    task_id = start_task(wire, "quick_task", {"text": "n"})["taskId"]
    answer, response = wire.post("tasks/get", {"taskId": task_id}, name="another-task")
    assert response.status == 400 and answer["error"]["code"] == -32020, answer
    assert header(response, "content-type") == "application/json"
    encoded = "=?base64?" + base64.b64encode(task_id.encode()).decode() + "?="
    answer, response = wire.post("tasks/get", {"taskId": task_id}, name=encoded)
    assert response.status == 200 and answer["result"]["taskId"] == task_id


def test_stdio_server_exits_on_stdin_eof_with_a_task_running() -> None:
    peer = RawPeer(fastmcp_tasks_argv())
    try:
        start_task(StdioWire(peer), "forever_task", {})
        peer.close_stdin()
        assert peer.read_line() is None
        assert peer.wait() == 0
    finally:
        stop_stdio(peer)


def test_die_task_ends_the_stdio_server_mid_task() -> None:
    peer = RawPeer(fastmcp_tasks_argv())
    try:
        wire = StdioWire(peer)
        handle = start_task(wire, "die_task", {"delay_ms": 200})
        assert handle["status"] == "working"
        # The process exits delay_ms after the task started: stdout ends, with nothing more.
        assert peer.read_line() is None
        assert peer.wait() == 3
    finally:
        stop_stdio(peer)


def test_die_task_ends_the_http_server_mid_task(pool: httpcore.ConnectionPool) -> None:
    require_tasks_venv()
    with start_fastmcp_tasks_http() as peer:
        handle = start_task(HttpWire(pool, peer.url), "die_task", {"delay_ms": 200})
        assert handle["status"] == "working"
        assert peer.proc.wait(timeout=DEADLINE) == 3
