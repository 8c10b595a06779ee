"""Start the HTTP peers on 127.0.0.1, wait until they listen, and stop them without leftovers.

Every helper is a context manager; tests use the fixtures of tests/conftest.py instead:

    start_py_http_server(mode)       tests/servers/py_http_server.py (official SDK); modes
                                     stateful, stateless, json, resumable, modern, sse
    start_everything_http(mode)      @modelcontextprotocol/server-everything, streamableHttp (URL
                                     /mcp) or sse (URL /sse, the 2024-11-05 HTTP+SSE transport)
    start_fault_server_process(...)  tests/servers/http_fault_server.py as a subprocess
    HttpFaultServer(...)             the same server in-process (itself a context manager)
    start_fastmcp_tasks_http(...)    tests/servers/fastmcp_tasks_server.py --http (the Tasks
                                     extension peer, on the interpreter of .venv-tasks)

Each yields an HttpPeer: `.url` (the MCP endpoint, or the SSE endpoint for `sse` modes),
`.proc`, `.output()` (what it printed so far, for failure messages).

Ports: no peer is given a port. Each binds port 0 on 127.0.0.1 and says which port it got:
py_http_server, http_fault_server and fastmcp_tasks_server print "listening <url>";
server-everything (which reads PORT and would bind every interface) runs with a preload module
that forces 127.0.0.1 and prints "test-peer listening <port>". Readiness is that line, awaited
with a deadline; a peer that exits or stays silent fails with its output in the message. Each
peer runs in its own process group, and stopping it signals the whole group: SIGTERM, then
SIGKILL after STOP_GRACE seconds.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

SERVERS_DIR = Path(__file__).resolve().parent
REPO_ROOT = SERVERS_DIR.parent.parent
EVERYTHING_BIN = REPO_ROOT / "node_modules" / ".bin" / "mcp-server-everything"
# The Tasks-extension peer runs on its own venv (`make tasks-venv`, part of `make test`): its
# FastMCP 4.1.4 cannot live in the project venv beside fastmcp 4.2.
TASKS_PYTHON = REPO_ROOT / ".venv-tasks" / "bin" / "python"
PY_HTTP_MODES = ("stateful", "stateless", "json", "resumable", "modern", "sse")
EVERYTHING_MODES = {"streamableHttp": "/mcp", "sse": "/sse"}
START_DEADLINE = 30.0  # a node or SDK server on a busy 2-core CI machine can take seconds
STOP_GRACE = 5.0

_LISTENING = re.compile(r"^listening (http://127\.0\.0\.1:\d+/\S*)$")
_NODE_LISTENING = re.compile(r"^test-peer listening (\d+)$")

# Loaded into server-everything before its own code: any listen(port) binds 127.0.0.1 instead
# of every interface, and reports the port the OS gave (the server logs PORT, which is 0).
_NODE_PRELOAD = """import net from "node:net";
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if (typeof port === "number" || (typeof port === "string" && /^\\d+$/.test(port))) {
    this.once("listening", () => {
      process.stderr.write(`test-peer listening ${this.address().port}\\n`);
    });
    const callbacks = args.slice(1).filter((arg) => typeof arg === "function");
    return listen.call(this, Number(port), "127.0.0.1", ...callbacks);
  }
  return listen.apply(this, args);
};
"""


class PeerStartError(RuntimeError):
    """The peer exited, or printed no readiness line before the deadline."""


class HttpPeer:
    """A server process that listens on 127.0.0.1; its stdout and stderr are drained into
    memory by a thread, so it never blocks on a full pipe."""

    def __init__(self, argv: list[str], ready: Callable[[str], str | None], env: dict[str, str]):
        self.argv = argv
        self.url = ""
        self._ready = ready
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._ready_or_eof = threading.Event()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: stop() reaches its children too
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            with self._lock:
                self._lines.append(line)
            if not self.url and (url := self._ready(line)):
                self.url = url
                self._ready_or_eof.set()
        self._ready_or_eof.set()

    def output(self) -> str:
        with self._lock:
            return "\n".join(self._lines)

    def wait_ready(self, timeout: float = START_DEADLINE) -> str:
        """The URL once the peer said it listens; PeerStartError (after stopping it) if it exits
        first or says nothing within `timeout` seconds."""
        self._ready_or_eof.wait(timeout)
        if not self.url:
            self.stop()
            raise PeerStartError(
                f"{self.argv} did not report listening within {timeout} s "
                f"(exit status {self.proc.returncode}); output:\n{self.output()[-3000:]}"
            )
        return self.url

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after STOP_GRACE s; reaps it."""
        # start_new_session made the group id the pid. The group is signalled only while the
        # leader is unreaped, so that id cannot belong to anyone else yet.
        pgid = self.proc.pid
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pgid, signal.SIGKILL)
                self.proc.wait(STOP_GRACE)
        self._reader.join(STOP_GRACE)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextlib.contextmanager
