"""``AbortHttp`` at every stage of a request, on both HTTP executors (``mcp_asyncio._http`` on
asyncio and trio, ``mcp_sync._http``), driven directly with a recording feed (no machine)
against peers on 127.0.0.1 that never get further: a TCP connect that never completes (a
listener whose accept queue is full), a TLS handshake nobody answers, a response head that never
comes, a head trickled one byte every 0.1 s (a slow loris), and a body that never ends, sent as
fast as the socket takes it (plain and over TLS).

``StartHttp`` (mcp_core/_vocabulary/actions.py): the executor applies no timeout of its own; the
machine's deadlines end a request with ``AbortHttp``, after which it feeds nothing more for that
stream. For each stage and executor, after ``abort()``:

- nothing more is fed for the stream: no failure, no end, no byte. On threads a worker may be
  handing over a read when the abort comes (it feeds without any lock, the machine drops such a
  late event): at most the body of that one read, never a failure or an end;
- the executor stops reading: the request's thread or task lets go (``in_flight`` 0, no task
  left), and nothing more is fed while the next request runs;
- the socket is closed: no socket of this process towards the peer is left (/proc/net/tcp: an
  entry with an inode still has a descriptor) and the peer sees the connection end;
- the pool stays usable: with a single connection allowed, the next request is served (the
  aborted request gave its slot back); at the end no thread, task or descriptor is left.

A head that never ends is also bounded without any abort: h11 gives up once its buffer holds
more than its limit on an incomplete event (16 KiB), and the request fails. The machine's
deadline aborts a slow one long before (tests/drivers/test_slow_loris.py). Every wait is for an
event with a deadline, or polls /proc where there is no event; no duration is asserted.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from _mcp_io.h11wire import MAX_INTERIM
from _mcp_io.http import READ_SIZE, Network, Proxy, ProxyError, Tunnel
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

pytestmark = pytest.mark.timeout(120)

HOST = "127.0.0.1"
WAIT = 15.0  # the deadline of every wait
FLOWING = 1024 * 1024  # body bytes fed before an endless body is aborted: reading at full speed
LORIS_INTERVAL = 0.1
H11_LIMIT = 16 * 1024  # h11's default max_incomplete_event_size
# The bytes a peer may have sent beyond what the client read: its send buffer (kept small
# here) and the client's receive buffer. Far below what an unbounded read takes.
BUFFERED = 4 * 1024 * 1024


# --- peers -------------------------------------------------------------------------------------

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"  # then a body, forever
LORIS_HEAD = b"HTTP/1.1 200 OK\r\nx-loris: "  # then "a" forever: the head never ends


class Peer(LoopbackServer):
    """A TCP server on 127.0.0.1, one thread per connection, behaving as ``behaviour`` says:

    - ``silent``: reads until EOF and sends nothing (over https: never answers the handshake);
    - ``no-answer``: reads the request head, then reads until EOF without answering;
    - ``endless``: answers 200 text/event-stream and then sends body bytes forever (chunks of
      4 KiB, as fast as the socket takes them), until a send fails;
    - ``slow-loris``: sends a head one byte every 0.1 s, never ending it, until it reads EOF;
    - ``fast-loris``: the same head at full speed;
    - ``interim``: ``100 Continue`` answers at full speed, forever, never the final one;
    - ``ok``: answers every request 200 with a two-byte body, keep-alive.

    With ``tls`` the connection is TLS first (``silent`` never answers the handshake anyway).
    A connection ends when the peer reads EOF or an error, or a send fails: ``open`` then
    drops and what it sent is appended to ``sent``.
    """

    def __init__(self, behaviour: str, tls: ssl.SSLContext | None = None) -> None:
        self.behaviour = behaviour
        self._tls = tls if behaviour != "silent" else None
        self.received = 0  # bytes read, all connections
        self.requests = 0  # request heads read
        self.sending = 0  # bytes the slow loris sent so far
        self.sent: list[int] = []  # bytes each ended connection sent
        self._stop = threading.Event()
        super().__init__(WAIT)
        self.url = f"{'https' if tls else 'http'}://{HOST}:{self.port}/"

    def __repr__(self) -> str:
        return f"the {self.behaviour} peer"

    def _closing(self) -> None:
        self._stop.set()

    def _note(self, **counts: int) -> None:
        with self.changed:
            for name, more in counts.items():
                setattr(self, name, getattr(self, name) + more)
            self.changed.notify_all()

    def _serve(self, connection: socket.socket) -> None:
        sent = [0]  # what this connection sent, counted as the sends return
        try:
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
            if self._tls is not None:
                connection = self._tls.wrap_socket(connection, server_side=True)
                with self.changed:
                    self._connections.append(connection)
            if self.behaviour == "silent":
                while data := connection.recv(65536):
                    self._note(received=len(data))
                return
            while self._read_head(connection):
                if self.behaviour == "ok":
                    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    continue
                if self.behaviour == "no-answer":
                    while connection.recv(65536):
                        pass
                elif self.behaviour == "endless":
                    self._flood(connection, sent, HEAD + b"x" * 4096, b"x" * 4096)
                elif self.behaviour == "interim":
                    interim = b"HTTP/1.1 100 Continue\r\n\r\n" * 100
                    self._flood(connection, sent, interim, interim)
                elif self.behaviour == "fast-loris":
                    self._flood(connection, sent, LORIS_HEAD, b"a" * 4096)
                else:
                    self._trickle(connection, sent)
                return
        except OSError:
            pass
        finally:
            connection.close()
            with self.changed:
                self.open -= 1
                self.sent.append(sent[0])
                self.changed.notify_all()

    def _read_head(self, connection: socket.socket) -> bool:
        head = b""
        while b"\r\n\r\n" not in head:
            data = connection.recv(65536)
            if not data:
                return False
            head += data
        self._note(received=len(head), requests=1)
        return True

    def _flood(self, connection: socket.socket, sent: list[int], first: bytes, then: bytes) -> None:
        """``first``, then ``then`` again and again, as fast as the socket takes them, until a
        send fails (the client is gone) or close()."""
        data = first
        while not self._stop.is_set():
            done = connection.send(data)
            sent[0] += done
            data = data[done:] or then

    def _trickle(self, connection: socket.socket, sent: list[int]) -> None:
        """The slow loris: a head one byte every LORIS_INTERVAL, until EOF (or close())."""
        poller = select.poll()
        poller.register(connection, select.POLLIN)
        interval_ms = int(LORIS_INTERVAL * 1000)
        for byte in itertools.chain(LORIS_HEAD, itertools.repeat(ord("a"))):
            if self._stop.is_set() or poller.poll(interval_ms):  # readable: EOF (or junk)
                return
            connection.sendall(bytes([byte]))
            sent[0] += 1
            self._note(sending=1)


@contextlib.contextmanager
def peer(behaviour: str, tls: ssl.SSLContext | None = None) -> Iterator[Peer]:
    started = Peer(behaviour, tls)
    try:
        yield started
    finally:
        started.close()


@contextlib.contextmanager
def hanging_connect() -> Iterator[tuple[int, str]]:
    """A listener whose accept queue is full and never drained: Linux drops further SYNs to
    it, so a connect() hangs in SYN_SENT (the fillers below are what fills it)."""
    listener = socket.socket()
    listener.bind((HOST, 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(8):
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect((HOST, port))
            fillers.append(filler)
        yield port, f"http://{HOST}:{port}/"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def _tcp_table() -> list[list[str]]:
    with open("/proc/net/tcp", encoding="ascii") as table:
        return [line.split() for line in table.readlines()[1:]]


def sockets_to(port: int, state: str | None = None) -> int:
    """Sockets towards 127.0.0.1:``port`` that a descriptor still holds (a socket closed by
    its owner has inode 0, or is gone), optionally in ``state`` (02: SYN_SENT)."""
    return sum(
        1
        for fields in _tcp_table()
        if fields[2].endswith(f":{port:04X}")
        and fields[9] != "0"
        and (state is None or fields[3] == state)
    )


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _http_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp-sync-http-")]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    pytest.importorskip("cryptography.x509")
    return Pki(tmp_path_factory.mktemp("tls"))


def client_network(pki: Pki) -> Network:
    return Network(tls=ssl.create_default_context(cafile=str(pki.ca)))


# --- the stages --------------------------------------------------------------------------------


@dataclass
class Stage:
    """One stage to abort in: ``start`` opens what the request goes to (``url``, ``port``,
    ``peer``: None for the hanging connect), ``reached`` says the request is in that stage."""

    name: str
    url: str
    port: int
    peer: Peer | None
    baseline: int  # sockets towards the port before the request (the fillers of a full queue)
    reached: Callable[[Recorder], bool]
    streaming: bool = False  # the peer sends a body forever


STAGES = ["connect", "tls-handshake", "head", "slow-loris-head", "body", "tls-body"]


@contextlib.contextmanager
def stage(name: str, pki: Pki) -> Iterator[Stage]:
    if name == "connect":
        if not sys.platform.startswith("linux"):
            pytest.skip("relies on Linux dropping SYNs to a listener whose accept queue is full")
        with hanging_connect() as (port, url):
            syn_sent = sockets_to(port, "02")  # fillers the full queue drops
            yield Stage(
                name, url, port, None, sockets_to(port), lambda _: sockets_to(port, "02") > syn_sent
            )
        return
    tls = pki.server_context() if name in ("tls-handshake", "tls-body") else None
    behaviour = {
        "tls-handshake": "silent",
        "head": "no-answer",
        "slow-loris-head": "slow-loris",
        "body": "endless",
        "tls-body": "endless",
    }[name]
    with peer(behaviour, tls) as p:
        url = p.url if tls is None else p.url.replace("http:", "https:")
        reached: Callable[[Recorder], bool] = {
            "tls-handshake": lambda _: p.received > 0,  # its ClientHello, never answered
            "head": lambda _: p.requests == 1,
            "slow-loris-head": lambda _: p.sending >= 5,  # into the status line
            "body": lambda r: r.body_bytes(1) >= FLOWING,
            "tls-body": lambda r: r.body_bytes(1) >= FLOWING,
        }[name]
        yield Stage(name, url, p.port, p, 0, reached, streaming=name.endswith("body"))


# --- recording feeds -------------------------------------------------------------------------


class Recorder:
    """Every event fed, unfiltered, and whether its stream had been aborted when it was fed.
    ``start`` and ``abort`` run under the same lock as the feed, as the clients run them under
    the lock their machine's feed takes."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.events: list[tuple[HttpEvent, bool]] = []
        self.aborted: set[int] = set()

    def feed(self, event: HttpEvent) -> None:
        with self.lock:
            self.events.append((event, event.stream in self.aborted))
            self.lock.notify_all()

    def of(self, stream: int) -> list[HttpEvent]:
        with self.lock:
            return [event for event, _ in self.events if event.stream == stream]

    def late(self, stream: int) -> list[HttpEvent]:
        """The events of ``stream`` fed after its abort."""
        with self.lock:
            return [event for event, late in self.events if event.stream == stream and late]

    def body_bytes(self, stream: int) -> int:
        return sum(len(e.data) for e in self.of(stream) if isinstance(e, HttpBodyReceived))

    def ended(self, stream: int) -> bool:
        mine = self.of(stream)
        return bool(mine) and isinstance(mine[-1], HttpResponseEnded | HttpFailed)


