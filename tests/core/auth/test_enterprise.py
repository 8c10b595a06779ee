"""Enterprise-managed authorization (SEP-990, ID-JAG): the user's ID token exchanged at the
identity provider for an ID-JAG (RFC 8693), the ID-JAG exchanged at the authorization server
for a token (RFC 7523), the client authenticated there as its metadata allows. No browser, no
authorization endpoint; a refusal at either leg is final and names the leg; both legs run
again when the token expires, once for all waiting requests."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import mcp_core as core
from mcp_core.replay import encode_action
from mcp_core.states import AuthPhase
from tests.core.auth.test_authorization import (
    AS_METADATA,
    CHALLENGE,
    ISSUER,
    PRM,
    PRM_URL,
    SERVER,
    AuthHarness,
)
from tests.core.harness import TEXT_RESULT

EXTENSION = "io.modelcontextprotocol/enterprise-managed-authorization"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
IDP_TOKEN = "https://idp.example.com/oauth2/token"
AS_TOKEN = f"{ISSUER}/token"
# As the conformance scenario's authorization server: jwt-bearer only, client_secret_basic only.
EMA_METADATA = {
    **{k: v for k, v in AS_METADATA.items() if k != "registration_endpoint"},
    "grant_types_supported": [JWT_BEARER],
    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
}
ID_TOKEN = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.aWQtdG9rZW4tc2lnbmF0dXJl"
ID_JAG = "eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.eyJzdWIiOiJhbGljZSJ9.aWQtamFnLXNpZw"
AS_SECRET = "as-client-secret-value"
IDP_SECRET = "idp-client-secret-value"
OAUTH: dict[str, Any] = {
    "grant": "enterprise",
    "client_id": "mcp-client",
    "client_secret": AS_SECRET,
    "idp_token_endpoint": IDP_TOKEN,
    "idp_client_id": "idp-client",
    "id_token_file": "/run/secrets/id-token",
}
ID_JAG_ANSWER = {
    "access_token": ID_JAG,
    "issued_token_type": ID_JAG_TYPE,
    "token_type": "N_A",
    "expires_in": 300,
}


def harness(
    oauth: dict[str, Any] | None = None,
    stored: core.StoredAuthorization | None = None,
    **fields: Any,
) -> AuthHarness:
    h = AuthHarness(stored=stored, **fields)
    mapping = {"name": "t", "url": SERVER, "era": "legacy", **fields, "oauth": oauth or OAUTH}
    h.spec = core.Spec.from_mapping(mapping)
    settings = core.OAuthSettings.from_spec(h.spec)
    h.machine = core.SessionMachine(h.spec, oauth=settings, authorization=stored)
    return h


def to_the_id_token(
    h: AuthHarness, server: dict[str, Any] = EMA_METADATA, fail_fast: bool = False
) -> int:
    """Connect, the 401, discovery: the machine asks for the user's ID token."""
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready(fail_fast=fail_fast)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover(server=server)
    return waiter


def to_the_id_jag(h: AuthHarness, server: dict[str, Any] = EMA_METADATA) -> int:
    waiter = to_the_id_token(h, server)
    h.feed(core.AssertionSigned(now=h.now, assertion=ID_TOKEN))
    return waiter


def basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def ready(h: AuthHarness) -> None:
    h.result_for(h.request("initialize"), {"protocolVersion": "2025-11-25", "capabilities": {}})
    h.respond(h.request("notifications/initialized"), 202)
    assert h.machine.state == "ready"
    h.take()


