"""The authorization layer (OAuth 2.1) of the SessionMachine: a scripted authorization server
answers the layer's own requests, with a fake clock and no socket."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

import mcp_core as core
from mcp_core._auth.layer import MAX_AUTHORIZATIONS
from mcp_core.driver import token_store_key
from mcp_core.replay import Recorder, encode_action, encode_event
from mcp_core.states import AuthPhase
from tests.core.harness import TEXT_RESULT, HttpHarness

SERVER = "https://mcp.example.com/mcp"
ISSUER = "https://auth.example.com"
PRM_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
AS_URL = "https://auth.example.com/.well-known/oauth-authorization-server"
REDIRECT = "http://127.0.0.1:5555/callback"
ENTROPY = bytes(range(48))
CHALLENGE = (("WWW-Authenticate", f'Bearer resource_metadata="{PRM_URL}", scope="read"'),)
PRM = {"resource": SERVER, "authorization_servers": [ISSUER], "scopes_supported": ["read"]}
AS_METADATA = {
    "issuer": ISSUER,
    "authorization_endpoint": f"{ISSUER}/authorize",
    "token_endpoint": f"{ISSUER}/token",
    "registration_endpoint": f"{ISSUER}/register",
    "code_challenge_methods_supported": ["S256"],
    "scopes_supported": ["read", "write", "offline_access"],
    "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
    "authorization_response_iss_parameter_supported": True,
}
TOKEN = {
    "access_token": "tok-1",
    "token_type": "Bearer",
    "expires_in": 3600,
    "refresh_token": "r-1",
}


class AuthHarness(HttpHarness):
    def __init__(
        self,
        oauth: core.OAuthSettings | None = None,
        stored: core.StoredAuthorization | None = None,
        **fields: Any,
    ) -> None:
        fields.setdefault("era", "legacy")
        super().__init__(**fields)
        self.machine = core.SessionMachine(
            self.spec, oauth=oauth or core.OAuthSettings(), authorization=stored
        )
        self.history: list[core.Action] = []  # every action, take() or not

    def feed(self, event: core.Event) -> list[core.Action]:
        out = super().feed(event)
        self.history.extend(out)
        return out

    def recorded(self) -> list[str]:
        """From now on, every event fed is recorded (as a driver records, credentials left
        out): the recording's lines."""
        lines: list[str] = []
        recorder = Recorder(self.spec, lines.append)
        feed = self.feed

        def recorded(event: core.Event) -> list[core.Action]:
            recorder.record(event, secret=self.machine.is_secret(event))
            return feed(event)

        self.feed = recorded  # type: ignore[method-assign]
        return lines

    def requests(self) -> list[core.StartHttp]:
        """The session's own requests (to the MCP server), not the authorization layer's."""
        return [r for r in super().requests() if r.url == SERVER]

    def fetch(self, url: str) -> core.StartHttp:
        """The last request of the authorization layer to ``url`` since the last take()."""
        found = [a for a in self.actions if isinstance(a, core.StartHttp) and a.url == url]
        assert found, f"no request to {url} in {self.actions}"
        return found[-1]

    @property
    def auth_phase(self) -> AuthPhase:
        layer: Any = self.machine._transport  # the layer's phase: no public view of it yet
        phase: AuthPhase = layer.phase
        return phase

    def form(self, request: core.StartHttp) -> dict[str, str]:
        assert request.body is not None
        return {k: v[0] for k, v in parse_qs(request.body.decode()).items()}

    def discover(self, prm: dict[str, Any] = PRM, server: dict[str, Any] = AS_METADATA) -> None:
        self.respond(self.fetch(PRM_URL), 200, prm)
        self.respond(self.fetch(AS_URL), 200, server)

    def prepared(self) -> None:
        assert self.of(core.PrepareAuthorization)
        self.feed(core.AuthorizationPrepared(now=self.now, redirect_uri=REDIRECT, entropy=ENTROPY))

    def authorize_url(self) -> dict[str, str]:
        [authorize] = self.of(core.Authorize)
        return {k: v[0] for k, v in parse_qs(urlsplit(authorize.url).query).items()}

    def redirected(self, **extra: str) -> None:
        query = self.authorize_url()
        params = {"code": "code-1", "state": query["state"], "iss": ISSUER, **extra}
        self.feed(core.AuthorizationRedirected(now=self.now, params=params))

    def token(self, answer: dict[str, Any] = TOKEN, status: int = 200) -> core.StartHttp:
        request = self.fetch(f"{ISSUER}/token")
        self.respond(request, status, answer)
        return request

    def refused_at_connect(self, **metadata: Any) -> None:
        """Connect; the server refuses initialize (401); discovery finds the metadata
        (``server=`` replaces the authorization server's)."""
        self.feed(core.Connect(now=self.now))
        self.respond(self.request("initialize"), 401, headers=CHALLENGE)
        self.discover(**metadata)

    def registered(self, client_id: str = "c") -> None:
        """The browser step is prepared and the registration answered."""
        self.prepared()
        self.respond(self.fetch(f"{ISSUER}/register"), 201, {"client_id": client_id})

    def login(self, session: str | None = None) -> None:
        """From Connect to a ready session, through the whole authorization code flow."""
        self.refused_at_connect()
        self.registered("client-1")
        self.redirected()
        self.token()
        init = self.request("initialize")
        assert self.header(init, "Authorization") == "Bearer tok-1"
        headers = (("Mcp-Session-Id", session),) if session else ()
        result = {"protocolVersion": "2025-11-25", "capabilities": {}}
        self.result_for(init, result, headers=headers)
        self.respond(self.request("notifications/initialized"), 202)
        if session:
            self.sse(self.request(http="GET"), end=False)  # ready once the GET is answered
        assert self.machine.state == "ready"
        self.take()


