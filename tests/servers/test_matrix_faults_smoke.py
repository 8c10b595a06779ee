"""The fault kinds the fault matrix (tests/drivers/test_fault_matrix.py) added to the test servers
do what their docstrings say: raw pipes and raw httpcore requests, no client code involved."""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpcore
import pytest

from tests.conftest import fault_server_argv
from tests.servers.http_fault_server import HttpFaultServer, HttpSseFaultServer
from tests.servers.test_http_peers_smoke import (
    ACCEPT,
    DEADLINE,
    JSON_BODY,
    TIMEOUTS,
    RawMcp,
    SseListener,
    header,
    messages_of,
    text_of,
)
from tests.servers.test_servers_smoke import RawPeer

# --- stdio: fault_server.py's unlisted tools ---


@pytest.fixture
def peer() -> Iterator[RawPeer]:
    raw = RawPeer(fault_server_argv())
    raw.initialize()
    yield raw
    if raw.proc.poll() is None:
        raw.proc.kill()
    raw.proc.wait(timeout=DEADLINE)
    for pipe in (raw.proc.stdin, raw.proc.stdout, raw.proc.stderr):
        if pipe is not None:
            pipe.close()


def call_raw(peer: RawPeer, name: str, arguments: dict[str, Any]) -> int:
    peer.next_id += 1
    params = {"name": name, "arguments": arguments}
    peer.send({"jsonrpc": "2.0", "id": peer.next_id, "method": "tools/call", "params": params})
    return peer.next_id


def test_stdio_garbage_lines_then_the_answer(peer: RawPeer) -> None:
    request_id = call_raw(peer, "garbage", {"lines": 3})
    lines = [peer.read_line() for _ in range(4)]
    assert all(line is not None for line in lines)
    for line in lines[:3]:
        with pytest.raises(ValueError):
            json.loads(line or b"")
    assert json.loads(lines[3] or b"") == {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"content": [{"type": "text", "text": "ok"}]},
    }
    assert b"\xff" in b"".join(line or b"" for line in lines[:3])  # one is not UTF-8 either


def test_stdio_deep_nesting_and_invalid_utf8(peer: RawPeer) -> None:
    request_id = call_raw(peer, "deep_nesting", {"depth": 5000})
    line = peer.read_line() or b""
    assert line.startswith(b'{"jsonrpc":"2.0","id":%d,"result":{' % request_id)
    assert b"[" * 5000 + b"]" * 5000 in line
    with pytest.raises(RecursionError):
        json.loads(line)
    request_id = call_raw(peer, "invalid_utf8", {})
    line = peer.read_line() or b""
    assert line.startswith(b'{"jsonrpc":"2.0","id":%d,"result":' % request_id)
    with pytest.raises(UnicodeDecodeError):
        line.decode("utf-8")
    assert json.loads(line.decode("latin-1"))["id"] == request_id  # well-formed otherwise


def test_stdio_exit_later(peer: RawPeer) -> None:
    call_raw(peer, "exit_later", {"delay": 0.05, "code": 5, "stderr": "bye\n"})
    assert peer.read_line() is None  # stdout closed: it exited without answering
    assert peer.wait() == 5
    assert b"bye" in peer.stderr


def test_stdio_unlisted_tools_stay_unlisted(peer: RawPeer) -> None:
    names = peer.list_tool_names()
    assert not {"garbage", "deep_nesting", "invalid_utf8", "exit_later", "tasks_seen"} & set(names)
    assert not {"task_forever", "task_exit"} & set(names)  # without --tasks


# --- stdio: fault_server.py --tasks (and --modern) ---

TASKS = "io.modelcontextprotocol/tasks"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
DECLARED_META = {
    **MODERN_META,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
}


