"""The OAuth building blocks: challenge parsing, discovery, the metadata documents,
PKCE, scopes, client identity, the requests to the authorization server and the checks of its
answers. Pure functions, so tables of inputs and outputs; the conformance scenarios each rule
comes from are named next to its rows."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from urllib.parse import parse_qs, parse_qsl, unquote, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcp_core
from mcp_core import AuthorizationFailed, AuthorizationRequired, McpError
from mcp_core._auth import oauth as oauth

SERVER = "http://localhost:3000/mcp"
ISSUER = "http://localhost:4000"
SECRET = "s3cr3t p@ss+word/%"
VERIFIER_ENTROPY = bytes(range(32))
STATE_ENTROPY = bytes(range(100, 116))


def doc(**fields: object) -> bytes:
    return json.dumps(fields).encode()


def as_metadata(**fields: object) -> oauth.AuthorizationServerMetadata:
    base: dict[str, object] = {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/authorize",
        "token_endpoint": f"{ISSUER}/token",
        "registration_endpoint": f"{ISSUER}/register",
        "code_challenge_methods_supported": ["S256"],
    }
    base.update(fields)
    return oauth.parse_authorization_server_metadata(doc(**base), issuer=ISSUER)


def refused(call: Callable[[], object], *words: str) -> AuthorizationFailed:
    with pytest.raises(AuthorizationFailed) as caught:
        call()
    for word in words:
        assert word in str(caught.value), (word, str(caught.value))
    return caught.value


# --- errors ---------------------------------------------------------------------------------


def test_the_two_errors_say_what_to_do_and_keep_the_oauth_code() -> None:
    required = AuthorizationRequired("github")
    assert isinstance(required, McpError) and required.server == "github"
    assert "mcp-client login github" in str(required) and "HTTP 401" in str(required)
    assert "expired" in AuthorizationRequired("gh", "the refresh token expired").message
    failed = AuthorizationFailed("invalid_grant", "the token endpoint refused")
    assert isinstance(failed, McpError) and failed.error_code == "invalid_grant"
    assert (
        str(failed)
        == "authorization failed: the token endpoint refused (OAuth error 'invalid_grant')"
    )
    assert AuthorizationFailed(None, "x").error_code is None and "OAuth error" not in str(
        AuthorizationFailed(None, "x")
    )
    assert failed == AuthorizationFailed("invalid_grant", "the token endpoint refused")
    assert repr(failed).startswith("AuthorizationFailed(")
    assert mcp_core.AuthorizationFailed is AuthorizationFailed


# --- WWW-Authenticate -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("", []),
        (
            'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource",'
            ' scope="files:read"',
            [
                (
                    "bearer",
                    {
                        "resource_metadata": "https://mcp.example.com/.well-known/oauth-protected-resource",
                        "scope": "files:read",
                    },
                )
            ],
        ),
        # Case-insensitive scheme and names, unquoted values with ':' and '/', no spaces.
        (
            "BEARER Scope=a,Resource_Metadata=https://x/y",
            [("bearer", {"scope": "a", "resource_metadata": "https://x/y"})],
        ),
        # The TypeScript SDK's requireBearerAuth form (the suite's mock servers).
        (
            'Bearer error="invalid_token", error_description="Missing Authorization header", '
            'resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp"',
            [
                (
                    "bearer",
                    {
                        "error": "invalid_token",
                        "error_description": "Missing Authorization header",
                        "resource_metadata": "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                    },
                )
            ],
        ),
        # Several challenges; RFC 9110 §11.6.1's own example.
        (
            'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"',
            [
                ("newauth", {"realm": "apps", "type": "1", "title": 'Login to "apps"'}),
                ("basic", {"realm": "simple"}),
            ],
        ),
        (
            'Basic realm="x", Bearer error="insufficient_scope", scope="a b"',
            [
                ("basic", {"realm": "x"}),
                ("bearer", {"error": "insufficient_scope", "scope": "a b"}),
            ],
        ),
        # BWS around '=', a comma and a scheme inside a quoted string, escapes.
        (
            'Bearer realm = "a, Basic b" , error="x\\\\y"',
            [("bearer", {"realm": "a, Basic b", "error": "x\\y"})],
        ),
        # token68, then another challenge; header lines joined with ", ".
        (
            "Negotiate abc123==, Bearer scope=x",
            [("negotiate", "abc123=="), ("bearer", {"scope": "x"})],
        ),
        ("Negotiate a/b+c", [("negotiate", "a/b+c")]),
        ("Bearer", [("bearer", {})]),
        ("Bearer,Basic", [("bearer", {}), ("basic", {})]),
        (", ,Bearer ,", [("bearer", {})]),
        # Robustness: an unterminated quote runs to the end, an escape at the very end is kept.
        ('Bearer scope="a b', [("bearer", {"scope": "a b"})]),
        ('Bearer x="a\\', [("bearer", {"x": "a\\"})]),
        # A repeated parameter: the first is kept. An empty value is a value.
        ("Bearer scope=a, scope=b, error=", [("bearer", {"scope": "a", "error": ""})]),
        # Stray characters are skipped; what follows still parses.
        ('"junk" Bearer scope=x', [("junk", {}), ("bearer", {"scope": "x"})]),
        ("Bearer=1", [("bearer", {}), ("1", {})]),
        ("Bearer scope=x junk more", [("bearer", {"scope": "x"}), ("junk", "more")]),
        ("Bearer junk more", [("bearer", {}), ("junk", "more")]),
        ("Bearer scope=x, Basic", [("bearer", {"scope": "x"}), ("basic", {})]),
    ],
)
def test_www_authenticate_challenges(header: str, expected: list[tuple[str, object]]) -> None:
    challenges = oauth.parse_www_authenticate(header)
    got: list[tuple[str, object]] = [
        (c.scheme, c.token68 if c.token68 is not None else dict(c.params)) for c in challenges
    ]
    assert got == expected


def test_bearer_challenge_exposes_what_mcp_reads() -> None:
    challenge = oauth.bearer_challenge(
        'Basic realm="x", Bearer error="insufficient_scope", scope="files:write", '
        'resource_metadata="https://m/.well-known/oauth-protected-resource", '
        'error_description="File write permission required"'
    )
    assert challenge is not None
    assert challenge.error == "insufficient_scope" and challenge.scope == "files:write"
    assert challenge.resource_metadata == "https://m/.well-known/oauth-protected-resource"
    assert challenge.error_description == "File write permission required"
    assert challenge.param("SCOPE") == "files:write" and challenge.param("nope") is None
    assert oauth.bearer_challenge(None) is None
    assert oauth.bearer_challenge("") is None
    assert oauth.bearer_challenge('Basic realm="x"') is None
    bare = oauth.bearer_challenge("Bearer")
    assert bare is not None and bare.scope is None and bare.resource_metadata is None


@given(st.text(alphabet=' \t,="\\=abBearer:/', max_size=40))
def test_www_authenticate_never_fails_on_garbage(header: str) -> None:
    for challenge in oauth.parse_www_authenticate(header):
        assert challenge.scheme == challenge.scheme.lower()


# --- URLs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"),
        ("HTTPS://MCP.Example.COM/MCP", "https://mcp.example.com/MCP"),  # the path keeps its case
        ("https://mcp.example.com/", "https://mcp.example.com"),
        ("https://mcp.example.com", "https://mcp.example.com"),
        ("https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp"),
        ("http://localhost:80/mcp", "http://localhost/mcp"),
        ("https://mcp.example.com:8443", "https://mcp.example.com:8443"),
        ("https://user:pw@mcp.example.com/mcp#frag", "https://mcp.example.com/mcp"),
        (
            "https://mcp.example.com/server/mcp/?tenant=a",
            "https://mcp.example.com/server/mcp/?tenant=a",
        ),
        ("http://[::1]:3000/mcp", "http://[::1]:3000/mcp"),
    ],
)
def test_canonical_resource(url: str, canonical: str) -> None:
    assert oauth.canonical_resource(url) == canonical


@pytest.mark.parametrize(
    "url", ["mcp.example.com", "ftp://x/y", "https:///path", "http://x:notaport/", "http://[::1/"]
)
def test_canonical_resource_refuses_what_is_not_an_http_url(url: str) -> None:
    refused(lambda: oauth.canonical_resource(url), "is not an http(s) URL")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("[::1]", True),
        ("::1", True),
        ("128.0.0.1", False),
        ("localhost.example.com", False),
        ("example.com", False),
        ("::2", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert oauth.is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("url", "secure"),
    [
        ("https://as.example.com/token", True),
        ("HTTPS://as.example.com/token", True),
        ("http://localhost:4000/token", True),
        ("http://127.0.0.1/token", True),
        ("http://[::1]:9/token", True),
        ("http://as.example.com/token", False),
        ("http://10.0.0.1/token", False),
    ],
)
def test_require_secure(url: str, secure: bool) -> None:
    if secure:
        assert oauth.require_secure(url) == url
    else:
        error = refused(
            lambda: oauth.require_secure(url, "the token endpoint"), "the token endpoint", "https"
        )
        assert error.error_code is None


def test_require_secure_redacts_the_url_it_shows() -> None:
    error = refused(lambda: oauth.require_secure("http://u:pw@as.example.com/t?key=abc"))
    assert "pw" not in str(error) and "abc" not in str(error)
    refused(lambda: oauth.require_secure("javascript:alert(1)"), "not an http(s) URL")


@pytest.mark.parametrize(
    ("resource", "server", "covers"),
    [
        (SERVER, SERVER, True),
        ("http://localhost:3000", SERVER, True),  # auth/metadata-var2: the root's document
        ("http://localhost:3000/", SERVER, True),
        ("HTTP://LOCALHOST:3000/mcp", SERVER, True),
        ("http://localhost:3000/mcp/", SERVER, True),
        ("https://evil.example.com/mcp", SERVER, False),  # auth/resource-mismatch
        ("http://localhost:3001/mcp", SERVER, False),
        ("https://localhost:3000/mcp", SERVER, False),
        ("http://localhost:3000/mcp/sub", SERVER, False),  # a child does not cover its parent
        ("http://localhost:3000/mc", SERVER, False),  # segment boundary
        ("http://localhost:3000/mcp#x", SERVER, False),  # RFC 8707 §2: no fragment
        ("not a url", SERVER, False),
        ("https://api.example.com/api", "https://api.example.com/api/mcp", True),
        ("https://api.example.com/api", "https://api.example.com/api2/mcp", False),
        ("https://x.example.com:443/mcp", "https://x.example.com/mcp", True),
        ("https://x.example.com/mcp?t=a", "https://x.example.com/mcp?t=a", True),
        ("https://x.example.com/mcp?t=a", "https://x.example.com/mcp?t=b", False),
        ("https://x.example.com/mcp", "https://x.example.com/mcp?t=b", True),
    ],
)
def test_resource_covers(resource: str, server: str, covers: bool) -> None:
    assert oauth.resource_covers(resource, server) is covers


# --- discovery URLs -------------------------------------------------------------------------

PRM = "/.well-known/oauth-protected-resource"


@pytest.mark.parametrize(
    ("server", "hint", "urls"),
    [
        # auth/metadata-var1: no header URL, the path form first, then the root.
        (SERVER, None, [f"http://localhost:3000{PRM}/mcp", f"http://localhost:3000{PRM}"]),
        # auth/metadata-default and -var3: the header's URL first.
        (
            SERVER,
            "http://localhost:3000/custom/metadata/location.json",
            [
                "http://localhost:3000/custom/metadata/location.json",
                f"http://localhost:3000{PRM}/mcp",
                f"http://localhost:3000{PRM}",
            ],
        ),
        # The header naming a well-known URL: no duplicate.
        (
            SERVER,
            f"http://localhost:3000{PRM}/mcp",
            [f"http://localhost:3000{PRM}/mcp", f"http://localhost:3000{PRM}"],
        ),
        # A relative header URL is resolved; its fragment dropped; a non-http one skipped.
        (
            SERVER,
            "/prm.json#x",
            [
                "http://localhost:3000/prm.json",
                f"http://localhost:3000{PRM}/mcp",
                f"http://localhost:3000{PRM}",
            ],
        ),
        (
            SERVER,
            "javascript:alert(1)",
            [f"http://localhost:3000{PRM}/mcp", f"http://localhost:3000{PRM}"],
        ),
        (SERVER, "", [f"http://localhost:3000{PRM}/mcp", f"http://localhost:3000{PRM}"]),
        # A server at the root: one URL. RFC 9728 §3.1: the query follows the inserted string.
        ("https://mcp.example.com/", None, [f"https://mcp.example.com{PRM}"]),
        ("https://mcp.example.com", None, [f"https://mcp.example.com{PRM}"]),
        (
            "https://mcp.example.com/public/mcp/",
            None,
            [f"https://mcp.example.com{PRM}/public/mcp/", f"https://mcp.example.com{PRM}"],
        ),
        (
            "https://mcp.example.com/?t=1",
            None,
            [f"https://mcp.example.com{PRM}?t=1", f"https://mcp.example.com{PRM}"],
        ),
        # Userinfo never leaves for a well-known URL; host case and default port are normalised.
        (
            "https://u:p@MCP.example.com:443/mcp",
            None,
            [f"https://mcp.example.com{PRM}/mcp", f"https://mcp.example.com{PRM}"],
        ),
    ],
)
def test_protected_resource_metadata_urls(server: str, hint: str | None, urls: list[str]) -> None:
    assert list(oauth.protected_resource_metadata_urls(server, hint)) == urls


@pytest.mark.parametrize(
    ("issuer", "urls"),
    [
        # MCP "Authorization Server Metadata Discovery": without a path, RFC 8414 then OIDC.
        (
            "https://auth.example.com",
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ],
        ),
        (
            "https://auth.example.com/",
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ],
        ),
        # With a path: RFC 8414 insert, OIDC insert, OIDC append (auth/metadata-var2, -var3).
        (
            "https://auth.example.com/tenant1",
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ],
        ),
        (
            "http://localhost:4000/a/b/",
            [
                "http://localhost:4000/.well-known/oauth-authorization-server/a/b",
                "http://localhost:4000/.well-known/openid-configuration/a/b",
                "http://localhost:4000/a/b/.well-known/openid-configuration",
            ],
        ),
    ],
)
def test_authorization_server_metadata_urls(issuer: str, urls: list[str]) -> None:
    assert list(oauth.authorization_server_metadata_urls(issuer)) == urls


@pytest.mark.parametrize(
    ("issuer", "words"),
    [
        ("https://auth.example.com/t?x=1", ["query or fragment"]),
        ("https://auth.example.com/t#x", ["query or fragment"]),
        ("http://auth.example.com", ["plain http"]),
        ("auth.example.com", ["not an http(s) URL"]),
    ],
)
def test_authorization_server_metadata_urls_refuse_a_bad_issuer(
    issuer: str, words: list[str]
) -> None:
    refused(lambda: oauth.authorization_server_metadata_urls(issuer), *words)


def test_metadata_request_is_a_plain_get() -> None:
    request = oauth.metadata_request("https://m/.well-known/oauth-protected-resource")
    assert (request.method, request.body) == ("GET", None)
    assert request.headers == (("Accept", "application/json"),)
    versioned = oauth.metadata_request("https://m/x", protocol_version="2025-11-25")
    assert ("MCP-Protocol-Version", "2025-11-25") in versioned.headers


# --- protected resource metadata ------------------------------------------------------------


def test_protected_resource_metadata_parses() -> None:
    metadata = oauth.parse_protected_resource_metadata(
        doc(
            resource=SERVER, authorization_servers=[ISSUER], scopes_supported=["mcp:basic"], extra=1
        ),
        server_url=SERVER,
    )
    assert metadata == oauth.ProtectedResourceMetadata(
        resource=SERVER, authorization_servers=(ISSUER,), scopes_supported=("mcp:basic",)
    )
    root = oauth.parse_protected_resource_metadata(
        doc(resource="http://localhost:3000", authorization_servers=[ISSUER]), server_url=SERVER
    )
    assert root.resource == "http://localhost:3000" and root.scopes_supported is None


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"<html>", ["not JSON"]),
        (b"[1]", ["not a JSON object"]),
        (doc(authorization_servers=[ISSUER]), ["no resource"]),
        (doc(resource="", authorization_servers=[ISSUER]), ["no resource"]),
        (doc(resource=7, authorization_servers=[ISSUER]), ["no resource"]),
        # auth/resource-mismatch
        (
            doc(resource="https://evil.example.com/mcp", authorization_servers=[ISSUER]),
            ["evil.example.com", "not the server"],
        ),
        (doc(resource=SERVER), ["names no authorization server"]),
        (doc(resource=SERVER, authorization_servers=[]), ["names no authorization server"]),
        (
            doc(resource=SERVER, authorization_servers=ISSUER),
            ["authorization_servers is not a list of strings"],
        ),
        (
            doc(resource=SERVER, authorization_servers=[ISSUER], scopes_supported=[1]),
            ["scopes_supported"],
        ),
    ],
)
def test_protected_resource_metadata_refusals(body: bytes, words: list[str]) -> None:
    refused(lambda: oauth.parse_protected_resource_metadata(body, server_url=SERVER), *words)


# --- authorization server metadata ----------------------------------------------------------


def test_authorization_server_metadata_parses_every_field() -> None:
    metadata = as_metadata(
        scopes_supported=["mcp:basic", "offline_access"],
        response_types_supported=["code"],
        grant_types_supported=["authorization_code", "refresh_token"],
        token_endpoint_auth_methods_supported=["none"],
        token_endpoint_auth_signing_alg_values_supported=["ES256"],
        client_id_metadata_document_supported=True,
        authorization_response_iss_parameter_supported=True,
        jwks_uri="https://ignored",
    )
    assert metadata.issuer == ISSUER and metadata.token_endpoint == f"{ISSUER}/token"
    assert metadata.authorization_endpoint == f"{ISSUER}/authorize"
    assert metadata.registration_endpoint == f"{ISSUER}/register"
    assert metadata.scopes_supported == ("mcp:basic", "offline_access")
    assert metadata.response_types_supported == ("code",)
    assert metadata.code_challenge_methods_supported == ("S256",)
    assert metadata.token_endpoint_auth_methods_supported == ("none",)
    assert metadata.token_endpoint_auth_signing_alg_values_supported == ("ES256",)
    assert metadata.client_id_metadata_document_supported is True
    assert metadata.authorization_response_iss_parameter_supported is True
    assert metadata.supports_grant("refresh_token") and not metadata.supports_grant("implicit")


def test_authorization_server_metadata_defaults() -> None:
    metadata = oauth.parse_authorization_server_metadata(
        doc(issuer=ISSUER, token_endpoint=f"{ISSUER}/token", registration_endpoint=None),
        issuer=ISSUER,
    )
    assert metadata.authorization_endpoint is None and metadata.registration_endpoint is None
    assert metadata.code_challenge_methods_supported is None
    assert metadata.client_id_metadata_document_supported is False
    assert metadata.authorization_response_iss_parameter_supported is False
    # RFC 8414 §2: grant_types_supported defaults to authorization_code and implicit.
    assert metadata.supports_grant("authorization_code") and not metadata.supports_grant(
        "client_credentials"
    )


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        # auth/metadata-issuer-mismatch, and RFC 8414 §3.3's exact comparison.
        ({"issuer": "https://attacker.example.com"}, ["attacker.example.com", "not used"]),
        ({"issuer": ISSUER + "/"}, ["identical"]),
        ({"issuer": ISSUER.upper()}, ["identical"]),
        ({"issuer": None}, ["names 'no issuer'"]),
        ({"issuer": 5}, ["no issuer"]),
        ({"token_endpoint": None}, ["no token_endpoint"]),
        ({"token_endpoint": ["x"]}, ["token_endpoint is not a URL"]),
        ({"token_endpoint": "http://as.example.com/token"}, ["token_endpoint", "plain http"]),
        (
            {"authorization_endpoint": "http://as.example.com/authorize"},
            ["authorization_endpoint", "plain http"],
        ),
        (
            {"registration_endpoint": "ftp://as/register"},
            ["registration_endpoint", "not an http(s) URL"],
        ),
        ({"code_challenge_methods_supported": ["plain"]}, ["plain", "not S256"]),
        ({"code_challenge_methods_supported": []}, ["none", "not S256"]),
        ({"code_challenge_methods_supported": "S256"}, ["not a list of strings"]),
        (
            {"client_id_metadata_document_supported": "true"},
            ["client_id_metadata_document_supported is not true or false"],
        ),
        ({"authorization_response_iss_parameter_supported": 1}, ["is not true or false"]),
        ({"grant_types_supported": [None]}, ["grant_types_supported"]),
    ],
)
def test_authorization_server_metadata_refusals(
    fields: dict[str, object], words: list[str]
) -> None:
    refused(lambda: as_metadata(**fields), *words)


def test_authorization_server_metadata_that_is_not_an_object() -> None:
    refused(lambda: oauth.parse_authorization_server_metadata(b"nope", issuer=ISSUER), "not JSON")
    refused(
        lambda: oauth.parse_authorization_server_metadata(b'"x"', issuer=ISSUER),
        "not a JSON object",
    )


# --- PKCE and state -------------------------------------------------------------------------

# RFC 7636 Appendix B.
RFC7636_OCTETS = bytes(
    [
        116,
        24,
        223,
        180,
        151,
        153,
        224,
        37,
        79,
        250,
        96,
        125,
        216,
        173,
        187,
        186,
        22,
        212,
        37,
        77,
        105,
        214,
        191,
        240,
        91,
        88,
        5,
        88,
        83,
        132,
        141,
        121,
    ]
)


def test_pkce_matches_rfc_7636_appendix_b() -> None:
    verifier = oauth.verifier_from(RFC7636_OCTETS)
    assert verifier == "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert oauth.pkce_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


@given(st.binary(min_size=32, max_size=96))
def test_verifiers_are_always_valid(entropy: bytes) -> None:
    verifier = oauth.verifier_from(entropy)
    assert 43 <= len(verifier) <= 128
    assert len(oauth.pkce_challenge(verifier)) == 43


@pytest.mark.parametrize("size", [0, 31, 97])
def test_verifier_from_refuses_too_few_or_many_bytes(size: int) -> None:
    with pytest.raises(ValueError, match="32 to 96 random bytes"):
        oauth.verifier_from(bytes(size))


@pytest.mark.parametrize("verifier", ["short", "x" * 129, "a" * 42 + "!", "é" * 43])
def test_pkce_challenge_refuses_an_invalid_verifier_without_showing_it(verifier: str) -> None:
    with pytest.raises(ValueError) as caught:
        oauth.pkce_challenge(verifier)
    assert verifier not in str(caught.value)


def test_state_from() -> None:
    assert oauth.state_from(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert oauth.state_from(STATE_ENTROPY) != oauth.state_from(bytes(range(16)))
    for size in (15, 97):
        with pytest.raises(ValueError, match="16 to 96 random bytes"):
            oauth.state_from(bytes(size))


# --- scopes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("challenge", "resource", "server", "wants_refresh", "scope"),
    [
        ("mcp:basic", ["mcp:profile"], None, True, "mcp:basic"),  # auth/scope-from-www-authenticate
        (None, ["mcp:a", "mcp:b"], None, True, "mcp:a mcp:b"),  # auth/scope-from-scopes-supported
        (None, None, None, True, None),  # auth/scope-omitted-when-undefined
        (None, None, ["mcp:basic", "offline_access"], True, None),  # never offline_access alone
        ("", [], None, True, None),
        ("  ", ["mcp:x"], None, True, "mcp:x"),
        # auth/offline-access-scope: the AS lists it, the PRM does not.
        (None, ["mcp:basic"], ["mcp:basic", "offline_access"], True, "mcp:basic offline_access"),
        (None, ["mcp:basic"], ["mcp:basic", "offline_access"], False, "mcp:basic"),
        # auth/offline-access-not-supported, and a resource that lists it against the guidance.
        (None, ["mcp:basic", "mcp:read"], ["mcp:basic", "mcp:read"], True, "mcp:basic mcp:read"),
        ("a offline_access b", None, None, True, "a b"),
        ("a offline_access a", None, ["offline_access"], True, "a offline_access"),
    ],
)
def test_select_scope(
    challenge: str | None,
    resource: list[str] | None,
    server: list[str] | None,
    wants_refresh: bool,
    scope: str | None,
) -> None:
    assert (
        oauth.select_scope(
            challenge_scope=challenge,
            resource_scopes=resource,
            server_scopes=server,
            wants_refresh=wants_refresh,
        )
        == scope
    )


def test_union_scopes_keeps_the_first_order() -> None:
    # auth/scope-step-up (SEP-2350): the union, previously requested first.
    assert oauth.union_scopes("mcp:basic", "mcp:write") == "mcp:basic mcp:write"
    assert oauth.union_scopes("a b", None, "b c", "", "a  d") == "a b c d"
    assert oauth.union_scopes(None, "") is None
    assert oauth.union_scopes() is None


# --- client identity ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "valid"),
    [
        ("https://conformance-test.local/client-metadata.json", True),  # auth/basic-cimd
        ("https://app.example.com/oauth/client.json?v=2", True),
        ("http://app.example.com/client.json", False),
        ("https://app.example.com", False),
        ("https://app.example.com/", False),
        ("https://app.example.com/a/../client.json", False),
        ("https://app.example.com/./client.json", False),
        ("https://app.example.com/client.json#x", False),
        ("https://user@app.example.com/client.json", False),
        ("https:///client.json", False),
        ("http://[::1/x", False),
    ],
)
def test_is_client_id_metadata_url(url: str, valid: bool) -> None:
    assert oauth.is_client_id_metadata_url(url) is valid


def test_choose_registration_follows_the_spec_priority() -> None:
    cimd = "https://app.example.com/client.json"
    full = as_metadata(client_id_metadata_document_supported=True)
    assert (
        oauth.choose_registration(full, pre_registered=True, client_id_metadata_url=cimd)
        == "pre-registered"
    )
    assert (
        oauth.choose_registration(full, pre_registered=False, client_id_metadata_url=cimd)
        == "metadata-document"
    )
    assert oauth.choose_registration(full, pre_registered=False) == "dynamic"
    no_cimd = as_metadata()
    assert (
        oauth.choose_registration(no_cimd, pre_registered=False, client_id_metadata_url=cimd)
        == "dynamic"
    )
    bare = as_metadata(registration_endpoint=None)
    refused(lambda: oauth.choose_registration(bare, pre_registered=False), "configure a client_id")
    with pytest.raises(ValueError, match="https with a path"):
        oauth.choose_registration(full, pre_registered=False, client_id_metadata_url="http://x/c")


@pytest.mark.parametrize(
    ("supported", "method"),
    [
        (None, None),
        (["none"], "none"),  # auth/token-endpoint-auth-none
        (["client_secret_basic"], "client_secret_basic"),  # -basic
        (["client_secret_post"], "client_secret_post"),  # -post
        (["client_secret_post", "client_secret_basic", "none"], "none"),
        (["client_secret_post", "client_secret_basic"], "client_secret_basic"),
    ],
)
def test_registration_auth_method(supported: list[str] | None, method: str | None) -> None:
    metadata = as_metadata(token_endpoint_auth_methods_supported=supported)
    assert oauth.registration_auth_method(metadata) == method


def test_registration_auth_method_refuses_what_a_registering_client_cannot_use() -> None:
    metadata = as_metadata(token_endpoint_auth_methods_supported=["private_key_jwt"])
    refused(lambda: oauth.registration_auth_method(metadata), "private_key_jwt", "pre-registered")
    empty = as_metadata(token_endpoint_auth_methods_supported=[])
    refused(lambda: oauth.registration_auth_method(empty), "no method")


def test_registration_request_body() -> None:
    request = oauth.registration_request(
        f"{ISSUER}/register",
        client_name="mcp-client",
        redirect_uris=["http://127.0.0.1:33418/callback"],
        token_endpoint_auth_method="none",
        scope="mcp:basic",
    )
    assert (request.method, request.url) == ("POST", f"{ISSUER}/register")
    assert ("Content-Type", "application/json") in request.headers
    assert request.body is not None and not request.body.endswith(b"\n")
    assert json.loads(request.body) == {
        "client_name": "mcp-client",
        "application_type": "native",  # SEP-837
        "redirect_uris": ["http://127.0.0.1:33418/callback"],
        "grant_types": ["authorization_code", "refresh_token"],  # SEP-2207
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "scope": "mcp:basic",
    }
    machine = oauth.registration_request(
        "https://as.example.com/register",
        client_name="bot",
        redirect_uris=[],
        grant_types=["client_credentials"],
        application_type="web",
    )
    assert machine.body is not None
    assert json.loads(machine.body) == {
        "client_name": "bot",
        "application_type": "web",
        "grant_types": ["client_credentials"],
    }
    refused(
        lambda: oauth.registration_request(
            "http://as.example.com/r", client_name="x", redirect_uris=[]
        ),
        "plain http",
    )


def test_client_metadata_document() -> None:
    url = "https://app.example.com/client.json"
    document = json.loads(
        oauth.client_metadata_document(
            client_id=url, client_name="mcp-client", redirect_uris=["http://127.0.0.1:1/cb"]
        )
    )
    assert document["client_id"] == url and document["token_endpoint_auth_method"] == "none"
    assert document["grant_types"] == ["authorization_code", "refresh_token"]
    assert (
        document["redirect_uris"] == ["http://127.0.0.1:1/cb"]
        and document["client_name"] == "mcp-client"
    )
    with pytest.raises(ValueError, match="https with a path"):
        oauth.client_metadata_document(
            client_id="https://app.example.com", client_name="x", redirect_uris=[]
        )


def test_registration_response() -> None:
    client = oauth.parse_registration_response(
        201,
        doc(
            client_id="abc",
            client_secret=SECRET,
            client_secret_expires_at=0,
            token_endpoint_auth_method="client_secret_basic",
            redirect_uris=["x"],
        ),
    )
    assert client == oauth.RegisteredClient(
        client_id="abc",
        client_secret=SECRET,
        client_secret_expires_at=0,
        token_endpoint_auth_method="client_secret_basic",
    )
    assert SECRET not in repr(client) and "[redacted]" in repr(client)
    public = oauth.parse_registration_response(200, doc(client_id="abc", client_secret=""))
    assert public.client_secret is None and "client_secret=None" in repr(public)


@pytest.mark.parametrize(
    ("status", "body", "code", "words"),
    [
        (
            400,
            doc(error="invalid_redirect_uri", error_description="loopback only"),
            "invalid_redirect_uri",
            ["registration endpoint refused (HTTP 400): loopback only"],
        ),
        (500, b"oops", None, ["registration endpoint answered HTTP 500"]),
        (201, b"oops", None, ["not JSON"]),
        (201, doc(client_secret="x"), None, ["no client_id"]),
        (201, doc(client_id=""), None, ["no client_id"]),
        (201, doc(client_id="a", client_secret=1), None, ["malformed"]),
        (201, doc(client_id="a", client_secret_expires_at="never"), None, ["malformed"]),
        (201, doc(client_id="a", client_secret_expires_at=True), None, ["malformed"]),
        (201, doc(client_id="a", token_endpoint_auth_method=["none"]), None, ["malformed"]),
    ],
)
def test_registration_response_refusals(
    status: int, body: bytes, code: str | None, words: list[str]
) -> None:
    error = refused(lambda: oauth.parse_registration_response(status, body), *words)
    assert error.error_code == code


# --- token endpoint authentication ----------------------------------------------------------


@pytest.mark.parametrize(
    ("supported", "secret", "key", "registered", "method"),
    [
        (
            ["client_secret_basic"],
            True,
            False,
            None,
            "client_secret_basic",
        ),  # auth/pre-registration
        (["client_secret_post"], True, False, None, "client_secret_post"),
        (["none"], False, False, None, "none"),
        (["none"], True, False, None, "none"),
        (["client_secret_post", "client_secret_basic"], True, False, None, "client_secret_basic"),
        (
            ["private_key_jwt", "client_secret_basic"],
            True,
            True,
            None,
            "private_key_jwt",
        ),  # auth/client-credentials-jwt
        (["client_secret_basic"], True, True, None, "client_secret_basic"),
        (None, True, False, None, "client_secret_basic"),  # RFC 8414 §2's default
        (None, False, False, None, "none"),
        (None, False, True, None, "private_key_jwt"),
        # What the registration answer recorded wins (auth/token-endpoint-auth-post).
        (
            ["client_secret_basic", "client_secret_post"],
            True,
            False,
            "client_secret_post",
            "client_secret_post",
        ),
        (["none"], False, False, "none", "none"),
    ],
)
def test_choose_token_endpoint_auth_method(
    supported: list[str] | None, secret: bool, key: bool, registered: str | None, method: str
) -> None:
    assert (
        oauth.choose_token_endpoint_auth_method(
            supported, has_secret=secret, has_private_key=key, registered=registered
        )
        == method
    )


@pytest.mark.parametrize(
    ("supported", "secret", "key", "registered", "words"),
    [
        (["private_key_jwt"], True, False, None, ["private_key_jwt", "configure"]),
        (["client_secret_basic"], False, False, None, ["client_secret_basic"]),
        ([], False, False, None, ["no method"]),
        (None, False, False, "client_secret_basic", ["registered for", "client_secret_basic"]),
        (None, True, False, "private_key_jwt", ["registered for"]),
        (None, True, True, "tls_client_auth", ["tls_client_auth"]),
    ],
)
def test_choose_token_endpoint_auth_method_refusals(
    supported: list[str] | None, secret: bool, key: bool, registered: str | None, words: list[str]
) -> None:
    refused(
        lambda: oauth.choose_token_endpoint_auth_method(
            supported, has_secret=secret, has_private_key=key, registered=registered
        ),
        *words,
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"client_id": "a", "method": "tls_client_auth"}, "unknown token endpoint auth method"),
        ({"client_id": "", "method": "none"}, "client_id is empty"),
        ({"client_id": "a", "method": "client_secret_basic"}, "needs a client_secret"),
        (
            {"client_id": "a", "method": "client_secret_post", "client_secret": ""},
            "needs a client_secret",
        ),
        ({"client_id": "a", "method": "private_key_jwt"}, "needs a signed client_assertion"),
    ],
)
def test_client_auth_refuses_an_incomplete_identity(fields: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        oauth.ClientAuth(**fields)  # type: ignore[arg-type]


def test_client_assertion_claims() -> None:
    claims = oauth.client_assertion_claims(
        client_id="conformance-test-client", audience=ISSUER, issued_at=1_700_000_000, jti="j1"
    )
    assert claims == {
        "iss": "conformance-test-client",
        "sub": "conformance-test-client",
        "aud": ISSUER,
        "iat": 1_700_000_000,
        "exp": 1_700_000_300,
        "jti": "j1",
    }
    assert (
        oauth.client_assertion_claims(
            client_id="c", audience="a", issued_at=0, jti="j", lifetime=60
        )["exp"]
        == 60
    )
    for bad in ({"jti": ""}, {"lifetime": 0}):
        with pytest.raises(ValueError, match="jti and a positive lifetime"):
            oauth.client_assertion_claims(
                **{"client_id": "c", "audience": "a", "issued_at": 0, "jti": "j", **bad}
            )  # type: ignore[arg-type]


# --- the authorization code flow ------------------------------------------------------------


def pending(**fields: object) -> oauth.PendingAuthorization:
    metadata = as_metadata(**fields)
    return oauth.begin_authorization(
        metadata,
        client_id="client-1",
        redirect_uri="http://127.0.0.1:33418/callback",
        resource=SERVER,
        scope="mcp:basic offline_access",
        verifier_entropy=VERIFIER_ENTROPY,
        state_entropy=STATE_ENTROPY,
    )


def test_begin_authorization_builds_the_url_and_records_the_issuer() -> None:
    started = pending(authorization_response_iss_parameter_supported=True)
    parts = urlsplit(started.url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{ISSUER}/authorize"
    query = dict(parse_qsl(parts.query))
    assert query == {
        "response_type": "code",
        "client_id": "client-1",
        "redirect_uri": "http://127.0.0.1:33418/callback",
        "scope": "mcp:basic offline_access",
        "state": started.state,
        "code_challenge": oauth.pkce_challenge(started.code_verifier),
        "code_challenge_method": "S256",
        "resource": SERVER,
        "prompt": "consent",
    }
    assert "%20" in parts.query and "+" not in parts.query
    assert started.code_verifier == oauth.verifier_from(VERIFIER_ENTROPY)
    assert started.state == oauth.state_from(STATE_ENTROPY)
    assert (started.issuer, started.iss_parameter_supported) == (ISSUER, True)
    assert (started.resource, started.scope) == (SERVER, "mcp:basic offline_access")
    for secret in (started.state, started.code_verifier, started.url):
        assert secret not in repr(started)
    assert ISSUER in repr(started)


def test_authorization_url_keeps_the_endpoints_query_and_omits_an_absent_scope() -> None:
    url = oauth.authorization_url(
        "https://as.example.com/authorize?tenant=a#frag",
        client_id="https://app.example.com/client.json",
        redirect_uri="http://localhost:1/cb",
        scope=None,
        state="st",
        code_challenge="ch",
        resource="https://mcp.example.com",
    )
    assert url.startswith("https://as.example.com/authorize?tenant=a&response_type=code&")
    assert "#" not in url and "scope" not in url and "prompt" not in url
    assert parse_qs(urlsplit(url).query)["client_id"] == [
        "https://app.example.com/client.json"
    ]  # auth/basic-cimd
    refused(
        lambda: oauth.authorization_url(
            "http://as.example.com/a",
            client_id="c",
            redirect_uri="r",
            scope=None,
            state="s",
            code_challenge="c",
            resource="r",
        ),
        "the authorization endpoint",
        "plain http",
    )


def test_begin_authorization_refusals() -> None:
    # MCP "Authorization Code Protection": no code_challenge_methods_supported, no flow.
    refused(lambda: pending(code_challenge_methods_supported=None), "does not advertise PKCE")
    refused(lambda: pending(authorization_endpoint=None), "no authorization_endpoint")
    plain = as_metadata()
    oauth.require_pkce_s256(plain)


ISS_TABLE = [
    # (advertised, iss in the redirect, accepted) -- MCP 2026-07-28 "Authorization Response
    # Validation" and the suite's six auth/iss-* scenarios.
    (True, ISSUER, True),  # auth/iss-supported
    (False, None, True),  # auth/iss-not-advertised
    (True, None, False),  # auth/iss-supported-missing
    (True, "https://evil.example.com", False),  # auth/iss-wrong-issuer
    (False, "https://evil.example.com", False),  # auth/iss-unexpected
    (True, ISSUER + "/", False),  # auth/iss-normalized
    (False, ISSUER + "/", False),
    (True, ISSUER.replace("localhost", "LOCALHOST"), False),  # no host case folding
    (True, ISSUER.replace("4000", "4000/%2E"), False),  # no percent-decoding
    (False, ISSUER, True),
]


@pytest.mark.parametrize(("advertised", "iss", "accepted"), ISS_TABLE)
def test_authorization_response_iss(advertised: bool, iss: str | None, accepted: bool) -> None:
    started = pending(authorization_response_iss_parameter_supported=advertised)
    params = {"code": "test-auth-code", "state": started.state}
    if iss is not None:
        params["iss"] = iss
    if accepted:
        assert oauth.check_authorization_response(started, params) == "test-auth-code"
    else:
        error = refused(lambda: oauth.check_authorization_response(started, params), "RFC 9207")
        assert "test-auth-code" not in str(error) and started.state not in str(error)


def test_authorization_response_state_error_and_code() -> None:
    started = pending()
    good = {"code": "c0de", "state": started.state, "iss": ISSUER}
    assert oauth.check_authorization_response(started, good) == "c0de"
    for state in (None, "forged", started.state + "x", "é"):
        params = {**good, "state": state} if state is not None else {"code": "c0de", "iss": ISSUER}
        error = refused(
            lambda params=params: oauth.check_authorization_response(started, params),
            "state does not match",
        )
        assert started.state not in str(error) and "c0de" not in str(error)
    denied = refused(
        lambda: oauth.check_authorization_response(
            started,
            {
                "error": "access_denied",
                "error_description": "The user\nsaid no",
                "state": started.state,
                "iss": ISSUER,
            },
        ),
        "refused the authorization: The user said no",
    )
    assert denied.error_code == "access_denied"
    odd = refused(
        lambda: oauth.check_authorization_response(
            started, {"error": 'bad"code', "state": started.state, "iss": ISSUER}
        )
    )
    assert odd.error_code is None
    # An error from a different issuer is not acted on: the iss check comes first.
    spoofed = refused(
        lambda: oauth.check_authorization_response(
            started,
            {"error": "access_denied", "state": started.state, "iss": "https://evil.example.com"},
        ),
        "mix-up",
    )
    assert spoofed.error_code is None
    refused(
        lambda: oauth.check_authorization_response(
            started, {"state": started.state, "iss": ISSUER}
        ),
        "no code",
    )
    refused(
        lambda: oauth.check_authorization_response(
            started, {"code": "", "state": started.state, "iss": ISSUER}
        ),
        "no code",
    )


def test_authorization_response_from_a_raw_query() -> None:
    started = pending()
    query = f"code=c%20d&state={started.state}&iss={ISSUER}"
    assert oauth.check_authorization_response(started, query) == "c d"
    assert oauth.check_authorization_response(started, "?" + query) == "c d"
    refused(
        lambda: oauth.check_authorization_response(started, query + "&code=other"),
        "repeats a parameter",
    )


# --- token requests -------------------------------------------------------------------------


def form(request: oauth.OAuthRequest) -> dict[str, str]:
    assert request.body is not None
    pairs = parse_qsl(request.body.decode("ascii"), keep_blank_values=True, strict_parsing=True)
    assert len(pairs) == len(dict(pairs))
    return dict(pairs)


def test_authorization_code_token_request_public_client() -> None:
    started = pending()
    request = oauth.authorization_code_token_request(
        f"{ISSUER}/token", auth=oauth.ClientAuth(client_id="client-1"), code="c0de", pending=started
    )
    assert (request.method, request.url) == ("POST", f"{ISSUER}/token")
    assert dict(request.headers) == {
        "Content-Type": "application/x-www-form-urlencoded",
        "Accept": "application/json",
    }
    assert form(request) == {
        "grant_type": "authorization_code",
        "code": "c0de",
        "redirect_uri": "http://127.0.0.1:33418/callback",
        "code_verifier": started.code_verifier,
        "resource": SERVER,  # the same as the authorization request's
        "client_id": "client-1",
    }
    for secret in ("c0de", started.code_verifier):
        assert secret not in repr(request)
    assert "headers=[Content-Type, Accept]" in repr(request) and "bytes>" in repr(request)


def test_client_secret_basic_form_urlencodes_before_base64() -> None:
    # RFC 6749 §2.3.1: id and secret are form-urlencoded, then joined by ':', then base64.
    auth = oauth.ClientAuth(
        client_id="my client:1", method="client_secret_basic", client_secret=SECRET
    )
    request = oauth.refresh_token_request(
        "https://as.example.com/token", auth=auth, refresh_token="rt-1", resource=SERVER
    )
    header = dict(request.headers)["Authorization"]
    assert header.startswith("Basic ")
    pair = base64.b64decode(header.removeprefix("Basic ")).decode()
    assert pair == "my%20client%3A1:s3cr3t%20p%40ss%2Bword%2F%25"
    client_id, _, secret = pair.partition(":")
    assert (unquote(client_id), unquote(secret)) == ("my client:1", SECRET)
    assert form(request) == {
        "grant_type": "refresh_token",
        "refresh_token": "rt-1",
        "resource": SERVER,
        "client_id": "my client:1",
    }
    assert (
        SECRET not in repr(request) and "rt-1" not in repr(request) and header not in repr(request)
    )
    assert "Authorization" in repr(request)


def test_client_secret_post_and_a_narrowed_refresh() -> None:
    auth = oauth.ClientAuth(client_id="c", method="client_secret_post", client_secret=SECRET)
    request = oauth.refresh_token_request(
        f"{ISSUER}/token", auth=auth, refresh_token="rt", resource=SERVER, scope="a b"
    )
    assert "Authorization" not in dict(request.headers)
    assert form(request) == {
        "grant_type": "refresh_token",
        "refresh_token": "rt",
        "scope": "a b",
        "resource": SERVER,
        "client_id": "c",
        "client_secret": SECRET,
    }
    assert request.body is not None and b"a%20b" in request.body


def test_client_credentials_with_private_key_jwt_and_basic() -> None:
    jwt = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJjIn0.sig"
    auth = oauth.ClientAuth(
        client_id="conformance-test-client", method="private_key_jwt", client_assertion=jwt
    )
    request = oauth.client_credentials_token_request(
        f"{ISSUER}/token", auth=auth, resource=SERVER, scope="mcp:basic"
    )
    assert form(request) == {
        "grant_type": "client_credentials",
        "scope": "mcp:basic",
        "resource": SERVER,
        "client_id": "conformance-test-client",
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": jwt,
    }
    assert jwt not in repr(request) and jwt not in repr(auth)
    basic = oauth.ClientAuth(
        client_id="conformance-test-client",
        method="client_secret_basic",
        client_secret="conformance-test-secret",
    )
    request = oauth.client_credentials_token_request(f"{ISSUER}/token", auth=basic, resource=SERVER)
    assert form(request) == {
        "grant_type": "client_credentials",
        "resource": SERVER,
        "client_id": "conformance-test-client",
    }
    pair = base64.b64decode(dict(request.headers)["Authorization"][6:]).decode()
    assert pair == "conformance-test-client:conformance-test-secret"  # the suite splits on ':'
    refused(
        lambda: oauth.client_credentials_token_request(
            "http://as.example.com/token", auth=basic, resource=SERVER
        ),
        "the token endpoint",
        "plain http",
    )


# --- token answers --------------------------------------------------------------------------


def test_token_response_parses() -> None:
    token = oauth.parse_token_response(
        200,
        doc(
            access_token="at-1",
            token_type="bearer",
            expires_in=3600,
            refresh_token="rt-1",
            scope="mcp:basic",
        ),
    )
    assert token == oauth.TokenResponse(
        access_token="at-1", expires_in=3600, refresh_token="rt-1", scope="mcp:basic"
    )
    assert "at-1" not in repr(token) and "rt-1" not in repr(token) and "3600" in repr(token)
    # RFC 6749 §5.1: no scope in the answer means the requested one was granted.
    minimal = oauth.parse_token_response(
        201, doc(access_token="at", token_type="Bearer"), requested_scope="a b"
    )
    assert (minimal.expires_in, minimal.refresh_token, minimal.scope) == (None, None, "a b")
    assert "refresh_token=None" in repr(minimal)
    assert (
        oauth.parse_token_response(
            200, doc(access_token="at", token_type="BEARER", expires_in="60", refresh_token="")
        ).expires_in
        == 60
    )
    assert oauth.parse_token_response(200, doc(access_token="at", expires_in=60.0)) == (
        oauth.TokenResponse(access_token="at", token_type="Bearer", expires_in=60)
    )


@pytest.mark.parametrize(
    ("status", "body", "code", "words"),
    [
        (
            400,
            doc(error="invalid_grant", error_description="refresh token revoked"),
            "invalid_grant",
            ["token endpoint refused (HTTP 400): refresh token revoked"],
        ),
        (401, doc(error="invalid_client"), "invalid_client", ["HTTP 401"]),
        (
            200,
            doc(error="invalid_scope", access_token="x"),
            "invalid_scope",
            ["refused (HTTP 200)"],
        ),
        (400, doc(error="x" * 65), None, ["refused"]),
        (400, doc(error=7, error_description=8), None, ["refused (HTTP 400)"]),
        (400, doc(error="e", error_description="d" * 500), "e", ["d" * 197 + "..."]),
        (502, b"<html>bad gateway</html>", None, ["token endpoint answered HTTP 502"]),
        (302, doc(access_token="x"), None, ["HTTP 302"]),
        (200, b"access_token=x", None, ["not JSON"]),
        (200, b"[]", None, ["not JSON"]),
        (200, doc(token_type="Bearer"), None, ["no access_token"]),
        (200, doc(access_token="", token_type="Bearer"), None, ["no access_token"]),
        (200, doc(access_token="x", token_type=1), None, ["'not a string'", "not Bearer"]),
        (200, doc(access_token="x", token_type="MAC"), None, ["'MAC', not Bearer or DPoP"]),
        (200, doc(access_token="x", token_type="Bearer", expires_in=-1), None, ["expires_in"]),
        (200, doc(access_token="x", token_type="Bearer", expires_in=1.5), None, ["expires_in"]),
        (200, doc(access_token="x", token_type="Bearer", expires_in=-6.0), None, ["expires_in"]),
        (200, doc(access_token="x", token_type="Bearer", expires_in=True), None, ["expires_in"]),
        (200, doc(access_token="x", token_type="Bearer", expires_in="soon"), None, ["expires_in"]),
        (200, doc(access_token="x", token_type="Bearer", refresh_token=5), None, ["not a string"]),
        (200, doc(access_token="x", token_type="Bearer", scope=["a"]), None, ["not a string"]),
    ],
)
def test_token_response_refusals(
    status: int, body: bytes, code: str | None, words: list[str]
) -> None:
    error = refused(lambda: oauth.parse_token_response(status, body), *words)
    assert error.error_code == code
    assert len(error.message) < 400


# --- secrets never show ---------------------------------------------------------------------


def test_no_secret_reaches_a_message_or_a_repr() -> None:
    """No token, code, verifier, client secret or assertion reaches an error message or a
    repr. Every refusal and repr of this module, built from values that are secrets,
    is searched for each of them."""
    secrets = {"client-secret-XYZ", "assertion-XYZ", "access-XYZ", "refresh-XYZ", "code-XYZ"}
    started = pending(authorization_response_iss_parameter_supported=True)
    secrets |= {started.state, started.code_verifier}
    texts: list[str] = [repr(started)]
    for auth in (
        oauth.ClientAuth(
            client_id="c", method="client_secret_basic", client_secret="client-secret-XYZ"
        ),
        oauth.ClientAuth(client_id="c", method="private_key_jwt", client_assertion="assertion-XYZ"),
    ):
        texts.append(repr(auth))
        texts.append(
            repr(
                oauth.authorization_code_token_request(
                    f"{ISSUER}/token", auth=auth, code="code-XYZ", pending=started
                )
            )
        )
        texts.append(
            repr(
                oauth.refresh_token_request(
                    f"{ISSUER}/token", auth=auth, refresh_token="refresh-XYZ", resource=SERVER
                )
            )
        )
    texts.append(
        repr(
            oauth.parse_token_response(
                200,
                doc(access_token="access-XYZ", token_type="Bearer", refresh_token="refresh-XYZ"),
            )
        )
    )
    texts.append(
        repr(
            oauth.parse_registration_response(
                201, doc(client_id="c", client_secret="client-secret-XYZ")
            )
        )
    )
    failures: list[Callable[[], object]] = [
        lambda: oauth.check_authorization_response(started, {"code": "code-XYZ", "state": "wrong"}),
        lambda: oauth.check_authorization_response(
            started, {"code": "code-XYZ", "state": started.state, "iss": "https://x"}
        ),
        lambda: oauth.check_authorization_response(
            started, {"code": "code-XYZ", "state": started.state}
        ),
        lambda: oauth.check_authorization_response(
            started, {"code": "code-XYZ", "state": "s", "iss": ISSUER}
        ),
        lambda: oauth.parse_token_response(
            200, doc(access_token="access-XYZ", token_type="mac", refresh_token="refresh-XYZ")
        ),
        lambda: oauth.parse_token_response(
            200, doc(access_token="access-XYZ", token_type="Bearer", expires_in="x")
        ),
        lambda: oauth.parse_token_response(400, doc(access_token="access-XYZ")),
        lambda: oauth.parse_registration_response(
            201, doc(client_id="c", client_secret="client-secret-XYZ", client_secret_expires_at="x")
        ),
        lambda: oauth.choose_token_endpoint_auth_method(["private_key_jwt"], has_secret=True),
    ]
    for failure in failures:
        error = refused(failure)
        texts += [str(error), repr(error)]
    for text in texts:
        for secret in secrets:
            assert secret not in text, (secret, text)


def test_every_name_is_exported_once() -> None:
    assert len(set(oauth.__all__)) == len(oauth.__all__)
    for name in oauth.__all__:
        assert getattr(oauth, name) is not None, name