def test_the_whole_authorization_code_flow_on_a_401_to_initialize() -> None:
    h = AuthHarness(init_timeout=30.0)
    h.feed(core.Connect(now=0.0))
    init = h.request("initialize")
    assert h.header(init, "Authorization") is None
    waiter = h.await_ready()
    h.take()
    h.respond(init, 401, headers=CHALLENGE)
    assert h.auth_phase is AuthPhase.DISCOVERING_RESOURCE
    # The metadata request's own deadline (10 s, within the handshake's 30 s) comes first.
    assert h.machine.next_deadline() == core.AUTH_REQUEST_TIMEOUT
    h.discover()
    prm, server = h.fetch(PRM_URL), h.fetch(AS_URL)
    assert (prm.method, server.method, prm.secret, server.secret) == ("GET", "GET", False, False)
    h.prepared()
    # Registration too has its deadline; the handshake's still runs.
    assert h.machine.next_deadline() == h.now + core.AUTH_REQUEST_TIMEOUT
    register = h.fetch(f"{ISSUER}/register")
    assert register.secret
    document = json.loads(register.body or b"")
    assert document["redirect_uris"] == [REDIRECT] and document["application_type"] == "native"
    assert document["token_endpoint_auth_method"] == "none"
    h.respond(register, 201, {"client_id": "client-1"})
    # The user is at the browser: the handshake's deadline (30 s) waits for them, the
    # caller's (60 s) does not.
    assert h.machine.next_deadline() == 60.0
    query = h.authorize_url()
    assert query["client_id"] == "client-1" and query["redirect_uri"] == REDIRECT
    assert query["code_challenge_method"] == "S256" and query["resource"] == SERVER
    assert query["scope"] == "read offline_access"  # the challenge's, plus refresh
    h.redirected()
    token = h.fetch(f"{ISSUER}/token")
    form = h.form(token)
    assert token.secret and form["grant_type"] == "authorization_code"
    assert form["code"] == "code-1" and form["resource"] == SERVER
    assert form["client_id"] == "client-1" and "code_verifier" in form
    h.token()
    [save] = h.of(core.SaveAuthorization)
    assert save.server == SERVER and save.authorization.access_token == "tok-1"
    assert save.authorization.client_id == "client-1" and save.authorization.issuer == ISSUER
    assert save.authorization.expires_at == h.now + 3600
    again = h.request("initialize")
    assert h.header(again, "Authorization") == "Bearer tok-1"
    assert h.body(again)["id"] == h.body(init)["id"]  # the same request, sent again once
    assert h.machine.next_deadline() == h.now + h.spec.init_timeout
    h.result_for(again, {"protocolVersion": "2025-11-25", "capabilities": {}})
    note = h.request("notifications/initialized")
    assert h.header(note, "Authorization") == "Bearer tok-1"
    h.respond(note, 202)
    assert h.result(waiter).state == "ready"
    assert h.auth_phase is AuthPhase.AUTHORIZED


