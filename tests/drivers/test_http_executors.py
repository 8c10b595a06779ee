"""The HTTP executors of both drivers (mcp_asyncio on asyncio and trio, mcp_sync on threads)
against a small real HTTP/1.1 server on loopback, with a list-collecting fake ``feed``: no
SessionMachine involved. They pin down what the machine relies on: exact headers out, head and
body streamed in as they arrive, keep-alive reuse (over TLS too) and connections that must not
be reused (closed by the server while idle, "Connection: close", bytes nobody asked for),
verified TLS, reasons without secrets, the cap on connections (requests over it wait), and an
abort that ends a request in any phase (waiting for a connection, connecting, the TLS
handshake, waiting for the head, reading a stalled body) with nothing fed after it and its
connection closed. The sync executor's worker threads are reused and end when idle. At the end,
how a failure is worded (_mcp_io.http); the pure HTTP/1.1 pieces both executors share
(_mcp_io.h11wire) are tested without I/O in tests/io/test_h11wire.py."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import h11
import pytest

from _mcp_io.h11wire import ConnectError, ReadError, RequestBuilder, receive, request_bytes
from _mcp_io.http import reason
from mcp_asyncio._http import HttpEvent
from mcp_asyncio._http import HttpExecutor as AsyncExecutor
from mcp_core import (
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
    StartHttp,
)
from mcp_sync._http import HttpExecutor as SyncExecutor
from tests.conftest import wait_until
from tests.drivers.backends import anyio_backends  # noqa: F401 (asyncio and trio)
from tests.drivers.pki import Pki
from tests.servers.loopback import LoopbackServer

pytestmark = pytest.mark.timeout(60)

WAIT = 10.0  # the deadline of every wait for an event
BIG_WAIT = 60.0  # for a thousand requests on a slow CI machine (asyncio takes ~3 s here)
PROMPT = 2.0  # what "abort ends it promptly" means


# --- the server ------------------------------------------------------------------------------


class Server(LoopbackServer):
    """HTTP/1.1 on 127.0.0.1 with h11, one thread per connection, keep-alive.

    Routes: /json; /sse (one event, then the rest once `release` is set); /stall (the head and
    one event, then nothing); /stall-head (nothing at all); /echo (the request as JSON);
    /redirect (302); /json-then-close (/json, then the server closes the connection, as one
    closes an idle keep-alive connection); /json-close (/json with "Connection: close");
    /json-extra (/json followed by bytes nobody asked for); /close (closes without answering).
    It counts accepted and open connections: a connection is closed when the
    client closed it (the server reads EOF), so `open == 0` means nothing was left behind.
    With `tls`, it speaks HTTPS; `silent`, it reads every connection until EOF and says nothing
    (not even a TLS handshake).
    """

    def __init__(self, tls: ssl.SSLContext | None = None, *, silent: bool = False) -> None:
        self._tls = tls
        self._silent = silent
        self.requests: list[str] = []  # targets, in arrival order
        self.release = threading.Event()
        super().__init__(WAIT)
        self.url = f"http://127.0.0.1:{self.port}"

    def __repr__(self) -> str:
        return "the server"

    def _closing(self) -> None:
        self.release.set()

    def _serve(self, connection: socket.socket) -> None:
        peer = h11.Connection(h11.SERVER)
        try:
            if self._silent:
                _read_until_eof(connection)
                return
            if self._tls is not None:
                connection = self._tls.wrap_socket(connection, server_side=True)
                with self.changed:  # the plain socket is detached now: close() needs this one
                    self._connections.append(connection)
            while (request := _read_request(peer, connection)) is not None:
                with self.changed:
                    self.requests.append(request[0].target.decode())
                    self.changed.notify_all()
                if not self._respond(peer, connection, *request):
                    break
                if peer.our_state is h11.MUST_CLOSE:
                    break
                peer.start_next_cycle()
        except (OSError, h11.ProtocolError):
            pass
        finally:
            connection.close()
            with self.changed:
                self.open -= 1
                self.changed.notify_all()

    def _respond(
        self, peer: h11.Connection, connection: socket.socket, request: h11.Request, body: bytes
    ) -> bool:
        def send(*events: h11.Event) -> None:
            for event in events:
                connection.sendall(peer.send(event) or b"")

        target = request.target.decode()
        sse = [(b"Content-Type", b"text/event-stream")]
        if target in ("/json-then-close", "/json-close", "/json-extra"):
            data = b'{"ok": true}'
            headers = [(b"Content-Type", b"application/json"), (b"Content-Length", b"12")]
            if target == "/json-close":
                headers.append((b"Connection", b"close"))
            events = (h11.Response(status_code=200, headers=headers), h11.Data(data=data))
            response = b"".join(peer.send(event) or b"" for event in (*events, h11.EndOfMessage()))
            if target == "/json-extra":  # in the same write: no race with the next request
                response += b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
            connection.sendall(response)
            return target != "/json-then-close"
        if target == "/close":
            return False
        if target.split("?")[0] == "/json":  # a query tells requests apart in `requests`
            data = b'{"ok": true}'
            headers = [
                (b"Content-Type", b"application/json"),
                (b"X-Trace", b"a"),
                (b"Content-Length", str(len(data)).encode()),
                (b"x-trace", b"b"),
            ]
            send(
                h11.Response(status_code=200, headers=headers),
                h11.Data(data=data),
                h11.EndOfMessage(),
            )
        elif target == "/echo":
            data = json.dumps(
                {
                    "method": request.method.decode(),
                    "headers": [[n.decode(), v.decode()] for n, v in request.headers.raw_items()],
                    "body": body.decode(),
                }
            ).encode()
            send(
                h11.Response(status_code=200, headers=[(b"Content-Length", b"%d" % len(data))]),
                h11.Data(data=data),
                h11.EndOfMessage(),
            )
        elif target == "/redirect":
            headers = [(b"Location", b"/json"), (b"Content-Length", b"0")]
            send(h11.Response(status_code=302, headers=headers), h11.EndOfMessage())
        elif target == "/sse":  # chunked: h11 frames a body of unknown length
            send(h11.Response(status_code=200, headers=sse), h11.Data(data=b"data: one\n\n"))
            self.release.wait(WAIT)
            send(
                h11.Data(data=b"data: two\n\n"),
                h11.Data(data=b"data: three\n\n"),
                h11.EndOfMessage(),
            )
        elif target == "/stall":
            send(h11.Response(status_code=200, headers=sse), h11.Data(data=b"data: one\n\n"))
            _read_until_eof(connection)
            return False
        elif target == "/stall-head":
            _read_until_eof(connection)
            return False
        else:
            send(
                h11.Response(status_code=404, headers=[(b"Content-Length", b"0")]),
                h11.EndOfMessage(),
            )
        return True


def _read_request(
    peer: h11.Connection, connection: socket.socket
) -> tuple[h11.Request, bytes] | None:
    request: h11.Request | None = None
    body = b""
    while True:
        event = peer.next_event()
        if event is h11.NEED_DATA:
            peer.receive_data(connection.recv(65536))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert request is not None
            return request, body
        elif isinstance(event, h11.ConnectionClosed):
            return None


def _read_until_eof(connection: socket.socket) -> None:
    # The client stays quiet until it closes the connection: EOF is the server's proof.
    while connection.recv(65536):
        pass


@pytest.fixture
def server() -> Iterator[Server]:
    server = Server()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate for 127.0.0.1 signed by it, server key) as PEM files."""
    pytest.importorskip("cryptography.x509")
    pki = Pki(tmp_path_factory.mktemp("tls"))
    return pki.ca, pki.server_cert, pki.server_key


