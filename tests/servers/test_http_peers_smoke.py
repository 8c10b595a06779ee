"""The HTTP peers themselves work: raw httpcore requests, no client code involved.

A transport test that fails because its peer is broken would send someone hunting in the wrong
place; these tests catch a broken peer on its own. Every read has a timeout, so a silent peer
fails a test instead of hanging it.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import httpcore
import pytest

from tests.servers.http_fault_server import HttpFaultServer
from tests.servers.http_peers import HttpPeer, start_everything_http, start_fault_server_process

DEADLINE = 30.0
TIMEOUTS = {"connect": DEADLINE, "read": DEADLINE, "write": DEADLINE, "pool": DEADLINE}
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
ACCEPT = ("Accept", "application/json, text/event-stream")
JSON_BODY = ("Content-Type", "application/json")

Headers = list[tuple[str, str]]


# --- raw HTTP helpers ---


class SseParser:
    """Incremental SSE decoding, enough for these tests (LF or CRLF line ends)."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self.buffer = (self.buffer + chunk).replace(b"\r\n", b"\n")
        events = []
        while b"\n\n" in self.buffer:
            block, self.buffer = self.buffer.split(b"\n\n", 1)
            event: dict[str, Any] = {"id": None, "event": None, "retry": None, "data": []}
            for line in block.decode().split("\n"):
                if not line or line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "data":
                    event["data"].append(value)
                elif name in ("id", "event"):
                    event[name] = value
                elif name == "retry":
                    event["retry"] = int(value)
            if event != {"id": None, "event": None, "retry": None, "data": []}:  # not blank
                event["data"] = "\n".join(event["data"])
                events.append(event)
        return events


def sse_events(body: bytes) -> list[dict[str, Any]]:
    return SseParser().feed(body + b"\n\n")


def header(response: httpcore.Response, name: str) -> str | None:
    for key, value in response.headers:
        if key.decode().lower() == name.lower():
            return value.decode()
    return None