def test_work_waits_for_the_token_and_a_refresh_comes_before_a_new_authorization() -> None:
    h = AuthHarness(concurrency="stateless")
    h.login()
    first = h.call("echo")
    call = h.request("tools/call")
    h.take()
    h.respond(call, 401, headers=CHALLENGE)  # the token expired on the server's side
    second = h.call("echo")  # sent while refreshing: held
    assert not [r for r in h.requests() if r.body and b"tools/call" in r.body]
    refresh = h.fetch(f"{ISSUER}/token")
    form = h.form(refresh)
    assert (form["grant_type"], form["refresh_token"], form["resource"]) == (
        "refresh_token",
        "r-1",
        SERVER,
    )
    h.respond(refresh, 200, {"access_token": "tok-2", "token_type": "bearer"})
    calls = [r for r in h.requests() if r.body and b"tools/call" in r.body]
    assert len(calls) == 2 and all(h.header(r, "Authorization") == "Bearer tok-2" for r in calls)
    for request in calls:
        h.result_for(request, TEXT_RESULT)
    assert h.result(first).text == h.result(second).text == "hi"
    assert h.of(core.SaveAuthorization)[-1].authorization.refresh_token == "r-1"  # kept


def test_a_refused_refresh_token_means_authorizing_again() -> None:
    h = AuthHarness()
    h.login()
    t = h.call("echo")
    call = h.request("tools/call")
    h.take()
    h.respond(call, 401, headers=CHALLENGE)
    h.token({"error": "invalid_grant"}, status=400)
    h.prepared()  # no registration this time: the client is known
    assert not [a for a in h.actions if isinstance(a, core.StartHttp) and "register" in a.url]
    h.redirected()
    h.token({"access_token": "tok-3", "token_type": "Bearer"})
    h.result_for(h.request("tools/call"), TEXT_RESULT)
    assert h.result(t).text == "hi"


def test_a_fresh_token_refused_again_fails_the_call() -> None:
    h = AuthHarness()
    h.login()
    t = h.call("echo")
    call = h.request("tools/call")
    h.take()
    h.respond(call, 401, headers=CHALLENGE)
    h.token({"access_token": "tok-2", "token_type": "Bearer"})  # the refresh
    h.respond(h.request("tools/call"), 401, headers=CHALLENGE)
    error = h.error(t)
    assert isinstance(error, core.AuthorizationFailed) and "fresh token" in str(error)
    # Refused for good: later work fails at once, with the same reason.
    t2 = h.call("echo")
    assert isinstance(h.error(t2), core.AuthorizationFailed)
    assert h.auth_phase is AuthPhase.REFUSED


def test_step_up_asks_for_the_union_of_scopes_at_most_three_times() -> None:
    h = AuthHarness()
    h.login()
    t = h.call("echo")
    scopes = []
    for _ in range(3):
        call = h.request("tools/call")
        h.take()
        h.respond(
            call,
            403,
            headers=(("WWW-Authenticate", 'Bearer error="insufficient_scope", scope="write"'),),
        )
        h.prepared()
        scopes.append(h.authorize_url()["scope"])
        h.redirected()
        h.token({"access_token": "tok-up", "token_type": "Bearer", "scope": "read write"})
    assert scopes[0] == "read write offline_access"
    h.respond(
        h.request("tools/call"),
        403,
        headers=(("WWW-Authenticate", 'Bearer error="insufficient_scope", scope="admin"'),),
    )
    error = h.error(t)
    assert isinstance(error, core.AuthorizationFailed)
    assert error.error_code == "insufficient_scope"


