"""Networks as users have them, on every driver (asyncio, trio, sync): a private CA
(``verify=<CA bundle>``; the default trust refuses it), mutual TLS (``cert=``; the server
refuses a client without one), an ``ssl_context=`` of the caller's, and proxies
(``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` or the spec's ``proxy``) against a real proxy
server from PyPI, proxy.py, on 127.0.0.1.

What the proxy received is inspected twice: a proxy.py plugin records every request the proxy
parsed (only CONNECTs, with ``Proxy-Authorization`` and never ``Authorization``), and a tiny
recording relay of our own in front of it keeps every byte the client sent: the bearer token
never appears in it for an https server (it travels under TLS inside the tunnel), and for a
plain http server only after the CONNECT head, inside the tunnel. The servers are our
fault-injection MCP server (tests/servers/http_fault_server.py), over TLS here with a
throwaway CA. At the end, the pure pieces of ``_mcp_io.http`` (NO_PROXY matching, the
CONNECT exchange, the proxy variables) without a network. No sleeps: every wait is for an
event, with a deadline."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import re
import socket
import ssl
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

import mcp_asyncio
import mcp_core as core
import mcp_sync
from _mcp_io.http import NoProxy, Proxy, ProxyError, Tunnel, client_network, reason
from tests.drivers.facade import Facade
from tests.drivers.pki import Pki
from tests.servers.http_fault_server import HOST, HttpFaultServer
from tests.servers.http_peers import HttpPeer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

TOKEN = "t0ken-never-for-the-proxy"
PROXY_USER, PROXY_PASSWORD = "alice", "pr0xy-pa55"
WAIT = 10.0
PROXY_VARIABLES = (
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
    "REQUEST_METHOD",
)


@pytest.fixture(autouse=True)
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the variables it means; the ones of whoever runs the tests are gone."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


# --- a throwaway certificate authority: tests/drivers/pki.py ----------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    pytest.importorskip("cryptography")
    return Pki(tmp_path_factory.mktemp("pki"))


# --- servers -----------------------------------------------------------------------------------


class TlsFaultServer(HttpFaultServer):
    """The fault server over TLS: each connection is wrapped (the handshake in its thread)
    before the usual serving; a client the handshake refuses is simply closed."""

    def __init__(self, context: ssl.SSLContext, **options: Any) -> None:
        super().__init__(**options)
        self._context = context
        self.refused_handshakes = 0

    @property
    def origin(self) -> str:
        return f"https://{HOST}:{self.port}"

    def wait_refused(self) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: self.refused_handshakes > 0, WAIT)

    def _serve_connection(self, sock: socket.socket) -> None:
        try:
            secured = self._context.wrap_socket(sock, server_side=True)
        except (OSError, ValueError):
            with self._cond:
                self.refused_handshakes += 1
                self._conns.discard(sock)
                self._cond.notify_all()
            sock.close()
            return
        with self._cond:  # stop() shuts down what is in _conns: the TLS socket now
            self._conns.discard(sock)
            self._conns.add(secured)
        super()._serve_connection(secured)


@pytest.fixture
def tls_server(pki: Pki) -> Iterator[TlsFaultServer]:
    with TlsFaultServer(pki.server_context()) as server:
        yield server


@pytest.fixture
def mtls_server(pki: Pki) -> Iterator[TlsFaultServer]:
    with TlsFaultServer(pki.server_context(require_client_cert=True)) as server:
        yield server


@pytest.fixture
def http_server() -> Iterator[HttpFaultServer]:
    with HttpFaultServer() as server:
        yield server


# --- the proxy ---------------------------------------------------------------------------------

RECORDER_PLUGIN = '''
"""Records every request proxy.py parsed (for a tunnel: the CONNECT alone), one JSON line each."""
import json
import os

from proxy.http.proxy import HttpProxyBasePlugin


class Recorder(HttpProxyBasePlugin):
    def handle_client_request(self, request):
        headers = [[n.decode("latin-1"), v.decode("latin-1")] for n, v in request.headers.values()]
        line = {"method": request.method.decode(), "port": request.port, "headers": headers,
                "host": request.host.decode() if request.host else None}
        with open(os.environ["PROXY_RECORD"], "a", encoding="utf-8") as record:
            record.write(json.dumps(line) + "\\n")
        return request
'''


class RealProxy:
    """proxy.py (``python -m proxy``) on 127.0.0.1, with basic auth, and the recording plugin.
    ``parsed()`` is what it parsed as requests."""

    def __init__(self, directory: Path) -> None:
        (directory / "proxy_recorder.py").write_text(RECORDER_PLUGIN, encoding="utf-8")
        self.record = directory / "requests.jsonl"
        self.record.touch()
        env = {
            **{k: v for k, v in os.environ.items() if k not in PROXY_VARIABLES},
            "PYTHONPATH": str(directory),
            "PROXY_RECORD": str(self.record),
        }
        argv = [
            sys.executable,
            "-m",
            "proxy",
            "--hostname",
            HOST,
            "--port",
            "0",
            "--num-acceptors",
            "1",
            "--num-workers",
            "1",
            "--timeout",
            "60",
            "--basic-auth",
            f"{PROXY_USER}:{PROXY_PASSWORD}",
            "--plugins",
            "proxy_recorder.Recorder",
            "--log-level",
            "d",  # its "Listening on HOST:PORT" line is a debug line
        ]
        self.peer = HttpPeer(argv, self._listening, env)
        self.peer.wait_ready()
        self.port = int(self.peer.url)

    @staticmethod
    def _listening(line: str) -> str | None:
        match = re.search(r"Listening on 127\.0\.0\.1:(\d+)", line)
        return match.group(1) if match else None

    def parsed(self) -> list[dict[str, Any]]:
        lines = self.record.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]

    def clear(self) -> None:
        self.record.write_text("", encoding="utf-8")

    def stop(self) -> None:
        self.peer.stop()


@pytest.fixture(scope="module")
def real_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealProxy]:
    if importlib.util.find_spec("proxy") is None:  # proxy.py, of the dev extra
        message = "proxy.py is missing: pip install -e '.[dev]'"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI never goes green by skipping the proxy tests
        pytest.skip(message)
    proxy = RealProxy(tmp_path_factory.mktemp("proxy"))
    try:
        yield proxy
    finally:
        proxy.stop()


class Relay:
    """A recording TCP relay on 127.0.0.1 in front of ``upstream``: ``sent`` holds, per
    connection, every byte the client sent (so, everything the proxy received)."""

    def __init__(self, upstream: int) -> None:
        self._upstream = upstream
        self._listener = socket.create_server((HOST, 0))
        self.port = self._listener.getsockname()[1]
        self.sent: list[bytearray] = []
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def url(self, *, credentials: str | None = f"{PROXY_USER}:{PROXY_PASSWORD}") -> str:
        userinfo = f"{credentials}@" if credentials else ""
        return f"http://{userinfo}{HOST}:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection((HOST, self._upstream))
            record = bytearray()
            with self._lock:
                self.sent.append(record)
                self._sockets += [client, upstream]
                for args in ((client, upstream, record), (upstream, client, None)):
                    thread = threading.Thread(target=self._pump, args=args, daemon=True)
                    self._threads.append(thread)
                    thread.start()

    def _pump(self, source: socket.socket, sink: socket.socket, record: bytearray | None) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if record is not None:
                    with self._lock:
                        record += data
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def everything_sent(self) -> list[bytes]:
        with self._lock:
            return [bytes(record) for record in self.sent]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(WAIT)
        for sock in sockets:
            sock.close()


@pytest.fixture
def relay(real_proxy: RealProxy) -> Iterator[Relay]:
    real_proxy.clear()
    relay = Relay(real_proxy.port)
    try:
        yield relay
    finally:
        relay.close()


@pytest.fixture
def refused_port() -> int:
    with socket.socket() as probe:  # a port that was just free: nothing listens on it
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


# --- helpers -----------------------------------------------------------------------------------


def client(driver: str, url: str, **fields: Any) -> Facade:
    fields.setdefault("reconnect", 0.05)
    fields.setdefault("era", "legacy")
    fields.setdefault("init_timeout", WAIT)
    return Facade(driver, url=url, **fields)


BEARER = {"Authorization": f"Bearer {TOKEN}"}


async def echo(c: Facade, text: str = "through") -> None:
    assert (await c.call_tool("echo", {"text": text})).text == text


async def connect_fails(driver: str, url: str, **fields: Any) -> core.ConnectFailed:
    """The ConnectFailed the first connect attempt ends with (fail_fast)."""
    with pytest.raises(core.ConnectFailed) as caught:
        async with client(driver, url, fail_fast=True, **fields):
            pass
    return caught.value


def saw_token(server: HttpFaultServer) -> bool:
    """Whether every request that reached the server carried the token (and never a
    Proxy-Authorization: that header is for the proxy alone)."""
    requests = server.requests
    assert requests
    assert all(request.header("proxy-authorization") is None for request in requests)
    return all(request.header("authorization") == f"Bearer {TOKEN}" for request in requests)


def check_parsed_by_the_proxy(proxy: RealProxy, target: str) -> None:
    """proxy.py parsed CONNECTs only, to `target`, each with our Proxy-Authorization and
    nothing of the spec's headers."""
    parsed = proxy.parsed()
    assert parsed, "the proxy saw no request"
    for request in parsed:
        names = {name.lower() for name, _ in request["headers"]}
        assert request["method"] == "CONNECT", request
        assert f"{request['host']}:{request['port']}" == target
        assert "proxy-authorization" in names
        assert "authorization" not in names
        assert TOKEN not in json.dumps(request)


