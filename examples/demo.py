"""`make demo`: our client against a real MCP server, from blocking code and from asyncio.

Starts the reference server `@modelcontextprotocol/server-everything` over stdio (installed
into ./node_modules by `make`), lists its tools under namespaced names, calls a few, then does
the same again with the asyncio driver, several calls at once.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import mcp_asyncio
import mcp_sync
from mcp_core import tool_name

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "node_modules" / ".bin" / "mcp-server-everything"
SPEC = {"name": "everything", "command": str(SERVER), "args": ["stdio"]}


def blocking() -> None:
    print("== mcp_sync: a blocking client, no event loop ==")
    started = time.monotonic()
    with mcp_sync.Client(**SPEC) as client:
        status = client.status()
        print(
            f"ready in {time.monotonic() - started:.2f} s: {status.server_info} "
            f"speaking {status.protocol_version} ({status.era} era)"
        )
        tools = client.list_tools()
        print(f"{len(tools)} tools, as an agent would show them to a model:")
        for tool in tools:
            summary = (tool.description or "").split("\n")[0][:60]
            print(f"  {tool_name(SPEC['name'], tool.name):48} {summary}")
        echo = client.call_tool("echo", {"message": "hello from mcp_sync"})
        print(f"echo        -> {echo.text}")
        total = client.call_tool("get-sum", {"a": 19, "b": 23})
        print(f"get-sum     -> {total.text}")
        steps: list[str] = []
        client.call_tool(
            "trigger-long-running-operation",
            {"duration": 0.5, "steps": 5},
            progress=lambda p, total, message: steps.append(f"{p:g}/{total:g}"),
        )
        print(f"long-running operation reported progress {' '.join(steps)}")
    print(f"stopped; status: {client.status().state}\n")


async def concurrent() -> None:
    print("== mcp_asyncio: one client, many calls in flight ==")
    async with mcp_asyncio.Client(**SPEC) as client:
        started = time.monotonic()
        results = await asyncio.gather(
            *(client.call_tool("get-sum", {"a": i, "b": i}) for i in range(16))
        )
        took = time.monotonic() - started
        print(f"16 concurrent get-sum calls answered in {took * 1000:.0f} ms:")
        print("  " + ", ".join(r.text.split()[-1].rstrip(".") for r in results))
        status = client.status()
        print(f"in flight now: {status.in_flight}, queued: {status.queued}")
    print("stopped; no server process left behind.")


def main() -> int:
    if not SERVER.exists():
        print(f"{SERVER} is missing: run `make demo` (it installs the npm servers)")
        return 1
    blocking()
    asyncio.run(concurrent())
    return 0


if __name__ == "__main__":
    sys.exit(main())