def test_a_403_that_is_not_about_scope_is_the_transports_and_a_401_to_a_get_too() -> None:
    h = AuthHarness()
    h.login()
    t = h.call("echo")
    h.respond(h.request("tools/call"), 403)
    assert isinstance(h.error(t), core.HttpError)
    h.take()
    # The session's listening GET (opened once initialized was answered) has no message to
    # send again: a 401 there is the transport's business.
    h2 = AuthHarness()
    h2.refused_at_connect()
    h2.registered()
    h2.redirected()
    h2.token()
    h2.result_for(
        h2.request("initialize"),
        {"protocolVersion": "2025-11-25", "capabilities": {}},
        headers=(("Mcp-Session-Id", "s1"),),
    )
    h2.respond(h2.request("notifications/initialized"), 202)
    listen = h2.request(http="GET")
    h2.respond(listen, 401, headers=CHALLENGE)
    assert h2.auth_phase is AuthPhase.AUTHORIZED and h2.machine.state == "ready"


def test_without_a_person_the_flow_asks_for_a_login() -> None:
    h = AuthHarness(oauth=core.OAuthSettings(interactive=False), name="notes")
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover()
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert "mcp-client login notes" in str(error)
    assert isinstance(error.cause, core.AuthorizationRequired) and error.cause.server == "notes"
    assert h.machine.status(h.now).retry_in is None


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ("abandoned", core.AuthorizationRequired),
        ("bad state", core.AuthorizationFailed),
        ("other issuer", core.AuthorizationFailed),
        ("denied", core.AuthorizationFailed),
    ],
)
def test_a_browser_step_that_fails_fails_the_handshake_for_good(
    outcome: str, expected: type[core.McpError]
) -> None:
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover()
    h.registered()
    if outcome == "abandoned":
        h.feed(core.AuthorizationAbandoned(now=0.0, reason="no browser"))
    elif outcome == "bad state":
        h.redirected(state="forged")
    elif outcome == "other issuer":
        h.redirected(iss="https://evil.example.com")
    else:
        h.redirected(error="access_denied", code="")
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    cause = "needs authorization" if expected is core.AuthorizationRequired else "failed"
    assert f"authorization {cause}" in str(error) or cause in str(error)
    for secret in ("code-1", h.authorize_url()["state"]):
        assert secret not in str(error)
    # Answers that come when no step waits for them change nothing.
    h.feed(core.AuthorizationPrepared(now=0.0, redirect_uri=REDIRECT, entropy=ENTROPY))
    h.feed(core.AuthorizationRedirected(now=0.0, params={}))
    h.feed(core.AuthorizationAbandoned(now=0.0, reason="late"))
    h.feed(core.AssertionSigned(now=0.0, assertion="jwt"))
    assert h.auth_phase is AuthPhase.REFUSED


def test_client_credentials_with_a_secret_and_with_a_signed_assertion() -> None:
    secret = AuthHarness(
        oauth=core.OAuthSettings(client_id="svc", client_secret="s3", grant="client_credentials")
    )
    secret.refused_at_connect()
    token = secret.fetch(f"{ISSUER}/token")
    form = secret.form(token)
    assert form["grant_type"] == "client_credentials" and "client_secret" not in form
    basic = secret.header(token, "Authorization") or ""
    assert base64.b64decode(basic.split()[1]) == b"svc:s3"
    assert not secret.of(core.PrepareAuthorization)

    jwt = AuthHarness(
        oauth=core.OAuthSettings(client_id="svc", grant="client_credentials", private_key=True)
    )
    jwt.feed(core.Connect(now=0.0))
    jwt.respond(jwt.request("initialize"), 401, headers=CHALLENGE)
    jwt.discover(
        server={**AS_METADATA, "token_endpoint_auth_methods_supported": ["private_key_jwt"]}
    )
    [sign] = jwt.of(core.SignAssertion)
    assert (sign.client_id, sign.audience) == ("svc", ISSUER)
    jwt.feed(core.AssertionSigned(now=0.0, assertion="a.b.c"))
    form = jwt.form(jwt.fetch(f"{ISSUER}/token"))
    assert form["client_assertion"] == "a.b.c"
    jwt.token({"access_token": "t", "token_type": "Bearer"})
    assert jwt.header(jwt.request("initialize"), "Authorization") == "Bearer t"


