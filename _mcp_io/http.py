"""The socket side of both drivers' HTTP executors: what needs an OS but no event loop.

The pure side (request heads, response parsing, the pool's bookkeeping, the start order) is
``_mcp_io.h11wire``. Wording: a failure reason never quotes a URL or a header value (they
may hold a secret): OS errors are worded from their number, and an h11 error whose message
quotes something (h11 quotes an offending header with repr()) keeps only its class name.

The network a client's executor uses (``Network``, made once per client by
``client_network``): the TLS context (the spec's ``verify`` and ``cert``, or the caller's
``ssl_context``) and the proxy of each origin (the spec's ``proxy``, else ``HTTPS_PROXY``,
``HTTP_PROXY`` and ``NO_PROXY``, read once, when the client is made). Through a proxy every
connection is a tunnel (``Tunnel``: CONNECT, for http:// servers too), so the proxy sees
only the CONNECT request, with ``Proxy-Authorization`` from its URL; the server's headers,
the OAuth token and every body travel inside the tunnel (under TLS for an https server).
The proxy's user name and password never reach a reason, a log record or a ``repr``.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import select
import socket
import sys
from collections.abc import Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import h11

from _mcp_io.h11wire import FAILURES, MAX_INTERIM, ConnectError, HttpError, Origin
from mcp_core import InvalidSpec, Spec
from mcp_core.driver import proxy_url_problem, redact_url

if TYPE_CHECKING:
    import ipaddress
    import ssl

__all__ = [
    "READ_SIZE",
    "Network",
    "NoProxy",
    "Proxy",
    "ProxyError",
    "TlsContext",
    "Tunnel",
    "client_network",
    "connect_error",
    "is_readable",
    "os_message",
    "reason",
    "tcp_received",
]

# Bytes asked of the socket per read: one read's h11 events become at most one body event.
READ_SIZE = 65536
_REASON_LENGTH = 200


def is_readable(sock: socket.socket) -> bool:
    """Whether a read would not block: on an idle pooled connection, the server closed it (or
    sent something unasked), so it must not be used. A closed socket counts as readable."""
    if sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


# Linux's TCP_INFO: the state of a TCP connection (tcpi_state, byte 0) and the bytes it received
# (tcpi_bytes_received, bytes 128-135, Linux 4.1 and later).
_TCP_INFO: int | None = getattr(socket, "TCP_INFO", None) if sys.platform == "linux" else None
_TCP_ESTABLISHED = 1
_TCP_INFO_LENGTH = 136


def tcp_received(sock: socket.socket) -> int | None:
    """The bytes ``sock`` received so far while its TCP connection is established, -1 once
    the server closed or reset it, None where TCP_INFO cannot say (not Linux, an older
    kernel). The sync executor checks an idle pooled connection with it instead of
    ``is_readable``: it is no system call that lets another thread take the GIL, so a caller
    takes a connection and sends on it without another caller's request getting in between
    (measured at 16 callers in flight: most requests no longer wait for their turn)."""
    if _TCP_INFO is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, _TCP_INFO_LENGTH)
    except OSError:
        return None
    if len(info) < _TCP_INFO_LENGTH:
        return None
    if info[0] != _TCP_ESTABLISHED:
        return -1
    return int.from_bytes(info[128:136], sys.byteorder)


def os_message(exc: OSError) -> str:
    """``"[Errno 111] Connection refused"``: an OS error worded from its number (asyncio adds
    the address to a failed connect's message), a TLS or DNS error as its own message."""
    errno = exc.errno
    if isinstance(errno, int) and errno > 0 and type(exc).__module__ != "ssl":
        return f"[Errno {errno}] {os.strerror(errno)}"
    return str(exc) or type(exc).__name__


def reason(exc: BaseException) -> str:
    """``"ConnectError: [Errno 111] Connection refused"``: the class name, and the message
    when it cannot hold a header value or URL."""
    name = type(exc).__name__
    if not isinstance(exc, FAILURES):
        return name  # e.g. UnicodeEncodeError or ValueError: their messages quote the value
    message = str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, HttpError):
        message = os_message(exc)
    if not message or (isinstance(exc, h11.ProtocolError) and ("'" in message or '"' in message)):
        return name
    return f"{name}: {message}"[:_REASON_LENGTH]


