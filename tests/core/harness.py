"""A fake clock and a scripted peer for driving ``SessionMachine`` without any I/O.

The harness only feeds events and reads actions through the public API of ``mcp_core``; it
decodes what the machine writes so tests can answer by request id.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_core as core


class Harness:
    def __init__(self, era_cache: dict[str, str] | None = None, **fields: Any) -> None:
        fields.setdefault("name", "t")
        if "url" not in fields:
            fields.setdefault("command", "server")
        self.spec = core.Spec.from_mapping(fields)
        self.machine = core.SessionMachine(self.spec, era_cache=era_cache)
        self.now = 0.0
        self.actions: list[core.Action] = []  # everything since the last take()
        self.replies: dict[int, core.Reply] = {}
        self.reply_count: dict[int, int] = {}
        self._ticket = 0
        self.generations: dict[int, int] = {}  # slot -> generation of its last Spawn

    # --- feeding -----------------------------------------------------------------------

    def feed(self, event: core.Event) -> list[core.Action]:
        out = self.machine.handle(event)
        for action in out:
            if isinstance(action, core.Spawn):
                self.generations[action.slot] = action.generation
            if isinstance(action, core.Reply):
                self.reply_count[action.ticket] = self.reply_count.get(action.ticket, 0) + 1
                self.replies[action.ticket] = action
        self.actions.extend(out)
        return out

    def advance(self, seconds: float) -> list[core.Action]:
        self.now += seconds
        return self.feed(core.TimerFired(now=self.now))

    def fire_due(self) -> list[core.Action]:
        """Jump to the machine's next deadline and fire the timer there."""
        deadline = self.machine.next_deadline()
        assert deadline is not None, "no deadline armed"
        self.now = max(self.now, deadline)
        return self.feed(core.TimerFired(now=self.now))

    def ticket(self) -> int:
        self._ticket += 1
        return self._ticket

    def call(self, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> int:
        t = self.ticket()
        self.feed(core.CallTool(now=self.now, ticket=t, name=name, arguments=arguments, **kw))
        return t

    def list_tools(self, **kw: Any) -> int:
        t = self.ticket()
        self.feed(core.ListTools(now=self.now, ticket=t, **kw))
        return t

    def await_ready(self, timeout: float = 60.0, **kw: Any) -> int:
        t = self.ticket()
        self.feed(core.AwaitReady(now=self.now, ticket=t, timeout=timeout, **kw))
        return t

    def close(self) -> int:
        t = self.ticket()
        self.feed(core.Close(now=self.now, ticket=t))
        return t

    def stdout(self, data: bytes | dict[str, Any] | list[Any], slot: int = 0) -> None:
        if not isinstance(data, bytes):
            data = json.dumps(data).encode() + b"\n"
        self.feed(
            core.StdoutReceived(now=self.now, slot=slot, generation=self.gen(slot), data=data)
        )

    def answer(self, request_id: int, result: dict[str, Any], slot: int = 0) -> None:
        self.stdout({"jsonrpc": "2.0", "id": request_id, "result": result}, slot)

    def answer_error(self, request_id: int, code: int, message: str, slot: int = 0) -> None:
        self.stdout(
            {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
            slot,
        )

    def spawned(self, slot: int = 0, pid: int = 100) -> None:
        self.feed(
            core.ProcessSpawned(now=self.now, slot=slot, generation=self.gen(slot), pid=pid + slot)
        )

    def exited(self, code: int | None = 1, slot: int = 0) -> None:
        self.feed(
            core.ProcessExited(now=self.now, slot=slot, generation=self.gen(slot), returncode=code)
        )

    def gen(self, slot: int = 0) -> int:
        """The generation of the slot's current process (its last Spawn)."""
        return self.generations.get(slot, 0)

    # --- reading -----------------------------------------------------------------------

    def take(self) -> list[core.Action]:
        out, self.actions = self.actions, []
        return out

    def of(self, kind: type[Any]) -> list[Any]:
        return [a for a in self.actions if isinstance(a, kind)]

    def messages(self, slot: int | None = None) -> list[dict[str, Any]]:
        """Decoded JSON-RPC messages written to stdin since the last take()."""
        out = []
        for a in self.actions:
            if isinstance(a, core.WriteStdin) and (slot is None or a.slot == slot):
                assert a.data.endswith(b"\n") and a.data.count(b"\n") == 1
                out.append(json.loads(a.data))
        return out

    def last_request(self, method: str, slot: int | None = None) -> dict[str, Any]:
        found = [m for m in self.messages(slot) if m.get("method") == method and "id" in m]
        assert found, f"no {method} request written; actions: {self.actions}"
        return found[-1]

    def result(self, ticket: int) -> Any:
        reply = self.replies[ticket]
        assert reply.error is None, reply.error
        return reply.value

    def error(self, ticket: int) -> core.McpError:
        reply = self.replies[ticket]
        assert reply.error is not None, f"ticket {ticket} succeeded: {reply.value!r}"
        return reply.error

    # --- scripted handshakes ---------------------------------------------------------------

    def connect_legacy(self, version: str = "2025-11-25", slot: int = 0) -> None:
        """Connect, see the discover probe (if any) refused, and complete initialize."""
        if not self.of(core.Spawn):
            self.feed(core.Connect(now=self.now))
        self.spawned(slot)
        if self.spec.era == "auto" and any(
            m.get("method") == "server/discover" for m in self.messages(slot)
        ):
            probe = self.last_request("server/discover", slot)
            self.answer_error(probe["id"], -32601, "Method not found", slot)
        init = self.last_request("initialize", slot)
        self.answer(
            init["id"],
            {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake", "version": "1"},
            },
            slot,
        )
        self.take()

    def connect_modern(self, slot: int = 0) -> None:
        if not self.of(core.Spawn):
            self.feed(core.Connect(now=self.now))
        self.spawned(slot)
        probe = self.last_request("server/discover", slot)
        self.answer(
            probe["id"],
            {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2"}},
            },
            slot,
        )
        self.take()


TEXT_RESULT = {"content": [{"type": "text", "text": "hi"}]}


class HttpHarness(Harness):
    """The same fake clock, for a ``url`` spec: requests are read from ``StartHttp`` actions
    and answered with response events."""

    def __init__(self, **fields: Any) -> None:
        fields.setdefault("url", "https://mcp.example.com/mcp")
        super().__init__(**fields)
        # The listening GET that connect_http_legacy left open (None: no session, or not yet).
        self.listening: core.StartHttp | None = None

    def requests(self) -> list[core.StartHttp]:
        return [a for a in self.actions if isinstance(a, core.StartHttp)]

    def request(self, rpc_method: str | None = None, http: str = "POST") -> core.StartHttp:
        """The last request (of that JSON-RPC method) written since the last take()."""
        found = [
            r
            for r in self.requests()
            if r.method == http
            and (rpc_method is None or (r.body and json.loads(r.body).get("method") == rpc_method))
        ]
        assert found, f"no {http} {rpc_method} request in {self.actions}"
        return found[-1]

    @staticmethod
    def body(request: core.StartHttp) -> dict[str, Any]:
        assert request.body is not None
        result: dict[str, Any] = json.loads(request.body)
        return result

    @staticmethod
    def header(request: core.StartHttp, name: str) -> str | None:
        values = [v for k, v in request.headers if k.lower() == name.lower()]
        return values[0] if values else None

    def respond(
        self,
        request: core.StartHttp,
        status: int = 200,
        body: bytes | dict[str, Any] | None = None,
        headers: tuple[tuple[str, str], ...] = (),
        *,
        end: bool = True,
    ) -> None:
        if isinstance(body, dict):
            body = json.dumps(body).encode()
            headers = (("Content-Type", "application/json"), *headers)
        self.feed(
            core.HttpResponseStarted(
                now=self.now, stream=request.stream, status=status, headers=headers
            )
        )
        if body:
            self.feed(core.HttpBodyReceived(now=self.now, stream=request.stream, data=body))
        if end:
            self.feed(core.HttpResponseEnded(now=self.now, stream=request.stream))

    def result_for(self, request: core.StartHttp, result: dict[str, Any], **kw: Any) -> None:
        self.respond(
            request, 200, {"jsonrpc": "2.0", "id": self.body(request)["id"], "result": result}, **kw
        )

    def sse(self, request: core.StartHttp, *chunks: bytes, end: bool = True) -> None:
        self.feed(
            core.HttpResponseStarted(
                now=self.now,
                stream=request.stream,
                status=200,
                headers=(("content-type", "text/event-stream; charset=utf-8"),),
            )
        )
        for chunk in chunks:
            self.feed(core.HttpBodyReceived(now=self.now, stream=request.stream, data=chunk))
        if end:
            self.feed(core.HttpResponseEnded(now=self.now, stream=request.stream))

    def connect_http_legacy(self, session: str | None = "sess-1") -> None:
        """auto: the discover probe is refused with a bare 404, then initialize succeeds; with
        a session, the listening GET gets a 200 SSE head and stays open."""
        self.feed(core.Connect(now=self.now))
        if self.spec.era == "auto":
            self.respond(self.request("server/discover"), 404)
        init = self.request("initialize")
        headers = (("Mcp-Session-Id", session),) if session else ()
        self.result_for(
            init,
            {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "h"}},
            headers=headers,
        )
        self.respond(self.request("notifications/initialized"), 202)
        if session:
            # Ready once the listening GET is answered: its head comes, the stream stays open.
            self.listening = self.request(http="GET")
            self.sse(self.listening, end=False)
        self.take()

    def gets(self) -> list[core.StartHttp]:
        """The GET requests written since the last take()."""
        return [r for r in self.requests() if r.method == "GET"]

    def rpc_methods(self) -> list[str | None]:
        """The JSON-RPC method of every POST written since the last take() (None: a response)."""
        return [self.body(r).get("method") for r in self.requests() if r.method == "POST"]

    def connect_http_modern(self) -> None:
        self.feed(core.Connect(now=self.now))
        self.result_for(
            self.request("server/discover"),
            {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}},
        )
        self.take()