def test_client_credentials_registers_without_a_redirect_and_cimd_needs_no_registration() -> None:
    h = AuthHarness(oauth=core.OAuthSettings(grant="client_credentials"))
    h.refused_at_connect()
    register = h.fetch(f"{ISSUER}/register")
    assert "redirect_uris" not in json.loads(register.body or b"")
    h.respond(register, 201, {"client_id": "machine", "client_secret": "x"})
    assert h.form(h.fetch(f"{ISSUER}/token"))["grant_type"] == "client_credentials"

    url = "https://app.example.com/client.json"
    cimd = AuthHarness(oauth=core.OAuthSettings(client_metadata_url=url))
    cimd.refused_at_connect(server={**AS_METADATA, "client_id_metadata_document_supported": True})
    cimd.prepared()
    assert cimd.authorize_url()["client_id"] == url


def test_discovery_falls_back_through_the_well_known_urls() -> None:
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("initialize"), 401)  # no challenge parameters at all
    h.respond(h.fetch(PRM_URL), 404)
    h.respond(h.fetch("https://mcp.example.com/.well-known/oauth-protected-resource"), 200, PRM)
    h.respond(h.fetch(AS_URL), 404)
    h.respond(h.fetch(f"{ISSUER}/.well-known/openid-configuration"), 200, AS_METADATA)
    assert h.of(core.PrepareAuthorization)


@pytest.mark.parametrize("failure", ["none found", "mismatch"])
def test_a_discovery_that_fails_refuses_with_a_reason(failure: str) -> None:
    h = AuthHarness(max_message_bytes=4096)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    prm = h.fetch(PRM_URL)
    if failure == "none found":  # the resource names its server, which has no metadata
        h.respond(prm, 200, PRM)
        h.respond(h.fetch(AS_URL), 404)
        h.respond(h.fetch(f"{ISSUER}/.well-known/openid-configuration"), 404)
    else:
        h.respond(prm, 200, {**PRM, "resource": "https://other.example.com/mcp"})
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and "authorization failed" in str(error)
    assert error.permanent and isinstance(error.cause, core.AuthorizationFailed)


def test_a_stored_token_is_used_at_once_and_refreshed_when_expired() -> None:
    stored = core.StoredAuthorization(
        issuer=ISSUER, client_id="c", access_token="old", refresh_token="r", expires_at=100.0
    )
    h = AuthHarness(stored=stored)
    h.feed(core.Connect(now=0.0))
    init = h.request("initialize")
    assert h.header(init, "Authorization") == "Bearer old"
    h.result_for(init, {"protocolVersion": "2025-11-25", "capabilities": {}})
    h.respond(h.request("notifications/initialized"), 202)
    h.take()
    h.now = 200.0  # expired; no metadata known yet: sent anyway, the 401 starts discovery
    t = h.call("echo")
    h.respond(h.request("tools/call"), 401, headers=CHALLENGE)
    h.discover()
    assert h.form(h.fetch(f"{ISSUER}/token"))["grant_type"] == "refresh_token"
    h.token({"access_token": "new", "token_type": "Bearer", "expires_in": 60})
    h.result_for(h.request("tools/call"), TEXT_RESULT)
    assert h.result(t).text == "hi"
    h.take()
    h.now += 50  # within the expiry margin: refreshed before sending
    t2 = h.call("echo")
    assert h.form(h.fetch(f"{ISSUER}/token"))["refresh_token"] == "r"
    h.token({"access_token": "newer", "token_type": "Bearer"})
    call = h.request("tools/call")
    assert h.header(call, "Authorization") == "Bearer newer"
    h.result_for(call, TEXT_RESULT)
    assert h.result(t2).text == "hi"


def test_a_new_issuer_means_registering_again() -> None:
    stored = core.StoredAuthorization(issuer="https://old.example.com", client_id="old-client")
    h = AuthHarness(stored=stored)
    h.refused_at_connect()
    h.prepared()
    assert h.fetch(f"{ISSUER}/register")


