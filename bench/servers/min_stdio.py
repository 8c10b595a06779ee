"""A minimal legacy-era stdio MCP server, standard library only, built to be fast.

Run: python bench/servers/min_stdio.py   (newline-delimited JSON-RPC on stdin/stdout)

It exists so that the benchmark measures clients, not the server: it reads stdin in large
chunks, answers every complete line of a chunk, and writes all the answers of a chunk with one
`os.write`, so a client with many calls in flight gets them back in batches.

Methods: `initialize` (echoes the client's protocolVersion when it is one we know, else
2025-11-25), `ping` ({}), `tools/list` (one tool), `tools/call`; notifications are ignored.
`server/discover` and any other request get -32601, as a legacy (pre-2026-07-28) server does.
Tool: echo {text} -> a text content block with `text`. Exits with status 0 on stdin EOF.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any

VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def answer(message: dict[str, Any]) -> dict[str, Any] | None:
    """The response to one message, or None for a notification (or a stray response)."""
    if "id" not in message or "method" not in message:
        return None
    method = message["method"]
    params = message.get("params") or {}
    result: dict[str, Any]
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        if params.get("name") != "echo":
            result = {"content": [{"type": "text", "text": "no such tool"}], "isError": True}
        else:
            result = {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}
    elif method == "tools/list":
        result = {"tools": [ECHO_TOOL]}
    elif method == "initialize":
        asked = params.get("protocolVersion")
        result = {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "min-stdio", "version": "1"},
        }
    elif method == "ping":
        result = {}
    else:
        return {
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {"code": -32601, "message": f"Method not found: {method}"},
        }
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def serve(fd_in: int, fd_out: int) -> None:
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    pending = b""
    while chunk := os.read(fd_in, 1 << 16):
        *lines, pending = (pending + chunk).split(b"\n")
        out: list[bytes] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                error = {"code": -32700, "message": "Parse error"}
                out.append(dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode())
                continue
            if isinstance(message, dict) and (response := answer(message)) is not None:
                out.append(dumps(response).encode())
        if out:
            out.append(b"")
            write_all(fd_out, b"\n".join(out))


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        serve(sys.stdin.fileno(), sys.stdout.fileno())
