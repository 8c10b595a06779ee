"""SessionMachine over Streamable HTTP under arbitrary interleavings: the stdio stateful test's
idea (``test_machine_stateful.py``) with a fake HTTP driver and a fake server.

A Hypothesis rule-based state machine plays the driver: it feeds response events only for
streams the machine started (``StartHttp``) and has not aborted, in a valid order per stream
(a head, body chunks, an end; or a failure at any point), and, after an ``AbortHttp``, maybe
the late events a real driver can still deliver. The server it plays is modern (2026-07-28),
legacy with or without a session id, or HTTP+SSE (2024-11-05), and answers each request with
a random status (200/202/400/401/403/404/405/429 with ``Retry-After``/500/502/503), headers
and a JSON or SSE body cut at random points: good answers, wrong ones, too large ones, SSE
streams cut before the answer (resumed with ``Last-Event-ID``), server requests and
notifications. The callers call, list, wait, cancel and close; the clock jumps. An autopilot
answers each request a step later as a healthy server would, except every few moves, when it
answers with the run's own list of faults: a flaky server whose sessions still get somewhere.

What is checked after every event (the theory of operation in ``_session/machine.py``):

* no exception escapes ``handle()``: every event fed is one a correct driver may feed;
* every action names a stream the machine started: ``AbortHttp`` only for a stream it still
  follows (not aborted before, not ended by the driver), ``StartHttp`` with a new number;
  nothing of the stdio transport; POST bodies are JSON objects; request ids are never reused;
  ``notifications/cancelled`` names a caller request that was sent, once; an answer to a
  server request goes out once, for a request the server made, in the session it made it in;
* each ticket is answered at most once, never after its ``CancelCall``, with a value of the
  right type; progress only for an open progress call; a call whose POST the machine aborts
  is answered (or sent again) in the same event, not left waiting for its deadline;
* ``in_flight + queued`` stays within the window and is 0 with no established connection;
  ``next_deadline()`` is ``None`` or a finite float, later than ``now`` after ``TimerFired``,
  and no later than the moment some waiting caller must be answered;
* teardown: ``Close``, the session's DELETE answered or not, timers run out: every ticket not
  cancelled was answered exactly once (Close too), the machine is closed with nothing armed;
  then a restart during which the application answers the old session's server requests
  (none of which may reach the new session), and the same Close checks once more.

A failing run prints the rules it ran and every event fed (``note``): those events alone
reproduce it. Bugs this test found are table tests at the end. ``make test`` runs 200
derandomized examples; to hunt longer:
``MCP_FUZZ_EXAMPLES=5000 .venv/bin/pytest tests/core/transport/test_machine_stateful_http.py``.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import mcp_core as core
from tests.core.harness import HttpHarness

URL = "https://mcp.example.com/mcp"
ORIGIN = "https://mcp.example.com/"
DISCOVER, INITIALIZE = "server/discover", "initialize"
CALLER_METHODS = ("tools/call", "tools/list")
TEXT_RESULT = {"content": [{"type": "text", "text": "hi"}]}
MAX_MESSAGE_BYTES = 4096  # small, so that a too large answer is cheap to send
STDIO_ACTIONS = (core.Spawn, core.WriteStdin, core.CloseStdin, core.SignalProcess)

times = st.floats(min_value=0.05, max_value=20.0)
steps = st.one_of(
    st.sampled_from([0.0, 0.01, 0.5, 1.0, 2.0, 5.0, 30.0, 120.0]),
    st.floats(min_value=0.0, max_value=60.0),
)
picks = st.integers(0, 63)
cuts = st.lists(st.integers(0, 5000), max_size=4)
STATUSES = [200, 200, 200, 200, 202, 400, 401, 403, 404, 405, 429, 500, 502, 503]
FAULTS = [200, 202, 400, 401, 403, 404, 404, 405, 429, 500, 502, 503]  # of a flaky server
RETRY_AFTER = [
    "0",
    "1",
    "3",
    " 2 ",
    "120",
    "Wed, 21 Oct 2015 07:28:00 GMT",
    "soon",
    "-1",
    "",
    "\xb2",
    "9" * 400,  # once crashes (see test_retry_after_at_the_handshake)
]
JSON_TYPES = ["application/json", "Application/JSON; charset=utf-8", None]
SSE_TYPES = ["text/event-stream", "text/event-stream; charset=utf-8", "TEXT/Event-Stream"]
SERVER_REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("ping", {}),
    ("sampling/createMessage", {"messages": [], "maxTokens": 1}),
    ("elicitation/create", {"message": "name?", "requestedSchema": {"type": "object"}}),
    ("roots/list", {}),
    ("tools/call", {}),  # not a client method at all
]


def _choose(items: list[Any], pick: int) -> Any:
    return items[pick % len(items)]


def _header(headers: tuple[tuple[str, str], ...], name: str) -> str | None:
    found = [v for k, v in headers if k.lower() == name.lower()]
    return found[0] if found else None


def answer_for(request_id: int, method: str, variant: int) -> dict[str, Any]:
    """A server's JSON-RPC answer to ``method``; ``variant`` 0 is the good one."""
    if method == DISCOVER:
        answers: list[dict[str, Any]] = [
            {"result": {"resultType": "complete", "supportedVersions": [core.MODERN_VERSION]}},
            {"error": {"code": -32601, "message": "Method not found"}},
            {
                "error": {
                    "code": -32022,
                    "message": "unsupported",
                    "data": {"supported": [core.MODERN_VERSION]},
                }
            },
            {"result": {"supportedVersions": ["2099-01-01"]}},
        ]
    elif method == INITIALIZE:
        version = core.LEGACY_VERSIONS[request_id % len(core.LEGACY_VERSIONS)]
        answers = [
            {"result": {"protocolVersion": version, "capabilities": {"tools": {}}}},
            {"error": {"code": -32603, "message": "boom"}},
            {"result": {"protocolVersion": "1999-01-01", "capabilities": {}}},  # permanent
            {"result": {"capabilities": {}}},
        ]
    elif method == "tools/call":
        answers = [
            {"result": TEXT_RESULT},
            {"result": {**TEXT_RESULT, "isError": True}},
            {"error": {"code": -32602, "message": "Unknown tool"}},
            {"result": {"content": "nope"}},
            {"result": {"resultType": "input_required", "inputRequests": {}}},
        ]
    elif method == "tools/list":
        tool = {"name": f"t{request_id}", "inputSchema": {"type": "object"}}
        answers = [
            {"result": {"tools": [tool]}},
            {"result": {"tools": [tool], "nextCursor": f"c{request_id}"}},
            {"result": {"tools": "x"}},
            {"error": {"code": -32603, "message": "boom"}},
        ]
    else:
        answers = [{"result": {}}, {"error": {"code": -32601, "message": "Method not found"}}]
    return {"jsonrpc": "2.0", "id": request_id, **answers[variant % len(answers)]}