@pytest.fixture
def tls_server(tls_files: tuple[Path, Path, Path]) -> Iterator[Server]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls_files[1], tls_files[2])
    server = Server(context)
    server.url = server.url.replace("http:", "https:")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def trust_test_ca(tls_files: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    # OpenSSL's default verify paths (ssl.create_default_context) honour SSL_CERT_FILE.
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_files[0]))


@pytest.fixture
def silent_server() -> Iterator[Server]:
    server = Server(silent=True)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def refused_url() -> str:
    # A port that was just free: nothing listens on it.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.fixture
def hanging_connect_url() -> Iterator[str]:
    """A listener whose accept queue is full and never drained: the kernel drops further SYNs,
    so a connect() to it hangs (Linux)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("relies on Linux dropping SYNs to a full accept queue")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(8):
        filler = socket.socket()
        filler.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def _syn_sent_to(port: int) -> int:
    """Sockets of this host in SYN_SENT towards 127.0.0.1:port (from /proc/net/tcp)."""
    count = 0
    with open("/proc/net/tcp", encoding="ascii") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[2].endswith(f":{port:04X}") and fields[3] == "02":
                count += 1
    return count


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].strip("/"))


def _action(
    stream: int,
    url: str,
    *,
    method: str = "GET",
    headers: tuple[tuple[str, str], ...] = (),
    body: bytes | None = None,
) -> StartHttp:
    return StartHttp(stream=stream, method=method, url=url, headers=headers, body=body)


# --- what every exchange must look like ----------------------------------------------------


def _of(events: list[HttpEvent], stream: int) -> list[HttpEvent]:
    return [event for event in events if event.stream == stream]


def _by_stream(events: list[HttpEvent]) -> dict[int, list[HttpEvent]]:
    grouped: dict[int, list[HttpEvent]] = {}
    for event in events:
        grouped.setdefault(event.stream, []).append(event)
    return grouped


def _finished(events: list[HttpEvent], stream: int) -> bool:
    mine = _of(events, stream)
    return bool(mine) and isinstance(mine[-1], HttpResponseEnded | HttpFailed)


def _exchange(events: list[HttpEvent], stream: int) -> tuple[HttpResponseStarted, bytes]:
    """The head and the whole body of a completed exchange, checking the event order."""
    mine = _of(events, stream)
    assert isinstance(mine[0], HttpResponseStarted), mine
    assert isinstance(mine[-1], HttpResponseEnded), mine
    assert all(isinstance(event, HttpBodyReceived) for event in mine[1:-1]), mine
    times = [event.now for event in mine]
    assert times == sorted(times)
    return mine[0], b"".join(e.data for e in mine[1:-1] if isinstance(e, HttpBodyReceived))


def _check_json(events: list[HttpEvent], stream: int) -> None:
    head, body = _exchange(events, stream)
    assert head.status == 200
    assert head.headers[:2] == (("Content-Type", "application/json"), ("X-Trace", "a"))
    assert head.headers[3] == ("x-trace", "b")  # server order and spelling kept
    assert json.loads(body) == {"ok": True}


def _check_echo(events: list[HttpEvent], stream: int, server: Server) -> None:
    _head, body = _exchange(events, stream)
    seen = json.loads(body)
    assert seen["method"] == "POST"
    assert seen["body"] == '{"x": 1}'
    # Exactly the headers given, plus Host and the framing header: nothing else.
    assert seen["headers"] == [
        ["Host", f"127.0.0.1:{server.port}"],
        ["Accept", "application/json, text/event-stream"],
        ["Authorization", "Bearer s3cret"],
        ["Content-Length", "8"],
    ]


ECHO_HEADERS = (
    ("Accept", "application/json, text/event-stream"),
    ("Authorization", "Bearer s3cret"),
)


def _http_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp-sync-http-")]


# --- mcp_sync ------------------------------------------------------------------------------


class SyncHarness:
    """A sync executor feeding a list. Standing in for the machine, the feed drops an event
    whose stream was aborted meanwhile (the machine's one filter for late events), checked
    under the lock that abort() also runs under, as the client does with the machine."""

    def __init__(self, max_connections: int = 32) -> None:
        self.events: list[HttpEvent] = []
        self.threads: dict[int, str] = {}  # stream -> the worker thread that fed its events
        self.ended = 0  # HttpResponseEnded events: counted as they come, for the big test
        self._changed = threading.Condition()
        self.executor = SyncExecutor(self._feed, time.monotonic, max_connections=max_connections)

    def _feed(self, event: HttpEvent) -> None:
        with self._changed:
            if self.executor.is_live(event.stream):
                self.events.append(event)
                self.threads[event.stream] = threading.current_thread().name
                self.ended += isinstance(event, HttpResponseEnded)
                self._changed.notify_all()

    def start(self, action: StartHttp) -> None:
        with self._changed:
            self.executor.start(action)

    def abort(self, stream: int) -> None:
        with self._changed:
            self.executor.abort(stream)

    def wait_for(self, predicate: Callable[[list[HttpEvent]], bool], timeout: float = WAIT) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: predicate(self.events), timeout), self.events

    def snapshot(self) -> list[HttpEvent]:
        with self._changed:
            return list(self.events)

    def close(self, timeout: float = WAIT) -> None:
        """Close the executor: every worker has ended when it returns, within `timeout`."""
        self.executor.close(time.monotonic() + timeout)
        assert _http_threads() == []
        assert self.executor.in_flight == 0

    def proves_released(self, url: str, stream: int = 99) -> None:
        """With one worker and one connection (max_connections=1), a request after an abort
        completes promptly: the aborted request's worker was woken and let go of its
        connection, which abort() alone achieved."""
        self.start(_action(stream, url + "/json"))
        self.wait_for(lambda events: _finished(events, stream), PROMPT)
        _check_json(self.events, stream)


@pytest.fixture
def sync_harness() -> Iterator[SyncHarness]:
    harness = SyncHarness()
    try:
        yield harness
    finally:
        harness.close()


@pytest.fixture
def one_connection() -> Iterator[SyncHarness]:
    """A sync executor with a single worker and a single connection."""
    harness = SyncHarness(max_connections=1)
    try:
        yield harness
    finally:
        harness.close()


def test_sync_json_and_exact_headers(sync_harness: SyncHarness, server: Server) -> None:
    sync_harness.start(_action(1, server.url + "/json"))
    sync_harness.start(
        _action(2, server.url + "/echo", method="POST", headers=ECHO_HEADERS, body=b'{"x": 1}')
    )
    sync_harness.wait_for(lambda events: _finished(events, 1) and _finished(events, 2))
    _check_json(sync_harness.events, 1)
    _check_echo(sync_harness.events, 2, server)


def test_sync_sse_events_arrive_before_the_body_ends(
    sync_harness: SyncHarness, server: Server
) -> None:
    sync_harness.start(_action(1, server.url + "/sse"))
    sync_harness.wait_for(lambda events: any(isinstance(e, HttpBodyReceived) for e in events))
    assert not _finished(sync_harness.snapshot(), 1)  # the server holds the rest back
    server.release.set()
    sync_harness.wait_for(lambda events: _finished(events, 1))
    head, body = _exchange(sync_harness.events, 1)
    assert head.headers == (("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked"))
    assert body == b"data: one\n\ndata: two\n\ndata: three\n\n"


def test_sync_abort_ends_a_stalled_body(one_connection: SyncHarness, server: Server) -> None:
    one_connection.start(_action(1, server.url + "/stall"))
    one_connection.wait_for(lambda events: any(isinstance(e, HttpBodyReceived) for e in events))
    before = one_connection.snapshot()
    one_connection.abort(1)
    server.wait(lambda: server.open == 0)  # the half-read connection was closed, not pooled
    assert not one_connection.executor.is_live(1)
    one_connection.proves_released(server.url)
    assert _of(one_connection.snapshot(), 1) == before  # no HttpFailed, nothing after abort
    assert server.accepted == 2


def test_sync_abort_while_waiting_for_the_head(one_connection: SyncHarness, server: Server) -> None:
    one_connection.start(_action(1, server.url + "/stall-head"))
    server.wait(lambda: server.requests == ["/stall-head"])
    one_connection.abort(1)
    server.wait(lambda: server.open == 0)
    one_connection.proves_released(server.url)
    assert _of(one_connection.snapshot(), 1) == []


def test_sync_abort_while_connecting(
    one_connection: SyncHarness, hanging_connect_url: str, server: Server
) -> None:
    port = _port(hanging_connect_url)
    baseline = _syn_sent_to(port)
    one_connection.start(_action(1, hanging_connect_url))
    wait_until(lambda: _syn_sent_to(port) > baseline, WAIT, message="connect() is pending")
    one_connection.abort(1)
    one_connection.proves_released(server.url)
    assert _of(one_connection.snapshot(), 1) == []


def test_sync_abort_while_queued(one_connection: SyncHarness, server: Server) -> None:
    # The only connection is taken by a stalled body: stream 2 waits in the executor's queue,
    # where abort() drops it; it is never sent.
    one_connection.start(_action(1, server.url + "/stall"))
    one_connection.wait_for(lambda events: _of(events, 1) != [])
    one_connection.start(_action(2, server.url + "/json"))
    assert one_connection.executor.in_flight == 2
    one_connection.abort(2)
    assert one_connection.executor.in_flight == 1
    one_connection.abort(1)
    one_connection.proves_released(server.url)
    assert server.requests == ["/stall", "/json"]  # the /json of stream 99 only
    assert _of(one_connection.snapshot(), 2) == []


def test_sync_close_aborts_everything(sync_harness: SyncHarness, server: Server) -> None:
    for stream, path in enumerate(["/stall", "/stall-head", "/stall"]):
        sync_harness.start(_action(stream, server.url + path))
    server.wait(lambda: len(server.requests) == 3)
    # Everything the stalled servers send has arrived: nothing more is coming.
    sync_harness.wait_for(lambda events: len(_of(events, 0)) == len(_of(events, 2)) == 2)
    before = sync_harness.snapshot()
    sync_harness.close(PROMPT)  # every worker was woken and has ended by then
    server.wait(lambda: server.open == 0)
    assert sync_harness.snapshot() == before
    sync_harness.executor.start(_action(9, server.url + "/json"))  # ignored once closed
    assert _http_threads() == []


def test_sync_tls_is_verified_and_kept_alive(
    sync_harness: SyncHarness, tls_server: Server, trust_test_ca: None
) -> None:
    sync_harness.start(_action(1, tls_server.url + "/json"))
    sync_harness.wait_for(lambda events: _finished(events, 1))
    sync_harness.start(_action(2, tls_server.url + "/json"))
    sync_harness.wait_for(lambda events: _finished(events, 2))
    _check_json(sync_harness.events, 1)
    _check_json(sync_harness.events, 2)
    assert tls_server.accepted == 1  # one TLS handshake for both


def test_sync_abort_ends_a_stalled_tls_body(
    one_connection: SyncHarness, tls_server: Server, trust_test_ca: None
) -> None:
    one_connection.start(_action(1, tls_server.url + "/stall"))
    one_connection.wait_for(lambda events: any(isinstance(e, HttpBodyReceived) for e in events))
    before = one_connection.snapshot()
    one_connection.abort(1)
    tls_server.wait(lambda: tls_server.open == 0)
    one_connection.proves_released(tls_server.url)
    assert _of(one_connection.snapshot(), 1) == before


def test_sync_tls_refuses_an_unknown_certificate(
    sync_harness: SyncHarness, tls_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    sync_harness.start(_action(1, tls_server.url + "/json"))
    sync_harness.wait_for(lambda events: _finished(events, 1))
    [failed] = sync_harness.events
    assert isinstance(failed, HttpFailed)
    assert failed.reason.startswith("ConnectError: [SSL: CERTIFICATE_VERIFY_FAILED]")


def test_sync_abort_during_the_tls_handshake(
    one_connection: SyncHarness, silent_server: Server, server: Server
) -> None:
    one_connection.start(_action(1, silent_server.url.replace("http:", "https:") + "/"))
    silent_server.wait(lambda: silent_server.accepted == 1)
    one_connection.abort(1)
    silent_server.wait(lambda: silent_server.open == 0)
    one_connection.proves_released(server.url)
    assert _of(one_connection.snapshot(), 1) == []


def test_sync_connection_refused(sync_harness: SyncHarness, refused_url: str) -> None:
    sync_harness.start(_action(1, refused_url))
    sync_harness.wait_for(lambda events: _finished(events, 1))
    assert sync_harness.events == [
        HttpFailed(
            now=sync_harness.events[0].now,
            stream=1,
            reason="ConnectError: [Errno 111] Connection refused",
        )
    ]


def test_sync_keeps_the_connection_alive(sync_harness: SyncHarness, server: Server) -> None:
    sync_harness.start(_action(1, server.url + "/json"))
    sync_harness.wait_for(lambda events: _finished(events, 1))
    sync_harness.start(_action(2, server.url + "/json"))
    sync_harness.wait_for(lambda events: _finished(events, 2))
    _check_json(sync_harness.events, 1)
    _check_json(sync_harness.events, 2)
    assert server.accepted == 1


def test_sync_follows_no_redirect(sync_harness: SyncHarness, server: Server) -> None:
    sync_harness.start(_action(1, server.url + "/redirect"))
    sync_harness.wait_for(lambda events: _finished(events, 1))
    head, _body = _exchange(sync_harness.events, 1)
    assert head.status == 302
    assert server.requests == ["/redirect"]


def test_sync_failure_reasons_hold_no_header_value(
    sync_harness: SyncHarness, server: Server
) -> None:
    sync_harness.start(_action(1, server.url + "/json", headers=(("X-Key", "s3cret\r\nX: y"),)))
    sync_harness.start(_action(2, server.url + "/json", headers=(("X-Key", "s3cret\u2603"),)))
    sync_harness.start(_action(3, "ftp://user:s3cret@127.0.0.1/"))
    sync_harness.wait_for(lambda events: all(_finished(events, s) for s in (1, 2, 3)))
    reasons = {e.stream: e.reason for e in sync_harness.events if isinstance(e, HttpFailed)}
    assert reasons[1] == "LocalProtocolError"
    assert reasons[2] == "UnicodeEncodeError"
    assert reasons[3].startswith("UnsupportedProtocol")
    assert not any("s3cret" in reason for reason in reasons.values())


def _json_ok(events: list[HttpEvent], stream: int) -> None:
    head, body = _exchange(events, stream)
    assert head.status == 200
    assert json.loads(body) == {"ok": True}


class _SyncTurns:
    """Request 1 leaves an idle connection; request 2 (/sse) holds it; request 3 must open a
    connection, and is held there (``gate``); then 2 ends and its connection is idle again,
    for ``start(4)`` to take at once while 3 is still connecting. Notes which requests
    entered their wait for a turn (``entered``) and the order they were let go (``written``).
    """

    def __init__(self, harness: SyncHarness, server: Server) -> None:
        self.harness, self.server = harness, server
        self.gate = threading.Event()
        self.entered: dict[int, threading.Event] = {4: threading.Event()}
        self.written: list[int] = []
        executor = harness.executor
        connecting = threading.Event()
        opening, waiting = executor._open, executor._wait_turn

        def held_open(request: Any, origin: Any) -> Any:
            connecting.set()
            assert self.gate.wait(WAIT)
            return opening(request, origin)

        def wait_turn(request: Any) -> None:
            self.entered.setdefault(request.action.stream, threading.Event()).set()
            waiting(request)
            self.written.append(request.action.stream)

        harness.start(_action(1, server.url + "/json"))
        harness.wait_for(lambda events: _finished(events, 1))
        executor._open = held_open  # type: ignore[method-assign]
        executor._wait_turn = wait_turn  # type: ignore[method-assign]
        harness.start(_action(2, server.url + "/sse"))  # takes the idle connection
        harness.wait_for(lambda events: len(_of(events, 2)) >= 2)
        harness.start(_action(3, server.url + "/json?3"))  # must connect: held
        assert connecting.wait(WAIT)  # before the connection of 2 is idle again
        server.release.set()
        harness.wait_for(lambda events: _finished(events, 2))  # the connection is idle


def test_sync_requests_are_written_in_the_order_they_were_started(
    sync_harness: SyncHarness, server: Server
) -> None:
    # As the async test: request 4 finds an idle connection at once and still goes after 3.
    turns = _SyncTurns(sync_harness, server)
    sync_harness.start(_action(4, server.url + "/json?4"))
    turns.gate.set()
    sync_harness.wait_for(lambda events: _finished(events, 3) and _finished(events, 4))
    _check_json(sync_harness.events, 3)
    _check_json(sync_harness.events, 4)
    assert turns.written == [2, 3, 4]
    assert server.accepted == 2


def test_sync_a_request_aborted_while_waiting_its_turn_is_never_written(
    sync_harness: SyncHarness, server: Server
) -> None:
    # Request 4's worker has the idle connection and waits for 3 to be written. Aborting 4
    # wakes that worker: 4 is never written, 3 goes out.
    turns = _SyncTurns(sync_harness, server)
    sync_harness.start(_action(4, server.url + "/json?4"))  # takes it, waits for 3
    assert turns.entered[4].wait(WAIT)
    sync_harness.abort(4)
    turns.gate.set()
    sync_harness.wait_for(lambda events: _finished(events, 3))
    server.wait(lambda: "/json?3" in server.requests)
    _check_json(sync_harness.events, 3)
    assert _of(sync_harness.events, 4) == []
    sync_harness.executor.close(time.monotonic() + WAIT)
    assert "/json?4" not in server.requests
    assert sync_harness.executor.in_flight == 0


def test_sync_workers_and_connections_are_reused(sync_harness: SyncHarness, server: Server) -> None:
    # One request after another: one worker thread and one connection serve them all.
    for stream in range(10):
        sync_harness.start(_action(stream, server.url + "/json"))
        sync_harness.wait_for(lambda events, stream=stream: _finished(events, stream))
        _check_json(sync_harness.events, stream)
    assert server.accepted == 1
    assert set(sync_harness.threads.values()) == {"mcp-sync-http-1"}


def test_sync_an_idle_worker_ends(
    sync_harness: SyncHarness, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("mcp_sync._http._IDLE_EXIT", 0.05)
    sync_harness.start(_action(1, server.url + "/json"))
    sync_harness.wait_for(lambda events: _finished(events, 1))
    for thread in _http_threads():
        thread.join(WAIT)  # it ends by itself, having had nothing to do
    assert _http_threads() == []
    sync_harness.start(_action(2, server.url + "/json"))  # a new worker, the pooled connection
    sync_harness.wait_for(lambda events: _finished(events, 2))
    _check_json(sync_harness.events, 2)
    assert server.accepted == 1


def test_sync_a_connection_the_server_closed_while_idle_is_not_used(
    sync_harness: SyncHarness, server: Server
) -> None:
    sync_harness.start(_action(1, server.url + "/json-then-close"))
    sync_harness.wait_for(lambda events: _finished(events, 1))
    server.wait(lambda: server.open == 0)  # closed by the server, still in the client's pool
    sync_harness.start(_action(2, server.url + "/json"))
    sync_harness.wait_for(lambda events: _finished(events, 2))
    _json_ok(sync_harness.events, 1)
    _check_json(sync_harness.events, 2)  # no HttpFailed: a new connection served it
    assert server.accepted == 2


@pytest.mark.parametrize("path", ["/json-close", "/json-extra"])
def test_sync_a_connection_that_cannot_serve_again_is_closed(
    sync_harness: SyncHarness, server: Server, path: str
) -> None:
    # "Connection: close", or bytes after the response: that connection is not pooled.
    sync_harness.start(_action(1, server.url + path))
    sync_harness.wait_for(lambda events: _finished(events, 1))
    sync_harness.start(_action(2, server.url + "/json"))
    sync_harness.wait_for(lambda events: _finished(events, 2))
    _json_ok(sync_harness.events, 1)
    _check_json(sync_harness.events, 2)
    assert server.accepted == 2


def test_sync_a_connection_closed_without_an_answer(
    sync_harness: SyncHarness, server: Server
) -> None:
    sync_harness.start(_action(1, server.url + "/close"))
    sync_harness.wait_for(lambda events: _finished(events, 1))
    [failed] = sync_harness.events
    assert failed == HttpFailed(
        now=failed.now,
        stream=1,
        reason="RemoteProtocolError: the server closed the connection before answering",
    )
    server.wait(lambda: server.open == 0)


def test_sync_requests_over_the_cap_wait_for_a_connection(server: Server) -> None:
    harness = SyncHarness(max_connections=2)
    try:
        for stream in range(3):
            harness.start(_action(stream, server.url + "/stall"))
        server.wait(lambda: len(server.requests) == 2)
        assert harness.executor.in_flight == 3
        assert server.accepted == 2  # the third waits in the executor, not even connecting
        harness.abort(0)  # its connection is closed: the third request gets one
        server.wait(lambda: len(server.requests) == 3)
        harness.wait_for(lambda events: _of(events, 1) != [] and _of(events, 2) != [])
        assert server.accepted == 3
        assert len(_http_threads()) == 2
    finally:
        harness.close()
    server.wait(lambda: server.open == 0)


@pytest.mark.slow
def test_sync_a_thousand_requests_leave_nothing_behind(
    sync_harness: SyncHarness, server: Server
) -> None:
    streams = range(1000)
    for stream in streams:
        sync_harness.start(_action(stream, server.url + "/json"))
    sync_harness.wait_for(lambda _: sync_harness.ended == len(streams), BIG_WAIT)
    for stream, events in _by_stream(sync_harness.events).items():
        _check_json(events, stream)
    assert 1 <= server.accepted <= 32
    assert 1 <= len(set(sync_harness.threads.values())) <= 32  # workers served many each
    sync_harness.close()
    server.wait(lambda: server.open == 0)  # every pooled connection was closed


# --- mcp_asyncio ---------------------------------------------------------------------------


class AsyncHarness:
    """An async executor in its own task group, feeding a list, unfiltered: the tests see
    everything it feeds, after an abort too (it reads nothing more for an aborted stream)."""

    def __init__(self, tasks: Any, max_connections: int | None = None) -> None:
        self.events: list[HttpEvent] = []
        self.ended = 0
        self._changed = anyio.Event()
        self.executor = AsyncExecutor(
            self._feed, time.monotonic, tasks, max_connections=max_connections
        )

    def _feed(self, event: HttpEvent) -> None:
        self.events.append(event)
        self.ended += isinstance(event, HttpResponseEnded)
        self._changed.set()

    async def wait_for(
        self, predicate: Callable[[list[HttpEvent]], bool], timeout: float = WAIT
    ) -> None:
        with anyio.fail_after(timeout):
            while not predicate(self.events):
                self._changed = anyio.Event()
                await self._changed.wait()


async def _server_wait(server: Server, predicate: Callable[[], bool]) -> None:
    await anyio.to_thread.run_sync(server.wait, predicate)


@contextlib.asynccontextmanager
async def _async_harness(
    *, close: bool = True, timeout: float = 2 * WAIT, max_connections: int | None = None
) -> Any:
    """Yields a harness in a task group of its own; on exit closes the executor (unless
    `close` is false) and waits for every task of the executor to end. Not closed, its tasks
    must end by themselves within PROMPT of the exit (e.g. after an abort): TimeoutError
    otherwise."""
    with anyio.fail_after(timeout) as scope:
        async with anyio.create_task_group() as tasks:
            harness = AsyncHarness(tasks, max_connections)
            try:
                yield harness
            finally:
                if close:
                    await harness.executor.aclose()
                else:
                    scope.deadline = min(scope.deadline, anyio.current_time() + PROMPT)
    assert harness.executor.in_flight == 0


@pytest.mark.anyio
async def test_async_json_and_exact_headers(server: Server) -> None:
    async with _async_harness() as harness:
        harness.executor.start(_action(1, server.url + "/json"))
        harness.executor.start(
            _action(2, server.url + "/echo", method="POST", headers=ECHO_HEADERS, body=b'{"x": 1}')
        )
        await harness.wait_for(lambda events: _finished(events, 1) and _finished(events, 2))
        _check_json(harness.events, 1)
        _check_echo(harness.events, 2, server)


@pytest.mark.anyio
async def test_async_sse_events_arrive_before_the_body_ends(server: Server) -> None:
    async with _async_harness() as harness:
        harness.executor.start(_action(1, server.url + "/sse"))
        await harness.wait_for(lambda events: any(isinstance(e, HttpBodyReceived) for e in events))
        assert not _finished(harness.events, 1)
        server.release.set()
        await harness.wait_for(lambda events: _finished(events, 1))
        _head, body = _exchange(harness.events, 1)
        assert body == b"data: one\n\ndata: two\n\ndata: three\n\n"


@pytest.mark.anyio
async def test_async_abort_ends_a_stalled_body(server: Server) -> None:
    # Not closed: leaving the task group proves the aborted task ended by itself.
    async with _async_harness(close=False) as harness:
        harness.executor.start(_action(1, server.url + "/stall"))
        await harness.wait_for(lambda events: any(isinstance(e, HttpBodyReceived) for e in events))
        before = list(harness.events)
        harness.executor.abort(1)
    # The task group waited for the aborted task, which ended within PROMPT (_async_harness).
    assert harness.events == before
    await _server_wait(server, lambda: server.open == 0)
    await harness.executor.aclose()


@pytest.mark.anyio
async def test_async_abort_while_waiting_for_the_head(server: Server) -> None:
    async with _async_harness(close=False) as harness:
        harness.executor.start(_action(1, server.url + "/stall-head"))
        await _server_wait(server, lambda: server.requests == ["/stall-head"])
        harness.executor.abort(1)
    assert harness.events == []
    await _server_wait(server, lambda: server.open == 0)
    await harness.executor.aclose()


@pytest.mark.anyio
async def test_async_abort_while_connecting(hanging_connect_url: str) -> None:
    port = _port(hanging_connect_url)
    baseline = _syn_sent_to(port)
    async with _async_harness(close=False) as harness:
        harness.executor.start(_action(1, hanging_connect_url))
        with anyio.fail_after(WAIT):
            while _syn_sent_to(port) <= baseline:  # no event for a pending connect: poll
                await anyio.sleep(0.01)
        harness.executor.abort(1)
    assert harness.events == []
    await harness.executor.aclose()


@pytest.mark.anyio
async def test_async_aclose_aborts_everything(server: Server) -> None:
    async with _async_harness() as harness:
        for stream, path in enumerate(["/stall", "/stall-head", "/stall"]):
            harness.executor.start(_action(stream, server.url + path))
        await _server_wait(server, lambda: len(server.requests) == 3)
        before = list(harness.events)
        await harness.executor.aclose()
        assert harness.events == before
        harness.executor.start(_action(9, server.url + "/json"))  # ignored once closed
    await _server_wait(server, lambda: server.open == 0)
    assert server.requests[3:] == []


@pytest.mark.anyio
async def test_async_tls_is_verified_and_kept_alive(
    tls_server: Server, trust_test_ca: None
) -> None:
    async with _async_harness() as harness:
        harness.executor.start(_action(1, tls_server.url + "/json"))
        await harness.wait_for(lambda events: _finished(events, 1))
        harness.executor.start(_action(2, tls_server.url + "/json"))
        await harness.wait_for(lambda events: _finished(events, 2))
        _check_json(harness.events, 1)
        _check_json(harness.events, 2)
        assert tls_server.accepted == 1


@pytest.mark.anyio
async def test_async_abort_ends_a_stalled_tls_body(tls_server: Server, trust_test_ca: None) -> None:
    async with _async_harness(close=False) as harness:
        harness.executor.start(_action(1, tls_server.url + "/stall"))
        await harness.wait_for(lambda events: any(isinstance(e, HttpBodyReceived) for e in events))
        before = list(harness.events)
        harness.executor.abort(1)
    assert harness.events == before
    await _server_wait(tls_server, lambda: tls_server.open == 0)
    await harness.executor.aclose()


@pytest.mark.anyio
async def test_async_tls_refuses_an_unknown_certificate(
    tls_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    async with _async_harness() as harness:
        harness.executor.start(_action(1, tls_server.url + "/json"))
        await harness.wait_for(lambda events: _finished(events, 1))
        [failed] = harness.events
        assert isinstance(failed, HttpFailed)
        assert failed.reason.startswith("ConnectError")
        assert "CERTIFICATE_VERIFY_FAILED" in failed.reason


@pytest.mark.anyio
async def test_async_abort_during_the_tls_handshake(silent_server: Server) -> None:
    async with _async_harness(close=False) as harness:
        harness.executor.start(_action(1, silent_server.url.replace("http:", "https:") + "/"))
        await _server_wait(silent_server, lambda: silent_server.accepted == 1)
        harness.executor.abort(1)
    assert harness.events == []
    await _server_wait(silent_server, lambda: silent_server.open == 0)
    await harness.executor.aclose()


@pytest.mark.anyio
async def test_async_connection_refused(refused_url: str) -> None:
    async with _async_harness() as harness:
        harness.executor.start(_action(1, refused_url))
        await harness.wait_for(lambda events: _finished(events, 1))
        [failed] = harness.events
        assert isinstance(failed, HttpFailed)
        assert failed.reason.startswith("ConnectError")


@pytest.mark.anyio
async def test_async_keeps_the_connection_alive(server: Server) -> None:
    async with _async_harness() as harness:
        harness.executor.start(_action(1, server.url + "/json"))
        await harness.wait_for(lambda events: _finished(events, 1))
        harness.executor.start(_action(2, server.url + "/json"))
        await harness.wait_for(lambda events: _finished(events, 2))
        _check_json(harness.events, 1)
        _check_json(harness.events, 2)
        assert server.accepted == 1


@pytest.mark.anyio
async def test_async_follows_no_redirect(server: Server) -> None:
    async with _async_harness() as harness:
        harness.executor.start(_action(1, server.url + "/redirect"))
        await harness.wait_for(lambda events: _finished(events, 1))
        head, _body = _exchange(harness.events, 1)
        assert head.status == 302
        assert server.requests == ["/redirect"]


@pytest.mark.anyio
async def test_async_failure_reasons_hold_no_header_value(server: Server) -> None:
    async with _async_harness() as harness:
        harness.executor.start(
            _action(1, server.url + "/json", headers=(("X-Key", "s3cret\r\nX: y"),))
        )
        harness.executor.start(
            _action(2, server.url + "/json", headers=(("X-Key", "s3cret\u2603"),))
        )
        harness.executor.start(_action(3, "ftp://user:s3cret@127.0.0.1/"))
        await harness.wait_for(lambda events: all(_finished(events, s) for s in (1, 2, 3)))
        reasons = {e.stream: e.reason for e in harness.events if isinstance(e, HttpFailed)}
        assert reasons[1] == "LocalProtocolError"
        assert reasons[2] == "UnicodeEncodeError"
        assert reasons[3].startswith("UnsupportedProtocol")
        assert not any("s3cret" in reason for reason in reasons.values())


@pytest.mark.anyio
async def test_async_connections_are_reused(server: Server) -> None:
    async with _async_harness() as harness:
        for stream in range(10):
            harness.executor.start(_action(stream, server.url + "/json"))
            await harness.wait_for(lambda events, stream=stream: _finished(events, stream))
            _check_json(harness.events, stream)
        assert server.accepted == 1


@pytest.mark.anyio
async def test_async_requests_are_written_in_the_order_they_were_started(server: Server) -> None:
    # Request 3 must open a connection (held back here); request 4, started after it, finds an
    # idle one at once, and still goes second.
    async with _async_harness() as harness:
        executor = harness.executor
        executor.start(_action(1, server.url + "/json"))
        await harness.wait_for(lambda events: _finished(events, 1))
        gate = anyio.Event()
        opening = executor._open

        async def held_open(origin: Any, tls: Any) -> Any:
            await gate.wait()
            return await opening(origin, tls)

        executor._open = held_open
        written: list[int] = []  # the order requests are written in (the server's threads
        sending = executor._send  # may read two connections in either order)

        def send(request: Any, connection: Any) -> None:
            written.append(request.action.stream)
            sending(request, connection)

        executor._send = send
        executor.start(_action(2, server.url + "/sse"))  # takes the idle connection
        await harness.wait_for(lambda events: len(_of(events, 2)) >= 2)  # head and a body
        executor.start(_action(3, server.url + "/json?3"))  # no idle connection: connecting
        server.release.set()
        await harness.wait_for(lambda events: _finished(events, 2))  # idle again
        executor.start(_action(4, server.url + "/json?4"))
        gate.set()
        await harness.wait_for(lambda events: _finished(events, 3) and _finished(events, 4))
        _check_json(harness.events, 3)
        _check_json(harness.events, 4)
    assert written == [2, 3, 4]
    assert server.accepted == 2


@pytest.mark.anyio
async def test_async_a_connection_the_server_closed_while_idle_is_not_used(
    server: Server,
) -> None:
    async with _async_harness() as harness:
        harness.executor.start(_action(1, server.url + "/json-then-close"))
        await harness.wait_for(lambda events: _finished(events, 1))
        await _server_wait(server, lambda: server.open == 0)
        harness.executor.start(_action(2, server.url + "/json"))
        await harness.wait_for(lambda events: _finished(events, 2))
        _json_ok(harness.events, 1)
        _check_json(harness.events, 2)
        assert server.accepted == 2


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/json-close", "/json-extra"])
async def test_async_a_connection_that_cannot_serve_again_is_closed(
    server: Server, path: str
) -> None:
    async with _async_harness() as harness:
        harness.executor.start(_action(1, server.url + path))
        await harness.wait_for(lambda events: _finished(events, 1))
        harness.executor.start(_action(2, server.url + "/json"))
        await harness.wait_for(lambda events: _finished(events, 2))
        _json_ok(harness.events, 1)
        _check_json(harness.events, 2)
        assert server.accepted == 2


@pytest.mark.anyio
async def test_async_a_connection_closed_without_an_answer(server: Server) -> None:
    async with _async_harness() as harness:
        harness.executor.start(_action(1, server.url + "/close"))
        await harness.wait_for(lambda events: _finished(events, 1))
        [failed] = harness.events
        assert failed == HttpFailed(
            now=failed.now,
            stream=1,
            reason="RemoteProtocolError: the server closed the connection before answering",
        )
    await _server_wait(server, lambda: server.open == 0)


@pytest.mark.anyio
async def test_async_requests_over_the_cap_wait_for_a_connection(server: Server) -> None:
    async with _async_harness(max_connections=2) as harness:
        for stream in range(3):
            harness.executor.start(_action(stream, server.url + "/stall"))
        await _server_wait(server, lambda: len(server.requests) == 2)
        assert harness.executor.in_flight == 3
        assert server.accepted == 2  # the third waits in the executor, not even connecting
        harness.executor.abort(0)  # its connection is closed: the third request gets one
        await _server_wait(server, lambda: len(server.requests) == 3)
        await harness.wait_for(lambda events: _of(events, 1) != [] and _of(events, 2) != [])
        assert server.accepted == 3
        harness.executor.abort(1)  # the stalled ones go; /json takes the freed connections
        harness.executor.start(_action(3, server.url + "/json"))
        harness.executor.start(_action(4, server.url + "/json"))
        harness.executor.start(_action(5, server.url + "/json"))  # 4, 5 wait: 2, 3 hold the cap
        harness.executor.abort(5)  # dropped while waiting: never sent
        await harness.wait_for(lambda events: _finished(events, 3) and _finished(events, 4))
        _check_json(harness.events, 3)
        _check_json(harness.events, 4)
        assert _of(harness.events, 5) == []
        assert server.requests.count("/json") == 2
    await _server_wait(server, lambda: server.open == 0)


@pytest.mark.slow
@pytest.mark.anyio
async def test_async_a_thousand_requests_leave_nothing_behind(server: Server) -> None:
    streams = range(1000)
    async with _async_harness(timeout=BIG_WAIT + WAIT) as harness:
        for stream in streams:
            harness.executor.start(_action(stream, server.url + "/json"))
        await harness.wait_for(lambda _: harness.ended == len(streams), BIG_WAIT)
        for stream, events in _by_stream(harness.events).items():
            _check_json(events, stream)
        assert 1 <= server.accepted <= 32
    await _server_wait(server, lambda: server.open == 0)  # every pooled connection was closed


# --- how a failure is worded (_mcp_io.http); the rest of the wire code is tested in ---------
# --- tests/io/test_h11wire.py ------------------------------------------------------------


def test_failure_reasons() -> None:
    assert reason(ConnectionRefusedError(111, "Connect call failed ('10.0.0.1', 80)")) == (
        "ConnectionRefusedError: [Errno 111] Connection refused"
    )
    assert reason(ConnectError("[Errno 111] Connection refused")) == (
        "ConnectError: [Errno 111] Connection refused"
    )
    assert reason(h11.RemoteProtocolError("Illegal header value b'secret'")) == (
        "RemoteProtocolError"
    )
    assert reason(UnicodeEncodeError("latin-1", "s3cret", 0, 1, "x")) == "UnicodeEncodeError"
    assert reason(ReadError("x" * 500)) == ("ReadError: " + "x" * 500)[:200]


def test_a_refused_header_is_worded_by_its_class_only() -> None:
    bad = _action(1, "http://h/", headers=(("X-Key", "s3cret\r\nX: y"),))
    with pytest.raises(h11.LocalProtocolError) as raised:
        RequestBuilder().build(bad)
    assert reason(raised.value) == "LocalProtocolError"


def test_eof_mid_body_is_worded_without_the_body() -> None:
    connection = h11.Connection(h11.CLIENT)
    _target, head = RequestBuilder().build(_action(1, "http://h/"))
    request_bytes(connection, head, None)
    receive(connection, b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc")
    with pytest.raises(h11.RemoteProtocolError) as raised:
        receive(connection, b"")
    assert reason(raised.value).startswith("RemoteProtocolError: peer closed connection")
