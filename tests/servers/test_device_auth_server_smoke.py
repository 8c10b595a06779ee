"""The device-grant test peer (tests/servers/device_auth_server.py, authlib's RFC 8628 server in
front of the official SDK's MCP server) works: raw HTTP (httpcore), no client code of ours.

Discovery (401 -> RFC 9728 -> RFC 8414 with device_authorization_endpoint), the device
authorization answer (RFC 8628 §3.2), the token endpoint's answers to polls (§3.5:
authorization_pending, slow_down, access_denied, expired_token, then the token), approval by
the /test/ knob, by --auto-approve-after and by the verification page's form, the MCP call with
the token (whoami), refresh with rotation, and tokens bound to the `resource` (RFC 8707).

Most servers here run with --interval 0, so polls may follow each other at once without
slow_down; the slow_down tests use a long interval. Each test starts its own server (the
`device_auth_server` fixture waits for its printed URL with a deadline); every read has a
timeout.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from typing import Any

import httpcore

from tests.servers.http_peers import HttpPeer
from tests.servers.test_py_auth_server_smoke import FORM, Mcp, challenge, form, http, json_of

CLIENT_ID = "device-test-client"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"

Start = Callable[..., HttpPeer]


class Device:
    """One device login against one server, step by step."""

    def __init__(self, peer: HttpPeer) -> None:
        self.url = peer.url
        self.origin = peer.url.rsplit("/", 1)[0]

    def post_form(self, path: str, fields: dict[str, str]) -> httpcore.Response:
        return http("POST", self.origin + path, [FORM], form(fields))

    def authorize(self, **fields: str) -> dict[str, Any]:
        """POST /device_authorization for the MCP endpoint; the 200's JSON."""
        asked = {"client_id": CLIENT_ID, "resource": self.url, **fields}
        response = self.post_form("/device_authorization", asked)
        assert response.status == 200, (response.status, response.content)
        return dict(json_of(response))

    def poll(self, device_code: str) -> httpcore.Response:
        fields = {"grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": CLIENT_ID}
        return self.post_form("/token", fields)

    def error_of(self, device_code: str) -> str:
        response = self.poll(device_code)
        assert response.status == 400, (response.status, response.content)
        return str(json_of(response)["error"])

    def token_of(self, device_code: str) -> dict[str, Any]:
        response = self.poll(device_code)
        assert response.status == 200, (response.status, response.content)
        return dict(json_of(response))

    def knob(self, name: str, body: dict[str, Any] | None = None) -> httpcore.Response:
        if body is None:
            return http("GET", f"{self.origin}/test/{name}")
        content = json.dumps(body).encode()
        return http(
            "POST", f"{self.origin}/test/{name}", [("Content-Type", "application/json")], content
        )

    def stats(self) -> dict[str, int]:
        return dict(json_of(self.knob("stats")))

    def refresh(self, refresh_token: str) -> httpcore.Response:
        fields = {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": CLIENT_ID,
        }
        return self.post_form("/token", fields)


# For the client tests (tests/drivers, tests/cli): what the server saw and issued.


def origin(peer: HttpPeer) -> str:
    return peer.url.rsplit("/", 1)[0]


def stats(peer: HttpPeer) -> dict[str, int]:
    """``GET /test/stats``: the device authorizations, polls and outcomes counted."""
    return dict(json_of(http("GET", f"{origin(peer)}/test/stats")))


def issued(peer: HttpPeer) -> dict[str, list[str]]:
    """``GET /test/secrets``: every device code, user code and token issued."""
    return dict(json_of(http("GET", f"{origin(peer)}/test/secrets")))


def whoami(url: str, access_token: str) -> dict[str, Any]:
    mcp = Mcp(url, access_token)
    mcp.initialize()
    return dict(json.loads(mcp.text("whoami", {})))


def test_discovery_from_the_401_to_the_device_endpoint(device_auth_server: Start) -> None:
    peer = device_auth_server()
    device = Device(peer)
    refused = http("POST", peer.url, [("Content-Type", "application/json")], b"{}")
    assert refused.status == 401
    resource_metadata = challenge(refused)["resource_metadata"]
    assert resource_metadata == f"{device.origin}/.well-known/oauth-protected-resource/mcp"
    prm = json_of(http("GET", resource_metadata))
    assert prm["resource"] == peer.url
    assert prm["authorization_servers"] == [device.origin]
    asm = json_of(http("GET", f"{device.origin}/.well-known/oauth-authorization-server"))
    assert asm["issuer"] == device.origin
    assert asm["device_authorization_endpoint"] == f"{device.origin}/device_authorization"
    assert asm["token_endpoint"] == f"{device.origin}/token"
    assert asm["grant_types_supported"] == [DEVICE_GRANT, "refresh_token"]
    assert asm["token_endpoint_auth_methods_supported"] == ["none"]


