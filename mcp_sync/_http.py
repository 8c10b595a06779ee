# Written twice, by hand (mcp_asyncio/_http.py is its twin): connections here are blocking
# sockets that worker threads and the callers' own threads read; there, asyncio protocols or
# anyio streams read by callbacks and tasks of the loop. What goes on the wire and the pool's
# bookkeeping are shared, in _mcp_io (h11wire, http).
"""HTTP requests of the blocking driver: a pool of h11 keep-alive connections of our own, used
by the callers' own threads and by worker threads that serve one request after another.

``HttpExecutor`` performs ``StartHttp`` and ``AbortHttp`` and turns what happens to each request
into ``HttpResponseStarted``, ``HttpBodyReceived``, ``HttpResponseEnded`` or ``HttpFailed``
events. It holds I/O handles only and decides nothing; socket, TLS and h11 errors
become events here and nowhere else. What goes on the wire, how a read becomes
events and the pool's bookkeeping are in ``_mcp_io.h11wire``, the socket side and
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
and feeds nothing more: it looks at the request after every read and once it let go (see
``HttpExecutor`` for a read it was handing over at that moment). Only DNS resolution cannot be
woken; an aborted request still waiting in it ends when the resolver answers.

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
- **Order.** The main thread waits for its turn (``_wait_turn``) like a worker, in slices so
  that KeyboardInterrupt gets through; so does every caller over TLS or without epoll. Every
  request ahead is held by a worker, by a caller that is getting on with it, has its bytes
  handed over (sent by whoever writes the request before it, below), or waits in the queue,
  which is served (above): the wait always ends. Other callers do not wait: see "many
  callers at once".
- **Callbacks.** Progress callbacks, log records and the other actions of a feed run in the
  thread that fed: now often the caller's own thread, inside ``call_tool``.

Theory of operation: many callers at once
-----------------------------------------
Waiting for one's turn to write was the cost at 16 callers in flight: a caller's request was
almost never the next to write (another caller had started one and not yet sent it), so
nearly every request waited on its condition and was woken by the one before it, a chain of
thread switches, one after the other (measured: 4,889 of 5,050 requests waited). Now a caller
other than the main thread whose request is ready but not next hands its bytes over
(``_hand_bytes``) and goes on to read its answer; whoever writes the request ahead of it (a
caller just done with its own, or one that handed its bytes over and finds nobody sending)
sends it too, in start order, without blocking (``_write_turns``, ``MSG_DONTWAIT``). A
socket without room, and bytes left when the main thread or a worker wrote the request ahead,
go to the writer thread (``mcp-sync-http-writer``, started at the first hand-over, ended by
``close`` or after ``_IDLE_EXIT`` seconds idle), which waits for room with epoll and is woken
by a byte on its pipe. Measured against bench/servers/min_http.py (median of interleaved
runs): see bench/README.md.

- **The main thread never hands over nor sends another's bytes**: KeyboardInterrupt lands
  only there, and must never cut a send of another request in half. It waits for its turn as
  before. Without epoll (not Linux) and over TLS (an ``ssl.SSLSocket`` is not for two
  threads at once) every caller waits for its turn.
- **Bytes handed over belong to their request**: the thread sending them marks it
  ``claimed`` for the one non-blocking send; the request's own thread waits for that send
  to return before it closes or pools the connection (``_take_back``), and takes back what
  was not sent (then the connection is closed, never pooled, and the requests behind it go
  on). A send that fails shuts the socket down, so the caller reading on it learns of it,
  with the send's error as the reason.
- **An idle pooled connection** is checked with Linux's TCP_INFO where it can say (plain
  TCP): established, and every byte received was read. It is no system call that lets
  another thread take the GIL, so a caller usually takes its connection and sends without
  another request getting in between. Elsewhere it is polled, as before.

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
from collections.abc import Callable, Sequence
from typing import Any

import h11

from _mcp_io.h11wire import (
    FAILURES,
    ClientConnection,
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
from _mcp_io.http import (
    READ_SIZE,
    Network,
    ProxyError,
    Tunnel,
    connect_error,
    is_readable,
    os_message,
    reason,
    tcp_received,
)
from mcp_core import (
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
    StartHttp,
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
# The writer thread (see "Many callers at once") waits for room on a socket with epoll, where
# there is one (Linux); elsewhere every caller waits for its turn to write.
_EPOLL: Any = getattr(select, "epoll", None)
_OUT = getattr(select, "EPOLLOUT", 0) | getattr(select, "EPOLLONESHOT", 0)
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)


class HttpExecutor:
    """Sends the requests of one client through one pool of keep-alive connections.

    HTTP/1.1 only, no redirect followed, no retry and no timeout: the machine's deadlines end
    a request with ``AbortHttp``. ``network`` says which TLS context and which proxy (a
    CONNECT tunnel) each origin gets (default: the verifying default context, no proxy).
    ``feed`` is called from the worker threads and from callers in ``run``, without any lock
    of the executor held. ``pool_size`` (the client's in-flight window) sizes the cap on
    connections and on workers plus inline runners, ``max_connections`` sets it exactly (see
    ``connection_cap``).

    A worker learns of an abort when its socket wakes it (or at its next look at the
    request): from then on it feeds nothing for that stream, not the failure the shutdown
    caused nor what it read since. ``feed`` runs without any lock of the executor, so the
    events of a read that a worker was already handing over when ``abort`` came can still
    reach ``feed`` after it returned (at most one read's body; never a failure or an end
    caused by the abort): the machine drops them (it ignores events of a stream it aborted:
    the one filter for late events, in the core).
    """

    def __init__(
        self,
        feed: Callable[[HttpEvent], None],
        now: Callable[[], float],
        *,
        pool_size: int | None = None,
        max_connections: int | None = None,
        network: Network | None = None,
        feed_many: Callable[[Sequence[HttpEvent]], None] | None = None,
    ) -> None:
        self._feed = feed
        # The events of one read, in order, in one call (one hold of the client's lock).
        self._feed_many = feed_many or self._feed_each
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
        # The writer thread (see "Many callers at once") and what it holds: the requests whose
        # bytes it has to send (their callers read the answers), those waiting for room on
        # their socket (by descriptor), whether it sleeps in poll (then a byte on its pipe
        # wakes it) and whether that byte is on its way. ``_sent`` is notified when a send of
        # handed bytes returns and someone waits for it (``_write_waiters``).
        self._writer: threading.Thread | None = None
        self._epoll: Any = None
        self._wake_fds: tuple[int, int] = (-1, -1)
        self._handed = 0
        self._no_room: dict[int, _Request] = {}
        self._writer_asleep = False
        self._wake_sent = False
        self._wake_due = False
        self._sent = threading.Condition(self._lock)
        self._write_waiters = 0

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
        last = self._exchange(request, done)
        if last is not None:
            try:
                if last:  # else aborted: nothing more for it
                    self._feed_many(last)
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

    def _feed_each(self, events: Sequence[HttpEvent]) -> None:
        for event in events:
            self._feed(event)

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
        self._wake_writer()

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
            if self._writer is not None:
                self._nudge()  # it ends
                if self._writer is not threading.current_thread():
                    workers.append(self._writer)
        self._wake_writer()
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            idle = self._pool.drain()
        for connection in idle:
            connection.sock.close()

    def _drop_connection(self, request: _Request) -> None:
        """With the lock held: close the connection of a request nobody runs (one handed over
        open, waiting in the queue)."""
        self._take_back(request)
        connection, request.connection = request.connection, None
        if connection is not None:
            self._pool.discard()
            connection.sock.close()

    # --- the workers -------------------------------------------------------------------------

    def _serve(self) -> None:
        done: _Request | None = None
        try:
            while (request := self._take(done)) is not None:
                last = self._exchange(request)
                assert last is not None  # only a caller hands a request over
                done = request
                # Fed while the request is still live; the next _take forgets it.
                if last:  # else aborted: nothing more for it
                    self._feed_many(last)
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
    ) -> list[HttpEvent] | None:
        """Send the request (unless it was sent before a caller handed it over) and feed its
        head and body; return its last events, not yet fed: what the last read brought and
        the end (its connection is back in the pool or closed by then, and the thread counts
        as free), or no event at all once it was aborted. With ``done`` (a caller in ``run``)
        return None when the request went to a worker to be read on."""
        action = request.action
        stream = action.stream
        reusable = False
        try:
            connection = request.connection
            if connection is None:
                target, head = self._builder.build(action)
                connection = self._connection(request, target.origin)
                payload = request_bytes(connection.h11, head, action.body)
                handed = None if done is None else self._hand_bytes(request, connection, payload)
                if not handed:  # else the writer sends it in its turn
                    if handed is None:
                        self._wait_turn(request)
                    request.sending = True
                    connection.send(payload)
                    with self._lock:
                        self._written(request, nudge=handed is None)
                    if handed is None:
                        self._wake_writer()
                    elif self._handed:  # bytes handed over before this write, so seen here
                        self._write_turns()  # not the main thread: it sends what waits itself
            else:  # handed over by a caller while its response goes on
                self._claim(request, connection.sock)
            while True:
                data = connection.recv() if done is None else self._read_inline(connection, done)
                if request.aborted:  # woken by abort(): what was read is nobody's
                    raise ReadError("the request was aborted")
                if data is None:  # the caller's reply is done, the response goes on
                    if self._hand_over(request):
                        return None
                    raise ConnectError("the request was aborted")
                response, body, ended = receive(connection.h11, data)
                events: list[HttpEvent] = []
                if response is not None:
                    started = HttpResponseStarted(
                        now=self._now(),
                        stream=stream,
                        status=response.status_code,
                        headers=decode_headers(response),
                    )
                    events.append(started)
                if body:  # one event per read: an SSE body may never end
                    events.append(HttpBodyReceived(now=self._now(), stream=stream, data=body))
                if ended:  # fed with the end, once the connection is let go
                    break
                if events:
                    self._feed_many(events)
            reusable = finish(connection.h11)
        except (*FAILURES, ValueError) as exc:  # ValueError: a bad port, a non-Latin-1 header
            events = []
            final: HttpFailed | HttpResponseEnded = HttpFailed(
                now=self._now(), stream=stream, reason=request.write_error or reason(exc)
            )
        except BaseException:
            if request.inline:
                self._interrupted(request)
            else:  # a bug in a worker (threading reports it): leave no count behind
                self._let_go(request, reusable=False)
            raise
        else:
            final = HttpResponseEnded(now=self._now(), stream=stream)
        self._let_go(request, reusable=reusable)  # written, or never will be
        if request.aborted:
            # abort() woke it (or came as it ended): nothing more is fed for the stream, not
            # the failure the shutdown caused, nor what the last read brought (StartHttp).
            return []
        events.append(final)
        return events

    # --- many callers at once: the writer thread --------------------------------------------

    def _hand_bytes(
        self, request: _Request, connection: _Connection, payload: bytes
    ) -> bool | None:
        """A caller's request is ready to go (connection taken, ``payload`` made) but requests
        started before it are not all written: hand ``payload`` over (to whichever thread
        writes the requests ahead of it, else the writer thread), send what is ready ahead of
        it if nobody is, and return True; the caller reads the answer as it comes. False when
        it is the request's turn already: the caller sends it at once, itself. None when the
        caller is the main thread (an interrupt must never land there while another thread
        sends its bytes), without epoll, or over TLS: the caller waits for its turn."""
        if (
            _EPOLL is None
            or not connection.plain
            or threading.current_thread() is threading.main_thread()
        ):
            return None
        with self._lock:
            if request.aborted or self._closed:
                raise ConnectError("the request was aborted")
            if self._order.head() is request:
                return False
            if self._writer is None:
                self._start_writer()
            request.data = payload
            request.sending = True  # its bytes may go out from now on
            self._handed += 1
        # Not its turn: send what is ready ahead of it, and it, if nobody is (the writer may be
        # waiting for the GIL this thread holds).
        self._write_turns()
        return True

    def _take_back(self, request: _Request) -> bool:
        """With the lock held, before ``request``'s connection is closed or pooled: wait for a
        send of the writer on it to return, then take back what it has not sent, if anything
        (True: the connection is unusable; the requests behind it go on)."""
        while request.claimed:
            self._write_waiters += 1
            try:
                self._sent.wait()
            finally:
                self._write_waiters -= 1
        if request.data is None:
            return False
        request.data = None
        self._handed -= 1
        if request.connection is not None:
            self._no_room.pop(request.connection.sock.fileno(), None)
        self._written(request)
        return True

    def _start_writer(self) -> None:
        """With the lock held: the writer thread, its epoll and its wake-up pipe."""
        self._epoll = _EPOLL()
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._wake_fds = (read_fd, write_fd)
        self._epoll.register(read_fd, select.EPOLLIN)
        self._writer_asleep = False
        self._wake_sent = False
        self._writer = threading.Thread(
            target=self._write_loop,
            args=(self._epoll, read_fd, write_fd),
            name="mcp-sync-http-writer",
            daemon=True,
        )
        self._writer.start()

    def _nudge(self) -> None:
        """With the lock held: the writer has something to send; if it sleeps in poll, a byte
        on its pipe is due (one at a time), written by ``_wake_writer`` once the lock is
        released (a system call under the lock lets every thread that wants it pile up)."""
        if self._writer_asleep and not self._wake_sent:
            self._wake_sent = self._wake_due = True

    def _wake_writer(self) -> None:
        """After releasing the lock: write the byte ``_nudge`` found due, if any. Any thread
        may write it; a spare byte is harmless, and the writer polls at least every
        ``_SLICE`` while it holds bytes to send, should one be missed."""
        if self._wake_due:
            self._wake_due = False
            with contextlib.suppress(OSError):
                os.write(self._wake_fds[1], b"\0")

    def _sendable(self) -> bool:
        """With the lock held: the next request to write was handed over, nobody is sending
        it and its socket has room."""
        head = self._order.head()
        return (
            head is not None and head.data is not None and not head.claimed and not head.no_room
        )

    def _write_loop(self, epoll: Any, wake_fd: int, write_fd: int) -> None:
        """The writer: sends the bytes handed to it in their turn; ends at close() or after
        ``_IDLE_EXIT`` seconds with nothing to send."""
        try:
            while True:
                self._write_turns()
                with self._lock:
                    if self._closed:
                        self._writer = None
                        return
                    if self._sendable():
                        continue
                    idle = not self._handed
                    self._writer_asleep = True
                events = epoll.poll(_IDLE_EXIT if idle else _SLICE)
                with self._lock:
                    self._writer_asleep = self._wake_sent = False
                    if not events and idle and not self._handed:
                        self._writer = None  # idle too long: the next hand-off starts another
                        return
                    woken = False
                    for fd, _mask in events:
                        if fd == wake_fd:
                            woken = True
                        else:  # room on a socket
                            request = self._no_room.pop(fd, None)
                            if request is not None:
                                request.no_room = False
                if woken:
                    with contextlib.suppress(OSError):
                        os.read(wake_fd, 64)
        finally:
            with self._lock:
                if self._writer is threading.current_thread():  # a bug
                    self._writer = None
            epoll.close()
            os.close(wake_fd)
            os.close(write_fd)

    def _write_turns(self) -> None:
        """Send the handed bytes whose turn it is, in start order, without blocking, until a
        request's socket has no room (the writer sends the rest when it has). The writer runs
        it, and so does a caller other than the main thread that handed its own bytes over or
        just sent them: whoever holds the GIL sends what waits (one thread at a time per
        request: ``claimed``), instead of waiting for the writer to get it."""
        while True:
            with self._lock:
                if not self._sendable():
                    return
                epoll = self._epoll
                request = self._order.head()
                assert request is not None and request.connection is not None
                connection, data = request.connection, request.data
                assert data is not None
                sock = connection.sock
                request.claimed = True  # its connection is neither closed nor pooled meanwhile
            failed: OSError | None = None
            try:
                sent = sock.send(data, _DONTWAIT)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                sent, failed = 0, exc
            with self._lock:
                request.claimed = False
                if self._write_waiters:
                    self._sent.notify_all()
                if request.data is None:  # pragma: no cover - taken back only once unclaimed
                    continue
                if failed is None and sent < len(data):
                    request.data = data[sent:]
                    request.no_room = True
                    self._no_room[sock.fileno()] = request
                else:
                    request.data = None
                    self._handed -= 1
                    self._written(request, nudge=False)  # this loop sends what follows
                    if failed is not None:
                        # Its caller reads, and learns of it by the end of its socket.
                        request.write_error = reason(WriteError(os_message(failed)))
                        with contextlib.suppress(OSError):
                            socket.socket.shutdown(sock, socket.SHUT_RDWR)
                    continue
            self._arm(connection, epoll)

    @staticmethod
    def _arm(connection: _Connection, epoll: Any) -> None:
        """Have ``epoll`` report once when ``connection`` has room to write.

        Two threads may arm the same connection an instant apart (a caller's partial send,
        then the writer's after the event the caller's registration raised), outside the
        lock: the second may find it registered before the first noted so. Its registration
        then fails (EEXIST) and it re-arms with ``modify``: a failure swallowed there left
        the one-shot registration spent, and the rest of the body unsent for ever."""
        fd = connection.sock.fileno()
        try:
            if connection.epoll is not epoll:
                connection.epoll = epoll
                try:
                    epoll.register(fd, _OUT)
                    return
                except FileExistsError:
                    pass  # registered by the other thread meanwhile: re-arm it
            epoll.modify(fd, _OUT)
        except (OSError, ValueError):  # closed meanwhile (aborted): nothing to wait for
            pass

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

    def _written(self, request: _Request, *, nudge: bool = True) -> None:
        """With the lock held: ``request`` was written or ended unwritten. Idempotent."""
        following = self._order.written(request)
        if following is not None:
            if following.data is not None:
                if nudge:  # else the calling thread sends it next (_write_turns)
                    self._nudge()
            else:
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
                # TCP_INFO where it can say (no thread switch: see tcp_received), else a poll.
                usable = connection.idle_usable()
                if usable is not False:
                    request.sock, request.connection = connection.sock, connection
                    if usable:
                        return connection
                else:
                    self._pool.discard()
            # Polled without the lock: a system call under it makes every thread that wants
            # the lock wait for this one to get the GIL back (measured, 16 callers in flight:
            # 10 thread switches per call instead of 3).
            if usable is False:
                connection.sock.close()
                continue
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
            closing = self._release_connection(request, reusable)
        self._wake_writer()
        if closing is not None:
            closing.sock.close()

    def _release_connection(self, request: _Request, reusable: bool) -> _Connection | None:
        """With the lock held: ``_let_go``'s bookkeeping; returns the connection to close."""
        if self._take_back(request):
            reusable = False  # its bytes never all went out
        self._written(request)
        self._busy -= 1
        if request.inline:
            self._leave_inline(request)
        else:
            self._free += 1  # from here on it only feeds, then takes the next request
        request.sock = None
        connection, request.connection = request.connection, None
        if connection is None:
            return None
        if reusable and not request.aborted and not self._closed:
            self._pool.put(connection.origin, connection)
            return None
        self._pool.discard()
        return connection

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
        "claimed",
        "connection",
        "data",
        "dead",
        "inline",
        "no_room",
        "queued",
        "sending",
        "sock",
        "turn",
        "write_error",
    )

    def __init__(self, action: StartHttp) -> None:
        self.action = action
        self.aborted = False
        self.queued = True
        self.inline = False  # held by the caller that started it, until it lets go
        self.sending = False  # from just before its bytes go out (never sent twice after)
        self.dead = False  # interrupted in its caller's thread, connection closed: see _kill
        # Bytes handed to the writer and not yet sent (see _hand_bytes), whether the writer
        # is sending them this instant, or waits for room on the socket, and how its send
        # failed (its caller's read then ends with that reason).
        self.data: bytes | None = None
        self.claimed = False
        self.no_room = False
        self.write_error: str | None = None
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

    __slots__ = (
        "_base",
        "_pending",
        "_poller",
        "_timeout",
        "epoll",
        "h11",
        "origin",
        "received",
        "sock",
    )

    def __init__(self, origin: Origin, sock: socket.socket) -> None:
        self.origin = origin
        self.sock = sock
        self.h11: h11.Connection = ClientConnection()
        self._pending: Callable[[], int] | None = getattr(sock, "pending", None)  # TLS only
        self._poller: select.poll | None = None
        self._timeout = 0.0  # the socket's receive timeout (0: none), set for callers only
        self.epoll: Any = None  # the writer's epoll it is registered with, if any
        # Bytes read from the socket, and what TCP_INFO counted before the first: together,
        # whether an idle connection received anything unread (see idle_usable).
        self.received = 0
        self._base = tcp_received(sock) if self._pending is None else None

    def idle_usable(self) -> bool | None:
        """Whether this idle connection can carry a request: the server neither closed it nor
        sent anything unasked (every byte received was read). None where TCP_INFO cannot say
        (TLS: its records may come after the handshake; not Linux): poll it (``waiting``)."""
        if self._base is None or self._base < 0:
            return None
        now = tcp_received(self.sock)
        if now is None:
            return None
        return now == self._base + self.received

    @property
    def plain(self) -> bool:
        """Plain TCP: the writer sends only on those (a TLS socket is not for two threads)."""
        return self._pending is None

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
            data = self.sock.recv(READ_SIZE)
        except OSError as exc:
            raise ReadError(os_message(exc)) from exc
        self.received += len(data)
        return data

    def recv_within(self, timeout: float) -> bytes | None:
        """The next bytes (``b""`` at EOF), or None if none came within ``timeout``."""
        if self._pending is not None:  # TLS
            if self._pending() == 0 and not self._poll(int(timeout * 1000)):
                return None
            return self.recv()
        if self._timeout != timeout:
            self._receive_timeout(timeout)
        try:
            data = self.sock.recv(READ_SIZE)
        except BlockingIOError:  # the receive timeout
            return None
        except OSError as exc:
            raise ReadError(os_message(exc)) from exc
        self.received += len(data)
        return data

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
