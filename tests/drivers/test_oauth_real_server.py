"""OAuth from both drivers against a real authorization server.

The peer is tests/servers/py_auth_server.py: an MCP server protected by the official Python
SDK's own OAuth code (``mcp.server.auth``: its metadata, registration, authorize, token and
revocation handlers, and the bearer middleware in front of /mcp), on 127.0.0.1. Every scenario
runs on mcp_asyncio (asyncio and trio) and mcp_sync, on two wires of the stateful endpoint:

- ``stateful``: ``--mode stateful`` with ``era="legacy"``: sessions, SSE answers and the
  listening GET stream;
- ``stateful-auto``: the same endpoint with ``era="auto"``, which settles on 2026-07-28 with
  this SDK (no session, no GET stream);

and login, expiry and the revoked refresh token also on ``json`` (``--mode json``, legacy era:
sessions, JSON answers).

The browser step is an ``authorize=`` callback that GETs the authorization URL without
following the server's 302 and returns the Location (as tests/drivers/test_oauth_drivers.py
does). What the server did is read from its ``/__control/stats`` counters, counts only; its
knobs expire every access token, revoke every refresh token, shorten the access token lifetime
and withhold a scope from every grant (``withhold-scope``: the knob that makes step-up fail).
Nothing sleeps to wait: the one wait, for a legacy session's GET stream before tokens are
expired (else that GET may go out with a dead token and add a 401), polls the ``streams``
counter with a deadline.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import anyio.to_thread
import pytest

import mcp_core as core
import mcp_core._auth.oauth
from mcp_core._auth.flow import _EXPIRY_MARGIN, MAX_AUTHORIZATIONS
from mcp_core.driver import token_store_key
from tests.drivers.facade import Facade
from tests.drivers.test_oauth_drivers import follow
from tests.servers.http_peers import HttpPeer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

DEADLINE = 10.0  # seconds for one control request, and for a GET stream to be open
# wire -> (the server's --mode, the client's era)
WIRES = {
    "stateful": ("stateful", "legacy"),
    "stateful-auto": ("stateful", "auto"),
    "json": ("json", "legacy"),
}
ALL_WIRES = list(WIRES)


@pytest.fixture(params=["stateful", "stateful-auto"])
def wire(request: pytest.FixtureRequest) -> str:
    return str(request.param)



# --- the server and its knobs ----------------------------------------------------------------


class AuthServer:
    """A started py_auth_server: the MCP endpoint's URL, its issuer, its /__control/ knobs,
    and the era its clients are to speak."""

    def __init__(self, peer: HttpPeer, era: str) -> None:
        self.peer = peer
        self.url = peer.url
        self.issuer = peer.url.removesuffix("/mcp")
        self.era = era

    def _control(self, name: str, body: dict[str, Any] | None = None) -> Any:
        request = urllib.request.Request(f"{self.issuer}/__control/{name}")
        if name != "stats":
            request.data = json.dumps(body or {}).encode()
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=DEADLINE) as response:
            return json.load(response)

    async def control(self, name: str, body: dict[str, Any] | None = None) -> Any:
        return await anyio.to_thread.run_sync(self._control, name, body)

    async def stats(self) -> dict[str, int]:
        counts: dict[str, int] = await self.control("stats")
        return counts

    async def expire_access_tokens(self) -> int:
        return int((await self.control("expire-access-tokens"))["expired"])

    async def revoke_refresh_tokens(self) -> int:
        return int((await self.control("revoke-refresh-tokens"))["revoked"])

    async def access_token_lifetime(self, seconds: float) -> None:
        await self.control("access-token-lifetime", {"seconds": seconds})

    async def withhold_scope(self, scope: str) -> None:
        await self.control("withhold-scope", {"scope": scope})

    @property
    def streams(self) -> int:
        """The GET streams a session of this wire opens: one per legacy session."""
        return 1 if self.era == "legacy" else 0

    async def settled(self, sessions: int = 1) -> dict[str, int]:
        """The counters once the GET streams of ``sessions`` legacy sessions are open (polled
        with a deadline; none to wait for on the modern wire)."""
        with anyio.fail_after(DEADLINE):
            while (stats := await self.stats())["streams"] < sessions * self.streams:
                await anyio.sleep(0.02)
        return stats


@pytest.fixture
def start(py_auth_server: Callable[..., HttpPeer]) -> Callable[[str], AuthServer]:
    def started(wire: str) -> AuthServer:
        mode, era = WIRES[wire]
        return AuthServer(py_auth_server("--mode", mode), era)

    return started


@pytest.fixture
def server(start: Callable[[str], AuthServer], wire: str) -> AuthServer:
    return start(wire)


def changed(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The counters that moved, by how much."""
    return {k: after[k] - before[k] for k in after if after[k] != before[k]}


