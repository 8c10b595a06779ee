"""DPoP (RFC 9449; SEP-1932): the machine puts what each proof must say on ``StartHttp.dpop``
(token requests once the authorization server lists ES256; every MCP request once the token is
DPoP-bound), sends ``Authorization: DPoP``, answers the servers' nonce challenges by sending the
request again once with the nonce, and never holds a key."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core
from mcp_core._auth import dpop
from mcp_core._auth.metadata import bearer_challenge
from mcp_core.replay import encode_action
from mcp_core.states import AuthPhase
from tests.core.auth.test_authorization import (
    AS_METADATA,
    ISSUER,
    PRM_URL,
    SERVER,
    TOKEN,
    AuthHarness,
)

TOKEN_URL = f"{ISSUER}/token"
DPOP_METADATA = {**AS_METADATA, "dpop_signing_alg_values_supported": ["RS256", "ES256"]}
DPOP_CHALLENGE = (("WWW-Authenticate", f'DPoP resource_metadata="{PRM_URL}"'),)
DPOP_TOKEN = {**TOKEN, "token_type": "DPoP"}
ATH = dpop.access_token_hash("tok-1")
NONCE_CHALLENGE = (
    ("WWW-Authenticate", 'DPoP error="use_dpop_nonce", error_description="nonce"'),
    ("DPoP-Nonce", "rs-nonce-1"),
)
AS_NONCE = {"error": "use_dpop_nonce", "error_description": "a nonce is required"}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}}


def harness(mode: str = "prefer", **fields: Any) -> AuthHarness:
    return AuthHarness(oauth=core.OAuthSettings(dpop=mode), **fields)  # type: ignore[arg-type]


def to_the_token(h: AuthHarness, server: dict[str, Any] = DPOP_METADATA) -> int:
    """Connect, a DPoP challenge, discovery, registration, the browser step: the code is
    redeemed next."""
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 401, headers=DPOP_CHALLENGE)
    h.discover(server=server)
    h.registered("client-1")
    h.redirected()
    return waiter


def ready(h: AuthHarness) -> None:
    """The token came: the handshake finishes."""
    h.result_for(h.request("initialize"), INIT)
    h.respond(h.request("notifications/initialized"), 202)
    assert h.machine.state == "ready"
    h.take()


def test_token_requests_and_mcp_requests_carry_proofs_and_the_dpop_scheme() -> None:
    h = harness()
    waiter = to_the_token(h)
    exchange = h.fetch(TOKEN_URL)
    assert exchange.dpop == core.DpopProof(htm="POST", htu=TOKEN_URL)
    h.token(DPOP_TOKEN)
    [save] = h.of(core.SaveAuthorization)
    assert save.authorization.token_type == "DPoP" and save.authorization.dpop_key is None
    init = h.request("initialize")
    assert h.header(init, "Authorization") == "DPoP tok-1"
    assert init.dpop == core.DpopProof(htm="POST", htu=SERVER, ath=ATH)
    h.result_for(init, INIT, headers=(("Mcp-Session-Id", "s-1"),))
    note = h.request("notifications/initialized")
    assert note.dpop is not None and note.dpop.ath == ATH
    h.respond(note, 202)
    listen = h.request(http="GET")  # the GET stream carries its own proof
    assert listen.dpop == core.DpopProof(htm="GET", htu=SERVER, ath=ATH)
    h.sse(listen, end=False)
    assert h.result(waiter).state == "ready"
    h.take()
    h.close()
    delete = h.request(http="DELETE")
    assert delete.dpop == core.DpopProof(htm="DELETE", htu=SERVER, ath=ATH)


def test_a_server_without_es256_gets_no_proof_and_a_bearer_token() -> None:
    h = harness()
    to_the_token(h, {**AS_METADATA, "dpop_signing_alg_values_supported": ["RS256"]})
    assert h.fetch(TOKEN_URL).dpop is None
    h.token()
    init = h.request("initialize")
    assert h.header(init, "Authorization") == "Bearer tok-1" and init.dpop is None


def test_a_bearer_answer_to_a_proof_is_an_unbound_token() -> None:
    h = harness()
    to_the_token(h)
    assert h.fetch(TOKEN_URL).dpop is not None
    h.token()  # token_type Bearer: the server did not bind it
    init = h.request("initialize")
    assert h.header(init, "Authorization") == "Bearer tok-1" and init.dpop is None
    [save] = h.of(core.SaveAuthorization)
    assert save.authorization.token_type == "Bearer"


@pytest.mark.parametrize("mode", ["off", "prefer"])
def test_a_dpop_token_no_proof_asked_for_is_refused(mode: str) -> None:
    h = harness(mode)
    waiter = to_the_token(h, AS_METADATA)
    assert h.fetch(TOKEN_URL).dpop is None
    h.token(DPOP_TOKEN)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert "token_type is DPoP, but the token request had no proof" in str(error)
    assert "tok-1" not in str(error)


def test_required_dpop_refuses_a_server_that_does_not_list_es256() -> None:
    h = harness("require")
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 401, headers=DPOP_CHALLENGE)
    h.discover(server=AS_METADATA)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert isinstance(error.cause, core.AuthorizationFailed)
    assert "dpop_signing_alg_values_supported" in str(error) and '"auto"' in str(error)
    assert h.auth_phase is AuthPhase.REFUSED


def test_required_dpop_with_es256_binds_the_token() -> None:
    h = harness("require")
    to_the_token(h)
    h.token(DPOP_TOKEN)
    assert h.header(h.request("initialize"), "Authorization") == "DPoP tok-1"


def test_the_authorization_servers_nonce_sends_the_token_request_again_once() -> None:
    h = harness()
    waiter = to_the_token(h)
    first = h.fetch(TOKEN_URL)
    h.take()
    h.respond(first, 400, AS_NONCE, headers=(("DPoP-Nonce", "as-nonce-1"),))
    again = h.fetch(TOKEN_URL)
    assert again.body == first.body and again.stream != first.stream
    assert again.dpop == core.DpopProof(htm="POST", htu=TOKEN_URL, nonce="as-nonce-1")
    assert h.auth_phase is AuthPhase.EXCHANGING
    h.take()
    # Asked again: no third request, the refusal is final and names the error.
    h.respond(again, 400, AS_NONCE, headers=(("DPoP-Nonce", "as-nonce-2"),))
    assert not h.of(core.StartHttp)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed)
    assert isinstance(error.cause, core.AuthorizationFailed)
    assert error.cause.error_code == "use_dpop_nonce"


def test_the_nonce_is_kept_for_later_token_requests_and_a_400_without_one_is_final() -> None:
    h = harness(concurrency="stateless")
    to_the_token(h)
    first = h.fetch(TOKEN_URL)
    h.take()
    h.respond(first, 400, AS_NONCE, headers=(("DPoP-Nonce", "as-1"),))
    h.respond(h.fetch(TOKEN_URL), 200, DPOP_TOKEN, headers=(("DPoP-Nonce", "as-2"),))
    ready(h)
    h.now += 3600  # expired: the refresh carries the latest nonce
    h.call("echo")
    refresh = h.fetch(TOKEN_URL)
    assert h.form(refresh)["grant_type"] == "refresh_token"
    assert refresh.dpop == core.DpopProof(htm="POST", htu=TOKEN_URL, nonce="as-2")
    h.take()
    # use_dpop_nonce without a nonce to use (or an unusable one): nothing to send again.
    h.respond(refresh, 400, AS_NONCE, headers=(("DPoP-Nonce", "bad nonce"),))
    assert h.of(core.PrepareAuthorization)  # refused: the login starts again


def test_the_mcp_servers_nonce_sends_the_request_again_without_a_new_authorization() -> None:
    h = harness(concurrency="stateless")
    to_the_token(h)
    h.token(DPOP_TOKEN)
    init = h.request("initialize")
    h.take()
    h.respond(init, 401, headers=NONCE_CHALLENGE)
    again = h.request("initialize")
    assert again.dpop == core.DpopProof(htm="POST", htu=SERVER, ath=ATH, nonce="rs-nonce-1")
    assert h.body(again)["id"] == h.body(init)["id"]
    assert not [a for a in h.actions if isinstance(a, core.StartHttp) and a.url != SERVER]
    assert h.auth_phase is AuthPhase.AUTHORIZED
    ready(h)
    # A nonce the server rotates on any answer is the one the next request carries.
    ticket = h.call("echo")
    call = h.request("tools/call")
    assert call.dpop is not None and call.dpop.nonce == "rs-nonce-1"
    h.take()
    result = {"jsonrpc": "2.0", "id": h.body(call)["id"], "result": {"content": []}}
    h.respond(call, 200, result, headers=(("DPoP-Nonce", "rs-nonce-2"),))
    assert h.result(ticket) is not None
    h.call("echo")
    assert h.request("tools/call").dpop.nonce == "rs-nonce-2"  # type: ignore[union-attr]


def test_a_second_nonce_refusal_of_the_same_request_is_a_refused_token() -> None:
    h = harness(concurrency="stateless")
    waiter = to_the_token(h)
    h.token(DPOP_TOKEN)
    h.respond(h.request("initialize"), 401, headers=NONCE_CHALLENGE)
    again = h.request("initialize")
    h.take()
    h.respond(again, 401, headers=NONCE_CHALLENGE)
    # Its nonce did not help: the fresh token is refused, typed, and nothing more is sent.
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert isinstance(error.cause, core.AuthorizationFailed)
    assert "refused a fresh token" in str(error)
    assert not h.of(core.StartHttp)


def two_calls_in_flight() -> tuple[AuthHarness, Any, Any, int]:
    """A stateless session with a bound token and two calls sent: the harness, the two
    requests, and the second call's ticket."""
    h = harness(concurrency="stateless")
    to_the_token(h)
    h.token(DPOP_TOKEN)
    ready(h)
    h.call("echo")
    first = h.request("tools/call")
    late = h.call("echo")
    second = h.request("tools/call")
    h.take()
    return h, first, second, late


