"""HTTP/1.1 on h11 for both drivers' executors, without I/O: what a request looks like on the
wire, how the bytes of one socket read become a response head, body bytes and its end, which
failures end a request, the bookkeeping of a pool of keep-alive connections and the order in
which requests are written.

Pure like the core (h11 is sans-IO; nothing here touches a socket, a clock or a thread), but not
in it: no core module speaks HTTP/1.1, the machine's ``StartHttp`` only names a request. The
executors (``mcp_asyncio._http`` on anyio, ``mcp_sync._http`` on threads) move the bytes; the
socket side both of them need (is a pooled socket still usable, how an OS error is worded, the
TLS context) is in ``_mcp_io.http``. Everything here is shared, so the two executors stay twins.

Wording. The exceptions raised here carry messages written here and never quote a URL or a
header value (they may hold a secret).
"""

from __future__ import annotations

import inspect
import urllib.parse
from collections.abc import Hashable
from typing import Any, Generic, NamedTuple, TypeVar

import h11

from mcp_core import StartHttp

__all__ = [
    "FAILURES",
    "MAX_CONNECTIONS",
    "MAX_INTERIM",
    "ClientConnection",
    "ConnectError",
    "HttpError",
    "Origin",
    "Pool",
    "ReadError",
    "RemoteProtocolError",
    "RequestBuilder",
    "StartOrder",
    "Target",
    "UnsupportedProtocol",
    "WriteError",
    "connection_cap",
    "decode_headers",
    "finish",
    "receive",
    "request_bytes",
]

Origin = tuple[str, str, int]  # (scheme, host, port): connections are pooled per origin
C = TypeVar("C")
R = TypeVar("R", bound=Hashable)


class HttpError(Exception):
    """A request failed; the message is ours and holds no URL or header value."""


class ConnectError(HttpError):
    """The connection could not be opened: DNS, TCP connect or the TLS handshake failed."""


class ReadError(HttpError):
    """Reading the response failed (reset, TLS error)."""


class WriteError(HttpError):
    """Sending the request failed."""


class RemoteProtocolError(HttpError):
    """The server broke HTTP/1.1 (here: closed the connection without any answer)."""


class UnsupportedProtocol(HttpError):
    """The URL is not an http or https URL with a host."""


# What ends a request with HttpFailed: our errors, h11's (a malformed response, or a header
# value h11 refuses to send), and any OSError that escapes unwrapped.
FAILURES = (HttpError, h11.ProtocolError, OSError)


class Target(NamedTuple):  # a NamedTuple: a dataclass costs more import time
    """Where a URL's request goes: the pool key, the Host header and the request target."""

    origin: Origin
    host: bytes  # the Host header's value: the port only when it is not the scheme's default
    path: bytes  # path and query; the fragment and any userinfo are not sent


def _target(url: str) -> Target:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UnsupportedProtocol("the URL's scheme is neither http nor https")
    host = parts.hostname
    if not host:
        raise UnsupportedProtocol("the URL names no host")
    port = parts.port  # a ValueError for a bad port: worded by its class name only
    default = 443 if scheme == "https" else 80
    bracketed = f"[{host}]" if ":" in host else host
    header = bracketed if port in (None, default) else f"{bracketed}:{port}"
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target((scheme, host, port or default), header.encode("ascii"), path.encode("ascii"))


_METHODS = {"GET": b"GET", "POST": b"POST", "DELETE": b"DELETE"}
# h11's private keyword that skips validating again what it validated once; an h11 without it
# (none in our range yet) gets no keyword and validates every head, the slow way.
_VALIDATED: dict[str, Any] = (
    {"_parsed": True} if "_parsed" in inspect.signature(h11.Request.__init__).parameters else {}
)
_PREPARED_MAX = 64  # distinct (URL, headers, body or not) kept: a client uses a few


