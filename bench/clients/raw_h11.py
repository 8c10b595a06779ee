"""A library-free Streamable HTTP MCP client: h11 on asyncio streams, the benchmarks' HTTP limit.

No MCP library, no HTTP client library: h11 frames HTTP/1.1, asyncio moves the bytes, `json`
does the rest. It does what any legacy-era client must do and nothing more: `initialize`
(keeping the `Mcp-Session-Id`), `notifications/initialized`, then `tools/call` POSTs, each on
a keep-alive connection taken from a pool of up to `max_connections` (opened on demand, so one
in flight uses one connection). JSON answers are parsed; an SSE answer (a server that streams
every answer) is reduced to its `data:` lines. No timeouts, no retries, no validation beyond
"the answer carries a result": a failure raises and ends the run.

    async with RawH11Client(url, max_connections=16) as client:
        result = await client.call_tool("echo", {"text": "hi"})
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import urllib.parse
from types import TracebackType
from typing import Any

import h11

PROTOCOL_VERSION = "2025-11-25"
_READ_SIZE = 65536


class RawH11Error(RuntimeError):
    """The server answered something other than a JSON-RPC result."""


class _Connection:
    """One keep-alive HTTP/1.1 connection: one request at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)

    async def request(
        self, target: bytes, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, dict[bytes, bytes], bytes]:
        conn = self.h11
        data = conn.send(h11.Request(method=b"POST", target=target, headers=headers))
        data += conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
        self.writer.write(data)
        status = 0
        response_headers: dict[bytes, bytes] = {}
        chunks: list[bytes] = []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                received = await self.reader.read(_READ_SIZE)
                conn.receive_data(received)  # b"" means EOF: h11 then raises on next_event
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
                response_headers = dict(event.headers)
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                break
            elif isinstance(event, h11.ConnectionClosed):
                raise RawH11Error("the server closed the connection mid-answer")
        conn.start_next_cycle()
        return status, response_headers, b"".join(chunks)

    def close(self) -> None:
        self.writer.close()


class RawH11Client:
    """A legacy-era Streamable HTTP session over a pool of keep-alive connections."""

    def __init__(self, url: str, *, max_connections: int = 1) -> None:
        parts = urllib.parse.urlsplit(url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._target = (parts.path or "/").encode()
        self._max = max_connections
        self._idle: list[_Connection] = []
        self._opened = 0
        self._waiters: list[asyncio.Future[_Connection]] = []
        self._ids = itertools.count(1)
        self._base_headers = [
            (b"host", f"{self._host}:{self._port}".encode()),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
        ]
        self.session_id: bytes | None = None
        self._all: list[_Connection] = []

    async def __aenter__(self) -> RawH11Client:
        await self.initialize()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for conn in self._all:
            conn.close()

    async def initialize(self) -> dict[str, Any]:
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw-h11", "version": "1"},
        }
        result, headers = await self._post("initialize", params, request=True)
        self.session_id = headers.get(b"mcp-session-id")
        version = str(result.get("protocolVersion", PROTOCOL_VERSION)).encode()
        self._base_headers.append((b"mcp-protocol-version", version))
        if self.session_id is not None:
            self._base_headers.append((b"mcp-session-id", self.session_id))
        await self._post("notifications/initialized", None, request=False)
        return result

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result, _ = await self._post("tools/call", {"name": name, "arguments": arguments})
        return result

    async def _post(
        self, method: str, params: dict[str, Any] | None, *, request: bool = True
    ) -> tuple[dict[str, Any], dict[bytes, bytes]]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if request:
            message["id"] = next(self._ids)
        if params is not None:
            message["params"] = params
        body = json.dumps(message).encode()
        headers = [*self._base_headers, (b"content-length", str(len(body)).encode())]
        conn = await self._acquire()
        try:
            status, response_headers, data = await conn.request(self._target, headers, body)
        except BaseException:
            self._discard(conn)
            raise
        self._release(conn)
        if not request:
            if status != 202:
                raise RawH11Error(f"{method}: HTTP {status}")
            return {}, response_headers
        if status != 200:
            raise RawH11Error(f"{method}: HTTP {status}: {data[:200]!r}")
        if response_headers.get(b"content-type", b"").startswith(b"text/event-stream"):
            data = _last_sse_data(data)
        answer = json.loads(data)
        if "result" not in answer:
            raise RawH11Error(f"{method}: {answer.get('error')}")
        return answer["result"], response_headers

    async def _acquire(self) -> _Connection:
        if self._idle:
            return self._idle.pop()
        if self._opened < self._max:
            self._opened += 1
            try:
                reader, writer = await asyncio.open_connection(self._host, self._port)
            except BaseException:
                self._opened -= 1
                raise
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(reader, writer)
            self._all.append(conn)
            return conn
        waiter: asyncio.Future[_Connection] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return await waiter

    def _release(self, conn: _Connection) -> None:
        while self._waiters:
            waiter = self._waiters.pop(0)
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def _discard(self, conn: _Connection) -> None:
        conn.close()
        self._opened -= 1


def _last_sse_data(stream: bytes) -> bytes:
    """The data of the last SSE event that has any (the answer comes last)."""
    events = [event for event in stream.replace(b"\r\n", b"\n").split(b"\n\n") if event.strip()]
    for event in reversed(events):
        data = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if data and any(data):
            return b"\n".join(data)
    raise RawH11Error("an SSE answer without data")