# --- the browser step, headless --------------------------------------------------------------


@dataclass
class Browser:
    """The ``authorize=`` callback, and what it saw: each authorization request's query and
    each redirect's parameters."""

    requests: list[dict[str, str]] = field(default_factory=list)
    redirects: list[dict[str, str]] = field(default_factory=list)

    def step(self, url: str) -> str:
        self.requests.append(dict(parse_qsl(urlsplit(url).query)))
        location = follow(url)  # the 302, not followed: what a browser would be sent to
        self.redirects.append(dict(parse_qsl(urlsplit(location).query)))
        return location

    def callback(self, driver: str) -> Callable[[str], Any]:
        """Async on mcp_asyncio (the request runs in a worker thread), plain on mcp_sync."""
        if driver == "sync":
            return self.step

        async def awaited(url: str) -> str:
            return await anyio.to_thread.run_sync(self.step, url)

        return awaited


def never(url: str) -> str:
    raise AssertionError("no browser step expected here")


def client(driver: str, server: AuthServer, browser: Browser, **fields: Any) -> Facade:
    fields.setdefault("authorize", browser.callback(driver))
    return Facade(driver, url=server.url, era=server.era, **fields)


def record_of(store: core.TokenStore, server: AuthServer) -> core.StoredAuthorization:
    record = store.load(token_store_key(server.url))
    assert record is not None
    return record


def whoami(result: core.CallToolResult) -> dict[str, Any]:
    identity: dict[str, Any] = json.loads(result.text)
    return identity


# --- login ------------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", ALL_WIRES)
async def test_login_then_echo_and_whoami(driver: str, server: AuthServer) -> None:
    browser = Browser()
    store = core.InMemoryTokenStore()
    async with client(driver, server, browser, token_store=store) as c:
        assert c.status().state == "ready"
        assert (await c.call_tool("echo", {"text": "hi"})).text == "hi"
        me = whoami(await c.call_tool("whoami"))
        stats = await server.settled()
    # One 401 (the first request, without a token), then dynamic registration, one
    # authorization and one code exchange; nothing else.
    assert changed(dict.fromkeys(stats, 0), stats) == {
        "unauthorized": 1,
        "registrations": 1,
        "authorizations": 1,
        "code_exchanges": 1,
        "access_tokens_issued": 1,
    } | ({"streams": 1} if server.streams else {})
    [asked] = browser.requests
    assert asked["response_type"] == "code"
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
    assert asked["resource"] == server.url  # RFC 8707: the resource metadata's own name
    assert asked["scope"] == "user"  # the protected resource metadata's scopes_supported
    [redirect] = browser.redirects
    assert asked["state"] and redirect["state"] == asked["state"]
    assert redirect["iss"] == server.issuer  # RFC 9207, checked by the client
    record = record_of(store, server)
    assert record.issuer == server.issuer and record.client_id == asked["client_id"]
    assert record.client_secret and record.refresh_token and record.scope == "user"
    assert me == {"client_id": record.client_id, "subject": "test-user", "scopes": ["user"]}


# --- expiry and refresh -----------------------------------------------------------------------


@pytest.mark.parametrize("wire", ALL_WIRES)
async def test_an_expired_token_is_refreshed_once(driver: str, server: AuthServer) -> None:
    store = core.InMemoryTokenStore()
    async with client(driver, server, Browser(), token_store=store) as c:
        first = record_of(store, server)
        before = await server.settled()
        assert await server.expire_access_tokens() == 1
        assert (await c.call_tool("echo", {"text": "again"})).text == "again"
        after = await server.stats()
        second = record_of(store, server)
    # The call's 401, one refresh, the call sent again: no new authorization.
    assert changed(before, after) == {"unauthorized": 1, "refreshes": 1, "access_tokens_issued": 1}
    assert second.access_token != first.access_token
    assert second.refresh_token != first.refresh_token  # rotated, and the new one kept