def no_secret_in(*texts: str) -> None:
    for text in texts:
        assert TOKEN not in text
        assert PROXY_PASSWORD not in text


# --- private CA, client certificates, ssl_context ----------------------------------------------


async def test_a_private_ca_is_refused_by_default(driver: str, tls_server: TlsFaultServer) -> None:
    failed = await connect_fails(driver, tls_server.url)
    assert "CERTIFICATE_VERIFY_FAILED" in str(failed)


async def test_verify_names_the_ca_bundle_to_trust(
    driver: str, tls_server: TlsFaultServer, pki: Pki
) -> None:
    async with client(driver, tls_server.url, verify=str(pki.ca), headers=BEARER) as c:
        await echo(c)
    assert saw_token(tls_server)


async def test_verify_false_connects_and_warns_loudly(
    driver: str, tls_server: TlsFaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_client"):
        async with client(driver, tls_server.url, verify=False) as c:
            await echo(c)
    warnings = [
        r for r in caplog.records if r.name == "mcp_client.t" and "NOT verified" in r.message
    ]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING


async def test_mutual_tls_with_a_client_certificate(
    driver: str, mtls_server: TlsFaultServer, pki: Pki
) -> None:
    for cert in ((str(pki.client_cert), str(pki.client_key)), str(pki.client_both)):
        async with client(driver, mtls_server.url, verify=str(pki.ca), cert=cert) as c:
            await echo(c)


async def test_mutual_tls_refuses_a_client_without_a_certificate(
    driver: str, mtls_server: TlsFaultServer, pki: Pki
) -> None:
    failed = await connect_fails(driver, mtls_server.url, verify=str(pki.ca))
    # TLS 1.3: the client hears of it when it reads: the server's alert, or a reset when the
    # server closed before the client's request was out.
    assert re.search(r"CERTIFICATE_REQUIRED|certificate|reset by peer|EOF", str(failed)), failed
    await anyio.to_thread.run_sync(mtls_server.wait_refused)
    assert mtls_server.requests == []


async def test_an_ssl_context_of_the_callers_own(
    driver: str, mtls_server: TlsFaultServer, pki: Pki
) -> None:
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.load_cert_chain(pki.client_cert, pki.client_key)
    async with client(driver, mtls_server.url, ssl_context=context) as c:
        await echo(c)


@pytest.mark.parametrize("twin", [mcp_sync, mcp_asyncio])
def test_tls_settings_refused_at_construction(twin: Any, pki: Pki, tmp_path: Path) -> None:
    url = "https://127.0.0.1:1/mcp"
    context = ssl.create_default_context()
    with pytest.raises(core.InvalidSpec, match="ssl_context was given and the spec sets"):
        twin.Client(name="t", url=url, verify=str(pki.ca), ssl_context=context)
    with pytest.raises(TypeError, match=r"ssl_context must be an ssl\.SSLContext"):
        twin.Client(name="t", url=url, ssl_context="ca.pem")
    missing = tmp_path / "nowhere.pem"
    with pytest.raises(core.InvalidSpec, match=r"'verify' could not be loaded \(\[Errno 2\]"):
        twin.Client(name="t", url=url, verify=str(missing))
    with pytest.raises(core.InvalidSpec, match="'cert' could not be loaded"):
        twin.Client(name="t", url=url, cert=(str(pki.client_cert), str(pki.server_key)))
    with pytest.raises(core.InvalidSpec, match="'verify' could not be loaded"):
        twin.Client(name="t", url=url, verify=str(pki.client_key))  # not a certificate
    # A stdio client ignores the context (a group hands it to every client).
    twin.Client(name="s", command="true", ssl_context=context)


@pytest.mark.parametrize("twin", [mcp_sync, mcp_asyncio])
def test_an_ssl_context_that_verifies_nothing_is_warned_about(
    twin: Any, caplog: pytest.LogCaptureFixture
) -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with caplog.at_level(logging.WARNING, logger="mcp_client"):
        twin.Client(name="lax", url="https://127.0.0.1:1/mcp", ssl_context=context)
    assert [r.getMessage() for r in caplog.records] == [
        "TLS certificates of server 'lax' are NOT verified (its ssl_context verifies nothing): "
        "anyone on the network path can read and change its traffic, credentials included"
    ]


async def test_a_group_hands_its_ssl_context_to_every_client(
    driver: str, mtls_server: TlsFaultServer, pki: Pki
) -> None:
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.load_cert_chain(pki.client_cert, pki.client_key)
    specs = {
        "a": {"url": mtls_server.url, "era": "legacy"},
        "b": {"url": mtls_server.url, "era": "legacy", "verify": str(pki.ca)},  # refused
    }
    if driver == "sync":

        def run() -> dict[str, core.Status]:
            with mcp_sync.ClientGroup(specs, ssl_context=context, fail_fast=True) as group:
                assert group.call_tool("mcp__a__echo", {"text": "g"}).text == "g"
                return group.status()

        status = await anyio.to_thread.run_sync(run)
    else:
        async with mcp_asyncio.ClientGroup(specs, ssl_context=context, fail_fast=True) as group:
            assert (await group.call_tool("mcp__a__echo", {"text": "g"})).text == "g"
            status = group.status()
    assert status["a"].state == "ready"
    assert status["b"].state == "closed"
    assert "ssl_context was given" in str(status["b"].last_error)


# --- proxies -----------------------------------------------------------------------------------


async def test_https_through_the_proxy_tunnel(
    driver: str,
    tls_server: TlsFaultServer,
    pki: Pki,
    relay: Relay,
    real_proxy: RealProxy,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", relay.url())
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # not for an https server
    caplog.set_level(logging.DEBUG)
    async with client(driver, tls_server.url, verify=str(pki.ca), headers=BEARER) as c:
        await echo(c)
        await echo(c, "again")
    assert saw_token(tls_server)  # the server got the token, inside the tunnel
    check_parsed_by_the_proxy(real_proxy, f"{HOST}:{tls_server.port}")
    sent = relay.everything_sent()
    assert sent
    for connection in sent:
        assert connection.startswith(f"CONNECT {HOST}:{tls_server.port} HTTP/1.1\r\n".encode())
        assert TOKEN.encode() not in connection  # under TLS: the proxy never saw it
        assert b"Proxy-Authorization: Basic " in connection.split(b"\r\n\r\n")[0]
    no_secret_in(*(record.getMessage() for record in caplog.records))


async def test_http_through_the_proxy_tunnel(
    driver: str,
    http_server: HttpFaultServer,
    relay: Relay,
    real_proxy: RealProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("http_proxy", relay.url())  # the lower-case spelling
    async with client(driver, http_server.url, headers=BEARER) as c:
        await echo(c)
    assert saw_token(http_server)
    check_parsed_by_the_proxy(real_proxy, f"{HOST}:{http_server.port}")
    for connection in relay.everything_sent():
        head, _, tunnelled = connection.partition(b"\r\n\r\n")
        assert head.startswith(f"CONNECT {HOST}:{http_server.port} HTTP/1.1".encode())
        assert TOKEN.encode() not in head
        assert b"Proxy-Authorization" not in tunnelled  # the proxy's credential stays with it
    # The token went inside the tunnel only (plain HTTP there: the tunnel is the boundary).
    assert any(TOKEN.encode() in c.partition(b"\r\n\r\n")[2] for c in relay.everything_sent())


async def test_no_proxy_goes_direct(
    driver: str,
    tls_server: TlsFaultServer,
    pki: Pki,
    relay: Relay,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", relay.url())
    monkeypatch.setenv("NO_PROXY", f"example.com, {HOST}:{tls_server.port}")
    async with client(driver, tls_server.url, verify=str(pki.ca)) as c:
        await echo(c)
    monkeypatch.setenv("NO_PROXY", "example.com")
    async with client(driver, tls_server.url, verify=str(pki.ca), proxy=False) as c:
        await echo(c)  # the spec's proxy=False beats the environment
    assert relay.everything_sent() == []


async def test_the_specs_proxy_beats_the_environment(
    driver: str,
    tls_server: TlsFaultServer,
    pki: Pki,
    relay: Relay,
    refused_port: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://{HOST}:{refused_port}")
    monkeypatch.setenv("NO_PROXY", "*")  # the environment's, not the spec's: ignored too
    async with client(driver, tls_server.url, verify=str(pki.ca), proxy=relay.url()) as c:
        await echo(c)
    assert len(relay.everything_sent()) >= 1


@pytest.mark.parametrize(
    ("credentials", "expected"),
    [
        (None, "put its user name and password in the proxy URL"),
        (f"{PROXY_USER}:wrong-{PROXY_PASSWORD}", "it refused the user name and password"),
    ],
)
async def test_a_proxy_that_refuses_the_tunnel(
    driver: str,
    tls_server: TlsFaultServer,
    pki: Pki,
    relay: Relay,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    credentials: str | None,
    expected: str,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", relay.url(credentials=credentials))
    caplog.set_level(logging.DEBUG)
    failed = await connect_fails(driver, tls_server.url, verify=str(pki.ca), headers=BEARER)
    text = str(failed)
    assert "ProxyError: the proxy from HTTPS_PROXY refused the tunnel: 407 Proxy " in text
    assert expected in text
    no_secret_in(text, repr(failed), *(record.getMessage() for record in caplog.records))
    assert tls_server.requests == []


async def test_a_proxy_that_cannot_be_reached(
    driver: str, tls_server: TlsFaultServer, pki: Pki, refused_port: int
) -> None:
    proxy = f"http://{PROXY_USER}:{PROXY_PASSWORD}@{HOST}:{refused_port}"
    failed = await connect_fails(driver, tls_server.url, verify=str(pki.ca), proxy=proxy)
    assert "ProxyError: cannot reach the spec's proxy: [Errno 111] Connection refused" in str(
        failed
    )
    no_secret_in(str(failed))


async def test_calls_through_the_proxy_fail_typed_once_it_goes_away(
    driver: str, tls_server: TlsFaultServer, pki: Pki, real_proxy: RealProxy
) -> None:
    relay = Relay(real_proxy.port)
    try:
        async with client(driver, tls_server.url, verify=str(pki.ca), proxy=relay.url()) as c:
            await echo(c)
            relay.close()  # every tunnel is cut, and the proxy is gone
            with pytest.raises((core.InvalidResponse, core.NotReady, core.ConnectFailed)):
                await c.call_tool("echo", {"text": "lost"}, timeout=WAIT)
    finally:
        relay.close()


async def test_the_private_ca_is_still_checked_inside_the_tunnel(
    driver: str, tls_server: TlsFaultServer, relay: Relay, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", relay.url())
    failed = await connect_fails(driver, tls_server.url)  # default trust: no private CA
    assert "CERTIFICATE_VERIFY_FAILED" in str(failed) and "ProxyError" not in str(failed)
    assert relay.everything_sent()  # it did go through the proxy


class FakeProxy:
    """Not a real proxy: reads the CONNECT, then hangs up without a word (``stall=False``)
    or says nothing and reads until the client closes (``stall=True``). Counts connections
    accepted and closed by the client."""

    def __init__(self, *, stall: bool) -> None:
        self._stall = stall
        self._listener = socket.create_server((HOST, 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}"
        self.accepted = self.closed = 0
        self._changed = threading.Condition()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def wait(self, predicate: Any) -> None:
        with self._changed:
            assert self._changed.wait_for(predicate, WAIT), "the fake proxy never saw that"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with self._changed:
                self.accepted += 1
                self._changed.notify_all()
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket) -> None:
        with connection, contextlib.suppress(OSError):
            received = b""
            while (self._stall or b"\r\n\r\n" not in received) and (data := connection.recv(4096)):
                received += data
            if self._stall:  # recv() gave EOF: the client closed it
                with self._changed:
                    self.closed += 1
                    self._changed.notify_all()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for thread in self._threads:
            thread.join(WAIT)


async def test_a_proxy_that_hangs_up(driver: str, tls_server: TlsFaultServer, pki: Pki) -> None:
    fake = FakeProxy(stall=False)
    try:
        failed = await connect_fails(driver, tls_server.url, verify=str(pki.ca), proxy=fake.url)
    finally:
        fake.close()
    assert "ProxyError: the spec's proxy closed the connection before opening the tunnel" in str(
        failed
    )


async def test_stop_ends_a_tunnel_the_proxy_never_answers(
    driver: str, tls_server: TlsFaultServer, pki: Pki
) -> None:
    fake = FakeProxy(stall=True)
    try:
        c = client(driver, tls_server.url, verify=str(pki.ca), proxy=fake.url, wait=False)
        await c.start()
        await anyio.to_thread.run_sync(fake.wait, lambda: fake.accepted >= 1)
        await c.stop()  # aborts the attempt waiting for the proxy's answer
        await anyio.to_thread.run_sync(fake.wait, lambda: fake.closed == fake.accepted)
        assert c.status().state == "closed"
    finally:
        fake.close()


@pytest.mark.parametrize("twin", [mcp_sync, mcp_asyncio])
def test_a_proxy_variable_that_cannot_be_used(twin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", f"socks5://{PROXY_USER}:{PROXY_PASSWORD}@127.0.0.1:1080")
    with pytest.raises(core.InvalidSpec) as caught:
        twin.Client(name="t", url="https://127.0.0.1:1/mcp")
    message = caught.value.message
    assert "cannot use the proxy in https_proxy (socks5://%5Bredacted%5D@127.0.0.1:1080)" in message
    assert "'proxy': false to connect directly" in message
    no_secret_in(message)
    twin.Client(name="t", url="https://127.0.0.1:1/mcp", proxy=False)  # the way out
    twin.Client(name="s", command="true")  # a stdio client never reads them


# --- the pure pieces ---------------------------------------------------------------------------


def network(environ: dict[str, str], **fields: Any) -> Any:
    spec = core.Spec(name="t", url="https://h/mcp", **fields)
    return client_network(spec, None, environ)


@pytest.mark.parametrize(
    ("no_proxy", "origin", "direct"),
    [
        ("*", ("https", "anything.example", 443), True),
        ("example.com", ("https", "example.com", 443), True),
        ("example.com", ("https", "api.EXAMPLE.com.", 443), True),
        ("example.com", ("https", "notexample.com", 443), False),
        (".example.com", ("https", "example.com", 443), True),
        ("*.example.com", ("https", "a.example.com", 443), True),
        ("example.com:8443", ("https", "example.com", 443), False),
        ("example.com:8443", ("https", "example.com", 8443), True),
        ("10.0.0.0/8 192.168.1.1", ("https", "10.1.2.3", 443), True),
        ("10.0.0.0/8", ("https", "11.1.2.3", 443), False),
        ("10.0.0.0/8", ("https", "name.example", 443), False),
        ("not/a-network, 127.0.0.1", ("http", "127.0.0.1", 80), True),
        ("[::1]:8080", ("http", "::1", 8080), True),
        ("[::1]", ("http", "::1", 1), True),
        ("::1", ("http", "::1", 1), True),
        ("::1", ("http", "::2", 1), False),
        ("host:notaport", ("http", "host", 1), False),
        (" , ,", ("http", "host", 1), False),
        ("*.", ("http", "host", 1), False),
    ],
)
def test_no_proxy_matching(no_proxy: str, origin: tuple[str, str, int], direct: bool) -> None:
    assert NoProxy(no_proxy).matches(origin[1], origin[2]) is direct
    routes = network({"HTTPS_PROXY": "p:1", "HTTP_PROXY": "p:1", "NO_PROXY": no_proxy})
    assert (routes.proxy(origin) is None) is direct


def test_which_variable_is_used() -> None:
    both = {"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:1", "http_proxy": "h:2"}
    routes = network(both)
    assert routes.proxy(("https", "h", 443)).host == "lower"  # lower case first, as curl
    assert routes.proxy(("https", "h", 443)).named == "the proxy from https_proxy"
    assert routes.proxy(("http", "h", 80)).port == 2  # "host:port": http:// assumed
    assert network({"HTTPS_PROXY": "  "}).proxy(("https", "h", 443)) is None  # empty: unset
    # In a CGI script HTTP_PROXY may come from a request header (httpoxy): ignored there.
    cgi = {"HTTP_PROXY": "http://evil:1", "REQUEST_METHOD": "GET"}
    assert network(cgi).proxy(("http", "h", 80)) is None
    assert network({**cgi, "http_proxy": "http://ok:1"}).proxy(("http", "h", 80)).host == "ok"
    assert network({"HTTPS_PROXY": "http://p:1"}, proxy=False).proxy(("https", "h", 443)) is None
    explicit = network({"NO_PROXY": "*"}, proxy="http://spec:3")
    assert explicit.proxy(("http", "h", 80)).host == "spec"  # every scheme, NO_PROXY ignored
    assert (
        client_network(core.Spec(name="s", command="x"), None, both).proxy(("https", "h", 1))
        is None
    )


def test_a_proxy_shows_no_credential() -> None:
    proxy = Proxy(f"http://{PROXY_USER}:{PROXY_PASSWORD}@[::1]:3128", "the proxy from HTTPS_PROXY")
    assert repr(proxy) == "<Proxy [::1]:3128 with credentials (the proxy from HTTPS_PROXY)>"
    assert proxy.authorization == b"Basic YWxpY2U6cHIweHktcGE1NQ=="
    encoded = Proxy("http://us%40er:p%3Ass@p", "the spec's proxy")
    assert (encoded.port, encoded.authorization) == (80, b"Basic dXNAZXI6cDpzcw==")
    assert repr(encoded) == "<Proxy p:80 with credentials (the spec's proxy)>"
    assert repr(Proxy("http://p:1", "the proxy from https_proxy")) == (
        "<Proxy p:1 (the proxy from https_proxy)>"
    )


def tunnel(**proxy: str) -> Tunnel:
    return Tunnel(Proxy(proxy.get("url", "http://p:1"), "the proxy from HTTPS_PROXY"), "::1", 443)


def test_the_connect_request_carries_nothing_but_host_and_proxy_credentials() -> None:
    assert tunnel().request == b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n"
    with_credentials = tunnel(url="http://a:b@p:1").request
    assert with_credentials.endswith(b"Proxy-Authorization: Basic YTpi\r\n\r\n")


@pytest.mark.parametrize(
    ("reads", "outcome"),
    [
        ([b"HTTP/1.1 200 Connection established\r\n\r\n"], True),
        ([b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", b"\r\n"], True),
        ([b"HTTP/1.1 2"], False),
        ([b""], "closed the connection before opening the tunnel"),
        ([b"SSH-2.0-OpenSSH\r\n\r\n"], "did not answer the CONNECT in HTTP/1.1"),
        ([b"HTTP/1.1 200 OK\r\n\r\nhello"], "sent bytes nobody asked for"),
        ([b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 3\r\n\r\n"], "502 Bad Gateway"),
        ([b"HTTP/1.1 403 Forbidden\r\n\r\n"], "403 Forbidden; some proxies allow tunnels"),
        ([b"HTTP/1.1 599 Whatever\r\n\r\n"], "refused the tunnel: 599"),
    ],
)
def test_the_proxys_answer(reads: list[bytes], outcome: bool | str) -> None:
    handshake = tunnel()
    if isinstance(outcome, bool):
        results = [handshake.receive(data) for data in reads]
        assert results[-1] is outcome
        return
    with pytest.raises(ProxyError) as caught:
        for data in reads:
            handshake.receive(data)
    assert outcome in str(caught.value)
    assert reason(caught.value).startswith("ProxyError: the proxy from HTTPS_PROXY ")
