"""The OAuth-protected SDK server (tests/servers/py_auth_server.py) works: the whole flow in raw
HTTP (httpcore), no client code of ours.

Discovery (401 -> RFC 9728 -> RFC 8414), registration (RFC 7591), /authorize read as a 302
without following it, the code + PKCE exchange, an MCP initialize and tools/call with the token,
refresh with rotation, refused refreshes, expiry as a 401, step-up as a 403, revocation, and
the /__control/ knobs. Each test starts its own server (the `py_auth_server` fixture waits for
its printed URL with a deadline); every read has a timeout.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import urllib.parse
from collections.abc import Callable
from typing import Any

import httpcore
import pytest

from tests.servers.http_peers import HttpPeer

DEADLINE = 30.0
TIMEOUTS = {"connect": DEADLINE, "read": DEADLINE, "write": DEADLINE, "pool": DEADLINE}
VERSION = "2025-11-25"
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never contacted: the test reads the 302 itself

Headers = list[tuple[str, str]]


# --- raw HTTP ---


def http(
    method: str, url: str, headers: Headers | None = None, body: bytes = b""
) -> httpcore.Response:
    return httpcore.request(
        method, url, headers=headers or [], content=body, extensions={"timeout": TIMEOUTS}
    )


def header(response: httpcore.Response, name: str) -> str | None:
    for key, value in response.headers:
        if key.decode().lower() == name.lower():
            return value.decode()
    return None


def json_of(response: httpcore.Response) -> Any:
    return json.loads(response.content)


def challenge(response: httpcore.Response) -> dict[str, str]:
    """The auth-params of a `Bearer` WWW-Authenticate challenge (quoted values only)."""
    value = header(response, "www-authenticate")
    assert value is not None and value.startswith("Bearer "), (response.status, value)
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


def form(fields: dict[str, str]) -> bytes:
    return urllib.parse.urlencode(fields).encode()


def basic(client_id: str, secret: str) -> tuple[str, str]:
    pair = f"{urllib.parse.quote(client_id)}:{urllib.parse.quote(secret)}"
    return ("Authorization", "Basic " + base64.b64encode(pair.encode()).decode())


FORM = ("Content-Type", "application/x-www-form-urlencoded")


# --- the OAuth flow by hand ---


class Flow:
    """One client of one server: discovery, registration, login, refresh, revocation."""

    def __init__(self, peer: HttpPeer) -> None:
        self.mcp_url = peer.url
        self.origin = peer.url.removesuffix("/mcp")
        self.client_id = ""
        self.client_secret = ""
        self.metadata: dict[str, Any] = {}

    def discover(self) -> dict[str, Any]:
        """401 -> resource_metadata -> protected resource metadata -> AS metadata."""
        response = http("POST", self.mcp_url, [("Content-Type", "application/json")], b"{}")
        assert response.status == 401, response.status
        prm_url = challenge(response)["resource_metadata"]
        resource = json_of(http("GET", prm_url))
        issuer = resource["authorization_servers"][0]
        self.metadata = json_of(http("GET", f"{issuer}/.well-known/oauth-authorization-server"))
        return resource

    def register(self) -> None:
        body = {
            "client_name": "smoke",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_basic",
        }
        response = http(
            "POST",
            self.metadata["registration_endpoint"],
            [("Content-Type", "application/json")],
            json.dumps(body).encode(),
        )
        assert response.status == 201, (response.status, response.content)
        registered = json_of(response)
        self.client_id, self.client_secret = registered["client_id"], registered["client_secret"]

    def authorize(self, scope: str | None = None, resource: str | None = None) -> dict[str, str]:
        """GET /authorize; the query of the 302's Location (not followed), plus `_verifier`
        and `_state` as sent."""
        verifier = secrets.token_urlsafe(48)
        challenge_ = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        state = secrets.token_urlsafe(16)
        query = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": REDIRECT_URI,
            "code_challenge": challenge_.decode().rstrip("="),
            "code_challenge_method": "S256",
            "state": state,
            "resource": resource or self.mcp_url,
        }
        if scope is not None:
            query["scope"] = scope
        url = f"{self.metadata['authorization_endpoint']}?{urllib.parse.urlencode(query)}"
        response = http("GET", url)
        assert response.status == 302, (response.status, response.content)
        location = header(response, "location")
        assert location is not None and location.startswith(REDIRECT_URI + "?"), location
        answer = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))
        return {**answer, "_verifier": verifier, "_state": state}

    def token(self, fields: dict[str, str]) -> httpcore.Response:
        headers = [FORM, basic(self.client_id, self.client_secret)]
        body = form({"client_id": self.client_id, **fields})
        return http("POST", self.metadata["token_endpoint"], headers, body)

    def exchange(self, answer: dict[str, str]) -> dict[str, Any]:
        response = self.token(
            {
                "grant_type": "authorization_code",
                "code": answer["code"],
                "redirect_uri": REDIRECT_URI,
                "code_verifier": answer["_verifier"],
                "resource": self.mcp_url,
            }
        )
        assert response.status == 200, (response.status, response.content)
        return json_of(response)

    def login(self, scope: str | None = None) -> dict[str, Any]:
        """discover + register + authorize + exchange: the token response."""
        self.discover()
        self.register()
        return self.exchange(self.authorize(scope))

    def refresh(self, refresh_token: str) -> httpcore.Response:
        return self.token(
            {
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
                "resource": self.mcp_url,
            }
        )

    def revoke(self, token: str) -> httpcore.Response:
        headers = [FORM, basic(self.client_id, self.client_secret)]
        # client_secret in the body too: the SDK's RevocationRequest requires the field (400
        # without it) even when the client authenticates with Basic, which is what it checks.
        fields = {"client_id": self.client_id, "client_secret": self.client_secret, "token": token}
        body = form(fields)
        return http("POST", self.metadata["revocation_endpoint"], headers, body)

    def control(self, name: str, body: dict[str, Any] | None = None) -> Any:
        url = f"{self.origin}/__control/{name}"
        if name == "stats":
            response = http("GET", url)
        else:
            payload = json.dumps(body or {}).encode()
            response = http("POST", url, [("Content-Type", "application/json")], payload)
        assert response.status == 200, (response.status, response.content)
        return json_of(response)


# --- MCP by hand ---


class Mcp:
    """Legacy Streamable HTTP with a bearer token; answers may be JSON or SSE."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self.session: str | None = None
        self.version: str | None = None
        self.next_id = 0
        self.last: Any = None

    def post(self, message: dict[str, Any]) -> httpcore.Response:
        headers = [
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            ("Authorization", f"Bearer {self.token}"),
        ]
        if self.session is not None:
            headers.append(("Mcp-Session-Id", self.session))
        if self.version is not None:
            headers.append(("MCP-Protocol-Version", self.version))
        return http("POST", self.url, headers, json.dumps(message).encode())

    def request(self, method: str, params: dict[str, Any]) -> tuple[httpcore.Response, Any]:
        """The HTTP response and, when it is a 200, the JSON-RPC answer to this request."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        response = self.post(message)
        if response.status != 200:
            return response, None
        if (header(response, "content-type") or "").startswith("application/json"):
            answers = [json_of(response)]
        else:  # SSE: one JSON-RPC message per `data:` line in these answers
            data = re.findall(rb"^data: ?(.+)$", response.content, re.MULTILINE)
            answers = [json.loads(line) for line in data]
        mine = [answer for answer in answers if answer.get("id") == self.next_id]
        assert len(mine) == 1, answers
        return response, mine[0]

    def initialize(self) -> None:
        params = {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "smoke", "version": "0"},
        }
        response, answer = self.request("initialize", params)
        assert response.status == 200 and "result" in answer, (response.status, response.content)
        self.session = header(response, "mcp-session-id")
        self.version = answer["result"]["protocolVersion"]
        initialized = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert initialized.status == 202, initialized.status

    def call(self, name: str, arguments: dict[str, Any]) -> httpcore.Response:
        """tools/call; the HTTP response (call .text(response) for a 200's text)."""
        response, answer = self.request("tools/call", {"name": name, "arguments": arguments})
        self.last = answer
        return response

    def text(self, name: str, arguments: dict[str, Any]) -> str:
        response = self.call(name, arguments)
        assert response.status == 200, (response.status, response.content)
        result = self.last["result"]
        assert not result.get("isError"), result
        return "".join(block["text"] for block in result["content"] if block["type"] == "text")


StartServer = Callable[..., HttpPeer]


# --- the tests ---


def test_discovery_metadata_and_registration(py_auth_server: StartServer) -> None:
    peer = py_auth_server("--mode", "json")
    flow = Flow(peer)
    response = http("POST", peer.url, [("Content-Type", "application/json")], b"{}")
    assert response.status == 401
    params = challenge(response)
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"] == f"{flow.origin}/.well-known/oauth-protected-resource/mcp"

    resource = flow.discover()
    assert resource["resource"] == peer.url
    assert resource["authorization_servers"] == [flow.origin]
    assert resource["scopes_supported"] == ["user"]
    metadata = flow.metadata
    assert metadata["issuer"] == flow.origin
    paths = {"authorization": "authorize", "token": "token", "registration": "register"}
    for endpoint, path in {**paths, "revocation": "revoke"}.items():
        assert metadata[f"{endpoint}_endpoint"] == f"{flow.origin}/{path}"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert set(metadata["grant_types_supported"]) >= {"authorization_code", "refresh_token"}
    assert set(metadata["scopes_supported"]) == {"user", "admin"}

    flow.register()
    assert flow.client_id and flow.client_secret
    assert flow.control("stats")["registrations"] == 1


@pytest.mark.parametrize("mode", ["stateful", "json", "stateless"])
def test_login_then_call(py_auth_server: StartServer, mode: str) -> None:
    peer = py_auth_server("--mode", mode)
    flow = Flow(peer)
    flow.discover()
    flow.register()
    answer = flow.authorize()
    assert answer["state"] == answer["_state"]
    assert answer["iss"] == flow.origin  # RFC 9207, though the metadata does not advertise it
    assert answer["code"]
    tokens = flow.exchange(answer)
    assert tokens["token_type"].lower() == "bearer"
    assert tokens["scope"] == "user"  # no scope asked for: the base scope
    assert tokens["expires_in"] == 3600
    assert tokens["refresh_token"]

    # the code is single use
    again = flow.token(
        {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "redirect_uri": REDIRECT_URI,
            "code_verifier": answer["_verifier"],
        }
    )
    assert again.status == 400 and json_of(again)["error"] == "invalid_grant"

    mcp = Mcp(peer.url, tokens["access_token"])
    mcp.initialize()
    assert mcp.text("echo", {"text": "hi"}) == "hi"
    who = json.loads(mcp.text("whoami", {}))
    assert who == {"client_id": flow.client_id, "subject": "test-user", "scopes": ["user"]}
    stats = flow.control("stats")
    counts = stats["authorizations"], stats["code_exchanges"], stats["access_tokens_issued"]
    assert counts == (1, 1, 1)
    assert stats["unauthorized"] == 1  # discover()'s tokenless POST


def test_refresh_rotates_and_the_old_refresh_token_is_refused(py_auth_server: StartServer) -> None:
    peer = py_auth_server("--mode", "stateful")
    flow = Flow(peer)
    first = flow.login()
    mcp = Mcp(peer.url, first["access_token"])
    mcp.initialize()

    response = flow.refresh(first["refresh_token"])
    assert response.status == 200, response.content
    second = json_of(response)
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]
    assert second["scope"] == "user"

    mcp.token = second["access_token"]  # the same session: same client, same subject
    assert mcp.text("echo", {"text": "after refresh"}) == "after refresh"

    reused = flow.refresh(first["refresh_token"])
    assert reused.status == 400 and json_of(reused)["error"] == "invalid_grant"
    stats = flow.control("stats")
    counts = stats["refreshes"], stats["refresh_refused"], stats["access_tokens_issued"]
    assert counts == (1, 1, 2)


