"""A server of MCP 2025-03-26 publishes no protected resource metadata: the authorization
server is then the MCP server's own origin, its metadata looked for there, and without any
the default endpoints (2025-03-26 ``basic/authorization``, "Authorization Base URL" and
"Fallbacks for Servers without Metadata Discovery")."""

from __future__ import annotations

from typing import Any

import mcp_core as core
from tests.core.auth.test_authorization import (
    ENTROPY,
    PRM_URL,
    REDIRECT,
    SERVER,
    AuthHarness,
)
from tests.core.auth.test_authorization_guarantees import transient

ORIGIN = "https://mcp.example.com"
ROOT_PRM = f"{ORIGIN}/.well-known/oauth-protected-resource"
ORIGIN_AS = f"{ORIGIN}/.well-known/oauth-authorization-server"
ORIGIN_OIDC = f"{ORIGIN}/.well-known/openid-configuration"
CHALLENGE = (("WWW-Authenticate", 'Bearer realm="mcp"'),)


def history_of(h: AuthHarness, kind: type[Any]) -> list[Any]:
    return [a for a in h.history if isinstance(a, kind)]


def no_resource_metadata(h: AuthHarness) -> None:
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.respond(h.fetch(PRM_URL), 404)
    h.respond(h.fetch(ROOT_PRM), 404)


def logged_in(h: AuthHarness, issuer: str, token_endpoint: str) -> None:
    """The browser step, the token, and the session's request sent again with it."""
    h.feed(core.AuthorizationPrepared(now=h.now, redirect_uri=REDIRECT, entropy=ENTROPY))
    h.respond(h.fetch(f"{ORIGIN}/register"), 201, {"client_id": "legacy-client"})
    query = h.authorize_url()
    assert query["client_id"] == "legacy-client"
    assert query["resource"] == SERVER and query["code_challenge_method"] == "S256"
    params = {"code": "code-1", "state": query["state"]}
    h.feed(core.AuthorizationRedirected(now=h.now, params=params))
    token = h.fetch(token_endpoint)
    assert h.form(token)["grant_type"] == "authorization_code"
    assert h.form(token)["resource"] == SERVER
    h.respond(token, 200, {"access_token": "legacy-token", "token_type": "Bearer"})
    assert h.header(h.request("initialize"), "Authorization") == "Bearer legacy-token"
    [save] = h.of(core.SaveAuthorization)
    assert save.authorization.issuer == issuer


def test_the_metadata_at_the_servers_origin_is_used() -> None:
    h = AuthHarness()
    no_resource_metadata(h)
    metadata: dict[str, Any] = {
        "issuer": ORIGIN,
        "authorization_endpoint": f"{ORIGIN}/oauth/authorize",
        "token_endpoint": f"{ORIGIN}/oauth/token",
        "registration_endpoint": f"{ORIGIN}/register",
        "code_challenge_methods_supported": ["S256"],
    }
    h.respond(h.fetch(ORIGIN_AS), 200, metadata)
    [authorize_step] = h.of(core.PrepareAuthorization)
    assert authorize_step
    logged_in(h, ORIGIN, f"{ORIGIN}/oauth/token")
    [authorize] = history_of(h, core.Authorize)
    assert authorize.url.startswith(f"{ORIGIN}/oauth/authorize?")


def test_without_any_metadata_the_default_endpoints_are_used() -> None:
    h = AuthHarness()
    no_resource_metadata(h)
    h.respond(h.fetch(ORIGIN_AS), 404)
    h.respond(h.fetch(ORIGIN_OIDC), 404)
    assert h.of(core.PrepareAuthorization)
    logged_in(h, ORIGIN, f"{ORIGIN}/token")
    [authorize] = history_of(h, core.Authorize)
    assert authorize.url.startswith(f"{ORIGIN}/authorize?")


def test_metadata_at_the_origin_that_may_come_back_is_waited_for_not_defaulted() -> None:
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.respond(h.fetch(PRM_URL), 404)
    h.respond(h.fetch(ROOT_PRM), 404)
    h.respond(h.fetch(ORIGIN_AS), 503)
    h.respond(h.fetch(ORIGIN_OIDC), 404)
    cause = transient(h.error(waiter), "authorization server metadata")
    assert cause.detail == "answered HTTP 503"
    assert not history_of(h, core.PrepareAuthorization)  # no default endpoints assumed


def test_a_legacy_login_without_a_person_asks_for_one() -> None:
    h = AuthHarness(oauth=core.OAuthSettings(interactive=False))
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.respond(h.fetch(PRM_URL), 404)
    h.respond(h.fetch(ROOT_PRM), 404)
    h.respond(h.fetch(ORIGIN_AS), 404)
    h.respond(h.fetch(ORIGIN_OIDC), 404)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed)
    assert isinstance(error.cause, core.AuthorizationRequired)


def test_a_default_endpoint_that_is_not_there_refuses_for_good() -> None:
    """A server that answers 401 with no OAuth at all (an API key it wants, say): the default
    registration endpoint answers 404, and the client says so rather than retrying."""
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    for url in (PRM_URL, ROOT_PRM, ORIGIN_AS, ORIGIN_OIDC):
        h.respond(h.fetch(url), 404)
    h.feed(core.AuthorizationPrepared(now=h.now, redirect_uri=REDIRECT, entropy=ENTROPY))
    register = h.fetch(f"{ORIGIN}/register")
    h.take()
    h.respond(register, 404, b"Not Found")
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert isinstance(error.cause, core.AuthorizationFailed)
    assert "publishes no OAuth metadata" in str(error.cause)
    assert f"'{ORIGIN}/register'" in str(error.cause)
    assert not [a for a in h.actions if isinstance(a, core.StartHttp)]  # nothing asked again
