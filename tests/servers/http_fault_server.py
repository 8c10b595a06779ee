"""A Streamable HTTP MCP server we control, for fault injection. h11 on plain sockets, one thread
per connection, 127.0.0.1 only.

In-process (tests):
    with HttpFaultServer() as server:          # started on a free port, stopped on exit
        server.url                             # http://127.0.0.1:PORT/mcp
        server.set_fault("expire_session")     # the next request carrying a session id: 404
        ...
        server.requests                        # every request received, in order
        server.wait_for_request(lambda r: r.method == "DELETE")

As a subprocess: python tests/servers/http_fault_server.py [--sse] [--era E] [--get-stream]
[--retry-ms N] [--tasks] prints "listening http://127.0.0.1:PORT/mcp" and serves until SIGTERM
or SIGINT.
It is then controlled over HTTP (these requests are not recorded):
    POST /_control/fault     {"kind": K, "method": M, "http_method": H, "times": N, "options": {}}
    POST /_control/reset     drop the faults and the recorded requests
    GET  /_control/requests  the recorded requests as JSON (body decoded as UTF-8)

The server (legacy shape, 2025-11-25 transports):
  POST initialize            a new session: Mcp-Session-Id on the answer; the version offered if
                             this server knows it, else 2025-11-25
  POST notification/response 202, no body
  POST tools/list            one tool, echo {text}
  POST tools/call echo       the text back; ping -> {}; other methods -32601 (HTTP 200)
  answers                    application/json, or with sse=True text/event-stream: a priming
                             event (id, empty data, `retry` if retry_ms is set) then the answer
                             with an id; every event is kept so GET + Last-Event-ID replays the
                             rest of its stream
  session checks             a request other than initialize without Mcp-Session-Id: 400; with
                             an unknown or expired one: 404; MCP-Protocol-Version, when sent,
                             must be a version this server knows (400 otherwise)
  GET                        405 (Allow: POST, DELETE); with Last-Event-ID of a known stream:
                             replays the events after it and ends; with get_stream=True: an SSE
                             stream carrying what push() is given (a listening stream: a GET
                             with one of its event ids resumes it, replaying what was pushed
                             after that id, then goes on carrying pushes)
  DELETE                     ends the session, 200 (delete_status changes it); recorded
era="modern" (2026-07-28 only, POST only) and era="dual" (both) add the modern shape: a request
whose MCP-Protocol-Version header is not a handshake version is self-contained: checked like the
SDK does (unknown version: 400 -32022 {supported, requested}; _meta version missing: 400
-32602; header and _meta or Mcp-Method/Mcp-Name and body disagree: 400 -32020), then
`server/discover` gets a DiscoverResult, tools/list and tools/call as above with resultType and
serverInfo _meta; an unknown method is 404 -32601. A modern-only server answers `initialize`
and any request without a modern version header with 400 -32022, and GET/DELETE with 405. A
legacy server answers a modern probe as legacy servers do: 400 -32000 (no session).

tasks=True: the server runs the tool task_forever {pollMs} as a task that stays `working`
(statusMessage "at work"; pollInterval `pollMs`, default 100) until tasks/cancel; every task is
kept (`tasks`: id -> its wire fields) and the taskId of every tasks/cancel recorded
(`cancelled_tasks`).
  legacy (2025-11-25 basic/utilities/tasks): `initialize` declares tasks {list, cancel,
    requests.tools.call}; tools/list adds task_forever with `execution.taskSupport:
    "required"`; a tools/call of it with `params.task` is answered {"task": {taskId, status,
    statusMessage, createdAt, lastUpdatedAt, ttl, pollInterval}}, one without -32601;
    tasks/get answers the task flat, tasks/cancel cancels it and answers it (-32602 once it
    has ended), tasks/list lists them, tasks/result of a working task is never answered
    (-32602 once it has ended: no task here completes)
  modern (the 2026-07-28 Tasks extension, SEP-2663): `server/discover` declares
    capabilities.extensions["io.modelcontextprotocol/tasks"]; a tools/call of task_forever
    whose _meta clientCapabilities declares the extension is answered {"resultType": "task",
    taskId, status, statusMessage, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs}, one
    without gets HTTP 400 -32021 with data.requiredCapabilities.extensions naming it;
    tasks/get answers the task (resultType "complete"), tasks/cancel {"resultType":
    "complete"}; an Mcp-Name header on tasks/* must be the taskId (400 -32020 otherwise)
An unknown taskId gets -32602 (modern: HTTP 400).

Faults: set_fault(kind, method=None, http_method="POST", times=1, **options) arms a fault for the
next `times` matching requests to the MCP path (None: every one). A request matches when its
HTTP method is `http_method` and its JSON-RPC method is `method`; with method=None, any POST
carrying a request (not a notification), or any request at all for other HTTP methods. Faults
are tried in the order they were set; the first that matches is used up. Kinds and options:
  expire_session            forget the session this request carries (only requests carrying a
                            live session id match): it and every later use of that id get 404
  status                    status=N, headers=[(name, value)], body=str|dict (default: a short
                            text); 401 adds WWW-Authenticate: Bearer resource_metadata="<origin>
                            /.well-known/oauth-protected-resource" and 429 Retry-After:
                            `retry_after` (default "1") unless `headers` names them
  unauthorized, forbidden, server_error, rate_limited     status 401, 403, 500, 429
  drop_sse                  answer 200 text/event-stream with the priming event (id, `retry:`
                            retry_ms, default 50) and close the connection mid-stream (abrupt=
                            False: end the body cleanly instead); the answer is kept, and a GET
                            with that Last-Event-ID replays it
  huge                      a 200 answer of `mib` MiB (default 20) with Content-Length: JSON, or
                            one SSE event with sse=True (default: the server's `sse`)
  stall_headers             read the request, never answer (until stop)
  stall_body                send 200 and part of a body, then nothing more (sse=True, the
                            default: the headers and a priming event; sse=False: half of a JSON
                            body of a larger Content-Length)
  redirect                  307 (or `status`) to `location`
  empty_200                 200 with an empty body (content_type, default application/json)
  disconnect                close the connection without an answer
  unsupported_version       400 {"error": {"code": -32022, "data": {"supported": `supported`
                            (default ["2026-07-28"]), "requested": ...}}}
Every request is recorded (RecordedRequest: method, path, headers, body, at, fault) before any
fault applies, so a stalled request is recorded too.

end_get_streams(abrupt=True) closes every open listening GET stream now, as a proxy's idle
timeout does: abruptly (the connection is cut mid-body) or with a clean end of the body. What
push() is given meanwhile is kept for a GET that resumes the stream with Last-Event-ID.
wait_for_get_streams(n) waits until n listening GETs are open.

More kinds, for the fault matrix (tests/drivers/test_fault_matrix.py); a body-carrying one is a
200 application/json answer, or one SSE `message` event with sse=True:
  garbage                   a body that is not JSON at all
  deep_nesting              the request's answer with a result nested `depth` (default 100000)
                            arrays deep
  invalid_utf8              the request's answer with a text that is not UTF-8
  rpc_error                 the request's answer is JSON-RPC error `code` (default -32603)
                            `message` (default "boom"), HTTP 200
  drop_sse_unresumable      200 text/event-stream, one event without an id (so nothing to resume
                            from), then the connection is closed mid-stream
  reset                     the connection is reset (RST, SO_LINGER 0) without an answer
  slow_loris                the answer trickles one byte every `interval` s (default 0.1) and
                            never ends: where="head" (default) an endless header, where="body"
                            a complete 200 text/event-stream head, then endless SSE comments
  delay                     the normal answer, `seconds` (default 0.3) late
  endless_sse_line          200 text/event-stream, then one SSE line that never ends: `line`
                            (default "data: ") and `chunk` (default 4096) bytes of "x" per
                            write, with no line end, until the client closes the connection
                            (or stop(), or `limit` bytes, default 256 MiB); the server's send
                            buffer is kept small (16 KiB asked) so that what it managed to
                            send is close to what the client read. The bytes of the body sent
                            (the SSE bytes, whole writes only, without the chunked framing) are
                            appended to `endless_sent` when the stream ends;
                            wait_for_endless_streams(n) waits for n of them. Meant for a GET
                            (http_method="GET": the listening stream)
  endless_head              a head one byte every `interval` s (default 0.1) that never ends
                            (as slow_loris where="head"), until the client closes the
                            connection, which it notices by reading (EOF or a reset), or stop();
                            the bytes sent are appended to `endless_sent` when it ends
  no_answer, drop_stream    HTTP+SSE (HttpSseFaultServer): the POST is accepted (202) and its
                            answer never comes, or the GET stream that carries it is closed
                            instead; on Streamable HTTP: 202 without a body, and a closed
                            connection
HttpSseFaultServer (below) speaks the 2024-11-05 HTTP+SSE transport on the same path with the
same faults: GET opens the stream (`endpoint` event: PATH?session=ID), POSTs there are answered
202 and their answers come on the stream; a POST without a session (a Streamable HTTP client's
first try) gets 405 and takes no fault, so a client falls back to HTTP+SSE. The body-carrying
kinds above, `huge`, no_answer and drop_stream then apply to the stream, not to the POST.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import itertools
import json
import queue
import re
import select
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import h11

HOST = "127.0.0.1"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE = "2025-11-25"
MODERN_VERSIONS = ("2026-07-28",)
PV_META = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
SERVER_INFO = {"name": "fault-http", "version": "1"}
ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text unchanged.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
TASK_TOOL = {
    "name": "task_forever",
    "description": "A task that works until it is cancelled.",
    "inputSchema": {"type": "object", "properties": {"pollMs": {"type": "integer"}}},
}
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TTL_MS = 60_000
MAX_REQUEST_BYTES = 8 * 1024 * 1024
MAX_REQUESTS_PER_CONNECTION = 100_000
STALL_LIMIT = 600.0  # a stall ends at stop() or after this long, whichever comes first
JOIN_TIMEOUT = 5.0
STATUS_KINDS = {"unauthorized": 401, "forbidden": 403, "server_error": 500, "rate_limited": 429}
FAULT_KINDS = {
    "expire_session",
    "status",
    *STATUS_KINDS,
    "drop_sse",
    "huge",
    "stall_headers",
    "stall_body",
    "redirect",
    "empty_200",
    "disconnect",
    "unsupported_version",
}
# The fault matrix's kinds (see the module docstring), kept apart from the ones above.
MATRIX_FAULT_KINDS = {
    "garbage",
    "deep_nesting",
    "invalid_utf8",
    "rpc_error",
    "drop_sse_unresumable",
    "reset",
    "slow_loris",
    "no_answer",
    "drop_stream",
    "delay",
}
FAULT_KINDS |= MATRIX_FAULT_KINDS
# Kinds for single tests, outside the matrix.
FAULT_KINDS |= {"endless_sse_line", "endless_head"}
ENDLESS_LIMIT = 256 * 1024 * 1024  # an endless line ends here, should no client ever stop it
ENDLESS_SNDBUF = 16 * 1024
_B64_SENTINEL = re.compile(r"=\?base64\?(?P<payload>[A-Za-z0-9+/]*={0,2})\?=")

Message = dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request as received. Header names are lower-case; values are str (latin-1)."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    at: float  # time.monotonic() when the request was complete
    fault: str | None  # the fault kind applied to it, if any

    def header(self, name: str) -> str | None:
        """The value of header `name` (any case), None when absent; repeated values are joined."""
        values = [value for key, value in self.headers if key == name.lower()]
        return ", ".join(values) if values else None

    @property
    def json(self) -> Any:
        """The body as JSON, None when empty or not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    @property
    def rpc_method(self) -> str | None:
        message = self.json
        return message.get("method") if isinstance(message, dict) else None


