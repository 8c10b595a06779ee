"""The browser step of an OAuth login, blocking: open the authorization URL, then receive the
authorization server's redirect on a one-shot listener.

``RedirectListener`` binds 127.0.0.1 only (RFC 8252 §7.3: a native app's loopback redirect;
§8.3: "loopback IP literal" rather than ``localhost``, so no resolver or firewall rule can send
the code elsewhere) as soon as it is made, so its ``redirect_uri`` is known before the
authorization URL is built. ``wait`` then serves until the authorization response arrives on
the callback path, answers it with a small page, closes every socket and returns the query
parameters.

The authorization response is the request whose ``state`` is the one the login sent (RFC 6749
§4.1.2 and §4.1.2.1: the authorization server returns it unchanged, in an error response too;
§10.12: it binds the response to the user agent's own request). Any process or web page can
reach a loopback port, so every other request to the callback path, with another ``state``,
none, or several, is answered 400 and the wait goes on until its deadline: a stray or forged
request cannot end the login (had ``wait`` returned it, the core would refuse the login for
its ``state``, for good). The comparison is ``hmac.compare_digest``, in constant time: the
state is a value no one else may guess (RFC 6749 §10.10), so how long a refusal takes must not
tell how much of a guess was right.

What it does not do: check ``iss`` or look at ``code`` (the authorization layer in the core
does, on the returned parameters, and checks ``state`` again). What it never does: log, echo
or raise with a parameter's value; each page it answers is the same whatever arrived.

Details a browser needs:

- Browsers open speculative connections that send nothing, and ask for ``/favicon.ico``: many
  connections are served side by side (a few at most), a request for another path is answered
  404 and the wait goes on.
- The ``Host`` must be this listener (127.0.0.1 or localhost with its port): a page that
  rebinds a DNS name to 127.0.0.1 cannot end the wait.
- The wait polls in slices of ``_SLICE`` seconds, so ``close()`` from another thread (the anyio
  driver runs ``wait`` in a worker thread and closes the listener when its task is cancelled)
  ends it within one slice. Ctrl-C, or any exception, closes the sockets on its way out: the
  port is never left bound.

Blocking and thread-free: the anyio driver calls ``wait`` through ``anyio.to_thread``.
"""

from __future__ import annotations

import contextlib
import hmac
import selectors
import socket
import sys
import threading
import time
import webbrowser
from types import TracebackType
from urllib.parse import parse_qsl, urlsplit

import h11

from mcp_core import McpError

from .http import os_message

__all__ = [
    "RedirectError",
    "RedirectListener",
    "RedirectTimeout",
    "authorization_state",
    "open_browser",
]

HOST = "127.0.0.1"
# How often a waiting listener looks at its deadline and at close() from another thread.
_SLICE = 0.1
# A request head larger than this is not an authorization response (browsers cap URLs near
# 64 KiB; authorization responses are a few hundred bytes).
_MAX_HEAD = 64 * 1024
# Connections served side by side; beyond this the oldest is dropped.
_MAX_CONNECTIONS = 8
# The most parameters an authorization response may have; checked once its state is found
# right (any other request is a stray one, answered 400).
_MAX_PARAMETERS = 64
_SEND_TIMEOUT = 2.0
# An authorization response's parameters (RFC 6749 §4.1.2, §4.1.2.1; RFC 9207 §2).
_RESPONSE_PARAMETERS = frozenset(
    {"code", "state", "iss", "error", "error_description", "error_uri", "scope"}
)


class RedirectError(McpError):
    """The browser step's listener failed: its port could not be bound, it was closed or
    already used, or the request on the callback path was not a usable authorization response.
    Every socket is closed when this is raised from ``wait``."""


class RedirectTimeout(RedirectError, TimeoutError):
    """No request arrived on the callback path in time. The listener is closed."""


def _page(status: str, title: str, text: str) -> bytes:
    body = (
        "<!doctype html><html><head><meta charset='utf-8'><title>"
        f"{title}</title></head><body><p>{text}</p></body></html>"
    ).encode()
    head = (
        f"HTTP/1.1 {status}\r\n"
        "Content-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Cache-Control: no-store\r\n"
        # The page's URL holds the code: no referrer, no subresource, nothing to leak it to.
        "Referrer-Policy: no-referrer\r\n"
        "Content-Security-Policy: default-src 'none'\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii")
    return head + body


_RECEIVED = _page(
    "200 OK",
    "Authorization received",
    "Authorization received. You can close this window and return to the application.",
)
_NOT_COMPLETED = _page(
    "200 OK",
    "Authorization not completed",
    "Authorization was not completed. You can close this window; the application says why.",
)
_NOT_FOUND = _page("404 Not Found", "Not found", "Not found.")
_NOT_ALLOWED = _page("405 Method Not Allowed", "Method not allowed", "Method not allowed.")
_BAD_REQUEST = _page("400 Bad Request", "Bad request", "Bad request.")
# A request on the callback path without the state of the login in progress: a stray or forged
# request, or a browser tab left over from an earlier login. The same page whatever it carried.
_OTHER_LOGIN = _page(
    "400 Bad Request",
    "Not this login",
    "This is not the answer to the login in progress. You can close this window.",
)


