"""The test servers themselves work: raw JSON lines over a pipe, no client code involved.

A driver test that fails because its peer is broken would send someone hunting in the wrong
place; these tests catch a broken peer on its own. The resources, prompts, completion, logging
and subscriptions tests check what tests/servers/SURFACE.md says, on stdio and (raw httpcore,
the helpers of test_http_peers_smoke.py) on Streamable HTTP.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpcore
import pytest

from tests.servers.http_peers import HttpPeer
from tests.servers.test_http_peers_smoke import (
    RawMcp,
    SseListener,
    header,
    messages_of,
)

ArgvFactory = Callable[..., list[str]]  # the argv fixtures of tests/conftest.py

# Generous: a node server on a busy 2-core CI machine can take seconds to start. Reads wait for
# the line itself; this is only the point at which a silent peer fails the test.
DEADLINE = 30.0
LEGACY_VERSION = "2025-11-25"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


class RawPeer:
    """A server process spoken to in raw JSON lines; every read has a deadline."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr = bytearray()
        # Reader threads keep both pipes drained so the server never blocks writing.
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self.stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self.stderr_thread.start()
        self.next_id = 0

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        while chunk := os.read(fd, 65536):
            self.stderr += chunk

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read_line(self) -> bytes | None:
        """The next stdout line, or None at EOF."""
        try:
            return self.lines.get(timeout=DEADLINE)
        except queue.Empty:
            raise AssertionError(f"no line from the server in {DEADLINE} s") from None

    def read(self) -> dict[str, Any]:
        line = self.read_line()
        assert line is not None, f"server closed stdout; stderr: {bytes(self.stderr)[-500:]!r}"
        message: dict[str, Any] = json.loads(line)
        return message

    def request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Send a request; return its response and the messages that came before it."""
        self.next_id += 1
        request_id = self.next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        before: list[dict[str, Any]] = []
        while True:
            received = self.read()
            if received.get("id") == request_id and "method" not in received:
                return received, before
            before.append(received)

    def call(self, name: str, arguments: dict[str, Any] | None = None, **extra: Any) -> Any:
        response, _ = self.request(
            "tools/call", {"name": name, "arguments": arguments or {}, **extra}
        )
        return response["result"]

    def initialize(self, version: str = LEGACY_VERSION) -> dict[str, Any]:
        response, _ = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "smoke", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return response

    def list_tool_names(self) -> list[str]:
        names: list[str] = []
        cursor = None
        for _page in range(50):
            response, _ = self.request("tools/list", {"cursor": cursor} if cursor else {})
            names += [tool["name"] for tool in response["result"]["tools"]]
            cursor = response["result"].get("nextCursor")
            if cursor is None:
                return names
        raise AssertionError("tools/list did not end within 50 pages")

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self) -> int:
        code = self.proc.wait(timeout=DEADLINE)
        self.stderr_thread.join(timeout=DEADLINE)
        return code


Spawn = Callable[..., RawPeer]  # argv, env=None -> a started peer, killed at teardown


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    peers: list[RawPeer] = []

    def start(argv: list[str], env: dict[str, str] | None = None) -> RawPeer:
        peer = RawPeer(argv, env)
        peers.append(peer)
        return peer

    yield start
    for peer in peers:
        if peer.proc.poll() is None:
            peer.proc.kill()
        peer.proc.wait(timeout=DEADLINE)
        for pipe in (peer.proc.stdin, peer.proc.stdout, peer.proc.stderr):
            if pipe is not None:
                pipe.close()


def text_of(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


# --- the official-SDK server ---


def test_py_server_legacy_handshake_and_tools(spawn: Spawn, py_server_argv: ArgvFactory) -> None:
    peer = spawn(py_server_argv())
    init = peer.initialize()["result"]
    assert init["protocolVersion"] == LEGACY_VERSION
    assert init["serverInfo"]["name"] == "py-test-server"
    assert set(peer.list_tool_names()) == {
        *("echo", "add", "slow", "fail", "greet"),
        *("connect_account", "needs_connection"),
        *("bump", "log", "change_lists", "whoami"),
    }
    assert init["capabilities"] == {
        "completions": {},
        "logging": {},
        "prompts": {"listChanged": True},
        "resources": {"listChanged": True, "subscribe": True},
        "tools": {"listChanged": True},
    }
    assert text_of(peer.call("echo", {"text": "hi"})) == "hi"
    assert peer.call("add", {"a": 2, "b": 3})["structuredContent"] == {"result": 5}
    failed = peer.call("fail")
    assert failed["isError"] is True
    assert "failed on purpose" in text_of(failed)
    peer.close_stdin()
    assert peer.wait() == 0


def test_py_server_reports_progress(spawn: Spawn, py_server_argv: ArgvFactory) -> None:
    peer = spawn(py_server_argv())
    peer.initialize()
    params = {
        "name": "slow",
        "arguments": {"seconds": 0.2, "steps": 3},
        "_meta": {"progressToken": "t"},
    }
    response, before = peer.request("tools/call", params)
    assert [n["params"]["progress"] for n in before if n["method"] == "notifications/progress"] == [
        1,
        2,
        3,
    ]
    assert text_of(response["result"]) == "done"


def test_py_server_speaks_modern_era_when_probed(spawn: Spawn, py_server_argv: ArgvFactory) -> None:
    peer = spawn(py_server_argv())
    discover, _ = peer.request("server/discover", {"_meta": MODERN_META})
    assert "2026-07-28" in discover["result"]["supportedVersions"]
    echoed = peer.call("echo", {"text": "modern"}, _meta=MODERN_META)
    assert text_of(echoed) == "modern"
    # The first request fixed the era of this connection: the handshake is now refused.
    refused, _ = peer.request(
        "initialize",
        {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "s", "version": "0"},
        },
    )
    assert refused["error"]["code"] == -32022


# --- the official-SDK server: resources, prompts, completion, logging, subscriptions ---

LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
PY_RESOURCES = [
    *("test://static/hello", "test://static/blob", "test://counter"),
    *(f"test://static/extra/{n}" for n in range(1, 8)),
]
LISTEN_ALL = {
    "resourceSubscriptions": ["test://counter"],
    "toolsListChanged": True,
    "promptsListChanged": True,
    "resourcesListChanged": True,
}
LIST_CHANGED = [
    "notifications/resources/list_changed",
    "notifications/prompts/list_changed",
    "notifications/tools/list_changed",
]
Ask = Callable[[str, dict[str, Any]], dict[str, Any]]  # method, params -> JSON-RPC response


def stdio_ask(peer: RawPeer, era: str) -> Ask:
    def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if era == "modern":
            params = {**params, "_meta": {**MODERN_META, **params.get("_meta", {})}}
        return peer.request(method, params)[0]

    return ask


def http_ask(mcp: RawMcp) -> Ask:
    def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = mcp.message(method, params)
        # Modern HTTP routes resources/read by an Mcp-Name header naming the URI (RawMcp sends
        # one only for params.name); without it the SDK refuses with -32020.
        extra = [("Mcp-Name", params["uri"])] if mcp.modern and "uri" in params else []
        [answer] = [m for m in messages_of(mcp.send(message, extra)) if "method" not in m]
        assert answer["id"] == message["id"], answer
        return answer

    return ask


def result(ask: Ask, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    response = ask(method, params or {})
    assert "result" in response, response
    answer: dict[str, Any] = response["result"]
    return answer


def read_until(peer: RawPeer, seen: list[dict[str, Any]], method: str) -> dict[str, Any]:
    """The first message of `method` in `seen`, reading more (each with its deadline) until one
    comes; what is read is kept in `seen`."""
    while True:
        for message in seen:
            if message.get("method") == method:
                seen.remove(message)
                return message
        seen.append(peer.read())


def check_py_surface(ask: Ask) -> None:
    """Resources (paged), templates, prompts and completion: the same in both eras."""
    uris, sizes, cursor = [], [], None
    while True:
        page = result(ask, "resources/list", {"cursor": cursor} if cursor else {})
        uris += [resource["uri"] for resource in page["resources"]]
        sizes.append(len(page["resources"]))
        if (cursor := page.get("nextCursor")) is None:
            break
    assert (uris, sizes) == (PY_RESOURCES, [4, 4, 2])
    assert ask("resources/list", {"cursor": "nonsense"})["error"]["code"] == -32602

    hello = result(ask, "resources/read", {"uri": "test://static/hello"})["contents"]
    assert hello == [
        {"uri": "test://static/hello", "mimeType": "text/plain", "text": "hello world"}
    ]
    [blob] = result(ask, "resources/read", {"uri": "test://static/blob"})["contents"]
    assert blob["mimeType"] == "application/octet-stream"
    assert base64.b64decode(blob["blob"]) == b"\x00\x01binary\xff"
    [template] = result(ask, "resources/templates/list")["resourceTemplates"]
    assert (template["name"], template["uriTemplate"]) == ("item", "test://items/{item_id}")
    [item] = result(ask, "resources/read", {"uri": "test://items/42"})["contents"]
    assert (item["uri"], item["text"]) == ("test://items/42", "item 42")
    missing = ask("resources/read", {"uri": "test://nowhere"})["error"]
    assert (missing["code"], missing["data"]) == (-32602, {"uri": "test://nowhere"})

    prompts = {p["name"]: p.get("arguments") for p in result(ask, "prompts/list")["prompts"]}
    assert prompts == {
        "simple": [],
        "greeting": [
            {"name": "name", "description": "Who to greet", "required": True},
            {"name": "style", "description": "casual, formal or pirate", "required": False},
        ],
    }

    def prompt_text(name: str, arguments: dict[str, str]) -> str:
        got = result(ask, "prompts/get", {"name": name, "arguments": arguments})
        [message] = got["messages"]
        assert (message["role"], message["content"]["type"]) == ("user", "text")
        text: str = message["content"]["text"]
        return text

    assert prompt_text("simple", {}) == "This is a simple prompt."
    assert prompt_text("greeting", {"name": "Ada"}) == "Hey Ada!"
    assert prompt_text("greeting", {"name": "Ada", "style": "pirate"}) == "Ahoy, Ada!"
    bad_style = {"name": "greeting", "arguments": {"name": "Ada", "style": "shouty"}}
    assert ask("prompts/get", bad_style)["error"]["code"] == -32602

    def complete(ref: dict[str, str], name: str, value: str) -> dict[str, Any]:
        params = {"ref": ref, "argument": {"name": name, "value": value}}
        completion: dict[str, Any] = result(ask, "completion/complete", params)["completion"]
        return completion

    greeting = {"type": "ref/prompt", "name": "greeting"}
    items = {"type": "ref/resource", "uri": "test://items/{item_id}"}
    assert complete(greeting, "style", "")["values"] == ["casual", "formal", "pirate"]
    assert complete(greeting, "style", "f") == {"values": ["formal"], "total": 1, "hasMore": False}
    assert complete(items, "item_id", "1")["values"] == ["1", "10", "11", "12"]
    assert complete({"type": "ref/prompt", "name": "simple"}, "x", "")["values"] == []


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_py_server_resources_prompts_completion(
    spawn: Spawn, py_server_argv: ArgvFactory, era: str
) -> None:
    peer = spawn(py_server_argv())
    ask = stdio_ask(peer, era)
    if era == "legacy":
        peer.initialize()
    else:
        capabilities = result(ask, "server/discover")["capabilities"]
        assert capabilities["resources"] == {"listChanged": True, "subscribe": True}
        assert {"logging", "completions", "prompts", "tools"} <= set(capabilities)
    check_py_surface(ask)


def test_py_server_legacy_subscribe_logging_list_changed(
    spawn: Spawn, py_server_argv: ArgvFactory
) -> None:
    peer = spawn(py_server_argv())
    peer.initialize()
    updated = {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "test://counter"},
    }
    assert peer.request("resources/subscribe", {"uri": "test://counter"})[0]["result"] == {}
    bumped, before = peer.request("tools/call", {"name": "bump", "arguments": {}})
    assert (before, bumped["result"]["structuredContent"]) == ([updated], {"result": 1})
    [counter] = peer.request("resources/read", {"uri": "test://counter"})[0]["result"]["contents"]
    assert counter["text"] == "1"
    assert peer.request("resources/unsubscribe", {"uri": "test://counter"})[0]["result"] == {}
    assert peer.request("tools/call", {"name": "bump", "arguments": {}})[1] == []

    # Every level goes out until logging/setLevel; then only that level and above.
    log_info = {"name": "log", "arguments": {"level": "info", "text": "first"}}
    assert [n["params"] for n in peer.request("tools/call", log_info)[1]] == [
        {"level": "info", "logger": "py-test-server", "data": "first"}
    ]
    assert peer.request("logging/setLevel", {"level": "warning"})[0]["result"] == {}
    assert peer.request("tools/call", log_info)[1] == []
    log_error = {"name": "log", "arguments": {"level": "error", "text": "loud"}}
    assert [n["params"]["data"] for n in peer.request("tools/call", log_error)[1]] == ["loud"]

    _, before = peer.request("tools/call", {"name": "change_lists", "arguments": {}})
    assert [n["method"] for n in before] == LIST_CHANGED
    refused = peer.request("subscriptions/listen", {"notifications": LISTEN_ALL})[0]
    assert refused["error"]["code"] == -32601


def test_py_server_modern_listen_and_logging(spawn: Spawn, py_server_argv: ArgvFactory) -> None:
    peer = spawn(py_server_argv())
    ask = stdio_ask(peer, "modern")
    meta = {"_meta": MODERN_META}
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": "listen-1",
            "method": "subscriptions/listen",
            "params": {"notifications": LISTEN_ALL, **meta},
        }
    )
    ack = peer.read()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {"_meta": {SUBSCRIPTION_ID: "listen-1"}, "notifications": LISTEN_ALL}
    # Listen-stream events are written by the stream's own task: before or after the answer of
    # the call that caused them, so they are awaited, never expected at a place.
    bumped, seen = peer.request("tools/call", {"name": "bump", "arguments": {}, **meta})
    assert bumped["result"]["structuredContent"] == {"result": 1}
    assert read_until(peer, seen, "notifications/resources/updated")["params"] == {
        "_meta": {SUBSCRIPTION_ID: "listen-1"},
        "uri": "test://counter",
    }
    _, more = peer.request("tools/call", {"name": "change_lists", "arguments": {}, **meta})
    seen += more
    for method in LIST_CHANGED:
        assert read_until(peer, seen, method)["params"] == {"_meta": {SUBSCRIPTION_ID: "listen-1"}}
    assert seen == []

    # Logging: per request, by _meta opt-in; logging/setLevel and resources/subscribe are gone.
    log = {"name": "log", "arguments": {"level": "info", "text": "hi"}}
    assert peer.request("tools/call", {**log, **meta})[1] == []
    opted_in = {**log, "_meta": {**MODERN_META, LOG_LEVEL: "info"}}
    assert [n["params"]["data"] for n in peer.request("tools/call", opted_in)[1]] == ["hi"]
    too_high = {**log, "_meta": {**MODERN_META, LOG_LEVEL: "warning"}}
    assert peer.request("tools/call", too_high)[1] == []
    for method, params in [
        ("logging/setLevel", {"level": "info"}),
        ("resources/subscribe", {"uri": "test://counter"}),
    ]:
        assert ask(method, params)["error"]["code"] == -32601


def test_py_server_change_lists_waits_for_listen_streams(
    spawn: Spawn, py_server_argv: ArgvFactory
) -> None:
    # change_lists(listeners=1), sent before any listen: it answers only once one is open, and
    # that stream hears the changes.
    peer = spawn(py_server_argv())
    stdio_ask(peer, "modern")("server/discover", {})
    meta = {"_meta": MODERN_META}
    call = {"name": "change_lists", "arguments": {"listeners": 1}, **meta}
    peer.send({"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": call})
    lists = {key: True for key in LISTEN_ALL if key.endswith("ListChanged")}
    listen = {"notifications": lists, **meta}
    peer.send({"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen", "params": listen})
    seen: list[dict[str, Any]] = []
    ack = read_until(peer, seen, "notifications/subscriptions/acknowledged")
    assert ack["params"]["notifications"] == lists
    for method in LIST_CHANGED:
        assert read_until(peer, seen, method)["params"] == {"_meta": {SUBSCRIPTION_ID: "l"}}
    while not any(message.get("id") == "call" for message in seen):
        seen.append(peer.read())
    (answer,) = [message for message in seen if message.get("id") == "call"]
    assert answer["result"]["content"][0]["text"] == "ok"


PyHttpServer = Callable[[str], HttpPeer]


@pytest.fixture
def pool() -> Iterator[httpcore.ConnectionPool]:
    with httpcore.ConnectionPool() as connection_pool:
        yield connection_pool


def get_stream(mcp: RawMcp) -> SseListener:
    listener = SseListener("GET", mcp.url, [*mcp.headers({}), ("Accept", "text/event-stream")])
    assert listener.status == 200
    return listener


def call_messages(mcp: RawMcp, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message of one tools/call answer: notifications first, the answer last."""
    message = mcp.message("tools/call", {"name": name, "arguments": arguments})
    received = messages_of(mcp.send(message))
    assert received[-1]["id"] == message["id"] and "result" in received[-1], received
    return received


