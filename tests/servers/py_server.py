"""A stdio MCP server built with the official Python SDK (mcp 2.x), used as a real peer.

Run: python tests/servers/py_server.py   (speaks newline-delimited JSON-RPC on stdin/stdout)

The SDK serves both eras on one stdio connection, decided by the client's first request: a
request whose params._meta carries "io.modelcontextprotocol/protocolVersion" (e.g. a
`server/discover` probe) opens a modern 2026-07-28 connection, anything else (normally
`initialize`) opens a legacy one. Once chosen, the other era is refused on that connection.

Tools:
  echo(text) -> text
  add(a, b) -> int, as structuredContent {"result": a + b}
  slow(seconds, steps) -> "done", reporting progress `steps` times over `seconds`
  fail() -> a result with isError true
  greet() -> "hello <name>", the name asked of the client (elicitation): in the 2026-07-28 era
            through an input_required round, in the legacy era as an elicitation/create request
"""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel

server: MCPServer = MCPServer("py-test-server", version="1", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers (structured output)."""
    return a + b


@server.tool()
async def slow(seconds: float, steps: int, ctx: Context) -> str:
    """Report progress `steps` times, spread over `seconds`, then return "done"."""
    for step in range(1, steps + 1):
        await anyio.sleep(seconds / steps)
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
    return "done"


@server.tool()
def fail() -> str:
    """Always fail: the SDK turns ToolError into a result with isError true and this text."""
    raise ToolError("fail tool failed on purpose")


class Name(BaseModel):
    name: str = "Ada"


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def greet(person: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greet whoever the client says it is."""
    return f"hello {person.name}"


if __name__ == "__main__":
    server.run("stdio")