def test_both_legs_then_a_bearer_token_with_no_browser_and_no_registration() -> None:
    h = harness()
    waiter = to_the_id_token(h)
    [obtain] = h.of(core.ObtainAssertion)
    assert obtain.issuer == ISSUER and h.auth_phase is AuthPhase.SIGNING
    h.feed(core.AssertionSigned(now=h.now, assertion=ID_TOKEN))
    assert h.auth_phase is AuthPhase.EXCHANGING_IDENTITY
    leg1 = h.fetch(IDP_TOKEN)
    assert leg1.secret and h.header(leg1, "Authorization") is None  # no IdP secret configured
    assert h.form(leg1) == {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG_TYPE,
        "audience": ISSUER,
        "resource": SERVER,
        "scope": "read",  # the challenge's
        "subject_token": ID_TOKEN,
        "subject_token_type": ID_TOKEN_TYPE,
        "client_id": "idp-client",
    }
    h.respond(leg1, 200, ID_JAG_ANSWER)
    assert h.auth_phase is AuthPhase.EXCHANGING
    leg2 = h.fetch(AS_TOKEN)
    assert leg2.secret
    assert h.header(leg2, "Authorization") == basic("mcp-client", AS_SECRET)
    assert h.form(leg2) == {
        "grant_type": JWT_BEARER,
        "assertion": ID_JAG,
        "scope": "read",
        "resource": SERVER,
        "client_id": "mcp-client",
    }
    h.token({"access_token": "ema-token", "token_type": "Bearer", "expires_in": 3600})
    init = h.request("initialize")
    assert h.header(init, "Authorization") == "Bearer ema-token"
    # The extension is declared where this era declares extensions.
    assert h.body(init)["params"]["capabilities"]["extensions"] == {EXTENSION: {}}
    ready(h)
    h.result(waiter)  # ready, no error
    every = [a for a in h.history if isinstance(a, core.StartHttp)]
    assert not [a for a in every if "register" in a.url or "authorize" in a.url]
    assert not [a for a in h.history if isinstance(a, core.PrepareAuthorization | core.Authorize)]
    [save] = [a for a in h.history if isinstance(a, core.SaveAuthorization)]
    assert save.authorization.client_id == "mcp-client"


def test_the_idp_secret_authenticates_leg_one_and_post_is_used_where_basic_is_not_listed() -> None:
    h = harness({**OAUTH, "idp_client_secret": IDP_SECRET, "scope": "notes"})
    to_the_id_jag(
        h, {**EMA_METADATA, "token_endpoint_auth_methods_supported": ["client_secret_post"]}
    )
    leg1 = h.fetch(IDP_TOKEN)
    assert h.header(leg1, "Authorization") == basic("idp-client", IDP_SECRET)
    assert h.form(leg1)["scope"] == "notes"  # configured: replaces the selection
    h.respond(leg1, 200, ID_JAG_ANSWER)
    leg2 = h.fetch(AS_TOKEN)
    assert h.header(leg2, "Authorization") is None
    assert h.form(leg2)["client_secret"] == AS_SECRET and h.form(leg2)["scope"] == "notes"


def test_no_scope_known_leaves_it_out_of_both_legs() -> None:
    h = harness()
    h.feed(core.Connect(now=h.now))
    h.respond(h.request("initialize"), 401, headers=(("WWW-Authenticate", "Bearer"),))
    h.respond(h.fetch(PRM_URL), 200, {k: v for k, v in PRM.items() if k != "scopes_supported"})
    h.respond(h.fetch(f"{ISSUER}/.well-known/oauth-authorization-server"), 200, EMA_METADATA)
    h.feed(core.AssertionSigned(now=h.now, assertion=ID_TOKEN))
    assert "scope" not in h.form(h.fetch(IDP_TOKEN))
    h.respond(h.fetch(IDP_TOKEN), 200, ID_JAG_ANSWER)
    assert "scope" not in h.form(h.fetch(AS_TOKEN))


@pytest.mark.parametrize("code", ["invalid_grant", "invalid_target", "unauthorized_client"])
def test_a_refusal_at_the_identity_provider_is_final_and_says_so(code: str) -> None:
    h = harness()
    waiter = to_the_id_jag(h)
    h.respond(h.fetch(IDP_TOKEN), 400, {"error": code, "error_description": "no"})
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    cause = error.cause
    assert isinstance(cause, core.AuthorizationFailed) and cause.error_code == code
    assert cause.detail.startswith("the identity provider")
    assert ID_TOKEN not in str(error) and ID_TOKEN not in repr(error)
    assert h.auth_phase is AuthPhase.REFUSED
    assert not [a for a in h.history if isinstance(a, core.StartHttp) and a.url == AS_TOKEN]
    h.take()
    h.advance(60.0)
    assert not h.of(core.StartHttp) and not h.of(core.ObtainAssertion)


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({"issued_token_type": ID_JAG_TYPE, "token_type": "N_A"}, "has no access_token"),
        ({**ID_JAG_ANSWER, "issued_token_type": "urn:x"}, "not an ID-JAG"),
    ],
)
def test_an_identity_provider_answer_without_an_id_jag_is_refused(
    answer: dict[str, Any], words: str
) -> None:
    h = harness()
    waiter = to_the_id_jag(h)
    h.respond(h.fetch(IDP_TOKEN), 200, answer)
    cause = h.error(waiter).cause
    assert isinstance(cause, core.AuthorizationFailed) and words in cause.detail
    assert cause.detail.startswith("the identity provider")