def test_held_requests_follow_the_caller() -> None:
    h = AuthHarness(call_timeout=5.0, concurrency="stateless")
    h.login()
    timed_out, cancelled = h.call("a"), h.call("b")
    calls = [r for r in h.requests() if r.body and b"tools/call" in r.body]
    h.take()
    for call in calls:
        h.respond(call, 401, headers=CHALLENGE)
    h.feed(core.CancelCall(now=h.now, ticket=cancelled))
    h.advance(5.0)
    assert isinstance(h.error(timed_out), core.RequestTimeout)
    # Neither was processed by the server: no notifications/cancelled for them.
    assert not [r for r in h.requests() if r.body and b"notifications/cancelled" in r.body]
    h.token({"access_token": "t2", "token_type": "Bearer"})  # the refresh ends
    assert not [r for r in h.requests() if r.body and b"tools/call" in r.body]


def test_secrets_stay_out_of_recordings_and_reprs() -> None:
    h = AuthHarness()
    lines = h.recorded()
    h.login()
    assert any(isinstance(a, core.SaveAuthorization) for a in h.history)
    actions = json.dumps([encode_action(a) for a in h.history])
    text = "".join(lines) + actions + repr(h.machine) + repr(h.machine.status(h.now))
    text += repr(core.OAuthSettings(client_id="c", client_secret="hunter2"))
    for secret in ("tok-1", "r-1", "code-1", "hunter2", base64.b64encode(ENTROPY).decode()):
        assert secret not in text
    assert not h.machine.is_secret(core.HttpResponseEnded(now=0.0, stream=1))
    prepared = core.AuthorizationPrepared(now=0.0, redirect_uri=REDIRECT, entropy=ENTROPY)
    assert encode_event(prepared)["entropy"] == "\x00" * 48  # zeros: it still decodes


def test_misuse_is_refused() -> None:
    with pytest.raises(ValueError, match="url servers"):
        core.SessionMachine(core.Spec(name="s", command="srv"), oauth=core.OAuthSettings())
    spec = core.Spec(name="s", url=SERVER, headers={"Authorization": "Bearer x"})
    with pytest.raises(ValueError, match="Authorization header"):
        core.SessionMachine(spec, oauth=core.OAuthSettings())
    plain = HttpHarness(era="legacy")
    plain.connect_http_legacy()
    with pytest.raises(core.UnexpectedEvent, match="no OAuth here"):
        plain.feed(core.AuthorizationAbandoned(now=0.0, reason="x"))
    with pytest.raises(ValueError, match="48 random bytes"):
        core.AuthorizationPrepared(now=0.0, redirect_uri=REDIRECT, entropy=b"short")


def test_edges_of_holding_and_refusing() -> None:
    # A 401 to the initialized POST: the handshake waits for its answer when sent again.
    h = AuthHarness(concurrency="stateless")
    h.feed(core.Connect(now=0.0))
    h.result_for(
        h.request("initialize"),
        {"protocolVersion": "2025-11-25", "capabilities": {}},
        headers=(("Mcp-Session-Id", "s1"),),
    )
    h.respond(h.request("notifications/initialized"), 401, headers=CHALLENGE)
    h.discover()
    h.registered()
    h.redirected()
    h.token()
    assert h.machine.state == "initializing"
    h.respond(h.request("notifications/initialized"), 202)
    h.respond(h.request(http="GET"), 405)  # the listening GET is answered: ready
    assert h.machine.state == "ready"
    # Two calls out; one refused starts a flow that fails; the other, refused later, fails
    # at once with the same reason; a call not held is cancelled on the wire as usual.
    h.take()
    normal, first, second = h.call("n"), h.call("a"), h.call("b")
    calls = [r for r in h.requests() if r.body and b"tools/call" in r.body]
    h.take()
    h.respond(calls[1], 401, headers=CHALLENGE)
    # Cancelled during the flow: its stream closes now, its notification waits for a token
    # (and goes nowhere once the flow fails); a late 401 on the closed stream is dropped.
    h.feed(core.CancelCall(now=h.now, ticket=normal))
    assert core.AbortHttp(stream=calls[0].stream) in h.actions
    assert not [r for r in h.requests() if r.body and b"notifications/cancelled" in r.body]
    h.respond(calls[0], 401, headers=CHALLENGE)
    h.token({"error": "invalid_client"}, status=401)  # the refresh: refused, so a new code
    h.prepared()
    h.feed(core.AuthorizationAbandoned(now=h.now, reason="the user closed the tab"))
    assert isinstance(h.error(first), core.AuthorizationRequired)
    h.respond(calls[2], 401, headers=CHALLENGE)
    assert isinstance(h.error(second), core.AuthorizationRequired)


