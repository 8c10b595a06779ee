"""HTTP requests of the anyio driver: one httpcore pool, one task per request in flight.

``HttpExecutor`` performs ``StartHttp`` and ``AbortHttp`` and turns what happens to each request
into ``HttpResponseStarted``, ``HttpBodyReceived``, ``HttpResponseEnded`` or ``HttpFailed``
events. It holds I/O handles only and decides nothing (SPEC §2); httpcore's exceptions become
events here and nowhere else (STYLE 12).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import httpcore
from anyio.abc import TaskGroup

from mcp_core import (
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
    StartHttp,
)

# One definition for both drivers: which httpcore failures end a request, and how they are
# worded without a header value or URL.
from mcp_sync._http import _FAILURES, _decode, _reason

__all__ = ["HttpEvent", "HttpExecutor"]

HttpEvent = HttpResponseStarted | HttpBodyReceived | HttpResponseEnded | HttpFailed

# Requests sent at once (and so connections open at once) to all origins. The executor admits
# requests itself and gives httpcore the same limit, so httpcore never queues one: its queue
# costs time proportional to its length on every change (1000 queued requests took seconds).
_MAX_CONNECTIONS = 32
# aclose() gives aborted requests this long to close their sockets before it closes the pool.
_CLOSE_BOUND = 5.0


class HttpExecutor:
    """Sends the requests of one client through one pool of keep-alive connections.

    HTTP/1.1 only, TLS verified with the default context, no redirect followed, no retry and no
    timeout: the machine's deadlines end a request with ``AbortHttp``. Request tasks run in
    ``task_group``; ``feed`` is called from them, synchronously, once per event.
    """

    def __init__(
        self, feed: Callable[[HttpEvent], None], now: Callable[[], float], task_group: TaskGroup
    ) -> None:
        self._feed = feed
        self._now = now
        self._tasks = task_group
        # Made on the first request: loading the CA store costs milliseconds a stdio client
        # should not pay.
        self._pool: httpcore.AsyncConnectionPool | None = None
        self._admission: anyio.Semaphore | None = None
        self._scopes: dict[int, anyio.CancelScope] = {}  # stream -> the scope of its task
        self._running = 0
        self._all_ended: anyio.Event | None = None
        self._closed = False

    @property
    def in_flight(self) -> int:
        """Request tasks still running (aborted ones included until they have unwound)."""
        return self._running

    def start(self, action: StartHttp) -> None:
        """Send the request in a new task and return at once; every outcome is fed back as
        events. Ignored after ``aclose()``."""
        if self._closed:
            return
        if self._pool is None:
            self._pool = httpcore.AsyncConnectionPool(
                ssl_context=ssl.create_default_context(),
                max_connections=_MAX_CONNECTIONS,
                http1=True,
                http2=False,
                retries=0,
                network_backend=_Backend(),
            )
            self._admission = anyio.Semaphore(_MAX_CONNECTIONS)
        # Made here, so that an abort before the task first runs still cancels it.
        scope = self._scopes[action.stream] = anyio.CancelScope()
        self._tasks.start_soon(self._run, action, scope)

    def abort(self, stream: int) -> None:
        """Cancel the request of ``stream``: its connection is closed, not returned to the pool
        half-read, and nothing more is fed for it. An unknown or ended stream is ignored."""
        scope = self._scopes.pop(stream, None)
        if scope is not None:
            scope.cancel()

    async def aclose(self) -> None:
        """Abort every request, wait (boundedly) for their tasks, close the pool. Idempotent;
        shielded from the caller's cancellation."""
        self._closed = True
        for scope in self._scopes.values():
            scope.cancel()
        self._scopes.clear()
        with anyio.CancelScope(shield=True):
            if self._running:
                self._all_ended = anyio.Event()
                with anyio.move_on_after(_CLOSE_BOUND):
                    await self._all_ended.wait()
            if self._pool is not None:
                await self._pool.aclose()

    @classmethod
    def background_functions(cls) -> tuple[Callable[..., object], ...]:
        """The coroutine functions that run as background tasks (see ``_client``'s KI note)."""
        return (cls._run, cls._exchange)

    async def _run(self, action: StartHttp, scope: anyio.CancelScope) -> None:
        assert self._pool is not None and self._admission is not None
        self._running += 1
        try:
            with scope:
                async with self._admission:
                    await self._exchange(action, scope, self._pool)
        finally:
            self._running -= 1
            if self._scopes.get(action.stream) is scope:
                del self._scopes[action.stream]
            if self._running == 0 and self._all_ended is not None:
                self._all_ended.set()

    async def _exchange(
        self, action: StartHttp, scope: anyio.CancelScope, pool: httpcore.AsyncConnectionPool
    ) -> None:
        stream = action.stream
        try:
            url = httpcore.URL(action.url)
            headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in action.headers]
        except (TypeError, ValueError) as exc:
            # The message would quote the URL or the header value: it may hold a secret.
            self._emit(scope, HttpFailed(now=self._now(), stream=stream, reason=_reason(exc)))
            return
        try:
            async with pool.stream(
                action.method, url, headers=headers, content=action.body
            ) as response:
                head = HttpResponseStarted(
                    now=self._now(),
                    stream=stream,
                    status=response.status,
                    headers=_decode(response.headers),
                )
                self._emit(scope, head)
                # Chunk by chunk as it arrives: an SSE body may never end.
                async for chunk in response.aiter_stream():
                    self._emit(scope, HttpBodyReceived(now=self._now(), stream=stream, data=chunk))
        except _FAILURES as exc:
            self._emit(scope, HttpFailed(now=self._now(), stream=stream, reason=_reason(exc)))
        else:
            self._emit(scope, HttpResponseEnded(now=self._now(), stream=stream))

    def _emit(self, scope: anyio.CancelScope, event: HttpEvent) -> None:
        # Only while the request is current: after abort() (maybe from inside this very feed)
        # nothing more is fed for its stream.
        if self._scopes.get(event.stream) is scope:
            self._feed(event)


class _Backend(httpcore.AsyncNetworkBackend):
    """httpcore's anyio backend (on asyncio and trio alike), except that a TLS handshake cut
    short by cancellation closes its TCP connection: httpcore's backends close it only when the
    handshake raises an Exception, so an aborted handshake kept its socket open until garbage
    collection."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _TcpStream(stream)


class _TcpStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: Any = None  # cached: httpcore asks for it per pooled connection per request

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            return await self._inner.start_tls(ssl_context, server_hostname, timeout)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._inner.aclose()
            raise

    def get_extra_info(self, info: str) -> Any:
        # httpcore's pool checks every idle connection's socket on every request; anyio
        # rebuilds its attribute table (and calls getpeername) each time it is asked. The
        # socket object of a connection never changes, so it is looked up once.
        if info == "socket":
            if self._socket is None:
                self._socket = self._inner.get_extra_info(info)
            return self._socket
        return self._inner.get_extra_info(info)
