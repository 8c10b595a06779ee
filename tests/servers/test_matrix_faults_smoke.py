"""The fault kinds the fault matrix (tests/drivers/test_fault_matrix.py) added to the test servers
do what their docstrings say: raw pipes and raw httpcore requests, no client code involved."""

from __future__ import annotations

import json
import queue
import socket
import threading
from collections.abc import Iterator
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
    assert not {"garbage", "deep_nesting", "invalid_utf8", "exit_later"} & set(names)


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