def test_py_http_server_legacy_surface(
    py_http_server: PyHttpServer, pool: httpcore.ConnectionPool
) -> None:
    url = py_http_server("stateful").url
    mcp = RawMcp(pool, url)
    mcp.initialize()
    check_py_surface(http_ask(mcp))
    # The caller's own notifications ride its call's SSE answer, before the result.
    assert mcp.result("resources/subscribe", {"uri": "test://counter"}) == {}
    [updated, _] = call_messages(mcp, "bump", {})
    assert updated["params"] == {"uri": "test://counter"}
    assert mcp.result("logging/setLevel", {"level": "error"}) == {}
    assert len(call_messages(mcp, "log", {"level": "warning", "text": "dropped"})) == 1
    [logged, _] = call_messages(mcp, "log", {"level": "error", "text": "kept"})
    assert logged["params"] == {"level": "error", "logger": "py-test-server", "data": "kept"}
    assert [m.get("method") for m in call_messages(mcp, "change_lists", {})] == [
        *LIST_CHANGED,
        None,
    ]
    # Another session's subscription is served on that session's GET stream.
    other = RawMcp(pool, url)
    other.initialize()
    stream = get_stream(other)
    assert other.result("resources/subscribe", {"uri": "test://counter"}) == {}
    call_messages(mcp, "bump", {})
    assert stream.next_message()["params"] == {"uri": "test://counter"}