def sse_event(message: object, event_id: str | None = None, event: str | None = None) -> bytes:
    head = (f"id: {event_id}\n" if event_id else "") + (f"event: {event}\n" if event else "")
    data = message if isinstance(message, str) else json.dumps(message)
    return f"{head}data: {data}\n\n".encode()


def split(data: bytes, points: list[int]) -> list[bytes]:
    marks = sorted({0, len(data), *(p % (len(data) + 1) for p in points)})
    return [data[a:b] for a, b in itertools.pairwise(marks) if b > a]


@dataclass(eq=False)
class Stream:
    """One request the machine started, as the driver and the server see it."""

    id: int
    method: str  # GET | POST | DELETE
    url: str
    headers: tuple[tuple[str, str], ...]
    role: str  # request | notification | response | listen | resume | sse | delete
    rid: int | None = None  # the JSON-RPC request it answers (a POST's, or a resumed one)
    rpc_method: str | None = None
    session: str | None = None  # the Mcp-Session-Id it carried
    state: str = "waiting"  # waiting (no head) | open (head fed) | done | aborted | late
    sse: bool = False
    events: int = 0
    born: int = 0
    aborted_from: str = ""


def driven(rule_body: Callable[..., None]) -> Callable[..., None]:
    """After the rule's own events, let the autopilot make its move and count the step."""

    @functools.wraps(rule_body)
    def step(self: HttpMachineStateful, **kwargs: Any) -> None:
        rule_body(self, **kwargs)
        self.pilot()
        self.step += 1

    return step


