# Written twice, by hand (mcp_sync/_http.py is its twin): connections here are asyncio protocols
# or anyio streams read by callbacks and tasks of the loop; there, blocking sockets that worker
# threads and the callers' own threads read. What goes on the wire and the pool's bookkeeping
# are shared, in _mcp_io (h11wire, http).
"""HTTP requests of the anyio driver: a pool of h11 keep-alive connections of our own, driven by
what arrives on them.

``HttpExecutor`` performs ``StartHttp`` and ``AbortHttp`` and turns what happens to each request
into ``HttpResponseStarted``, ``HttpBodyReceived``, ``HttpResponseEnded`` or ``HttpFailed``
events. It holds I/O handles only and decides nothing; socket, TLS and h11 errors
become events here and nowhere else. What goes on the wire, how a read becomes
events and the pool's bookkeeping are in ``_mcp_io.h11wire``, how a failure is
worded in ``_mcp_io.http``: both shared with the blocking driver, which this one never imports.

No task per request. A request sent on a pooled connection is written at once, from
``start()``; what arrives on its connection is turned into events (``_received``), and the
response's end puts the connection back in the pool and hands the request's slot to the next
waiting request. Only opening a connection takes a task of its own (``_connect``). Two small
connection backends sit behind one interface: on asyncio an ``asyncio.Protocol``
whose callbacks keep what arrived and wake one pump task, which feeds it (the feed always runs
in a task, where the client may use anything of anyio; a loop callback has no current task);
on trio anyio's streams, with a reader task per connection and a task per write.

Requests are written in the order they were started (the ``StartHttp`` contract, kept by the
core's ``StartOrder``, as in the blocking executor), even when a later one finds an idle
connection while an earlier one is still connecting: it is parked on that connection until
every request started before it was written (or ended).

Aborting detaches the request from its connection and closes that connection at once (a
connection attempt or a TLS handshake is cancelled instead), so nothing more is read for it,
and nothing more is fed for it, not even a failure already under way (``_finish``), as
``AbortHttp`` asks: everything here runs on the event loop's thread, so that holds without a
lock. The machine drops events of an aborted stream all the same (the one filter for late
events). At most
``connection_cap(pool_size, max_connections)`` requests are sent at once, and as many
connections are open; the other requests wait here, in FIFO order, where abort() removes them.
"""

from __future__ import annotations

import asyncio
import select
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import anyio
import h11
from anyio.abc import ByteStream, SocketAttribute, TaskGroup

from _mcp_io.h11wire import (
    FAILURES,
    ClientConnection,
    ConnectError,
    Origin,
    Pool,
    ReadError,
    RequestBuilder,
    StartOrder,
    Target,
    WriteError,
    connection_cap,
    decode_headers,
    finish,
    receive,
    request_bytes,
)
from _mcp_io.http import (
    READ_SIZE,
    Network,
    Proxy,
    ProxyError,
    Tunnel,
    connect_error,
    os_message,
    reason,
)
from mcp_core import (
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
    StartHttp,
)

if TYPE_CHECKING:
    import ssl

__all__ = ["HttpEvent", "HttpExecutor"]

HttpEvent = HttpResponseStarted | HttpBodyReceived | HttpResponseEnded | HttpFailed

# aclose() gives the executor's tasks this long to end.
_CLOSE_BOUND = 5.0
# "Never" for asyncio's TLS handshake timeout (it takes no None): the machine aborts instead.
_NO_TIMEOUT = 365 * 24 * 3600.0