def test_a_nonce_refusal_while_a_token_is_on_its_way_waits_for_it() -> None:
    h, first, second, _ = two_calls_in_flight()
    h.respond(first, 401, headers=DPOP_CHALLENGE)  # the token is no good: a refresh starts
    assert h.auth_phase is AuthPhase.REFRESHING
    h.respond(second, 401, headers=NONCE_CHALLENGE)
    assert not h.requests()  # held until the new token
    h.token({**DPOP_TOKEN, "access_token": "tok-2"})
    resent = [r for r in h.requests() if r.body and b"tools/call" in r.body]
    assert len(resent) == 2
    assert all(r.dpop is not None and r.dpop.nonce == "rs-nonce-1" for r in resent)
    assert all(h.header(r, "Authorization") == "DPoP tok-2" for r in resent)


def test_a_nonce_refusal_after_a_refusal_fails_with_it() -> None:
    h, first, second, late = two_calls_in_flight()
    step_up = (("WWW-Authenticate", 'DPoP error="insufficient_scope", scope="write"'),)
    h.respond(first, 403, headers=step_up)  # a new authorization, which fails
    h.feed(core.AuthorizationAbandoned(now=h.now, reason="no browser"))
    h.take()
    assert h.auth_phase is AuthPhase.REFUSED
    h.respond(second, 401, headers=NONCE_CHALLENGE)
    assert isinstance(h.error(late), core.AuthorizationRequired)