@contextlib.contextmanager
def raw_peer(*flags: str) -> Iterator[RawPeer]:
    raw = RawPeer(fault_server_argv(*flags))
    try:
        yield raw
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
        raw.proc.wait(timeout=DEADLINE)
        for pipe in (raw.proc.stdin, raw.proc.stdout, raw.proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def tasks_peer() -> Iterator[RawPeer]:
    with raw_peer("--tasks") as peer:
        yield peer


@pytest.fixture
def modern_tasks_peer() -> Iterator[RawPeer]:
    with raw_peer("--tasks", "--modern") as peer:
        yield peer


def test_stdio_tasks_2025_11_25(tasks_peer: RawPeer) -> None:
    peer = tasks_peer
    capabilities = peer.initialize()["result"]["capabilities"]
    assert capabilities["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert peer.list_tool_names()[-2:] == ["task_forever", "task_exit"]
    last_page, _ = peer.request("tools/list", {"cursor": "p6"})
    assert [t["execution"] for t in last_page["result"]["tools"]] == [
        {"taskSupport": "required"}
    ] * 2
    refused, _ = peer.request("tools/call", {"name": "task_forever", "arguments": {}})
    assert refused["error"]["code"] == -32601  # a required task not asked for
    created = peer.call("task_forever", {"pollMs": 250}, task={})["task"]
    created_by = peer.next_id
    assert created["taskId"] == "task-1" and created["status"] == "working"
    assert (created["pollInterval"], created["ttl"], created["statusMessage"]) == (
        250,
        60000,
        "at work",
    )
    assert {"createdAt", "lastUpdatedAt"} <= set(created)
    got, _ = peer.request("tasks/get", {"taskId": "task-1"})
    assert got["result"] == created
    listed, _ = peer.request("tasks/list", {})
    assert listed["result"] == {"tasks": [created]}
    cancelled, _ = peer.request("tasks/cancel", {"taskId": "task-1"})
    assert cancelled["result"]["status"] == "cancelled"
    for method in ("tasks/cancel", "tasks/result"):  # the task has ended
        again, _ = peer.request(method, {"taskId": "task-1"})
        assert again["error"]["code"] == -32602
    unknown, _ = peer.request("tasks/get", {"taskId": "nope"})
    assert unknown["error"]["code"] == -32602
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
    seen = json.loads(text_of(peer.call("tasks_seen")))
    assert seen == {
        "created": ["task-1"],
        "created_by": [created_by],
        "cancelled": ["task-1", "task-1"],
        "notified": [7],
    }


def test_stdio_task_exit_exits_at_the_first_poll(tasks_peer: RawPeer) -> None:
    peer = tasks_peer
    peer.initialize()
    arguments = {"code": 4, "stderr": "bye\n"}
    task = peer.call("task_exit", arguments, task={})["task"]
    assert task["status"] == "working"
    peer.send(
        {"jsonrpc": "2.0", "id": 99, "method": "tasks/get", "params": {"taskId": task["taskId"]}}
    )
    assert peer.read_line() is None  # stdout closed: it exited without answering
    assert peer.wait() == 4
    assert b"bye" in peer.stderr


def test_stdio_tasks_2026_07_28(modern_tasks_peer: RawPeer) -> None:
    peer = modern_tasks_peer
    discover, _ = peer.request("server/discover", {"_meta": MODERN_META})
    assert discover["result"]["supportedVersions"] == ["2026-07-28"]
    assert discover["result"]["capabilities"]["extensions"] == {TASKS: {}}
    assert discover["result"]["resultType"] == "complete"
    params = {"name": "task_forever", "arguments": {}, "_meta": MODERN_META}
    refused, _ = peer.request("tools/call", params)
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    created, _ = peer.request("tools/call", {**params, "_meta": DECLARED_META})
    task = created["result"]
    assert (task["resultType"], task["taskId"], task["status"]) == ("task", "task-1", "working")
    assert (task["pollIntervalMs"], task["ttlMs"]) == (100, 60000)
    got, _ = peer.request("tasks/get", {"taskId": "task-1", "_meta": DECLARED_META})
    assert got["result"] == {**task, "resultType": "complete"}
    ack, _ = peer.request("tasks/cancel", {"taskId": "task-1", "_meta": DECLARED_META})
    assert ack["result"] == {"resultType": "complete"}
    got, _ = peer.request("tasks/get", {"taskId": "task-1", "_meta": DECLARED_META})
    assert got["result"]["status"] == "cancelled"
    for method in ("tasks/list", "tasks/result"):  # not in the extension
        missing, _ = peer.request(method, {"taskId": "task-1", "_meta": DECLARED_META})
        assert missing["error"]["code"] == -32601
    echoed = peer.call("echo", {"text": "hi"}, _meta=MODERN_META)
    assert echoed == {"content": [{"type": "text", "text": "hi"}], "resultType": "complete"}


def test_stdio_modern_init_error_refuses_both_handshakes() -> None:
    with raw_peer("--modern", "--init-error") as peer:
        for method in ("server/discover", "initialize"):
            refused, _ = peer.request(method, {"_meta": MODERN_META})
            assert refused["error"] == {"code": -32603, "message": "boom"}


# --- Streamable HTTP: HttpFaultServer's matrix kinds ---


@pytest.fixture
def pool() -> Iterator[httpcore.ConnectionPool]:
    with httpcore.ConnectionPool() as connection_pool:
        yield connection_pool


@pytest.fixture
def mcp(http_fault_server: HttpFaultServer, pool: httpcore.ConnectionPool) -> RawMcp:
    raw = RawMcp(pool, http_fault_server.url)
    raw.initialize()
    return raw


def echo(mcp: RawMcp, text: str = "x") -> dict[str, Any]:
    return mcp.message("tools/call", {"name": "echo", "arguments": {"text": text}})


@pytest.mark.parametrize("sse", [False, True])
def test_http_bodies_that_are_not_answers(
    http_fault_server: HttpFaultServer, mcp: RawMcp, sse: bool
) -> None:
    server = http_fault_server
    for kind in ("garbage", "deep_nesting", "invalid_utf8", "rpc_error"):
        server.set_fault(kind, method="tools/call", sse=sse, depth=3000)
        call = echo(mcp)
        response = mcp.send(call)
        assert response.status == 200
        content_type = header(response, "content-type")
        body = response.content
        if sse:
            assert content_type == "text/event-stream"
            assert body.startswith(b"event: message\ndata: ") and body.endswith(b"\n\n")
            body = body.removeprefix(b"event: message\ndata: ").removesuffix(b"\n\n")
        else:
            assert content_type == "application/json"
        if kind == "garbage":
            with pytest.raises(ValueError):
                json.loads(body)
        elif kind == "deep_nesting":
            assert b"[" * 3000 in body and body.startswith(b'{"jsonrpc":"2.0","id":')
        elif kind == "invalid_utf8":
            with pytest.raises(UnicodeDecodeError):
                body.decode("utf-8")
            assert json.loads(body.decode("latin-1"))["id"] == call["id"]
        else:
            assert json.loads(body) == {
                "jsonrpc": "2.0",
                "id": call["id"],
                "error": {"code": -32603, "message": "boom"},
            }
    assert [r.fault for r in server.requests][-4:] == [
        "garbage",
        "deep_nesting",
        "invalid_utf8",
        "rpc_error",
    ]
    assert text_of(mcp.call("echo", {"text": "after"})) == "after"


def test_http_drop_unresumable_reset_and_drop_stream(
    http_fault_server: HttpFaultServer, mcp: RawMcp
) -> None:
    server = http_fault_server
    server.set_fault("drop_sse_unresumable", method="tools/call")
    call = echo(mcp)
    listener = SseListener("POST", server.url, mcp.headers(call), json.dumps(call))
    assert listener.status == 200
    event = listener.next_event()
    assert event is not None and event["id"] is None  # nothing to resume from
    with pytest.raises(httpcore.RemoteProtocolError):
        listener.next_event()
    for kind in ("reset", "drop_stream"):
        server.set_fault(kind, method="tools/call")
        with pytest.raises((httpcore.ReadError, httpcore.RemoteProtocolError)):
            mcp.send(echo(mcp))
    assert text_of(mcp.call("echo", {"text": "after"})) == "after"


def test_http_no_answer_and_delay(http_fault_server: HttpFaultServer, mcp: RawMcp) -> None:
    server = http_fault_server
    server.set_fault("no_answer", method="tools/call")
    accepted = mcp.send(echo(mcp))
    assert (accepted.status, accepted.content) == (202, b"")
    server.set_fault("delay", method="tools/call", seconds=0.05)
    assert text_of(mcp.call("echo", {"text": "late"})) == "late"
    assert server.requests[-1].fault == "delay"


def test_http_slow_loris_head_never_ends(http_fault_server: HttpFaultServer, mcp: RawMcp) -> None:
    server = http_fault_server
    server.set_fault("slow_loris", method="tools/call", interval=0.01)
    call = json.dumps(echo(mcp)).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=DEADLINE) as sock:
        request = (
            f"POST {server.path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {mcp.session}\r\n"
            f"Content-Length: {len(call)}\r\n\r\n"
        ).encode()
        sock.sendall(request + call)
        received = b""
        while len(received) < 40:  # a byte every 10 ms
            chunk = sock.recv(100)
            assert chunk, "the slow loris hung up"
            received += chunk
    assert received.startswith(b"HTTP/1.1 200 OK\r\nx-loris: aaaa")
    assert b"\r\n\r\n" not in received


def test_http_slow_loris_body_is_endless_comments(
    http_fault_server: HttpFaultServer, mcp: RawMcp
) -> None:
    server = http_fault_server
    server.set_fault("slow_loris", method="tools/call", interval=0.005, where="body")
    call = echo(mcp)
    listener = SseListener("POST", server.url, mcp.headers(call), json.dumps(call))
    assert listener.status == 200
    assert listener.response_headers["content-type"] == "text/event-stream"
    with pytest.raises(queue.Empty):  # comments only: never an event
        listener.events.get(timeout=0.3)


# --- Streamable HTTP: HttpFaultServer(tasks=True) ---


def task_request(mcp: RawMcp, method: str, task_id: str, name: str | None = None) -> Any:
    """A tasks/* request (2026-07-28: declaring the extension, and Mcp-Name `name`, by default
    the task id); its JSON-RPC answer and HTTP status."""
    params: dict[str, Any] = {"taskId": task_id}
    if mcp.modern:
        params["_meta"] = DECLARED_META
    message = mcp.message(method, params)
    extra = [("Mcp-Name", name or task_id)] if mcp.modern else []
    response = mcp.send(message, extra)
    (answer,) = messages_of(response)
    return answer, response.status


def test_http_tasks_2025_11_25(
    http_fault_server_factory: Callable[..., HttpFaultServer], pool: httpcore.ConnectionPool
) -> None:
    server = http_fault_server_factory(tasks=True)
    mcp = RawMcp(pool, server.url)
    capabilities = mcp.initialize().content
    assert b'"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}' in capabilities
    tools = mcp.result("tools/list")["tools"]
    assert [t["name"] for t in tools] == ["echo", "task_forever"]
    assert tools[1]["execution"] == {"taskSupport": "required"}
    refused, _ = mcp.request("tools/call", {"name": "task_forever", "arguments": {}})
    assert refused["error"]["code"] == -32601
    task = mcp.result("tools/call", {"name": "task_forever", "arguments": {}, "task": {}})["task"]
    assert (task["taskId"], task["status"], task["pollInterval"]) == ("task-1", "working", 100)
    assert server.tasks == {"task-1": task}
    got, _ = task_request(mcp, "tasks/get", "task-1")
    assert got["result"] == task
    assert mcp.result("tasks/list") == {"tasks": [task]}
    cancelled, _ = task_request(mcp, "tasks/cancel", "task-1")
    assert cancelled["result"]["status"] == "cancelled"
    for method in ("tasks/cancel", "tasks/result", "tasks/get"):
        answer, status = task_request(mcp, method, "task-1" if method != "tasks/get" else "x")
        assert (answer["error"]["code"], status) == (-32602, 200)
    assert server.cancelled_tasks == ["task-1", "task-1"]
    assert server.tasks["task-1"]["status"] == "cancelled"


def test_http_tasks_2026_07_28(
    http_fault_server_factory: Callable[..., HttpFaultServer], pool: httpcore.ConnectionPool
) -> None:
    server = http_fault_server_factory(era="modern", tasks=True)
    mcp = RawMcp(pool, server.url)
    mcp.use_modern()
    discover = mcp.result("server/discover")
    assert discover["capabilities"]["extensions"] == {TASKS: {}}
    assert [t["name"] for t in mcp.result("tools/list")["tools"]] == ["echo", "task_forever"]
    call = {"name": "task_forever", "arguments": {"pollMs": 50}}
    refused, response = mcp.request("tools/call", call)
    assert (response.status, refused["error"]["code"]) == (400, -32021)
    assert refused["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
    task = mcp.result("tools/call", {**call, "_meta": DECLARED_META})
    assert (task["resultType"], task["taskId"], task["pollIntervalMs"]) == ("task", "task-1", 50)
    got, status = task_request(mcp, "tasks/get", "task-1")
    assert status == 200 and got["result"]["status"] == "working"
    assert got["result"]["resultType"] == "complete"
    wrong, status = task_request(mcp, "tasks/get", "task-1", name="task-2")
    assert (status, wrong["error"]["code"]) == (400, -32020)
    ack, status = task_request(mcp, "tasks/cancel", "task-1")
    assert status == 200 and ack["result"]["resultType"] == "complete"
    assert "status" not in ack["result"]  # the extension acknowledges with nothing
    got, _ = task_request(mcp, "tasks/get", "task-1")
    assert got["result"]["status"] == "cancelled"
    unknown, status = task_request(mcp, "tasks/get", "x")
    assert (status, unknown["error"]["code"]) == (400, -32602)
    missing, status = task_request(mcp, "tasks/list", "task-1")
    assert (status, missing["error"]["code"]) == (404, -32601)
    assert server.cancelled_tasks == ["task-1"]
    cancel = next(r for r in server.requests if r.rpc_method == "tasks/cancel")
    assert cancel.header("mcp-name") == "task-1"


def test_http_without_tasks_runs_none(http_fault_server: HttpFaultServer, mcp: RawMcp) -> None:
    assert [t["name"] for t in mcp.result("tools/list")["tools"]] == ["echo"]
    refused, _ = mcp.request("tools/call", {"name": "task_forever", "arguments": {}, "task": {}})
    assert refused["error"]["code"] == -32602
    unknown, _ = mcp.request("tasks/get", {"taskId": "task-1"})
    assert unknown["error"]["code"] == -32601
    assert http_fault_server.tasks == {}


# --- HTTP+SSE: HttpSseFaultServer ---


class SseSession:
    """The GET stream of an HttpSseFaultServer session, read by a thread into a queue."""

    def __init__(self, server: HttpSseFaultServer) -> None:
        self.server = server
        self.listener = SseListener("GET", server.url, [("Accept", "text/event-stream")])
        assert self.listener.status == 200
        endpoint = self.listener.next_event()
        assert endpoint is not None and endpoint["event"] == "endpoint"
        assert endpoint["data"].startswith(server.path + "?session=")
        self.endpoint = server.origin + endpoint["data"]
        self.next_id = 0

    def post(self, pool: httpcore.ConnectionPool, method: str, params: Any = None) -> int:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        response = pool.request(
            "POST",
            self.endpoint,
            headers=[ACCEPT, JSON_BODY],
            content=json.dumps(message).encode(),
            extensions={"timeout": TIMEOUTS},
        )
        assert (response.status, response.content) == (202, b"Accepted")
        return self.next_id

    def next_raw(self) -> dict[str, Any] | None:
        return self.listener.next_event()


@pytest.fixture
def sse_server() -> Iterator[HttpSseFaultServer]:
    with HttpSseFaultServer() as server:
        yield server


def test_sse_transport_answers_on_the_stream(
    sse_server: HttpSseFaultServer, pool: httpcore.ConnectionPool
) -> None:
    bare = pool.request(
        "POST",
        sse_server.url,
        headers=[ACCEPT, JSON_BODY],
        content=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        extensions={"timeout": TIMEOUTS},
    )
    assert bare.status == 405  # Streamable HTTP is not spoken here: a client falls back
    session = SseSession(sse_server)
    request_id = session.post(pool, "initialize", {"protocolVersion": "2024-11-05"})
    answer = session.next_raw()
    assert answer is not None and answer["event"] == "message"
    assert json.loads(answer["data"])["result"]["protocolVersion"] == "2024-11-05"
    assert json.loads(answer["data"])["id"] == request_id
    request_id = session.post(pool, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    answer = session.next_raw()
    assert answer is not None
    assert json.loads(answer["data"]) == {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"content": [{"type": "text", "text": "hi"}], "isError": False},
    }
    assert len(sse_server.sessions) == 1


def test_sse_transport_stream_faults(
    sse_server: HttpSseFaultServer, pool: httpcore.ConnectionPool
) -> None:
    session = SseSession(sse_server)
    session.post(pool, "initialize", {"protocolVersion": "2024-11-05"})
    assert session.next_raw() is not None
    echo_params = {"name": "echo", "arguments": {"text": "x"}}
    sse_server.set_fault("no_answer", method="tools/call")
    session.post(pool, "tools/call", echo_params)
    sse_server.set_fault("garbage", method="tools/call")
    session.post(pool, "tools/call", echo_params)
    garbage = session.next_raw()  # the first event after no_answer's silence
    assert garbage is not None and garbage["data"] == "%%% this is not JSON {{{"
    sse_server.set_fault("huge", method="tools/call", mib=1)
    request_id = session.post(pool, "tools/call", echo_params)
    huge = session.next_raw()
    assert huge is not None and len(huge["data"]) > 1024 * 1024
    assert json.loads(huge["data"])["id"] == request_id
    sse_server.set_fault("rpc_error", method="tools/call", code=-32001, message="nope")
    request_id = session.post(pool, "tools/call", echo_params)
    error = session.next_raw()
    assert error is not None
    assert json.loads(error["data"])["error"] == {"code": -32001, "message": "nope"}
    sse_server.set_fault("drop_stream", method="tools/call")
    session.post(pool, "tools/call", echo_params)
    with pytest.raises(httpcore.RemoteProtocolError):  # the stream is cut, not ended
        session.next_raw()


def test_sse_transport_post_faults_and_sessions(
    sse_server: HttpSseFaultServer, pool: httpcore.ConnectionPool
) -> None:
    session = SseSession(sse_server)
    sse_server.set_fault("status", method="initialize", status=503)
    refused = pool.request(
        "POST",
        session.endpoint,
        headers=[ACCEPT, JSON_BODY],
        content=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        extensions={"timeout": TIMEOUTS},
    )
    assert refused.status == 503
    unknown = pool.request(
        "POST",
        sse_server.url + "?session=nope",
        headers=[ACCEPT, JSON_BODY],
        content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        extensions={"timeout": TIMEOUTS},
    )
    assert unknown.status == 404


def test_sse_server_stops_with_a_stream_open(pool: httpcore.ConnectionPool) -> None:
    server = HttpSseFaultServer().start()
    session = SseSession(server)
    done = threading.Event()

    def stop() -> None:
        server.stop()
        done.set()

    threading.Thread(target=stop).start()
    assert done.wait(DEADLINE)
    with pytest.raises(httpcore.RemoteProtocolError):
        while session.next_raw() is not None:
            pass