def test_py_http_server_json_mode_notifies_on_the_get_stream(
    py_http_server: PyHttpServer, pool: httpcore.ConnectionPool
) -> None:
    mcp = RawMcp(pool, py_http_server("json").url)
    mcp.initialize()
    stream = get_stream(mcp)
    assert mcp.result("resources/subscribe", {"uri": "test://counter"}) == {}
    for name, arguments in [
        ("bump", {}),
        ("change_lists", {}),
        ("log", {"level": "info", "text": "x"}),
    ]:
        response = mcp.send(mcp.message("tools/call", {"name": name, "arguments": arguments}))
        assert header(response, "content-type") == "application/json"
    assert [stream.next_message()["method"] for _ in range(5)] == [
        "notifications/resources/updated",
        *LIST_CHANGED,
        "notifications/message",
    ]


def test_py_http_server_modern_surface_and_listen(
    py_http_server: PyHttpServer, pool: httpcore.ConnectionPool
) -> None:
    url = py_http_server("modern").url
    mcp = RawMcp(pool, url)
    mcp.use_modern()
    check_py_surface(http_ask(mcp))
    listen = mcp.message("subscriptions/listen", {"notifications": LISTEN_ALL})
    stream = SseListener("POST", url, mcp.headers(listen), json.dumps(listen))
    assert stream.response_headers["content-type"] == "text/event-stream"
    tag = {SUBSCRIPTION_ID: listen["id"]}
    ack = stream.next_message()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {"_meta": tag, "notifications": LISTEN_ALL}
    assert [m.get("method") for m in call_messages(mcp, "bump", {})] == [None]
    assert stream.next_message()["params"] == {"_meta": tag, "uri": "test://counter"}
    call_messages(mcp, "change_lists", {})
    assert [stream.next_message()["method"] for _ in LIST_CHANGED] == LIST_CHANGED
    # A legacy session's bump on the same server reaches the modern listen stream too.
    legacy = RawMcp(pool, url)
    legacy.initialize()
    call_messages(legacy, "bump", {})
    assert stream.next_message()["params"] == {"_meta": tag, "uri": "test://counter"}
    # Logging: only on opt-in, on the call's own stream.
    call = mcp.message(
        "tools/call",
        {
            "name": "log",
            "arguments": {"level": "info", "text": "hi"},
            "_meta": {LOG_LEVEL: "debug"},
        },
    )
    [logged, _] = messages_of(mcp.send(call))
    assert logged["params"] == {"level": "info", "logger": "py-test-server", "data": "hi"}
    assert len(call_messages(mcp, "log", {"level": "emergency", "text": "unasked"})) == 1
    assert mcp.request("logging/setLevel", {"level": "info"})[0]["error"]["code"] == -32601