def test_a_nonce_challenge_for_a_bearer_token_is_an_ordinary_refusal() -> None:
    h = harness(concurrency="stateless")
    to_the_token(h)
    h.token()
    init = h.request("initialize")
    h.take()
    h.respond(init, 401, headers=NONCE_CHALLENGE)
    assert "refused a fresh token" in str(h.error(1))  # not sent again with the nonce


def stored(token_type: str = "DPoP", **extra: Any) -> core.StoredAuthorization:
    return core.StoredAuthorization(
        issuer=ISSUER,
        client_id="client-1",
        access_token="tok-1",
        refresh_token="r-1",
        expires_at=3600.0,
        token_type=token_type,
        **extra,
    )


def test_a_stored_dpop_token_is_used_with_proofs() -> None:
    h = AuthHarness(oauth=core.OAuthSettings(dpop="prefer"), stored=stored())
    h.feed(core.Connect(now=h.now))
    init = h.request("initialize")
    assert h.header(init, "Authorization") == "DPoP tok-1"
    assert init.dpop == core.DpopProof(htm="POST", htu=SERVER, ath=ATH)


def test_a_stored_dpop_token_without_dpop_is_not_sent_and_the_login_starts_again() -> None:
    h = AuthHarness(oauth=core.OAuthSettings(), stored=stored())
    h.feed(core.Connect(now=h.now))
    init = h.request("initialize")
    assert h.header(init, "Authorization") is None and init.dpop is None
    h.respond(init, 401, headers=DPOP_CHALLENGE)
    h.discover()
    assert h.of(core.PrepareAuthorization)  # no refresh with a token bound to a lost key


