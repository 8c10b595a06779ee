"""OAuth from both drivers: the same scenarios on mcp_asyncio (asyncio and trio) and
mcp_sync, against tests/servers/http_oauth_server.py on 127.0.0.1. The browser step is an
``authorize=`` callback that follows the authorization server's 302 without a browser, or the
default step with ``open_browser`` replaced by a function that does the same and then calls the
client's redirect listener."""

from __future__ import annotations

import http.client
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import anyio.to_thread
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

import _mcp_io.oauth
import _mcp_io.redirect
import mcp_core as core
from mcp_core.driver import token_store_key
from tests.drivers.facade import Facade
from tests.servers.http_oauth_server import OAuthServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture
def server() -> Iterator[OAuthServer]:
    with OAuthServer() as started:
        yield started


def get(url: str) -> tuple[int, str | None]:
    """GET ``url`` without following a redirect: the status and the Location."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        response.read()
        return response.status, response.getheader("location")
    finally:
        connection.close()


def follow(url: str) -> str:
    """What a user's browser does at the authorization URL: the redirect it is sent to."""
    status, location = get(url)
    assert status == 302 and location is not None, status
    return location


def authorizer(driver: str, calls: list[str] | None = None) -> Callable[[str], Any]:
    """An ``authorize=`` callback for ``driver``: async on mcp_asyncio (the request runs in a
    worker thread, off the event loop), plain on mcp_sync."""

    def blocking(url: str) -> str:
        if calls is not None:
            calls.append(url)
        return follow(url)

    if driver == "sync":
        return blocking

    async def awaited(url: str) -> str:
        return await anyio.to_thread.run_sync(blocking, url)

    return awaited


def client(driver: str, server: OAuthServer, **fields: Any) -> Facade:
    fields.setdefault("authorize", authorizer(driver))
    return Facade(driver, url=server.url, **fields)


def record_of(store: core.TokenStore, server: OAuthServer) -> core.StoredAuthorization:
    record = store.load(token_store_key(server.url))
    assert record is not None
    return record


def flows(server: OAuthServer) -> list[str]:
    """The authorization server's log without discovery and challenges."""
    return [e for e in server.oauth_log if e not in ("metadata", "challenge")]


# --- the authorization code flow ------------------------------------------------------------


async def test_login_with_an_authorize_callback_then_a_call(
    driver: str, server: OAuthServer
) -> None:
    store = core.InMemoryTokenStore()
    calls: list[str] = []
    async with client(driver, server, token_store=store, authorize=authorizer(driver, calls)) as c:
        assert c.status().state == "ready"
        assert (await c.call_tool("echo", {"text": "hi"})).text == "hi"
    assert flows(server) == ["register", "authorize", "token:authorization_code"]
    [url] = calls
    assert url.startswith(f"{server.issuer}/authorize?") and "code_challenge_method=S256" in url
    record = record_of(store, server)
    assert record.issuer == server.issuer and record.client_id == "client-1"
    assert record.access_token in server.secrets and record.refresh_token in server.secrets
    assert record.expires_at is not None  # kept on the wall clock
    assert abs(record.expires_at - (time.time() + server.token_lifetime)) < 30


async def test_an_expired_token_is_refreshed_without_the_user(
    driver: str, server: OAuthServer
) -> None:
    store = core.InMemoryTokenStore()
    async with client(driver, server, token_store=store) as c:
        first = record_of(store, server)
        server.expire_access_tokens()  # the server's side of an expiry
        assert (await c.call_tool("echo", {"text": "again"})).text == "again"
    assert flows(server) == [
        "register",
        "authorize",
        "token:authorization_code",
        "token:refresh_token",
    ]
    second = record_of(store, server)
    assert second.access_token != first.access_token
    assert second.refresh_token != first.refresh_token  # rotated, and the new one kept


async def test_a_revoked_refresh_token_means_authorizing_again(
    driver: str, server: OAuthServer
) -> None:
    async with client(driver, server) as c:
        server.expire_access_tokens()
        server.revoke_refresh_tokens()
        assert (await c.call_tool("echo", {"text": "back"})).text == "back"
    assert flows(server) == [
        "register",
        "authorize",
        "token:authorization_code",
        "refused:refresh_token",
        "authorize",  # no second registration: the client is known
        "token:authorization_code",
    ]