async def test_a_token_about_to_expire_is_refreshed_before_it_is_sent(
    driver: str, server: AuthServer
) -> None:
    async with client(driver, server, Browser()) as c:
        await server.settled()
        # Tokens from now on live less than the client's margin, so it refreshes before it
        # sends one rather than let the server refuse it (the server-side lifetime only has to
        # outlast one loopback round trip). The first refresh follows a 401: the token in hand
        # was issued for an hour, and the server expires it now.
        await server.access_token_lifetime(_EXPIRY_MARGIN / 2)
        await server.expire_access_tokens()
        assert (await c.call_tool("echo", {"text": "1"})).text == "1"
        before = await server.stats()
        assert (await c.call_tool("echo", {"text": "2"})).text == "2"
        after = await server.stats()
    assert changed(before, after) == {"refreshes": 1, "access_tokens_issued": 1}  # no 401


# --- a revoked refresh token ------------------------------------------------------------------


@pytest.mark.parametrize("wire", ALL_WIRES)
async def test_a_revoked_refresh_token_means_authorizing_again(
    driver: str, server: AuthServer
) -> None:
    browser = Browser()
    async with client(driver, server, browser) as c:
        before = await server.settled()
        assert await server.revoke_refresh_tokens() == 1
        assert await server.expire_access_tokens() == 1
        assert (await c.call_tool("echo", {"text": "back"})).text == "back"
        after = await server.stats()
    # The 401, the refused refresh, a second authorization (no second registration: the
    # client is known) and its code exchange.
    assert changed(before, after) == {
        "unauthorized": 1,
        "refresh_refused": 1,
        "authorizations": 1,
        "code_exchanges": 1,
        "access_tokens_issued": 1,
    }
    first, second = browser.requests
    assert second["client_id"] == first["client_id"] and second["state"] != first["state"]


# --- step-up ----------------------------------------------------------------------------------


async def test_step_up_on_insufficient_scope(driver: str, server: AuthServer) -> None:
    browser = Browser()
    store = core.InMemoryTokenStore()
    async with client(driver, server, browser, token_store=store) as c:
        assert (await c.call_tool("echo", {"text": "plain"})).text == "plain"
        before = await server.settled()
        assert (await c.call_tool("admin_echo", {"text": "x"})).text == "admin: x"
        after = await server.stats()
        assert whoami(await c.call_tool("whoami"))["scopes"] == ["admin", "user"]
        assert (await c.call_tool("admin_echo", {"text": "y"})).text == "admin: y"
        assert await server.stats() == after  # the new token is enough from now on
    # One 403, one more authorization with the union of scopes, its code exchange.
    assert changed(before, after) == {
        "insufficient_scope": 1,
        "authorizations": 1,
        "code_exchanges": 1,
        "access_tokens_issued": 1,
    }
    first, second = browser.requests
    assert first["scope"] == "user" and second["scope"] == "user admin"
    assert second["client_id"] == first["client_id"]
    assert record_of(store, server).scope == "user admin"


async def test_a_server_that_keeps_refusing_ends_the_step_ups_with_authorization_failed(
    driver: str, server: AuthServer
) -> None:
    assert MAX_AUTHORIZATIONS <= 3  # the conformance suite's auth/scope-retry-limit
    browser = Browser()
    async with client(driver, server, browser) as c:
        before = await server.settled()
        await server.withhold_scope("admin")  # every grant from now on lacks it
        with pytest.raises(core.AuthorizationFailed) as info:
            await c.call_tool("admin_echo", {"text": "x"})
        after = await server.stats()
        # Only that call failed: the token in hand is still good for what it was granted.
        assert (await c.call_tool("echo", {"text": "still"})).text == "still"
        assert c.status().state == "ready"
    assert info.value.error_code == "insufficient_scope"
    # The login was answered, so the step-ups start a new run: a 403 before each of them and
    # one after the last; no authorization beyond the limit.
    assert changed(before, after) == {
        "insufficient_scope": MAX_AUTHORIZATIONS + 1,
        "authorizations": MAX_AUTHORIZATIONS,
        "code_exchanges": MAX_AUTHORIZATIONS,
        "access_tokens_issued": MAX_AUTHORIZATIONS,
    }
    assert [r["scope"] for r in browser.requests] == ["user"] + ["user admin"] * MAX_AUTHORIZATIONS


# --- a stored token ---------------------------------------------------------------------------