class TlsContext:
    """The TLS context of one executor: ``context`` when given, else the default, verifying
    one, made on the first https request: loading the CA store costs milliseconds a stdio
    client should not pay. One per executor, not per process: it reads the CA store
    (``SSL_CERT_FILE`` included) when it is made. Safe from many threads: the first context
    stored is the one every caller gets."""

    __slots__ = ("_made",)

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self._made: dict[str, ssl.SSLContext] = {} if context is None else {"default": context}

    def get(self) -> ssl.SSLContext:
        context = self._made.get("default")
        if context is None:
            import ssl  # here: a stdio client never pays for it

            # setdefault is atomic: two threads that both made one agree on the first.
            context = self._made.setdefault("default", ssl.create_default_context())
        return context


# --- proxies -----------------------------------------------------------------------------------


class ProxyError(ConnectError):
    """The proxy could not be reached, or it refused (or botched) the tunnel. The message
    names where the proxy came from (``HTTPS_PROXY``, the spec's ``proxy``), never its URL."""


class Proxy:
    """An http:// proxy: where it listens, the ``Proxy-Authorization`` value its URL's user
    name and password make (Basic, RFC 7617), and where it came from, for messages. Its
    ``repr`` shows no credential."""

    __slots__ = ("authorization", "host", "named", "port")

    def __init__(self, url: str, named: str) -> None:
        """``url`` was checked (``proxy_url_problem``); ``named`` says which proxy it is in
        messages: ``"the proxy from HTTPS_PROXY"``, ``"the spec's proxy"``."""
        parts = urlsplit(url)
        assert parts.hostname is not None
        self.host = parts.hostname
        self.port = parts.port or 80
        self.named = named
        self.authorization: bytes | None = None
        if parts.username is not None or parts.password is not None:
            pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            self.authorization = b"Basic " + base64.b64encode(pair.encode("utf-8"))

    def __repr__(self) -> str:
        credentials = " with credentials" if self.authorization else ""
        return f"<Proxy {_authority(self.host, self.port)}{credentials} ({self.named})>"


class NoProxy:
    """The hosts ``NO_PROXY`` sends direct, as curl and requests read it: entries separated
    by commas (or spaces); ``*`` is every host; ``example.com`` (also written
    ``.example.com`` or ``*.example.com``) is that host and every host under it; an IP
    address is itself; a CIDR block (``10.0.0.0/8``) every IP address in it; an entry with
    ``:port`` applies to that port only. Names are compared case-insensitively; nothing is
    resolved."""

    __slots__ = ("_every", "_names", "_networks")

    def __init__(self, text: str) -> None:
        self._every = False
        self._names: list[tuple[str, int | None]] = []
        self._networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in re.split(r"[\s,]+", text.strip().lower()):
            if entry == "*":
                self._every = True
            elif "/" in entry:
                import ipaddress  # only for a CIDR entry

                try:
                    self._networks.append(ipaddress.ip_network(entry, strict=False))
                except ValueError:
                    continue  # not a network: matches nothing, as in curl
            elif entry:
                name, port = _split_port(entry)
                name = name.lstrip("*").lstrip(".").rstrip(".")
                if name:
                    self._names.append((name, port))

    def matches(self, host: str, port: int) -> bool:
        """Whether a request to ``host``:``port`` goes direct."""
        if self._every:
            return True
        host = host.lower().strip("[]").rstrip(".")
        for name, only in self._names:
            if (only is None or only == port) and (host == name or host.endswith("." + name)):
                return True
        if self._networks:
            import ipaddress

            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                return False
            return any(address in network for network in self._networks)
        return False


