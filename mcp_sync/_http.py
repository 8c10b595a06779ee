"""HTTP requests of the blocking driver: one httpcore pool, one thread per request in flight.

``HttpExecutor`` performs ``StartHttp`` and ``AbortHttp`` and turns what happens to each request
into ``HttpResponseStarted``, ``HttpBodyReceived``, ``HttpResponseEnded`` or ``HttpFailed``
events. It holds I/O handles only and decides nothing (SPEC §2); httpcore's exceptions become
events here and nowhere else (STYLE 12).

Aborting. A thread blocked in connect(), send() or recv() wakes only through its socket, and
close() from another thread does not wake it. So the pool runs on a small network backend
(``_Backend``) whose sockets know which request uses them at the moment (each request thread
claims the socket before every blocking call). ``abort`` marks the request and shuts that
socket down, which wakes the blocked call at once, in every phase: connecting, the TLS
handshake, sending, waiting for the head, reading the body. The call fails, httpcore discards
the connection, and the thread ends without feeding anything. Only DNS resolution cannot be
woken; an aborted request still waiting in it ends when the resolver answers.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpcore

from mcp_core import (
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
    StartHttp,
)

__all__ = ["HttpEvent", "HttpExecutor"]

HttpEvent = HttpResponseStarted | HttpBodyReceived | HttpResponseEnded | HttpFailed

# Requests sent at once (and so connections open at once) to all origins. The executor admits
# requests itself and gives httpcore the same limit, so httpcore never queues one: a request
# waiting in httpcore's queue could not be woken by abort().
_MAX_CONNECTIONS = 32
# What a request fails with: httpcore maps network, TLS and protocol trouble to its own
# exceptions, which share no base class; OSError covers anything that escapes unmapped.
_FAILURES = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.TimeoutException,
    httpcore.UnsupportedProtocol,
    OSError,
)
_REASON_LENGTH = 200

# The request served by the current thread (each request has a thread of its own).
_current = threading.local()


class HttpExecutor:
    """Sends the requests of one client through one pool of keep-alive connections.

    HTTP/1.1 only, TLS verified with the default context, no redirect followed, no retry and no
    timeout: the machine's deadlines end a request with ``AbortHttp``. ``feed`` is called from
    the request threads, without any lock of the executor held.

    An event that a request thread is feeding at the very moment ``abort`` runs on another
    thread can still arrive after it. A feed that must drop it takes the lock it also holds
    around ``abort`` and checks ``is_live(event.stream)`` under it.
    """

    def __init__(self, feed: Callable[[HttpEvent], None], now: Callable[[], float]) -> None:
        self._feed = feed
        self._now = now
        self._lock = threading.Lock()  # guards everything below and every _Request and _Socket
        self._admission = threading.Condition(self._lock)
        self._requests: dict[int, _Request] = {}  # stream -> its request, until ended or aborted
        self._threads: set[threading.Thread] = set()  # aborted requests' threads included
        self._sending = 0  # admitted requests
        self._closed = False
        # Made on the first request: loading the CA store costs milliseconds a stdio client
        # should not pay.
        self._pool: httpcore.ConnectionPool | None = None

    @property
    def in_flight(self) -> int:
        """Request threads still running (aborted ones included until they have ended)."""
        with self._lock:
            return len(self._threads)

    def is_live(self, stream: int) -> bool:
        """True while ``stream`` was started and has neither ended nor been aborted."""
        with self._lock:
            return stream in self._requests

    def start(self, action: StartHttp) -> None:
        """Send the request from a new thread and return at once; every outcome is fed back as
        events. Ignored after ``close()``."""
        with self._lock:
            if self._closed:
                return
            if self._pool is None:
                self._pool = httpcore.ConnectionPool(
                    ssl_context=ssl.create_default_context(),
                    max_connections=_MAX_CONNECTIONS,
                    http1=True,
                    http2=False,
                    retries=0,
                    network_backend=_Backend(self._lock),
                )
            request = self._requests[action.stream] = _Request(action)
            thread = threading.Thread(
                target=self._run,
                args=(request, self._pool),
                name=f"mcp-sync-http-{action.stream}",
                daemon=True,
            )
            self._threads.add(thread)
        thread.start()

    def abort(self, stream: int) -> None:
        """End the request of ``stream`` at once, whatever its thread is blocked in: its
        connection is closed, not returned to the pool half-read, and nothing more is fed for
        it. An unknown or ended stream is ignored. Never blocks."""
        with self._lock:
            request = self._requests.pop(stream, None)
            if request is not None:
                request.abort()
                self._admission.notify_all()  # it may be waiting for admission

    def close(self, deadline: float) -> None:
        """Abort every request, join their threads until ``deadline`` (a ``time.monotonic()``
        value; a thread still blocked then, in DNS, is a daemon and is left behind) and close
        the pool. Idempotent."""
        with self._lock:
            self._closed = True
            for request in self._requests.values():
                request.abort()
            self._requests.clear()
            self._admission.notify_all()
            threads = list(self._threads)
            pool = self._pool
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if pool is not None:
            pool.close()

    def _run(self, request: _Request, pool: httpcore.ConnectionPool) -> None:
        _current.request = request
        try:
            if self._admit(request):
                try:
                    self._exchange(request, pool)
                finally:
                    with self._lock:
                        self._sending -= 1
                        self._admission.notify()
        finally:
            with self._lock:
                if self._requests.get(request.action.stream) is request:
                    del self._requests[request.action.stream]
                self._threads.discard(threading.current_thread())

    def _admit(self, request: _Request) -> bool:
        with self._lock:
            while self._sending >= _MAX_CONNECTIONS and not request.aborted:
                self._admission.wait()
            if request.aborted:
                return False
            self._sending += 1
            return True

    def _exchange(self, request: _Request, pool: httpcore.ConnectionPool) -> None:
        action = request.action
        stream = action.stream
        try:
            url = httpcore.URL(action.url)
            headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in action.headers]
        except (TypeError, ValueError) as exc:
            # The message would quote the URL or the header value: it may hold a secret.
            self._emit(request, HttpFailed(now=self._now(), stream=stream, reason=_reason(exc)))
            return
        try:
            with pool.stream(action.method, url, headers=headers, content=action.body) as response:
                head = HttpResponseStarted(
                    now=self._now(),
                    stream=stream,
                    status=response.status,
                    headers=_decode(response.headers),
                )
                self._emit(request, head)
                # Chunk by chunk as it arrives: an SSE body may never end.
                for chunk in response.iter_stream():
                    body = HttpBodyReceived(now=self._now(), stream=stream, data=chunk)
                    self._emit(request, body)
                # The body is complete: let go of the socket before the connection returns to
                # the pool, so that a late abort() cannot shut down the next request's socket.
                request.release()
        except _FAILURES as exc:
            self._emit(request, HttpFailed(now=self._now(), stream=stream, reason=_reason(exc)))
        else:
            self._emit(request, HttpResponseEnded(now=self._now(), stream=stream))

    def _emit(self, request: _Request, event: HttpEvent) -> None:
        with self._lock:
            live = self._requests.get(event.stream) is request
        if live:
            self._feed(event)


class _Request:
    """One request in flight and the socket it uses at the moment; guarded by the executor's
    lock, which its sockets share."""

    __slots__ = ("aborted", "action", "socket")

    def __init__(self, action: StartHttp) -> None:
        self.action = action
        self.aborted = False
        self.socket: _Socket | None = None

    def abort(self) -> None:
        """With the lock held: wake whatever this request's thread is blocked in."""
        self.aborted = True
        if self.socket is not None and self.socket.user is self:
            self.socket.interrupt()

    def claim(self, sock: _Socket, error: type[Exception]) -> None:
        """From this request's thread, before each blocking call on ``sock``: raise ``error``
        if the request was aborted, else make ``sock`` the one ``abort`` interrupts."""
        with sock.lock:
            if self.aborted:
                raise error("the request was aborted")
            self.socket = sock
            sock.user = self

    def release(self) -> None:
        """The request is done with its socket: a later ``abort`` leaves it alone."""
        sock = self.socket
        if sock is not None:
            with sock.lock:
                if sock.user is self:
                    sock.user = None
                self.socket = None