async def test_a_stored_token_lets_a_second_client_in_without_any_flow(
    driver: str, server: AuthServer
) -> None:
    store = core.InMemoryTokenStore()
    async with client(driver, server, Browser(), token_store=store) as c:
        assert (await c.call_tool("echo", {"text": "first"})).text == "first"
        await server.settled()
    record = record_of(store, server)
    before = await server.stats()
    async with client(driver, server, Browser(), token_store=store, authorize=never) as c:
        assert (await c.call_tool("echo", {"text": "second"})).text == "second"
        assert whoami(await c.call_tool("whoami"))["client_id"] == record.client_id
        after = await server.settled(sessions=2)
    # No 401, no registration, no authorization, no refresh: only the new session's GET.
    assert changed(before, after) == ({"streams": 1} if server.streams else {})
    assert record_of(store, server) == record


# --- no secret anywhere -----------------------------------------------------------------------


class KeepingStore(core.InMemoryTokenStore):
    """An in-memory store that also keeps every record it is given, to know each token."""

    __slots__ = ("saved",)

    def __init__(self) -> None:
        super().__init__()
        self.saved: list[core.StoredAuthorization] = []

    def save(self, server: str, authorization: core.StoredAuthorization) -> None:
        self.saved.append(authorization)
        super().save(server, authorization)


@pytest.fixture
def verifiers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every PKCE code verifier the core makes (one never leaves the client otherwise but in
    the token request)."""
    made: list[str] = []
    begin = mcp_core._auth.oauth.begin_authorization

    def recording(*args: Any, **kw: Any) -> mcp_core._auth.oauth.PendingAuthorization:
        pending = begin(*args, **kw)
        made.append(pending.code_verifier)
        return pending

    monkeypatch.setattr(mcp_core._auth.oauth, "begin_authorization", recording)
    yield made


async def test_no_secret_in_a_log_record_a_repr_or_a_status(
    driver: str, server: AuthServer, caplog: pytest.LogCaptureFixture, verifiers: list[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    browser = Browser()
    store = KeepingStore()
    shown: list[str] = []
    c = client(driver, server, browser, token_store=store)

    def look() -> None:
        shown.extend([repr(c.aio or c.sync), repr(c.status()), str(c.status()), repr(store)])

    async with c:
        look()
        await server.settled()
        await server.expire_access_tokens()  # a refresh
        await c.call_tool("echo", {"text": "1"})
        look()
        await server.revoke_refresh_tokens()  # a refused refresh, a second login
        await server.expire_access_tokens()
        await c.call_tool("echo", {"text": "2"})
        look()
        await c.call_tool("admin_echo", {"text": "3"})  # a step-up
        look()
        await server.withhold_scope("admin")
        await server.revoke_refresh_tokens()
        await server.expire_access_tokens()
        with pytest.raises(core.AuthorizationFailed) as info:
            await c.call_tool("admin_echo", {"text": "4"})  # a login, step-ups to the limit
        shown.extend([str(info.value), repr(info.value)])
        look()
    look()
    shown += [repr(record) for record in store.saved]
    for record in caplog.records:
        shown += [record.getMessage(), repr(record.args), str(record.exc_info)]
    # Not vacuous: every logger of ours was open at DEBUG (a flow that goes well logs nothing).
    for name in ("mcp_client.t", "mcp_client.tokens", "mcp_asyncio._client", "mcp_sync._client"):
        assert logging.getLogger(name).isEnabledFor(logging.DEBUG)
    secrets: set[str] = set(verifiers)
    for saved in store.saved:
        secrets |= {saved.access_token or "", saved.refresh_token or "", saved.client_secret or ""}
    for redirect in browser.redirects:
        secrets |= {redirect["code"], redirect["state"]}
    secrets.discard("")
    # 6 authorizations (the login; again after a revocation; a step-up; again after a
    # revocation, then 2 step-ups to the limit of 3 for that request), a code, a state and a
    # verifier each; 7 token pairs (theirs and a refresh's); the client secret. Each refused
    # refresh also saved the record without its dead tokens (the registration kept).
    assert len(browser.redirects) == len(verifiers) == 6
    with_tokens = [saved for saved in store.saved if saved.access_token is not None]
    emptied = [saved for saved in store.saved if saved.access_token is saved.refresh_token is None]
    assert (len(with_tokens), len(emptied), len(store.saved)) == (7, 2, 9)
    assert len(secrets) == 3 * 6 + 2 * 7 + 1
    leaks = sorted(s for s in secrets if any(s in text for text in shown))
    assert leaks == []
