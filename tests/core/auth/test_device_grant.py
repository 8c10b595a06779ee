"""The device authorization grant (RFC 8628) in the core, on a fake clock: the device
authorization request after discovery, ``ShowDeviceCode`` for the driver (never the device
code), polls every ``interval`` with the layer's own deadlines, ``authorization_pending``,
``slow_down`` (+5 s for good), ``access_denied``, ``expired_token`` and the code's own expiry,
polls that get no answer (backoff), the connect deadline suspended meanwhile, the same
``interactive`` rule as the browser step, registration for the grant, and the secrets."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core
from mcp_core._auth import device
from mcp_core.replay import encode_action
from mcp_core.states import AUTH_TABLE, AuthPhase, AuthStep
from tests.core.auth.test_authorization import (
    AS_METADATA,
    CHALLENGE,
    ISSUER,
    SERVER,
    AuthHarness,
)
from tests.core.harness import TEXT_RESULT

GRANT = "urn:ietf:params:oauth:grant-type:device_code"
DEVICE_URL = f"{ISSUER}/device_authorization"
TOKEN_URL = f"{ISSUER}/token"
DEVICE_METADATA = {
    **{k: v for k, v in AS_METADATA.items() if k != "registration_endpoint"},
    "device_authorization_endpoint": DEVICE_URL,
    "grant_types_supported": [GRANT, "refresh_token"],
}
DEVICE_CODE = "dc-secret-0123456789"
USER_CODE = "BCDF-GHJK"
ANSWER = {
    "device_code": DEVICE_CODE,
    "user_code": USER_CODE,
    "verification_uri": f"{ISSUER}/device",
    "verification_uri_complete": f"{ISSUER}/device?user_code={USER_CODE}",
    "expires_in": 600,
    "interval": 5,
}
TOKEN = {
    "access_token": "dev-tok",
    "token_type": "Bearer",
    "expires_in": 3600,
    "refresh_token": "dev-r",
}


def harness(fields: dict[str, Any] | None = None, **settings: Any) -> AuthHarness:
    settings.setdefault("client_id", "device-client")
    fields = {"init_timeout": 30.0, **(fields or {})}
    return AuthHarness(oauth=core.OAuthSettings(grant="device_code", **settings), **fields)


def to_discovery(
    h: AuthHarness,
    server: dict[str, Any] = DEVICE_METADATA,
    wait: bool = True,
    timeout: float = 3600.0,
) -> int | None:
    """Connect, the 401, discovery with ``server`` as the authorization server's metadata;
    the ticket of a readiness wait (``wait``) started first."""
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready(timeout=timeout) if wait else None
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover(server=server)
    return waiter


def to_the_code(
    h: AuthHarness, answer: dict[str, Any] = ANSWER, wait: bool = True, timeout: float = 3600.0
) -> int | None:
    """Connect, the 401, discovery, the device authorization answered: the code is shown."""
    waiter = to_discovery(h, wait=wait, timeout=timeout)
    h.respond(h.fetch(DEVICE_URL), 200, answer)
    return waiter


def poll(h: AuthHarness, status: int, body: dict[str, Any] | bytes) -> core.StartHttp:
    """Fire the timer at the next poll and answer it."""
    h.take()
    h.fire_due()
    request = h.fetch(TOKEN_URL)
    h.respond(request, status, body)
    return request


def polls(h: AuthHarness) -> int:
    return len([a for a in h.history if isinstance(a, core.StartHttp) and a.url == TOKEN_URL])


def connect_failure(h: AuthHarness, waiter: int | None) -> core.McpError:
    assert waiter is not None
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed)
    assert error.cause is not None
    return error.cause


def test_the_whole_device_login() -> None:
    h = harness(scope=None)
    waiter = to_the_code(h)
    device_request = h.fetch(DEVICE_URL)
    assert device_request.method == "POST" and device_request.secret
    assert h.form(device_request) == {
        "client_id": "device-client",
        "scope": "read offline_access",  # the challenge's, plus refresh (the server lists it)
        "resource": SERVER,
    }
    [show] = h.of(core.ShowDeviceCode)
    assert show == core.ShowDeviceCode(
        user_code=USER_CODE,
        verification_uri=f"{ISSUER}/device",
        verification_uri_complete=f"{ISSUER}/device?user_code={USER_CODE}",
        expires_in=600.0,
    )
    assert h.auth_phase is AuthPhase.AWAITING_DEVICE
    # The handshake's deadline (30 s) waits for the user; the next poll is the deadline.
    assert h.machine.next_deadline() == 5.0
    first = poll(h, 400, {"error": "authorization_pending"})
    assert h.now == 5.0 and first.secret
    assert h.form(first) == {
        "grant_type": GRANT,
        "device_code": DEVICE_CODE,
        "client_id": "device-client",
    }
    assert h.auth_phase is AuthPhase.AWAITING_DEVICE
    assert h.machine.next_deadline() == 10.0
    poll(h, 400, {"error": "slow_down"})
    assert h.machine.next_deadline() == 20.0  # interval 5 + 5
    poll(h, 400, {"error": "authorization_pending"})
    assert h.now == 20.0 and h.machine.next_deadline() == 30.0  # still 10: for good
    poll(h, 200, TOKEN)
    assert h.now == 30.0 and polls(h) == 4
    assert h.auth_phase is AuthPhase.AUTHORIZED
    [save] = h.of(core.SaveAuthorization)
    assert save.authorization.access_token == "dev-tok"
    assert save.authorization.refresh_token == "dev-r"
    assert save.authorization.client_id == "device-client"
    init = h.request("initialize")
    assert h.header(init, "Authorization") == "Bearer dev-tok"
    # The handshake has init_timeout again from the token on.
    assert h.machine.next_deadline() == 60.0
    h.result_for(init, {"protocolVersion": "2025-11-25", "capabilities": {}})
    h.respond(h.request("notifications/initialized"), 202)
    assert waiter is not None and h.result(waiter).state == "ready"
    assert h.machine.state == "ready"


def test_a_code_approved_after_the_connect_deadline_still_connects() -> None:
    h = harness()
    to_the_code(h, {**ANSWER, "interval": 40})
    poll(h, 400, {"error": "authorization_pending"})
    assert h.now == 40.0  # past init_timeout (30 s): suspended while the user is away
    assert h.machine.state == "initializing"
    poll(h, 200, TOKEN)
    assert h.header(h.request("initialize"), "Authorization") == "Bearer dev-tok"


def test_no_interval_means_five_seconds_and_a_timer_that_fires_early_polls_nothing() -> None:
    h = harness()
    answer = {k: v for k, v in ANSWER.items() if k != "interval"}
    waiter = to_the_code(h, answer, timeout=2.0)
    assert h.machine.next_deadline() == 2.0  # the wait's deadline comes before the poll's
    h.take()
    h.fire_due()  # the wait ends; no poll yet
    assert waiter is not None and isinstance(h.error(waiter), core.NotReady)
    assert not h.of(core.StartHttp)
    assert h.machine.next_deadline() == 5.0
    poll(h, 200, TOKEN)
    assert h.auth_phase is AuthPhase.AUTHORIZED


def test_the_user_says_no() -> None:
    h = harness()
    waiter = to_the_code(h)
    poll(h, 400, {"error": "authorization_pending"})
    poll(h, 400, {"error": "access_denied", "error_description": "no"})
    cause = connect_failure(h, waiter)
    assert isinstance(cause, core.AuthorizationFailed) and cause.error_code == "access_denied"
    assert "denied" in cause.message
    assert h.auth_phase is AuthPhase.REFUSED
    assert h.machine.next_deadline() is None or polls(h) == 2
    h.take()
    h.advance(100.0)
    assert not h.of(core.StartHttp)  # no poll after a refusal
    assert h.machine.status(h.now).retry_in is None


@pytest.mark.parametrize("how", ["server", "clock"])
def test_an_expired_code_says_to_log_in_again(how: str) -> None:
    h = harness()
    expires_in = "12" if how == "clock" else "600"  # a numeric string is read
    waiter = to_the_code(h, {**ANSWER, "expires_in": expires_in})
    poll(h, 400, {"error": "authorization_pending"})
    poll(h, 400, {"error": "authorization_pending"})
    h.take()
    if how == "server":
        poll(h, 400, {"error": "expired_token"})
    else:
        assert h.machine.next_deadline() == 12.0  # the code's expiry, before the next poll
        h.fire_due()
        assert not h.of(core.StartHttp)
    cause = connect_failure(h, waiter)
    assert isinstance(cause, core.AuthorizationFailed) and cause.error_code == "expired_token"
    assert "expired" in cause.message and "log in again" in cause.message


def test_a_server_without_a_device_endpoint_is_refused() -> None:
    h = harness()
    metadata = {k: v for k, v in DEVICE_METADATA.items() if k != "device_authorization_endpoint"}
    waiter = to_discovery(h, metadata)
    cause = connect_failure(h, waiter)
    assert isinstance(cause, core.AuthorizationFailed)
    assert cause.error_code == "unsupported_grant_type"
    assert "device_authorization_endpoint" in cause.message
    assert not [a for a in h.history if isinstance(a, core.StartHttp) and a.url == DEVICE_URL]


def test_a_client_that_asks_no_one_gets_authorization_required() -> None:
    h = harness(interactive=False)
    waiter = to_discovery(h)
    cause = connect_failure(h, waiter)
    assert isinstance(cause, core.AuthorizationRequired)
    assert "device login" in cause.message and "mcp-client login t" in cause.message
    assert not h.of(core.ShowDeviceCode)


def test_without_a_client_id_it_registers_for_the_device_grant() -> None:
    h = harness(client_id=None)
    to_discovery(h, {**DEVICE_METADATA, "registration_endpoint": f"{ISSUER}/register"}, wait=False)
    register = h.fetch(f"{ISSUER}/register")
    document = json.loads(register.body or b"")
    assert document["grant_types"] == [GRANT, "refresh_token"]
    assert "redirect_uris" not in document or document["redirect_uris"] == []
    h.respond(register, 201, {"client_id": "registered-1"})
    assert h.form(h.fetch(DEVICE_URL))["client_id"] == "registered-1"


def test_without_a_client_id_or_registration_it_asks_for_a_client_id() -> None:
    h = harness(client_id=None)
    waiter = to_discovery(h)
    cause = connect_failure(h, waiter)
    assert isinstance(cause, core.AuthorizationFailed) and "client_id" in cause.message


def test_a_refused_device_authorization_is_final() -> None:
    h = harness()
    waiter = to_discovery(h)
    h.respond(h.fetch(DEVICE_URL), 400, {"error": "invalid_client"})
    cause = connect_failure(h, waiter)
    assert isinstance(cause, core.AuthorizationFailed) and cause.error_code == "invalid_client"


def test_a_device_authorization_that_fails_for_now_is_retried_later() -> None:
    h = harness()
    waiter = to_discovery(h)
    h.respond(h.fetch(DEVICE_URL), 503, b"busy")
    assert waiter not in h.replies  # the connect attempt is retried
    status = h.machine.status(h.now)
    assert status.retry_in is not None and status.last_error is not None
    assert "the device authorization request" in status.last_error
    assert h.auth_phase is AuthPhase.UNAUTHORIZED


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({k: v for k, v in ANSWER.items() if k != "device_code"}, "no device_code"),
        ({**ANSWER, "user_code": ""}, "no user_code"),
        ({**ANSWER, "verification_uri": 7}, "no verification_uri"),
        ({**ANSWER, "expires_in": -1}, "no expires_in"),
        ({**ANSWER, "expires_in": "soon"}, "no expires_in"),
        ({**ANSWER, "expires_in": True}, "no expires_in"),
        ({**ANSWER, "expires_in": float("inf")}, "no expires_in"),
        ({**ANSWER, "interval": "x"}, "interval that is not seconds"),
        ({**ANSWER, "verification_uri": "http://evil.example/device"}, "verification_uri"),
        (
            {**ANSWER, "verification_uri_complete": "http://evil.example/d"},
            "verification_uri_complete",
        ),
    ],
)
def test_a_device_authorization_answer_that_lacks_something_is_refused(
    answer: dict[str, Any], words: str
) -> None:
    h = harness()
    waiter = to_the_code(h, answer)
    cause = connect_failure(h, waiter)
    assert isinstance(cause, core.AuthorizationFailed) and words in cause.message
    assert DEVICE_CODE not in cause.message and USER_CODE not in cause.message
    assert not h.of(core.ShowDeviceCode)


def test_an_empty_complete_uri_is_left_out() -> None:
    h = harness()
    to_the_code(h, {**ANSWER, "verification_uri_complete": ""})
    [show] = h.of(core.ShowDeviceCode)
    assert show.verification_uri_complete is None


@pytest.mark.parametrize(
    ("status", "body"),
    [(503, b"down"), (429, {"error": "slow"}), (400, b"not json"), (200, b"not json either")],
)
def test_a_poll_without_a_usable_answer_polls_less_often(status: int, body: Any) -> None:
    h = harness()
    to_the_code(h, {**ANSWER, "interval": 0})
    poll(h, status, body)
    assert h.auth_phase is AuthPhase.AWAITING_DEVICE
    assert h.machine.next_deadline() == h.now + 2.0  # from 0 s: at least 1 s, doubled
    poll(h, status, body)
    assert h.machine.next_deadline() == h.now + 4.0
    poll(h, 200, TOKEN)
    assert h.auth_phase is AuthPhase.AUTHORIZED


def test_a_poll_that_gets_no_answer_in_time_polls_less_often() -> None:
    h = harness(request_timeout=3.0)
    to_the_code(h)
    h.take()
    h.fire_due()
    late = h.fetch(TOKEN_URL)
    assert h.machine.next_deadline() == 8.0  # the poll's own deadline
    h.take()
    h.fire_due()
    assert core.AbortHttp(stream=late.stream) in h.actions
    assert h.machine.next_deadline() == 8.0 + 10.0  # interval 5, doubled
    poll(h, 400, {"error": "authorization_pending"})
    assert h.machine.next_deadline() == h.now + 10.0  # the grown interval stays


@pytest.mark.parametrize("code", ["invalid_grant", "invalid_client"])
def test_another_refusal_of_a_poll_is_final(code: str) -> None:
    h = harness()
    waiter = to_the_code(h)
    poll(h, 400, {"error": code})
    cause = connect_failure(h, waiter)
    assert isinstance(cause, core.AuthorizationFailed) and cause.error_code == code


def test_a_poll_answer_that_is_no_object_is_read_as_a_token_answer() -> None:
    h = harness()
    to_the_code(h)
    poll(h, 400, b"[1]")
    assert h.auth_phase is AuthPhase.AWAITING_DEVICE  # unreadable: poll again later


def test_a_code_that_cannot_be_shown_ends_the_login() -> None:
    h = harness()
    waiter = to_the_code(h)
    h.feed(core.AuthorizationAbandoned(now=h.now, reason="the on_device_code callback raised X"))
    cause = connect_failure(h, waiter)
    assert isinstance(cause, core.AuthorizationRequired)
    assert "could not be shown" in cause.message and "raised X" in cause.message
    h.take()
    h.advance(100.0)
    assert not h.of(core.StartHttp)


def test_stop_ends_the_login_and_a_restart_asks_again() -> None:
    h = harness()
    to_the_code(h)
    h.close()
    h.take()
    h.advance(100.0)
    assert not [a for a in h.actions if isinstance(a, core.StartHttp) and a.url == TOKEN_URL]
    h.feed(core.AuthorizationAbandoned(now=h.now, reason="late"))  # changes nothing
    assert h.auth_phase is AuthPhase.UNAUTHORIZED


def test_a_refused_refresh_starts_a_device_login() -> None:
    stored = core.StoredAuthorization(
        issuer=ISSUER,
        client_id="device-client",
        access_token=None,
        refresh_token="old-r",
    )
    h = AuthHarness(
        oauth=core.OAuthSettings(grant="device_code", client_id="device-client"), stored=stored
    )
    to_discovery(h, wait=False)
    refresh = h.fetch(TOKEN_URL)
    assert h.form(refresh)["grant_type"] == "refresh_token"
    h.respond(refresh, 400, {"error": "invalid_grant"})
    assert h.auth_phase is AuthPhase.DEVICE_AUTHORIZING
    h.respond(h.fetch(DEVICE_URL), 200, ANSWER)
    assert h.of(core.ShowDeviceCode)


def test_an_expired_token_is_refreshed_as_today() -> None:
    h = harness()
    to_the_code(h, wait=False)
    poll(h, 200, {**TOKEN, "expires_in": 60})
    h.result_for(h.request("initialize"), {"protocolVersion": "2025-11-25", "capabilities": {}})
    h.respond(h.request("notifications/initialized"), 202)
    h.take()
    h.now += 100.0
    ticket = h.call("echo")
    refresh = h.fetch(TOKEN_URL)
    assert h.form(refresh)["grant_type"] == "refresh_token"
    h.respond(refresh, 200, {**TOKEN, "access_token": "dev-tok-2"})
    call = h.request("tools/call")
    assert h.header(call, "Authorization") == "Bearer dev-tok-2"
    h.result_for(call, TEXT_RESULT)
    assert h.result(ticket).text == "hi"
    assert not [a for a in h.history if isinstance(a, core.StartHttp) and a.url == DEVICE_URL][1:]


def test_the_device_code_and_the_user_code_stay_out_of_recordings_reprs_and_status() -> None:
    h = harness()
    lines = h.recorded()
    waiter = to_the_code(h)
    poll(h, 400, {"error": "authorization_pending"})
    poll(h, 400, {"error": "access_denied"})
    assert waiter is not None
    error = h.error(waiter)
    actions = json.dumps([encode_action(a) for a in h.history])
    text = "".join(lines) + actions + repr(h.machine) + repr(h.machine.status(h.now))
    text += repr(h.history) + str(error) + repr(error)
    assert DEVICE_CODE not in text and USER_CODE not in text
    assert any(DEVICE_CODE in (a.body or b"").decode() for a in h.of(core.StartHttp))


def test_the_pure_pieces_hide_their_codes() -> None:
    answer = device.parse_device_authorization(200, json.dumps(ANSWER).encode())
    login = device.DeviceLogin.begin(answer, 0.0)
    bare = device.DeviceAuthorization(
        device_code=DEVICE_CODE,
        user_code=USER_CODE,
        verification_uri="https://a/device",
        verification_uri_complete=None,
        expires_in=1.0,
        interval=1.0,
    )
    text = repr(answer) + repr(login) + repr(bare)
    assert DEVICE_CODE not in text and USER_CODE not in text
    assert "verification_uri_complete=None" in text
    assert device.poll_answer(401, b"{}") is None


def test_the_table_has_the_device_moves() -> None:
    assert AUTH_TABLE[AuthPhase.AUTHORIZED, AuthStep.DEVICE] is AuthPhase.DEVICE_AUTHORIZING
    assert AUTH_TABLE[AuthPhase.POLLING, AuthStep.TOKEN] is AuthPhase.AUTHORIZED


def test_settings_come_from_the_spec() -> None:
    spec = core.Spec(name="s", url=SERVER, oauth={"grant": "device_code", "client_id": "d"})
    settings = core.OAuthSettings.from_spec(spec)
    assert settings == core.OAuthSettings(grant="device_code", client_id="d")


def test_polls_carry_dpop_proofs_and_a_bound_token_is_used_as_one() -> None:
    """DPoP (RFC 9449) rides each poll as any token request, its nonce too; the token the
    approval brings is bound, so the MCP requests carry ``Authorization: DPoP``."""
    h = harness(dpop="prefer")
    bound = {**DEVICE_METADATA, "dpop_signing_alg_values_supported": ["ES256"]}
    to_discovery(h, bound, wait=False)
    h.respond(h.fetch(DEVICE_URL), 200, ANSWER)
    nonce = (("DPoP-Nonce", "as-nonce-1"),)
    h.take()
    h.fire_due()
    asked = h.fetch(TOKEN_URL)
    assert asked.dpop is not None and (asked.dpop.htm, asked.dpop.htu) == ("POST", TOKEN_URL)
    assert asked.dpop.nonce is None and asked.dpop.ath is None
    h.take()
    h.respond(asked, 400, {"error": "use_dpop_nonce"}, headers=nonce)
    again = h.fetch(TOKEN_URL)  # at once, with the nonce: not a poll of its own
    assert again.dpop is not None and again.dpop.nonce == "as-nonce-1"
    h.respond(again, 200, {**TOKEN, "token_type": "DPoP"})
    init = h.request("initialize")
    assert h.header(init, "Authorization") == "DPoP dev-tok"
    assert init.dpop is not None and init.dpop.ath is not None