def test_a_refused_refresh_forgets_the_bound_token() -> None:
    h = harness(concurrency="stateless")
    to_the_token(h)
    h.token(DPOP_TOKEN)
    ready(h)
    h.now += 3600
    h.call("echo")
    h.token({"error": "invalid_grant"}, status=400)
    [save] = h.of(core.SaveAuthorization)
    assert save.authorization.access_token is None and save.authorization.token_type == "Bearer"
    assert h.of(core.PrepareAuthorization)


# --- the pure parts ---------------------------------------------------------------------------


def test_htu_and_ath() -> None:
    assert dpop.htu("https://a.example/mcp?x=1#f") == "https://a.example/mcp"
    assert dpop.htu("https://a.example/mcp#f?x") == "https://a.example/mcp"
    # RFC 9449 §7.1's example.
    token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
    assert dpop.access_token_hash(token) == "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"


@pytest.mark.parametrize(
    ("value", "kept"),
    [("n-1", "n-1"), (" n-2 ", "n-2"), ("", None), ("a b", None), ('a"b', None), ("x" * 513, None)],
)
def test_only_a_usable_nonce_is_kept(value: str, kept: str | None) -> None:
    state = dpop.Dpop("prefer", object())  # type: ignore[arg-type]
    state.saw((("DPoP-Nonce", value),))
    assert state.rs_nonce == kept


def test_nonce_errors() -> None:
    assert dpop.is_nonce_error(400, json.dumps(AS_NONCE).encode())
    assert not dpop.is_nonce_error(401, json.dumps(AS_NONCE).encode())
    assert not dpop.is_nonce_error(400, b'{"error": "invalid_grant"}')
    assert not dpop.is_nonce_error(400, b'{"error_description": "use_dpop_nonce"}')
    assert not dpop.is_nonce_error(400, b'["use_dpop_nonce"]')
    assert not dpop.is_nonce_error(400, b"use_dpop_nonce, not JSON")


def test_a_dpop_challenge_gives_the_resource_metadata_as_a_bearer_one() -> None:
    both = f'DPoP algs="ES256", Bearer resource_metadata="{PRM_URL}x"'
    challenge = bearer_challenge(both)
    assert challenge is not None and challenge.scheme == "bearer"
    challenge = bearer_challenge(f'DPoP resource_metadata="{PRM_URL}"')
    assert challenge is not None and challenge.resource_metadata == PRM_URL
    assert bearer_challenge('Basic realm="x"') is None


def test_settings_resolve_auto_by_whether_the_driver_signs() -> None:
    def settings(signer: bool, **oauth: Any) -> core.OAuthSettings:
        spec = core.Spec(name="s", url=SERVER, oauth=oauth)
        resolved = core.OAuthSettings.from_spec(spec, dpop_signer=signer)
        assert resolved is not None
        return resolved

    assert settings(True).dpop == "prefer"
    assert settings(False).dpop == "off"
    assert settings(True, dpop=False).dpop == "off"
    assert settings(False, dpop=True).dpop == "require"
    assert settings(True, dpop="auto").dpop == "prefer"


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_the_spec_takes_auto_true_or_false(value: object) -> None:
    with pytest.raises(core.InvalidSpec, match="oauth\\['dpop'\\] must be \"auto\", true or false"):
        core.Spec(name="s", url=SERVER, oauth={"dpop": value})


def test_the_key_and_the_token_hash_stay_out_of_reprs_and_recordings() -> None:
    key = '{"kty":"EC","d":"private-part"}'
    record = stored(dpop_key=key)
    assert "private-part" not in repr(record) and "dpop_key='[redacted]'" in repr(record)
    assert record.to_json()["dpop_key"] == key  # the store keeps it
    assert "dpop_key" not in stored().to_json()
    assert core.StoredAuthorization.from_json(record.to_json()) == record
    proof = core.DpopProof(htm="POST", htu=SERVER, ath=ATH, nonce="n")
    assert ATH not in repr(proof)
    action = core.StartHttp(stream=1, method="POST", url=SERVER + "?k=v", headers=(), dpop=proof)
    assert ATH not in repr(action) and "dpop=DpopProof(htm='POST'" in repr(action)
    assert "dpop" not in repr(core.StartHttp(stream=1, method="GET", url=SERVER, headers=()))
    line = encode_action(action)
    assert line["dpop"] == {"htm": "POST", "htu": SERVER, "nonce": "n"}
    assert ATH not in json.dumps(line)
    plain = core.StartHttp(stream=1, method="GET", url=SERVER, headers=())
    assert "dpop" not in encode_action(plain)