async def test_a_stored_token_is_used_without_any_flow(driver: str, server: OAuthServer) -> None:
    store = core.InMemoryTokenStore()
    access, refresh = server.mint_token()
    record = core.StoredAuthorization(
        issuer=server.issuer,
        client_id="preset",
        access_token=access,
        refresh_token=refresh,
        expires_at=time.time() + 3600,
    )
    store.save(token_store_key(server.url), record)

    def never(url: str) -> str:
        raise AssertionError("no browser step with a stored token")

    async with client(driver, server, token_store=store, authorize=never) as c:
        assert (await c.call_tool("echo", {"text": "stored"})).text == "stored"
    assert server.oauth_log == []  # not even a challenge
    bearer = {r.header("authorization") for r in server.requests if r.path == server.path}
    assert bearer == {f"Bearer {access}"}


async def test_a_stored_expired_token_is_refreshed_before_asking_anyone(
    driver: str, server: OAuthServer
) -> None:
    store = core.InMemoryTokenStore()
    access, refresh = server.mint_token()
    server.expire_access_tokens()
    record = core.StoredAuthorization(
        issuer=server.issuer,
        client_id="preset",
        access_token=access,
        refresh_token=refresh,
        expires_at=time.time() - 60,  # expired a minute ago, on the wall clock
    )
    store.save(token_store_key(server.url), record)
    async with client(driver, server, token_store=store, interactive=False) as c:
        assert (await c.call_tool("echo", {"text": "fresh"})).text == "fresh"
    assert flows(server) == ["token:refresh_token"]
    assert record_of(store, server).access_token != access


# --- when a person is needed and cannot be asked ---------------------------------------------


async def test_interactive_false_at_connect_is_a_permanent_connect_failure(
    driver: str, server: OAuthServer
) -> None:
    with pytest.raises(core.ConnectFailed) as info:
        async with client(driver, server, interactive=False):
            pass
    assert info.value.permanent and "needs authorization" in str(info.value)
    assert "mcp-client login t" in str(info.value)
    assert "authorize" not in server.oauth_log


async def test_interactive_false_mid_session_gives_authorization_required(
    driver: str, server: OAuthServer
) -> None:
    store = core.InMemoryTokenStore()
    access, refresh = server.mint_token()
    record = core.StoredAuthorization(
        issuer=server.issuer, client_id="preset", access_token=access, refresh_token=refresh
    )
    store.save(token_store_key(server.url), record)
    async with client(driver, server, token_store=store, interactive=False) as c:
        assert (await c.call_tool("echo", {"text": "1"})).text == "1"
        server.expire_access_tokens()
        server.revoke_refresh_tokens()
        with pytest.raises(core.AuthorizationRequired) as info:
            await c.call_tool("echo", {"text": "2"})
        assert info.value.server == "t"
    assert "authorize" not in server.oauth_log


async def test_oauth_disabled_keeps_a_401_a_plain_connect_failure(
    driver: str, server: OAuthServer
) -> None:
    with pytest.raises(core.ConnectFailed) as info:
        async with client(driver, server, oauth={"enabled": False}):
            pass
    assert info.value.http_error is not None and info.value.http_error.status == 401
    assert flows(server) == [] and "metadata" not in server.oauth_log


# --- the browser step's failures -------------------------------------------------------------


async def test_a_raising_callback_abandons_the_login_naming_only_its_class(
    driver: str, server: OAuthServer
) -> None:
    def refuse(url: str) -> str:
        raise RuntimeError(f"cannot open {url}")

    with pytest.raises(core.ConnectFailed) as info:
        async with client(driver, server, authorize=refuse):
            pass
    text = str(info.value)
    assert "the authorize callback raised RuntimeError" in text
    assert "cannot open" not in text and "state=" not in text


async def test_a_callback_answer_that_is_not_a_redirect_abandons_the_login(
    driver: str, server: OAuthServer
) -> None:
    with pytest.raises(core.ConnectFailed, match="answer is not usable"):
        async with client(driver, server, authorize=lambda url: 42):
            pass


