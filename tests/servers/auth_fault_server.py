"""A hostile authorization server for the authorization fault matrix
(tests/drivers/test_auth_fault_matrix.py): ``OAuthServer`` (tests/servers/http_oauth_server.py,
an MCP server behind OAuth 2.1 plus its authorization server, 127.0.0.1 only) with a fault that
can be armed at one *step* of the authorization flow, for a number of requests or until cleared.

    with AuthFaultServer() as server:
        server.arm("token exchange", "hangs")          # every token exchange hangs from now on
        server.arm("registration", "500", times=1)     # the next registration only
        server.clear()                                 # every fault ends (a hang: cut, unanswered)
        server.attempts("token exchange")              # every request at that step, in order
        server.elsewhere                               # where "a redirect" points; must stay idle
        server.secrets                                 # OAuthServer's, plus what faulted requests
                                                       # carried (codes, verifiers, secrets...)

The steps (each request of the authorization layer is one of them):
  protected resource metadata     every GET of /.well-known/oauth-protected-resource and its path
                                  form (RFC 9728 §3.1: the challenge's resource_metadata URL is
                                  the path form here)
  authorization server metadata   every GET of /.well-known/oauth-authorization-server* and
                                  /.well-known/openid-configuration* (RFC 8414 §3.1 and its
                                  OpenID Connect twin), and an issuer path's appended OIDC form
  registration                    POST /register (RFC 7591)
  token exchange                  POST /token, grant_type=authorization_code (RFC 6749 §4.1.3)
  refresh                         POST /token, grant_type=refresh_token (RFC 6749 §6)
  client_credentials              POST /token, grant_type=client_credentials (RFC 6749 §4.4)
  jwt_bearer                      POST /token, grant_type=urn:ietf:params:oauth:grant-type:
                                  jwt-bearer (RFC 7523 §2.1, workload identity)
GET /authorize is recorded as the step ``authorization``; no fault is armed there, but "wrong
issuer" at the token exchange acts on it (below). Requests to the MCP path are OAuthServer's.

The faults (FAULTS):
  hangs               the request is read, never answered: the connection is cut when the fault
                      is cleared or the server stops
  never-ending body   200 application/json, then body bytes forever (framing="chunked", the
                      default: no Content-Length; framing="length": Content-Length 10 GB). The
                      socket's SO_SNDBUF is small, and the next ENDLESS_CHUNK bytes go out only
                      while what the client has not read yet (our send queue plus its socket's
                      receive queue, which the kernel tells by netlink sock_diag) leaves room
                      in ENDLESS_WINDOW: what was sent is what the client read plus at most
                      ENDLESS_WINDOW, and at most AUTH_MAX_BYTES + ENDLESS_SLACK for a client
                      that stops reading at that cap. Ends when the client leaves, the fault is
                      cleared or the server stops
  garbage JSON        200 application/json whose body is not JSON
  connection reset    RST (SO_LINGER 0), no answer
  500                 HTTP 500, text/plain
  429                 HTTP 429 with Retry-After: ``retry_after`` (default "1"), text/plain
  a redirect          302 to the same path on ``elsewhere`` (another server on 127.0.0.1, started
                      on first use), or to ``location``
  wrong issuer        authorization server metadata: the document names ``issuer`` (default
                      WRONG_ISSUER), not the issuer it was fetched for (RFC 8414 §3.3); token
                      exchange: the authorization response (GET /authorize's 302) carries that
                      ``iss`` (RFC 9207 §2), and the token request never comes
  slow-loris          an answer head, one byte every ``interval`` s (default 0.1), never
                      finished; ends when the client leaves, the fault is cleared or the server
                      stops

Every request at a step is recorded (``Attempt``: when it was complete, the fault applied, the
bytes sent back so far, whether the answer is over) before any fault applies, so a hung request
is recorded too. Every public method is thread-safe. ``stop()`` ends every hang, trickle and
endless body, and leaves no thread or socket (``elsewhere`` included).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import errno
import fcntl
import os
import socket
import struct
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import h11

from tests.servers.http_fault_server import HttpFaultServer, _Drop, _Exchange
from tests.servers.http_oauth_server import OAuthServer

PRM = "/.well-known/oauth-protected-resource"
RFC8414 = "/.well-known/oauth-authorization-server"
OIDC = "/.well-known/openid-configuration"

STEPS = (
    "protected resource metadata",
    "authorization server metadata",
    "registration",
    "token exchange",
    "refresh",
    "client_credentials",
    "jwt_bearer",
)
AUTHORIZATION = "authorization"  # GET /authorize: recorded, never faulted itself
GRANTS = {
    "authorization_code": "token exchange",
    "refresh_token": "refresh",
    "client_credentials": "client_credentials",
    "urn:ietf:params:oauth:grant-type:jwt-bearer": "jwt_bearer",
}
FAULTS = (
    "hangs",
    "never-ending body",
    "garbage JSON",
    "connection reset",
    "500",
    "429",
    "a redirect",
    "wrong issuer",
    "slow-loris",
)
WRONG_ISSUER_STEPS = ("authorization server metadata", "token exchange")
WRONG_ISSUER = "https://issuer.invalid"

# The never-ending body goes out in pieces of ENDLESS_CHUNK bytes, each only while what the
# client has not read yet (our send queue plus its socket's receive queue) leaves room for it
# in ENDLESS_WINDOW: so what was sent is at most what the client read plus ENDLESS_WINDOW. A
# client that stops at its cap has read at most ENDLESS_WINDOW past it (all it could have had in
# one read); the head and the chunk framing are well under 4 KiB. Hence: sent <= cap +
# ENDLESS_SLACK, about 36 KiB past a 256 KiB cap.
ENDLESS_CHUNK = 8 * 1024
ENDLESS_WINDOW = 2 * (ENDLESS_CHUNK + 16)  # two pieces with their chunk framing
ENDLESS_SLACK = 2 * ENDLESS_WINDOW + 4096
SMALL_SNDBUF = 4096  # Linux doubles it (and keeps at least 4608): under 10 KiB in the kernel
TEN_GB = 10 * 1000**3
PACE_POLL = 0.0005  # how often the never-ending body checks whether the client has read
STALL_LIMIT = 600.0  # a hang or trickle ends by itself after this long

_ESTABLISHED = 1  # tcp_info's tcpi_state of an established connection (Linux)
_SECRET_FIELDS = (
    "code",
    "code_verifier",
    "refresh_token",
    "client_secret",
    "client_assertion",
    "assertion",
)


@dataclass
class Attempt:
    """One request at a step. ``at`` is time.monotonic() when it was complete; ``sent`` the
    bytes written back for it so far (head included); ``done`` whether its answer is over."""

    step: str
    method: str
    path: str
    at: float
    fault: str | None
    sent: int = 0
    done: bool = False


@dataclass(eq=False)
class _Armed:
    step: str
    fault: str
    remaining: int | None
    options: dict[str, Any]
    ended: bool = False


class AuthFaultServer(OAuthServer):
    """See the module docstring."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._faults_cond = threading.Condition()  # guards everything below
        self._armed: list[_Armed] = []
        self._attempts: list[Attempt] = []
        self._seen: set[str] = set()  # secrets carried by requests OAuthServer never read
        self._closing = False
        self._elsewhere: HttpFaultServer | None = None

    # --- control ---

    def arm(self, step: str, fault: str, *, times: int | None = None, **options: Any) -> None:
        """Arm ``fault`` at ``step`` for the next ``times`` requests there (None: until
        cleared). ValueError for an unknown step or fault, or "wrong issuer" where there is no
        issuer to get wrong."""
        if step not in STEPS:
            raise ValueError(f"unknown step {step!r}; known: {STEPS}")
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {FAULTS}")
        if fault == "wrong issuer" and step not in WRONG_ISSUER_STEPS:
            raise ValueError(f"'wrong issuer' applies to {WRONG_ISSUER_STEPS} only, not {step!r}")
        if times is not None and times < 1:
            raise ValueError("times must be at least 1 (or None: until cleared)")
        if fault == "a redirect" and "location" not in options:
            self._start_elsewhere()
        with self._faults_cond:
            self._armed.append(_Armed(step, fault, times, dict(options)))

    def clear(self, step: str | None = None) -> None:
        """End the faults at ``step`` (None: every step): nothing more is faulted there, and a
        hang, trickle or endless body under way ends (its connection is cut)."""
        with self._faults_cond:
            for armed in self._armed:
                if step is None or armed.step == step:
                    armed.ended = True
            self._armed = [a for a in self._armed if not a.ended]
            self._faults_cond.notify_all()

    def attempts(self, step: str | None = None) -> list[Attempt]:
        """Every request at ``step`` (None: at every step), oldest first; copies."""
        with self._faults_cond:
            return [
                dataclasses.replace(a) for a in self._attempts if step is None or a.step == step
            ]

    @property
    def elsewhere(self) -> HttpFaultServer:
        """Where "a redirect" points (started on first use): it must see no request."""
        return self._start_elsewhere()

    @property
    def secrets(self) -> set[str]:
        with self._faults_cond:
            seen = set(self._seen)
        return super().secrets | seen

    def stop(self) -> None:
        with self._faults_cond:
            self._closing = True
            self._faults_cond.notify_all()
            elsewhere = self._elsewhere
        super().stop()
        if elsewhere is not None:
            elsewhere.stop()

    # --- dispatch ---

    def _handle(self, exchange: _Exchange, received: tuple[h11.Request, bytes]) -> None:
        request, body = received
        method = request.method.decode("ascii", "replace").upper()
        target = urlsplit(request.target.decode("latin-1"))
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in request.headers
        }
        form = dict(parse_qsl(body.decode("latin-1"))) if target.path == "/token" else {}
        step = _step_of(method, target.path, form)
        if step is None:
            super()._handle(exchange, received)
            return
        with self._faults_cond:
            armed = self._take("token exchange" if step == AUTHORIZATION else step, step)
            attempt = Attempt(step, method, target.path, time.monotonic(), armed and armed.fault)
            self._attempts.append(attempt)
            self._faults_cond.notify_all()
        counted = _Counted(exchange, lambda n: self._count(attempt, n))
        try:
            if armed is None:
                super()._handle(counted, received)
            else:
                self._keep_secrets(headers, form)
                self._apply(counted, armed, attempt, target.path, target.query)
        finally:
            with self._faults_cond:
                attempt.done = True

    def _take(self, step: str, actual: str) -> _Armed | None:
        """The first fault armed at ``step`` that applies to a request at ``actual``, used up
        once. Holds the condition. At GET /authorize only "wrong issuer" of the token exchange
        applies; at the token exchange, "wrong issuer" has nothing to do (the client refused
        the authorization response already)."""
        for armed in self._armed:
            if armed.step != step:
                continue
            mixed_up = armed.fault == "wrong issuer" and step == "token exchange"
            if (actual == AUTHORIZATION) != mixed_up:
                continue
            if armed.remaining is not None:
                armed.remaining -= 1
                if armed.remaining <= 0:
                    self._armed.remove(armed)
            return armed
        return None

    def _count(self, attempt: Attempt, sent: int) -> None:
        with self._faults_cond:
            attempt.sent += sent

    def _keep_secrets(self, headers: dict[str, str], form: dict[str, str]) -> None:
        """What a faulted request carried that OAuthServer never read: it must not leak either."""
        seen = {form[name] for name in _SECRET_FIELDS if form.get(name)}
        basic = headers.get("authorization", "")
        if basic.startswith("Basic "):
            with contextlib.suppress(ValueError):
                seen.add(base64.b64decode(basic[len("Basic ") :]).decode().partition(":")[2])
        with self._faults_cond:
            self._seen.update(s for s in seen if s)

    def _ended(self, armed: _Armed) -> bool:
        with self._faults_cond:
            return armed.ended or self._closing

    def _wait(self, armed: _Armed, seconds: float) -> bool:
        """Wait up to ``seconds``; True when the fault ended or the server is stopping."""
        with self._faults_cond:
            return self._faults_cond.wait_for(lambda: armed.ended or self._closing, seconds)

    def _start_elsewhere(self) -> HttpFaultServer:
        with self._faults_cond:
            if self._elsewhere is None:
                self._elsewhere = HttpFaultServer(path="/elsewhere").start()
            return self._elsewhere

    # --- faults ---

    def _apply(
        self, exchange: _Counted, armed: _Armed, attempt: Attempt, path: str, query: str
    ) -> None:
        fault, options = armed.fault, armed.options
        if fault == "hangs":
            self._wait(armed, STALL_LIMIT)
            raise _Drop
        if fault == "never-ending body":
            self._endless(exchange, armed, str(options.get("framing", "chunked")))
        elif fault == "garbage JSON":
            exchange.full(200, [("content-type", "application/json")], b'{"issuer": <not JSON')
        elif fault == "connection reset":
            linger = struct.pack("ii", 1, 0)  # close() now sends RST, not FIN
            exchange.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            exchange.sock.close()
            raise _Drop
        elif fault == "500":
            exchange.full(500, [("content-type", "text/plain")], b"fault: HTTP 500\n")
        elif fault == "429":
            retry_after = ("retry-after", str(options.get("retry_after", "1")))
            exchange.full(429, [("content-type", "text/plain"), retry_after], b"slow down\n")
        elif fault == "a redirect":
            location = str(options.get("location") or self.elsewhere.origin + path)
            exchange.full(302, [("location", location)])
        elif fault == "wrong issuer":
            issuer = str(options.get("issuer", WRONG_ISSUER))
            if attempt.step == AUTHORIZATION:
                self._authorize_with_issuer(exchange, dict(parse_qsl(query)), issuer)
            else:
                exchange.json(200, {**self._server_metadata(), "issuer": issuer})
        elif fault == "slow-loris":
            head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-loris: "
            interval = float(options.get("interval", 0.1))
            for index in range(10**9):
                if self._wait(armed, interval):
                    break
                byte = head[index : index + 1] or b"a"
                if not exchange.raw(byte):
                    break
            raise _Drop

    def _authorize_with_issuer(
        self, exchange: _Exchange, query: dict[str, str], issuer: str
    ) -> None:
        """OAuthServer's authorization response, with ``iss`` replaced (RFC 9207 §2)."""
        inner = _Capture()
        self._authorize(inner, query)
        location = inner.location
        if inner.status != 302 or location is None:
            exchange.full(inner.status, [("content-type", "text/plain")], inner.body)
            return
        base, _, params = location.partition("?")
        answer = {**dict(parse_qsl(params)), "iss": issuer}
        exchange.full(302, [("location", f"{base}?{urlencode(answer)}")])

    def _endless(self, exchange: _Counted, armed: _Armed, framing: str) -> None:
        sock = exchange.sock
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_SNDBUF)
        if framing == "length":
            head = (
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                f"content-length: {TEN_GB}\r\n\r\n"
            ).encode()
        else:
            head = (
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
        piece = b'{"padding":"' + b"x" * (ENDLESS_CHUNK - 12)
        filler = b"x" * ENDLESS_CHUNK

        def framed(data: bytes) -> bytes:
            return data if framing == "length" else b"%x\r\n%s\r\n" % (len(data), data)

        if not exchange.raw(head + framed(piece)):
            raise _Drop
        peer = sock.getpeername()[1]
        more = framed(filler)
        while not self._ended(armed):
            # The next piece only while what the client has not read yet leaves room for it.
            while (unread := _unread(sock, peer, self.port)) is not None:
                if unread + len(more) <= ENDLESS_WINDOW:
                    break
                if self._wait(armed, PACE_POLL):
                    raise _Drop
            if not exchange.raw(more):
                break
        raise _Drop


class _Counted(_Exchange):
    """An exchange that counts every byte the kernel took, for its attempt."""

    def __init__(self, exchange: _Exchange, count: Callable[[int], None]) -> None:
        super().__init__(exchange.sock, exchange.conn)
        self._counter = count

    def send(self, event: h11.Event) -> None:
        data = self.conn.send(event)
        if data and not self.raw(data):
            raise _Drop

    def raw(self, data: bytes) -> bool:
        """Write ``data`` past h11; False when the client is gone."""
        view = memoryview(data)
        while view:
            try:
                sent = self.sock.send(view)
            except OSError:
                return False
            self._counter(sent)
            view = view[sent:]
        return True


class _Capture(_Exchange):
    """An exchange that keeps OAuthServer's answer instead of sending it."""

    def __init__(self) -> None:
        self.status = 0
        self.location: str | None = None
        self.body = b""

    def full(self, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        self.status, self.body = status, body
        self.location = next((v for k, v in headers if k.lower() == "location"), None)


def _step_of(method: str, path: str, form: dict[str, str]) -> str | None:
    if method == "GET":
        if path == PRM or path.startswith(PRM + "/"):
            return "protected resource metadata"
        if any(path == w or path.startswith(w + "/") for w in (RFC8414, OIDC)):
            return "authorization server metadata"
        if path.endswith(OIDC):  # an issuer with a path: OIDC path appending
            return "authorization server metadata"
        if path == "/authorize":
            return AUTHORIZATION
    elif method == "POST":
        if path == "/register":
            return "registration"
        if path == "/token":
            return GRANTS.get(form.get("grant_type", ""))
    return None


def _unread(sock: socket.socket, peer_port: int, our_port: int) -> int | None:
    """How many of the bytes we sent the client has not read: our send queue (unsent or not
    acknowledged, SIOCOUTQ) plus its socket's receive queue (the rx_queue of its row in
    /proc/net/tcp). None when the connection is no longer established: the next send says
    how it ended."""
    try:
        state = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
        unsent = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]
    except OSError:
        return None
    if state != _ESTABLISHED:
        return None
    unread = _rx_queue(peer_port, our_port)
    return None if unread is None else unsent + unread


def _rx_queue(local_port: int, remote_port: int) -> int | None:
    """The receive queue of the 127.0.0.1 socket bound to ``local_port`` and connected to
    ``remote_port`` (None: no such socket): asked of the kernel by its four-tuple over netlink
    (sock_diag, inet_diag_req_v2: one lookup, tens of microseconds), else read from
    /proc/net/tcp (which lists every socket: milliseconds on a busy machine)."""
    try:
        return _diag_rx_queue(local_port, remote_port)
    except OSError:
        pass
    local = f"0100007F:{local_port:04X}"
    remote = f"0100007F:{remote_port:04X}"
    with open("/proc/net/tcp", encoding="ascii") as table:
        next(table)
        for line in table:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                return int(fields[4].partition(":")[2], 16)
    return None


_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NLMSG_ERROR = 2
_NO_COOKIE = 0xFFFFFFFF
_LOOPBACK = socket.inet_aton("127.0.0.1") + bytes(12)


def _diag_rx_queue(local_port: int, remote_port: int) -> int | None:
    """``_rx_queue`` over Linux's netlink sock_diag: an inet_diag_req_v2 naming one TCP
    socket, answered by its inet_diag_msg (idiag_rqueue: unread bytes, for an established
    socket) or by an error (ENOENT: no such socket). OSError when netlink is not there."""
    sockid = struct.pack("!HH", local_port, remote_port) + _LOOPBACK + _LOOPBACK
    sockid += struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
    request = struct.pack("=BBBxI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0xFFFFFFFF) + sockid
    header = struct.pack("=LHHLL", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as link:
        link.sendto(header + request, (0, 0))
        answer = link.recv(65536)
    if struct.unpack_from("=H", answer, 4)[0] == _NLMSG_ERROR:
        error = -struct.unpack_from("=i", answer, 16)[0]
        if error == errno.ENOENT:
            return None
        raise OSError(error, os.strerror(error))
    # nlmsghdr (16 bytes), then inet_diag_msg: family, state, timer, retrans (4), the socket
    # id (48), expires (4), rqueue.
    return int(struct.unpack_from("=I", answer, 16 + 56)[0])
