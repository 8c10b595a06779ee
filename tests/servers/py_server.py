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
  connect_account() -> the client's action on a URL-mode elicitation (legacy era, 2025-11-25);
            on "accept" the server sends notifications/elicitation/complete before answering
  needs_connection() -> always the error -32042 (URLElicitationRequiredError) naming one URL
            elicitation, id "py-connect-2"
"""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp_types import ElicitRequestURLParams
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


# The URLs carry a query, as real ones do (a state parameter): the client must pass them on
# untouched and never write them into its own error messages.
CONNECT_URL = "https://auth.example.com/connect?state=py-state-1"


@server.tool()
async def connect_account(ctx: Context) -> str:
    """Ask the user (URL mode) to connect an account; report completion if they accept."""
    result = await ctx.elicit_url("Connect your Example account", CONNECT_URL, "py-connect-1")
    if result.action == "accept":
        await ctx.request_context.session.send_elicit_complete("py-connect-1")
    return result.action


@server.tool()
def needs_connection() -> str:
    """Refuse with -32042 until the user completes a URL elicitation (never, here)."""
    raise UrlElicitationRequiredError(
        [
            ElicitRequestURLParams(
                message="Authorization is required for your Example files",
                url="https://auth.example.com/connect?state=py-state-2",
                elicitation_id="py-connect-2",
            )
        ]
    )


if __name__ == "__main__":
    server.run("stdio")