def _action(stream: int, url: str) -> StartHttp:
    return StartHttp(stream=stream, method="GET", url=url, headers=())


def check_follow_up(recorder: Recorder) -> None:
    [head, *body, end] = recorder.of(2)
    assert isinstance(head, HttpResponseStarted) and head.status == 200
    assert isinstance(end, HttpResponseEnded)
    assert b"".join(e.data for e in body if isinstance(e, HttpBodyReceived)) == b"ok"


def check_nothing_late(recorder: Recorder, *, threads: bool) -> None:
    late = recorder.late(1)
    if not threads:
        assert late == [], late
        return
    # A worker may have been handing over one read when the abort came: its body at most.
    assert all(isinstance(event, HttpBodyReceived) for event in late), late
    assert sum(len(e.data) for e in late if isinstance(e, HttpBodyReceived)) <= READ_SIZE


# --- mcp_sync ----------------------------------------------------------------------------------


class SyncRecorder(Recorder):
    def __init__(self, network: Network) -> None:
        super().__init__()
        self.executor = SyncExecutor(self.feed, time.monotonic, max_connections=1, network=network)

    def start(self, action: StartHttp) -> None:
        with self.lock:
            self.executor.start(action)

    def abort(self, stream: int) -> None:
        with self.lock:
            self.executor.abort(stream)
            self.aborted.add(stream)

    def wait_for(self, predicate: Callable[[], bool], what: str) -> None:
        with self.lock:
            assert self.lock.wait_for(predicate, WAIT), what