@pytest.mark.parametrize("code", ["invalid_grant", "invalid_client"])
def test_a_refusal_at_the_authorization_server_is_final_and_says_so(code: str) -> None:
    h = harness()
    waiter = to_the_id_jag(h)
    h.respond(h.fetch(IDP_TOKEN), 200, ID_JAG_ANSWER)
    h.token({"error": code}, status=400 if code == "invalid_grant" else 401)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    cause = error.cause
    assert isinstance(cause, core.AuthorizationFailed) and cause.error_code == code
    assert cause.detail.startswith("the authorization server refused the ID-JAG")
    text = str(error) + repr(error)
    assert ID_JAG not in text and ID_TOKEN not in text and AS_SECRET not in text
    assert h.auth_phase is AuthPhase.REFUSED


def test_an_identity_provider_that_fails_for_now_is_retried_at_the_next_attempt() -> None:
    h = harness()
    waiter = to_the_id_token(h, fail_fast=True)
    h.feed(core.AssertionSigned(now=h.now, assertion=ID_TOKEN))
    failed_at = h.now
    h.respond(h.fetch(IDP_TOKEN), 503, b"down", headers=(("Retry-After", "3"),))
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and not error.permanent
    cause = error.cause
    assert isinstance(cause, core.AuthorizationUnavailable)
    assert cause.step == "identity provider token exchange"
    assert cause.origin == "https://idp.example.com" and cause.retry_after == 3.0
    assert h.auth_phase is AuthPhase.UNAUTHORIZED
    # The attempt is retried, no sooner than Retry-After, and both legs run again.
    h.take()
    h.fire_due()
    assert h.now - failed_at >= 3.0
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover(server=EMA_METADATA)
    assert h.of(core.ObtainAssertion)


def test_an_identity_provider_over_plain_http_elsewhere_is_refused_before_the_token_goes() -> None:
    h = harness({**OAUTH, "idp_token_endpoint": "http://idp.example.com/token"})
    waiter = to_the_id_jag(h)
    cause = h.error(waiter).cause
    assert isinstance(cause, core.AuthorizationFailed) and "plain http" in cause.detail
    assert not [a for a in h.history if isinstance(a, core.StartHttp) and "idp" in a.url]


def test_a_server_that_does_not_list_jwt_bearer_is_refused_before_the_id_token_is_read() -> None:
    h = harness()
    waiter = to_the_id_token(h, {**EMA_METADATA, "grant_types_supported": ["authorization_code"]})
    assert not h.of(core.ObtainAssertion)
    cause = h.error(waiter).cause
    assert isinstance(cause, core.AuthorizationFailed)
    assert cause.error_code == "unsupported_grant_type"


def test_an_id_token_the_driver_cannot_obtain_refuses_naming_the_reason() -> None:
    h = harness()
    waiter = to_the_id_token(h)
    h.feed(core.AuthorizationAbandoned(now=h.now, reason="the ID token file /t is empty"))
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert "the user's ID token could not be obtained: the ID token file /t is empty" in str(error)
    assert not [a for a in h.history if isinstance(a, core.StartHttp) and a.url == IDP_TOKEN]


