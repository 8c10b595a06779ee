"""The HTTP transport layer: Streamable HTTP in both eras, and HTTP+SSE (2024-11-05).

It turns a connection into HTTP requests and back. Every message is its own POST
(``StartHttp`` with a stream number); the answer is a JSON body or an SSE stream, read here
into messages for the session. This layer owns what HTTP decides:

- the headers of each request, per era (``http_parts.request_headers``), and the session id the
  server assigned (legacy), echoed until the server forgets it;
- what a status means: 401/403 (credentials), 404 for a request that carried the session id
  (a new session), a 4xx to ``initialize`` (an HTTP+SSE server: GET the URL instead), 429 and
  5xx during the handshake (retry, honouring ``Retry-After``), a JSON-RPC error in a 4xx body
  (the modern era's errors);
- resuming a dropped SSE answer with GET + ``Last-Event-ID`` (legacy, at most 3 times,
  honouring the stream's ``retry``), the optional listening GET (opened before the session
  is reported ready, see ``_confirmed``; reopened with backoff whenever it ends while the
  session lives, see ``_listen_over``), and the ``DELETE`` of the session on close (waited
  for at most ``shutdown_grace``);
- a session the server forgot (404): every request in flight on it is answered at once and
  a new session is opened (``_session_forgotten``);
- which stream events still matter: an event for a stream this layer aborted or finished is
  dropped here (the one place late HTTP events are filtered); one for a stream never started
  is a driver bug (``UnexpectedEvent``).

Authorization (OAuth, the next layer) slots in between this layer and the driver without
touching the session or this file's decisions: it wraps ``send`` to add a token, and sees each
``HttpResponseStarted`` first, holding a 401/403 answer's request (and those queued behind it)
until a token is refreshed or obtained, then re-sending it once; only a permanent refusal
reaches this layer as the 401/403 it handles today.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

from .._config.spec import Spec
from .._vocabulary.actions import AbortHttp, Action, DpopProof, StartHttp
from .._vocabulary.errors import (
    ConnectFailed,
    InvalidResponse,
    MessageTooLarge,
    ServerUnreachable,
    SessionRejected,
    UnexpectedEvent,
)
from .._vocabulary.events import (
    HTTP_EVENTS,
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
)
from .._vocabulary.phases import Step
from .._vocabulary.urls import redact_url
from .._wire import jsonrpc as rpc
from .._wire.framing import encode_message
from .._wire.sse import SseDecoder, SseFrame, SseTooLarge
from .connection import DISCOVER, INITIALIZE, Connection, Session, Work
from .eras import MODERN_VERSION
from .http_parts import (
    content_type,
    find_header,
    http_error,
    parse_json_body,
    parse_retry_after,
    refused_get,
    request_headers,
)
from .jitter import Jitter, backoff_delay
from .work import CallWork

__all__ = ["HttpEvent", "HttpTransport"]

HttpEvent = HttpResponseStarted | HttpBodyReceived | HttpResponseEnded | HttpFailed

# How long a legacy session waits for the head of its listening GET before it is reported
# ready anyway (a server may hold that head until it has something to send). About the three
# round trips of a request on a new TLS connection to a distant server; never past the
# connect deadline.
LISTEN_HEAD_WAIT = 1.0


@dataclass(slots=True, eq=False)
class _Stream:
    """One HTTP request of a connection and what its answer has shown so far."""

    # "post" | "get" (a resumption) | "listen" (the standalone GET) | "delete" | "sse" (the
    # HTTP+SSE transport's one GET stream)
    kind: str
    request_id: int | None  # the JSON-RPC request this POST (or resuming GET) answers
    carried_session: bool
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    body: bytearray | None = None  # a JSON (or error) answer, collected whole, capped
    message: Mapping[str, Any] | None = None  # a POST's message, to send again if refused
    sse: SseDecoder | None = None
    resumes: int = 0


@dataclass(slots=True, eq=False)
class _Resume:
    """A dropped SSE answer to resume with GET + Last-Event-ID once ``at`` has come."""

    at: float
    request_id: int
    last_event_id: str
    attempt: int


@dataclass(slots=True, eq=False)
class _Link:
    """What the transport knows of one connection's HTTP session."""

    session_id: str | None = None  # the session the server assigned (legacy)
    sse: bool = False  # HTTP+SSE (2024-11-05)
    sse_endpoint: str | None = None  # the URL its `endpoint` event named, once known
    # The status that refused the initialize POST and sent this connection to HTTP+SSE.
    refused_post: int | None = None
    streams: dict[int, _Stream] = field(default_factory=dict)
    resumes: list[_Resume] = field(default_factory=list)
    # The stream the session awaits before it is ready: the initialized POST, then the GET.
    confirming: int | None = None
    confirm_deadline: float | None = None  # ready anyway then, GET head or not
    stop_deadline: float | None = None  # stop waiting for the DELETE then
    # The listening GET of this session, between two of its requests:
    listen_at: float | None = None  # reopen it then
    listen_attempts: int = 0  # reopened since one was last answered with an event stream
    listen_event_id: str | None = None  # the last event id it gave: Last-Event-ID
    listen_retry: float | None = None  # the reconnection time its `retry` field set, seconds
    listen_over: str = ""  # how the last one ended, for the log line of its reopening