def test_revoked_refresh_tokens_are_refused(py_auth_server: StartServer) -> None:
    peer = py_auth_server("--mode", "json")
    flow = Flow(peer)
    tokens = flow.login()
    assert flow.control("revoke-refresh-tokens") == {"revoked": 1}
    refused = flow.refresh(tokens["refresh_token"])
    assert refused.status == 400 and json_of(refused)["error"] == "invalid_grant"
    # the access token is untouched; a new login works
    mcp = Mcp(peer.url, tokens["access_token"])
    mcp.initialize()
    fresh = flow.exchange(flow.authorize())
    assert flow.refresh(fresh["refresh_token"]).status == 200
    stats = flow.control("stats")
    assert (stats["refresh_refused"], stats["refreshes"]) == (1, 1)


def test_expired_access_token_gets_401_and_a_refresh_cures_it(py_auth_server: StartServer) -> None:
    peer = py_auth_server("--mode", "stateful")
    flow = Flow(peer)
    tokens = flow.login()
    mcp = Mcp(peer.url, tokens["access_token"])
    mcp.initialize()
    unauthorized = flow.control("stats")["unauthorized"]  # discover()'s 401

    assert flow.control("expire-access-tokens") == {"expired": 1}
    response = mcp.call("echo", {"text": "late"})
    assert response.status == 401
    params = challenge(response)
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
    assert flow.control("stats")["unauthorized"] == unauthorized + 1

    refreshed = flow.refresh(tokens["refresh_token"])
    assert refreshed.status == 200
    mcp.token = json_of(refreshed)["access_token"]
    assert mcp.text("echo", {"text": "on time"}) == "on time"