@pytest.mark.parametrize("inline", [False, True], ids=["worker", "caller"])
@pytest.mark.parametrize("name", STAGES)
def test_sync_abort_ends_the_request_at_every_stage(name: str, inline: bool, pki: Pki) -> None:
    # Run by a worker, or by the caller whose feed started it (start(inline=True), then run()
    # in the caller's thread, the client's way for a call's own request).
    descriptors_before = descriptors()
    with peer("ok") as ok, stage(name, pki) as at:
        recorder = SyncRecorder(client_network(pki))
        caller: threading.Thread | None = None
        try:
            if inline:
                with recorder.lock:
                    request = recorder.executor.start(_action(1, at.url), inline=True)
                assert request is not None
                run = recorder.executor.run
                caller = threading.Thread(target=run, args=(request, threading.Event()))
                caller.start()
            else:
                recorder.start(_action(1, at.url))
            wait_until(lambda: at.reached(recorder), WAIT, message=f"the {name} stage")
            recorder.abort(1)
            # Its thread lets go, its socket is closed, and the peer sees the end.
            wait_until(lambda: recorder.executor.in_flight == 0, WAIT, message="let go")
            if caller is not None:
                caller.join(WAIT)
                assert not caller.is_alive()  # run() returned
            wait_until(lambda: sockets_to(at.port) == at.baseline, WAIT, message="closed")
            if at.peer is not None:
                at.peer.wait(lambda: at.peer is not None and at.peer.open == 0)
            check_nothing_late(recorder, threads=True)
            fed = len(recorder.of(1))
            # The only connection allowed serves the next request.
            recorder.start(_action(2, ok.url))
            recorder.wait_for(lambda: recorder.ended(2), "the next request")
            check_follow_up(recorder)
            assert len(recorder.of(1)) == fed  # nothing read for it meanwhile
            assert not any(isinstance(e, HttpFailed | HttpResponseEnded) for e in recorder.of(1))
        finally:
            recorder.executor.close(time.monotonic() + WAIT)
        assert _http_threads() == []
        assert recorder.executor.in_flight == 0
        if at.peer is not None and at.streaming:
            [sent] = at.peer.sent
            assert sent <= recorder.body_bytes(1) + BUFFERED
    wait_until(lambda: descriptors() <= descriptors_before, WAIT, message="descriptors")


