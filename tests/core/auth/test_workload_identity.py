"""Workload identity federation (SEP-1933): the platform's JWT as an RFC 7523 jwt-bearer grant.
The machine asks the driver for the JWT (``ObtainAssertion``), presents it once per token
request with no client authentication, never retries or falls back after a refusal, and asks
for a fresh JWT when the token expires."""

from __future__ import annotations

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
    SERVER,
    AuthHarness,
)
from tests.core.harness import TEXT_RESULT

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_URL = f"{ISSUER}/token"
# As the conformance scenario's authorization server: the jwt-bearer grant only, no
# registration, public clients.
WIF_METADATA = {
    **{k: v for k, v in AS_METADATA.items() if k != "registration_endpoint"},
    "grant_types_supported": [GRANT],
    "token_endpoint_auth_methods_supported": ["none"],
}
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl"


def harness(fields: dict[str, Any] | None = None, **settings: Any) -> AuthHarness:
    return AuthHarness(oauth=core.OAuthSettings(grant="jwt_bearer", **settings), **(fields or {}))


def to_the_assertion(h: AuthHarness, server: dict[str, Any] = WIF_METADATA) -> Any:
    """Connect, the 401, discovery: the machine asks for the platform's JWT."""
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover(server=server)
    return waiter


def test_the_jwt_is_presented_as_a_jwt_bearer_grant_without_registration() -> None:
    h = harness(client_id="conformance-wif-workload", scope="read")
    to_the_assertion(h)
    [obtain] = h.of(core.ObtainAssertion)
    assert (obtain.issuer, obtain.token_endpoint) == (ISSUER, TOKEN_URL)
    assert h.auth_phase is AuthPhase.SIGNING
    assert not h.of(core.PrepareAuthorization) and not h.of(core.SignAssertion)
    h.feed(core.AssertionSigned(now=h.now, assertion=JWT))
    request = h.fetch(TOKEN_URL)
    assert h.form(request) == {
        "grant_type": GRANT,
        "assertion": JWT,
        "scope": "read",
        "resource": SERVER,
        "client_id": "conformance-wif-workload",
    }
    assert h.header(request, "Authorization") is None  # no client authentication
    assert not [a for a in h.history if isinstance(a, core.StartHttp) and "register" in a.url]
    h.token({"access_token": "wif-token", "token_type": "Bearer", "expires_in": 3600})
    assert h.header(h.request("initialize"), "Authorization") == "Bearer wif-token"
    [save] = h.of(core.SaveAuthorization)
    assert save.authorization.client_id == "conformance-wif-workload"


def test_without_a_client_id_the_request_names_none_and_the_login_is_kept_under_the_grant() -> None:
    h = harness()
    # An authorization server that lists no grants is not refused (RFC 8414 §2: optional).
    to_the_assertion(h, {k: v for k, v in WIF_METADATA.items() if k != "grant_types_supported"})
    h.feed(core.AssertionSigned(now=h.now, assertion=JWT))
    form = h.form(h.fetch(TOKEN_URL))
    assert "client_id" not in form and "scope" not in form
    h.token({"access_token": "wif-token", "token_type": "Bearer"})
    [save] = h.of(core.SaveAuthorization)
    assert save.authorization.client_id == GRANT


@pytest.mark.parametrize("code", ["invalid_grant", "invalid_scope", "unauthorized_client"])
def test_a_refused_assertion_is_final_no_retry_and_no_other_grant(code: str) -> None:
    h = harness(client_id="w")
    waiter = to_the_assertion(h)
    h.feed(core.AssertionSigned(now=h.now, assertion=JWT))
    h.token({"error": code, "error_description": "audience mismatch"}, status=400)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert isinstance(error.cause, core.AuthorizationFailed)
    assert error.cause.error_code == code
    assert JWT not in str(error) and JWT not in repr(error)
    assert h.auth_phase is AuthPhase.REFUSED
    h.take()
    # Nothing follows the refusal: a late JWT, a call, the clock moving on.
    h.feed(core.AssertionSigned(now=h.now, assertion=JWT))
    h.advance(60.0)
    assert not h.of(core.StartHttp) and not h.of(core.ObtainAssertion)
    assert h.machine.status(h.now).retry_in is None


def test_a_server_that_does_not_list_the_grant_is_refused_before_any_jwt_is_read() -> None:
    h = harness()
    waiter = to_the_assertion(h, {**WIF_METADATA, "grant_types_supported": ["client_credentials"]})
    assert not h.of(core.ObtainAssertion)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert isinstance(error.cause, core.AuthorizationFailed)
    assert error.cause.error_code == "unsupported_grant_type"


def test_a_jwt_the_driver_cannot_obtain_refuses_naming_the_reason() -> None:
    h = harness()
    waiter = to_the_assertion(h)
    h.feed(core.AuthorizationAbandoned(now=h.now, reason="the assertion file /t is empty"))
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert "could not be obtained: the assertion file /t is empty" in str(error)
    assert not [a for a in h.history if isinstance(a, core.StartHttp) and a.url == TOKEN_URL]


def test_an_expired_token_is_exchanged_again_with_a_fresh_jwt_once() -> None:
    h = harness({"concurrency": "stateless"})
    to_the_assertion(h)
    h.feed(core.AssertionSigned(now=h.now, assertion=JWT))
    h.token({"access_token": "first", "token_type": "Bearer", "expires_in": 60})
    h.result_for(h.request("initialize"), {"protocolVersion": "2025-11-25", "capabilities": {}})
    h.respond(h.request("notifications/initialized"), 202)
    assert h.machine.state == "ready"
    h.take()
    h.now += 40  # within the expiry margin: a fresh JWT before sending
    calls = [h.call("echo"), h.call("echo"), h.call("echo")]
    assert len(h.of(core.ObtainAssertion)) == 1  # one for all three: no storm
    assert not h.requests()
    h.feed(core.AssertionSigned(now=h.now, assertion="rotated.jwt.value"))
    assert h.form(h.fetch(TOKEN_URL))["assertion"] == "rotated.jwt.value"
    h.token({"access_token": "second", "token_type": "Bearer", "expires_in": 60})
    for request in h.requests():
        assert h.header(request, "Authorization") == "Bearer second"
        h.result_for(request, TEXT_RESULT)
    assert [h.result(t).text for t in calls] == ["hi"] * 3
    assert len([a for a in h.history if isinstance(a, core.ObtainAssertion)]) == 2


def test_the_jwt_never_reaches_a_recording_a_repr_or_a_status() -> None:
    h = harness(client_id="w")
    lines = h.recorded()
    to_the_assertion(h)
    signed = core.AssertionSigned(now=h.now, assertion=JWT)
    h.feed(signed)
    request = h.fetch(TOKEN_URL)
    h.token({"access_token": "wif-token", "token_type": "Bearer"})
    actions = json.dumps([encode_action(a) for a in h.history])
    text = "".join(lines) + actions + repr(h.machine) + repr(h.machine.status(h.now))
    text += repr(signed) + repr(request) + repr(h.history)
    assert JWT not in text and "wif-token" not in text
    assert JWT in (request.body or b"").decode()  # it did go to the token endpoint


def test_settings_come_from_the_spec() -> None:
    spec = core.Spec(
        name="s",
        url=SERVER,
        oauth={"grant": "jwt_bearer", "assertion_file": "/var/run/token", "client_id": "w"},
    )
    settings = core.OAuthSettings.from_spec(spec)
    assert settings == core.OAuthSettings(grant="jwt_bearer", client_id="w")