class RequestBuilder:
    """Builds the h11 request heads of one executor.

    h11 validates every header on every request, which is most of the cost of a request head;
    a client sends the same URL and headers again and again. So each distinct (URL, headers,
    body or not) is parsed and validated once, by h11's public constructor, and later heads
    are built from the validated bytes (``_parsed=True``: h11 skips the regexes it already
    ran). The cache belongs to the executor, not the module: it holds header values, which may
    be secrets, and goes away with the client.
    """

    def __init__(self) -> None:
        self._prepared: dict[
            tuple[str, tuple[tuple[str, str], ...], bool],
            tuple[Target, tuple[tuple[bytes, bytes], ...], bool],
        ] = {}

    def build(self, action: StartHttp) -> tuple[Target, h11.Request]:
        """The target and the h11 request head of ``action``: exactly its headers, plus Host
        first and Content-Length last (when there is a body) unless it gives them itself.

        Raises before any connection is taken: ``UnsupportedProtocol``, ``ValueError`` (a bad
        port), ``UnicodeEncodeError`` (a header that is not Latin-1) or
        ``h11.LocalProtocolError`` (a header h11 refuses, e.g. one holding CR LF).
        """
        body = action.body
        key = (action.url, action.headers, body is not None)
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = _prepare(*key)
            if len(self._prepared) >= _PREPARED_MAX:
                self._prepared.clear()
            self._prepared[key] = prepared
        target, prepared_headers, add_length = prepared
        headers = list(prepared_headers)
        if add_length:
            assert body is not None
            headers.append((b"Content-Length", b"%d" % len(body)))
        method = _METHODS.get(action.method) or action.method.encode("ascii")
        head = h11.Request(method=method, target=target.path, headers=headers, **_VALIDATED)
        return target, head


def _prepare(
    url: str, headers: tuple[tuple[str, str], ...], has_body: bool
) -> tuple[Target, tuple[tuple[bytes, bytes], ...], bool]:
    target = _target(url)
    encoded = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    names = {name.lower() for name, _ in encoded}
    if b"host" not in names:
        encoded.insert(0, (b"Host", target.host))
    add_length = has_body and not names & {b"content-length", b"transfer-encoding"}
    # Validated here, once, by h11 itself (its error names the offending header: the
    # executors' reason() keeps only the class name of such a message).
    length = [(b"Content-Length", b"0")] if add_length else []
    h11.Request(method=b"GET", target=target.path, headers=[*encoded, *length])
    return target, tuple(encoded), add_length


# Interim (1xx) answers taken before a response's final head. A client "MUST be able to parse
# one or more 1xx responses" (RFC 9110 §15.2), and h11 bounds each one's size, not how many
# come: a peer sending them forever would be read forever, the head never coming (on the
# listening GET, which no deadline ends once the session is ready). Past this many the
# response fails, as one whose head is over h11's size limit does.
MAX_INTERIM = 32


class ClientConnection(h11.Connection):
    """h11's client side of one connection, counting the interim (1xx) answers of the
    response under way for ``receive`` (the count starts over with the next request)."""

    def __init__(self) -> None:
        super().__init__(h11.CLIENT)
        self.interim = 0

    def start_next_cycle(self) -> None:
        super().start_next_cycle()
        self.interim = 0


def request_bytes(connection: h11.Connection, request: h11.Request, body: bytes | None) -> bytes:
    """The whole request (head, body, end) as one write."""
    data = connection.send(request) or b""
    if body:
        data += connection.send(h11.Data(data=body)) or b""
    return data + (connection.send(h11.EndOfMessage()) or b"")


def receive(connection: h11.Connection, data: bytes) -> tuple[h11.Response | None, bytes, bool]:
    """Feed one socket read (``b""`` at EOF) to ``connection``: the response head if it came in
    this read, the body bytes of this read (h11's Data events joined), and whether the response
    ended. 1xx answers are skipped, at most ``MAX_INTERIM`` of them per response on a
    ``ClientConnection`` (the executors'). Raises ``h11.RemoteProtocolError`` on a malformed
    response (a head over h11's size limit too) and ``RemoteProtocolError`` when the server
    closed the connection before any answer, or sent too many 1xx answers."""
    if not data and connection.their_state is h11.SEND_RESPONSE:
        raise RemoteProtocolError("the server closed the connection before answering")
    connection.receive_data(data)
    head: h11.Response | None = None
    chunks: list[bytes] = []
    while True:
        event = connection.next_event()
        kind = type(event)
        if kind is h11.Data:
            chunks.append(event.data)  # type: ignore[union-attr]
        elif kind is h11.Response:
            head = event  # type: ignore[assignment]
        elif kind is h11.EndOfMessage:
            return head, b"".join(chunks), True
        elif event is h11.NEED_DATA:
            return head, b"".join(chunks), False
        elif event is h11.PAUSED or kind is h11.ConnectionClosed:
            # Neither comes before the end of a response to a request that asked for no
            # protocol switch; should one, it must not spin here.
            raise RemoteProtocolError("the server closed or switched the connection")
        elif isinstance(connection, ClientConnection):
            # InformationalResponse (1xx): skipped; the final answer follows.
            connection.interim += 1
            if connection.interim > MAX_INTERIM:
                raise RemoteProtocolError(
                    f"the server sent more than {MAX_INTERIM} interim (1xx) answers"
                )


