"""examples/selectors_driver.py, the third driver (stdlib only), against real servers: the
reference server-everything (npm), a server built with the official SDK (tests/servers/
py_server.py) and our fault server (tests/servers/fault_server.py). No mocks.

After every session each process the driver spawned must be reaped (a returncode) and its
process group empty: the driver stops servers the way the machine asks, and leaves nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from examples.selectors_driver import STDIO_ONLY, SelectorsClient
from mcp_core import ConnectFailed, ServerExited
from tests.conftest import (
    REPO_ROOT,
    children_of,
    everything_argv,
    fault_server_argv,
    process_group,
    py_server_argv,
)
from tests.servers.fault_server import TOOL_NAMES

SCRIPT = REPO_ROOT / "examples" / "selectors_driver.py"


def _spec(argv: list[str], **fields: object) -> dict[str, object]:
    return {"name": "peer", "command": argv[0], "args": argv[1:], **fields}


def _nothing_left(client: SelectorsClient) -> None:
    pids = [p.popen.pid for p in client.processes]
    assert pids
    assert [p.popen.returncode for p in client.processes].count(None) == 0
    assert [pid for pid in pids if process_group(pid)] == []
    assert [pid for pid in children_of(os.getpid()) if pid in pids] == []


@pytest.fixture(autouse=True)
def _no_server_outlives_a_failed_test() -> Iterator[None]:
    """A failing test leaves no server running past it (a passing one checks it left none)."""
    before = set(children_of(os.getpid()))
    yield
    for pid in set(children_of(os.getpid())) - before:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # the drivers start each server as a group leader


def test_server_everything_echo() -> None:
    client = SelectorsClient(_spec(everything_argv()))
    with client:
        assert "echo" in {tool.name for tool in client.list_tools()}
        result = client.call_tool("echo", {"message": "hello from selectors"})
        assert result.text == "Echo: hello from selectors" and not result.is_error
        assert len(client.processes) == 1 and client.processes[0].popen.returncode is None
    _nothing_left(client)


def test_official_sdk_server() -> None:
    client = SelectorsClient(_spec(py_server_argv()))
    with client:
        assert {"echo", "add"} <= {tool.name for tool in client.list_tools()}
        assert client.call_tool("echo", {"text": "sdk"}).text == "sdk"
        assert client.call_tool("add", {"a": 2, "b": 40}).structured_content == {"result": 42}
        assert client.call_tool("fail").is_error  # a tool's own failure is a result
    _nothing_left(client)
    assert client.processes[0].popen.returncode == 0  # it left when its stdin closed


def test_server_exiting_mid_call_is_server_exited_then_restarted() -> None:
    client = SelectorsClient(_spec(fault_server_argv(), reconnect=0.05))
    with client:
        with pytest.raises(ServerExited) as info:
            client.call_tool("exit", {"code": 3, "stderr": "dying now\n"})
        assert info.value.code == 3 and "dying now" in info.value.stderr_tail
        first = client.processes[0].popen
        assert first.returncode == 3 and process_group(first.pid) == []
        assert client.await_ready(10).state == "ready"  # the machine restarted it
        assert client.call_tool("echo", {"text": "back"}).text == "back"
        assert [p.generation for p in client.processes] == [1, 2]
    _nothing_left(client)


@pytest.mark.parametrize(
    ("flags", "returncode"),
    [
        ([], 0),  # leaves when its stdin closes
        (["--ignore-stdin-eof"], -signal.SIGTERM),
        (["--ignore-stdin-eof", "--ignore-sigterm"], -signal.SIGKILL),
    ],
)
def test_stop_walks_close_stdin_sigterm_sigkill(
    flags: list[str], returncode: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Each stage the machine asks for is performed: the stage that ends the server is the
    one its exit status names, and the machine never has to give the process up."""
    client = SelectorsClient(_spec(fault_server_argv(*flags), shutdown_grace=0.2))
    with client:
        assert client.call_tool("echo", {"text": "up"}).text == "up"
    _nothing_left(client)
    assert client.processes[0].popen.returncode == returncode
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_missing_executable_fails_at_once(tmp_path: Path) -> None:
    client = SelectorsClient({"name": "ghost", "command": str(tmp_path / "no-such-server")})
    with pytest.raises(ConnectFailed, match="no-such-server"), client:
        pytest.fail("a server that cannot be spawned is never ready")
    assert client.processes == []


def test_http_server_is_refused() -> None:
    with pytest.raises(ValueError, match="stdio servers only") as info:
        SelectorsClient({"name": "remote", "url": "http://127.0.0.1:9/mcp"})
    assert str(info.value) == STDIO_ONLY


@pytest.mark.parametrize(
    ("options", "server", "returncode", "stdout", "stderr"),
    [
        ([], fault_server_argv, 0, "".join(f"{n}: fault tool {n}\n" for n in TOOL_NAMES), ""),
        (["--call", "echo", "--args", '{"message": "hi"}'], everything_argv, 0, "Echo: hi\n", ""),
        (["--call", "exit", "--args", '{"code": 3}'], fault_server_argv, 1, "", "ServerExited: "),
    ],
    ids=["list", "call", "server-exits"],
)
def test_script(
    options: list[str],
    server: Callable[[], list[str]],
    returncode: int,
    stdout: str,
    stderr: str,
) -> None:
    """The script form, in a child interpreter that imports this tree's mcp_core."""
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    child = subprocess.run(
        [sys.executable, str(SCRIPT), *options, *server()],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=60,
    )
    assert child.returncode == returncode, child.stderr
    assert child.stdout == stdout and child.stderr.startswith(stderr)
