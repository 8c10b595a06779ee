"""HTTP requests of the blocking driver: a pool of h11 keep-alive connections of our own, used
by worker threads that serve one request after another.

``HttpExecutor`` performs ``StartHttp`` and ``AbortHttp`` and turns what happens to each request
into ``HttpResponseStarted``, ``HttpBodyReceived``, ``HttpResponseEnded`` or ``HttpFailed``
events. It holds I/O handles only and decides nothing (SPEC §2); socket, TLS and h11 errors
become events here and nowhere else (STYLE 12). What goes on the wire, how a read becomes
events and how a failure is worded are in ``_h11pool``, shared with the anyio driver.

Workers. A started request waits in a FIFO queue until a worker thread takes it. A worker
performs one request at a time and then takes the next; one idle for ``_IDLE_EXIT`` seconds
ends. At most ``connection_cap(pool_size, max_connections)`` workers exist, so at most that
many requests are sent at once and at most that many connections are open; further requests
wait in the queue, where ``abort`` removes them.

Order. Requests are written in the order they were started: a worker whose request got a
connection before the requests started ahead of it were written waits (``_wait_turn``) until
they were written or ended. Workers take requests in start order, so every request ahead is
held by a worker that is getting on with it: the wait always ends. The machine relies on it:
the ``notifications/initialized`` POST started while the ``initialize`` answer still streams
must reach the server before the calls made once the session is ready.

Aborting. A thread blocked in connect(), send() or recv() wakes only through its socket, and
close() from another thread does not wake it (and would let the descriptor be reused under
it). So before each phase that blocks, the worker names, under the lock, the socket it blocks
on ("claims" it); ``abort`` marks the request and shuts that socket down, which wakes the
blocked call at once, in every phase: connecting (the connect is started, non-blocking, before
the claim, so the shutdown always finds it in progress), the TLS handshake, sending, waiting
for the head, reading the body. The worker then closes the connection (never pooled half-read)
and feeds nothing. Only DNS resolution cannot be woken; an aborted request still waiting in it
ends when the resolver answers.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import h11

from mcp_core import (
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
    StartHttp,
)

from ._h11pool import (
    FAILURES,
    READ_SIZE,
    ConnectError,
    Origin,
    Pool,
    ReadError,
    RequestBuilder,
    WriteError,
    connection_cap,
    decode_headers,
    finish,
    is_readable,
    os_message,
    reason,
    receive,
    request_bytes,
)

if TYPE_CHECKING:
    import ssl

__all__ = ["HttpEvent", "HttpExecutor"]

HttpEvent = HttpResponseStarted | HttpBodyReceived | HttpResponseEnded | HttpFailed

# A worker with nothing to do for this long ends; the next request starts another.
_IDLE_EXIT = 5.0


class HttpExecutor:
    """Sends the requests of one client through one pool of keep-alive connections.

    HTTP/1.1 only, TLS verified with the default context, no redirect followed, no retry and no
    timeout: the machine's deadlines end a request with ``AbortHttp``. ``feed`` is called from
    the worker threads, without any lock of the executor held. ``pool_size`` (the client's
    in-flight window) sizes the cap on connections and workers, ``max_connections`` sets it
    exactly (see ``connection_cap``).

    A worker learns of an abort only when its socket wakes it, so events of an aborted stream
    can still reach ``feed`` after ``abort`` returned: the feed drops them by taking the lock
    it also holds around ``start`` and ``abort`` and checking ``is_live(event.stream)`` under
    it (the executor does not check for it: one lock per event is enough).
    """

    def __init__(
        self,
        feed: Callable[[HttpEvent], None],
        now: Callable[[], float],
        *,
        pool_size: int | None = None,
        max_connections: int | None = None,
    ) -> None:
        self._feed = feed
        self._now = now
        self._lock = threading.Lock()  # guards everything below and every _Request
        self._work = threading.Condition(self._lock)  # a request was queued, or close()
        self._requests: dict[int, _Request] = {}  # stream -> its request, until ended or aborted
        self._queue: deque[_Request] = deque()  # started, not yet taken by a worker
        self._unsent: deque[_Request] = deque()  # started, not yet written, in start order
        self._pool: Pool[_Connection] = Pool(connection_cap(pool_size, max_connections))
        self._builder = RequestBuilder()  # validates each distinct URL and headers once
        self._workers: set[threading.Thread] = set()
        # Workers waiting for a request or about to take one (a new one, or one feeding the
        # last event of its request): start() starts a worker only for requests beyond them.
        self._free = 0
        self._sleeping = 0  # workers waiting in _take: notify() only when one is
        self._busy = 0  # requests a worker performs (aborted ones until it has let go)
        self._names = itertools.count(1)
        self._closed = False
        # Made on the first https request: loading the CA store costs milliseconds a stdio
        # client should not pay.
        self._tls: ssl.SSLContext | None = None

    @property
    def in_flight(self) -> int:
        """Requests queued or being performed (aborted ones until their worker let go)."""
        with self._lock:
            return self._busy + len(self._queue)

    def is_live(self, stream: int) -> bool:
        """True while ``stream`` was started and neither aborted nor done (its last event fed).

        Without the executor's lock (one dict lookup is atomic): the feed asks it for every
        event, under the client's lock, which start() and abort() also run under."""
        return stream in self._requests

    def start(self, action: StartHttp) -> None:
        """Queue the request for a worker (starting one if none is free and the cap allows)
        and return at once; every outcome is fed back as events. Ignored after ``close()``."""
        with self._lock:
            if self._closed:
                return
            request = self._requests[action.stream] = _Request(action)
            self._queue.append(request)
            self._unsent.append(request)
            if self._sleeping:
                self._work.notify()
            if len(self._queue) > self._free and len(self._workers) < self._pool.max_connections:
                # Started under the lock, so that close() never joins a thread not started.
                worker = threading.Thread(
                    target=self._serve, name=f"mcp-sync-http-{next(self._names)}", daemon=True
                )
                self._workers.add(worker)
                self._free += 1
                worker.start()

    def abort(self, stream: int) -> None:
        """End the request of ``stream`` at once, whatever its worker is blocked in: its
        connection is closed, not returned to the pool half-read, and nothing more is fed for
        it. A queued request is dropped. An unknown or ended stream is ignored. Never blocks."""
        with self._lock:
            request = self._requests.pop(stream, None)
            if request is not None:
                if request.queued:
                    self._queue.remove(request)
                    request.queued = False
                request.abort()
                self._written(request)
                request.wake()  # its worker may be waiting for its turn

    def close(self, deadline: float) -> None:
        """Abort every request, join the workers until ``deadline`` (a ``time.monotonic()``
        value; a worker still blocked then, in DNS, is a daemon and is left behind) and close
        the pooled connections. Idempotent."""
        with self._lock:
            self._closed = True
            for request in self._queue:
                request.queued = False
            self._queue.clear()
            for request in self._requests.values():
                request.abort()
                request.wake()
            self._requests.clear()
            self._unsent.clear()
            self._work.notify_all()
            workers = [w for w in self._workers if w is not threading.current_thread()]
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            idle = self._pool.drain()
        for connection in idle:
            connection.sock.close()

    # --- the workers -------------------------------------------------------------------------

    def _serve(self) -> None:
        done: _Request | None = None
        try:
            while (request := self._take(done)) is not None:
                final = self._perform(request)
                done = request
                # Fed while the request is still live (the client checks is_live under its
                # lock); the next _take forgets it.
                self._feed(final)
        except BaseException:
            # A bug (the feed raised; threading reports it): leave no count behind.
            with self._lock:
                self._free -= 1
                if done is not None and self._requests.get(done.action.stream) is done:
                    del self._requests[done.action.stream]
                self._workers.discard(threading.current_thread())
            raise

    def _take(self, done: _Request | None) -> _Request | None:
        """Forget ``done`` (its last event was fed) and return the next queued request, or None
        when this worker ends (closed, or idle too long). A worker that ends leaves
        ``_workers`` under the same lock, so start() never counts on a worker that will not
        take its request."""
        with self._lock:
            if done is not None and self._requests.get(done.action.stream) is done:
                del self._requests[done.action.stream]
            while not self._queue and not self._closed:
                self._sleeping += 1
                woken = self._work.wait(_IDLE_EXIT)
                self._sleeping -= 1
                if not woken and not self._queue:
                    break
            self._free -= 1
            if not self._queue or self._closed:
                self._workers.discard(threading.current_thread())
                return None
            request = self._queue.popleft()
            request.queued = False
            self._busy += 1
            return request

    def _perform(self, request: _Request) -> HttpFailed | HttpResponseEnded:
        """Send the request and feed its head and body; return its last event, not yet fed
        (its connection is back in the pool or closed by then, and this worker counts as
        free)."""
        action = request.action
        stream = action.stream
        connection: _Connection | None = None
        reusable = False
        try:
            target, head = self._builder.build(action)
            connection = self._connection(request, target.origin)
            self._wait_turn(request)
            connection.send(request_bytes(connection.h11, head, action.body))
            with self._lock:
                self._written(request)
            while True:
                response, body, ended = receive(connection.h11, connection.recv())
                if response is not None:
                    started = HttpResponseStarted(
                        now=self._now(),
                        stream=stream,
                        status=response.status_code,
                        headers=decode_headers(response),
                    )
                    self._feed(started)
                if body:  # one event per read: an SSE body may never end
                    self._feed(HttpBodyReceived(now=self._now(), stream=stream, data=body))
                if ended:
                    break
            reusable = finish(connection.h11)
        except (*FAILURES, ValueError) as exc:  # ValueError: a bad port, a non-Latin-1 header
            return HttpFailed(now=self._now(), stream=stream, reason=reason(exc))
        finally:
            with self._lock:
                self._written(request)  # or never will be: those behind it go on
            self._let_go(request, connection, reusable=reusable)
        return HttpResponseEnded(now=self._now(), stream=stream)

    def _wait_turn(self, request: _Request) -> None:
        """Block until every request started before ``request`` was written or ended. Each
        waiting worker has a condition of its own, woken when its request becomes the head:
        one shared condition woke every waiting worker per request written (measured: 256 in
        flight fell from 2,000 to 600 calls/s)."""
        with self._lock:
            while self._unsent and self._unsent[0] is not request and not request.aborted:
                if request.turn is None:
                    request.turn = threading.Condition(self._lock)
                request.turn.wait()
            if request.aborted:
                raise ConnectError("the request was aborted")

    def _written(self, request: _Request) -> None:
        """With the lock held: ``request`` was written or ended unwritten. Idempotent."""
        if request.unsent:
            request.unsent = False
            if self._unsent and self._unsent[0] is request:
                self._unsent.popleft()
                while self._unsent and not self._unsent[0].unsent:
                    self._unsent.popleft()
                if self._unsent:
                    self._unsent[0].wake()

    # --- connections -------------------------------------------------------------------------

    def _connection(self, request: _Request, origin: Origin) -> _Connection:
        """A pooled connection to ``origin`` that the server has not closed (only the one about
        to be used is checked), else a new one; claimed by ``request``."""
        with self._lock:
            if request.aborted:
                raise ConnectError("the request was aborted")
            while (connection := self._pool.take(origin)) is not None:
                if not is_readable(connection.sock):
                    request.sock = connection.sock
                    return connection
                connection.sock.close()  # closed by the server while idle: discarded
                self._pool.discard()
            evicted = self._pool.reserve()
        if evicted is not None:
            evicted.sock.close()
        try:
            return self._open(request, origin)
        except BaseException:
            with self._lock:
                self._pool.discard()
            raise

    def _open(self, request: _Request, origin: Origin) -> _Connection:
        scheme, host, port = origin
        try:
            addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ConnectError(os_message(exc)) from exc
        error: OSError | None = None
        for family, kind, proto, _name, address in addresses:  # as socket.create_connection
            sock = socket.socket(family, kind, proto)
            try:
                self._connect(request, sock, address)
            except OSError as exc:
                self._close(request, sock)
                error = exc
            except BaseException:
                self._close(request, sock)
                raise
            else:
                break
        else:
            raise ConnectError(os_message(error) if error else "no address for the host")
        if scheme == "https":
            try:
                # wrap_socket takes over the descriptor; the handshake runs once the TLS socket
                # is claimed, so that abort() can interrupt it.
                tls = self._tls_context().wrap_socket(
                    sock, server_hostname=host, do_handshake_on_connect=False
                )
            except BaseException as exc:
                self._close(request, sock)
                if isinstance(exc, OSError):
                    raise ConnectError(os_message(exc)) from exc
                raise
            try:
                self._claim(request, tls)
                tls.do_handshake()
            except BaseException as exc:
                self._close(request, tls)
                if isinstance(exc, OSError):
                    raise ConnectError(os_message(exc)) from exc
                raise
            sock = tls
        return _Connection(origin, sock)

    def _connect(self, request: _Request, sock: socket.socket, address: Any) -> None:
        # Started non-blocking before the claim: a shutdown() wakes a connect in progress,
        # while one that came before the connect began would be ignored.
        sock.setblocking(False)
        code = sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS):
            raise OSError(code, os.strerror(code))
        self._claim(request, sock)
        if code:
            poller = select.poll()
            poller.register(sock, select.POLLOUT)
            poller.poll()
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise OSError(code, os.strerror(code))
        sock.setblocking(True)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _claim(self, request: _Request, sock: socket.socket) -> None:
        """Before a blocking call on ``sock``: fail if ``request`` was aborted, else make
        ``sock`` the one abort() shuts down."""
        with self._lock:
            if request.aborted:
                raise ConnectError("the request was aborted")
            request.sock = sock

    def _close(self, request: _Request, sock: socket.socket) -> None:
        # Unclaimed under the lock first: abort() never shuts down a closed descriptor (which
        # another thread may have reused).
        with self._lock:
            if request.sock is sock:
                request.sock = None
        sock.close()

    def _let_go(self, request: _Request, connection: _Connection | None, *, reusable: bool) -> None:
        """The request is done with its connection (if it got one): back to the pool if the
        response was read to its end and nothing aborted it, closed otherwise. A later abort
        leaves it alone. The worker counts as free from here on."""
        with self._lock:
            self._busy -= 1
            self._free += 1  # from here on it only feeds, then takes the next request
            request.sock = None
            if connection is None:
                return
            if reusable and not request.aborted and not self._closed:
                self._pool.put(connection.origin, connection)
                return
            self._pool.discard()
        connection.sock.close()

    def _tls_context(self) -> ssl.SSLContext:
        context = self._tls
        if context is None:
            import ssl  # here: a stdio client never pays for it

            context = ssl.create_default_context()
            with self._lock:
                if self._tls is None:
                    self._tls = context
                context = self._tls
        return context