def messages_of(response: httpcore.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages in a JSON or SSE answer body."""
    content_type = header(response, "content-type") or ""
    if content_type.startswith("application/json"):
        return [json.loads(response.content)]
    assert content_type.startswith("text/event-stream"), (response.status, response.content)
    return [json.loads(event["data"]) for event in sse_events(response.content) if event["data"]]


class RawMcp:
    """Legacy or modern Streamable HTTP spoken by hand."""

    def __init__(self, pool: httpcore.ConnectionPool, url: str) -> None:
        self.pool = pool
        self.url = url
        self.session: str | None = None
        self.version: str | None = None
        self.modern = False
        self.next_id = 0

    def headers(self, message: dict[str, Any]) -> Headers:
        headers = [ACCEPT, JSON_BODY]
        if self.session is not None:
            headers.append(("Mcp-Session-Id", self.session))
        if self.version is not None:
            headers.append(("MCP-Protocol-Version", self.version))
        if self.modern and "method" in message:
            headers.append(("Mcp-Method", message["method"]))
            name = (message.get("params") or {}).get("name")
            if name is not None:
                headers.append(("Mcp-Name", name))
        return headers

    def send(self, message: dict[str, Any], extra: Headers | None = None) -> httpcore.Response:
        return self.http("POST", self.headers(message) + (extra or []), json.dumps(message))

    def http(
        self, method: str, headers: Headers, body: str = "", url: str | None = None
    ) -> httpcore.Response:
        return self.pool.request(
            method,
            url or self.url,
            headers=headers,
            content=body.encode(),
            extensions={"timeout": TIMEOUTS},
        )

    def message(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        params = dict(params or {})
        if self.modern:
            version = {"io.modelcontextprotocol/protocolVersion": self.version}
            params["_meta"] = {**MODERN_META, **version, **params.get("_meta", {})}
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], httpcore.Response]:
        """POST a request; its JSON-RPC response and the HTTP response."""
        message = self.message(method, params)
        response = self.send(message)
        answers = [m for m in messages_of(response) if m.get("id") == message["id"]]
        assert len(answers) == 1 and "method" not in answers[0], (response.status, answers)
        return answers[0], response

    def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        answer, response = self.request(method, params)
        assert response.status == 200 and "result" in answer, (response.status, answer)
        return answer["result"]

    def initialize(self, version: str = LEGACY) -> httpcore.Response:
        answer, response = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "smoke", "version": "0"},
            },
        )
        assert response.status == 200, (response.status, response.content)
        self.session = header(response, "mcp-session-id")
        self.version = answer["result"]["protocolVersion"]
        initialized = self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert initialized.status == 202, initialized.status
        return response

    def use_modern(self) -> None:
        self.modern = True
        self.version = MODERN

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.result("tools/call", {"name": name, "arguments": arguments})

    def tool_names(self) -> set[str]:
        return {tool["name"] for tool in self.result("tools/list")["tools"]}


def text_of(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


class SseListener:
    """One streamed request whose SSE events a thread puts on a queue: the test can POST other
    requests while this answer is still open. The stream ends when the server ends it (or at
    the peer's teardown); reads wait at most DEADLINE."""

    def __init__(self, method: str, url: str, headers: Headers, body: str = "") -> None:
        self.events: queue.Queue[dict[str, Any] | BaseException | None] = queue.Queue()
        self.started = threading.Event()
        self.status = 0
        self.response_headers: dict[str, str] = {}
        args = (method, url, headers, body.encode())
        threading.Thread(target=self._run, args=args, daemon=True).start()
        assert self.started.wait(DEADLINE), "no response head"

    def _run(self, method: str, url: str, headers: Headers, body: bytes) -> None:
        parser = SseParser()
        try:
            with (
                httpcore.ConnectionPool() as pool,
                pool.stream(
                    method, url, headers=headers, content=body, extensions={"timeout": TIMEOUTS}
                ) as response,
            ):
                self.status = response.status
                self.response_headers = {
                    k.decode().lower(): v.decode() for k, v in response.headers
                }
                self.started.set()
                for chunk in response.iter_stream():
                    for event in parser.feed(chunk):
                        self.events.put(event)
            self.events.put(None)
        except Exception as error:  # handed to the test thread, which raises it
            self.started.set()
            self.events.put(error)

    def next_event(self) -> dict[str, Any] | None:
        """The next event; None when the stream ended cleanly."""
        try:
            item = self.events.get(timeout=DEADLINE)
        except queue.Empty:
            raise AssertionError(f"no SSE event in {DEADLINE} s") from None
        if isinstance(item, BaseException):
            raise item
        return item

    def next_message(self) -> dict[str, Any]:
        """The next event that carries data, as JSON."""
        while (event := self.next_event()) is not None:
            if event["data"]:
                message: dict[str, Any] = json.loads(event["data"])
                return message
        raise AssertionError("the SSE stream ended")


@pytest.fixture
def pool() -> Iterator[httpcore.ConnectionPool]:
    with httpcore.ConnectionPool() as connection_pool:
        yield connection_pool


PyHttpServer = Callable[[str], HttpPeer]
FaultFactory = Callable[..., HttpFaultServer]


# --- the official-SDK HTTP server ---


@pytest.mark.parametrize(
    ("mode", "has_session", "content_type"),
    [
        ("stateful", True, "text/event-stream"),
        ("stateless", False, "text/event-stream"),
        ("json", True, "application/json"),
    ],
)
def test_py_http_server_legacy_modes(
    py_http_server: PyHttpServer,
    pool: httpcore.ConnectionPool,
    mode: str,
    has_session: bool,
    content_type: str,
) -> None:
    mcp = RawMcp(pool, py_http_server(mode).url)
    init = mcp.initialize()
    assert header(init, "content-type") == content_type
    assert (mcp.session is not None) is has_session
    assert mcp.version == LEGACY
    assert mcp.tool_names() == {
        *("echo", "add", "slow", "fail", "greet", "ask", "bump", "log", "change_lists", "whoami"),
        *("connect_account", "needs_connection"),
    }
    assert text_of(mcp.call("echo", {"text": "hi"})) == "hi"
    assert mcp.call("add", {"a": 2, "b": 3})["structuredContent"] == {"result": 5}
    assert mcp.call("fail", {})["isError"] is True


def test_py_http_server_progress_and_session_delete(
    py_http_server: PyHttpServer, pool: httpcore.ConnectionPool
) -> None:
    mcp = RawMcp(pool, py_http_server("stateful").url)
    mcp.initialize()
    message = mcp.message(
        "tools/call",
        {"name": "slow", "arguments": {"seconds": 0.05, "steps": 2}, "_meta": {"progressToken": 7}},
    )
    received = messages_of(mcp.send(message))
    assert [m["params"]["progress"] for m in received if "method" in m] == [1, 2]
    assert text_of(received[-1]["result"]) == "done"
    assert mcp.http("DELETE", mcp.headers({})).status == 200
    assert mcp.send(mcp.message("tools/list")).status == 404


def test_py_http_server_elicitation_with_defaults(
    py_http_server: PyHttpServer, pool: httpcore.ConnectionPool
) -> None:
    mcp = RawMcp(pool, py_http_server("stateful").url)
    mcp.initialize()
    call = mcp.message("tools/call", {"name": "ask", "arguments": {"message": "Prefs?"}})
    listener = SseListener("POST", mcp.url, mcp.headers(call), json.dumps(call))
    elicit = listener.next_message()
    assert elicit["method"] == "elicitation/create"
    assert elicit["params"]["message"] == "Prefs?"
    properties = elicit["params"]["requestedSchema"]["properties"]
    defaults = {name: schema["default"] for name, schema in properties.items()}
    assert defaults == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
    assert properties["status"]["enum"] == ["active", "inactive", "pending"]
    answer = {
        "jsonrpc": "2.0",
        "id": elicit["id"],
        "result": {"action": "accept", "content": defaults},
    }
    assert mcp.send(answer).status == 202
    result = listener.next_message()
    assert result["id"] == call["id"]
    assert json.loads(text_of(result["result"])) == {"action": "accept", "content": defaults}


def test_py_http_server_modern_era(
    py_http_server: PyHttpServer, pool: httpcore.ConnectionPool
) -> None:
    mcp = RawMcp(pool, py_http_server("modern").url)
    mcp.use_modern()
    discover, response = mcp.request("server/discover")
    assert response.status == 200 and header(response, "mcp-session-id") is None
    assert MODERN in discover["result"]["supportedVersions"]
    assert "echo" in mcp.tool_names()
    echoed = mcp.call("echo", {"text": "modern"})
    assert text_of(echoed) == "modern" and echoed["resultType"] == "complete"
    mcp.version = "2099-01-01"
    refused, response = mcp.request("tools/list")
    assert response.status == 400
    assert refused["error"]["code"] == -32022 and MODERN in refused["error"]["data"]["supported"]
    assert mcp.http("GET", [ACCEPT, ("MCP-Protocol-Version", MODERN)]).status == 405


def test_py_http_server_resumable_stream(
    py_http_server: PyHttpServer, pool: httpcore.ConnectionPool
) -> None:
    mcp = RawMcp(pool, py_http_server("resumable").url)
    mcp.initialize()
    call = mcp.message("tools/call", {"name": "reconnect", "arguments": {"delay": 0}})
    events = sse_events(mcp.send(call).content)  # the server closes this stream early
    assert events[0]["data"] == "" and events[0]["retry"] == 50
    assert not any(event["data"] for event in events)
    # The SDK keeps the resumed stream open after the replay: read it as a stream.
    headers = [*mcp.headers({}), ("Last-Event-ID", events[-1]["id"])]
    replay = SseListener("GET", mcp.url, headers)
    assert replay.status == 200
    answer = replay.next_message()
    assert answer["id"] == call["id"]
    assert text_of(answer["result"]) == "resumed"


def test_py_http_server_legacy_sse_transport(
    py_http_server: PyHttpServer, pool: httpcore.ConnectionPool
) -> None:
    peer = py_http_server("sse")
    assert peer.url.endswith("/sse")
    check_http_sse_transport(pool, peer.url, echo_text="hi")


# --- server-everything ---


@pytest.mark.slow
def test_everything_streamable_http(
    everything_http: Callable[..., HttpPeer], pool: httpcore.ConnectionPool
) -> None:
    peer = everything_http("streamableHttp")
    assert peer.url.endswith("/mcp")
    mcp = RawMcp(pool, peer.url)
    mcp.initialize()
    assert mcp.session is not None
    assert "echo" in mcp.tool_names()
    assert text_of(mcp.call("echo", {"message": "hi"})) == "Echo: hi"


@pytest.mark.slow
def test_everything_sse_and_teardown(
    node_bin: Callable[[str], str],
    process_group: Callable[[int], list[int]],
    pool: httpcore.ConnectionPool,
) -> None:
    with start_everything_http("sse", node_bin("mcp-server-everything")) as peer:
        check_http_sse_transport(pool, peer.url, echo_text="Echo: hi", argument="message")
        pid = peer.proc.pid
        assert process_group(pid) == [pid]
    assert peer.proc.returncode is not None
    assert process_group(pid) == []


def check_http_sse_transport(
    pool: httpcore.ConnectionPool, sse_url: str, echo_text: str, argument: str = "text"
) -> None:
    """2024-11-05 HTTP+SSE: GET the stream, POST to its `endpoint`, answers on the stream."""
    listener = SseListener("GET", sse_url, [("Accept", "text/event-stream")])
    assert listener.status == 200
    endpoint = listener.next_event()
    assert endpoint is not None and endpoint["event"] == "endpoint"
    post_url = urllib.parse.urljoin(sse_url, endpoint["data"])
    mcp = RawMcp(pool, post_url)
    init = mcp.message(
        "initialize",
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": "s", "version": "0"},
        },
    )
    headers = [JSON_BODY]
    assert 200 <= mcp.http("POST", headers, json.dumps(init)).status < 300
    assert listener.next_message()["result"]["protocolVersion"] == "2024-11-05"
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert 200 <= mcp.http("POST", headers, json.dumps(initialized)).status < 300
    call = mcp.message("tools/call", {"name": "echo", "arguments": {argument: "hi"}})
    assert 200 <= mcp.http("POST", headers, json.dumps(call)).status < 300
    answer = listener.next_message()
    while "method" in answer:  # e.g. a logging notification first
        answer = listener.next_message()
    assert answer["id"] == call["id"]
    assert text_of(answer["result"]) == echo_text


# --- the fault server: the fault-free protocol ---


def test_fault_server_legacy_session(
    http_fault_server: HttpFaultServer, pool: httpcore.ConnectionPool
) -> None:
    server = http_fault_server
    mcp = RawMcp(pool, server.url)
    init = mcp.initialize("2025-06-18")
    assert header(init, "content-type") == "application/json"
    assert mcp.version == "2025-06-18"
    assert mcp.session is not None and server.live_sessions == {mcp.session}
    assert mcp.tool_names() == {"echo"}
    assert text_of(mcp.call("echo", {"text": "hi"})) == "hi"
    assert mcp.result("ping") == {}
    # What was received is recorded, headers and all.
    posts = [r for r in server.requests if r.method == "POST"]
    assert [r.rpc_method for r in posts] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "ping",
    ]
    assert posts[0].header("mcp-session-id") is None
    assert all(r.header("mcp-session-id") == mcp.session for r in posts[1:])
    assert all(r.header("MCP-Protocol-Version") == "2025-06-18" for r in posts[1:])
    assert all(r.header("accept") == "application/json, text/event-stream" for r in posts)
    # No GET stream; a request without a session is refused; DELETE ends the session.
    assert mcp.http("GET", [*mcp.headers({}), ("Accept", "text/event-stream")]).status == 405
    assert mcp.http("POST", [ACCEPT, JSON_BODY], json.dumps(mcp.message("ping"))).status == 400
    assert mcp.http("DELETE", mcp.headers({})).status == 200
    assert server.wait_for_request(lambda r: r.method == "DELETE").header("mcp-session-id")
    assert server.live_sessions == set()
    assert mcp.send(mcp.message("ping")).status == 404