def test_an_expired_token_runs_both_legs_again_once_for_all_waiting_requests() -> None:
    h = harness(concurrency="stateless")
    to_the_id_jag(h)
    h.respond(h.fetch(IDP_TOKEN), 200, ID_JAG_ANSWER)
    h.token({"access_token": "first", "token_type": "Bearer", "expires_in": 60})
    ready(h)
    h.now += 40  # within the expiry margin: both legs again before sending
    calls = [h.call("echo"), h.call("echo"), h.call("echo")]
    assert len(h.of(core.ObtainAssertion)) == 1  # one for all three
    assert not h.requests()
    h.feed(core.AssertionSigned(now=h.now, assertion="fresh.id.token"))
    assert h.form(h.fetch(IDP_TOKEN))["subject_token"] == "fresh.id.token"
    h.respond(h.fetch(IDP_TOKEN), 200, {**ID_JAG_ANSWER, "access_token": "second.id.jag"})
    assert h.form(h.fetch(AS_TOKEN))["assertion"] == "second.id.jag"
    h.token({"access_token": "second", "token_type": "Bearer", "expires_in": 60})
    for request in h.requests():
        assert h.header(request, "Authorization") == "Bearer second"
        h.result_for(request, TEXT_RESULT)
    assert [h.result(t).text for t in calls] == ["hi"] * 3
    history = [a for a in h.history if isinstance(a, core.StartHttp)]
    assert len([a for a in history if a.url == IDP_TOKEN]) == 2
    assert len([a for a in history if a.url == AS_TOKEN]) == 2


def test_a_stored_refresh_token_is_used_first_and_when_refused_both_legs_run() -> None:
    stored = core.StoredAuthorization(
        issuer=ISSUER, client_id="mcp-client", client_secret=AS_SECRET, refresh_token="rt-1"
    )
    h = harness(stored=stored)
    waiter = to_the_id_token(h)
    refresh = h.fetch(AS_TOKEN)
    assert h.form(refresh)["grant_type"] == "refresh_token"
    assert h.header(refresh, "Authorization") == basic("mcp-client", AS_SECRET)
    assert not h.of(core.ObtainAssertion)
    h.token({"error": "invalid_grant"}, status=400)
    assert h.of(core.ObtainAssertion)  # the refresh token is no good: both legs
    h.feed(core.AssertionSigned(now=h.now, assertion=ID_TOKEN))
    h.respond(h.fetch(IDP_TOKEN), 200, ID_JAG_ANSWER)
    h.token({"access_token": "t", "token_type": "Bearer"})
    ready(h)
    h.result(waiter)  # ready, no error


def test_secrets_never_reach_a_recording_a_repr_or_a_status() -> None:
    h = harness({**OAUTH, "idp_client_secret": IDP_SECRET})
    lines = h.recorded()
    to_the_id_jag(h)
    leg1 = h.fetch(IDP_TOKEN)
    h.respond(leg1, 200, ID_JAG_ANSWER)
    leg2 = h.fetch(AS_TOKEN)
    h.token({"access_token": "ema-token", "token_type": "Bearer"})
    actions = json.dumps([encode_action(a) for a in h.history])
    text = "".join(lines) + actions + repr(h.machine) + repr(h.machine.status(h.now))
    text += repr(h.history) + repr(h.spec) + str(h.spec.redacted())
    text += repr(core.OAuthSettings.from_spec(h.spec))
    for secret in (ID_TOKEN, ID_JAG, AS_SECRET, IDP_SECRET, "ema-token"):
        assert secret not in text, secret
    assert ID_TOKEN in (leg1.body or b"").decode() and ID_JAG in (leg2.body or b"").decode()


# --- the identity provider's token endpoint from its metadata (idp_issuer) ---------------

IDP_ISSUER = "https://idp.example.com"
IDP_RFC8414 = f"{IDP_ISSUER}/.well-known/oauth-authorization-server"
IDP_OIDC = f"{IDP_ISSUER}/.well-known/openid-configuration"
IDP_METADATA = {"issuer": IDP_ISSUER, "token_endpoint": IDP_TOKEN}
BY_ISSUER = {k: v for k, v in OAUTH.items() if k != "idp_token_endpoint"} | {
    "idp_issuer": IDP_ISSUER
}