def test_access_token_lifetime_knobs(py_auth_server: StartServer) -> None:
    peer = py_auth_server("--mode", "json", "--access-token-lifetime", "2.5")
    flow = Flow(peer)
    tokens = flow.login()
    assert tokens["expires_in"] == 3  # whole seconds, rounded up
    assert flow.control("access-token-lifetime", {"seconds": 1}) == {"seconds": 1.0}
    refreshed = json_of(flow.refresh(tokens["refresh_token"]))
    assert refreshed["expires_in"] == 1
    mcp = Mcp(peer.url, refreshed["access_token"])
    mcp.initialize()  # lives for now

    # A lifetime of a microsecond: dead before any request can carry it, no clock to wait on.
    flow.control("access-token-lifetime", {"seconds": 1e-6})
    short = json_of(flow.refresh(refreshed["refresh_token"]))
    assert short["expires_in"] == 1  # whole seconds, rounded up
    mcp.token = short["access_token"]
    assert mcp.call("echo", {"text": "too late"}).status == 401


def test_step_up_on_403_insufficient_scope(py_auth_server: StartServer) -> None:
    peer = py_auth_server("--mode", "stateful")
    flow = Flow(peer)
    tokens = flow.login("user")
    mcp = Mcp(peer.url, tokens["access_token"])
    mcp.initialize()

    response = mcp.call("admin_echo", {"text": "x"})
    assert response.status == 403
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert set(params["scope"].split()) == {"user", "admin"}
    assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
    assert flow.control("stats")["insufficient_scope"] == 1

    # step up: the same client asks for the union of scopes
    stepped = flow.exchange(flow.authorize(params["scope"]))
    assert set(stepped["scope"].split()) == {"user", "admin"}
    mcp.token = stepped["access_token"]
    assert mcp.text("admin_echo", {"text": "x"}) == "admin: x"
    assert json.loads(mcp.text("whoami", {}))["scopes"] == ["admin", "user"]