def test_fault_server_sse_answers_and_get_stream(
    http_fault_server_factory: FaultFactory, pool: httpcore.ConnectionPool
) -> None:
    server = http_fault_server_factory(sse=True, get_stream=True, retry_ms=1000)
    mcp = RawMcp(pool, server.url)
    assert header(mcp.initialize(), "content-type") == "text/event-stream"
    call = mcp.message("tools/call", {"name": "echo", "arguments": {"text": "sse"}})
    priming, answer = sse_events(mcp.send(call).content)
    assert priming["data"] == "" and priming["id"] and priming["retry"] == 1000
    assert answer["id"] and json.loads(answer["data"])["result"]["content"][0]["text"] == "sse"
    # The same answer again from just after the priming event.
    replay = mcp.http("GET", [*mcp.headers({}), ("Last-Event-ID", priming["id"])])
    assert [e["id"] for e in sse_events(replay.content)] == [answer["id"]]
    # The GET stream delivers what push() is given.
    listener = SseListener("GET", server.url, [*mcp.headers({}), ("Accept", "text/event-stream")])
    assert listener.status == 200
    assert listener.next_event() is not None  # priming
    assert server.open_get_streams == 1
    server.push({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    assert listener.next_message()["method"] == "notifications/tools/list_changed"


def test_fault_server_modern_era(
    http_fault_server_factory: FaultFactory, pool: httpcore.ConnectionPool
) -> None:
    server = http_fault_server_factory(era="modern")
    mcp = RawMcp(pool, server.url)
    mcp.use_modern()
    discover, response = mcp.request("server/discover")
    assert response.status == 200 and discover["result"]["supportedVersions"] == [MODERN]
    assert discover["result"]["resultType"] == "complete"
    assert text_of(mcp.call("echo", {"text": "m"})) == "m"
    # The modern header checks.
    call = mcp.message("tools/call", {"name": "echo", "arguments": {}})
    refused = mcp.send(call, [("Mcp-Name", "other")])  # a second, disagreeing Mcp-Name
    assert refused.status == 400 and json.loads(refused.content)["error"]["code"] == -32020
    # POST only; legacy handshake refused with the modern error naming the versions.
    assert mcp.http("GET", [ACCEPT, ("MCP-Protocol-Version", MODERN)]).status == 405
    legacy = RawMcp(pool, server.url)
    refused, response = legacy.request("initialize", {"protocolVersion": LEGACY})
    assert response.status == 400
    assert refused["error"]["code"] == -32022
    assert refused["error"]["data"] == {"supported": [MODERN], "requested": LEGACY}


def test_fault_server_legacy_answers_a_modern_probe_like_legacy_servers(
    http_fault_server: HttpFaultServer, pool: httpcore.ConnectionPool
) -> None:
    mcp = RawMcp(pool, http_fault_server.url)
    mcp.use_modern()
    response = mcp.send(mcp.message("server/discover"))
    assert response.status == 400 and json.loads(response.content)["error"]["code"] == -32000


def test_fault_server_dual_era(
    http_fault_server_factory: FaultFactory, pool: httpcore.ConnectionPool
) -> None:
    server = http_fault_server_factory(era="dual", sse=True)
    modern = RawMcp(pool, server.url)
    modern.use_modern()
    assert modern.result("server/discover")["supportedVersions"] == [MODERN]
    response = modern.send(
        modern.message("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    )
    assert [e["id"] for e in sse_events(response.content)] == [None]  # no ids: not resumable
    legacy = RawMcp(pool, server.url)
    legacy.initialize()
    assert text_of(legacy.call("echo", {"text": "legacy"})) == "legacy"


# --- the fault server: faults ---


def test_fault_expire_session(
    http_fault_server: HttpFaultServer, pool: httpcore.ConnectionPool
) -> None:
    server = http_fault_server
    mcp = RawMcp(pool, server.url)
    mcp.initialize()
    old = mcp.session
    server.set_fault("expire_session")
    expired = mcp.send(mcp.message("tools/list"))
    assert expired.status == 404
    assert server.requests[-1].fault == "expire_session"
    assert mcp.send(mcp.message("tools/list")).status == 404  # the old id stays dead
    mcp.session = mcp.version = None
    mcp.initialize()
    assert mcp.session != old
    assert mcp.tool_names() == {"echo"}
    assert server.sessions == [old, mcp.session]


@pytest.mark.parametrize(
    ("kind", "status", "header_name", "header_value"),
    [
        ("unauthorized", 401, "www-authenticate", 'Bearer resource_metadata="{origin}/.well-'),
        ("forbidden", 403, None, None),
        ("server_error", 500, None, None),
        ("rate_limited", 429, "retry-after", "1"),
    ],
)
def test_fault_status(
    http_fault_server: HttpFaultServer,
    pool: httpcore.ConnectionPool,
    kind: str,
    status: int,
    header_name: str | None,
    header_value: str | None,
) -> None:
    server = http_fault_server
    mcp = RawMcp(pool, server.url)
    server.set_fault(kind, method="initialize")
    response = mcp.send(mcp.message("initialize", {"protocolVersion": LEGACY}))
    assert response.status == status
    if header_name is not None:
        assert header_value is not None
        value = header(response, header_name)
        assert value is not None and value.startswith(header_value.format(origin=server.origin))
    mcp.initialize()  # the fault was used up
    server.set_fault(
        "status", status=503, times=2, method="tools/call", headers=[("Retry-After", "0")]
    )
    assert mcp.tool_names() == {"echo"}  # the method filter spares tools/list
    for _ in range(2):
        refused = mcp.send(mcp.message("tools/call", {"name": "echo", "arguments": {}}))
        assert (refused.status, header(refused, "retry-after")) == (503, "0")
    assert text_of(mcp.call("echo", {"text": "ok"})) == "ok"


def test_fault_drop_sse_then_resume(
    http_fault_server: HttpFaultServer, pool: httpcore.ConnectionPool
) -> None:
    server = http_fault_server
    mcp = RawMcp(pool, server.url)
    mcp.initialize()
    server.set_fault("drop_sse", method="tools/call")
    call = mcp.message("tools/call", {"name": "echo", "arguments": {"text": "back"}})
    listener = SseListener("POST", server.url, mcp.headers(call), json.dumps(call))
    assert listener.status == 200
    priming = listener.next_event()
    assert priming is not None and priming["retry"] == 50 and priming["data"] == ""
    with pytest.raises(httpcore.RemoteProtocolError):  # cut mid-body
        listener.next_event()
    replay = mcp.http("GET", [*mcp.headers({}), ("Last-Event-ID", priming["id"])])
    assert replay.status == 200
    assert text_of(messages_of(replay)[0]["result"]) == "back"
    get = server.wait_for_request(lambda r: r.method == "GET")
    assert get.header("last-event-id") == priming["id"]
    assert get.header("mcp-session-id") == mcp.session


def test_fault_drop_sse_cleanly(
    http_fault_server: HttpFaultServer, pool: httpcore.ConnectionPool
) -> None:
    mcp = RawMcp(pool, http_fault_server.url)
    mcp.initialize()
    http_fault_server.set_fault("drop_sse", abrupt=False, retry_ms=20)
    response = mcp.send(mcp.message("tools/list"))
    assert [(e["data"], e["retry"]) for e in sse_events(response.content)] == [("", 20)]


def test_fault_huge_body(http_fault_server: HttpFaultServer, pool: httpcore.ConnectionPool) -> None:
    server = http_fault_server
    mcp = RawMcp(pool, server.url)
    mcp.initialize()
    server.set_fault("huge", times=2)
    call = mcp.message("tools/call", {"name": "echo", "arguments": {}})
    response = mcp.send(call)
    assert int(header(response, "content-length") or 0) > 20 * 1024 * 1024
    assert len(text_of(json.loads(response.content)["result"])) == 20 * 1024 * 1024
    # A client that gives up early costs the server nothing.
    with pool.stream(
        "POST", server.url, headers=mcp.headers(call), content=json.dumps(call).encode()
    ) as streamed:
        assert next(streamed.iter_stream())
    assert mcp.tool_names() == {"echo"}


@pytest.mark.parametrize("kind", ["stall_headers", "stall_body"])
def test_fault_stalls_do_not_block_others(
    http_fault_server: HttpFaultServer, pool: httpcore.ConnectionPool, kind: str
) -> None:
    server = http_fault_server
    mcp = RawMcp(pool, server.url)
    mcp.initialize()
    server.set_fault(kind, method="tools/call")
    call = mcp.message("tools/call", {"name": "echo", "arguments": {}})
    stalled = (
        SseListener("POST", server.url, mcp.headers(call), json.dumps(call))
        if kind == "stall_body"
        else None
    )
    if stalled is None:
        start = time.monotonic()
        short = {**TIMEOUTS, "read": 0.2}
        with pytest.raises(httpcore.ReadTimeout):
            pool.request(
                "POST",
                server.url,
                headers=mcp.headers(call),
                content=json.dumps(call).encode(),
                extensions={"timeout": short},
            )
        assert time.monotonic() - start < 5
    else:
        assert stalled.status == 200
        assert stalled.next_event() is not None  # the priming event, then nothing
    assert mcp.tool_names() == {"echo"}  # other requests are served meanwhile
    assert server.wait_for_request(lambda r: r.fault == kind)


def test_fault_redirect_to_another_port(
    http_fault_server_factory: FaultFactory, pool: httpcore.ConnectionPool
) -> None:
    first, second = http_fault_server_factory(), http_fault_server_factory()
    first.set_fault("redirect", location=second.url, method="initialize")
    mcp = RawMcp(pool, first.url)
    response = mcp.send(mcp.message("initialize", {}), [("Authorization", "Bearer secret")])
    assert response.status == 307 and header(response, "location") == second.url
    assert first.requests[0].header("authorization") == "Bearer secret"
    assert second.requests == []


def test_fault_empty_200_disconnect_and_unsupported_version(
    http_fault_server: HttpFaultServer, pool: httpcore.ConnectionPool
) -> None:
    server = http_fault_server
    mcp = RawMcp(pool, server.url)
    server.set_fault("empty_200")
    empty = mcp.send(mcp.message("initialize", {}))
    assert (empty.status, empty.content, header(empty, "content-type")) == (
        200,
        b"",
        "application/json",
    )
    server.set_fault("disconnect")
    with pytest.raises(httpcore.RemoteProtocolError):
        mcp.send(mcp.message("initialize", {}))
    server.set_fault("unsupported_version", supported=["2026-07-28", "2027-01-01"])
    mcp.use_modern()
    refused, response = mcp.request("server/discover")
    assert response.status == 400
    assert refused["error"] == {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28", "2027-01-01"], "requested": MODERN},
    }
    assert [r.fault for r in server.requests] == ["empty_200", "disconnect", "unsupported_version"]


def test_fault_server_refuses_unknown_fault(http_fault_server: HttpFaultServer) -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        http_fault_server.set_fault("typo")


def test_fault_server_subprocess_control_api(pool: httpcore.ConnectionPool) -> None:
    with start_fault_server_process("--sse") as peer:
        origin = peer.url.removesuffix("/mcp")
        mcp = RawMcp(pool, peer.url)
        armed = mcp.http(
            "POST",
            [JSON_BODY],
            json.dumps({"kind": "server_error", "method": "tools/list"}),
            url=origin + "/_control/fault",
        )
        assert armed.status == 204
        mcp.initialize()
        assert mcp.send(mcp.message("tools/list")).status == 500
        recorded = json.loads(mcp.http("GET", [], url=origin + "/_control/requests").content)
        assert [r["fault"] for r in recorded] == [None, None, "server_error"]
        assert json.loads(recorded[2]["body"])["method"] == "tools/list"
        proc = peer.proc
    assert proc.poll() is not None