async def test_a_redirect_with_a_wrong_state_is_refused(driver: str, server: OAuthServer) -> None:
    def tampered(url: str) -> dict[str, str]:
        params = dict(parse_qsl(urlsplit(follow(url)).query))
        return {**params, "state": "forged"}

    with pytest.raises(core.ConnectFailed, match="state"):
        async with client(driver, server, authorize=tampered):
            pass
    assert "token:authorization_code" not in server.oauth_log


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The user's browser, headless: it follows the authorization server's redirect to the
    client's loopback listener, from a thread of its own, as a browser would."""
    opened: list[str] = []

    def open_browser(url: str) -> bool:
        opened.append(url)

        def visit() -> None:
            status, _ = get(follow(url))
            assert status == 200

        threading.Thread(target=visit, daemon=True).start()
        return True

    monkeypatch.setattr(_mcp_io.redirect, "open_browser", open_browser)
    return opened


async def test_the_default_browser_step_receives_the_redirect_on_its_listener(
    driver: str, server: OAuthServer, browser: list[str]
) -> None:
    async with Facade(driver, url=server.url) as c:
        assert (await c.call_tool("echo", {"text": "browser"})).text == "browser"
    [url] = browser
    assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in url
    assert flows(server) == ["register", "authorize", "token:authorization_code"]


async def test_no_browser_abandons_the_login(
    driver: str, server: OAuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_mcp_io.redirect, "open_browser", lambda url: False)
    with pytest.raises(core.ConnectFailed, match="no browser could be opened"):
        async with Facade(driver, url=server.url):
            pass