def test_the_idp_token_endpoint_is_found_in_its_metadata_once() -> None:
    h = harness(BY_ISSUER, concurrency="stateless")
    to_the_id_jag(h)
    assert h.auth_phase is AuthPhase.DISCOVERING_IDENTITY_PROVIDER
    first = h.fetch(IDP_RFC8414)
    assert not first.secret and ID_TOKEN not in repr(first)
    h.respond(first, 404, b"")
    h.respond(h.fetch(IDP_OIDC), 200, IDP_METADATA)  # OpenID Connect Discovery, next
    assert h.auth_phase is AuthPhase.EXCHANGING_IDENTITY
    assert h.form(h.fetch(IDP_TOKEN))["subject_token"] == ID_TOKEN
    h.respond(h.fetch(IDP_TOKEN), 200, ID_JAG_ANSWER)
    h.token({"access_token": "first", "token_type": "Bearer", "expires_in": 60})
    ready(h)
    h.now += 40
    h.call("echo")
    h.feed(core.AssertionSigned(now=h.now, assertion=ID_TOKEN))
    assert h.auth_phase is AuthPhase.EXCHANGING_IDENTITY  # the endpoint is known: no discovery
    metadata = [a for a in h.history if isinstance(a, core.StartHttp) and "idp" in a.url]
    assert [a.url for a in metadata].count(IDP_RFC8414) == 1


@pytest.mark.parametrize(
    ("methods", "as_basic"),
    [
        (None, True),
        (["client_secret_basic", "client_secret_post"], True),
        (["client_secret_post"], False),
    ],
)
def test_the_idp_secret_goes_as_the_identity_providers_metadata_lists(
    methods: list[str] | None, as_basic: bool
) -> None:
    """Found by its issuer, the identity provider says how its clients authenticate (RFC 8414
    §2); without the list, ``client_secret_basic`` is its default."""
    h = harness({**BY_ISSUER, "idp_client_secret": IDP_SECRET})
    to_the_id_jag(h)
    listed = {} if methods is None else {"token_endpoint_auth_methods_supported": methods}
    h.respond(h.fetch(IDP_RFC8414), 200, {**IDP_METADATA, **listed})
    leg1 = h.fetch(IDP_TOKEN)
    form = h.form(leg1)
    if as_basic:
        assert h.header(leg1, "Authorization") == basic("idp-client", IDP_SECRET)
        assert "client_secret" not in form
    else:
        assert h.header(leg1, "Authorization") is None
        assert (form["client_id"], form["client_secret"]) == ("idp-client", IDP_SECRET)


def test_an_identity_provider_that_takes_no_method_the_client_has_refuses() -> None:
    h = harness(BY_ISSUER)  # no idp_client_secret
    waiter = to_the_id_jag(h)
    only = {"token_endpoint_auth_methods_supported": ["client_secret_basic"]}
    h.respond(h.fetch(IDP_RFC8414), 200, {**IDP_METADATA, **only})
    cause = h.error(waiter).cause
    assert isinstance(cause, core.AuthorizationFailed)
    assert "identity provider's token endpoint accepts client_secret_basic" in cause.detail
    assert "idp_client_secret" in cause.detail
    assert not [a for a in h.history if isinstance(a, core.StartHttp) and a.url == IDP_TOKEN]


@pytest.mark.parametrize(
    ("answers", "words"),
    [
        ([(200, {**IDP_METADATA, "issuer": "https://other.example.com"})], "not usable"),
        ([(404, None), (404, None)], "no identity provider metadata was found"),
    ],
)
def test_identity_provider_metadata_that_is_wrong_or_missing_refuses(
    answers: list[tuple[int, Any]], words: str
) -> None:
    h = harness(BY_ISSUER)
    waiter = to_the_id_jag(h)
    for url, (status, body) in zip((IDP_RFC8414, IDP_OIDC), answers, strict=False):
        h.respond(h.fetch(url), status, body)
    cause = h.error(waiter).cause
    assert isinstance(cause, core.AuthorizationFailed) and words in cause.detail
    assert not [a for a in h.history if isinstance(a, core.StartHttp) and a.url == IDP_TOKEN]


def test_identity_provider_metadata_that_fails_for_now_is_retried() -> None:
    h = harness(BY_ISSUER)
    waiter = to_the_id_token(h, fail_fast=True)
    h.feed(core.AssertionSigned(now=h.now, assertion=ID_TOKEN))
    h.respond(h.fetch(IDP_RFC8414), 503, b"")
    h.respond(h.fetch(IDP_OIDC), 404, b"")
    cause = h.error(waiter).cause
    assert isinstance(cause, core.AuthorizationUnavailable)
    assert cause.step == "identity provider metadata"


# --- configuration ---------------------------------------------------------------------------