# A head that never ends, at full speed: h11's size limit fails it; interim answers that never
# end: the executors take at most MAX_INTERIM of them (_mcp_io.h11wire). Before that limit,
# the executors read 100 Continue forever, never feeding anything.
HEADLESS = {
    "fast-loris": ("RemoteProtocolError", H11_LIMIT + READ_SIZE + BUFFERED),
    "interim": (
        f"RemoteProtocolError: the server sent more than {MAX_INTERIM} interim (1xx) answers",
        READ_SIZE + BUFFERED,
    ),
}


@pytest.mark.parametrize("behaviour", HEADLESS)
def test_sync_a_head_that_never_ends_is_bounded(behaviour: str, pki: Pki) -> None:
    reason, bound = HEADLESS[behaviour]
    with peer(behaviour) as loris:
        recorder = SyncRecorder(client_network(pki))
        try:
            recorder.start(_action(1, loris.url))
            recorder.wait_for(lambda: recorder.ended(1), "the request's end")
        finally:
            recorder.executor.close(time.monotonic() + WAIT)
        loris.wait(lambda: loris.open == 0)
    [failed] = recorder.of(1)
    assert isinstance(failed, HttpFailed) and failed.reason.startswith(reason)
    [sent] = loris.sent
    assert sent <= bound


# --- mcp_asyncio (asyncio and trio) ------------------------------------------------------------


class AsyncRecorder(Recorder):
    def __init__(self, tasks: Any, network: Network) -> None:
        super().__init__()
        self.executor = AsyncExecutor(
            self.feed, time.monotonic, tasks, max_connections=1, network=network
        )
        self._changed = anyio.Event()

    def feed(self, event: HttpEvent) -> None:
        super().feed(event)
        self._changed.set()

    def abort(self, stream: int) -> None:
        self.executor.abort(stream)
        self.aborted.add(stream)

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT):
            while not predicate():
                self._changed = anyio.Event()
                await self._changed.wait()


async def poll(predicate: Callable[[], bool], what: str) -> None:
    """For what has no event (a count of sockets in /proc, of tasks): look again and again."""
    with anyio.fail_after(WAIT):
        while not predicate():
            await anyio.sleep(0.005)
    assert predicate(), what