class RedirectListener:
    """A one-shot HTTP listener on 127.0.0.1 for the authorization redirect.

    ``port`` 0 picks a free port (RFC 8252 §7.3: authorization servers must accept any port
    for a loopback redirect URI); ``path`` is the callback path. Binding happens here:
    ``RedirectError`` when the port is taken. Use it as a context manager, or call
    ``close()``; ``wait`` closes it in any case.
    """

    def __init__(self, port: int = 0, path: str = "/callback") -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError("the redirect port is a whole number from 0 to 65535")
        if not path.startswith("/") or any(c in path for c in "?#% ") or not path.isprintable():
            raise ValueError(
                "the callback path starts with '/' and has no query, fragment, space or '%'"
            )
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if sys.platform != "win32":
                # A fixed port can be bound again while connections this listener closed are
                # in TIME_WAIT (a retried login); it never lets two listeners share the port.
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((HOST, port))
            listener.listen(_MAX_CONNECTIONS)
            listener.setblocking(False)
        except OSError as exc:
            listener.close()
            raise RedirectError(
                f"cannot listen on {HOST}:{port} for the authorization redirect "
                f"({os_message(exc)}): choose another redirect port, or 0 for any free one"
            ) from None
        self._listener = listener
        self._port: int = listener.getsockname()[1]
        self._path = path
        self._hosts = {f"{HOST}:{self._port}".encode(), f"localhost:{self._port}".encode()}
        self._guard = threading.Lock()  # guards _waiting and closing across threads
        self._waiting = False
        self._abandoned = threading.Event()

    @property
    def port(self) -> int:
        return self._port

    @property
    def redirect_uri(self) -> str:
        """``http://127.0.0.1:PORT/callback``: the ``redirect_uri`` to register and send."""
        return f"http://{HOST}:{self._port}{self._path}"

    @property
    def closed(self) -> bool:
        return self._listener.fileno() < 0

    def __repr__(self) -> str:
        return f"RedirectListener(redirect_uri={self.redirect_uri!r}, closed={self.closed})"

    def __enter__(self) -> RedirectListener:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening; idempotent, and safe from another thread: a ``wait`` in progress
        raises ``RedirectError`` within one slice and closes the sockets itself."""
        with self._guard:
            self._abandoned.set()
            if not self._waiting:
                self._listener.close()

    def wait(self, timeout: float, *, state: str) -> dict[str, str]:
        """Serve until the authorization response for ``state`` arrives: a ``GET`` on the
        callback path whose one ``state`` parameter is ``state``. Answer it with a page that
        echoes nothing, close the listener and return its query parameters (say ``code``,
        ``state``, ``iss``, or ``error`` and ``error_description``); only ``state`` is checked.

        A request on the callback path with another ``state``, none or several gets 400, other
        paths 404, and the wait goes on. ``RedirectTimeout`` after ``timeout`` seconds;
        ``RedirectError`` when the listener was closed or used, or the response (with the right
        ``state``) repeats a parameter (RFC 6749 §3.1: parameters "MUST NOT be included more
        than once") or has too many. The listener is closed when this returns or raises,
        Ctrl-C included: it serves one wait only.
        """
        if not timeout > 0:
            raise ValueError("the redirect timeout is a positive number of seconds")
        if not isinstance(state, str) or not state:
            raise ValueError("the state a redirect must carry is a non-empty string")
        expected = state.encode("utf-8")
        with self._guard:
            if self._abandoned.is_set() or self._waiting:
                raise RedirectError(
                    "this redirect listener was already used or closed: make a new one"
                )
            self._waiting = True
        selector = selectors.DefaultSelector()
        connections: dict[socket.socket, h11.Connection] = {}
        try:
            selector.register(self._listener, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout
            while True:
                if self._abandoned.is_set():
                    raise RedirectError(
                        "the redirect listener was closed while waiting for the authorization "
                        "redirect"
                    )
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RedirectTimeout(
                        f"no authorization redirect arrived within {timeout:g} seconds: "
                        "finish the login in the browser sooner, or allow more time"
                    )
                for key, _events in selector.select(min(remaining, _SLICE)):
                    if key.fileobj is self._listener:
                        self._accept(selector, connections)
                        continue
                    assert isinstance(key.fileobj, socket.socket)
                    parameters = self._serve(key.fileobj, selector, connections, expected)
                    if parameters is not None:
                        return parameters
        finally:
            for connection in connections:
                connection.close()
            selector.close()
            with self._guard:
                self._waiting = False
                self._abandoned.set()
                self._listener.close()

    # --- serving ---

    def _accept(
        self, selector: selectors.BaseSelector, connections: dict[socket.socket, h11.Connection]
    ) -> None:
        try:
            connection, _address = self._listener.accept()
        except OSError:  # the peer gave up before accept (ECONNABORTED), or nothing was there
            return
        if len(connections) >= _MAX_CONNECTIONS:
            oldest = next(iter(connections))
            _drop(oldest, selector, connections)
        connection.setblocking(False)
        connections[connection] = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        selector.register(connection, selectors.EVENT_READ)

    def _serve(
        self,
        connection: socket.socket,
        selector: selectors.BaseSelector,
        connections: dict[socket.socket, h11.Connection],
        state: bytes,
    ) -> dict[str, str] | None:
        """Read what ``connection`` sent; the parameters once the authorization response for
        ``state`` is complete, else ``None`` (more to read, or the connection was answered and
        dropped)."""
        try:
            data = connection.recv(65536)
        except BlockingIOError:
            return None
        except OSError:
            _drop(connection, selector, connections)
            return None
        parser = connections[connection]
        try:
            parser.receive_data(data)
            event = parser.next_event()
        except h11.RemoteProtocolError:
            _answer(connection, _BAD_REQUEST)
            _drop(connection, selector, connections)
            return None
        if event is h11.NEED_DATA and data:
            return None
        if not isinstance(event, h11.Request):  # closed before (or without) a request
            _drop(connection, selector, connections)
            return None
        try:
            page, parameters = self._judge(event, state)
        except RedirectError:
            _answer(connection, _NOT_COMPLETED)
            raise
        _answer(connection, page)
        _drop(connection, selector, connections)
        return parameters

    def _judge(self, request: h11.Request, state: bytes) -> tuple[bytes, dict[str, str] | None]:
        """The page to answer and, for the authorization response, its parameters."""
        host = dict(request.headers).get(b"host", b"").lower()
        if host not in self._hosts:
            return _BAD_REQUEST, None
        target = urlsplit(request.target.decode("ascii"))
        if target.path != self._path:
            return _NOT_FOUND, None
        if request.method != b"GET":
            return _NOT_ALLOWED, None
        # Parsed whole, so that only a request with the right state can end the wait, even by
        # failing. Bounded: h11 refuses a head still unfinished past _MAX_HEAD bytes, and one
        # read adds at most 64 KiB.
        pairs = parse_qsl(target.query, keep_blank_values=True)
        if not _carries(pairs, state):
            return _OTHER_LOGIN, None
        if len(pairs) > _MAX_PARAMETERS:
            raise RedirectError(
                f"the authorization redirect has more than {_MAX_PARAMETERS} parameters"
            )
        parameters: dict[str, str] = {}
        for name, value in pairs:
            if name in parameters:
                # Named only when it is one of the response's own: any other name is as much
                # the sender's choice as a value, and is not repeated back.
                named = repr(name) if name in _RESPONSE_PARAMETERS else "a parameter"
                raise RedirectError(
                    f"the authorization redirect repeats {named} (RFC 6749 §3.1 forbids it): "
                    "start the login again"
                )
            parameters[name] = value
        return (_NOT_COMPLETED if "error" in parameters else _RECEIVED), parameters


def _carries(pairs: list[tuple[str, str]], state: bytes) -> bool:
    """Whether ``pairs`` hold ``state`` as their one ``state`` parameter; compared in constant
    time (the length of the expected state aside, which is no secret)."""
    values = [value for name, value in pairs if name == "state"]
    # parse_qsl decodes with errors="replace": the text always encodes.
    return len(values) == 1 and hmac.compare_digest(values[0].encode("utf-8"), state)


def _answer(connection: socket.socket, page: bytes) -> None:
    """Send ``page`` and end the connection; a browser that went away is not an error."""
    with contextlib.suppress(OSError):
        connection.settimeout(_SEND_TIMEOUT)
        connection.sendall(page)
        connection.shutdown(socket.SHUT_WR)


def _drop(
    connection: socket.socket,
    selector: selectors.BaseSelector,
    connections: dict[socket.socket, h11.Connection],
) -> None:
    selector.unregister(connection)
    del connections[connection]
    connection.close()


def authorization_state(url: str) -> str:
    """The ``state`` an authorization URL sends (RFC 6749 §4.1.1), for a listener of an
    ``authorize=`` callback, which gets the URL only, to wait for (``wait(state=...)``).
    ``RedirectError``, never quoting the URL, when it has no one non-empty ``state``."""
    values = [v for n, v in parse_qsl(urlsplit(url).query, keep_blank_values=True) if n == "state"]
    if len(values) != 1 or not values[0]:
        raise RedirectError("the authorization URL does not carry one state to wait for")
    return values[0]


def open_browser(url: str) -> bool:
    """Open ``url`` in the user's browser (``webbrowser``; the ``BROWSER`` variable picks
    one). Whether a browser was started; ``False`` rather than an exception when none could
    be, so the caller can print the URL for the user to open instead. Never logs the URL: it
    holds the ``state`` and the PKCE challenge."""
    try:
        return bool(webbrowser.open(url, new=2))
    except Exception:
        return False