def _split_port(entry: str) -> tuple[str, int | None]:
    """``host:port``, ``[v6]:port``, ``[v6]``, a bare IPv6 address or a bare host."""
    if entry.startswith("["):
        address, _, rest = entry[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return address, int(port) if port.isdigit() else None
    name, colon, port = entry.rpartition(":")
    if colon and ":" not in name and port.isdigit():
        return name, int(port)
    return entry, None


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def connect_error(proxy: Proxy | None, exc: BaseException | None, message: str = "") -> HttpError:
    """The failure to open a connection: ``ConnectError`` when direct, ``ProxyError`` naming
    the proxy when the connection to it failed. ``message`` words ``exc`` when given (anyio's
    errors need their own wording); else an OSError is worded from its number."""
    if not message:
        message = os_message(exc) if isinstance(exc, OSError) else "no address for the host"
    if proxy is None:
        return ConnectError(message)
    return ProxyError(f"cannot reach {proxy.named}: {message}")


class Tunnel:
    """Opening a tunnel through ``proxy`` to ``host``:``port`` (RFC 9110 §9.3.6), without
    I/O: write ``request``, then feed each read to ``receive`` until it returns True; the
    connection is then the server's, for TLS (an https server) or plain HTTP/1.1.

    The CONNECT request carries ``Host`` and ``Proxy-Authorization`` (from the proxy URL)
    only: no header of the spec, no token. A refusal raises ``ProxyError`` naming the status
    (its reason phrase is ours, not the proxy's), as does an answer that is not HTTP/1.1, a
    close before the answer, more than ``MAX_INTERIM`` 1xx answers before it (h11 bounds the
    size of each), or bytes after a 2xx (the server speaks only after us)."""

    __slots__ = ("_h11", "_interim", "_proxy", "request")

    def __init__(self, proxy: Proxy, host: str, port: int) -> None:
        self._proxy = proxy
        self._h11 = h11.Connection(h11.CLIENT)
        self._interim = 0  # 1xx answers before the final one: at most MAX_INTERIM
        target = _authority(host, port).encode("ascii")
        headers = [(b"Host", target)]
        if proxy.authorization is not None:
            headers.append((b"Proxy-Authorization", proxy.authorization))
        head = h11.Request(method=b"CONNECT", target=target, headers=headers)
        self.request = (self._h11.send(head) or b"") + (self._h11.send(h11.EndOfMessage()) or b"")

    def receive(self, data: bytes) -> bool:
        """Feed one read (``b""`` at EOF); True once the tunnel is open."""
        named = self._proxy.named
        if not data:
            raise ProxyError(f"{named} closed the connection before opening the tunnel")
        self._h11.receive_data(data)
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError:
                raise ProxyError(f"{named} did not answer the CONNECT in HTTP/1.1") from None
            if event is h11.NEED_DATA:
                return False
            if isinstance(event, h11.Response):
                break
            # An InformationalResponse (1xx): the answer follows, unless it never does.
            self._interim += 1
            if self._interim > MAX_INTERIM:
                raise ProxyError(f"{named} sent more than {MAX_INTERIM} interim (1xx) answers")
        status = event.status_code
        if 200 <= status < 300:
            if self._h11.trailing_data[0]:
                raise ProxyError(f"{named} sent bytes nobody asked for after opening the tunnel")
            return True
        try:
            phrase = f" {HTTPStatus(status).phrase}"
        except ValueError:
            phrase = ""
        hint = ""
        if status == 407:
            hint = (
                "; it refused the user name and password in the proxy URL"
                if self._proxy.authorization
                else "; put its user name and password in the proxy URL (http://user:pass@host)"
            )
        elif status in (403, 405):
            hint = "; some proxies allow tunnels to port 443 only"
        raise ProxyError(f"{named} refused the tunnel: {status}{phrase}{hint}")


class Network:
    """How one client's executor reaches an origin: directly or through a proxy (``proxy``),
    and with which TLS context (``tls``). Made once per client (``client_network``); the
    default is direct, with the default verifying context."""

    __slots__ = ("_no_proxy", "_proxies", "_tls")

    def __init__(
        self,
        *,
        tls: ssl.SSLContext | None = None,
        proxies: Mapping[str, Proxy] | None = None,
        no_proxy: NoProxy | None = None,
    ) -> None:
        """``tls``: the context of every https connection (None: the default one, made on
        the first); ``proxies``: scheme (``http``, ``https``) -> its proxy; ``no_proxy``: the
        hosts that go direct whatever ``proxies`` says."""
        self._tls = TlsContext(tls)
        self._proxies = dict(proxies or {})
        self._no_proxy = no_proxy

    def tls(self) -> ssl.SSLContext:
        return self._tls.get()

    def proxy(self, origin: Origin) -> Proxy | None:
        """The proxy a connection to ``origin`` goes through, or None for a direct one."""
        scheme, host, port = origin
        proxy = self._proxies.get(scheme)
        if proxy is None or (self._no_proxy is not None and self._no_proxy.matches(host, port)):
            return None
        return proxy


# Lower case first, as curl and urllib: in a CGI script (REQUEST_METHOD set) HTTP_PROXY can
# come from the request's "Proxy:" header (httpoxy), so it is ignored there, as urllib does.
_PROXY_VARIABLES = (
    ("https", ("https_proxy", "HTTPS_PROXY")),
    ("http", ("http_proxy", "HTTP_PROXY")),
)
_NO_PROXY_VARIABLES = ("no_proxy", "NO_PROXY")


def client_network(
    spec: Spec, ssl_context: ssl.SSLContext | None, environ: Mapping[str, str]
) -> Network:
    """The network of a client of ``spec``, reading ``environ`` (the process environment)
    for proxies when the spec's ``proxy`` is None. A stdio spec gets the default network
    (``ssl_context`` is ignored: a group hands it to every client).

    Raises ``InvalidSpec`` (nothing started) when ``ssl_context`` is given with the spec's
    ``verify`` or ``cert``, when a CA bundle or client certificate cannot be loaded, or when
    a proxy variable holds something that is not an http:// proxy URL (its value is shown
    redacted); ``TypeError`` when ``ssl_context`` is not an ``ssl.SSLContext``. Logs a
    warning on ``mcp_client.<name>`` when certificates will not be verified."""
    if spec.url is None:
        return Network()
    tls = _tls_context(spec, ssl_context)
    if spec.proxy is False:
        return Network(tls=tls)
    if isinstance(spec.proxy, str):
        proxy = Proxy(spec.proxy, "the spec's proxy")
        return Network(tls=tls, proxies={"http": proxy, "https": proxy})
    proxies: dict[str, Proxy] = {}
    for scheme, names in _PROXY_VARIABLES:
        for name in names:
            if name == "HTTP_PROXY" and "REQUEST_METHOD" in environ:
                continue
            value = environ.get(name, "").strip()
            if value:
                proxies[scheme] = _environment_proxy(spec, name, value)
                break
    no_proxy = next(
        (NoProxy(environ[n]) for n in _NO_PROXY_VARIABLES if environ.get(n, "").strip()), None
    )
    return Network(tls=tls, proxies=proxies, no_proxy=no_proxy)


def _environment_proxy(spec: Spec, name: str, value: str) -> Proxy:
    url = value if "://" in value else f"http://{value}"  # "host:port", as curl reads it
    problem = proxy_url_problem(url)
    if problem is not None:
        raise InvalidSpec(
            f"cannot use the proxy in {name} ({redact_url(value)}) for server {spec.name!r}: "
            f"it {problem}; give the server a 'proxy' of its own, or 'proxy': false to "
            "connect directly"
        )
    return Proxy(url, f"the proxy from {name}")


# --- TLS -------------------------------------------------------------------------------------


def _tls_context(spec: Spec, given: ssl.SSLContext | None) -> ssl.SSLContext | None:
    """The caller's context, or one made from the spec's ``verify`` and ``cert``; None for
    the default (made lazily by ``TlsContext``)."""
    custom = spec.verify is not True or spec.cert is not None
    if given is None and not custom:
        return None
    import ssl  # only for a client that asks for TLS settings

    log = logging.getLogger(f"mcp_client.{spec.name}")
    if given is not None:
        if not isinstance(given, ssl.SSLContext):
            raise TypeError(f"ssl_context must be an ssl.SSLContext, got {type(given).__name__}")
        if custom:
            raise InvalidSpec(
                f"invalid spec: an ssl_context was given and the spec sets 'verify' or 'cert'; "
                f"spec: {spec.redacted(include_defaults=False)!r}; load the CA bundle and the "
                "client certificate into the ssl_context, or drop the ssl_context"
            )
        if given.verify_mode == ssl.CERT_NONE:
            log.warning(_UNVERIFIED, spec.name, "its ssl_context verifies nothing")
        return given
    context = ssl.create_default_context()
    field = "verify"
    try:
        if spec.verify is False:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif isinstance(spec.verify, str):
            if os.path.isdir(spec.verify):
                context.load_verify_locations(capath=spec.verify)
            else:
                context.load_verify_locations(cafile=spec.verify)
        if spec.cert is not None:
            field = "cert"
            certificate, key = (spec.cert, None) if isinstance(spec.cert, str) else spec.cert
            # A key with a passphrase would make OpenSSL prompt on the terminal: never.
            context.load_cert_chain(certificate, key, password=_no_passphrase)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        why = os_message(exc) if isinstance(exc, OSError) else type(exc).__name__
        raise InvalidSpec(
            f"invalid spec: {field!r} could not be loaded ({why}); "
            f"spec: {spec.redacted(include_defaults=False)!r}; give PEM files (a key with a "
            "passphrase: load it into an ssl_context yourself)"
        ) from None
    if spec.verify is False:
        log.warning(_UNVERIFIED, spec.name, "verify is false")
    return context


_UNVERIFIED = (
    "TLS certificates of server %r are NOT verified (%s): anyone on the network path can "
    "read and change its traffic, credentials included"
)


def _no_passphrase() -> bytes:
    return b""
