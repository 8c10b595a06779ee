"""A library-free asyncio pipe client: the limit any asyncio MCP client can approach.

It does what a stdio MCP session needs and nothing more: spawn the server, `initialize`,
`notifications/initialized`, `tools/list`, then `tools/call` requests whose answers are matched
to futures by id, so any number can be in flight. No validation, no timeouts, no recovery:
an answer that never comes blocks its caller forever, and a dead server fails every pending
call with `ConnectionError`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

PROTOCOL_VERSION = "2025-11-25"


class RawAsyncioClient:
    def __init__(self, argv: list[str]) -> None:
        self._argv = argv
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._dumps = json.JSONEncoder(separators=(",", ":")).encode

    async def start(self) -> list[dict[str, Any]]:
        """Spawn the server, do the handshake and return its tools."""
        self._process = await asyncio.create_subprocess_exec(
            *self._argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        self._reader = asyncio.create_task(self._read())
        await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw-asyncio", "version": "1"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools: list[dict[str, Any]] = (await self.request("tools/list", {}))["tools"]
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its result; raises RuntimeError on a JSON-RPC error."""
        request_id = next(self._ids)
        future = self._pending[request_id] = asyncio.get_running_loop().create_future()
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        assert self._process is not None and self._process.stdin is not None
        await self._process.stdin.drain()
        message = await future
        if "error" in message:
            raise RuntimeError(message["error"])
        result: dict[str, Any] = message["result"]
        return result

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(self._dumps(message).encode() + b"\n")

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        pending = b""
        try:
            while chunk := await stdout.read(1 << 16):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    message = json.loads(line)
                    if "method" in message:
                        continue  # a notification or a server request: not an answer
                    future = self._pending.pop(message.get("id"), None)
                    if future is not None and not future.done():
                        future.set_result(message)
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("server closed its stdout"))

    async def close(self) -> None:
        """Close stdin, wait for the server to exit (kill it after 5 s)."""
        if self._process is None:
            return
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), 5)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
        if self._reader is not None:
            await self._reader
