"""A stdio MCP server built with the official Python SDK (mcp 2.x) that declares an extension
(SEP-2133), used as a real peer for extension negotiation.

Run: python tests/servers/py_ext_server.py   (newline-delimited JSON-RPC on stdin/stdout,
either era, as tests/servers/py_server.py)

It declares `com.example/echo-ext` with settings {"level": 2} in its capabilities (on
`initialize` and in `server/discover`), and serves:
  client_extensions() -> the extensions the client declared, as JSON text (the SDK reads them
                         from `initialize` in the legacy era, from each request's `_meta` in
                         2026-07-28)
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.extension import Extension
from mcp.server.mcpserver import Context, MCPServer


class EchoExtension(Extension):
    identifier = "com.example/echo-ext"

    def settings(self) -> dict[str, Any]:
        return {"level": 2}


server: MCPServer = MCPServer(
    "py-ext-server", version="1", log_level="WARNING", extensions=[EchoExtension()]
)


@server.tool()
def client_extensions(ctx: Context) -> str:
    """The extensions the client declared, as JSON text."""
    capabilities = ctx.client_capabilities
    declared = capabilities.extensions if capabilities is not None else None
    return json.dumps(declared or {}, sort_keys=True)


if __name__ == "__main__":
    server.run("stdio")