class HttpMachineStateful(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.machine: core.SessionMachine | None = None
        self.now = 0.0
        self.step = 0
        self.streams: dict[int, Stream] = {}
        self.last_stream = 0
        self.next_ticket = 0
        self.kinds: dict[int, str] = {}  # ticket -> call | progress-call | list | await | close
        self.answer_by: dict[int, float] = {}
        self.replies: set[int] = set()
        self.cancelled: set[int] = set()
        self.request_ids: dict[int, str] = {}  # every request id sent -> its method
        self.told_cancelled: set[int] = set()
        self.call_of: dict[int, int] = {}  # tools/call request id -> its ticket
        self.latest: dict[int, int] = {}  # call ticket -> the request id it was last sent as
        self.dropped: list[int] = []
        self.sent_now: set[int] = set()
        self.accepted: dict[int, int] = {}  # HTTP+SSE: request id -> the GET its answer goes on
        self.asked: dict[int | str, str | None] = {}  # server request id -> session it was in
        self.handles: list[int] = []
        self.server_ids = 0
        self.sessions = 0
        self.personality, self.autopilot = "legacy", "off"
        self.faults: list[tuple[int, int, int, str]] = []
        self.every, self.moves = 2, 0
        self.clean = True

    # --- setup ---------------------------------------------------------------------------

    @initialize(
        concurrency=st.sampled_from([None, "serialized", "stateless", "pooled"]),
        pool_size=st.integers(1, 3),
        queue_limit=st.integers(0, 3),
        era=st.sampled_from(["auto", "auto", "legacy", "modern"]),
        cached=st.sampled_from([None, None, "legacy", "modern", "sse"]),
        fail_fast=st.booleans(),
        timing=st.fixed_dictionaries(
            {
                "call_timeout": times,
                "init_timeout": times,
                "reconnect": st.floats(0.05, 3.0),
                "probe_timeout": st.floats(0.05, 3.0),
                "shutdown_grace": st.floats(0.05, 3.0),
            }
        ),
        extra=st.fixed_dictionaries(
            {"max_call_timeout": st.floats(0.0, 30.0), "max_backoff": st.floats(0.0, 10.0)}
        ),
        jitter_seed=st.integers(0, 2**16),
        personality=st.sampled_from(["legacy", "legacy", "stateless", "modern", "modern", "sse"]),
        start=st.sampled_from(["ready", "ready", "connect", "none"]),
        autopilot=st.sampled_from(["server", "server", "off"]),
        handlers=st.sets(st.sampled_from(["elicitation", "sampling", "roots"])),
        token=st.booleans(),
        faults=st.lists(
            st.tuples(
                st.sampled_from(FAULTS),
                st.integers(0, 19),
                st.integers(0, 9),
                st.sampled_from(["end", "end", "fail", "open"]),
            ),
            min_size=1,
            max_size=4,
        ),
        every=st.sampled_from([1, 2, 3, 4, 5, 1000]),
    )
    def setup(
        self,
        concurrency: str | None,
        pool_size: int,
        queue_limit: int,
        era: str,
        cached: str | None,
        fail_fast: bool,
        timing: dict[str, float],
        extra: dict[str, float],
        jitter_seed: int,
        personality: str,
        start: str,
        autopilot: str,
        handlers: set[str],
        token: bool,
        faults: list[tuple[int, int, int, str]],
        every: int,
    ) -> None:
        fields: dict[str, Any] = {
            "name": "h",
            "url": URL,
            "pool_size": pool_size,
            "queue_limit": queue_limit,
            "era": era,
            "fail_fast": fail_fast,
            "jitter_seed": jitter_seed,
            "max_message_bytes": MAX_MESSAGE_BYTES,
            **timing,
            "max_call_timeout": timing["call_timeout"] + extra["max_call_timeout"],
            "max_backoff": timing["reconnect"] + extra["max_backoff"],
        }
        if concurrency is not None:
            fields["concurrency"] = concurrency
        if token:  # a static credential: a 401 is final, no OAuth flow
            fields["headers"] = {"Authorization": "Bearer t0ken"}
        self.spec = core.Spec.from_mapping(fields)
        cache = {json.dumps(["http", URL]): cached} if cached else {}
        self.machine = core.SessionMachine(self.spec, era_cache=cache, handlers=handlers)
        self.personality, self.autopilot = personality, autopilot
        self.faults, self.every = faults, every
        if start != "none":
            self.feed(core.Connect(now=self.now))
        if start == "ready":
            self.settle()
        self.step += 1

    @property
    def m(self) -> core.SessionMachine:
        assert self.machine is not None
        return self.machine

    # --- the fake driver -------------------------------------------------------------------

    def feed(self, event: core.Event) -> list[core.Action]:
        self.clean = False
        note(f"    machine.handle({event!r})")
        out = self.m.handle(event)
        self.dropped: list[int] = []  # calls whose POST the machine aborted in this event
        self.sent_now: set[int] = set()  # calls (re)sent in this event
        for action in out:
            self.check_action(action)
        for ticket in self.dropped:
            # The stream an answer would come on is gone: the caller must have been answered
            # (or the call sent again), not left to wait for its deadline.
            assert ticket not in self.open_tickets() or ticket in self.sent_now, (
                f"call {ticket}'s stream was aborted, yet it was neither answered nor sent again"
            )
        return out

    def head(self, stream: Stream, status: int, headers: list[tuple[str, str]]) -> None:
        assert stream.state == "waiting"
        stream.state = "open"
        media = (_header(tuple(headers), "content-type") or "").split(";")[0].strip().lower()
        stream.sse = 200 <= status < 300 and media == "text/event-stream"
        self.feed(
            core.HttpResponseStarted(
                now=self.now, stream=stream.id, status=status, headers=tuple(headers)
            )
        )

    def body(self, stream: Stream, data: bytes, points: list[int] | None = None) -> None:
        for chunk in split(data, points or []):
            if stream.state != "open":
                return  # the machine aborted it meanwhile (an answer, a cap): a driver stops
            self.feed(core.HttpBodyReceived(now=self.now, stream=stream.id, data=chunk))

    def end(self, stream: Stream, fail: bool = False) -> None:
        if stream.state not in ("waiting", "open"):
            return
        stream.state = "done"
        if fail:
            self.feed(core.HttpFailed(now=self.now, stream=stream.id, reason="ReadError: reset"))
        else:
            self.feed(core.HttpResponseEnded(now=self.now, stream=stream.id))

    def fire(self) -> None:
        self.feed(core.TimerFired(now=self.now))
        deadline = self.m.next_deadline()
        assert deadline is None or deadline > self.now, (
            f"after TimerFired at {self.now} next_deadline() is {deadline}: a driver would spin"
        )

    def issue(self, kind: str, timeout: float | None = None) -> int:
        self.next_ticket += 1
        self.kinds[self.next_ticket] = kind
        if kind == "await":
            assert timeout is not None
            self.answer_by[self.next_ticket] = self.now + timeout
        elif kind != "close":
            limit = max(timeout or self.spec.call_timeout, self.spec.max_call_timeout)
            self.answer_by[self.next_ticket] = self.now + limit
        return self.next_ticket

    def open_tickets(self) -> set[int]:
        return {t for t in self.kinds if t not in self.replies and t not in self.cancelled}

    def waiting(self) -> list[Stream]:
        return [s for s in self.streams.values() if s.state == "waiting"]

    def open_streams(self) -> list[Stream]:
        return [s for s in self.streams.values() if s.state == "open"]

    def open_sse(self) -> list[Stream]:
        return [s for s in self.streams.values() if s.state == "open" and s.sse]

    def aborted(self) -> list[Stream]:
        return [s for s in self.streams.values() if s.state == "aborted"]

    # --- the fake server ---------------------------------------------------------------------

    def respond(
        self,
        stream: Stream,
        status: int,
        style: int,
        variant: int,
        points: list[int] | None = None,
        end: str = "end",
        extra: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """Answer ``stream`` with ``status``; ``style`` and ``variant`` pick the body
        (``answer_body``, ``error_body``), ``points`` where it is cut, ``end`` how it ends
        ("end", "fail" or "open": left for later rules)."""
        headers: list[tuple[str, str]] = list(extra)
        body = b""
        if status == 200 and stream.role in ("request", "resume") and stream.rid is not None:
            assert stream.rpc_method is not None
            answer = answer_for(stream.rid, stream.rpc_method, variant)
            if (
                stream.rpc_method == INITIALIZE
                and self.personality == "legacy"
                and "messages?get=" not in stream.url
            ):
                self.sessions += 1
                headers.append(("Mcp-Session-Id", f"sess-{self.sessions}"))
            body = self.answer_body(stream, answer, style % 10, headers)
            if body and style % 10 in (0, 1, 3, 7):
                self.accepted.pop(stream.rid, None)
        elif status == 200 and stream.role in ("listen", "sse"):
            headers.append(("Content-Type", SSE_TYPES[variant % 3]))
            if stream.role == "sse":
                target = f"/messages?get={stream.id}" if style % 4 else "https://evil.example/x"
                body = sse_event(target, event="endpoint")
            elif style % 3 == 0:
                body = b": welcome\nretry: 50\nid: L0\ndata:\n\n"
            if end == "end" and style % 2 == 0:
                end = "open"  # a listening stream mostly stays open
        elif status in (200, 202, 204) or stream.role in ("delete", "notification"):
            pass  # an empty answer
        else:
            body = self.error_body(stream, status, style, variant, headers)
        self.head(stream, status, headers)
        self.body(stream, body, points)
        if end == "open" and stream.state == "open":
            return
        self.end(stream, fail=end == "fail")

    def answer_body(
        self, stream: Stream, answer: dict[str, Any], style: int, headers: list[tuple[str, str]]
    ) -> bytes:
        rid = answer["id"]
        if style == 0:  # JSON (maybe without a Content-Type: read as JSON all the same)
            media = JSON_TYPES[rid % 3]
            if media is not None:
                headers.append(("Content-Type", media))
            return json.dumps(answer).encode()
        if style == 4:  # a JSON body over max_message_bytes
            headers.append(("Content-Type", "application/json"))
            return json.dumps({**answer, "pad": "x" * MAX_MESSAGE_BYTES}).encode()
        if style == 6:  # not JSON at all
            headers.append(("Content-Type", "text/html"))
            return b"<html>502 Bad Gateway</html>"
        if style == 7:  # a batch: the answer and a notification
            headers.append(("Content-Type", "application/json"))
            note_ = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            return json.dumps([answer, note_]).encode()
        if style == 8:  # nothing
            headers.append(("Content-Type", "application/json"))
            return b""
        headers.append(("Content-Type", SSE_TYPES[rid % 3]))
        prime = f"id: r{rid}.0\ndata:\n\n".encode()
        if style == 1:
            return prime + sse_event(answer, f"r{rid}.1")
        if style == 2:  # cut off before the answer: to be resumed with Last-Event-ID
            progress = self.progress(rid)
            return (
                prime + b"retry: 10\n\n" + (sse_event(progress, f"r{rid}.1") if progress else b"")
            )
        if style == 3:
            asked = self.server_request(stream, rid)
            log = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "warning", "data": {"n": rid}},
            }
            return (
                prime
                + sse_event(asked)
                + b": ping\n\n"
                + sse_event(log)
                + sse_event(answer, f"r{rid}.1")
            )
        if style == 5:  # an event over max_message_bytes
            return prime + sse_event({**answer, "pad": "x" * MAX_MESSAGE_BYTES}, f"r{rid}.1")
        return b": nothing here\n\n"  # style 9: a comment, then the end

    def error_body(
        self,
        stream: Stream,
        status: int,
        style: int,
        variant: int,
        headers: list[tuple[str, str]],
    ) -> bytes:
        if status in (429, 503) or style % 5 == 1:
            headers.append(("Retry-After", RETRY_AFTER[variant % len(RETRY_AFTER)]))
        if status in (401, 403):
            headers.append(("WWW-Authenticate", 'Bearer error="insufficient_scope"'))
        kind = style % 4
        if kind == 1 and stream.rid is not None:  # a JSON-RPC error (the modern errors)
            headers.append(("Content-Type", "application/json"))
            error = {"code": -32600, "message": f"refused with {status}"}
            if variant % 2:
                error = {
                    "code": -32022,
                    "message": "unsupported",
                    "data": {"supported": [core.MODERN_VERSION]},
                }
            return json.dumps({"jsonrpc": "2.0", "id": stream.rid, "error": error}).encode()
        if kind == 2:
            headers.append(("Content-Type", "text/plain"))
            return b"Bad Request: " + b"y" * (variant * 700)  # maybe over the cap
        return b""

    def progress(self, rid: int) -> dict[str, Any] | None:
        if self.request_ids.get(rid) != "tools/call":
            return None
        return {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": rid, "progress": 1, "total": 2},
        }

    def server_request(self, stream: Stream, pick: int) -> dict[str, Any]:
        self.server_ids += 1
        request_id: int | str = f"s{self.server_ids}" if pick % 2 else self.server_ids
        self.asked[request_id] = stream.session
        method, params = SERVER_REQUESTS[pick % len(SERVER_REQUESTS)]
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}

    def healthy(self, stream: Stream) -> None:
        """What a healthy server of this personality answers."""
        method, who = stream.rpc_method, self.personality
        to_endpoint = "messages?get=" in stream.url
        if stream.role == "request" and to_endpoint:
            self.accepted[stream.rid or 0] = int(stream.url.rsplit("=", 1)[1])
            self.respond(stream, 202, 0, 0)
        elif stream.role == "request" and method == DISCOVER:
            if who == "modern":
                self.respond(stream, 200, 0, 0)
            else:
                self.respond(stream, 404 if who != "sse" else 405, 0, 0)
        elif stream.role == "request" and method == INITIALIZE:
            if who == "sse":
                self.respond(stream, 405, 0, 0)
            elif who == "modern":
                self.respond(stream, 400, 1, 1)  # -32022 naming 2026-07-28
            else:
                self.respond(stream, 200, 0, 0)
        elif stream.role == "request":
            # JSON, SSE, SSE cut off before the answer (resumed), SSE with a server request
            styles = [0, 1] if who == "modern" else [0, 1, 0, 2, 3]
            self.respond(stream, 200, styles[self.step % len(styles)], 0)
        elif stream.role == "resume":
            self.respond(stream, 200, 1, 0)
        elif stream.role == "listen":
            self.respond(stream, 200 if who == "legacy" else 405, 0, 0, end="open")
        elif stream.role == "sse":
            self.respond(stream, 200 if who == "sse" else 405, 1, 0, end="open")
        else:
            self.respond(stream, 202 if stream.role != "delete" else 200, 0, 0)

    def push_answer(self) -> bool:
        """HTTP+SSE: one accepted request's answer on the GET its endpoint named."""
        for rid, get in sorted(self.accepted.items()):
            stream = self.streams.get(get)
            if stream is None or stream.state != "open" or not stream.sse:
                continue
            del self.accepted[rid]
            method = self.request_ids[rid]
            self.body(stream, sse_event(answer_for(rid, method, 0)))
            return True
        return False

    def settle(self, moves: int = 40) -> None:
        """Healthy server moves until nothing waits (the handshake of a fresh session)."""
        for _ in range(moves):
            if self.push_answer():
                continue
            if not self.waiting():
                return
            self.healthy(self.waiting()[0])

    def pilot(self) -> None:
        """The autopilot: one server move per step, for a stream at least a step old, so every
        state in between is seen by some rule. The move is healthy, except every ``every``-th,
        which is the next of the run's ``faults`` (status, style, variant, end): a flaky
        server whose sessions still get somewhere. Runs with it off leave every move to the
        rules."""
        if self.autopilot == "off":
            return
        if self.push_answer():
            return
        old = [s for s in self.waiting() if s.born < self.step]
        if not old:
            return
        self.moves += 1
        # Faults hit the handshake a third as often, so most runs reach a session to hurt.
        handshake = old[0].rpc_method in (DISCOVER, INITIALIZE) or old[0].role == "sse"
        if self.faults and self.moves % (self.every * (3 if handshake else 1)) == 0:
            status, style, variant, end = self.faults[self.moves // self.every % len(self.faults)]
            self.respond(old[0], status, style, variant, [variant * 37], end)
        else:
            self.healthy(old[0])

    # --- checks on every action ------------------------------------------------------------

    def check_action(self, action: core.Action) -> None:
        assert not isinstance(action, STDIO_ACTIONS), f"a stdio action over HTTP: {action}"
        if isinstance(action, core.StartHttp):
            self.check_start(action)
        elif isinstance(action, core.AbortHttp):
            stream = self.streams.get(action.stream)
            assert stream is not None, f"{action} names a stream never started"
            assert stream.state in ("waiting", "open"), f"{action} for a stream {stream.state}"
            stream.aborted_from, stream.state = stream.state, "aborted"
            if stream.rpc_method == "tools/call" and "messages?get=" not in stream.url:
                assert stream.rid is not None
                ticket = self.call_of[stream.rid]
                if self.latest.get(ticket) == stream.rid:  # not a round the call is past
                    self.dropped.append(ticket)
        elif isinstance(action, core.Reply):
            self.check_reply(action)
        elif isinstance(action, core.ProgressUpdate):
            assert self.kinds.get(action.ticket) == "progress-call", action
            assert action.ticket in self.open_tickets(), f"progress for a finished call {action}"
        elif isinstance(action, core.HandleServerRequest):
            assert action.handle not in self.handles, f"handle reused: {action}"
            self.handles.append(action.handle)

    def check_start(self, action: core.StartHttp) -> None:
        assert action.stream > self.last_stream, f"stream number reused: {action}"
        self.last_stream = action.stream
        assert action.url.startswith(ORIGIN), action
        assert (action.body is not None) == (action.method == "POST"), action
        session = _header(action.headers, "mcp-session-id")
        stream = Stream(
            id=action.stream,
            method=action.method,
            url=action.url,
            headers=action.headers,
            role="delete",
            session=session,
            born=self.step,
        )
        self.streams[action.stream] = stream
        if action.method == "DELETE":
            assert session is not None, action
            return
        if action.method == "GET":
            last = _header(action.headers, "last-event-id")
            if last is not None and last.startswith("r"):
                stream.role, stream.rid = "resume", int(last[1:].split(".")[0])
                stream.rpc_method = self.request_ids.get(stream.rid)
            else:
                stream.role = "listen" if session is not None else "sse"
            return
        assert action.body is not None
        message = json.loads(action.body)
        assert isinstance(message, dict), action
        method = message.get("method")
        if method is None:  # our answer to a server request
            stream.role = "response"
            rid = message.get("id")
            assert rid in self.asked, f"answer to a request the server did not make: {message}"
            asked_in = self.asked[rid]
            assert asked_in is None or asked_in == session, (
                f"answer to {rid!r} (asked in {asked_in}) sent in session {session}"
            )
            assert ("result" in message) != ("error" in message), message
            del self.asked[rid]
            return
        if "id" not in message:
            stream.role = "notification"
            if method == "notifications/cancelled":
                rid = message["params"]["requestId"]
                assert self.request_ids.get(rid) in CALLER_METHODS, (
                    f"cancelled {rid}, never sent as a caller request"
                )
                assert rid not in self.told_cancelled, f"cancelled {rid} twice"
                self.told_cancelled.add(rid)
            return
        rid = message["id"]
        assert isinstance(rid, int) and rid not in self.request_ids, f"id reused: {message}"
        self.request_ids[rid] = method
        stream.role, stream.rid, stream.rpc_method = "request", rid, method
        if method == "tools/call":
            ticket = message["params"]["arguments"]["t"]
            assert ticket in self.open_tickets(), f"sent a finished call: {message}"
            self.call_of[rid] = ticket
            self.latest[ticket] = rid
            self.sent_now.add(ticket)
            token = message["params"].get("_meta", {}).get("progressToken")
            assert (token == rid) == (self.kinds[ticket] == "progress-call"), message

    def check_reply(self, reply: core.Reply) -> None:
        ticket = reply.ticket
        assert ticket in self.kinds, f"reply for a ticket never issued: {reply}"
        assert ticket not in self.cancelled, f"reply after CancelCall: {reply}"
        assert ticket not in self.replies, f"second reply: {reply}"
        self.replies.add(ticket)
        kind = self.kinds[ticket]
        if kind == "close":
            assert reply.error is None and reply.value is None, reply
        elif reply.error is not None:
            assert isinstance(reply.error, core.McpError), reply
        elif kind == "await":
            assert isinstance(reply.value, core.Status) and reply.value.state == "ready", reply
        elif kind == "list":
            assert isinstance(reply.value, list), reply
        else:
            assert isinstance(reply.value, core.CallToolResult), reply

    # --- checks after every step -----------------------------------------------------------

    @invariant()
    def machine_invariants(self) -> None:
        if self.machine is None:
            return
        m = self.m
        slots = len(m.phases)
        window = m.in_flight_cap * slots + self.spec.queue_limit
        assert m.in_flight + m.queued <= window, f"{m} exceeds {window}"
        established = {p.value for p in m.phases} & {"ready", "reinitializing"}
        if not established:
            assert m.in_flight == 0 and m.queued == 0, (m, m.phases)
        deadline = m.next_deadline()
        assert deadline is None or (isinstance(deadline, float) and math.isfinite(deadline))
        status = m.status(self.now)
        assert (status.in_flight, status.queued, status.state) == (m.in_flight, m.queued, m.state)
        open_now = self.open_tickets()
        bounds = [self.answer_by[t] for t in open_now if t in self.answer_by]
        if bounds:
            assert deadline is not None and deadline <= min(bounds), (
                f"next_deadline() {deadline}, yet a caller must be answered by {min(bounds)}"
            )
        if m.state == "ready":
            waiting = [t for t in open_now if self.kinds[t] == "await"]
            assert not waiting, f"ready, yet await_ready {waiting} not answered"
        self.clean = True

    # --- caller events -----------------------------------------------------------------------

    # Connect is a no-op while a session runs or stops: only a stopped client is worth it.
    @precondition(lambda self: self.machine is not None and self.m.phase.name in ("NEW", "CLOSED"))
    @rule()
    @driven
    def connect(self) -> None:
        self.feed(core.Connect(now=self.now))

    @rule(how=st.tuples(st.none() | times, st.booleans(), st.integers(1, 3)))
    @driven
    def call_tool(self, how: tuple[float | None, bool, int]) -> None:
        timeout, progress, callers = how
        for _ in range(callers):
            ticket = self.issue("progress-call" if progress else "call", timeout)
            self.feed(
                core.CallTool(
                    now=self.now,
                    ticket=ticket,
                    name="echo",
                    arguments={"t": ticket},
                    timeout=timeout,
                    progress=progress,
                )
            )

    @rule(refresh=st.booleans(), timeout=st.none() | times)
    @driven
    def list_tools(self, refresh: bool, timeout: float | None) -> None:
        ticket = self.issue("list", timeout)
        self.feed(core.ListTools(now=self.now, ticket=ticket, refresh=refresh, timeout=timeout))

    @rule(timeout=st.just(0.0) | times, then_cancel=st.booleans(), connect=st.booleans())
    @driven
    def await_ready(self, timeout: float, then_cancel: bool, connect: bool) -> None:
        if connect:
            self.feed(core.Connect(now=self.now))
        ticket = self.issue("await", timeout)
        self.feed(core.AwaitReady(now=self.now, ticket=ticket, timeout=timeout))
        if then_cancel:
            self.cancelled.add(ticket)
            self.feed(core.CancelCall(now=self.now, ticket=ticket))

    @rule(pick=picks)
    @driven
    def cancel(self, pick: int) -> None:
        known = [t for t, kind in self.kinds.items() if kind != "close"]
        ticket = [*reversed(known), 10**9][pick % (len(known) + 1)]
        if ticket in self.kinds:
            self.cancelled.add(ticket)
        self.feed(core.CancelCall(now=self.now, ticket=ticket))

    @precondition(lambda self: list(self.kinds.values()).count("close") < 2)
    @rule(then_connect=st.booleans(), seconds=st.sampled_from([0.0, 1.0]), twice=st.booleans())
    @driven
    def close(self, then_connect: bool, seconds: float, twice: bool) -> None:
        for _ in range(2 if twice else 1):
            self.feed(core.Close(now=self.now, ticket=self.issue("close")))
        if then_connect:
            self.now += seconds
            self.feed(core.Connect(now=self.now))

    @precondition(lambda self: self.handles)
    @rule(pick=picks, ok=st.booleans())
    @driven
    def application_answers(self, pick: int, ok: bool) -> None:
        handle = _choose(self.handles, pick)
        if pick % 4:
            self.handles.remove(handle)
        answer = {"result": {"roots": []}} if ok else {"failed": "ValueError"}
        self.feed(core.ServerRequestAnswered(now=self.now, handle=handle, **answer))

    # --- what the server does --------------------------------------------------------------

    @precondition(lambda self: self.waiting())
    @rule(
        how=st.tuples(
            picks,
            st.sampled_from(STATUSES),
            st.integers(0, 19),
            st.integers(0, 9),
            cuts,
            st.sampled_from(["end", "end", "fail", "open"]),
        )
    )
    @driven
    def server_responds(self, how: tuple[int, int, int, int, list[int], str]) -> None:
        """``how = (pick, status, style, variant, cut points, end)``: any answer at all."""
        pick, status, style, variant, points, end = how
        stream = _choose(self.waiting(), pick)
        extra = (("Mcp-Session-Id", "stray"),) if style > 15 else ()
        self.respond(stream, status, style, variant, points, end, extra)

    @precondition(lambda self: self.waiting())
    @rule(pick=picks)
    @driven
    def server_answers_well(self, pick: int) -> None:
        """What a healthy server of this personality answers."""
        self.healthy(_choose(self.waiting(), pick))

    @precondition(lambda self: self.open_sse())
    @rule(
        how=st.tuples(
            picks,
            st.sampled_from(
                [
                    "answer",
                    "answer",
                    "request",
                    "progress",
                    "log",
                    "junk",
                    "big",
                    "prime",
                    "endpoint",
                    "list_changed",
                ]
            ),
            st.integers(0, 9),
            cuts,
            st.sampled_from(["more", "more", "end", "fail"]),
        )
    )
    @driven
    def server_pushes(self, how: tuple[int, str, int, list[int], str]) -> None:
        """One more event on an open event stream, then maybe its end."""
        pick, what, variant, points, then = how
        stream = _choose(self.open_sse(), pick)
        stream.events += 1
        event_id = f"r{stream.rid}.{stream.events}" if stream.rid is not None else None
        outstanding = sorted(r for r in self.request_ids if r not in self.told_cancelled)
        data: bytes
        if what == "answer":
            rid = stream.rid if stream.rid is not None else _choose(outstanding or [10**6], pick)
            method = self.request_ids.get(rid, "tools/call")
            data = sse_event(answer_for(rid, method, variant), event_id)
            self.accepted.pop(rid, None)
        elif what == "request":
            data = sse_event(self.server_request(stream, pick), event_id)
        elif what == "progress":
            rid = stream.rid if stream.rid is not None else _choose(outstanding or [10**6], pick)
            data = sse_event(self.progress(rid) or {"jsonrpc": "2.0", "method": "x"}, event_id)
        elif what == "log":
            data = sse_event(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": ["info", "nope", 3][variant % 3], "data": "x" * variant},
                },
                event_id,
            )
        elif what == "junk":
            data = [
                b"data: {nope\n\n",
                b"event: other\ndata: {}\n\n",
                b"data: 7\n\n",
                b"id: \x00\ndata: []\n\n",
                b"\xff\xfe\r\n\r\n",
                b"retry: 1\n",
            ][variant % 6]
        elif what == "big":
            data = b"data: " + b"z" * (MAX_MESSAGE_BYTES + 1) + b"\n\n"
        elif what == "prime":
            data = f"id: {event_id or 'x'}\nretry: {variant * 10}\ndata:\n\n".encode()
        elif what == "endpoint":
            data = sse_event(f"/messages?get={stream.id}", event="endpoint")
        else:
            data = sse_event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        self.body(stream, data, points)
        if then != "more":
            self.end(stream, fail=then == "fail")

    @precondition(lambda self: self.waiting() or self.open_streams())
    @rule(pick=picks, fail=st.booleans())
    @driven
    def stream_ends(self, pick: int, fail: bool) -> None:
        """A response ends now (cleanly, or broken off; before its head it can only fail)."""
        stream = _choose([*self.open_streams(), *self.waiting()], pick)
        self.end(stream, fail=fail or stream.state == "waiting")

    @precondition(lambda self: self.aborted())
    @rule(pick=picks)
    @driven
    def late_events(self, pick: int) -> None:
        """What a driver read of a stream before it learnt of its AbortHttp: dropped."""
        stream = _choose(self.aborted(), pick)
        stream.state = "late"
        if stream.aborted_from == "waiting":
            self.feed(
                core.HttpResponseStarted(
                    now=self.now,
                    stream=stream.id,
                    status=200,
                    headers=(("Content-Type", "application/json"),),
                )
            )
        if stream.rid is not None and stream.rpc_method is not None:
            answer = json.dumps(answer_for(stream.rid, stream.rpc_method, 0)).encode()
            self.feed(core.HttpBodyReceived(now=self.now, stream=stream.id, data=answer))
        self.feed(core.HttpResponseEnded(now=self.now, stream=stream.id))

    # --- time --------------------------------------------------------------------------------

    @precondition(lambda self: self.machine is not None and self.m.next_deadline() is not None)
    @rule()
    @driven
    def fire_at_next_deadline(self) -> None:
        deadline = self.m.next_deadline()
        assert deadline is not None
        self.now = max(self.now, deadline)
        self.fire()

    @rule(seconds=steps, fire=st.booleans())
    @driven
    def time_passes(self, seconds: float, fire: bool) -> None:
        self.now += seconds
        if fire:
            self.fire()

    # --- the end -------------------------------------------------------------------------------

    def teardown(self) -> None:
        if self.machine is None or not self.clean:
            return
        self.stop_everything()
        # A restart inherits nothing from the stopped session: the application's answers to
        # the old session's requests, given now, must not reach the new one.
        self.feed(core.Connect(now=self.now))
        self.settle()
        for handle in self.handles:
            self.feed(core.ServerRequestAnswered(now=self.now, handle=handle, result={}))
        self.stop_everything()

    def stop_everything(self) -> None:
        close = self.issue("close")
        self.feed(core.Close(now=self.now, ticket=close))
        # Close is answered by 3 x shutdown_grace + CLOSE_MARGIN (5 s) whatever happens.
        limit = self.now + 3 * self.spec.shutdown_grace + 6
        for n in range(100):
            deletes = [s for s in self.waiting() if s.role == "delete"]
            if deletes and n % 2:  # answered, or left to the machine's wait
                self.respond(deletes[0], 200, 0, 0)
                continue
            deadline = self.m.next_deadline()
            if deadline is None or deadline > limit:
                break
            self.now = max(self.now, deadline)
            self.fire()
        assert close in self.replies, "the Close ticket was not answered"
        unanswered = [t for t in self.kinds if t not in self.cancelled and t not in self.replies]
        assert not unanswered, f"tickets never answered: {[(t, self.kinds[t]) for t in unanswered]}"
        assert self.m.state == "closed" and self.m.in_flight == self.m.queued == 0, self.m
        assert self.m.next_deadline() is None, "a closed machine still has a timer armed"
        for stream in self.waiting() + self.open_streams():
            stream.state = "done"  # the machine aborted or finished every one of them