class HttpExecutor:
    """Sends the requests of one client through one pool of keep-alive connections.

    HTTP/1.1 only, no redirect followed, no retry and no timeout: the machine's deadlines end a
    request with ``AbortHttp``. ``network`` says which TLS context and which proxy (a CONNECT
    tunnel) each origin gets (default: the verifying default context, no proxy). Connection
    attempts, the
    pump (asyncio), readers and writers (trio) run as tasks in ``task_group``; ``feed`` is
    called synchronously, once per event, from those tasks, never from inside ``start`` or
    ``abort``. ``pool_size`` (the client's in-flight window) sizes the cap on connections,
    ``max_connections`` sets it exactly (see ``connection_cap``).
    """

    def __init__(
        self,
        feed: Callable[[HttpEvent], None],
        now: Callable[[], float],
        task_group: TaskGroup,
        *,
        pool_size: int | None = None,
        max_connections: int | None = None,
        network: Network | None = None,
    ) -> None:
        self._feed = feed
        self._now = now
        self._tasks = task_group
        self._pool: Pool[_Connection] = Pool(connection_cap(pool_size, max_connections))
        self._builder = RequestBuilder()  # validates each distinct URL and headers once
        self._requests: dict[int, _Request] = {}  # stream -> its request, until ended or aborted
        self._waiting: deque[_Request] = deque()  # requests over the cap, in FIFO order
        self._order: StartOrder[_Request] = StartOrder()  # the StartHttp contract's write order
        self._sending = 0  # admitted requests: connecting, or on a connection
        self._active = 0  # requests not finished (aborted attempts until they have unwound)
        self._running = 0  # tasks
        # asyncio: connections with something to turn into events, and the task that does.
        self._arrivals: deque[_AsyncioConnection] = deque()
        self._asyncio = False
        self._pumping = False
        self._wake: asyncio.Future[None] | None = None
        self._all_ended: anyio.Event | None = None
        self._closed = False
        # Chosen on the first request, from the event loop it runs on.
        self._open: Callable[[Origin, ssl.SSLContext | None], Awaitable[_Connection]] | None
        self._open = None
        self._network = network or Network()  # its default TLS context: on the first https

    @property
    def in_flight(self) -> int:
        """Requests not finished: waiting, connecting or on a connection (an aborted connection
        attempt until it has unwound)."""
        return self._active

    def start(self, action: StartHttp) -> None:
        """Send the request (at once on an idle pooled connection, else after connecting or
        once a request ahead of it ends) and return; every outcome is fed back as events, later.
        Ignored after ``aclose()``."""
        if self._closed:
            return
        if self._open is None:
            self._asyncio = _on_asyncio()
            self._open = self._open_asyncio if self._asyncio else self._open_stream
        if self._asyncio and not self._pumping:
            self._pumping = True
            self._running += 1
            self._tasks.start_soon(self._pump)
        request = self._requests[action.stream] = _Request(action)
        self._active += 1
        try:
            request.target, request.head = self._builder.build(action)
        except (*FAILURES, ValueError) as exc:  # ValueError: a bad port, a non-Latin-1 header
            request.failure = exc  # fed by a task: never from inside start()
        if self._sending < self._pool.max_connections and not self._waiting:
            self._sending += 1
            self._admit(request)
        else:
            request.waiting = True
            self._waiting.append(request)

    def abort(self, stream: int) -> None:
        """End the request of ``stream`` now: its connection is closed, not returned to the
        pool half-read (a connection attempt or TLS handshake is cancelled), nothing more is
        read for it and nothing more is fed, not even a failure already under way (of a
        request that could not be built, or a connect that failed meanwhile). An unknown or
        ended stream is ignored."""
        request = self._requests.pop(stream, None)
        if request is not None:
            self._abort(request)

    async def aclose(self) -> None:
        """Abort every request, close the pooled connections and wait (boundedly) for the
        tasks. Idempotent; shielded from the caller's cancellation."""
        self._closed = True
        requests = list(self._requests.values())
        self._requests.clear()
        for request in requests:
            self._abort(request)
        for connection in self._pool.drain():
            connection.close()
        self._wake_pump()
        with anyio.CancelScope(shield=True):
            await anyio.lowlevel.checkpoint()  # asyncio closes aborted sockets in a callback
            if self._running:
                self._all_ended = anyio.Event()
                with anyio.move_on_after(_CLOSE_BOUND):
                    await self._all_ended.wait()

    @classmethod
    def background_functions(cls) -> tuple[Callable[..., object], ...]:
        """The coroutine functions that run as background tasks (see ``_client``'s KI note)."""
        return (
            cls._pump,
            cls._connect,
            cls._fail_soon,
            _StreamConnection.read,
            _StreamConnection.write,
        )

    # --- requests ------------------------------------------------------------------------------

    def _admit(self, request: _Request) -> None:
        """``request`` holds one of the ``max_connections`` slots now: send it on an idle
        connection, or open one in a task; it is written once every request admitted before
        it was. Feeds nothing."""
        if request.failure is not None:
            self._running += 1
            self._tasks.start_soon(self._fail_soon, request)
            return
        self._order.started(request)
        self._obtain(request)

    def _obtain(self, request: _Request) -> None:
        origin = request.target.origin
        while (connection := self._pool.take(origin)) is not None:
            if connection.reusable():  # only the connection about to be used is checked
                self._park(request, connection)
                return
            connection.close()  # closed by the server while idle
            self._pool.discard()
        evicted = self._pool.reserve()
        if evicted is not None:
            evicted.close()
        request.scope = anyio.CancelScope()
        self._running += 1  # counted from now: aclose() waits for it even before it runs
        self._tasks.start_soon(self._connect, request)

    def _park(self, request: _Request, connection: _Connection) -> None:
        request.parked = connection
        self._send_in_order()

    def _send_in_order(self) -> None:
        """Write the parked requests at the head of the start order; stop at the first that
        has no connection yet. Requests that ended unsent (aborted, failed) left the order."""
        order = self._order
        while (head := order.head()) is not None:
            connection = head.parked
            if connection is None:
                return
            head.parked = None
            # Not reusable(): a fresh TLS connection may hold unread session tickets.
            if connection.broken:  # closed by the server while parked: another one
                connection.close()
                self._pool.discard()
                self._obtain(head)
                continue
            order.written(head)
            self._send(head, connection)

    def _send(self, request: _Request, connection: _Connection) -> None:
        request.connection = connection
        connection.request = request
        connection.send(request_bytes(connection.h11, request.head, request.action.body))

    def _received(self, connection: _Connection, data: bytes) -> None:
        """One read of ``connection`` (``b""`` at EOF), turned into events for its request."""
        request = connection.request
        if request is None:
            # Bytes or EOF on an idle connection: the server closed it (or broke it). It stays
            # counted in the pool until taken, found unusable and discarded.
            connection.close()
            return
        try:
            response, body, ended = receive(connection.h11, data)
        except FAILURES as exc:
            self._fail(request, exc)
            return
        stream = request.action.stream
        if response is not None:
            status, headers = response.status_code, decode_headers(response)
            self._feed(
                HttpResponseStarted(now=self._now(), stream=stream, status=status, headers=headers)
            )
            if connection.request is not request:
                return  # aborted from inside the feed: nothing more to read for it
        if body:  # one event per read: an SSE body may never end
            self._feed(HttpBodyReceived(now=self._now(), stream=stream, data=body))
            if connection.request is not request:
                return
        if ended:
            connection.request = request.connection = None
            if finish(connection.h11) and not connection.broken and not self._closed:
                self._pool.put(request.target.origin, connection)
            else:
                connection.close()
                self._pool.discard()
            self._finish(request, HttpResponseEnded(now=self._now(), stream=stream))

    def _lost(self, connection: _Connection, error: BaseException | None) -> None:
        """``connection`` broke (``error``) or was closed by the server (None)."""
        request = connection.request
        if request is None:
            connection.broken = True
        elif error is None:
            self._received(connection, b"")
        else:
            message = os_message(error) if isinstance(error, OSError) else type(error).__name__
            failure = ReadError(message)
            failure.__cause__ = error
            self._fail(request, failure)

    def _fail(self, request: _Request, exc: BaseException) -> None:
        connection = request.connection
        if connection is not None:
            connection.request = request.connection = None
            connection.close()
            self._pool.discard()
        self._finish(
            request, HttpFailed(now=self._now(), stream=request.action.stream, reason=reason(exc))
        )

    def _abort(self, request: _Request) -> None:
        request.aborted = True
        if request.waiting:
            self._waiting.remove(request)
            request.waiting = False
            self._active -= 1  # never 0 here: the requests ahead of it are active
        elif request.connection is not None:
            connection = request.connection
            connection.request = request.connection = None
            connection.close()
            self._pool.discard()
            self._finish(request, None)
        elif request.parked is not None:  # nothing written on it: it is as good as idle
            connection, request.parked = request.parked, None
            self._pool.put(request.target.origin, connection)
            self._finish(request, None)
        elif request.scope is not None:
            request.scope.cancel()  # _connect finishes it once the attempt has unwound
        # else: a failure about to be fed by _fail_soon, which now feeds nothing

    def _finish(self, request: _Request, final: HttpEvent | None) -> None:
        """The request ended: its slot goes to the next waiting request, then ``final`` (if
        any) is fed, unless the request was aborted. Idempotent."""
        if request.finished:
            return
        request.finished = True
        self._active -= 1
        if not self._active:
            self._wake_pump()  # it ends if no connection is left either
        if self._waiting and not self._closed:
            waiting = self._waiting.popleft()
            waiting.waiting = False
            self._admit(waiting)  # the slot goes straight to it
        else:
            self._sending -= 1
        self._order.written(request)  # ended: it holds back nobody started after it
        self._send_in_order()
        stream = request.action.stream
        if self._requests.get(stream) is request:
            del self._requests[stream]
        if final is not None and not request.aborted:
            self._feed(final)

    # --- tasks ---------------------------------------------------------------------------------

    async def _pump(self) -> None:
        """asyncio: turn what arrived on connections into events, until no request is left
        and no connection is open (or aclose())."""
        loop = asyncio.get_running_loop()
        arrivals = self._arrivals
        try:
            while not self._closed:
                while arrivals:
                    self._pumped(arrivals.popleft())
                if not self._active and not self._pool.open:
                    break
                self._wake = loop.create_future()
                try:
                    await self._wake
                finally:
                    self._wake = None
        finally:
            self._pumping = False
            self._task_ended()

    def _arrived(self, connection: _AsyncioConnection) -> None:
        self._arrivals.append(connection)
        self._wake_pump()

    def _wake_pump(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def _pumped(self, connection: _AsyncioConnection) -> None:
        connection.scheduled = False
        received = connection.received
        if received:
            data = received[0] if len(received) == 1 else b"".join(received)
            received.clear()
            self._received(connection, data)
        if connection.ended:
            connection.ended = False  # reported once
            self._lost(connection, connection.error)

    async def _connect(self, request: _Request) -> None:
        assert request.scope is not None and self._open is not None
        connection: _Connection | None = None
        failure: BaseException | None = None
        try:
            with request.scope:
                origin = request.target.origin
                tls = self._network.tls() if origin[0] == "https" else None
                connection = await self._open(origin, tls)
        except (*FAILURES, ValueError) as exc:  # e.g. a host name IDNA cannot encode
            failure = exc
        finally:
            self._task_ended()
            if connection is None:
                self._pool.discard()
            elif request.aborted or self._closed:
                connection.close()
                self._pool.discard()
        if connection is None or request.aborted or self._closed:
            final = None
            if failure is not None:
                stream = request.action.stream
                final = HttpFailed(now=self._now(), stream=stream, reason=reason(failure))
            self._finish(request, final)
        else:
            self._park(request, connection)

    async def _fail_soon(self, request: _Request) -> None:
        # A request that could not be built fails from a task: start() never feeds.
        assert request.failure is not None
        self._task_ended()
        stream = request.action.stream
        self._finish(
            request, HttpFailed(now=self._now(), stream=stream, reason=reason(request.failure))
        )

    def _task_ended(self) -> None:
        self._running -= 1
        if self._running == 0 and self._all_ended is not None:
            self._all_ended.set()

    async def _open_asyncio(self, origin: Origin, tls: ssl.SSLContext | None) -> _Connection:
        _scheme, host, port = origin
        loop = asyncio.get_running_loop()
        proxy = self._network.proxy(origin)
        if proxy is not None:
            return await self._tunnel_asyncio(loop, proxy, host, port, tls)
        try:
            # Cancelled (aborted) while connecting or in the TLS handshake, asyncio closes the
            # socket itself.
            _transport, connection = await loop.create_connection(
                lambda: _AsyncioConnection(self),
                host,
                port,
                ssl=tls,
                server_hostname=host if tls else None,
                # asyncio's default gives up a TLS handshake after 60 s: no timeout of our own.
                ssl_handshake_timeout=_NO_TIMEOUT if tls else None,
            )
        except OSError as exc:
            raise ConnectError(os_message(exc)) from exc
        return connection

    async def _tunnel_asyncio(
        self,
        loop: asyncio.AbstractEventLoop,
        proxy: Proxy,
        host: str,
        port: int,
        tls: ssl.SSLContext | None,
    ) -> _Connection:
        """A connection to ``host``:``port`` through a CONNECT tunnel of ``proxy``: the
        exchange with the proxy on a protocol of its own, then TLS (start_tls) or the plain
        transport handed to the connection's protocol. Aborted at any point, the transport
        is closed."""
        try:
            transport, opening = await loop.create_connection(_Opening, proxy.host, proxy.port)
        except OSError as exc:
            raise connect_error(proxy, exc) from exc
        try:
            tunnel = Tunnel(proxy, host, port)
            transport.write(tunnel.request)
            while not tunnel.receive(await opening.read()):
                pass
            if opening.ended:  # closed with the answer: nothing would ever be read
                raise ProxyError(f"{proxy.named} closed the tunnel at once")
            connection = _AsyncioConnection(self)
            if tls is None:
                transport.set_protocol(connection)
                connection.connection_made(transport)
                return connection
            try:
                secured = await loop.start_tls(
                    transport,
                    connection,
                    tls,
                    server_hostname=host,
                    ssl_handshake_timeout=_NO_TIMEOUT,  # the machine aborts instead
                )
            except OSError as exc:
                raise ConnectError(os_message(exc)) from exc
            assert secured is not None
            connection.connection_made(secured)  # start_tls does not call it
            return connection
        except BaseException:
            transport.abort()
            raise

    async def _open_stream(self, origin: Origin, tls: ssl.SSLContext | None) -> _Connection:
        _scheme, host, port = origin
        proxy = self._network.proxy(origin)
        try:
            if proxy is not None:
                stream: ByteStream = await _tunnel_stream(proxy, host, port, tls)
            elif tls is None:
                stream = await anyio.connect_tcp(host, port)
            else:
                # Not standard-compatible: a server that closes without close_notify ends a
                # body framed by the close instead of breaking it.
                stream = await anyio.connect_tcp(
                    host, port, ssl_context=tls, tls_standard_compatible=False
                )
        except (OSError, anyio.BrokenResourceError) as exc:
            raise ConnectError(_anyio_message(exc)) from exc
        connection = _StreamConnection(self, stream)
        self._running += 1
        self._tasks.start_soon(connection.read)
        return connection


class _Request:
    __slots__ = (
        "aborted",
        "action",
        "connection",
        "failure",
        "finished",
        "head",
        "parked",
        "scope",
        "target",
        "waiting",
    )

    def __init__(self, action: StartHttp) -> None:
        self.action = action
        self.target: Target
        self.head: h11.Request
        self.failure: BaseException | None = None  # the request could not be built
        self.waiting = False  # for a slot, in the executor's FIFO
        self.scope: anyio.CancelScope | None = None  # of its connection attempt
        self.connection: _Connection | None = None  # the connection it was sent on
        # The connection it will be sent on, once the requests started before it were sent.
        self.parked: _Connection | None = None
        self.aborted = False
        self.finished = False


# --- connections -------------------------------------------------------------------------------


class _Connection(Protocol):
    """One keep-alive connection and its h11 state, serving one request at a time. It reports
    reads to ``HttpExecutor._received`` and breakage to ``HttpExecutor._lost``."""

    h11: h11.Connection
    request: _Request | None  # the request it serves; None while idle
    broken: bool  # closed (by us, or the server while idle): never reused

    def send(self, data: bytes) -> None:
        """Write ``data`` without blocking; a failure reaches the executor as breakage."""

    def reusable(self) -> bool:
        """For an idle pooled connection: not broken, and nothing to read (which would be the
        server's EOF, or bytes nobody asked for). Only ever asked of the one about to be used."""

    def close(self) -> None:
        """Close at once (no TLS close_notify), without blocking. Idempotent."""


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False  # trio
    return True


class _AsyncioConnection(asyncio.Protocol):
    """A connection on asyncio. Its callbacks only keep what arrived and hand the connection
    to the executor's pump task, which turns it into events: the feed runs in a task, where
    the client may use anything of anyio (which needs a current task)."""

    def __init__(self, executor: HttpExecutor) -> None:
        self._executor = executor
        self.h11: h11.Connection = ClientConnection()
        self.request: _Request | None = None
        self.broken = False
        self.received: list[bytes] = []  # reads not yet turned into events
        self.ended = False  # EOF, or the connection was lost (``error``)
        self.error: BaseException | None = None
        self.scheduled = False  # in the executor's list of connections to pump
        self._closed = False
        self._transport: asyncio.Transport | None = None
        self._poll = select.poll()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        sock = transport.get_extra_info("socket")  # the TCP socket, under TLS too
        if sock is not None:
            self._poll.register(sock.fileno(), select.POLLIN)

    def data_received(self, data: bytes) -> None:
        self.received.append(data)
        self._schedule()

    def eof_received(self) -> None:
        self.ended = self.broken = True  # returns None: the transport closes itself
        self._schedule()

    def connection_lost(self, exc: Exception | None) -> None:
        self.broken = True
        if not self._closed:  # after close() nobody needs to hear of it
            self.ended = True
            self.error = exc
            self._schedule()

    def _schedule(self) -> None:
        if not self.scheduled:
            self.scheduled = True
            self._executor._arrived(self)

    def send(self, data: bytes) -> None:
        assert self._transport is not None
        self._transport.write(data)  # buffered by the transport; a failure: connection_lost

    def reusable(self) -> bool:
        # The loop may not have seen a FIN that arrived since its last poll: ask the socket.
        return not self.broken and not self.received and not self._poll.poll(0)

    def close(self) -> None:
        self.broken = self._closed = True
        if self._transport is not None:
            self._transport.abort()


class _StreamConnection:
    """A connection on anyio's streams (on trio): a reader task for its life, a task per
    write. Closing it cancels them; the reader closes the stream."""

    def __init__(self, executor: HttpExecutor, stream: ByteStream) -> None:
        self._executor = executor
        self._stream = stream
        self.h11: h11.Connection = ClientConnection()
        self.request: _Request | None = None
        self.broken = False
        self._outbox: deque[bytes] = deque()  # written in order by one write task at a time
        self._scope = anyio.CancelScope()
        self._poll = select.poll()
        self._poll.register(stream.extra(SocketAttribute.raw_socket).fileno(), select.POLLIN)

    def send(self, data: bytes) -> None:
        # A server may answer before it has read the whole request: the next request's write
        # can come while this one's is under way, and a stream takes one sender at a time.
        self._outbox.append(data)
        if len(self._outbox) == 1:
            self._executor._running += 1
            self._executor._tasks.start_soon(self.write)

    def reusable(self) -> bool:
        return not self.broken and not self._poll.poll(0)

    def close(self) -> None:
        self.broken = True
        self._scope.cancel()

    async def write(self) -> None:
        # Not in the reader's cancel scope (a scope serves one task): once the connection is
        # closed, the reader closes the stream, which ends a blocked send.
        try:
            while self._outbox:
                request = self.request
                try:
                    await self._stream.send(self._outbox[0])
                except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                    self._outbox.clear()
                    if request is not None and self.request is request:
                        self._executor._fail(request, WriteError(_anyio_message(exc)))
                else:
                    self._outbox.popleft()
        finally:
            self._outbox.clear()
            self._executor._task_ended()

    async def read(self) -> None:
        try:
            with self._scope:
                while True:
                    try:
                        data = await self._stream.receive(READ_SIZE)
                    except anyio.EndOfStream:
                        data = b""
                    self._executor._received(self, data)
                    if not data or self.broken:
                        break
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._executor._lost(self, exc if isinstance(exc, OSError) else exc.__cause__ or exc)
        finally:
            self.broken = True
            with anyio.CancelScope(shield=True):
                await anyio.aclose_forcefully(self._stream)
            self._executor._task_ended()


class _Opening(asyncio.Protocol):
    """A connection to a proxy on asyncio until its tunnel is open: keeps what arrives for
    the CONNECT exchange, which ``read`` hands over."""

    def __init__(self) -> None:
        self._received: list[bytes] = []
        self.ended = False  # EOF, or the connection was lost
        self._wake: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        self._received.append(data)
        self._wake_reader()

    def eof_received(self) -> None:
        self.ended = True
        self._wake_reader()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self._wake_reader()

    def _wake_reader(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def read(self) -> bytes:
        """What arrived since the last read, waiting for something; ``b""`` at the end."""
        while not self._received and not self.ended:
            self._wake = asyncio.get_running_loop().create_future()
            try:
                await self._wake
            finally:
                self._wake = None
        data = b"".join(self._received)
        self._received.clear()
        return data


async def _tunnel_stream(
    proxy: Proxy, host: str, port: int, tls: ssl.SSLContext | None
) -> ByteStream:
    """A stream to ``host``:``port`` through a CONNECT tunnel of ``proxy`` (anyio's streams,
    on trio), with TLS over the tunnel for an https server. Closed when anything fails or the
    attempt is cancelled."""
    try:
        stream: ByteStream = await anyio.connect_tcp(proxy.host, proxy.port)
    except (OSError, anyio.BrokenResourceError) as exc:
        raise connect_error(proxy, exc, _anyio_message(exc)) from exc
    try:
        tunnel = Tunnel(proxy, host, port)
        try:
            await stream.send(tunnel.request)
            while True:
                try:
                    data = await stream.receive(READ_SIZE)
                except anyio.EndOfStream:
                    data = b""
                if tunnel.receive(data):
                    break
        except (OSError, anyio.BrokenResourceError) as exc:
            message = f"the connection to {proxy.named} failed: {_anyio_message(exc)}"
            raise ProxyError(message) from exc
        if tls is not None:
            # Imported here: it imports ssl, which a Python built without OpenSSL lacks, and
            # then only https is unavailable (NoHttpClient), not the whole driver.
            from anyio.streams.tls import TLSStream

            try:
                # Not standard-compatible, as a direct connection (see _open_stream).
                stream = await TLSStream.wrap(
                    stream, hostname=host, ssl_context=tls, standard_compatible=False
                )
            except (OSError, anyio.BrokenResourceError) as exc:
                raise ConnectError(_anyio_message(exc)) from exc
    except BaseException:
        await anyio.aclose_forcefully(stream)
        raise
    return stream


def _anyio_message(exc: BaseException) -> str:
    # anyio words a failed connect "All connection attempts failed" and gives the reason as
    # the cause; a broken stream carries no message of its own, only a cause.
    cause = exc.__cause__
    if isinstance(cause, OSError):
        return os_message(cause)
    if isinstance(exc, OSError):
        return os_message(exc)
    return type(exc).__name__