# --- the fault server ---


def test_fault_server_handshake_pagination_and_echo(
    spawn: Spawn, fault_server_argv: ArgvFactory
) -> None:
    peer = spawn(fault_server_argv())
    discover, _ = peer.request("server/discover", {"_meta": MODERN_META})
    assert discover["error"]["code"] == -32601
    init = peer.initialize("2025-06-18")["result"]
    assert init["protocolVersion"] == "2025-06-18"
    assert init["capabilities"] == {"tools": {"listChanged": True}}
    assert init["serverInfo"] == {"name": "fault", "version": "1"}
    first_page, _ = peer.request("tools/list")
    assert first_page["result"]["nextCursor"] == "p2"
    assert len(first_page["result"]["tools"]) == 2
    names = peer.list_tool_names()
    assert names[:6] == ["echo", "hang", "cancelled_ids", "exit", "huge", "slow_progress"]
    assert len(names) == len(set(names)) == 10
    assert peer.request("ping")[0]["result"] == {}
    assert text_of(peer.call("echo", {"text": "hi"})) == "hi"
    peer.close_stdin()
    assert peer.wait() == 0


def test_fault_server_banner_comes_first(spawn: Spawn, fault_server_argv: ArgvFactory) -> None:
    peer = spawn(fault_server_argv("--banner"))
    assert peer.read_line() == b"starting fault server v1\n"
    assert peer.initialize()["result"]["serverInfo"]["name"] == "fault"