def test_device_authorization_answer(device_auth_server: Start) -> None:
    device = Device(device_auth_server("--interval", "3", "--expires-in", "42"))
    answer = device.authorize(scope="user")
    assert set(answer) == {
        "device_code",
        "user_code",
        "verification_uri",
        "verification_uri_complete",
        "expires_in",
        "interval",
    }
    assert answer["verification_uri"] == f"{device.origin}/device"
    query = urllib.parse.urlencode({"user_code": answer["user_code"]})
    assert answer["verification_uri_complete"] == f"{device.origin}/device?{query}"
    assert (answer["expires_in"], answer["interval"]) == (42, 3)
    assert answer["device_code"] != answer["user_code"]
    assert device.stats()["device_authorizations"] == 1


def test_device_authorization_refusals(device_auth_server: Start) -> None:
    device = Device(device_auth_server())
    unknown = device.post_form("/device_authorization", {"client_id": "someone-else"})
    assert (unknown.status, json_of(unknown)["error"]) == (400, "invalid_client")
    elsewhere = device.post_form(
        "/device_authorization",
        {"client_id": CLIENT_ID, "resource": "http://127.0.0.1:9/other"},
    )
    assert (elsewhere.status, json_of(elsewhere)["error"]) == (400, "invalid_target")
    scope = device.post_form("/device_authorization", {"client_id": CLIENT_ID, "scope": "root"})
    assert (scope.status, json_of(scope)["error"]) == (400, "invalid_scope")


def test_pending_then_approved_then_the_mcp_call(device_auth_server: Start) -> None:
    peer = device_auth_server("--interval", "0")
    device = Device(peer)
    answer = device.authorize()
    assert device.error_of(answer["device_code"]) == "authorization_pending"
    assert device.error_of(answer["device_code"]) == "authorization_pending"
    approved = device.knob("approve", {"user_code": answer["user_code"]})
    assert (approved.status, json_of(approved)) == (200, {"approved": answer["user_code"]})
    token = device.token_of(answer["device_code"])
    assert token["token_type"] == "Bearer"
    assert (token["scope"], token["expires_in"]) == ("user", 3600)
    assert token["refresh_token"]
    assert whoami(peer.url, token["access_token"]) == {
        "client_id": CLIENT_ID,
        "subject": "device-user",
        "scopes": ["user"],
        "resource": peer.url,
    }
    # The device code is spent.
    assert device.error_of(answer["device_code"]) == "invalid_request"
    stats = device.stats()
    assert (stats["polls"], stats["pending"], stats["tokens_issued"]) == (3, 2, 1)


def test_token_answer_is_not_cached(device_auth_server: Start) -> None:
    device = Device(device_auth_server("--auto-approve-after", "1"))
    response = device.poll(device.authorize()["device_code"])
    assert response.status == 200
    headers = {key.decode().lower(): value.decode() for key, value in response.headers}
    assert headers["cache-control"] == "no-store"  # RFC 6749 §5.1


def test_slow_down_when_polled_faster_than_the_interval(device_auth_server: Start) -> None:
    device = Device(device_auth_server("--interval", "60"))
    code = device.authorize()["device_code"]
    assert device.error_of(code) == "authorization_pending"  # the first poll may come at once
    assert device.error_of(code) == "slow_down"
    assert device.error_of(code) == "slow_down"  # still too soon: the interval only grew
    stats = device.stats()
    assert (stats["pending"], stats["slow_down"]) == (1, 2)


def test_a_poll_that_waits_the_interval_is_not_slowed_down(device_auth_server: Start) -> None:
    # With an interval of 0 every poll has waited it (RFC 8628 §3.5): none is slowed down.
    device = Device(device_auth_server("--interval", "0"))
    code = device.authorize()["device_code"]
    for _ in range(3):
        assert device.error_of(code) == "authorization_pending"
    assert (device.stats()["pending"], device.stats()["slow_down"]) == (3, 0)


def test_approval_still_wins_over_a_fast_poll(device_auth_server: Start) -> None:
    device = Device(device_auth_server("--interval", "60"))
    answer = device.authorize()
    assert device.error_of(answer["device_code"]) == "authorization_pending"
    assert device.knob("approve", {"user_code": answer["user_code"]}).status == 200
    assert device.token_of(answer["device_code"])["access_token"]


def test_denied(device_auth_server: Start) -> None:
    device = Device(device_auth_server("--interval", "0"))
    answer = device.authorize()
    assert device.error_of(answer["device_code"]) == "authorization_pending"
    denied = device.knob("deny", {"user_code": answer["user_code"]})
    assert (denied.status, json_of(denied)) == (200, {"denied": answer["user_code"]})
    assert device.error_of(answer["device_code"]) == "access_denied"
    assert device.error_of(answer["device_code"]) == "access_denied"
    assert device.stats()["access_denied"] == 2