class HttpTransport:
    """HTTP requests for ``connections`` (an ``SseTransport``); see the module docstring."""

    __slots__ = (
        "_connections", "_jitter", "_links", "_next_stream", "_out", "_session", "_shown_url",
        "_spec", "_stream_connections", "_url", "authorization", "proof",
    )  # fmt: skip

    events = HTTP_EVENTS

    def __init__(
        self, spec: Spec, connections: Sequence[Connection], session: Session, out: list[Action]
    ) -> None:
        assert spec.url is not None
        self._spec = spec
        self._url = spec.url
        self._shown_url = redact_url(spec.url)  # what messages name: no userinfo or query
        self._connections = connections
        self._session = session
        self._out = out
        self._links = [_Link() for _ in connections]
        self._stream_connections: dict[int, Connection] = {}  # live stream -> its connection
        self._next_stream = 0
        self._jitter = Jitter(spec.jitter_seed)  # the listening GET's backoff
        # ``Bearer <token>`` once the authorization layer has one; sent on every MCP request.
        self.authorization: str | None = None
        # A DPoP-bound token's: the proof each request carries (method, URL), RFC 9449 §7.
        self.proof: Callable[[str, str], DpopProof] | None = None

    # --- what the session asks ---------------------------------------------------------------

    @property
    def sse(self) -> bool:
        """Some connection speaks HTTP+SSE (2024-11-05)."""
        return any(link.sse for link in self._links)

    def speaks_sse(self, connection: Connection) -> bool:
        """``connection`` speaks HTTP+SSE (2024-11-05)."""
        return self._links[connection.index].sse

    def open(self, connection: Connection) -> bool:
        """Nothing to wait for: the endpoint is there to POST to. True: up now."""
        link = self._links[connection.index]
        link.session_id = link.sse_endpoint = link.refused_post = None
        link.sse = False
        connection.move(Step.OPEN)
        return True

    def send(
        self, connection: Connection, message: Mapping[str, Any], request_id: int | None
    ) -> None:
        """Legacy and modern Streamable HTTP: every message is its own POST."""
        link = self._links[connection.index]
        headers = self._headers(connection, "POST", message)
        owner = connection.requests.get(request_id) if request_id is not None else None
        if isinstance(owner, CallWork) and owner.headers:
            headers = (*headers, *owner.headers)
        carried = find_header(headers, "mcp-session-id") is not None
        stream = _Stream("post", request_id, carried_session=carried, message=message)
        body = encode_message(message)[:-1]
        self._start(connection, stream, "POST", headers, body, link.sse_endpoint)

    def acknowledge(self, connection: Connection, message: Mapping[str, Any]) -> bool:
        """POST ``notifications/initialized``; True: the session waits for its answer.

        Legacy lifecycle: the client "MUST send an initialized notification" before normal
        operations. Over HTTP each message is its own POST, on a connection of its own when
        the initialize answer still streams: a call made once ready could overtake it."""
        self.send(connection, message, None)
        self._links[connection.index].confirming = self._next_stream
        return True

    def cancel(self, connection: Connection, request_id: int) -> bool:
        """Stop reading the answer to ``request_id``. True when the server must also be told
        with ``notifications/cancelled``: 2026-07-28 closes the stream instead (closing IS the
        cancel), the legacy eras need the notification."""
        self.forget(connection, request_id)
        return not connection.modern

    def forget(self, connection: Connection, request_id: int) -> None:
        """The machine stopped waiting for ``request_id``: close its stream, if open."""
        for stream_id, stream in self._links[connection.index].streams.items():
            if stream.request_id == request_id:
                self._abort(stream_id)
                return

    def fail(self, connection: Connection) -> bool:
        """Drop a failed connection's streams and session; nothing to wait for (False)."""
        link = self._links[connection.index]
        self._abort_streams(link)
        link.session_id = link.confirming = link.confirm_deadline = None
        link.resumes.clear()
        _stop_listening(link)
        return False

    def close(self, connection: Connection) -> bool:
        """Stop: abort every stream, then (legacy, with a session) DELETE the session, as the
        client "SHOULD" (2025-03-26+ transports §Session Management); True while waiting for
        that answer, at most ``shutdown_grace``."""
        link = self._links[connection.index]
        link.resumes.clear()
        link.confirming = link.confirm_deadline = None
        _stop_listening(link)
        self._abort_streams(link)
        if link.session_id is None or connection.modern:
            return False
        headers = self._headers(connection, "DELETE", None)
        link.session_id = None
        link.stop_deadline = self._session.now + self._spec.shutdown_grace
        self._start(
            connection,
            _Stream(kind="delete", request_id=None, carried_session=True),
            "DELETE",
            headers,
        )
        return True

    def _renew(self, link: _Link) -> None:
        """The server forgot the session: forget it too, every stream of it, the resumptions
        due and the listening GET's reopening (its event ids belong to the old session)."""
        link.session_id = link.confirming = link.confirm_deadline = None
        link.resumes.clear()
        _stop_listening(link)
        self._abort_streams(link)

    def open_sse(self, connection: Connection) -> None:
        """2024-11-05 HTTP with SSE: GET the URL; the stream's first event names the endpoint
        that every message is POSTed to, and every answer comes back on the stream."""
        link = self._links[connection.index]
        link.sse, link.sse_endpoint = True, None
        connection.move(Step.INITIALIZE)
        stream = _Stream(kind="sse", request_id=None, carried_session=False)
        self._start(connection, stream, "GET", self._headers(connection, "GET", None))

    # --- what the authorization layer asks ---------------------------------------------------

    @property
    def last_stream(self) -> int:
        """The stream number of the request started last."""
        return self._next_stream

    def new_stream(self) -> int:
        """A stream number for a request the authorization layer starts itself."""
        self._next_stream += 1
        return self._next_stream

    def take(self, stream_id: int) -> tuple[Connection, Mapping[str, Any], int | None, bool] | None:
        """Hand a POST over whose answer refused it (401): the transport forgets the stream
        (what the driver still reads of it is dropped as late) and returns its connection,
        message, request id and whether the handshake waits for it (the initialized POST),
        for the authorization layer to send again. ``None`` for a stream that is no POST (a
        GET or DELETE: the transport keeps it), or one it no longer follows."""
        connection = self._stream_connections.get(stream_id)
        if connection is None:
            return None
        link = self._links[connection.index]
        stream = link.streams[stream_id]
        if stream.message is None:
            return None
        del self._stream_connections[stream_id], link.streams[stream_id]
        confirming = link.confirming == stream_id
        if confirming:
            link.confirming = None  # sent again, its new stream is the one to wait for
        return connection, stream.message, stream.request_id, confirming

    # --- time --------------------------------------------------------------------------------

    def next_deadline(self, best: float | None) -> float | None:
        """The earlier of ``best`` and this layer's own deadlines."""
        for link in self._links:
            for t in (link.stop_deadline, link.confirm_deadline, link.listen_at):
                if t is not None and (best is None or t < best):
                    best = t
            for resume in link.resumes:
                if best is None or resume.at < best:
                    best = resume.at
        return best

    def expire(self, connection: Connection, now: float) -> None:
        """The listening GET's head, or the DELETE of the session, did not come in time: stop
        waiting for it."""
        link = self._links[connection.index]
        if link.confirm_deadline is not None and link.confirm_deadline <= now:
            # The GET stays open: whatever the server sends on it later is still read.
            self._session.log(
                "DEBUG", "no answer to the listening GET yet; the session is ready without it"
            )
            self._ready(connection, link)
        if link.stop_deadline is not None and link.stop_deadline <= now:
            self._abort_streams(link)
            self._deleted(connection, link)

    def resume_due(self, connection: Connection, now: float) -> None:
        """Resume the dropped answers, and reopen the listening GET, whose time has come."""
        link = self._links[connection.index]
        for resume in [r for r in link.resumes if r.at <= now]:
            link.resumes.remove(resume)
            if resume.request_id in connection.requests:
                self._resume(connection, resume)
        if link.listen_at is not None and link.listen_at <= now:
            link.listen_at = None
            self._session.log("DEBUG", f"reopening the listening GET: {link.listen_over}")
            self._listen(connection)

    # --- requests ----------------------------------------------------------------------------

    def _start(
        self,
        connection: Connection,
        stream: _Stream,
        method: Literal["GET", "POST", "DELETE"],
        headers: tuple[tuple[str, str], ...],
        body: bytes | None = None,
        url: str | None = None,
    ) -> None:
        self._next_stream += 1
        self._links[connection.index].streams[self._next_stream] = stream
        self._stream_connections[self._next_stream] = connection
        url, proof = url or self._url, self.proof
        self._out.append(
            StartHttp(
                stream=self._next_stream,
                method=method,
                url=url,
                headers=headers,
                body=body,
                dpop=None if proof is None else proof(method, url),
            )
        )

    def _headers(
        self, connection: Connection, method: str, message: Mapping[str, Any] | None
    ) -> tuple[tuple[str, str], ...]:
        link = self._links[connection.index]
        probe = message is not None and message.get("method") == DISCOVER
        handshake = message is not None and message.get("method") == INITIALIZE
        modern = probe or connection.modern
        if modern:
            version: str | None = MODERN_VERSION
        elif handshake or connection.handshake is None or link.sse:
            version = None  # "not on the initialize POST itself" (2025-06-18 transports)
        else:
            version = connection.handshake.protocol_version
        user_headers = self._spec.headers
        if self.authorization is not None:  # never with an Authorization header of the spec's
            user_headers = {**user_headers, "Authorization": self.authorization}
        return request_headers(
            user_headers=user_headers,
            method=method,
            body=message,
            session_id=None if handshake or modern else link.session_id,
            protocol_version=version,
            modern=modern,
        )

    def _listen(self, connection: Connection) -> None:
        """2025-03-26+ transports §Listening: the optional GET stream for server messages
        (405 means the server offers none). Reopened, it carries the last event id the
        stream gave, so that the server "MAY" replay what was sent meanwhile (2025-11-25
        transports §Resumability)."""
        headers = self._headers(connection, "GET", None)
        event_id = self._links[connection.index].listen_event_id
        if event_id is not None:
            headers = (*headers, ("Last-Event-ID", event_id))
        stream = _Stream(kind="listen", request_id=None, carried_session=True)
        self._start(connection, stream, "GET", headers)

    def _resume(self, connection: Connection, resume: _Resume) -> None:
        """2025-11-25 transports §Resumability: resumption is "always via GET +
        Last-Event-ID", even for a stream that a POST opened."""
        headers = (
            *self._headers(connection, "GET", None),
            ("Last-Event-ID", resume.last_event_id),
        )
        stream = _Stream(
            kind="get", request_id=resume.request_id, carried_session=True, resumes=resume.attempt
        )
        self._start(connection, stream, "GET", headers)

    def _abort(self, stream_id: int) -> None:
        connection = self._stream_connections.pop(stream_id)
        del self._links[connection.index].streams[stream_id]
        self._out.append(AbortHttp(stream=stream_id))

    def _abort_streams(self, link: _Link) -> None:
        for stream_id in list(link.streams):
            self._abort(stream_id)

    def _deleted(self, connection: Connection, link: _Link) -> None:
        link.stop_deadline = None
        self._session.gone(connection)

    # --- events ------------------------------------------------------------------------------

    def handle(self, event: HttpEvent) -> None:
        """Feed one HTTP event; one for a stream no longer followed is dropped."""
        connection = self._stream_connections.get(event.stream)
        if connection is None:
            if not 0 < event.stream <= self._next_stream:
                raise UnexpectedEvent(
                    self._session.phase.name,
                    type(event).__name__,
                    f" (stream {event.stream} was never started)",
                )
            return  # aborted or finished: whatever the driver still had is late
        link = self._links[connection.index]
        stream = link.streams[event.stream]
        kind = type(event)
        if kind is HttpBodyReceived:
            data = event.data  # type: ignore[union-attr]
            self._on_body(connection, link, event.stream, stream, data)
        elif kind is HttpResponseStarted:
            self._on_head(connection, link, event, stream)  # type: ignore[arg-type]
        else:
            del self._stream_connections[event.stream], link.streams[event.stream]
            if kind is HttpResponseEnded:
                self._on_end(connection, link, event.stream, stream)
            else:
                self._on_failed(connection, link, event, stream)  # type: ignore[arg-type]

    def _on_head(
        self, connection: Connection, link: _Link, event: HttpResponseStarted, stream: _Stream
    ) -> None:
        if link.confirming == event.stream:
            self._confirmed(connection, link, stream)
        stream.status, stream.headers = event.status, event.headers
        ok = 200 <= event.status < 300
        owner = (
            connection.requests.get(stream.request_id) if stream.request_id is not None else None
        )
        if ok and owner == INITIALIZE:
            # "A server MAY assign a session ID ... on the HTTP response containing the
            # InitializeResult"; the client "MUST" echo it afterwards.
            link.session_id = find_header(event.headers, "mcp-session-id")
        if ok and content_type(event.headers) == "text/event-stream":
            stream.sse = SseDecoder(self._spec.max_message_bytes)
            if stream.kind == "listen":
                link.listen_attempts = 0  # a stream again: the next reopening starts over
        else:
            stream.body = bytearray()

    def _confirmed(self, connection: Connection, link: _Link, stream: _Stream) -> None:
        """The stream the session awaited has its answer's head (any status) or failed.

        After the initialized POST, a session with an id opens its listening GET first and
        is ready only once that GET is answered (or failed, or ``LISTEN_HEAD_WAIT`` passed):
        a call made once ready then always reaches the server after the GET, and a server
        that (wrongly) answers a pending call on any GET cannot hand that call's answer to
        the listening stream instead of to the call's own stream or its resumption."""
        if stream.kind == "post" and link.session_id is not None:
            self._listen(connection)
            link.confirming = self._next_stream
            wait = self._session.now + LISTEN_HEAD_WAIT
            deadline = connection.connect_deadline
            link.confirm_deadline = wait if deadline is None else min(wait, deadline)
            return
        self._ready(connection, link)

    def _ready(self, connection: Connection, link: _Link) -> None:
        link.confirming = link.confirm_deadline = None
        self._session.confirmed(connection)

    def _on_body(
        self, connection: Connection, link: _Link, stream_id: int, stream: _Stream, data: bytes
    ) -> None:
        if stream.sse is not None:
            self._on_sse_frames(connection, link, stream_id, stream, stream.sse.feed(data))
        else:
            assert stream.body is not None, "body before the response head"
            stream.body += data
            if len(stream.body) > self._spec.max_message_bytes:
                self._too_large(connection, stream_id, stream, len(stream.body))

    def _on_sse_frames(
        self,
        connection: Connection,
        link: _Link,
        stream_id: int,
        stream: _Stream,
        frames: list[SseFrame],
    ) -> None:
        for frame in frames:
            if isinstance(frame, SseTooLarge):
                self._too_large(connection, stream_id, stream, frame.size)
                return
            if frame.event == "endpoint" and stream.kind == "sse":
                self._on_endpoint(connection, link, frame.data)
                continue
            if frame.event != "message":
                continue  # priming and unknown event types carry no JSON-RPC message
            payload = parse_json_body(frame.data.encode("utf-8"))
            self._on_payload(connection, payload, "an SSE event")

    def _on_payload(self, connection: Connection, payload: object, where: str) -> None:
        if isinstance(payload, dict | list):
            items = payload if isinstance(payload, list) else [payload]
            for item in items:
                self._session.decoded(connection, item)
        else:
            self._session.log("WARNING", f"skipped {where} that is not a JSON-RPC message")

    def _too_large(
        self, connection: Connection, stream_id: int, stream: _Stream, size: int
    ) -> None:
        request_id = stream.request_id
        self._abort(stream_id)
        if stream.kind == "listen":
            # Reopened after the oversized event: its id (read already) is the Last-Event-ID.
            self._listen_over(connection, stream, f"an event of {size} bytes came on it")
            return
        error = MessageTooLarge(size, self._spec.max_message_bytes)
        if stream.kind == "sse":
            # The HTTP+SSE stream carries every answer, and aborting it loses them all (which
            # one was too large cannot be told): the connection fails with that error, and the
            # calls it carried get it at once rather than a timeout each.
            self._session.fail(connection, error)
            return
        if request_id is not None and request_id in connection.requests:
            owner = connection.requests.pop(request_id)
            self._session.lose(connection, owner, error, request_id)

    def _on_end(self, connection: Connection, link: _Link, stream_id: int, stream: _Stream) -> None:
        if stream.kind == "delete":
            self._deleted(connection, link)
        elif stream.kind == "listen":
            self._listen_over(connection, stream, "it ended")
        elif stream.sse is not None:
            stream.sse.close()  # an event without its blank line is discarded (WHATWG)
            self._unanswered(connection, link, stream, "the SSE stream ended")
        elif 200 <= stream.status < 300:
            body = bytes(stream.body or b"")
            # HTTP+SSE (2024-11-05): a POST is only accepted (the SDK's server writes
            # "Accepted"); its answer comes on the SSE stream, so the body is no message.
            if body.strip() and stream.request_id is not None and not link.sse:
                self._on_payload(connection, parse_json_body(body), "an HTTP body")
            self._unanswered(connection, link, stream, f"HTTP {stream.status} came with no answer")
        else:
            self._on_status(connection, link, stream, bytes(stream.body or b""))

    def _on_failed(
        self, connection: Connection, link: _Link, event: HttpFailed, stream: _Stream
    ) -> None:
        if link.confirming == event.stream:
            self._confirmed(connection, link, stream)  # whether it arrived cannot be known: go on
        if stream.kind == "delete":
            self._deleted(connection, link)
        elif stream.kind == "listen":
            self._listen_over(connection, stream, f"it failed: {event.reason}")
        elif stream.status == 0 and self._opens(connection, stream):
            # No status at all: nothing answered (refused, no such host, TLS). The probe's
            # failure still falls back to initialize, whose failure is the attempt's.
            if stream.request_id is not None:
                connection.requests.pop(stream.request_id, None)
            unreachable = ServerUnreachable(self._shown_url, event.reason)
            self._session.fail(connection, ConnectFailed(str(unreachable), cause=unreachable))
        else:
            self._unanswered(connection, link, stream, f"the HTTP request failed: {event.reason}")

    def _opens(self, connection: Connection, stream: _Stream) -> bool:
        """``stream`` is the one an attempt to connect stands or falls by: the HTTP+SSE GET,
        or the initialize POST."""
        if stream.kind == "sse":
            return True
        request_id = stream.request_id
        return request_id is not None and connection.requests.get(request_id) == INITIALIZE

    def _unanswered(self, connection: Connection, link: _Link, stream: _Stream, what: str) -> None:
        """A response is over; if its request is still unanswered, resume or fail it."""
        if stream.kind == "sse":
            # The HTTP+SSE stream carries every answer: losing it loses the connection.
            gone = InvalidResponse("the HTTP+SSE stream", what)
            self._session.fail(
                connection, ConnectFailed(f"the HTTP+SSE stream is gone: {what}", cause=gone)
            )
            return
        request_id = stream.request_id
        if request_id is None or request_id not in connection.requests:
            return
        if link.sse and stream.kind == "post" and 200 <= stream.status < 300:
            return  # HTTP+SSE: a POST is only accepted; its answer comes on the SSE stream
        sse = stream.sse
        if sse is not None and sse.last_event_id and not connection.modern and stream.resumes < 3:
            # "the client MUST honor the retry field" before reconnecting (2025-11-25).
            delay = (sse.retry or 0) / 1000
            link.resumes.append(
                _Resume(
                    self._session.now + delay, request_id, sse.last_event_id, stream.resumes + 1
                )
            )
            return
        owner = connection.requests.pop(request_id)
        method = owner.method if isinstance(owner, Work) else owner
        self._session.lose(
            connection, owner, InvalidResponse(method, f"{what} before the answer"), request_id
        )

    def _on_status(self, connection: Connection, link: _Link, stream: _Stream, body: bytes) -> None:
        """A non-2xx answer: what it means depends on the status, the era and the request."""
        status = stream.status
        requests = connection.requests
        owner = requests.get(stream.request_id) if stream.request_id is not None else None
        if stream.kind == "sse":
            permanent = status in (401, 403)
            failed = ConnectFailed(
                refused_get(self._url, link.refused_post, status),
                permanent=permanent,
                http_error=http_error(status, stream.headers),
            )
            self._session.fail(connection, failed, permanent=permanent)
            return
        if owner is None or stream.request_id is None:
            level = "DEBUG" if stream.kind == "get" else "WARNING"
            self._session.log(
                level, f"HTTP {status} to a {stream.kind.upper()} with no pending request"
            )
            return
        request_id = stream.request_id
        error = http_error(status, stream.headers)
        handshake = owner in (DISCOVER, INITIALIZE)
        if status in (401, 403):
            del requests[request_id]
            if handshake:
                # Permanent: credentials were resolved once; retrying presents them again.
                failed = ConnectFailed(
                    f"{self._shown_url} answered HTTP {status} "
                    f"(check the credentials in headers)",
                    permanent=True,
                    http_error=error,
                )
                self._session.fail(connection, failed, permanent=True)
            else:
                self._session.lose(connection, owner, error, request_id)
            return
        if status == 404 and stream.carried_session:
            self._session_forgotten(connection, link, request_id)
            return
        payload = parse_json_body(body)
        if (
            isinstance(payload, dict)
            and isinstance(payload.get("error"), dict)
            and payload.get("id") in (None, request_id)
        ):
            # Modern errors come as 4xx with a JSON-RPC error body (2026-07-28 §Errors).
            self._session.received(connection, rpc.Response(request_id, None, payload["error"]))
            return
        del requests[request_id]
        if handshake and (status == 429 or status >= 500):
            connection.retry_after = parse_retry_after(find_header(stream.headers, "retry-after"))
            self._session.fail(
                connection,
                ConnectFailed(f"{self._shown_url} answered HTTP {status}", http_error=error),
            )
        elif owner == INITIALIZE and status in (400, 404, 405) and not link.sse:
            # 2025-03-26+ transports §Backwards Compatibility: a 4xx to the initialize POST
            # (2025-11-25: 400, 404 or 405) means an HTTP+SSE server: GET the URL.
            self.open_sse(connection)
            link.refused_post = status
        elif owner == INITIALIZE:
            self._session.fail(
                connection,
                ConnectFailed(
                    f"{self._shown_url} answered initialize with HTTP {status}", http_error=error
                ),
            )
        else:
            self._session.lose(connection, owner, error, request_id)

    def _session_forgotten(self, connection: Connection, link: _Link, request_id: int) -> None:
        """The server answered ``request_id`` with 404: it no longer knows the session.

        "On 404 for a request that carried a session id, the client MUST start a new session
        with a fresh InitializeRequest" (2025-03-26+ transports §Session Management). Every
        request still in flight on the old session is answered ``SessionRejected`` at once,
        like the one the 404 answered, and none is sent again on the new session:
        the old session may or may not have run it (a ``tools/call`` is not idempotent), a
        page's cursor belongs to the session that gave it, and one rule for every request in
        flight lets a caller decide what to retry. Their streams are closed and nothing of
        theirs (a ``notifications/cancelled``, a resumption, a renewal) reaches the new
        session; the renewals (log level, subscriptions) go out again once it is ready, and
        work queued meanwhile goes out on it (``_session/calls.py``)."""
        requests = connection.requests
        owner = requests.pop(request_id)
        stranded = list(requests.items())  # in the order they were sent
        requests.clear()
        self._renew(link)
        self._session.send_initialize(connection)
        forgotten = "the server no longer knows this session (HTTP 404)"
        self._session.lose(
            connection,
            owner,
            SessionRejected(f"{forgotten}; the client opened a new one: retry the call"),
            request_id,
        )
        for other_id, other in stranded:
            rejected = SessionRejected(
                f"{forgotten} while this request was in flight on it: the server may or may "
                "not have run it; the client opened a new session: retry the call if that "
                "is safe"
            )
            self._session.lose(connection, other, rejected, other_id)

    def _listen_over(self, connection: Connection, stream: _Stream, what: str) -> None:
        """The listening GET is over (ended, failed, refused, or aborted for an oversized
        event): reopen it while the session lives, so that what the server sends on it is not
        lost until the next session.

        Not reopened when the answer says there is no stream to have: 405 ("the server does
        not offer an SSE stream at this endpoint", 2025-11-25 transports §Listening), 404
        (no such stream, or the session is gone: the next POST's 404 renews it, and renewing
        from the GET could loop with a server that answers every GET 404), or a 2xx that is
        no event stream. Otherwise reopened after a backoff from ``reconnect`` doubling to
        ``max_backoff`` with jitter, which starts over once a GET is answered with an event
        stream, and never before the stream's ``retry`` ("the client MUST honor the retry
        field") nor a ``Retry-After``. Close, a failure and a renewal cancel it
        (``_stop_listening``). A reopened GET is not awaited by readiness (``_confirmed``
        awaits the first one only): the session stays ready meanwhile."""
        link = self._links[connection.index]
        sse = stream.sse
        if sse is not None:
            if sse.last_event_id is not None:  # WHATWG: an empty id resets it
                link.listen_event_id = sse.last_event_id or None
            if sse.retry is not None:
                link.listen_retry = sse.retry / 1000
        status = stream.status
        if status in (404, 405) or (200 <= status < 300 and sse is None):
            self._session.log(
                "DEBUG", f"the server offers no listening stream (HTTP {status} to the GET)"
            )
            return
        delay = backoff_delay(
            link.listen_attempts, self._spec.reconnect, self._spec.max_backoff, self._jitter
        )
        link.listen_attempts += 1
        retry_after = parse_retry_after(find_header(stream.headers, "retry-after"))
        delay = max(delay, link.listen_retry or 0.0, retry_after or 0.0)
        link.listen_at = self._session.now + delay
        answer = f"HTTP {status}, " if status and not 200 <= status < 300 else ""
        link.listen_over = f"{answer}{what} {delay:.3g} s ago"

    def _on_endpoint(self, connection: Connection, link: _Link, data: str) -> None:
        endpoint = urljoin(self._url, data.strip())
        if _origin(endpoint) != _origin(self._url):
            # The spec's headers (credentials) go to the configured origin only.
            what = "the HTTP+SSE server named an endpoint on another origin; refused"
            refused = ConnectFailed(
                what, permanent=True, cause=InvalidResponse("the endpoint event", what)
            )
            self._session.fail(connection, refused, permanent=True)
        elif link.sse_endpoint is None:
            link.sse_endpoint = endpoint
            self._session.send_initialize(connection)


def _stop_listening(link: _Link) -> None:
    """No reopening of the listening GET: the session is over, or a new one has none yet."""
    link.listen_at = link.listen_event_id = link.listen_retry = None
    link.listen_attempts = 0


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.rsplit("@", 1)[-1].lower()