def _claim(sock: _Socket, error: type[Exception]) -> None:
    request: _Request | None = getattr(_current, "request", None)
    if request is not None:  # only request threads read, write and connect
        request.claim(sock, error)


class _Socket(httpcore.NetworkStream):
    """A blocking TCP or TLS socket that the request using it can interrupt from another
    thread. It lives as long as its pooled connection, serving one request after another."""

    def __init__(self, sock: socket.socket, lock: threading.Lock) -> None:
        self.sock = sock
        self.lock = lock
        self.user: _Request | None = None
        self._closed = False

    def interrupt(self) -> None:
        """With the lock held: wake any call blocked on this socket. The descriptor stays open
        (only the socket's own thread closes it), so this never hits a reused descriptor."""
        if not self._closed:
            with contextlib.suppress(OSError):
                # socket.socket's shutdown: ssl.SSLSocket's would also drop its TLS state
                # under a thread still reading through it.
                socket.socket.shutdown(self.sock, socket.SHUT_RDWR)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        _claim(self, httpcore.ReadError)
        try:
            return self.sock.recv(max_bytes)
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _claim(self, httpcore.WriteError)
        try:
            self.sock.sendall(buffer)
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    def close(self) -> None:
        with self.lock:
            self._closed = True
            self.sock.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        try:
            # wrap_socket takes over the descriptor; the handshake runs once the TLS socket is
            # claimed, so that abort() can interrupt it.
            wrapped = ssl_context.wrap_socket(
                self.sock, server_hostname=server_hostname, do_handshake_on_connect=False
            )
        except OSError as exc:
            self.close()
            raise httpcore.ConnectError(str(exc)) from exc
        tls = _Socket(wrapped, self.lock)
        try:
            _claim(tls, httpcore.ConnectError)
            wrapped.do_handshake()
        except OSError as exc:
            tls.close()
            raise httpcore.ConnectError(str(exc)) from exc
        except BaseException:
            tls.close()
            raise
        return tls

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":  # httpcore asks it for the ALPN protocol
            return self.sock if isinstance(self.sock, ssl.SSLSocket) else None
        if info == "socket":
            return self.sock
        if info == "is_readable":  # an idle pooled connection that is readable was closed
            return _is_readable(self.sock)
        return None