HttpMachineStateful.TestCase.settings = settings(
    max_examples=int(os.environ.get("MCP_FUZZ_EXAMPLES", "200")),
    stateful_step_count=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    phases=[phase for phase in Phase if phase is not Phase.explain],
)
TestHttpMachineStateful = HttpMachineStateful.TestCase


# --- bugs found, pinned as tables ------------------------------------------------------------


def _legacy_session(h: HttpHarness, session: str = "sess-1") -> core.StartHttp:
    """Connect a legacy session; return its listening GET, left open."""
    h.feed(core.Connect(now=h.now))
    init = h.request("initialize")
    result = {"protocolVersion": "2025-11-25", "capabilities": {}}
    h.result_for(init, result, headers=(("Mcp-Session-Id", session),))
    h.respond(h.request("notifications/initialized"), 202)
    listen = h.request(http="GET")
    h.sse(listen, end=False)
    h.take()
    return listen


# A Retry-After the handshake honours (429/5xx), read by _http.parse_retry_after. The last two
# were found by this fuzzing: "²" (the latin-1 byte B2 as a driver decodes it) passed
# str.isdigit() and float() raised ValueError out of handle(); 400 digits were float('inf'), a
# retry (and next_deadline()) at infinity. Fixed in _transport/http_parts.py by 3868fca.
@pytest.mark.parametrize(
    ("status", "retry_after", "at_least"),
    [
        (429, "7", 7.0),
        (503, "Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
        (429, "\xb2", 0.0),
        (503, "9" * 400, 0.0),
        (503, "9" * 12, 86400.0),
    ],
)
def test_retry_after_at_the_handshake(status: int, retry_after: str, at_least: float) -> None:
    h = HttpHarness(era="legacy", reconnect=0.5, max_backoff=1.0)
    h.feed(core.Connect(now=h.now))
    h.respond(h.request("initialize"), status, headers=(("Retry-After", retry_after),))
    deadline = h.machine.next_deadline()
    assert deadline is not None and math.isfinite(deadline), deadline
    retry_in = h.machine.status(h.now).retry_in
    assert retry_in is not None and at_least <= retry_in <= max(at_least, 1.0)


def test_answer_to_a_server_request_of_a_forgotten_session_is_dropped() -> None:
    h = HttpHarness(era="legacy")
    h.machine = core.SessionMachine(h.spec, handlers={"roots"})
    listen = _legacy_session(h)
    asked = b'data: {"jsonrpc":"2.0","id":"s1","method":"roots/list"}\n\n'
    h.feed(core.HttpBodyReceived(now=h.now, stream=listen.stream, data=asked))
    (handle,) = [a.handle for a in h.of(core.HandleServerRequest)]
    h.call("echo")
    call = h.request("tools/call")
    h.take()
    h.respond(call, 404)  # the server forgot sess-1: a new session replaces it
    init = h.request("initialize")
    result = {"protocolVersion": "2025-11-25", "capabilities": {}}
    h.result_for(init, result, headers=(("Mcp-Session-Id", "sess-2"),))
    h.respond(h.request("notifications/initialized"), 202)
    h.sse(h.request(http="GET"), end=False)
    assert h.machine.state == "ready"
    h.take()
    h.feed(core.ServerRequestAnswered(now=h.now, handle=handle, result={"roots": []}))
    answers = [r for r in h.requests() if r.body and b'"s1"' in r.body]
    assert answers == [], [(h.header(r, "Mcp-Session-Id"), r.body) for r in answers]