@dataclass
class Fault:
    kind: str
    method: str | None
    http_method: str
    remaining: int | None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Listening:
    """A listening GET stream of `session`: every event it was given (for a GET that resumes
    it), and the inbox of the GET that carries it now, if any."""

    session: str
    events: list[tuple[str, bytes]]
    inbox: queue.Queue[bytes | str | None] | None = None


_END = "end"  # in a listening GET's inbox: end the body cleanly


@dataclass
class _Answer:
    """What the normal (fault-free) server says to one POST."""

    status: int
    message: Message | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    modern: bool = False


class _Drop(Exception):
    """Close the connection now, without ending the response."""


class _Exchange:
    """One request/response on a connection: writes through h11 to the socket."""

    def __init__(self, sock: socket.socket, conn: h11.Connection) -> None:
        self.sock = sock
        self.conn = conn

    def send(self, event: h11.Event) -> None:
        data = self.conn.send(event)
        if data:
            self.sock.sendall(data)

    def head(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.send(h11.Response(status_code=status, headers=headers))

    def data(self, chunk: bytes) -> None:
        self.send(h11.Data(data=chunk))

    def end(self) -> None:
        self.send(h11.EndOfMessage())

    def full(self, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        if status not in (204, 304):  # these must not carry Content-Length
            headers = [*headers, ("content-length", str(len(body)))]
        self.head(status, headers)
        if body:
            self.data(body)
        self.end()

    def json(self, status: int, message: Any, headers: list[tuple[str, str]] | None = None) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        self.full(status, [("content-type", "application/json"), *(headers or [])], body)


def sse_event(
    data: str, *, event_id: str | None = None, retry: int | None = None, event: str | None = None
) -> bytes:
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if retry is not None:
        lines.append(f"retry: {retry}")
    if event is not None:
        lines.append(f"event: {event}")
    lines += [f"data: {line}" for line in data.split("\n")]
    return ("\n".join(lines) + "\n\n").encode()


def _rpc_error(request_id: Any, code: int, message: str, data: Any = None) -> Message:
    error: Message = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _decode_header_value(value: str | None) -> str | None:
    """Undo the modern `=?base64?...?=` header encoding; None for a malformed one."""
    if value is None:
        return None
    match = _B64_SENTINEL.fullmatch(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match.group("payload"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


class HttpFaultServer:
    """See the module docstring. Every public method is thread-safe."""

    def __init__(
        self,
        *,
        sse: bool = False,
        era: str = "legacy",
        get_stream: bool = False,
        retry_ms: int | None = None,
        delete_status: int = 200,
        path: str = "/mcp",
        tasks: bool = False,
    ) -> None:
        if era not in ("legacy", "modern", "dual"):
            raise ValueError(f"era must be legacy, modern or dual, not {era!r}")
        self.sse = sse
        self.era = era
        self.get_stream = get_stream
        self.retry_ms = retry_ms
        self.delete_status = delete_status
        self.path = path
        self.runs_tasks = tasks
        self.port = 0
        self._cond = threading.Condition()
        self._requests: list[RecordedRequest] = []
        self._faults: list[Fault] = []
        self._live_sessions: set[str] = set()
        self._sessions: list[str] = []
        self._streams: dict[str, list[tuple[str, bytes]]] = {}  # stream -> [(event id, event)]
        # The open listening GETs' inboxes: an SSE event to send, END to end the body, None to
        # cut the connection.
        self._push_queues: list[queue.Queue[bytes | str | None]] = []
        self._listening: dict[str, _Listening] = {}  # listening stream -> its events, its GET
        self._stream_ids = itertools.count(1)
        self._stopping = threading.Event()
        self._listener: socket.socket | None = None
        self._wake_r: socket.socket | None = None  # written by stop() to wake the accept loop
        self._wake_w: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._endless_sent: list[int] = []  # endless_*: the bytes each answer sent
        self._tasks: dict[str, Message] = {}  # tasks=True: task id -> its wire fields
        self._task_ids = itertools.count(1)
        self._cancelled_tasks: list[Any] = []  # the taskId of every tasks/cancel, in order

    # --- lifecycle ---

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def url(self) -> str:
        return self.origin + self.path

    def start(self) -> HttpFaultServer:
        self._wake_r, self._wake_w = socket.socketpair()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((HOST, 0))
        listener.listen(64)
        self._listener = listener
        self.port = listener.getsockname()[1]
        thread = threading.Thread(target=self._accept_loop, name="fault-http-accept", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop accepting, end every stall and cut every connection; waits for the threads
        (at most JOIN_TIMEOUT each: they are daemons, a stuck one cannot keep the process up)."""
        if self._stopping.is_set() or self._wake_r is None or self._wake_w is None:
            return  # stopped already, or never started
        self._stopping.set()
        self._wake_w.send(b"x")
        if self._threads:
            self._threads[0].join(JOIN_TIMEOUT)  # the accept loop: no new connection after this
        with self._cond:
            conns = list(self._conns)
            threads = list(self._threads[1:])
            inboxes = list(self._push_queues)
        for inbox in inboxes:
            inbox.put(None)  # ends that GET stream
        for sock in conns:
            _shutdown(sock)
        for thread in threads:
            thread.join(JOIN_TIMEOUT)
        if self._listener is not None:
            self._listener.close()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> HttpFaultServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- control ---

    def set_fault(
        self,
        kind: str,
        *,
        method: str | None = None,
        http_method: str = "POST",
        times: int | None = 1,
        **options: Any,
    ) -> None:
        """Arm a fault (see the module docstring); ValueError for an unknown kind."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {sorted(FAULT_KINDS)}")
        if kind == "status" and "status" not in options:
            raise ValueError("fault 'status' needs status=")
        if kind == "redirect" and "location" not in options:
            raise ValueError("fault 'redirect' needs location=")
        with self._cond:
            self._faults.append(Fault(kind, method, http_method.upper(), times, options))

    def clear_faults(self) -> None:
        with self._cond:
            self._faults.clear()

    def reset(self) -> None:
        """Drop the faults and the recorded requests (sessions stay)."""
        with self._cond:
            self._faults.clear()
            self._requests.clear()

    def push(self, message: Message) -> int:
        """Send `message` on every open GET stream (get_stream=True); returns how many. It is
        also kept on every listening stream of a live session, open or not, for a GET that
        resumes that stream."""
        data = json.dumps(message, separators=(",", ":"))
        sent = 0
        with self._cond:
            for stream, listening in self._listening.items():
                if listening.session not in self._live_sessions:
                    continue
                event_id = f"{stream}-{len(listening.events)}"
                event = sse_event(data, event_id=event_id, event="message")
                listening.events.append((event_id, event))
                if listening.inbox is not None:
                    listening.inbox.put(event)
                    sent += 1
        return sent

    def end_get_streams(self, *, abrupt: bool = True) -> int:
        """Close every open listening GET stream now (see the module docstring); how many."""
        with self._cond:
            inboxes = [s.inbox for s in self._listening.values() if s.inbox is not None]
            for listening in self._listening.values():
                listening.inbox = None  # from now on push() only keeps its messages
        for inbox in inboxes:
            inbox.put(None if abrupt else _END)
        return len(inboxes)

    def wait_for_get_streams(self, count: int, timeout: float = 10.0) -> None:
        """Wait until `count` listening GETs are open; AssertionError after `timeout` s."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._push_queues) >= count, timeout):
                raise AssertionError(f"{len(self._push_queues)} GET streams open, not {count}")

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._cond:
            return list(self._requests)

    @property
    def sessions(self) -> list[str]:
        """Every session id handed out, oldest first."""
        with self._cond:
            return list(self._sessions)

    @property
    def live_sessions(self) -> set[str]:
        with self._cond:
            return set(self._live_sessions)

    @property
    def endless_sent(self) -> list[int]:
        """endless_sse_line and endless_head: the bytes each of their answers sent (an SSE
        line: its body bytes), in the order they ended."""
        with self._cond:
            return list(self._endless_sent)

    def wait_for_endless_streams(self, count: int, timeout: float = 10.0) -> list[int]:
        """Wait until `count` endless_* answers ended; their `endless_sent`.
        AssertionError after `timeout` s (a client that never stops reading one)."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._endless_sent) >= count, timeout):
                ended = len(self._endless_sent)
                raise AssertionError(f"{ended} endless streams ended, not {count}")
            return list(self._endless_sent)

    @property
    def tasks(self) -> dict[str, Message]:
        """tasks=True: every task created, by id, as the server would report it now."""
        with self._cond:
            return {task_id: dict(wire) for task_id, wire in self._tasks.items()}

    @property
    def cancelled_tasks(self) -> list[Any]:
        """tasks=True: the taskId of every tasks/cancel received, in order."""
        with self._cond:
            return list(self._cancelled_tasks)

    @property
    def open_get_streams(self) -> int:
        with self._cond:
            return len(self._push_queues)

    def wait_for_request(
        self, predicate: Callable[[RecordedRequest], bool] = lambda _: True, timeout: float = 10.0
    ) -> RecordedRequest:
        """The first recorded request satisfying `predicate`, waiting for it to arrive;
        AssertionError after `timeout` seconds."""

        def find() -> RecordedRequest | None:
            return next((r for r in self._requests if predicate(r)), None)

        with self._cond:
            found = self._cond.wait_for(find, timeout)
        if found is None:
            raise AssertionError(f"no matching request in {timeout} s; got {self.requests!r}")
        return found

    # --- sockets ---

    def _accept_loop(self) -> None:
        assert self._listener is not None and self._wake_r is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is not self._listener or self._stopping.is_set():
                        continue
                    try:
                        sock, _addr = self._listener.accept()
                    except OSError:
                        continue
                    # Head and body go out in separate writes: without this, Nagle's algorithm
                    # and the peer's delayed ACK add 40 ms to every answer.
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    with self._cond:
                        self._conns.add(sock)
                        thread = threading.Thread(
                            target=self._serve_connection, args=(sock,), daemon=True
                        )
                        # Keep the accept thread first; forget finished connections.
                        self._threads = [
                            t for i, t in enumerate(self._threads) if i == 0 or t.is_alive()
                        ]
                        self._threads.append(thread)
                    thread.start()

    def _serve_connection(self, sock: socket.socket) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            for _ in range(MAX_REQUESTS_PER_CONNECTION):
                received = self._read_request(sock, conn)
                if received is None:
                    return
                self._handle(_Exchange(sock, conn), received)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (OSError, h11.ProtocolError, _Drop):
            pass  # the client went away, sent garbage, or a fault cut the connection
        finally:
            with self._cond:
                self._conns.discard(sock)
            _shutdown(sock)
            sock.close()

    def _read_request(
        self, sock: socket.socket, conn: h11.Connection
    ) -> tuple[h11.Request, bytes] | None:
        """The next complete request on the connection, None when the client closed it."""
        request: h11.Request | None = None
        body = bytearray()
        # Each pass consumes an event or at least one byte; the body cap bounds the loop.
        while not self._stopping.is_set():
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(sock.recv(65536))
            elif isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_REQUEST_BYTES:
                    raise _Drop
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, bytes(body)
            elif isinstance(event, h11.ConnectionClosed):
                return None
        return None

    # --- dispatch ---

    def _handle(self, exchange: _Exchange, received: tuple[h11.Request, bytes]) -> None:
        request, body = received
        method = request.method.decode("ascii", "replace").upper()
        target = request.target.decode("latin-1")
        headers = tuple(
            (name.decode("latin-1").lower(), value.decode("latin-1"))
            for name, value in request.headers
        )
        if target.startswith("/_control/"):
            self._control(exchange, method, target, body)
            return
        on_path = target.split("?", 1)[0] == self.path
        probe = RecordedRequest(method, target, headers, body, time.monotonic(), None)
        with self._cond:
            fault = self._take_fault(probe) if on_path else None
            recorded = RecordedRequest(
                method, target, headers, body, probe.at, fault.kind if fault else None
            )
            self._requests.append(recorded)
            self._cond.notify_all()
        if not on_path:
            exchange.full(404, [("content-type", "text/plain")], b"not found\n")
        elif fault is not None and fault.kind != "expire_session":
            self._apply_fault(exchange, recorded, fault)
        elif method == "POST":
            self._post(exchange, recorded)
        elif method == "GET":
            self._get(exchange, recorded)
        elif method == "DELETE":
            self._delete(exchange, recorded)
        else:
            exchange.full(405, [("allow", "POST, GET, DELETE")])

    def _take_fault(self, request: RecordedRequest) -> Fault | None:
        """The first armed fault matching `request`, used up once. Holds self._cond."""
        message = request.json
        is_request = isinstance(message, dict) and "id" in message and "method" in message
        session = request.header("mcp-session-id")
        for fault in self._faults:
            if fault.http_method != request.method:
                continue
            if fault.method is not None:
                if request.rpc_method != fault.method:
                    continue
            elif request.method == "POST" and not is_request:
                continue
            if fault.kind == "expire_session":
                if session not in self._live_sessions:
                    continue
                self._live_sessions.discard(session)
            if fault.remaining is not None:
                fault.remaining -= 1
                if fault.remaining <= 0:
                    self._faults.remove(fault)
            return fault
        return None

    # --- faults ---

    def _apply_fault(self, exchange: _Exchange, request: RecordedRequest, fault: Fault) -> None:
        options = fault.options
        message = request.json
        request_id = message.get("id") if isinstance(message, dict) else None
        kind = fault.kind
        if kind in MATRIX_FAULT_KINDS:
            self._matrix_fault(exchange, request, fault)
            return
        if kind == "status" or kind in STATUS_KINDS:
            self._status_fault(exchange, STATUS_KINDS.get(kind) or int(options["status"]), options)
        elif kind == "drop_sse":
            self._drop_sse(exchange, request, options)
        elif kind == "huge":
            sse = options.get("sse", self.sse)
            self._huge(exchange, request_id, float(options.get("mib", 20)), sse)
        elif kind == "stall_headers":
            self._stall()
            raise _Drop
        elif kind == "stall_body":
            if options.get("sse", True):
                exchange.head(200, [("content-type", "text/event-stream")])
                exchange.data(sse_event("", event_id=f"{next(self._stream_ids)}-0"))
            else:
                length = ("content-length", "1000")
                exchange.head(200, [("content-type", "application/json"), length])
                exchange.data(b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode())
            self._stall()
            raise _Drop
        elif kind == "endless_sse_line":
            self._endless_sse_line(exchange, options)
        elif kind == "endless_head":
            self._endless_head(exchange, float(options.get("interval", 0.1)))
        elif kind == "redirect":
            status = int(options.get("status", 307))
            exchange.full(status, [("location", str(options["location"]))])
        elif kind == "empty_200":
            content_type = str(options.get("content_type", "application/json"))
            exchange.full(200, [("content-type", content_type)])
        elif kind == "disconnect":
            raise _Drop
        elif kind == "unsupported_version":
            requested = request.header("mcp-protocol-version") or _meta_version(message)
            data = {"supported": list(options.get("supported", MODERN_VERSIONS))}
            if requested is not None:
                data["requested"] = requested
            error = _rpc_error(request_id, -32022, "Unsupported protocol version", data)
            exchange.json(400, error)

    def _status_fault(self, exchange: _Exchange, status: int, options: dict[str, Any]) -> None:
        headers = [(str(k), str(v)) for k, v in options.get("headers", [])]
        named = {name.lower() for name, _ in headers}
        if status == 401 and "www-authenticate" not in named:
            metadata = f"{self.origin}/.well-known/oauth-protected-resource"
            headers.append(("www-authenticate", f'Bearer resource_metadata="{metadata}"'))
        if status == 429 and "retry-after" not in named:
            headers.append(("retry-after", str(options.get("retry_after", "1"))))
        body = options.get("body")
        if isinstance(body, dict):
            exchange.json(status, body, headers)
            return
        text = body if isinstance(body, str) else f"fault: HTTP {status}\n"
        exchange.full(status, [("content-type", "text/plain"), *headers], text.encode())

    def _drop_sse(
        self, exchange: _Exchange, request: RecordedRequest, options: dict[str, Any]
    ) -> None:
        answer = self._answer_post(request)
        stream = str(next(self._stream_ids))
        retry = int(options.get("retry_ms", 50))
        priming = sse_event("", event_id=f"{stream}-0", retry=retry)
        with self._cond:
            self._streams[stream] = [(f"{stream}-0", priming)]
            if answer.message is not None:
                data = json.dumps(answer.message, separators=(",", ":"))
                kept = sse_event(data, event_id=f"{stream}-1", event="message")
                self._streams[stream].append((f"{stream}-1", kept))
        exchange.head(200, [("content-type", "text/event-stream"), *answer.headers])
        exchange.data(priming)
        if options.get("abrupt", True):
            raise _Drop
        exchange.end()

    def _huge(self, exchange: _Exchange, request_id: Any, mib: float, sse: bool) -> None:
        head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
        head += b',"result":{"content":[{"type":"text","text":"'
        tail = b'"}]}}'
        size = int(mib * 1024 * 1024)
        if sse:
            head, tail = b"event: message\ndata: " + head, tail + b"\n\n"
        content_type = "text/event-stream" if sse else "application/json"
        length = len(head) + size + len(tail)
        exchange.head(200, [("content-type", content_type), ("content-length", str(length))])
        exchange.data(head)
        chunk = b"x" * (1024 * 1024)
        for start in range(0, size, len(chunk)):  # the client may hang up: sendall raises
            exchange.data(chunk[: size - start])
        exchange.data(tail)
        exchange.end()

    def _stall(self) -> None:
        self._stopping.wait(STALL_LIMIT)

    def _endless_head(self, exchange: _Exchange, interval: float) -> None:
        """A head one byte every `interval` s, never finished, until the client hangs up (its
        EOF or reset is read) or stop(); the bytes sent are kept in `endless_sent`."""
        sent = 0
        poller = select.poll()
        poller.register(exchange.sock, select.POLLIN)
        head = itertools.chain(b"HTTP/1.1 200 OK\r\nx-loris: ", itertools.repeat(ord("a")))
        try:
            for byte in head:
                if self._stopping.is_set() or poller.poll(int(interval * 1000)):
                    break  # readable: the client's EOF or reset (it says nothing else now)
                exchange.sock.sendall(bytes([byte]))
                sent += 1
        finally:
            with self._cond:
                self._endless_sent.append(sent)
                self._cond.notify_all()
        raise _Drop

    def _endless_sse_line(self, exchange: _Exchange, options: dict[str, Any]) -> None:
        """One SSE line that never ends, until the client hangs up (a failed send), stop()
        or `limit` bytes; the bytes sent are kept in `endless_sent`."""
        exchange.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, ENDLESS_SNDBUF)
        chunk = b"x" * int(options.get("chunk", 4096))
        limit = int(options.get("limit", ENDLESS_LIMIT))
        sent = 0
        try:
            exchange.head(200, [("content-type", "text/event-stream")])
            line = str(options.get("line", "data: ")).encode()
            exchange.data(line)
            sent += len(line)
            while sent < limit and not self._stopping.is_set():
                exchange.data(chunk)
                sent += len(chunk)
        finally:
            with self._cond:
                self._endless_sent.append(sent)
                self._cond.notify_all()
        raise _Drop

    # --- faults of the fault matrix ---

    def _matrix_fault(self, exchange: _Exchange, request: RecordedRequest, fault: Fault) -> None:
        kind, options = fault.kind, fault.options
        message = request.json
        request_id = message.get("id") if isinstance(message, dict) else None
        if kind in ("garbage", "deep_nesting", "invalid_utf8", "rpc_error"):
            payload = _matrix_payload(kind, request_id, options)
            if options.get("sse", False):
                event = b"event: message\ndata: " + payload + b"\n\n"
                exchange.full(200, [("content-type", "text/event-stream")], event)
            else:
                exchange.full(200, [("content-type", "application/json")], payload)
        elif kind == "drop_sse_unresumable":
            exchange.head(200, [("content-type", "text/event-stream")])
            exchange.data(b": no id, so nothing to resume from\n\nevent: ping\ndata: \n\n")
            raise _Drop
        elif kind in ("reset", "drop_stream"):
            if kind == "reset":
                linger = struct.pack("ii", 1, 0)  # close() then sends RST, not FIN
                exchange.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                exchange.sock.close()
            raise _Drop
        elif kind == "slow_loris":
            self._slow_loris(exchange, options)
        elif kind == "no_answer":
            exchange.full(202, [])
        elif kind == "delay":
            if self._stopping.wait(float(options.get("seconds", 0.3))):
                raise _Drop
            self._post(exchange, request)

    def _slow_loris(self, exchange: _Exchange, options: dict[str, Any]) -> None:
        """One byte every ``interval`` seconds, never the end; until stop() or the client
        leaves (a failed send)."""
        interval = float(options.get("interval", 0.1))
        if options.get("where", "head") == "body":
            start = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
            endless = b": still here\n"
        else:
            start, endless = b"HTTP/1.1 200 OK\r\nx-loris: ", b"a"
        deadline = time.monotonic() + STALL_LIMIT
        for byte in itertools.chain(start, itertools.cycle(endless)):
            if self._stopping.wait(interval) or time.monotonic() > deadline:
                break
            exchange.sock.sendall(bytes([byte]))
        raise _Drop

    # --- POST ---

    def _post(self, exchange: _Exchange, request: RecordedRequest) -> None:
        answer = self._answer_post(request)
        if answer.message is None:
            exchange.full(answer.status, answer.headers)
        elif answer.status != 200 or not self.sse or "id" not in answer.message:
            exchange.json(answer.status, answer.message, answer.headers)
        elif answer.modern:
            # Modern SSE is request-scoped and not resumable: no ids, no priming event.
            exchange.head(200, [("content-type", "text/event-stream"), *answer.headers])
            exchange.data(sse_event(json.dumps(answer.message), event="message"))
            exchange.end()
        else:
            stream = str(next(self._stream_ids))
            priming = sse_event("", event_id=f"{stream}-0", retry=self.retry_ms)
            reply = sse_event(json.dumps(answer.message), event_id=f"{stream}-1", event="message")
            with self._cond:
                self._streams[stream] = [(f"{stream}-0", priming), (f"{stream}-1", reply)]
            exchange.head(200, [("content-type", "text/event-stream"), *answer.headers])
            exchange.data(priming)
            exchange.data(reply)
            exchange.end()

    def _answer_post(self, request: RecordedRequest) -> _Answer:
        """The fault-free answer to a POST."""
        try:
            message = json.loads(request.body)
        except ValueError:
            return _Answer(400, _rpc_error(None, -32700, "Parse error"))
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return _Answer(400, _rpc_error(None, -32600, "Body must be one JSON-RPC message"))
        version = request.header("mcp-protocol-version")
        modern_header = version is not None and version not in HANDSHAKE_VERSIONS
        if self.era != "legacy" and modern_header:
            return self._answer_modern(request, message, version or "")
        if self.era == "modern":
            requested = version or (message.get("params") or {}).get("protocolVersion")
            data: Message = {"supported": list(MODERN_VERSIONS)}
            if requested is not None:
                data["requested"] = requested
            return _Answer(
                400, _rpc_error(message.get("id"), -32022, "Unsupported protocol version", data)
            )
        return self._answer_legacy(request, message, version)

    def _answer_legacy(
        self, request: RecordedRequest, message: Message, version: str | None
    ) -> _Answer:
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            offered = params.get("protocolVersion")
            chosen = offered if offered in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
            session = uuid.uuid4().hex
            with self._cond:
                self._live_sessions.add(session)
                self._sessions.append(session)
            capabilities: Message = {"tools": {}}
            if self.runs_tasks:
                tool_calls: dict[str, Any] = {"tools": {"call": {}}}
                capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": tool_calls}
            result = {
                "protocolVersion": chosen,
                "capabilities": capabilities,
                "serverInfo": SERVER_INFO,
            }
            return _Answer(
                200,
                {"jsonrpc": "2.0", "id": request_id, "result": result},
                [("mcp-session-id", session)],
            )
        session = request.header("mcp-session-id")
        if session is None:
            return _Answer(
                400, _rpc_error(None, -32000, "Bad Request: No valid session ID provided")
            )
        with self._cond:
            live = session in self._live_sessions
        if not live:
            return _Answer(404, _rpc_error(None, -32001, "Session not found"))
        if version is not None and version not in HANDSHAKE_VERSIONS:
            message_text = f"Bad Request: Unsupported protocol version: {version}"
            return _Answer(400, _rpc_error(None, -32000, message_text))
        if method is None or request_id is None:
            return _Answer(202)  # a notification, or the client's answer to a server request
        if self._is_task_request(method, params):
            return self._task_answer(request, message, modern=False)
        result = self._result(method, params)
        if isinstance(result, int):
            return _Answer(200, _rpc_error(request_id, result, f"Method not found: {method}"))
        return _Answer(200, {"jsonrpc": "2.0", "id": request_id, "result": result})

    def _answer_modern(self, request: RecordedRequest, message: Message, version: str) -> _Answer:
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params") or {}

        def reject(status: int, code: int, text: str, data: Any = None) -> _Answer:
            return _Answer(status, _rpc_error(request_id, code, text, data), modern=True)

        if version not in MODERN_VERSIONS:
            data = {"supported": list(MODERN_VERSIONS), "requested": version}
            return reject(400, -32022, "Unsupported protocol version", data)
        if request_id is None:
            return _Answer(202, modern=True)
        meta_version = _meta_version(message)
        if meta_version is None:
            return reject(400, -32602, f"Missing _meta {PV_META}")
        if meta_version != version:
            return reject(400, -32020, "MCP-Protocol-Version header does not match _meta")
        if request.header("mcp-method") != method:
            return reject(400, -32020, "Mcp-Method header does not match the body")
        if method == "tools/call":
            name = _decode_header_value(request.header("mcp-name"))
            if name != params.get("name"):
                return reject(400, -32020, "Mcp-Name header does not match the body")
        if self._is_task_request(method, params):
            return self._task_answer(request, message, modern=True)
        result = self._result(method, params, modern=True)
        if isinstance(result, int):
            return reject(404, result, f"Method not found: {method}")
        result["resultType"] = "complete"
        result["_meta"] = {"io.modelcontextprotocol/serverInfo": SERVER_INFO}
        return _Answer(200, {"jsonrpc": "2.0", "id": request_id, "result": result}, modern=True)

    def _result(self, method: str, params: Message, *, modern: bool = False) -> Message | int:
        """The result of a request both eras share, or a JSON-RPC error code."""
        if method == "tools/list":
            if not self.runs_tasks:
                return {"tools": [ECHO_TOOL]}
            if modern:  # 2026-07-28 has no execution.taskSupport
                return {"tools": [ECHO_TOOL, TASK_TOOL]}
            return {"tools": [ECHO_TOOL, {**TASK_TOOL, "execution": {"taskSupport": "required"}}]}
        if method == "tools/call":
            if params.get("name") != "echo":
                return -32602
            text = str((params.get("arguments") or {}).get("text", ""))
            return {"content": [{"type": "text", "text": text}], "isError": False}
        if method == "ping" and not modern:
            return {}
        if method == "server/discover" and modern:
            capabilities: Message = {"tools": {}}
            if self.runs_tasks:
                capabilities["extensions"] = {TASKS_EXTENSION: {}}
            return {
                "supportedVersions": list(MODERN_VERSIONS),
                "capabilities": capabilities,
                "ttlMs": 0,
                "cacheScope": "private",
            }
        return -32601

    # --- tasks (tasks=True; see the module docstring) ---

    def _is_task_request(self, method: object, params: Message) -> bool:
        if not self.runs_tasks or not isinstance(method, str):
            return False
        return method.startswith("tasks/") or (
            method == "tools/call" and params.get("name") == TASK_TOOL["name"]
        )

    def _task_answer(self, request: RecordedRequest, message: Message, *, modern: bool) -> _Answer:
        """The answer to a call of the task tool, or to a tasks/* request."""
        request_id, method = message.get("id"), str(message.get("method"))
        params = message.get("params") or {}

        def error(code: int, text: str, data: Any = None) -> _Answer:
            status = 400 if modern else 200
            return _Answer(status, _rpc_error(request_id, code, text, data), modern=modern)

        def result(value: Message) -> _Answer:
            if modern:
                value = {
                    "resultType": "complete",
                    **value,
                    "_meta": {SERVER_INFO_META: SERVER_INFO},
                }
            return _Answer(
                200, {"jsonrpc": "2.0", "id": request_id, "result": value}, modern=modern
            )

        if method == "tools/call":
            return self._start_task(params, modern, error, result)
        task_id = params.get("taskId")
        if method == "tasks/list" and not modern:
            with self._cond:
                return result({"tasks": [dict(wire) for wire in self._tasks.values()]})
        if method not in ("tasks/get", "tasks/cancel") and (modern or method != "tasks/result"):
            unknown = _rpc_error(request_id, -32601, f"Method not found: {method}")
            return _Answer(404 if modern else 200, unknown, modern=modern)
        named = request.header("mcp-name")
        if modern and named is not None and _decode_header_value(named) != task_id:
            return error(-32020, "Mcp-Name header does not match the body's taskId")
        with self._cond:
            if method == "tasks/cancel":
                self._cancelled_tasks.append(task_id)
                self._cond.notify_all()
            wire = self._tasks.get(task_id) if isinstance(task_id, str) else None
            if wire is None:
                return error(-32602, f"Task {task_id!r} not found")
            working = wire["status"] == "working"
            if method == "tasks/cancel" and working:
                wire["status"], wire["lastUpdatedAt"] = "cancelled", _iso_now()
            current = dict(wire)
        if method == "tasks/get":
            return result(current)
        if method == "tasks/result" or (not working and not modern):
            if working:  # held until the task ends, which is never
                self._stall()
                raise _Drop
            return error(-32602, f"Task {task_id!r} has already ended")
        return result({} if modern else current)  # tasks/cancel

    def _start_task(
        self,
        params: Message,
        modern: bool,
        error: Callable[..., _Answer],
        result: Callable[[Message], _Answer],
    ) -> _Answer:
        if modern:
            meta = params.get("_meta") or {}
            declared = meta.get(CAPABILITIES_META) or {}
            if TASKS_EXTENSION not in (declared.get("extensions") or {}):
                required: dict[str, Any] = {
                    "requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
                }
                text = f"Tool 'task_forever' requires the tasks extension ({TASKS_EXTENSION})"
                return error(-32021, text, required)
        elif not isinstance(params.get("task"), dict):
            return error(-32601, "Tool 'task_forever' requires a task")
        poll = int((params.get("arguments") or {}).get("pollMs", 100))
        now = _iso_now()
        with self._cond:
            task_id = f"task-{next(self._task_ids)}"
            wire: Message = {"taskId": task_id, "status": "working", "statusMessage": "at work"}
            wire |= {"createdAt": now, "lastUpdatedAt": now}
            if modern:
                wire |= {"ttlMs": TASK_TTL_MS, "pollIntervalMs": poll}
            else:
                wire |= {"ttl": TASK_TTL_MS, "pollInterval": poll}
            self._tasks[task_id] = wire
            self._cond.notify_all()
            created = dict(wire)
        return result({**created, "resultType": "task"} if modern else {"task": created})

    # --- GET and DELETE ---

    def _session_error(self, exchange: _Exchange, request: RecordedRequest) -> bool:
        """Answer a GET/DELETE whose session is missing or unknown; True if it did."""
        session = request.header("mcp-session-id")
        if session is None:
            exchange.json(400, _rpc_error(None, -32000, "Bad Request: No valid session ID"))
            return True
        with self._cond:
            live = session in self._live_sessions
        if not live:
            exchange.json(404, _rpc_error(None, -32001, "Session not found"))
            return True
        return False

    def _get(self, exchange: _Exchange, request: RecordedRequest) -> None:
        if self.era == "modern" or _is_modern(request):
            exchange.full(405, [("allow", "POST")])
            return
        if self._session_error(exchange, request):
            return
        last_id = request.header("last-event-id")
        session = request.header("mcp-session-id") or ""
        with self._cond:
            listening = self._listening.get((last_id or "").rsplit("-", 1)[0])
        if last_id is not None and listening is not None and listening.session == session:
            self._listen(exchange, session, last_id)
        elif last_id is not None:
            self._replay(exchange, last_id)
        elif self.get_stream:
            self._listen(exchange, session)
        else:
            exchange.full(405, [("allow", "POST, DELETE")])

    def _replay(self, exchange: _Exchange, last_id: str) -> None:
        stream = last_id.rsplit("-", 1)[0]
        with self._cond:
            events = list(self._streams.get(stream, []))
        ids = [event_id for event_id, _ in events]
        if last_id not in ids:
            exchange.json(400, _rpc_error(None, -32000, f"Unknown Last-Event-ID {last_id!r}"))
            return
        exchange.head(200, [("content-type", "text/event-stream")])
        for _, event in events[ids.index(last_id) + 1 :]:
            exchange.data(event)
        exchange.end()

    def _listen(self, exchange: _Exchange, session: str, last_id: str | None = None) -> None:
        """A listening stream: a new one (its priming event first), or, with `last_id` (one
        of its event ids), the one it names, resumed after that event."""
        inbox: queue.Queue[bytes | str | None] = queue.Queue()
        with self._cond:
            if last_id is None:
                stream = str(next(self._stream_ids))
                priming = sse_event("", event_id=f"{stream}-0", retry=self.retry_ms)
                listening = _Listening(session, [(f"{stream}-0", priming)])
                self._listening[stream] = listening
                backlog = [priming]
            else:
                listening = self._listening[last_id.rsplit("-", 1)[0]]
                ids = [event_id for event_id, _ in listening.events]
                after = ids.index(last_id) + 1 if last_id in ids else len(ids)
                backlog = [event for _, event in listening.events[after:]]
            listening.inbox = inbox  # what push() is given from now on comes here, in order
            self._push_queues.append(inbox)
            self._cond.notify_all()
        try:
            exchange.head(200, [("content-type", "text/event-stream")])
            for event in backlog:
                exchange.data(event)
            deadline = time.monotonic() + STALL_LIMIT
            while True:
                # A lost client shows as a failed send; stop() sends None.
                try:
                    item = inbox.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    item = None
                if item is None or self._stopping.is_set():
                    raise _Drop
                if item == _END:
                    exchange.end()
                    return
                assert isinstance(item, bytes)
                exchange.data(item)
        finally:
            with self._cond:
                self._push_queues.remove(inbox)
                if listening.inbox is inbox:
                    listening.inbox = None

    def _delete(self, exchange: _Exchange, request: RecordedRequest) -> None:
        if self.era == "modern" or _is_modern(request):
            exchange.full(405, [("allow", "POST")])
            return
        if self._session_error(exchange, request):
            return
        if 200 <= self.delete_status < 300:
            with self._cond:
                self._live_sessions.discard(request.header("mcp-session-id") or "")
        exchange.full(self.delete_status, [])

    # --- control API for the subprocess mode ---

    def _control(self, exchange: _Exchange, method: str, target: str, body: bytes) -> None:
        try:
            if method == "POST" and target == "/_control/fault":
                spec = json.loads(body)
                self.set_fault(
                    spec["kind"],
                    method=spec.get("method"),
                    http_method=spec.get("http_method", "POST"),
                    times=spec.get("times", 1),
                    **spec.get("options", {}),
                )
                exchange.full(204, [])
            elif method == "POST" and target == "/_control/reset":
                self.reset()
                exchange.full(204, [])
            elif method == "GET" and target == "/_control/requests":
                exchange.json(200, [_as_json(r) for r in self.requests])
            else:
                exchange.full(404, [])
        except (ValueError, KeyError, TypeError) as error:
            exchange.full(400, [("content-type", "text/plain")], f"{error}\n".encode())


def _matrix_payload(kind: str, request_id: Any, options: dict[str, Any]) -> bytes:
    """The body (one line, no newline) of a body-carrying fault-matrix kind."""
    if kind == "garbage":
        return b"%%% this is not JSON {{{"
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
    if kind == "rpc_error":
        error = {
            "code": int(options.get("code", -32603)),
            "message": options.get("message", "boom"),
        }
        return head + b',"error":' + json.dumps(error).encode() + b"}"
    if kind == "deep_nesting":
        depth = int(options.get("depth", 100_000))
        nested = b"[" * depth + b"]" * depth
        result = b'{"content":[{"type":"text","text":"deep"}],"nested":' + nested + b"}"
    else:  # invalid_utf8
        result = b'{"content":[{"type":"text","text":"caf\xff\xfe"}],"isError":false}'
    return head + b',"result":' + result + b"}"


class HttpSseFaultServer(HttpFaultServer):
    """The 2024-11-05 HTTP+SSE transport with the same faults (see the module docstring).

    GET PATH opens a stream whose first event is `endpoint` (PATH?session=ID); a POST there is
    answered 202 and its answer is sent on that stream. One stream per session; the session
    ends with its stream. `sessions` lists them as for Streamable HTTP."""

    STREAM_KINDS = frozenset(
        {"garbage", "deep_nesting", "invalid_utf8", "rpc_error", "huge", "no_answer", "drop_stream"}
    )

    def __init__(self, *, path: str = "/mcp", retry_ms: int | None = None) -> None:
        super().__init__(path=path, retry_ms=retry_ms)
        self._sse_streams: dict[str, queue.Queue[bytes | None]] = {}  # None: drop the stream

    def _take_fault(self, request: RecordedRequest) -> Fault | None:
        # The POST to the bare path (a client trying Streamable HTTP first) is always 405:
        # faults are for the transport's own requests.
        if request.method == "POST" and _session_param(request.path) is None:
            return None
        return super()._take_fault(request)

    def _stream_of(self, request: RecordedRequest) -> queue.Queue[bytes | None] | None:
        session = _session_param(request.path)
        with self._cond:
            return self._sse_streams.get(session) if session is not None else None

    def _get(self, exchange: _Exchange, request: RecordedRequest) -> None:
        session = uuid.uuid4().hex
        outbox: queue.Queue[bytes | None] = queue.Queue()
        with self._cond:
            self._sse_streams[session] = outbox
            self._live_sessions.add(session)
            self._sessions.append(session)
        try:
            exchange.head(
                200, [("content-type", "text/event-stream"), ("cache-control", "no-cache")]
            )
            exchange.data(sse_event(f"{self.path}?session={session}", event="endpoint"))
            deadline = time.monotonic() + STALL_LIMIT
            while not self._stopping.is_set() and time.monotonic() < deadline:
                try:
                    event = outbox.get(timeout=0.05)  # short: stop() is noticed at once
                except queue.Empty:
                    continue
                if event is None:
                    break
                exchange.data(event)
            raise _Drop
        finally:
            with self._cond:
                self._sse_streams.pop(session, None)
                self._live_sessions.discard(session)

    def _post(self, exchange: _Exchange, request: RecordedRequest) -> None:
        if _session_param(request.path) is None:
            exchange.full(405, [("allow", "GET")])  # no Streamable HTTP here: use the stream
            return
        outbox = self._stream_of(request)
        message = request.json
        if outbox is None:
            exchange.json(404, _rpc_error(None, -32001, "Session not found"))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            exchange.json(400, _rpc_error(None, -32600, "Body must be one JSON-RPC message"))
            return
        exchange.full(202, [("content-type", "text/plain")], b"Accepted")
        answer = self._sse_answer(message)
        if answer is not None:
            data = json.dumps(answer, separators=(",", ":"))
            outbox.put(sse_event(data, event="message"))

    def _sse_answer(self, message: Message) -> Message | None:
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params") or {}
        if method is None or request_id is None:
            return None  # a notification, or the client's answer to a server request
        if method == "initialize":
            offered = params.get("protocolVersion")
            result: Message | int = {
                "protocolVersion": offered if offered in HANDSHAKE_VERSIONS else "2024-11-05",
                "capabilities": {"tools": {}},
                "serverInfo": SERVER_INFO,
            }
        else:
            result = self._result(str(method), params)
        if isinstance(result, int):
            return _rpc_error(request_id, result, f"Method not found: {method}")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _delete(self, exchange: _Exchange, request: RecordedRequest) -> None:
        exchange.full(405, [("allow", "GET, POST")])

    def _apply_fault(self, exchange: _Exchange, request: RecordedRequest, fault: Fault) -> None:
        if fault.kind not in self.STREAM_KINDS or request.method != "POST":
            super()._apply_fault(exchange, request, fault)
            return
        outbox = self._stream_of(request)
        if outbox is None:
            exchange.json(404, _rpc_error(None, -32001, "Session not found"))
            return
        message = request.json
        request_id = message.get("id") if isinstance(message, dict) else None
        exchange.full(202, [("content-type", "text/plain")], b"Accepted")
        if fault.kind == "no_answer":
            return
        if fault.kind == "drop_stream":
            outbox.put(None)
        elif fault.kind == "huge":
            size = int(float(fault.options.get("mib", 20)) * 1024 * 1024)
            head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
            body = head + b',"result":{"content":[{"type":"text","text":"' + b"x" * size
            outbox.put(b"event: message\ndata: " + body + b'"}]}}\n\n')
        else:
            payload = _matrix_payload(fault.kind, request_id, fault.options)
            outbox.put(b"event: message\ndata: " + payload + b"\n\n")


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _session_param(target: str) -> str | None:
    """The `session` query parameter of a request target (HTTP+SSE), None without one."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)
    return (query.get("session") or [None])[0]


def _meta_version(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PV_META) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _is_modern(request: RecordedRequest) -> bool:
    version = request.header("mcp-protocol-version")
    return version is not None and version not in HANDSHAKE_VERSIONS


def _as_json(request: RecordedRequest) -> Message:
    return {
        "method": request.method,
        "path": request.path,
        "headers": [list(pair) for pair in request.headers],
        "body": request.body.decode("utf-8", "replace"),
        "at": request.at,
        "fault": request.fault,
    }


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed or never connected
        sock.shutdown(socket.SHUT_RDWR)


def main() -> None:
    argv = sys.argv[1:]
    era = argv[argv.index("--era") + 1] if "--era" in argv else "legacy"
    retry = int(argv[argv.index("--retry-ms") + 1]) if "--retry-ms" in argv else None
    server = HttpFaultServer(
        sse="--sse" in argv,
        era=era,
        get_stream="--get-stream" in argv,
        retry_ms=retry,
        tasks="--tasks" in argv,
    )
    done = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: done.set())
    with server:
        print(f"listening {server.url}", flush=True)
        done.wait()


if __name__ == "__main__":
    main()
