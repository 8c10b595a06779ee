"""Shared test helpers: where the real peer servers are, and how to watch processes.

Every helper is a plain function (`from tests.conftest import wait_until`) and also a fixture of
the same name, which is the way to use it from a test (no import path to get wrong):

    def test_x(fault_server_argv, wait_until, children_of): ...

Server argv helpers:
  py_server_argv()            the official-SDK server (tests/servers/py_server.py)
  fault_server_argv(*flags)   the fault-injection server (tests/servers/fault_server.py)
  everything_argv()           @modelcontextprotocol/server-everything on stdio
  filesystem_argv(directory)  @modelcontextprotocol/server-filesystem allowed to `directory`
  memory_argv()               @modelcontextprotocol/server-memory; give it MEMORY_FILE_PATH
                              (an absolute path under tmp_path) or it writes into node_modules
  py_auth_server_argv(*flags) the OAuth-protected official-SDK server
                              (tests/servers/py_auth_server.py: --port, --mode,
                              --access-token-lifetime); the fixture py_auth_server starts it
  device_auth_server_argv(*flags)  the MCP server behind authlib's device authorization
                              grant (tests/servers/device_auth_server.py: --interval,
                              --expires-in, --auto-approve-after, ...); the fixture
                              device_auth_server starts it
  fastmcp_tasks_argv(*flags)  the Tasks extension peer (tests/servers/fastmcp_tasks_server.py,
                              FastMCP with fastmcp-tasks) on stdio; flags --poll-interval-ms N,
                              --ttl-ms N; the fixture fastmcp_tasks_http starts it over HTTP
The npm servers come from `make node_modules`. Outside CI a missing one skips the test with a
message saying so; under CI (CI set in the environment) it fails, so CI can never go green by
skipping its real-peer tests. The Tasks peer's venv (.venv-tasks) comes from `make test` (or
`make tasks-venv`); without it a test that needs the peer fails, in CI or not.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import anyio
import pytest
from hypothesis import settings

from tests.servers import http_peers
from tests.servers.http_fault_server import HttpFaultServer
from tests.servers.http_peers import (
    HttpPeer,
    start_everything_http,
    start_fastmcp_tasks_http,
    start_py_http_server,
)

T = TypeVar("T")

REPO_ROOT = Path(__file__).resolve().parent.parent
SERVERS_DIR = REPO_ROOT / "tests" / "servers"
NODE_BIN_DIR = REPO_ROOT / "node_modules" / ".bin"

# Hypothesis' default 200 ms deadline turns a slow CI machine (2 cores, busy with real server
# processes) into flaky failures; the per-test pytest-timeout is the guard against hangs. In CI
# the examples are derandomized so a red run is reproducible from its log.
settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# --- where the peers are ---


def node_bin(name: str) -> str:
    """Path of an npm-installed executable; skip (fail under CI) when it is not installed."""
    path = NODE_BIN_DIR / name
    if not path.exists():
        message = f"{path} is missing: run `make node_modules` (needs node >= 20 and npm)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(path)


def py_server_argv() -> list[str]:
    """argv of the official-SDK stdio server; sys.executable is the venv, which has `mcp`."""
    return [sys.executable, str(SERVERS_DIR / "py_server.py")]


def fault_server_argv(*flags: str) -> list[str]:
    """argv of the fault-injection server with the given flags (see its docstring)."""
    return [sys.executable, str(SERVERS_DIR / "fault_server.py"), *flags]


def everything_argv() -> list[str]:
    """argv of server-everything; its first argument picks the transport (default "stdio")."""
    return [node_bin("mcp-server-everything"), "stdio"]


def filesystem_argv(directory: str | os.PathLike[str]) -> list[str]:
    """argv of server-filesystem, allowed to read and write under `directory` only."""
    return [node_bin("mcp-server-filesystem"), str(directory)]


def memory_argv() -> list[str]:
    """argv of server-memory; set MEMORY_FILE_PATH (absolute) in its environment."""
    return [node_bin("mcp-server-memory")]


def py_auth_server_argv(*flags: str) -> list[str]:
    """argv of the MCP server behind the SDK's own OAuth authorization server, with the given
    flags (see tests/servers/py_auth_server.py for them and its /__control/ knobs)."""
    return [sys.executable, str(SERVERS_DIR / "py_auth_server.py"), *flags]


def device_auth_server_argv(*flags: str) -> list[str]:
    """argv of the MCP server behind authlib's device authorization grant (RFC 8628) server,
    with the given flags (see tests/servers/device_auth_server.py for them and its /test/ knobs)."""
    return [sys.executable, str(SERVERS_DIR / "device_auth_server.py"), *flags]


def fastmcp_tasks_argv(*flags: str) -> list[str]:
    """argv of the Tasks-extension peer (tests/servers/fastmcp_tasks_server.py) on stdio, run by
    the interpreter of its own venv; fails the test (never skips it) when that venv is missing."""
    require_tasks_venv()
    return http_peers.fastmcp_tasks_argv(*flags)


def require_tasks_venv() -> None:
    """Fail the test when the Tasks peer's venv is missing, saying what creates it."""
    if not http_peers.TASKS_PYTHON.exists():
        pytest.fail(
            f"{http_peers.TASKS_PYTHON} is missing: `make test` creates the Tasks peer's venv "
            "(alone: `make tasks-venv`, from tests/servers/requirements-tasks.txt)"
        )