class _Backend(httpcore.NetworkBackend):
    """Opens ``_Socket`` connections whose connect() can be interrupted by abort()."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        # The pool passes no timeout, local address or socket option: they are not used.
        try:
            addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        error: OSError | None = None
        for family, kind, proto, _name, address in addresses:  # as socket.create_connection
            stream = _Socket(socket.socket(family, kind, proto), self._lock)
            try:
                _claim(stream, httpcore.ConnectError)  # before connect(), which may hang
                stream.sock.connect(address)
                stream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError as exc:
                stream.close()
                error = exc
            except BaseException:
                stream.close()
                raise
            else:
                return stream
        raise httpcore.ConnectError(str(error or f"no address for {host}"))


def _is_readable(sock: socket.socket) -> bool:
    if sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _decode(headers: list[tuple[bytes, bytes]]) -> tuple[tuple[str, str], ...]:
    # Latin-1 maps every byte to one character: nothing the server sends can fail to decode.
    return tuple((name.decode("latin-1"), value.decode("latin-1")) for name, value in headers)


def _reason(exc: Exception) -> str:
    """``"ConnectError: [Errno 111] Connection refused"``: the class name, and the message when
    it cannot hold a header value or URL. h11 quotes an offending header with repr(), so a
    protocol error whose message quotes something keeps only its class name."""
    name = type(exc).__name__
    # An empty message (httpcore maps some library errors that have none) defers to the cause.
    detail: BaseException | None = exc
    for _ in range(3):
        if detail is None or str(detail):
            break
        detail = detail.__cause__ or detail.__context__
    if detail is None or not isinstance(detail, _FAILURES):
        return name
    message = str(detail)
    if not message or (
        isinstance(detail, httpcore.ProtocolError) and ("'" in message or '"' in message)
    ):
        return name
    return f"{name}: {message}"[:_REASON_LENGTH]