def test_fault_server_init_error_and_version(spawn: Spawn, fault_server_argv: ArgvFactory) -> None:
    failing = spawn(fault_server_argv("--init-error"))
    assert failing.initialize()["error"] == {"code": -32603, "message": "boom"}
    pinned = spawn(fault_server_argv("--version", "2024-11-05"))
    assert pinned.initialize(LEGACY_VERSION)["result"]["protocolVersion"] == "2024-11-05"


def test_fault_server_exit_on_start(spawn: Spawn, fault_server_argv: ArgvFactory) -> None:
    peer = spawn(fault_server_argv("--exit-on-start", "7"))
    assert peer.wait() == 7
    assert bytes(peer.stderr) == b"fatal: config missing\n"
    assert peer.read_line() is None


def test_fault_server_silent_on_discover(spawn: Spawn, fault_server_argv: ArgvFactory) -> None:
    peer = spawn(fault_server_argv("--no-discover-answer"))
    peer.send({"jsonrpc": "2.0", "id": "probe", "method": "server/discover", "params": {}})
    # The next line is the initialize answer: the probe got none.
    assert peer.initialize()["id"] == 1


def test_fault_server_repeat_cursor(spawn: Spawn, fault_server_argv: ArgvFactory) -> None:
    peer = spawn(fault_server_argv("--repeat-cursor"))
    peer.initialize()
    for _ in range(3):
        page, _ = peer.request("tools/list", {"cursor": "p2"})
        assert page["result"]["nextCursor"] == "p2"


