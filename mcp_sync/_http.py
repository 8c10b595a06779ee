"""HTTP requests of the blocking driver: a pool of h11 keep-alive connections of our own, used
by the callers' own threads and by worker threads that serve one request after another.

``HttpExecutor`` performs ``StartHttp`` and ``AbortHttp`` and turns what happens to each request
into ``HttpResponseStarted``, ``HttpBodyReceived``, ``HttpResponseEnded`` or ``HttpFailed``
events. It holds I/O handles only and decides nothing (SPEC §2); socket, TLS and h11 errors
become events here and nowhere else (STYLE 12). What goes on the wire, how a read becomes
events and the pool's bookkeeping are in the core (``mcp_core._h11wire``), the socket side and
how a failure is worded in ``_mcp_io.http``: both shared with the anyio driver, which this one
never imports.

Workers. A started request waits in a FIFO queue until a worker thread takes it. A worker
performs one request at a time and then takes the next; one idle for ``_IDLE_EXIT`` seconds
ends. At most ``connection_cap(pool_size, max_connections)`` workers and callers running their
own requests (below) exist at once, so at most that many requests are sent at once and at most
that many connections are open; further requests wait in the queue, where ``abort`` removes
them.

Order. Requests are written in the order they were started (the ``StartHttp`` contract, kept
by the core's ``StartOrder``, as in the anyio executor): a worker whose request got a
connection before the requests started ahead of it were written waits (``_wait_turn``) until
they were written or ended. Workers take requests in start order, so every request ahead is
held by a worker that is getting on with it: the wait always ends.

Aborting. A thread blocked in connect(), send() or recv() wakes only through its socket, and
close() from another thread does not wake it (and would let the descriptor be reused under
it). So before each phase that blocks, the worker names, under the lock, the socket it blocks
on ("claims" it); ``abort`` marks the request and shuts that socket down, which wakes the
blocked call at once, in every phase: connecting (the connect is started, non-blocking, before
the claim, so the shutdown always finds it in progress), the TLS handshake, sending, waiting
for the head, reading the body. The worker then closes the connection (never pooled half-read)
and feeds nothing. Only DNS resolution cannot be woken; an aborted request still waiting in it
ends when the resolver answers.

Theory of operation: callers run their own requests
---------------------------------------------------
A thread in ``call_tool`` or ``list_tools`` is blocked until its reply anyway. When the feed of
its own call starts a request (the client passes ``inline=True`` to ``start`` only from that
feed), the caller performs the request itself with ``run``, outside the client's lock, with the
workers' code (``_exchange``: a connection, the turn, the claims, send, read, ``feed``). Its
reply is then usually set by its own feed: no thread hand-off at all, as in a plain blocking
client. Every other request (started by a worker's, the timer's, a handler's or another
caller's feed: the GET stream, notifications, cancels, retries, the next page) goes to workers.
Measured against bench/servers/min_http.py (3,000 calls, median of 14 interleaved pairs on two
cores): 1.2, 1.5 and 1.7 times the calls/s of the executor before (workers only) at 1, 16 and
256 in flight; thread switches per call at 16 in flight went from about 10 to 3.

- **One owner at a time.** A request belongs to the queue (``queued``), to one worker, or to
  one caller (``inline``, from ``start`` until the caller let go of it); it changes hands only
  under the lock. ``start(inline=True)`` neither queues nor notifies: no worker can see it.
- **The cap counts callers.** An inline runner counts like a worker: ``start(inline=True)``
  queues the request instead when workers plus inline runners are at the cap, and a worker is
  started only below it. So at most the cap of requests use connections, as before.
- **Nothing is stranded.** Whenever the queue holds more requests than there are free workers,
  workers plus inline runners are at the cap; every change that could break this (a request
  queued, an inline runner letting go) ends in ``_serve_queue``, which starts a worker if it
  does. A caller that cannot run its request after all gives it up with ``release`` (the
  client calls it whenever the caller is interrupted, e.g. by KeyboardInterrupt in a callback
  its feed ran before ``run``): a request of which nothing was sent goes back into the queue
  in start order.
- **The answer can come before the end.** An SSE response may stay open after the answer, or
  carry server requests and notifications first. The caller reads in slices and looks at its
  ``done`` between reads: once its reply was set and no byte is waiting, it hands the request
  (connection and h11 state) to the workers, first in the queue, and a worker's next read
  continues where it stopped. Everything read was fed before, so events reach ``feed`` in the
  order read on the connection. A reply set by another thread while the caller still waits on
  its socket (the timeout, stop(), an answer that came on another stream) is noticed within a
  slice; the first two also abort the stream, which wakes the caller at once.
- **Abort is the same.** The caller claims its socket before each blocking phase as a worker
  does, so ``abort`` (the timer's RequestTimeout, stop(), the caller's own CancelCall) shuts
  it down and wakes the caller's read, connect or send; the connection is then closed, never
  pooled half-read. A handed-over request waiting in the queue has its connection closed by
  ``abort`` or ``close``.
- **Interrupts.** KeyboardInterrupt (or any exception) in the caller's thread while it runs its
  request: before anything was sent, the connection it may hold is closed and the request
  goes back into the queue in start order. Once sending began, what was sent or read cannot be
  trusted (an interrupt can land after a read returned and lose its bytes): the connection is
  closed and the request stays live, run by nobody, until the call's cancel (which the client
  feeds next) aborts it, telling the server in the legacy eras; ``release``, called after the
  cancel, fails it with ``HttpFailed`` if the cancel did not abort it. Then the exception goes
  on.
- **Order.** The caller waits for its turn (``_wait_turn``) like a worker, in slices so that
  KeyboardInterrupt gets through. Every request ahead is held by a worker, by a caller that is
  getting on with it, or waits in the queue, which is served (above): the wait always ends.
- **Callbacks.** Progress callbacks, log records and the other actions of a feed run in the
  thread that fed: now often the caller's own thread, inside ``call_tool``.

Lock order: the client's lock, then this executor's lock (``start`` and ``abort`` run under
the client's lock). No thread calls ``feed`` holding this executor's lock.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import h11

from _mcp_io.http import (
    READ_SIZE,
    Network,
    ProxyError,
    Tunnel,
    connect_error,
    is_readable,
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
from mcp_core._h11wire import (
    FAILURES,
    ConnectError,
    Origin,
    Pool,
    ReadError,
    RequestBuilder,
    StartOrder,
    WriteError,
    connection_cap,
    decode_headers,
    finish,
    receive,
    request_bytes,
)

__all__ = ["HttpEvent", "HttpExecutor", "HttpRequest"]

HttpEvent = HttpResponseStarted | HttpBodyReceived | HttpResponseEnded | HttpFailed

# A worker with nothing to do for this long ends; the next request starts another.
_IDLE_EXIT = 5.0
# A caller running its own request waits (for its turn, a connect, data) in slices of this
# long: KeyboardInterrupt reaches the main thread promptly whichever thread got the signal, and
# a reply set by another thread is noticed (the client's _WAIT_SLICE).
_SLICE = 0.1
_SLICE_MS = int(_SLICE * 1000)


class HttpExecutor:
    """Sends the requests of one client through one pool of keep-alive connections.

    HTTP/1.1 only, no redirect followed, no retry and no timeout: the machine's deadlines end
    a request with ``AbortHttp``. ``network`` says which TLS context and which proxy (a
    CONNECT tunnel) each origin gets (default: the verifying default context, no proxy).
    ``feed`` is called from the worker threads and from callers in ``run``, without any lock
    of the executor held. ``pool_size`` (the client's in-flight window) sizes the cap on
    connections and on workers plus inline runners, ``max_connections`` sets it exactly (see
    ``connection_cap``).

    A worker learns of an abort only when its socket wakes it, so events of an aborted stream
    can still reach ``feed`` after ``abort`` returned: the machine drops them (it ignores
    events of a stream it aborted: the one filter for late events, in the core).
    """

    def __init__(
        self,
        feed: Callable[[HttpEvent], None],
        now: Callable[[], float],
        *,
        pool_size: int | None = None,
        max_connections: int | None = None,
        network: Network | None = None,
    ) -> None:
        self._feed = feed
        self._now = now
        self._lock = threading.Lock()  # guards everything below and every _Request
        self._work = threading.Condition(self._lock)  # a request was queued, or close()
        self._requests: dict[int, _Request] = {}  # stream -> its request, until ended or aborted
        self._queue: deque[_Request] = deque()  # started, not yet taken by a worker
        self._order: StartOrder[_Request] = StartOrder()  # the StartHttp contract's write order
        self._pool: Pool[_Connection] = Pool(connection_cap(pool_size, max_connections))
        self._builder = RequestBuilder()  # validates each distinct URL and headers once
        self._workers: set[threading.Thread] = set()
        # Workers waiting for a request or about to take one (a new one, or one feeding the
        # last event of its request): start() starts a worker only for requests beyond them.
        self._free = 0
        self._sleeping = 0  # workers waiting in _take: notify() only when one is
        self._busy = 0  # requests performed by a worker or a caller (aborted: until let go)
        self._inline = 0  # requests that callers hold to run themselves (until they let go)
        self._names = itertools.count(1)
        self._closed = False
        self._network = network or Network()  # its default TLS context: on the first https

    @property
    def in_flight(self) -> int:
        """Requests queued or being performed, by a worker or a caller (aborted ones until
        let go)."""
        with self._lock:
            return self._busy + len(self._queue)

    def is_live(self, stream: int) -> bool:
        """True while ``stream`` was started and neither aborted nor done (its last event fed).
        Without the executor's lock (one dict lookup is atomic)."""
        return stream in self._requests

    def start(self, action: StartHttp, *, inline: bool = False) -> _Request | None:
        """Queue the request for a worker (starting one if none is free and the cap allows)
        and return None at once; every outcome is fed back as events. Ignored after
        ``close()``.

        With ``inline`` (the caller whose own feed started it will wait for its reply anyway)
        the request is returned instead, unless the cap is reached: no worker sees it, and the
        caller must pass it to ``run``, or to ``release`` if it cannot."""
        with self._lock:
            if self._closed:
                return None
            request = self._requests[action.stream] = _Request(action)
            self._order.started(request)
            if inline and len(self._workers) + self._inline < self._pool.max_connections:
                request.queued = False
                request.inline = True
                self._inline += 1
                self._busy += 1
                return request
            self._queue.append(request)
            self._serve_queue()
            return None

    def run(self, request: _Request, done: threading.Event) -> None:
        """Perform ``request`` (from ``start(inline=True)``) in the calling thread, feeding its
        events as a worker would, until its response ended, failed or was aborted, or until
        ``done`` is set while the response goes on with nothing to read at the moment: then
        the request, still open, goes to a worker, which reads on. On an exception (e.g.
        KeyboardInterrupt) the request is put back, handed on or failed (see the module
        docstring) before the exception goes on. Never call it twice for one request."""
        final = self._exchange(request, done)
        if final is not None:
            try:
                self._feed(final)
            finally:
                self._forget(request)

    def release(self, request: _Request | None) -> None:
        """After the caller of ``start(inline=True)`` was interrupted (in ``run`` or before it),
        and after its call's cancel was fed: a request it did not begin to send goes back into
        the queue in start order, for a worker; one whose connection ``run`` closed ends with
        ``HttpFailed``, unless the cancel aborted it. Anything else, or None, is ignored:
        idempotent."""
        if request is None:
            return
        if request.inline:  # run() never took over, or an exception cut its clean-up short
            if not request.sending:
                self._put_back(request)
                return
            self._kill(request)
        if request.dead and self.is_live(request.action.stream):
            failed = HttpFailed(
                now=self._now(), stream=request.action.stream, reason="the request was interrupted"
            )
            try:
                self._feed(failed)
            finally:
                self._forget(request)

    def _serve_queue(self) -> None:
        """With the lock held, after the queue grew or an inline runner let go: wake a sleeping
        worker, and start one if the queue holds more requests than there are free workers
        and the cap allows (inline runners count like workers)."""
        if not self._queue:
            return
        if self._sleeping:
            self._work.notify()
        if (
            len(self._queue) > self._free
            and len(self._workers) + self._inline < self._pool.max_connections
        ):
            # Started under the lock, so that close() never joins a thread not started.
            worker = threading.Thread(
                target=self._serve, name=f"mcp-sync-http-{next(self._names)}", daemon=True
            )
            self._workers.add(worker)
            self._free += 1
            worker.start()

    def abort(self, stream: int) -> None:
        """End the request of ``stream`` at once, whatever its worker or caller is blocked in:
        its connection is closed, not returned to the pool half-read, and nothing more is fed
        for it. A queued request is dropped (with its connection, if a caller handed it over
        open). An unknown or ended stream is ignored. Never blocks."""
        with self._lock:
            request = self._requests.pop(stream, None)
            if request is not None:
                if request.queued:
                    self._queue.remove(request)
                    request.queued = False
                    self._drop_connection(request)
                request.abort()
                self._written(request)
                request.wake()  # its worker may be waiting for its turn

    def close(self, deadline: float) -> None:
        """Abort every request, join the workers until ``deadline`` (a ``time.monotonic()``
        value; a worker still blocked then, in DNS, is a daemon and is left behind) and close
        the pooled connections. A caller still in ``run`` is woken by the abort and closes
        its connection itself. Idempotent."""
        with self._lock:
            self._closed = True
            for request in self._queue:
                request.queued = False
                self._drop_connection(request)
            self._queue.clear()
            for request in self._requests.values():
                request.abort()
                request.wake()
            self._requests.clear()
            self._order.clear()
            self._work.notify_all()
            workers = [w for w in self._workers if w is not threading.current_thread()]
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            idle = self._pool.drain()
        for connection in idle:
            connection.sock.close()

    def _drop_connection(self, request: _Request) -> None:
        """With the lock held: close the connection of a request nobody runs (one handed over
        open, waiting in the queue)."""
        connection, request.connection = request.connection, None
        if connection is not None:
            self._pool.discard()
            connection.sock.close()

    # --- the workers -------------------------------------------------------------------------

    def _serve(self) -> None:
        done: _Request | None = None
        try:
            while (request := self._take(done)) is not None:
                final = self._exchange(request)
                assert final is not None  # only a caller hands a request over
                done = request
                # Fed while the request is still live; the next _take forgets it.
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

    def _exchange(
        self, request: _Request, done: threading.Event | None = None
    ) -> HttpFailed | HttpResponseEnded | None:
        """Send the request (unless it was sent before a caller handed it over) and feed its
        head and body; return its last event, not yet fed (its connection is back in the pool
        or closed by then, and the thread counts as free). With ``done`` (a caller in ``run``)
        return None when the request went to a worker to be read on."""
        action = request.action
        stream = action.stream
        reusable = False
        try:
            connection = request.connection
            if connection is None:
                target, head = self._builder.build(action)
                connection = self._connection(request, target.origin)
                self._wait_turn(request)
                request.sending = True
                connection.send(request_bytes(connection.h11, head, action.body))
                with self._lock:
                    self._written(request)
            else:  # handed over by a caller while its response goes on
                self._claim(request, connection.sock)
            while True:
                data = connection.recv() if done is None else self._read_inline(connection, done)
                if data is None:  # the caller's reply is done, the response goes on
                    if self._hand_over(request):
                        return None
                    raise ConnectError("the request was aborted")
                response, body, ended = receive(connection.h11, data)
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
            final: HttpFailed | HttpResponseEnded = HttpFailed(
                now=self._now(), stream=stream, reason=reason(exc)
            )
        except BaseException:
            if request.inline:
                self._interrupted(request)
            else:  # a bug in a worker (threading reports it): leave no count behind
                with self._lock:
                    self._written(request)
                self._let_go(request, reusable=False)
            raise
        else:
            final = HttpResponseEnded(now=self._now(), stream=stream)
        with self._lock:
            self._written(request)  # or never will be: those behind it go on
        self._let_go(request, reusable=reusable)
        return final

    def _read_inline(self, connection: _Connection, done: threading.Event) -> bytes | None:
        """A caller's next read on ``connection``, waiting in slices (a shutdown by abort()
        ends the wait with EOF or an error): None once ``done`` is set and nothing is waiting
        to be read, so that the rest goes to a worker."""
        while True:
            if done.is_set() and not connection.waiting():
                return None
            data = connection.recv_within(_SLICE)
            if data is not None:
                return data

    def _hand_over(self, request: _Request) -> bool:
        """A caller's reply is done while its response goes on: queue the request, with its
        connection, for a worker to read on. False if it was aborted meanwhile (the caller
        then ends it as failed: nothing is fed for an aborted stream)."""
        with self._lock:
            if request.aborted or self._closed:
                return False
            request.sock = None
            self._busy -= 1  # _take counts it again
            request.queued = True
            # First: the next free worker takes it, so that the connection it holds never
            # waits while a worker opens another one beyond the cap.
            self._queue.appendleft(request)
            self._leave_inline(request)  # serves the queue
            return True

    def _interrupted(self, request: _Request) -> None:
        """A caller's ``run`` was interrupted (KeyboardInterrupt, or any exception that is not
        a failure of the request): put the request back if nothing of it was sent, else close
        its connection (``release`` ends its stream, if the call's cancel did not)."""
        if not request.sending:
            self._put_back(request)
        else:
            self._kill(request)

    def _put_back(self, request: _Request) -> None:
        """Nothing of ``request`` was sent: close the connection it may hold (perhaps half
        opened) and queue it again, in start order (stream numbers grow in start order), so
        that the requests started after it still wait for it, not the other way round."""
        with self._lock:
            connection, request.connection = request.connection, None
            request.sock = None
            self._busy -= 1
            if connection is not None:
                self._pool.discard()
            if not request.aborted and not self._closed:
                stream = request.action.stream
                at = next(
                    (i for i, queued in enumerate(self._queue) if queued.action.stream > stream),
                    len(self._queue),
                )
                self._queue.insert(at, request)
                request.queued = True
            self._leave_inline(request)  # may start a worker for it
        if connection is not None:
            connection.sock.close()

    def _kill(self, request: _Request) -> None:
        """A caller's request was interrupted once it began to be sent: what was sent or read
        cannot be trusted (bytes read may be lost with the interrupt), so its connection is
        closed. It stays live, with nobody running it, until the call's cancel aborts it or
        ``release`` fails it: the cancel comes first, so the server is told (a
        notifications/cancelled, or in the 2026-07-28 era the closed stream itself)."""
        with self._lock:
            self._written(request)
        self._let_go(request, reusable=False)
        request.dead = True

    def _forget(self, request: _Request) -> None:
        """The last event of a request that a caller ran was fed: it is no longer live."""
        with self._lock:
            if self._requests.get(request.action.stream) is request:
                del self._requests[request.action.stream]

    def _wait_turn(self, request: _Request) -> None:
        """Block until every request started before ``request`` was written or ended. Each
        waiting worker has a condition of its own, woken when its request becomes the head:
        one shared condition woke every waiting worker per request written (measured: 256 in
        flight fell from 2,000 to 600 calls/s). A caller waits in slices."""
        with self._lock:
            while self._order.head() not in (None, request) and not request.aborted:
                if request.turn is None:
                    request.turn = threading.Condition(self._lock)
                request.turn.wait(_SLICE if request.inline else None)
            if request.aborted:
                raise ConnectError("the request was aborted")

    def _written(self, request: _Request) -> None:
        """With the lock held: ``request`` was written or ended unwritten. Idempotent."""
        following = self._order.written(request)
        if following is not None:
            following.wake()

    # --- connections -------------------------------------------------------------------------

    def _connection(self, request: _Request, origin: Origin) -> _Connection:
        """A pooled connection to ``origin`` that the server has not closed (only the one about
        to be used is checked), else a new one; claimed by ``request``."""
        while True:
            with self._lock:
                if request.aborted:
                    raise ConnectError("the request was aborted")
                connection = self._pool.take(origin)
                if connection is None:
                    evicted = self._pool.reserve()
                    break
                request.sock, request.connection = connection.sock, connection
            # Checked without the lock: a system call under it makes every thread that wants
            # the lock wait for this one to get the GIL back (measured, 16 callers in flight:
            # 10 thread switches per call instead of 3).
            if not is_readable(connection.sock):
                return connection
            with self._lock:  # closed by the server while idle (or aborted): discarded
                request.sock = request.connection = None
                self._pool.discard()
            connection.sock.close()
        if evicted is not None:
            evicted.sock.close()
        try:
            # One statement: no interrupt lands between the return and the assignment.
            connection = request.connection = self._open(request, origin)
        except BaseException:
            with self._lock:
                self._pool.discard()
            raise
        return connection

    def _open(self, request: _Request, origin: Origin) -> _Connection:
        scheme, host, port = origin
        proxy = self._network.proxy(origin)
        try:
            # Through a proxy, the proxy resolves the server's name.
            where = (host, port) if proxy is None else (proxy.host, proxy.port)
            addresses = socket.getaddrinfo(*where, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise connect_error(proxy, exc) from exc
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
            raise connect_error(proxy, error)
        if proxy is not None:
            try:
                # Claimed since _connect: abort() wakes the exchange with the proxy too.
                tunnel = Tunnel(proxy, host, port)
                sock.sendall(tunnel.request)
                while not tunnel.receive(sock.recv(READ_SIZE)):
                    pass
            except BaseException as exc:
                self._close(request, sock)
                if isinstance(exc, OSError):
                    message = f"the connection to {proxy.named} failed: {os_message(exc)}"
                    raise ProxyError(message) from exc
                raise
        if scheme == "https":
            try:
                # wrap_socket takes over the descriptor; the handshake runs once the TLS socket
                # is claimed, so that abort() can interrupt it.
                tls = self._network.tls().wrap_socket(
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
            while not poller.poll(_SLICE_MS):  # in slices: see _SLICE
                pass
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

    def _let_go(self, request: _Request, *, reusable: bool) -> None:
        """The request is done with its connection (if it got one): back to the pool if the
        response was read to its end and nothing aborted it, closed otherwise. A later abort
        leaves it alone. The worker counts as free from here on, an inline runner is gone."""
        with self._lock:
            self._busy -= 1
            if request.inline:
                self._leave_inline(request)
            else:
                self._free += 1  # from here on it only feeds, then takes the next request
            request.sock = None
            connection, request.connection = request.connection, None
            if connection is None:
                return
            if reusable and not request.aborted and not self._closed:
                self._pool.put(connection.origin, connection)
                return
            self._pool.discard()
        connection.sock.close()

    def _leave_inline(self, request: _Request) -> None:
        """With the lock held: the caller no longer holds ``request``; its place under the cap
        may go to a worker."""
        request.inline = False
        self._inline -= 1
        self._serve_queue()


class _Request:
    """One request, queued or in flight, the connection it holds and the socket its worker (or
    caller) blocks on at the moment; guarded by the executor's lock, except the flags that
    only the thread running it reads and writes (``sending``, ``dead``)."""

    __slots__ = (
        "aborted",
        "action",
        "connection",
        "dead",
        "inline",
        "queued",
        "sending",
        "sock",
        "turn",
    )

    def __init__(self, action: StartHttp) -> None:
        self.action = action
        self.aborted = False
        self.queued = True
        self.inline = False  # held by the caller that started it, until it lets go
        self.sending = False  # from just before its bytes go out (never sent twice after)
        self.dead = False  # interrupted in its caller's thread, connection closed: see _kill
        self.turn: threading.Condition | None = None  # made when its worker waits its turn
        self.sock: socket.socket | None = None
        self.connection: _Connection | None = None  # from connected until let go

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
    request at a time.

    A worker blocks in ``recv`` as long as it takes. A caller reads with ``recv_within``, in
    slices: on plain TCP a receive timeout on the socket (SO_RCVTIMEO) ends a blocking recv()
    with EAGAIN, one system call per read (a poll before each read cost 5-10% at 16 and 256 in
    flight, measured); over TLS, whose read retries EAGAIN itself, a poll of the socket comes
    first, after the bytes TLS already holds."""

    __slots__ = ("_pending", "_poller", "_timeout", "h11", "origin", "sock")

    def __init__(self, origin: Origin, sock: socket.socket) -> None:
        self.origin = origin
        self.sock = sock
        self.h11 = h11.Connection(h11.CLIENT)
        self._pending: Callable[[], int] | None = getattr(sock, "pending", None)  # TLS only
        self._poller: select.poll | None = None
        self._timeout = 0.0  # the socket's receive timeout (0: none), set for callers only

    def waiting(self) -> bool:
        """Whether a read would not block now (data, EOF, or a shutdown by abort())."""
        if self._pending is not None and self._pending() > 0:
            return True
        return bool(self._poll(0))

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise WriteError(os_message(exc)) from exc

    def recv(self) -> bytes:
        """Block until the next bytes come (``b""`` at EOF)."""
        if self._timeout:
            self._receive_timeout(0.0)
        try:
            return self.sock.recv(READ_SIZE)
        except OSError as exc:
            raise ReadError(os_message(exc)) from exc

    def recv_within(self, timeout: float) -> bytes | None:
        """The next bytes (``b""`` at EOF), or None if none came within ``timeout``."""
        if self._pending is not None:  # TLS
            if self._pending() == 0 and not self._poll(int(timeout * 1000)):
                return None
            return self.recv()
        if self._timeout != timeout:
            self._receive_timeout(timeout)
        try:
            return self.sock.recv(READ_SIZE)
        except BlockingIOError:  # the receive timeout
            return None
        except OSError as exc:
            raise ReadError(os_message(exc)) from exc

    def _receive_timeout(self, timeout: float) -> None:
        seconds, micros = divmod(round(timeout * 1_000_000), 1_000_000)
        self.sock.setsockopt(
            socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", seconds, micros)
        )
        self._timeout = timeout

    def _poll(self, timeout_ms: int) -> list[tuple[int, int]]:
        if self._poller is None:
            self._poller = select.poll()
            self._poller.register(self.sock, select.POLLIN)
        return self._poller.poll(timeout_ms)


HttpRequest = _Request  # what start(inline=True) hands the caller, for run() or release()
