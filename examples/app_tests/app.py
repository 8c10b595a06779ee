"""A small application of an MCP server, with tests that run without the server.

``total`` adds numbers with the ``get-sum`` tool of the reference server
``@modelcontextprotocol/server-everything``; ``shout`` echoes a text through its ``echo``
tool; ``sums_on_each`` asks every server of a group. ``test_app.py`` tests them: the first
run records each session, later runs replay it (docs/testing.md).
"""

from __future__ import annotations

import re

import mcp_asyncio
import mcp_sync

EVERYTHING = {
    "name": "everything",
    "command": "npx",
    "args": ["-y", "@modelcontextprotocol/server-everything"],
}


def total(client: mcp_sync.Client, numbers: list[int]) -> int:
    """The sum of ``numbers``, added by the server one at a time."""
    so_far = 0
    for number in numbers:
        result = client.call_tool("get-sum", {"a": so_far, "b": number}, timeout=10)
        found = re.search(r"is (-?\d+)", result.text)  # "The sum of 1 and 2 is 3."
        if result.is_error or found is None:
            raise RuntimeError(f"get-sum failed: {result.text}")
        so_far = int(found.group(1))
    return so_far


def sums_on_each(group: mcp_sync.ClientGroup, a: int, b: int) -> dict[str, str]:
    """``a + b`` asked of every server of ``group`` that has ``get-sum``, by server name."""
    return {
        server: group.call_tool(f"mcp__{server}__get-sum", {"a": a, "b": b}, timeout=10).text
        for server in group.clients
    }


async def shout(client: mcp_asyncio.Client, text: str) -> str:
    """``text`` in capitals, once the server has echoed it."""
    result = await client.call_tool("echo", {"message": text}, timeout=10)
    return result.text.removeprefix("Echo: ").upper()