def test_a_failed_code_exchange_and_a_refused_initialized_post() -> None:
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover()
    h.registered()
    h.redirected()
    h.token({"error": "invalid_grant", "error_description": "code reused"}, status=400)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and "invalid_grant" in str(error)

    quiet = AuthHarness(oauth=core.OAuthSettings(interactive=False))
    quiet.feed(core.Connect(now=0.0))
    ready = quiet.await_ready()
    quiet.result_for(
        quiet.request("initialize"), {"protocolVersion": "2025-11-25", "capabilities": {}}
    )
    quiet.respond(quiet.request("notifications/initialized"), 401, headers=CHALLENGE)
    quiet.discover()
    assert isinstance(quiet.error(ready), core.ConnectFailed)


def test_step_up_before_any_metadata_discovers_first() -> None:
    stored = core.StoredAuthorization(issuer=ISSUER, client_id="c", access_token="t")
    h = AuthHarness(stored=stored)
    h.feed(core.Connect(now=0.0))
    h.result_for(h.request("initialize"), {"protocolVersion": "2025-11-25", "capabilities": {}})
    h.respond(h.request("notifications/initialized"), 202)
    h.call("echo")
    call = h.request("tools/call")
    h.take()
    h.respond(
        call, 403, headers=(("WWW-Authenticate", 'Bearer error="insufficient_scope", scope="w"'),)
    )
    assert h.fetch("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
    assert h.auth_phase is AuthPhase.DISCOVERING_RESOURCE


def test_the_transports_other_calls_pass_through() -> None:
    # era 'auto': the probe's deadline forgets it on the transport.
    h = AuthHarness(era="auto", probe_timeout=1.0, init_timeout=2.0)
    h.feed(core.Connect(now=0.0))
    probe = h.request("server/discover")
    h.take()
    h.advance(1.0)
    assert core.AbortHttp(stream=probe.stream) in h.actions
    # A known HTTP+SSE server: the endpoint GET goes out through the layer.
    spec = core.Spec(name="t", url=SERVER)
    sse = core.SessionMachine(spec, oauth=core.OAuthSettings(), known_era="sse")
    actions = sse.handle(core.Connect(now=0.0))
    assert [a.method for a in actions if isinstance(a, core.StartHttp)] == ["GET"]
    # Close: the session's DELETE goes out with the token.
    done = AuthHarness()
    done.login(session="s1")
    done.close()
    delete = done.request(http="DELETE")
    assert done.header(delete, "Authorization") == "Bearer tok-1"


def test_at_most_three_authorizations_for_one_request_counting_the_first() -> None:
    # auth/scope-retry-limit: a 401, then 403 insufficient_scope for ever.
    h = AuthHarness(era="modern")
    h.feed(core.Connect(now=0.0))
    t = h.call("echo")
    scope_please = (("WWW-Authenticate", 'Bearer error="insufficient_scope", scope="admin"'),)
    call = h.request("tools/call")
    h.take()
    h.respond(call, 401, headers=CHALLENGE)
    h.discover()
    h.registered()
    for attempt in (1, 2, 3):
        assert len(h.of(core.Authorize)) == 1, attempt
        h.redirected()
        h.token({"access_token": f"t{attempt}", "token_type": "Bearer"})
        call = h.request("tools/call")
        h.take()
        h.respond(call, 403, headers=scope_please)
        if attempt < 3:
            h.prepared()
    assert not h.of(core.PrepareAuthorization)
    error = h.error(t)
    assert isinstance(error, core.AuthorizationFailed) and "3 authorizations" in str(error)


def test_a_refused_step_up_fails_that_request_only_and_the_token_serves_the_rest() -> None:
    # A tool whose scope the server never grants (it grants less than asked, RFC 6749 §3.3)
    # must not end the session: the token in hand is still good for the other tools.
    # tests/drivers/test_oauth_real_server.py shows it against the SDK's authorization server.
    h = AuthHarness()
    h.login()
    t = h.call("admin_echo")
    scope_please = (("WWW-Authenticate", 'Bearer error="insufficient_scope", scope="admin"'),)
    for attempt in range(1, MAX_AUTHORIZATIONS + 1):
        call = h.request("tools/call")
        h.take()
        h.respond(call, 403, headers=scope_please)
        h.prepared()
        h.redirected()
        h.token({"access_token": f"up-{attempt}", "token_type": "Bearer", "scope": "read"})
    call = h.request("tools/call")
    h.take()
    h.respond(call, 403, headers=scope_please)
    assert not h.of(core.PrepareAuthorization)  # no authorization beyond the limit
    error = h.error(t)
    assert isinstance(error, core.AuthorizationFailed) and error.error_code == "insufficient_scope"
    assert h.auth_phase is AuthPhase.AUTHORIZED and h.machine.state == "ready"
    t2 = h.call("echo")
    echo = h.request("tools/call")
    assert h.header(echo, "Authorization") == f"Bearer up-{MAX_AUTHORIZATIONS}"
    h.result_for(echo, TEXT_RESULT)
    assert h.result(t2).text == "hi"


def test_the_token_goes_to_the_resource_only() -> None:
    # The metadata, registration and token requests never carry the bearer token, and every
    # request to the MCP server does once there is one (MCP 2025-11-25 basic/authorization
    # "Access Token Usage").
    h = AuthHarness()
    h.login()
    h.call("echo")
    requests = [a for a in h.history if isinstance(a, core.StartHttp)]
    bearer = [r for r in requests if h.header(r, "Authorization") == "Bearer tok-1"]
    assert bearer and all(r.url == SERVER for r in bearer)
    others = [r for r in requests if r.url != SERVER]
    assert others and all(h.header(r, "Authorization") in (None,) for r in others)


def test_a_request_sent_again_and_taken_is_forgotten() -> None:
    h = AuthHarness()
    h.login()
    t = h.call("echo")
    call = h.request("tools/call")
    h.take()
    h.respond(call, 401, headers=CHALLENGE)
    h.token({"access_token": "tok-2", "token_type": "Bearer"})
    layer: Any = h.machine._transport
    assert len(layer._held.resent) == 1  # sent again: a second 401 would fail it
    h.result_for(h.request("tools/call"), TEXT_RESULT)
    assert h.result(t).text == "hi" and not layer._held.resent


def test_settings_come_from_the_spec_and_logins_are_kept_under_one_key() -> None:
    off = [
        core.Spec(name="s", command="srv"),
        core.Spec(name="s", url=SERVER, headers={"Authorization": "Bearer x"}),
        core.Spec(name="s", url=SERVER, oauth={"enabled": False}),
    ]
    assert [core.OAuthSettings.from_spec(spec) for spec in off] == [None, None, None]
    spec = core.Spec(
        name="s",
        url=SERVER,
        oauth={
            "client_id": "c",
            "client_secret": "s3",
            "grant": "client_credentials",
            "key_file": "/k.pem",
            "scope": "read",
        },
    )
    settings = core.OAuthSettings.from_spec(spec, interactive=False)
    assert settings == core.OAuthSettings(
        client_id="c",
        client_secret="s3",
        grant="client_credentials",
        private_key=True,
        scope="read",
        interactive=False,
    )
    assert core.OAuthSettings.from_spec(core.Spec(name="s", url=SERVER)) == core.OAuthSettings()
    # The key a driver loads a login with is the one the machine saves it under
    # (test_the_whole_authorization_code_flow_on_a_401_to_initialize: save.server == SERVER).
    assert token_store_key("https://MCP.example.com:443/mcp") == SERVER