def test_fault_server_hang_does_not_block_and_cancel_is_recorded(
    spawn: Spawn, fault_server_argv: ArgvFactory
) -> None:
    peer = spawn(fault_server_argv())
    peer.initialize()
    peer.send({"jsonrpc": "2.0", "id": "h", "method": "tools/call", "params": {"name": "hang"}})
    assert text_of(peer.call("echo", {"text": "still here"})) == "still here"
    peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "h"}})
    assert json.loads(text_of(peer.call("cancelled_ids"))) == ["h"]


def test_fault_server_progress_and_list_changed(
    spawn: Spawn, fault_server_argv: ArgvFactory
) -> None:
    peer = spawn(fault_server_argv())
    peer.initialize()
    params = {
        "name": "slow_progress",
        "arguments": {"steps": 3, "delay": 0.01},
        "_meta": {"progressToken": 9},
    }
    response, before = peer.request("tools/call", params)
    assert [n["params"] for n in before] == [
        {"progressToken": 9, "progress": step, "total": 3, "message": f"step {step}/3"}
        for step in (1, 2, 3)
    ]
    assert text_of(response["result"]) == "done"
    response, before = peer.request("tools/call", {"name": "list_changed"})
    assert [n["method"] for n in before] == ["notifications/tools/list_changed"]


