"""A stdio MCP server built with the official Python SDK that lists many tools, in pages.

Run: python tests/servers/many_tools_server.py TOTAL PAGE_SIZE

tools/list answers TOTAL tools (``tool_0`` ... ``tool_<TOTAL-1>``, each taking no arguments),
PAGE_SIZE to a page, with an opaque cursor; every tool answers "ok <name>" when called. The
SDK's own tools/list never pages, so both handlers are replaced on its low-level server, as
py_server.py does for resources/list.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

TOTAL, PAGE_SIZE = int(sys.argv[1]), int(sys.argv[2])
TOOLS = [
    Tool(name=f"tool_{n}", input_schema={"type": "object", "properties": {}}) for n in range(TOTAL)
]

server: MCPServer = MCPServer("many-tools", version="1", log_level="WARNING")


async def list_tools_paged(
    ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
) -> ListToolsResult:
    cursor = params.cursor if params is not None else None
    start = 0
    if cursor is not None:
        if not cursor.startswith("from-") or not cursor[5:].isdigit():
            raise MCPError(INVALID_PARAMS, f"invalid cursor {cursor!r}")
        start = int(cursor[5:])
    end = start + PAGE_SIZE
    return ListToolsResult(
        tools=TOOLS[start:end], next_cursor=f"from-{end}" if end < TOTAL else None
    )


async def call_tool(
    ctx: ServerRequestContext[Any], params: CallToolRequestParams
) -> CallToolResult:
    if params.name not in NAMES:
        raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}")
    return CallToolResult(content=[TextContent(type="text", text=f"ok {params.name}")])


NAMES = {tool.name for tool in TOOLS}
lowlevel = server._lowlevel_server  # the SDK's own Server: the only way to page tools/list
lowlevel.add_request_handler("tools/list", PaginatedRequestParams, list_tools_paged)
lowlevel.add_request_handler("tools/call", CallToolRequestParams, call_tool)

if __name__ == "__main__":
    server.run("stdio")