def finish(connection: h11.Connection) -> bool:
    """After the response ended: whether the connection may serve another request (both sides
    done, nothing unread after the response); if so it is ready for the next one."""
    if connection.our_state is not h11.DONE or connection.their_state is not h11.DONE:
        return False  # e.g. "Connection: close", an HTTP/1.0 answer
    if connection.trailing_data[0]:
        return False  # bytes after the response: nothing asked for them
    connection.start_next_cycle()
    return True


def decode_headers(head: h11.Response) -> tuple[tuple[str, str], ...]:
    """The server's headers in its order and spelling. Latin-1 maps every byte to one
    character: nothing the server sends can fail to decode."""
    return tuple(
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, value in head.headers.raw_items()
    )


# Connections open at once (and so requests sent at once) by one executor, at the least.
MAX_CONNECTIONS = 32


def connection_cap(pool_size: int | None = None, max_connections: int | None = None) -> int:
    """The cap on one executor's connections: ``max_connections`` when given, else room for a
    client's whole in-flight window (``pool_size`` calls) plus a GET stream per session (a
    ``pooled`` client runs ``pool_size`` sessions) and two more (a cancel, the DELETE), and
    never below ``MAX_CONNECTIONS``. Requests over the cap wait in the executor."""
    if max_connections is not None:
        return max_connections
    if pool_size is None:
        return MAX_CONNECTIONS
    return max(MAX_CONNECTIONS, 2 * pool_size + 2)


class Pool(Generic[C]):
    """The idle keep-alive connections of one executor, per origin, and the count of its open
    connections (idle, in use or being opened), which never exceeds ``max_connections``.

    No I/O: the executor closes what it is handed. It admits at most ``max_connections``
    requests at once, so when a new connection would go over the cap, at least one pooled
    connection is idle and ``reserve`` hands it over to be closed.
    """

    def __init__(self, max_connections: int) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.max_connections = max_connections
        self.open = 0
        self._idle: dict[Origin, list[C]] = {}

    def take(self, origin: Origin) -> C | None:
        """The most recently used idle connection to ``origin``, or None. The caller checks
        that it is still usable and ``discard``s it otherwise."""
        idle = self._idle.get(origin)
        if not idle:
            return None
        connection = idle.pop()
        if not idle:
            del self._idle[origin]
        return connection

    def put(self, origin: Origin, connection: C) -> None:
        """``connection`` finished a request cleanly and waits for the next one."""
        self._idle.setdefault(origin, []).append(connection)

    def reserve(self) -> C | None:
        """Count a connection about to be opened. At the cap, returns an idle connection (the
        oldest of the origin pooled first) that the caller must close: it is no longer
        counted."""
        self.open += 1
        if self.open <= self.max_connections or not self._idle:
            return None
        origin = next(iter(self._idle))
        idle = self._idle[origin]
        connection = idle.pop(0)
        if not idle:
            del self._idle[origin]
        self.open -= 1
        return connection

    def discard(self) -> None:
        """A connection (in use, or taken and found closed) was closed, or failed to open."""
        self.open -= 1

    def drain(self) -> list[C]:
        """Every idle connection, for the caller to close; they are no longer counted."""
        connections = [c for idle in self._idle.values() for c in idle]
        self._idle.clear()
        self.open -= len(connections)
        return connections


class StartOrder(Generic[R]):
    """The ``StartHttp`` contract's order rule, kept in one place for both executors: requests
    are written in the order they were started. A request that has its connection waits until
    every request started before it was written or ended unwritten (aborted, failed).

    The machine relies on it: the ``notifications/initialized`` POST, started while the
    ``initialize`` answer still streams, must reach the server before the calls started once
    the session is ready, whichever of them gets a connection first.

    No I/O and no lock: the executor calls it under its own (the sync one) or from its one
    thread (the anyio one), and wakes whoever ``written`` names.
    """

    __slots__ = ("_unsent",)

    def __init__(self) -> None:
        # Insertion-ordered: the requests started and neither written nor ended, oldest first.
        self._unsent: dict[R, None] = {}

    def started(self, request: R) -> None:
        """``request`` was started: it is written after every request started before it."""
        self._unsent[request] = None

    def head(self) -> R | None:
        """The request whose turn it is to be written, or None when every request was."""
        return next(iter(self._unsent), None)

    def written(self, request: R) -> R | None:
        """``request`` was written, or ended unwritten; a request not (or no longer) waiting
        is ignored. Returns the new head when ``request`` was the head (its writer may be
        waiting for its turn), else None."""
        if request not in self._unsent:
            return None
        was_head = self.head() is request
        del self._unsent[request]
        return self.head() if was_head else None

    def clear(self) -> None:
        """Forget every request (the executor closed)."""
        self._unsent.clear()