class _Request:
    """One request, queued or in flight, and the socket its worker blocks on at the moment;
    guarded by the executor's lock."""

    __slots__ = ("aborted", "action", "queued", "sock", "turn", "unsent")

    def __init__(self, action: StartHttp) -> None:
        self.action = action
        self.aborted = False
        self.queued = True
        self.unsent = True  # in the executor's _unsent until written or ended
        self.turn: threading.Condition | None = None  # made when its worker waits its turn
        self.sock: socket.socket | None = None

    def wake(self) -> None:
        """With the lock held: wake this request's worker if it waits for its turn."""
        if self.turn is not None:
            self.turn.notify()

    def abort(self) -> None:
        """With the lock held: wake whatever this request's worker is blocked in. The
        descriptor stays open (only the worker closes it, after unclaiming it)."""
        self.aborted = True
        if self.sock is not None:
            with contextlib.suppress(OSError):
                # socket.socket's shutdown: ssl.SSLSocket's would also drop its TLS state
                # under a thread still reading through it.
                socket.socket.shutdown(self.sock, socket.SHUT_RDWR)


class _Connection:
    """One keep-alive connection (a blocking TCP or TLS socket and its h11 state), used by one
    request at a time."""

    __slots__ = ("h11", "origin", "sock")

    def __init__(self, origin: Origin, sock: socket.socket) -> None:
        self.origin = origin
        self.sock = sock
        self.h11 = h11.Connection(h11.CLIENT)

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise WriteError(os_message(exc)) from exc

    def recv(self) -> bytes:
        try:
            return self.sock.recv(READ_SIZE)
        except OSError as exc:
            raise ReadError(os_message(exc)) from exc