def test_settings_come_from_the_spec() -> None:
    spec = core.Spec(name="s", url=SERVER, oauth={**OAUTH, "idp_client_secret": IDP_SECRET})
    assert core.OAuthSettings.from_spec(spec) == core.OAuthSettings(
        grant="enterprise",
        client_id="mcp-client",
        client_secret=AS_SECRET,
        idp_token_endpoint=IDP_TOKEN,
        idp_client_id="idp-client",
        idp_client_secret=IDP_SECRET,
    )


def without(key: str) -> dict[str, Any]:
    return {k: v for k, v in OAUTH.items() if k != key}


@pytest.mark.parametrize(
    ("oauth", "words"),
    [
        (
            {"id_token_file": "/t"},
            "oauth['id_token_file'] is set but the grant is not 'enterprise'",
        ),
        (
            {"grant": "jwt_bearer", "assertion_file": "/a", "idp_client_id": "i"},
            "oauth['idp_client_id'] is set but the grant is not 'enterprise'",
        ),
        (
            without("idp_token_endpoint"),
            "with neither oauth['idp_token_endpoint'] and oauth['idp_issuer']",
        ),
        (
            {**OAUTH, "idp_issuer": "https://idp.example.com"},
            "with both oauth['idp_token_endpoint'] and oauth['idp_issuer']",
        ),
        (
            without("idp_token_endpoint") | {"idp_issuer": "idp.example.com"},
            "oauth['idp_issuer'] is not an http(s) URL",
        ),
        (without("idp_client_id"), "oauth['idp_client_id'] is not set"),
        (without("client_secret") | {"client_id": None}, "oauth['client_id'] is not set"),
        ({**OAUTH, "idp_token_endpoint": "ftp://idp/token"}, "is not an http(s) URL"),
        ({**OAUTH, "idp_token_endpoint": "https:///token"}, "is not an http(s) URL"),
        ({**OAUTH, "idp_token_endpoint": "https://[::1/token"}, "is not an http(s) URL"),
        (
            {**OAUTH, "client_metadata_url": "https://c.example.com/c.json"},
            "'enterprise' with a client_metadata_url",
        ),
        ({**OAUTH, "assertion_file": "/a"}, "oauth['assertion_file'] is set"),
        ({**OAUTH, "idp_client_secret": ""}, "oauth['idp_client_secret'] must be a non-empty"),
    ],
)
def test_a_missing_or_contradictory_key_is_refused_naming_it(
    oauth: dict[str, Any], words: str
) -> None:
    with pytest.raises(core.InvalidSpec) as info:
        core.Spec(name="s", url=SERVER, oauth=oauth)
    assert words in str(info.value)
    assert AS_SECRET not in str(info.value)


def test_the_idp_secret_is_redacted_wherever_a_spec_is_shown() -> None:
    spec = core.Spec(name="s", url=SERVER, oauth={**OAUTH, "idp_client_secret": IDP_SECRET})
    assert IDP_SECRET not in repr(spec) and IDP_SECRET not in str(spec.redacted())
    assert spec.redacted()["oauth"]["idp_token_endpoint"] == IDP_TOKEN


@pytest.mark.parametrize(
    ("fields", "declared"),
    [
        ({}, {EXTENSION: {}}),
        ({"extensions": {EXTENSION: {"v": 1}}}, {EXTENSION: {"v": 1}}),  # the spec's own kept
        ({"extensions": {"com.example/x": {}}}, {"com.example/x": {}, EXTENSION: {}}),
    ],
)
def test_the_extension_is_declared_with_the_grant(
    fields: dict[str, Any], declared: dict[str, Any]
) -> None:
    h = harness(**fields)
    h.feed(core.Connect(now=h.now))
    assert h.body(h.request("initialize"))["params"]["capabilities"]["extensions"] == declared


def test_the_extension_is_not_declared_without_the_grant_or_with_oauth_off() -> None:
    for oauth in ({"grant": "client_credentials", "client_id": "c"}, {**OAUTH, "enabled": False}):
        spec = core.Spec(name="s", url=SERVER, era="legacy", oauth=oauth)
        machine = core.SessionMachine(spec)
        out = machine.handle(core.Connect(now=0.0))
        [init] = [a for a in out if isinstance(a, core.StartHttp)]
        assert "extensions" not in json.loads(init.body or b"")["params"]["capabilities"]