# --- process table ---


def _process_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, state letter) for every process in /proc."""
    table: dict[int, tuple[int, int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat_file:
                stat = stat_file.read()
        except OSError:
            continue  # it exited between listdir and open
        # The command name (field 2) is in parentheses and may hold spaces or ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0])
    return table


# The first line of a child interpreter that a test interrupts: Ctrl-C raises KeyboardInterrupt
# there, as in a program started from a terminal, even when this process was started with
# SIGINT ignored (a background job of a shell without job control, e.g. `cmd &` in a script):
# an ignored disposition is inherited, and Python then installs no handler of its own.
CTRL_C_RAISES = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def interrupt_child(script: str, *first_lines: str) -> tuple[list[str], int]:
    """Run ``script`` in a child interpreter (after ``CTRL_C_RAISES``), read each of
    ``first_lines`` from its stdout (in order: they show it got where the interrupt should
    land), send it SIGINT, and return the rest of its stdout, without progress lines ("in
    flight..."), and its exit code. A child still running after 30 s is killed and the test
    fails."""
    child = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_RAISES + script], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        for line in first_lines:
            assert child.stdout.readline() == line + "\n"
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait()
    return [line for line in out.splitlines() if not line.startswith("in flight")], child.returncode


def children_of(pid: int, *, include_zombies: bool = True) -> list[int]:
    """Descendants of `pid` (children, grandchildren, ...) now in the process table.

    Zombies are included by default: an exited child nobody reaped is a leak too. A process whose
    parent died is re-parented to init and no longer shows here; use process_group(pgid) for
    those (the drivers start each server in its own process group).
    """
    table = _process_table()
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, (ppid, _pgid, state) in table.items():
            if ppid == parent:
                frontier.append(child)
                if include_zombies or state != "Z":
                    found.append(child)
    return sorted(found)


def process_group(pgid: int) -> list[int]:
    """Live (non-zombie) members of process group `pgid`, wherever they were re-parented."""
    return sorted(
        pid
        for pid, (_ppid, group, state) in _process_table().items()
        if group == pgid and state != "Z"
    )


def wait_until(
    predicate: Callable[[], T], timeout: float = 10.0, *, message: str = "condition"
) -> T:
    """Poll `predicate` until it returns something truthy, and return that; AssertionError at
    the deadline.

    Polling is acceptable only here: the process table has no event to wait for (a grandchild's
    exit is not ours to wait on). Anything that has an event, wait for the event instead.
    """
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        value = predicate()
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"{message} still false after {timeout} s (last value {value!r})")
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)


async def until(predicate: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    """``wait_until`` in a task: poll ``predicate`` until it holds; AssertionError naming
    ``what`` at the deadline. The same rule: only for state with no event of its own."""
    try:
        with anyio.fail_after(timeout):
            while not predicate():
                await anyio.sleep(0.005)
    except TimeoutError:
        raise AssertionError(f"waited {timeout} s for {what}") from None


def report_and_exit(child: Callable[[], object], write_end: int) -> NoReturn:
    """What a test's forked child does: run ``child()``, write ``{"result": ...}`` (JSON) or
    ``{"raised": "Type: message"}`` to ``write_end``, and ``os._exit(0)`` whatever happened
    (never the parent's atexit hooks, fixtures or finalizers)."""
    try:
        try:
            outcome: dict[str, Any] = {"result": child()}
        except BaseException as exc:
            outcome = {"raised": f"{type(exc).__name__}: {exc}"}
        data = json.dumps(outcome, default=repr).encode()
        while data:
            data = data[os.write(write_end, data) :]
    finally:
        os._exit(0)


def nested(levels: int) -> list[Any]:
    """A list nested ``levels`` deep: ``[[[...]]]``."""
    outer: list[Any] = []
    inner = outer
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return outer


# --- the same helpers as fixtures ---


@pytest.fixture(name="repo_root")
def _repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(name="node_bin")
def _node_bin() -> Callable[[str], str]:
    return node_bin


@pytest.fixture(name="py_server_argv")
def _py_server_argv() -> Callable[[], list[str]]:
    return py_server_argv


@pytest.fixture(name="fault_server_argv")
def _fault_server_argv() -> Callable[..., list[str]]:
    return fault_server_argv


@pytest.fixture(name="everything_argv")
def _everything_argv() -> Callable[[], list[str]]:
    return everything_argv


@pytest.fixture(name="filesystem_argv")
def _filesystem_argv() -> Callable[[str | os.PathLike[str]], list[str]]:
    return filesystem_argv


@pytest.fixture(name="memory_argv")
def _memory_argv() -> Callable[[], list[str]]:
    return memory_argv


@pytest.fixture(name="py_auth_server_argv")
def _py_auth_server_argv() -> Callable[..., list[str]]:
    return py_auth_server_argv


@pytest.fixture(name="device_auth_server_argv")
def _device_auth_server_argv() -> Callable[..., list[str]]:
    return device_auth_server_argv


@pytest.fixture(name="fastmcp_tasks_argv")
def _fastmcp_tasks_argv() -> Callable[..., list[str]]:
    return fastmcp_tasks_argv


@pytest.fixture(name="children_of")
def _children_of() -> Callable[..., list[int]]:
    return children_of


@pytest.fixture(name="process_group")
def _process_group() -> Callable[[int], list[int]]:
    return process_group


@pytest.fixture(name="wait_until")
def _wait_until() -> Callable[..., object]:
    return wait_until


# --- HTTP peers (tests/servers/http_peers.py) ---
#
#   http_fault_server                 a started HttpFaultServer() (legacy era, JSON answers)
#   http_fault_server_factory(**kw)   more of them, e.g. (sse=True) or (era="modern") or a
#                                     second one as a redirect target; all stopped at teardown
#   py_http_server(mode)              the official-SDK HTTP server: stateful, stateless, json,
#                                     resumable, modern or sse -> HttpPeer (.url)
#   everything_http(mode)             server-everything: "streamableHttp" (.url ends /mcp) or
#                                     "sse" (.url ends /sse) -> HttpPeer
#   py_auth_server(*flags)            tests/servers/py_auth_server.py: MCP at .url (/mcp)
#                                     behind the SDK's OAuth server at the same origin -> HttpPeer
#   device_auth_server(*flags)        tests/servers/device_auth_server.py: MCP at .url (/mcp)
#                                     behind authlib's RFC 8628 device-grant server -> HttpPeer
#   fastmcp_tasks_http(*flags)        tests/servers/fastmcp_tasks_server.py --http, the Tasks
#                                     extension peer (flags as fastmcp_tasks_argv) -> HttpPeer
# Every peer listens on 127.0.0.1 on a port the OS chose and is gone when the test ends.


@pytest.fixture(name="http_fault_server_factory")
def _http_fault_server_factory() -> Iterator[Callable[..., HttpFaultServer]]:
    servers: list[HttpFaultServer] = []

    def start(**options: Any) -> HttpFaultServer:
        server = HttpFaultServer(**options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(name="http_fault_server")
def _http_fault_server(
    http_fault_server_factory: Callable[..., HttpFaultServer],
) -> HttpFaultServer:
    return http_fault_server_factory()


@pytest.fixture(name="py_http_server")
def _py_http_server() -> Iterator[Callable[[str], HttpPeer]]:
    with contextlib.ExitStack() as stack:
        yield lambda mode: stack.enter_context(start_py_http_server(mode))


@pytest.fixture(name="everything_http")
def _everything_http() -> Iterator[Callable[..., HttpPeer]]:
    with contextlib.ExitStack() as stack:

        def start(mode: str = "streamableHttp") -> HttpPeer:
            executable = node_bin("mcp-server-everything")  # skips (fails in CI) if missing
            return stack.enter_context(start_everything_http(mode, executable))

        yield start


@pytest.fixture(name="fastmcp_tasks_http")
def _fastmcp_tasks_http() -> Iterator[Callable[..., HttpPeer]]:
    with contextlib.ExitStack() as stack:

        def start(*flags: str) -> HttpPeer:
            require_tasks_venv()
            return stack.enter_context(start_fastmcp_tasks_http(*flags))

        yield start


_AUTH_SERVER_LISTENING = re.compile(r"^listening (http://127\.0\.0\.1:\d+/mcp)$")


def _auth_server_url(line: str) -> str | None:
    match = _AUTH_SERVER_LISTENING.match(line)
    return match.group(1) if match else None


def _auth_peers(argv: Callable[..., list[str]]) -> Iterator[Callable[..., HttpPeer]]:
    """A fixture's ``start(*flags)`` for an authorization test server that prints its URL;
    every peer it started is stopped at the end."""
    peers: list[HttpPeer] = []

    def start(*flags: str) -> HttpPeer:
        peer = HttpPeer(argv(*flags), _auth_server_url, dict(os.environ))
        peers.append(peer)
        peer.wait_ready()  # the printed URL, with a deadline; PeerStartError with its output
        return peer

    yield start
    for peer in peers:
        peer.stop()


@pytest.fixture(name="py_auth_server")
def _py_auth_server() -> Iterator[Callable[..., HttpPeer]]:
    yield from _auth_peers(py_auth_server_argv)


@pytest.fixture(name="device_auth_server")
def _device_auth_server() -> Iterator[Callable[..., HttpPeer]]:
    yield from _auth_peers(device_auth_server_argv)