async def in_thread(wait: Callable[[], None]) -> None:
    await anyio.to_thread.run_sync(wait)


@pytest.mark.anyio
@pytest.mark.parametrize("name", STAGES)
async def test_async_abort_ends_the_request_at_every_stage(name: str, pki: Pki) -> None:
    descriptors_before = descriptors()
    with peer("ok") as ok, stage(name, pki) as at:
        with anyio.fail_after(4 * WAIT):
            async with anyio.create_task_group() as tasks:
                recorder = AsyncRecorder(tasks, client_network(pki))
                executor = recorder.executor
                try:
                    executor.start(_action(1, at.url))
                    await poll(lambda: at.reached(recorder), f"the {name} stage")
                    recorder.abort(1)
                    # Its task ends, its socket is closed, and the peer sees the end.
                    await poll(lambda: executor.in_flight == 0, "let go")
                    await poll(lambda: executor._running == 0, "no task left")
                    await poll(lambda: sockets_to(at.port) == at.baseline, "closed")
                    if at.peer is not None:
                        p = at.peer
                        await in_thread(lambda: p.wait(lambda: p.open == 0))
                    check_nothing_late(recorder, threads=False)
                    fed = len(recorder.of(1))
                    # The only connection allowed serves the next request.
                    executor.start(_action(2, ok.url))
                    await recorder.wait_for(lambda: recorder.ended(2))
                    check_follow_up(recorder)
                    assert len(recorder.of(1)) == fed
                finally:
                    await executor.aclose()
        assert executor.in_flight == 0 and executor._running == 0
        if at.peer is not None and at.streaming:
            [sent] = at.peer.sent
            assert sent <= recorder.body_bytes(1) + BUFFERED
    wait_until(lambda: descriptors() <= descriptors_before, WAIT, message="descriptors")


@pytest.mark.anyio
@pytest.mark.parametrize("behaviour", HEADLESS)
async def test_async_a_head_that_never_ends_is_bounded(behaviour: str, pki: Pki) -> None:
    reason, bound = HEADLESS[behaviour]
    with peer(behaviour) as loris:
        async with anyio.create_task_group() as tasks:
            recorder = AsyncRecorder(tasks, client_network(pki))
            try:
                recorder.executor.start(_action(1, loris.url))
                await recorder.wait_for(lambda: recorder.ended(1))
            finally:
                await recorder.executor.aclose()
        await in_thread(lambda: loris.wait(lambda: loris.open == 0))
    [failed] = recorder.of(1)
    assert isinstance(failed, HttpFailed) and failed.reason.startswith(reason)
    [sent] = loris.sent
    assert sent <= bound


def test_a_proxy_sending_interim_answers_forever_gets_no_tunnel() -> None:
    tunnel = Tunnel(Proxy("http://p:1", "the proxy from HTTPS_PROXY"), HOST, 443)
    interim = b"HTTP/1.1 100 Continue\r\n\r\n"
    assert tunnel.receive(interim * MAX_INTERIM) is False  # as many as allowed: still waiting
    with pytest.raises(ProxyError, match=f"more than {MAX_INTERIM} interim"):
        tunnel.receive(interim)
    tunnel = Tunnel(Proxy("http://p:1", "the proxy from HTTPS_PROXY"), HOST, 443)
    assert tunnel.receive(interim * MAX_INTERIM + b"HTTP/1.1 200 OK\r\n\r\n") is True


@pytest.fixture
def refused_url() -> str:
    # A port that was just free: nothing listens on it.
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port = probe.getsockname()[1]
    return f"http://{HOST}:{port}/"


@pytest.mark.anyio
@pytest.mark.parametrize("failing", ["cannot be built", "connection refused"])
async def test_async_a_failure_under_way_is_not_fed_after_the_abort(
    failing: str, refused_url: str, pki: Pki
) -> None:
    # The request fails in a task of its own (never from inside start()); aborted before that
    # task ran, it feeds nothing, not even the failure.
    url = "ftp://h/" if failing == "cannot be built" else refused_url
    async with anyio.create_task_group() as tasks:
        recorder = AsyncRecorder(tasks, client_network(pki))
        try:
            recorder.executor.start(_action(1, url))
            recorder.abort(1)
            await poll(lambda: recorder.executor._running == 0, "its task ended")
            assert recorder.executor.in_flight == 0
            assert recorder.of(1) == []
        finally:
            await recorder.executor.aclose()
