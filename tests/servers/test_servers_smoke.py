"""The test servers themselves work: raw JSON lines over a pipe, no client code involved.

A driver test that fails because its peer is broken would send someone hunting in the wrong
place; these tests catch a broken peer on its own.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

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