def test_mcp_json_takes_dpop() -> None:
    from mcp_core.config import load_config

    text = json.dumps({"mcpServers": {"ledger": {"url": SERVER, "oauth": {"dpop": True}}}})
    spec = load_config(text).servers["ledger"]
    assert spec.oauth["dpop"] is True
    settings = core.OAuthSettings.from_spec(spec)
    assert settings is not None and settings.dpop == "require"



def signed(h: AuthHarness) -> int:
    """A client_credentials client with a key_file, to the first signed token request."""
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 401, headers=DPOP_CHALLENGE)
    h.discover(server={**DPOP_METADATA, "token_endpoint_auth_methods_supported": [PKJ]})
    h.take()
    h.feed(core.AssertionSigned(now=h.now, assertion="first.signed.jwt"))
    return waiter


PKJ = "private_key_jwt"
SIGNED = core.OAuthSettings(
    client_id="svc", grant="client_credentials", private_key=True, dpop="prefer"
)


def test_a_nonce_asked_of_a_private_key_jwt_request_gets_a_newly_signed_assertion() -> None:
    """RFC 7523 §3: a client assertion's ``jti`` is for one use, so the request the nonce
    sends again carries a new assertion, and a second nonce refusal is still final."""
    h = AuthHarness(oauth=SIGNED)
    waiter = signed(h)
    first = h.fetch(TOKEN_URL)
    assert h.form(first)["client_assertion"] == "first.signed.jwt"
    h.take()
    h.respond(first, 400, AS_NONCE, headers=(("DPoP-Nonce", "as-nonce-1"),))
    [sign] = h.of(core.SignAssertion)
    assert (sign.client_id, sign.audience) == ("svc", ISSUER)
    assert not h.of(core.StartHttp) and h.auth_phase is AuthPhase.SIGNING
    h.take()
    h.feed(core.AssertionSigned(now=h.now, assertion="second.signed.jwt"))
    again = h.fetch(TOKEN_URL)
    assert h.form(again)["client_assertion"] == "second.signed.jwt"
    assert again.dpop == core.DpopProof(htm="POST", htu=TOKEN_URL, nonce="as-nonce-1")
    h.take()
    h.respond(again, 400, AS_NONCE, headers=(("DPoP-Nonce", "as-nonce-2"),))
    assert not h.of(core.StartHttp) and not h.of(core.SignAssertion)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed)
    assert isinstance(error.cause, core.AuthorizationFailed)
    assert error.cause.error_code == "use_dpop_nonce"


def test_a_newly_signed_request_answered_with_a_token_binds_it() -> None:
    h = AuthHarness(oauth=SIGNED)
    signed(h)
    h.respond(h.fetch(TOKEN_URL), 400, AS_NONCE, headers=(("DPoP-Nonce", "as-nonce-1"),))
    h.feed(core.AssertionSigned(now=h.now, assertion="second.signed.jwt"))
    h.respond(h.fetch(TOKEN_URL), 200, DPOP_TOKEN)
    init = h.request("initialize")
    assert h.header(init, "Authorization") == "DPoP tok-1"
    assert init.dpop == core.DpopProof(htm="POST", htu=SERVER, ath=ATH)



def test_a_signed_client_keeps_no_refresh_token_and_signs_a_new_grant_at_expiry() -> None:
    """RFC 6749 §4.4.3: a refresh token should not come with client_credentials; one that does
    is not kept by a client that signs its grants (a refresh would need an assertion too)."""
    h = AuthHarness(oauth=SIGNED, concurrency="stateless")
    signed(h)
    h.respond(h.fetch(TOKEN_URL), 200, {**DPOP_TOKEN, "refresh_token": "r-1"})
    [save] = h.of(core.SaveAuthorization)
    assert save.authorization.refresh_token is None
    ready(h)
    h.now += 3600  # expired: the server refuses it, and a new grant is signed
    h.call("echo")
    h.respond(h.request("tools/call"), 401, headers=DPOP_CHALLENGE)
    h.discover(server={**DPOP_METADATA, "token_endpoint_auth_methods_supported": [PKJ]})
    assert h.of(core.SignAssertion)  # no refresh: none was kept
    h.feed(core.AssertionSigned(now=h.now, assertion="third.signed.jwt"))
    grant = h.form(h.fetch(TOKEN_URL))
    assert (grant["grant_type"], grant["client_assertion"]) == (
        "client_credentials",
        "third.signed.jwt",
    )
