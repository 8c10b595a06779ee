"""HTTP MCP servers built with the official Python SDK (mcp 2.x), used as real peers.

Run: python tests/servers/py_http_server.py MODE
It binds 127.0.0.1 on a free port chosen by the OS, then prints one line to stdout,
    listening http://127.0.0.1:PORT/PATH
and serves until killed (SIGTERM or SIGINT). Start it with tests/servers/http_peers.py.

Modes (the endpoint is /mcp unless said otherwise):
  stateful   Streamable HTTP with sessions (Mcp-Session-Id), request answers as SSE, GET stream
  stateless  Streamable HTTP, stateless_http: no session id, answers as SSE
  json       Streamable HTTP with sessions, JSON answers (json_response: never SSE)
  resumable  `stateful` plus an in-memory event store and `retry: 50` on the priming event, and
             the tool `reconnect` that closes its own SSE stream (resume with GET + Last-Event-ID)
  modern     = `stateless`: the SDK has no modern-only switch. Every Streamable HTTP mode is
             dual-era: a POST whose MCP-Protocol-Version header names a version outside the
             handshake versions (e.g. 2026-07-28) is served as a self-contained modern request
             (no session, request-scoped SSE or JSON, GET/DELETE 405), anything else takes the
             legacy path. Use this mode when the test is about the modern era.
  sse        the deprecated 2024-11-05 HTTP+SSE transport: GET /sse, then POST to the `endpoint`

Tools, resources, prompts, completion, logging and subscriptions: as tests/servers/py_server.py
(imported from there; tests/servers/SURFACE.md says what each mode delivers where), plus:
  ask(message)  elicits form input whose schema has a default for every field (string, integer,
                number, enum, boolean) and returns the ElicitResult as JSON text
                {"action": ..., "content": ...}; legacy sessions only (a stateless or modern
                request has no channel back to the client, so it errors)
  reconnect(delay)   `resumable` mode only: closes this call's SSE stream, waits `delay` seconds,
                     answers "resumed" (the answer is replayed on GET with Last-Event-ID)
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Literal

import anyio
import py_server  # tests/servers is sys.path[0] when this file runs as a script
import uvicorn
from mcp.server.mcpserver import Context
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage
from py_server import server
from pydantic import BaseModel, Field
from starlette.applications import Starlette

MODES = ("stateful", "stateless", "json", "resumable", "modern", "sse")


class Preferences(BaseModel):
    """The elicitation form: every field has a default a client can fill in."""

    name: str = Field(default="John Doe", description="Your name")
    age: int = Field(default=30, description="Your age")
    score: float = Field(default=95.5, description="A score")
    status: Literal["active", "inactive", "pending"] = Field(default="active")
    verified: bool = Field(default=True, description="Verified?")


@server.tool()
async def ask(message: str, ctx: Context) -> str:
    """Elicit Preferences from the client; return the client's answer as JSON text."""
    result = await ctx.elicit(message, Preferences)
    content = result.data.model_dump() if result.action == "accept" else None
    return json.dumps({"action": result.action, "content": content}, sort_keys=True)


class MemoryEventStore(EventStore):
    """Every event of every stream, in memory; ids are "<stream>:<n>" so they name the stream."""

    def __init__(self) -> None:
        self.events: list[tuple[EventId, StreamId, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = f"{stream_id}:{len(self.events)}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        ids = [event_id for event_id, _, _ in self.events]
        if last_event_id not in ids:
            return None
        start = ids.index(last_event_id)
        stream_id = self.events[start][1]
        for event_id, stream, message in self.events[start + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def add_reconnect_tool() -> None:
    @server.tool()
    async def reconnect(delay: float, ctx: Context) -> str:
        """Close this call's SSE stream (the client must resume), then answer "resumed"."""
        await ctx.close_sse_stream()
        await anyio.sleep(delay)
        return "resumed"


def build_app(mode: str) -> Starlette:
    if mode == "sse":
        return server.sse_app()
    if mode == "resumable":
        add_reconnect_tool()
        return server.streamable_http_app(event_store=MemoryEventStore(), retry_interval=50)
    # A JSON answer carries nothing but the answer: py_server sends what it would have put on
    # a call's stream (log, change_lists, the caller's own resources/updated) on the GET stream.
    py_server.CALL_STREAMS = mode != "json"
    return server.streamable_http_app(
        json_response=mode == "json", stateless_http=mode in ("stateless", "modern")
    )


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in MODES:
        sys.exit(f"usage: py_http_server.py {{{'|'.join(MODES)}}}")
    mode = sys.argv[1]
    app = build_app(mode)
    # We bind, so the OS picks a free port and nobody can take it between choice and bind.
    # A client connecting before uvicorn starts waits in the listen backlog, so the port is
    # usable from the moment we print it.
    # IPPROTO_TCP explicitly: asyncio enables TCP_NODELAY only on sockets made as TCP, and
    # without it Nagle holds each response body for the client's delayed ACK (~40 ms a call).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    path = "/sse" if mode == "sse" else "/mcp"
    print(f"listening http://127.0.0.1:{port}{path}", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