def _running(
    argv: list[str], ready: Callable[[str], str | None], env: dict[str, str] | None = None
) -> Iterator[HttpPeer]:
    peer = HttpPeer(argv, ready, env if env is not None else dict(os.environ))
    try:
        peer.wait_ready()
        yield peer
    finally:
        peer.stop()


def _listening_url(line: str) -> str | None:
    match = _LISTENING.match(line)
    return match.group(1) if match else None


def py_http_server_argv(mode: str) -> list[str]:
    if mode not in PY_HTTP_MODES:
        raise ValueError(f"mode must be one of {PY_HTTP_MODES}, not {mode!r}")
    return [sys.executable, str(SERVERS_DIR / "py_http_server.py"), mode]


def start_py_http_server(mode: str) -> contextlib.AbstractContextManager[HttpPeer]:
    """The official-SDK server in `mode`; url ends in /mcp (or /sse for mode "sse")."""
    return _running(py_http_server_argv(mode), _listening_url)


def fault_server_process_argv(*flags: str) -> list[str]:
    return [sys.executable, str(SERVERS_DIR / "http_fault_server.py"), *flags]


def start_fault_server_process(*flags: str) -> contextlib.AbstractContextManager[HttpPeer]:
    """http_fault_server.py as a subprocess (flags: --sse, --era E, --get-stream, --retry-ms N);
    control it through <origin>/_control/ (see its docstring)."""
    return _running(fault_server_process_argv(*flags), _listening_url)


def fastmcp_tasks_argv(*flags: str) -> list[str]:
    """argv of the Tasks-extension peer on the peer venv's interpreter; stdio unless `--http`
    is among the flags (others: --poll-interval-ms N, --ttl-ms N; see the server's docstring)."""
    return [str(TASKS_PYTHON), str(SERVERS_DIR / "fastmcp_tasks_server.py"), *flags]


def start_fastmcp_tasks_http(*flags: str) -> contextlib.AbstractContextManager[HttpPeer]:
    """The Tasks-extension peer over Streamable HTTP; url is http://127.0.0.1:PORT/mcp."""
    return _running(fastmcp_tasks_argv("--http", *flags), _listening_url)


def everything_http_env(base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["PORT"] = "0"
    preload = "--import=data:text/javascript," + urllib.parse.quote(_NODE_PRELOAD, safe="")
    env["NODE_OPTIONS"] = f"{env.get('NODE_OPTIONS', '')} {preload}".strip()
    return env


def start_everything_http(
    mode: str = "streamableHttp", executable: str | os.PathLike[str] = EVERYTHING_BIN
) -> contextlib.AbstractContextManager[HttpPeer]:
    """server-everything over HTTP; url is http://127.0.0.1:PORT/mcp (streamableHttp) or /sse."""
    if mode not in EVERYTHING_MODES:
        raise ValueError(f"mode must be one of {sorted(EVERYTHING_MODES)}, not {mode!r}")
    path = EVERYTHING_MODES[mode]

    def ready(line: str) -> str | None:
        match = _NODE_LISTENING.match(line)
        return f"http://127.0.0.1:{match.group(1)}{path}" if match else None

    return _running([str(executable), mode], ready, everything_http_env())
