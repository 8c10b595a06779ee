"""A minimal Streamable HTTP MCP server (legacy 2025-11-25 shape), used only by benchmarks.

Run: python bench/servers/min_http.py
It binds 127.0.0.1 on a port the OS picks, prints one line to stdout,
    listening http://127.0.0.1:PORT/mcp
(the line tests/servers/http_peers.py waits for) and serves until killed.

What it speaks, on POST /mcp (HTTP/1.1, keep-alive, one asyncio Protocol per connection):
  initialize          200 application/json, a new `Mcp-Session-Id`
  a notification      202, empty body
  a response          202, empty body (we never ask the client anything)
  tools/list          the one tool, echo(text)
  tools/call echo     200 application/json {"content": [{"type": "text", "text": <text>}]}
  ping                {}
  anything else       a JSON-RPC -32601 error
Without a session id (e.g. the modern `server/discover` probe, which carries none) a request is
answered 400 with a -32000 error body, as a legacy server does; an unknown session id gets 404.
GET /mcp is 405 (no server-initiated stream), DELETE /mcp ends the session. Every answer is
JSON, never SSE, so the server spends as little time per call as a Python server can: the
point is to leave the client as the thing being measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import socket
from typing import Any

PATH = b"/mcp"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
# A request head larger than this is refused: nothing a benchmark client sends comes close.
MAX_HEAD = 64 * 1024

_REASONS = {
    200: b"OK",
    202: b"Accepted",
    400: b"Bad Request",
    404: b"Not Found",
    405: b"Method Not Allowed",
    413: b"Payload Too Large",
}


class Server:
    """The sessions (a set of ids) and the answer to each JSON-RPC message."""

    def __init__(self) -> None:
        self.sessions: set[str] = set()
        self._ids = itertools.count(1)

    def handle(self, session: str | None, message: Any) -> tuple[int, bytes, str | None]:
        """(status, body, session id to send back) for one JSON-RPC message."""
        if not isinstance(message, dict):
            return 400, _error(None, -32600, "Invalid Request"), None
        method = message.get("method")
        request_id = message.get("id")
        if method == "initialize":
            new = f"min-{next(self._ids)}"
            self.sessions.add(new)
            params = message.get("params") or {}
            asked = params.get("protocolVersion")
            version = asked if asked in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0]
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "min-http", "version": "1"},
            }
            return 200, _result(request_id, result), new
        if session is None:
            # What a legacy server says to any request outside a session, the modern probe too.
            return 400, _error(None, -32000, "Bad Request: No valid session ID provided"), None
        if session not in self.sessions:
            return 404, _error(None, -32001, "Session not found"), None
        if request_id is None or method is None:
            return 202, b"", None  # a notification, or the client's answer to a request
        if method == "tools/call":
            params = message.get("params") or {}
            if params.get("name") != "echo":
                return 200, _error(request_id, -32602, "Unknown tool"), None
            text = str((params.get("arguments") or {}).get("text", ""))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
            return 200, _result(request_id, result), None
        if method == "tools/list":
            return 200, _result(request_id, {"tools": [ECHO_TOOL]}), None
        if method == "ping":
            return 200, _result(request_id, {}), None
        return 200, _error(request_id, -32601, "Method not found"), None


def _result(request_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def _error(request_id: Any, code: int, message: str) -> bytes:
    error = {"code": code, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


def _response(status: int, body: bytes, session: str | None, keep_alive: bool) -> bytes:
    head = [b"HTTP/1.1 %d %s" % (status, _REASONS[status])]
    if body:
        head.append(b"Content-Type: application/json")
    head.append(b"Content-Length: %d" % len(body))
    if session is not None:
        head.append(b"Mcp-Session-Id: " + session.encode())
    if status == 405:
        head.append(b"Allow: POST, DELETE")
    if not keep_alive:
        head.append(b"Connection: close")
    return b"\r\n".join(head) + b"\r\n\r\n" + body


class Connection(asyncio.Protocol):
    """One keep-alive connection: parses requests as bytes arrive, answers them in order."""

    def __init__(self, server: Server) -> None:
        self._server = server
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        # asyncio sets TCP_NODELAY itself only when the listener was made with IPPROTO_TCP.
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        out: list[bytes] = []
        keep_alive = True
        # Pipelined requests are answered in order, all in one write.
        while (request := self._next_request()) is not None:
            answer, keep_alive = request
            out.append(answer)
            if not keep_alive:
                break
        if out and self._transport is not None:
            self._transport.write(b"".join(out))
            if not keep_alive:
                self._transport.close()

    def _next_request(self) -> tuple[bytes, bool] | None:
        """The answer to the next complete request in the buffer, or None when there is none."""
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD:
                return _response(413, b"", None, False), False
            return None
        lines = bytes(self._buffer[:end]).split(b"\r\n")
        method, target, version = lines[0].split(b" ", 2)
        headers: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get(b"content-length", b"0"))
        if len(self._buffer) < end + 4 + length:
            return None
        body = bytes(self._buffer[end + 4 : end + 4 + length])
        del self._buffer[: end + 4 + length]
        connection = headers.get(b"connection", b"").lower()
        keep_alive = connection != b"close" and (
            version == b"HTTP/1.1" or connection == b"keep-alive"
        )
        raw_session = headers.get(b"mcp-session-id")
        session = raw_session.decode("latin-1") if raw_session is not None else None
        if target.split(b"?", 1)[0] != PATH:
            return _response(404, b"", None, keep_alive), keep_alive
        if method == b"DELETE":
            self._server.sessions.discard(session or "")
            return _response(200, b"", None, keep_alive), keep_alive
        if method != b"POST":
            return _response(405, b"", None, keep_alive), keep_alive
        try:
            message = json.loads(body)
        except ValueError:
            error = _error(None, -32700, "Parse error")
            return _response(400, error, None, keep_alive), keep_alive
        status, answer, new_session = self._server.handle(session, message)
        return _response(status, answer, new_session, keep_alive), keep_alive


async def serve() -> None:
    server = Server()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)  # 256 clients may connect at once
    port = sock.getsockname()[1]
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(lambda: Connection(server), sock=sock)
    print(f"listening http://127.0.0.1:{port}{PATH.decode()}", flush=True)
    async with listener:
        await listener.serve_forever()


def main() -> None:
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
