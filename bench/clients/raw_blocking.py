"""A library-free blocking pipe client: the limit for sequential calls from blocking code.

One request at a time: write a line, read lines until the answer with that id arrives (other
lines, such as notifications, are skipped). No threads, no timeouts, no recovery.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from typing import Any

PROTOCOL_VERSION = "2025-11-25"


class RawBlockingClient:
    def __init__(self, argv: list[str]) -> None:
        self._argv = argv
        self._ids = itertools.count(1)
        self._process: subprocess.Popen[bytes] | None = None
        self._dumps = json.JSONEncoder(separators=(",", ":")).encode

    def start(self) -> list[dict[str, Any]]:
        """Spawn the server, do the handshake and return its tools."""
        self._process = subprocess.Popen(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw-blocking", "version": "1"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools: list[dict[str, Any]] = self.request("tools/list", {})["tools"]
        return tools

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request and block for its result; raises RuntimeError on a JSON-RPC error,
        ConnectionError when the server closes its stdout first."""
        assert self._process is not None and self._process.stdout is not None
        request_id = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while line := self._process.stdout.readline():
            message = json.loads(line)
            if "method" not in message and message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(message["error"])
                result: dict[str, Any] = message["result"]
                return result
        raise ConnectionError("server closed its stdout")

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(self._dumps(message).encode() + b"\n")
        self._process.stdin.flush()

    def close(self) -> None:
        """Close stdin, wait for the server to exit (kill it after 5 s)."""
        if self._process is None:
            return
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.close()
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()