def test_fault_server_requests_to_the_client(spawn: Spawn, fault_server_argv: ArgvFactory) -> None:
    peer = spawn(fault_server_argv())
    peer.initialize()
    peer.send(
        {"jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": {"name": "ping_client"}}
    )
    assert peer.read() == {"jsonrpc": "2.0", "id": "srv-1", "method": "ping", "params": {}}
    peer.send({"jsonrpc": "2.0", "id": "srv-1", "result": {}})
    answer = peer.read()
    assert answer["id"] == 100
    assert json.loads(text_of(answer["result"])) == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}

    peer.send(
        {
            "jsonrpc": "2.0",
            "id": 101,
            "method": "tools/call",
            "params": {"name": "unknown_server_request"},
        }
    )
    sampling = peer.read()
    assert (sampling["id"], sampling["method"]) == ("srv-2", "sampling/createMessage")
    refusal = {"jsonrpc": "2.0", "id": "srv-2", "error": {"code": -32601, "message": "no"}}
    peer.send(refusal)
    answer = peer.read()
    assert answer["id"] == 101
    assert json.loads(text_of(answer["result"])) == refusal


def test_fault_server_huge_line_has_id_first(spawn: Spawn, fault_server_argv: ArgvFactory) -> None:
    peer = spawn(fault_server_argv())
    peer.initialize()
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "huge", "arguments": {"mib": 1}},
        }
    )
    line = peer.read_line()
    assert line is not None
    assert line.startswith(b'{"jsonrpc":"2.0","id":5,')
    assert 1024 * 1024 < len(line) < 1024 * 1024 + 200
    assert len(text_of(json.loads(line)["result"])) == 1024 * 1024


def test_fault_server_stderr_spam_then_exit_mid_call(
    spawn: Spawn, fault_server_argv: ArgvFactory
) -> None:
    peer = spawn(fault_server_argv())
    peer.initialize()
    assert text_of(peer.call("stderr_spam", {"kib": 256})) == "ok"
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "exit", "arguments": {"code": 3, "stderr": "dying now\n"}},
        }
    )
    assert peer.read_line() is None
    assert peer.wait() == 3
    assert len(peer.stderr) == 256 * 1024 + len(b"dying now\n")
    assert peer.stderr.endswith(b"dying now\n")


def test_fault_server_can_refuse_to_die_politely(
    spawn: Spawn, fault_server_argv: ArgvFactory
) -> None:
    peer = spawn(fault_server_argv("--ignore-stdin-eof", "--ignore-sigterm"))
    peer.initialize()
    peer.proc.send_signal(signal.SIGTERM)
    # An ignored signal is discarded when sent, so an answer after it proves the server lived.
    assert peer.request("ping")[0]["result"] == {}
    peer.close_stdin()
    with pytest.raises(subprocess.TimeoutExpired):
        peer.proc.wait(timeout=0.5)  # bounded wait for an exit that must not happen
    peer.proc.kill()
    assert peer.wait() == -signal.SIGKILL


# --- the npm reference servers ---


@pytest.mark.slow
def test_server_everything(spawn: Spawn, everything_argv: ArgvFactory) -> None:
    peer = spawn(everything_argv())
    assert peer.initialize()["result"]["protocolVersion"] == LEGACY_VERSION
    assert "echo" in peer.list_tool_names()
    assert text_of(peer.call("echo", {"message": "hi"})) == "Echo: hi"
    peer.close_stdin()
    assert peer.wait() == 0


EVERYTHING_DOCS = [
    *("architecture", "extension", "features", "how-it-works"),
    *("instructions", "startup", "structure"),
]