async def test_stop_ends_a_browser_step_still_waiting(
    driver: str, server: OAuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = threading.Event()
    redirect: list[str] = []

    def open_browser(url: str) -> bool:
        redirect.append(dict(parse_qsl(urlsplit(url).query))["redirect_uri"])
        opened.set()  # and the user never comes back
        return True

    monkeypatch.setattr(_mcp_io.redirect, "open_browser", open_browser)
    waited = threading.Event()
    wait_for_browser = _mcp_io.oauth.BrowserStep.wait_for_browser

    def wait_and_tell(*args: Any, **kwargs: Any) -> Any:
        try:
            return wait_for_browser(*args, **kwargs)
        finally:
            waited.set()

    monkeypatch.setattr(_mcp_io.oauth.BrowserStep, "wait_for_browser", wait_and_tell)
    c = Facade(driver, url=server.url, wait=False)
    await c.start()
    assert await anyio.to_thread.run_sync(opened.wait, 20), "the browser step never started"
    started = time.monotonic()
    await c.stop()  # (it cannot run inside a cancel scope of this task: the client's own)
    assert time.monotonic() - started < 5
    # The listener is closed within a slice of 0.1 s: its port refuses connections, and the
    # wait for the browser (in a thread of its own, or a worker thread) has returned.
    port = urlsplit(redirect[0]).port or 0

    def closed() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
        except ConnectionRefusedError:
            return waited.is_set()
        except ConnectionResetError:
            # The probe's handshake was done by the listener still open, which then closed
            # with the probe in its accept queue (a reset) before connect() read its result:
            # not closed yet when probed; the next probe is refused.
            pass
        return False

    with anyio.fail_after(5):
        while not closed():
            await anyio.sleep(0.05)


# --- client_credentials ----------------------------------------------------------------------


async def test_client_credentials_with_a_secret(driver: str) -> None:
    oauth = {"grant": "client_credentials", "client_id": "machine", "client_secret": "cs-m4chine"}
    with OAuthServer(clients={"machine": {"client_secret": "cs-m4chine"}}) as server:
        async with Facade(driver, url=server.url, oauth=oauth) as c:
            assert (await c.call_tool("echo", {"text": "m"})).text == "m"
            assert "cs-m4chine" not in repr(c.status()) and "cs-m4chine" not in repr(
                c.aio or c.sync
            )
    assert flows(server) == ["token:client_credentials"]


def _key_pair(kind: str, directory: Path) -> tuple[Path, bytes]:
    key = (
        rsa.generate_private_key(65537, 2048)
        if kind == "rsa"
        else ec.generate_private_key(ec.SECP256R1())
    )
    path = directory / f"{kind}.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return path, public


@pytest.mark.parametrize("kind", ["rsa", "ec"])
async def test_client_credentials_with_a_signed_assertion(
    driver: str, kind: str, tmp_path: Path
) -> None:
    key_file, public = _key_pair(kind, tmp_path)
    oauth = {"grant": "client_credentials", "client_id": "signer", "key_file": str(key_file)}
    with OAuthServer(clients={"signer": {"public_key": public}}) as server:
        async with Facade(driver, url=server.url, oauth=oauth) as c:
            assert (await c.call_tool("echo", {"text": "jwt"})).text == "jwt"
    assert flows(server) == ["token:client_credentials"]


async def test_a_signed_client_given_a_refresh_token_signs_a_new_grant_when_its_token_expires(
    driver: str, tmp_path: Path
) -> None:
    """A refresh would need a client assertion too: the refresh token (which RFC 6749 §4.4.3
    says should not come with client_credentials) is not kept, and a new grant is signed."""
    key_file, public = _key_pair("ec", tmp_path)
    oauth = {"grant": "client_credentials", "client_id": "signer", "key_file": str(key_file)}
    clients = {"signer": {"public_key": public}}
    with OAuthServer(clients=clients, refresh_client_credentials=True) as server:
        async with Facade(driver, url=server.url, oauth=oauth) as c:
            assert (await c.call_tool("echo", {"text": "one"})).text == "one"
            server.expire_access_tokens()
            assert (await c.call_tool("echo", {"text": "two"})).text == "two"
    assert flows(server) == ["token:client_credentials", "token:client_credentials"]


async def test_a_key_file_that_cannot_sign_abandons_the_flow(driver: str, tmp_path: Path) -> None:
    (tmp_path / "bad.pem").write_text("not a key")
    cases = {"missing.pem": "cannot be read", "bad.pem": "not an unencrypted PEM private key"}
    with OAuthServer() as server:
        for name, words in cases.items():
            oauth = {
                "grant": "client_credentials",
                "client_id": "signer",
                "key_file": str(tmp_path / name),
            }
            with pytest.raises(core.ConnectFailed, match=words):
                async with Facade(driver, url=server.url, oauth=oauth):
                    pass


# --- no secret anywhere ----------------------------------------------------------------------


async def test_no_secret_reaches_a_log_record_a_repr_or_a_recording(
    driver: str, server: OAuthServer, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    recording = tmp_path / "oauth.jsonl"
    store = core.InMemoryTokenStore()
    shown: list[str] = []
    c = client(driver, server, token_store=store, record=str(recording))
    async with c:
        await c.call_tool("echo", {"text": "1"})
        server.expire_access_tokens()  # a refresh
        await c.call_tool("echo", {"text": "2"})
        server.expire_access_tokens()
        server.revoke_refresh_tokens()  # a refused refresh, a second login
        await c.call_tool("echo", {"text": "3"})
        shown += [repr(c.aio or c.sync), repr(c.status()), str(c.status())]
    recorded = recording.read_text()
    assert "AuthorizationRedirected" in recorded and "AuthorizationPrepared" in recorded
    shown += [repr(store), repr(record_of(store, server)), recorded]
    for record in caplog.records:
        shown += [record.getMessage(), repr(record.args), str(record.exc_info)]
    secrets = server.secrets
    assert len(secrets) >= 8  # codes, tokens, states, verifiers
    leaks = sorted(s for s in secrets if any(s in text for text in shown))
    assert leaks == []


# --- a group passes the options on -----------------------------------------------------------


async def test_a_group_passes_the_oauth_options_to_every_client(driver: str) -> None:
    from tests.drivers.test_group import Group

    store = core.InMemoryTokenStore()
    with OAuthServer() as first, OAuthServer() as second:
        specs = {"one": {"url": first.url}, "two": {"url": second.url}}
        async with Group(driver, specs, token_store=store, authorize=authorizer(driver)) as g:
            assert (await g.call_tool("mcp__one__echo", {"text": "1"})).text == "1"
            assert (await g.call_tool("mcp__two__echo", {"text": "2"})).text == "2"
        # One store, a record per server; a group that may not ask reuses them.
        assert record_of(store, first).issuer == first.issuer
        assert record_of(store, second).issuer == second.issuer
        async with Group(driver, specs, token_store=store, interactive=False) as g:
            assert (await g.call_tool("mcp__two__echo", {"text": "3"})).text == "3"
        assert flows(second) == ["register", "authorize", "token:authorization_code"]
