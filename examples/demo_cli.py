"""`make demo`: the `mcp-client` command against several real MCP servers, stdio and HTTP.

The servers of examples/servers.json (server-everything and server-filesystem over stdio,
installed into ./node_modules by `make`) plus server-everything over Streamable HTTP, started
here on 127.0.0.1 for the length of the demo. Each step prints the command line as you would
type it from the repository root, then runs it:

    mcp-client tools  --config CONFIG          one namespaced tool table for all three servers
    mcp-client call   mcp__<server>__<tool> '{...}' --config CONFIG      routed to its server
    mcp-client status --config CONFIG
    mcp-client replay tests/recordings/py_sdk_modern_stdio.jsonl

examples/servers.json names its commands relative to the repository root: use it from there
(`mcp-client tools --config examples/servers.json`).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for the HTTP peer helper of the tests

from tests.servers.http_peers import start_everything_http  # noqa: E402

SERVERS = ROOT / "examples" / "servers.json"
RECORDING = "tests/recordings/py_sdk_modern_stdio.jsonl"
_SCRIPT = Path(sys.executable).with_name("mcp-client")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "mcp_sync._cli"]


def step(title: str, line: str, *, config: Path | None = None, expect: int = 0) -> None:
    """Print `line` (mcp-client's arguments, shell-quoted) and run it from the repo root."""
    args = shlex.split(line) + (["--config", str(config)] if config else [])
    print(f"\n== {title}")
    print("$ " + shlex.join(["mcp-client", *args]), flush=True)
    code = subprocess.run([*COMMAND, *args], cwd=ROOT, check=False).returncode
    if code != expect:
        raise SystemExit(f"mcp-client exited with {code}, expected {expect}")


def main() -> int:
    bin_dir = ROOT / "node_modules" / ".bin"
    if not (bin_dir / "mcp-server-everything").exists():
        print(f"{bin_dir} has no MCP servers: run `make demo` (it installs them)")
        return 1
    with (
        start_everything_http("streamableHttp") as http_peer,
        tempfile.TemporaryDirectory() as tmp,
    ):
        servers = json.loads(SERVERS.read_text())
        servers["mcpServers"]["everything-http"] = {"url": http_peer.url}
        config = Path(tmp) / "demo.mcp.json"
        config.write_text(json.dumps(servers, indent=2))
        print(f"{config}: examples/servers.json plus server-everything over HTTP")
        print(config.read_text())

        step("every server's tools, namespaced", "tools", config=config)
        step(
            "a call routed to server-filesystem (stdio)",
            """call mcp__filesystem__list_directory '{"path": "."}'""",
            config=config,
        )
        step(
            "a call routed to server-everything over Streamable HTTP",
            """call mcp__everything_http__get-sum '{"a": 19, "b": 23}'""",
            config=config,
        )
        step(
            "a long call that reports progress (a bar, on a terminal)",
            """call mcp__everything__trigger-long-running-operation '{"duration":2,"steps":5}'""",
            config=config,
        )
        step(
            "the raw result, for scripts",
            """call mcp__everything__get-sum '{"a": 1, "b": 2}' --json""",
            config=config,
        )
        step("each server's state", "status", config=config)
        step(
            "a tool no server has: exit code 2",
            "call mcp__everything__nope",
            config=config,
            expect=2,
        )
    step("a recorded session, replayed through the core without any server", f"replay {RECORDING}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