@pytest.mark.slow
def test_server_everything_resources_prompts_completion_subscriptions(
    spawn: Spawn, everything_argv: ArgvFactory
) -> None:
    peer = spawn(everything_argv())
    discover, _ = peer.request("server/discover", {"_meta": MODERN_META})
    assert discover["error"]["code"] == -32601  # legacy only
    init = peer.initialize("2026-07-28")["result"]  # a version it lacks: it offers its newest
    assert init["protocolVersion"] == LEGACY_VERSION
    assert init["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    assert {"logging", "completions", "prompts", "tools", "tasks"} <= set(init["capabilities"])
    ask = stdio_ask(peer, "legacy")

    listed = result(ask, "resources/list")
    assert "nextCursor" not in listed  # one page
    assert [(r["uri"], r["mimeType"]) for r in listed["resources"]] == [
        (f"demo://resource/static/document/{name}.md", "text/markdown") for name in EVERYTHING_DOCS
    ]
    templates = result(ask, "resources/templates/list")["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == [
        "demo://resource/dynamic/text/{resourceId}",
        "demo://resource/dynamic/blob/{resourceId}",
    ]
    [text] = result(ask, "resources/read", {"uri": "demo://resource/dynamic/text/1"})["contents"]
    assert text["text"].startswith("Resource 1: This is a plaintext resource created at ")
    [blob] = result(ask, "resources/read", {"uri": "demo://resource/dynamic/blob/2"})["contents"]
    assert blob["mimeType"] == "text/plain"  # although the template says octet-stream
    assert base64.b64decode(blob["blob"]).startswith(b"Resource 2: This is a base64 blob")

    prompts = {p["name"]: p.get("arguments", []) for p in result(ask, "prompts/list")["prompts"]}
    assert {name: [(a["name"], a["required"]) for a in args] for name, args in prompts.items()} == {
        "simple-prompt": [],
        "args-prompt": [("city", True), ("state", False)],
        "completable-prompt": [("department", True), ("name", True)],
        "resource-prompt": [("resourceType", True), ("resourceId", True)],
    }
    args = result(ask, "prompts/get", {"name": "args-prompt", "arguments": {"city": "Paris"}})
    assert args["messages"][0]["content"]["text"] == "What's weather in Paris?"

    def values(ref: dict[str, str], name: str, value: str, **context: str) -> list[str]:
        params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        found: list[str] = result(ask, "completion/complete", params)["completion"]["values"]
        return found

    team = {"type": "ref/prompt", "name": "completable-prompt"}
    assert values(team, "department", "S") == ["Sales", "Support"]
    assert values(team, "name", "", department="Engineering") == ["Alice", "Bob", "Charlie"]
    resource_prompt = {"type": "ref/prompt", "name": "resource-prompt"}
    assert values(resource_prompt, "resourceType", "") == ["Text", "Blob"]
    text_template = {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"}
    assert values(text_template, "resourceId", "5") == ["5"]

    # Subscribing is acknowledged with an info log (dropped below the setLevel level); updates
    # come only while toggle-subscriber-updates is on: one at once, then one every 5 s.
    uri = "demo://resource/dynamic/text/1"
    assert result(ask, "logging/setLevel", {"level": "warning"}) == {}
    assert peer.request("resources/subscribe", {"uri": uri})[1] == []
    toggle = {"name": "toggle-subscriber-updates", "arguments": {}}
    _, before = peer.request("tools/call", toggle)
    assert before == [
        {"method": "notifications/resources/updated", "params": {"uri": uri}, "jsonrpc": "2.0"}
    ]
    peer.request("tools/call", toggle)  # off again, so that closing stdin ends it
    peer.close_stdin()
    assert peer.wait() == 0


@pytest.mark.slow
def test_server_everything_http_subscription_updates_on_the_get_stream(
    everything_http: Callable[..., HttpPeer], pool: httpcore.ConnectionPool
) -> None:
    url = everything_http("streamableHttp").url
    modern = RawMcp(pool, url)
    modern.use_modern()
    refused = modern.send(modern.message("server/discover"))
    assert refused.status == 400
    assert json.loads(refused.content)["error"]["code"] == -32000
    mcp = RawMcp(pool, url)
    mcp.initialize()
    assert mcp.session is not None and mcp.version == LEGACY_VERSION
    stream = get_stream(mcp)
    uri = "demo://resource/dynamic/text/1"
    assert mcp.result("resources/subscribe", {"uri": uri}) == {}
    call_messages(mcp, "toggle-subscriber-updates", {})
    logged = stream.next_message()
    assert logged["method"] == "notifications/message" and uri in logged["params"]["data"]
    assert stream.next_message()["params"] == {"uri": uri}
    call_messages(mcp, "toggle-subscriber-updates", {})


@pytest.mark.slow
def test_server_filesystem(spawn: Spawn, tmp_path: Path, filesystem_argv: ArgvFactory) -> None:
    (tmp_path / "hello.txt").write_text("hello from disk\n")
    peer = spawn(filesystem_argv(tmp_path))
    assert "result" in peer.initialize()
    assert "read_text_file" in peer.list_tool_names()
    result = peer.call("read_text_file", {"path": str(tmp_path / "hello.txt")})
    assert text_of(result) == "hello from disk\n"
    peer.close_stdin()
    assert peer.wait() == 0


@pytest.mark.slow
def test_server_memory(spawn: Spawn, tmp_path: Path, memory_argv: ArgvFactory) -> None:
    env = {**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    peer = spawn(memory_argv(), env)
    assert "result" in peer.initialize()
    assert "read_graph" in peer.list_tool_names()
    assert not peer.call("read_graph").get("isError", False)
    peer.close_stdin()
    assert peer.wait() == 0