def test_expired(device_auth_server: Start, wait_until: Callable[..., Any]) -> None:
    device = Device(device_auth_server("--interval", "0", "--expires-in", "1"))
    answer = device.authorize()
    assert answer["expires_in"] == 1
    assert device.error_of(answer["device_code"]) == "authorization_pending"
    wait_until(
        lambda: device.error_of(answer["device_code"]) == "expired_token",
        timeout=10.0,
        message="expired_token",
    )
    # Expiry is checked first: approving now changes nothing.
    assert device.knob("approve", {"user_code": answer["user_code"]}).status == 200
    assert device.error_of(answer["device_code"]) == "expired_token"


def test_auto_approve_after_polls(device_auth_server: Start) -> None:
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "3")
    device = Device(peer)
    code = device.authorize()["device_code"]
    assert device.error_of(code) == "authorization_pending"
    assert device.error_of(code) == "authorization_pending"
    assert whoami(peer.url, device.token_of(code)["access_token"])["subject"] == "device-user"


def test_auto_deny_after_polls(device_auth_server: Start) -> None:
    device = Device(device_auth_server("--interval", "0", "--auto-deny-after", "2"))
    code = device.authorize()["device_code"]
    assert device.error_of(code) == "authorization_pending"
    assert device.error_of(code) == "access_denied"


def test_the_verification_page_approves(device_auth_server: Start) -> None:
    device = Device(device_auth_server("--interval", "0"))
    answer = device.authorize()
    page = http("GET", answer["verification_uri_complete"])
    assert page.status == 200 and answer["user_code"].encode() in page.content
    posted = device.post_form("/device", {"user_code": answer["user_code"], "action": "approve"})
    assert posted.status == 200
    assert device.token_of(answer["device_code"])["access_token"]
    unknown = device.post_form("/device", {"user_code": "NOPE-NOPE", "action": "approve"})
    assert unknown.status == 404
    assert device.knob("approve", {"user_code": "NOPE-NOPE"}).status == 404


def test_refresh_rotates(device_auth_server: Start) -> None:
    peer = device_auth_server("--auto-approve-after", "1")
    device = Device(peer)
    first = device.token_of(device.authorize(scope="user admin")["device_code"])
    assert first["scope"] == "user admin"
    refreshed = device.refresh(first["refresh_token"])
    assert refreshed.status == 200, refreshed.content
    second = json_of(refreshed)
    assert second["refresh_token"] != first["refresh_token"]
    assert second["scope"] == "user admin"
    assert whoami(peer.url, second["access_token"])["scopes"] == ["admin", "user"]
    assert whoami(peer.url, first["access_token"])["subject"] == "device-user"  # lives on
    again = device.refresh(first["refresh_token"])
    assert (again.status, json_of(again)["error"]) == (400, "invalid_grant")
    assert device.stats()["refreshes"] == 1


def test_expired_access_token_is_a_401(device_auth_server: Start, wait_until: Any) -> None:
    peer = device_auth_server("--auto-approve-after", "1", "--access-token-lifetime", "0.5")
    device = Device(peer)
    token = device.token_of(device.authorize()["device_code"])
    assert token["expires_in"] == 1
    wait_until(
        lambda: Mcp(peer.url, token["access_token"]).post({}).status == 401,
        timeout=10.0,
        message="the access token expired",
    )
    assert device.stats()["unauthorized"] >= 1


def test_a_login_that_named_no_resource_gets_tokens_mcp_refuses(device_auth_server: Start) -> None:
    peer = device_auth_server("--auto-approve-after", "1")
    device = Device(peer)
    fields = {"client_id": CLIENT_ID}
    answer = json_of(device.post_form("/device_authorization", fields))
    token = device.token_of(answer["device_code"])
    refused = Mcp(peer.url, token["access_token"]).post(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    )
    assert refused.status == 401
    assert challenge(refused)["error"] == "invalid_token"


def test_slow_down_at_forces_one_and_the_grown_interval_is_then_enforced(
    device_auth_server: Start,
) -> None:
    device = Device(device_auth_server("--interval", "0", "--slow-down-at", "2"))
    code = device.authorize()["device_code"]
    assert device.error_of(code) == "authorization_pending"
    assert device.error_of(code) == "slow_down"  # forced, though the interval is 0
    assert device.error_of(code) == "slow_down"  # sooner than the grown 5 s
    stats = device.stats()
    assert (stats["polls"], stats["pending"], stats["slow_down"]) == (3, 1, 2)


def test_secrets_lists_what_was_issued(device_auth_server: Start) -> None:
    device = Device(device_auth_server("--auto-approve-after", "1"))
    answer = device.authorize()
    token = device.token_of(answer["device_code"])
    issued = json_of(device.knob("secrets"))
    assert issued == {
        "device_codes": [answer["device_code"]],
        "user_codes": [answer["user_code"]],
        "access_tokens": [token["access_token"]],
        "refresh_tokens": [token["refresh_token"]],
    }