def test_a_withheld_scope_is_never_granted(py_auth_server: StartServer) -> None:
    peer = py_auth_server("--mode", "json")
    flow = Flow(peer)
    flow.discover()
    flow.register()
    assert flow.control("withhold-scope", {"scope": "admin"}) == {"withheld": ["admin"]}
    narrower = flow.exchange(flow.authorize("user admin"))
    assert narrower["scope"] == "user"  # asked for both, granted less
    mcp = Mcp(peer.url, narrower["access_token"])
    mcp.initialize()
    assert mcp.call("admin_echo", {"text": "x"}).status == 403
    assert flow.control("stats")["insufficient_scope"] == 1


def test_revocation_revokes_the_pair(py_auth_server: StartServer) -> None:
    peer = py_auth_server("--mode", "json")
    flow = Flow(peer)
    tokens = flow.login()
    assert flow.revoke(tokens["refresh_token"]).status == 200
    assert flow.refresh(tokens["refresh_token"]).status == 400
    mcp = Mcp(peer.url, tokens["access_token"])
    response, _ = mcp.request("ping", {})
    assert response.status == 401
    assert flow.control("stats")["revocations"] == 1


def test_a_foreign_resource_is_refused(py_auth_server: StartServer) -> None:
    peer = py_auth_server("--mode", "json")
    flow = Flow(peer)
    flow.discover()
    flow.register()
    answer = flow.authorize(resource="http://127.0.0.1:9/other")
    assert answer["error"] == "invalid_target"
    assert answer["state"] == answer["_state"]
    assert "code" not in answer
