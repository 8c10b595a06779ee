"""OAuth discovery, pure: the ``WWW-Authenticate`` challenge, the well-known URLs to try, and
the two metadata documents.

The flow these pieces serve (MCP 2025-11-25 ``basic/authorization`` "Authorization Server
Discovery"; 2026-07-28 ``basic/authorization/authorization-server-discovery``):

1. A 401 carries ``WWW-Authenticate: Bearer resource_metadata="...", scope="..."``:
   ``bearer_challenge`` reads it.
2. ``protected_resource_metadata_urls`` lists where the RFC 9728 document may be, in the order
   to try them; ``parse_protected_resource_metadata`` checks the first one found (its
   ``resource`` must cover the server) and names the authorization servers.
3. ``authorization_server_metadata_urls`` lists the RFC 8414 / OpenID Connect Discovery URLs of
   an issuer in the spec's order; ``parse_authorization_server_metadata`` checks the first one
   found (its ``issuer`` must be the one the URL was built from, and every endpoint https
   except on loopback).

Nothing here does I/O: the layer that composes these hands ``metadata_request`` results to the
driver as ``StartHttp`` actions and feeds the answers back. Every refusal is an
``AuthorizationFailed`` whose message shows URLs redacted (no userinfo, query or fragment).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

from .._vocabulary.errors import AuthorizationFailed
from .._vocabulary.urls import is_loopback, redact_url, split_http, url_origin
from .._wire.json import loads

__all__ = [
    "AuthChallenge",
    "AuthorizationServerMetadata",
    "OAuthRequest",
    "ProtectedResourceMetadata",
    "UnreadableAnswer",
    "authorization_server_metadata_urls",
    "bearer_challenge",
    "may_fetch",
    "metadata_request",
    "parse_authorization_server_metadata",
    "parse_protected_resource_metadata",
    "parse_www_authenticate",
    "protected_resource_metadata_urls",
    "require_secure",
    "resource_covers",
]

_PRM_SUFFIX = "/.well-known/oauth-protected-resource"
_OAUTH_SUFFIX = "/.well-known/oauth-authorization-server"
_OIDC_SUFFIX = "/.well-known/openid-configuration"
class UnreadableAnswer(AuthorizationFailed):
    """An answer that could not be read (not JSON, not an object, an error status without an
    OAuth error): no definite refusal, so the authorization layer treats it as a failure that
    may pass (``AuthorizationUnavailable``) rather than a refusal for good. A subclass of
    ``AuthorizationFailed`` so that a caller of the parsers who does not care sees one error."""

    def __init__(self, detail: str) -> None:
        super().__init__(None, detail)


@dataclass(frozen=True, slots=True, kw_only=True)
class OAuthRequest:
    """One HTTP request for the driver, ready for a ``StartHttp`` action: ``method``, ``url``,
    ``headers`` (name, value) pairs and ``body`` (``None`` for a GET). A token request's
    headers and body hold secrets (a client secret, a code, a verifier, a refresh token, an
    assertion), so ``repr`` shows the header names and the body's length only."""

    method: Literal["GET", "POST"]
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None = None

    def __repr__(self) -> str:
        names = ", ".join(name for name, _ in self.headers)
        body = "None" if self.body is None else f"<{len(self.body)} bytes>"
        return (
            f"OAuthRequest(method={self.method!r}, url={redact_url(self.url)!r}, "
            f"headers=[{names}], body={body})"
        )


def metadata_request(url: str, *, protocol_version: str | None = None) -> OAuthRequest:
    """A GET for one metadata document (RFC 9728 §3.1, RFC 8414 §3.1). With
    ``protocol_version`` the ``MCP-Protocol-Version`` header goes along, as the official
    Python SDK sends it (``create_oauth_metadata_request``): some MCP servers route on it."""
    headers: tuple[tuple[str, str], ...] = (("Accept", "application/json"),)
    if protocol_version is not None:
        headers += (("MCP-Protocol-Version", protocol_version),)
    return OAuthRequest(method="GET", url=url, headers=headers)


# --- URLs -----------------------------------------------------------------------------------


def may_fetch(url: str, server_url: str) -> bool:
    """Whether the client may send a request to ``url`` on behalf of the MCP server at
    ``server_url``: over https, or plain http when both are on loopback; and a loopback host
    (``is_loopback``) only for a loopback server. A ``resource_metadata`` hint, an issuer or an
    endpoint named by a remote server cannot make the client reach this machine's own services
    (a blind request forgery toward ``localhost`` or ``127.0.0.1``), nor fetch a document over
    plain http that a network attacker could rewrite (MCP 2025-11-25 ``basic/authorization``
    "Communication Security"; OAuth 2.1 §1.5)."""
    try:
        target = split_http(url, "the URL")
        server = split_http(server_url, "the server URL")
    except AuthorizationFailed:
        return False
    server_local = is_loopback(server.hostname or "")
    if is_loopback(target.hostname or ""):
        return server_local
    return target.scheme.lower() == "https"


def require_secure(url: str, what: str = "the authorization server endpoint") -> str:
    """``url`` itself when it may carry secrets: https, or plain http on loopback only.

    MCP 2025-11-25 ``basic/authorization`` "Communication Security" (2026-07-28
    ``basic/authorization/security-considerations``, same section): "All authorization server
    endpoints MUST be served over HTTPS", OAuth 2.1 §1.5; loopback is the exception OAuth 2.1
    §1.5 and RFC 8252 §8.3 make (and what every local test server uses).
    ``AuthorizationFailed`` names ``what`` and the URL redacted otherwise."""
    parts = split_http(url, what)
    if parts.scheme.lower() == "https" or is_loopback(parts.hostname or ""):
        return url
    raise AuthorizationFailed(
        None,
        f"{what} {redact_url(url)!r} is plain http; OAuth needs https (http only on loopback: "
        "localhost, 127.0.0.0/8, ::1)",
    )


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether a protected resource metadata ``resource`` names this server or a parent of it.

    RFC 9728 §3.3 wants the ``resource`` identical to the identifier the well-known URL was
    built from, and that is the root when the document came from the root well-known URL:
    the suite's ``auth/metadata-var2`` serves ``resource: http://host:port`` for a server at
    ``http://host:port/mcp`` and expects the flow to proceed, while ``auth/resource-mismatch``
    (another origin) must stop it. So, as the official Python SDK's ``check_resource_allowed``:
    same scheme, host and port (compared canonically, MCP 2026-07-28 ``basic/authorization``
    "Canonical Server URI": uppercase scheme and host accepted), and the server's path equal to
    the resource's or below it at a segment boundary (``/api`` covers ``/api/mcp``, not
    ``/api2``). A resource with a query covers only a server URL with the same query; one
    with a fragment (RFC 8707 §2 forbids it) covers nothing."""
    server = split_http(server_url, "the server URL")
    try:
        named = split_http(resource, "the resource")
    except AuthorizationFailed:
        return False
    if named.fragment or url_origin(named) != url_origin(server):
        return False
    if named.query and named.query != server.query:
        return False
    named_path = named.path if named.path.endswith("/") else named.path + "/"
    server_path = server.path if server.path.endswith("/") else server.path + "/"
    return server_path.startswith(named_path)


# --- WWW-Authenticate -----------------------------------------------------------------------

_TCHAR = frozenset("!#$%&'*+-.^_`|~" + string.ascii_letters + string.digits)
_TOKEN68 = frozenset("-._~+/" + string.ascii_letters + string.digits)
_SPACE = " \t"


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthChallenge:
    """One challenge of a ``WWW-Authenticate`` header (RFC 9110 §11.6.1): the ``scheme`` in
    lowercase and either ``params`` (names lowercased, values unquoted, the first of a repeated
    name kept) or a ``token68``. The Bearer parameters MCP reads are properties (RFC 6750 §3,
    RFC 9728 §5.1); each is ``None`` when absent."""

    scheme: str
    params: tuple[tuple[str, str], ...] = ()
    token68: str | None = None

    def param(self, name: str) -> str | None:
        """The value of parameter ``name`` (any case), or ``None``."""
        name = name.lower()
        return next((value for key, value in self.params if key == name), None)

    @property
    def resource_metadata(self) -> str | None:
        """RFC 9728 §5.1: the URL of the protected resource metadata."""
        return self.param("resource_metadata")

    @property
    def scope(self) -> str | None:
        """RFC 6750 §3: the space-separated scopes the request needs."""
        return self.param("scope")

    @property
    def error(self) -> str | None:
        """RFC 6750 §3.1: ``invalid_token``, ``insufficient_scope``, ``invalid_request``."""
        return self.param("error")

    @property
    def error_description(self) -> str | None:
        """RFC 6750 §3: a human-readable explanation (the server's words, untrusted)."""
        return self.param("error_description")


def parse_www_authenticate(value: str) -> tuple[AuthChallenge, ...]:
    """Every challenge in a ``WWW-Authenticate`` value, in order (RFC 9110 §11.6.1, §11.2).

    ``challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]``, ``auth-param = token BWS
    "=" BWS ( token / quoted-string )``; several challenges and several header lines (joined
    with ``,``) are one comma-separated list. Scheme and parameter names compare without case.
    A quoted string's ``\\`` escapes the next character. Made to be robust rather than strict,
    because a server's header is untrusted input: an unquoted value runs to the next comma or
    space (so ``resource_metadata=https://x/y`` works, as in the official SDKs' parsers), an
    unterminated quoted string runs to the end, and a stray character is skipped."""
    challenges: list[AuthChallenge] = []
    i, end = 0, len(value)
    while True:
        i = _skip(value, i, _SPACE + ",")
        if i >= end:
            return tuple(challenges)
        scheme_end = _span(value, i, _TCHAR)
        if scheme_end == i:
            i += 1  # not a token: skip the stray character
            continue
        scheme = value[i:scheme_end].lower()
        i = _skip(value, scheme_end, _SPACE)
        if i == scheme_end:  # no space: a bare scheme, then a comma or the end
            challenges.append(AuthChallenge(scheme=scheme))
            continue
        token68, i = _token68(value, i)
        if token68 is not None:
            challenges.append(AuthChallenge(scheme=scheme, token68=token68))
            continue
        params: dict[str, str] = {}
        while (param := _auth_param(value, i)) is not None:
            name, param_value, i = param
            params.setdefault(name, param_value)
            after = _skip(value, i, _SPACE)
            if after >= end or value[after] != ",":
                break
            following = _skip(value, after, _SPACE + ",")
            if _auth_param(value, following) is None:
                break  # the next challenge starts here
            i = following
        challenges.append(AuthChallenge(scheme=scheme, params=tuple(params.items())))


def bearer_challenge(value: str | None) -> AuthChallenge | None:
    """The first ``Bearer`` challenge of a ``WWW-Authenticate`` value (``None`` without one):
    what MCP reads on a 401 (``resource_metadata``, ``scope``; 2025-11-25
    ``basic/authorization`` "Protected Resource Metadata Discovery Requirements") and on a 403
    (``error="insufficient_scope"``, ``scope``; "Scope Challenge Handling"). Without one, the
    first ``DPoP`` challenge (RFC 9449 §7.1), read the same way."""
    if not value:
        return None
    challenges = parse_www_authenticate(value)
    found = next((c for c in challenges if c.scheme == "bearer"), None)
    return found or next((c for c in challenges if c.scheme == "dpop"), None)


def _skip(text: str, i: int, chars: str) -> int:
    while i < len(text) and text[i] in chars:
        i += 1
    return i


def _span(text: str, i: int, chars: frozenset[str]) -> int:
    while i < len(text) and text[i] in chars:
        i += 1
    return i


def _token68(text: str, i: int) -> tuple[str | None, int]:
    """A token68 at ``i`` (it must end the challenge: the text's end or a comma follows)."""
    stop = _skip(text, _span(text, i, _TOKEN68), "=")
    after = _skip(text, stop, _SPACE)
    if stop > i and (after >= len(text) or text[after] == ","):
        return text[i:stop], after
    return None, i


def _auth_param(text: str, i: int) -> tuple[str, str, int] | None:
    """``name=value`` at ``i`` as (lowercased name, value, index after it), or ``None``."""
    name_end = _span(text, i, _TCHAR)
    equals = _skip(text, name_end, _SPACE)
    if name_end == i or equals >= len(text) or text[equals] != "=":
        return None
    start = _skip(text, equals + 1, _SPACE)
    if start < len(text) and text[start] == '"':
        chars: list[str] = []
        j = start + 1
        while j < len(text) and text[j] != '"':
            if text[j] == "\\" and j + 1 < len(text):
                j += 1
            chars.append(text[j])
            j += 1
        return text[i:name_end].lower(), "".join(chars), j + 1
    stop = start
    while stop < len(text) and text[stop] not in _SPACE + ",":
        stop += 1
    return text[i:name_end].lower(), text[start:stop], stop


# --- discovery URLs -------------------------------------------------------------------------


def protected_resource_metadata_urls(
    server_url: str, resource_metadata: str | None = None
) -> tuple[str, ...]:
    """Where to look for the server's RFC 9728 protected resource metadata, in order; the
    layer fetches them one by one and stops at the first document found.

    MCP 2025-11-25 ``basic/authorization`` "Protected Resource Metadata Discovery
    Requirements" (2026-07-28 ``basic/authorization/authorization-server-discovery``, same
    section): the ``resource_metadata`` URL of the 401's challenge when present, else the
    well-known URL "at the path of the server's MCP endpoint", then "at the root". The
    well-known URLs stay after the header's URL as a fallback, as the official Python SDK
    orders them (``build_protected_resource_metadata_discovery_urls``): a hint that fails (no
    answer, an error, a document that cannot be read) falls back to them. RFC 9728 §3.1 builds
    the path form: ``/.well-known/oauth-protected-resource`` goes between the host and the
    path and query (a lone ``/`` path is dropped). A relative header URL is resolved against
    the server URL; one the client may not fetch (``may_fetch``: not https, or on loopback for
    a server that is not) is skipped. No URL appears twice."""
    parts = split_http(server_url, "the server URL")
    origin = url_origin(parts)
    urls: list[str] = []
    if resource_metadata:
        hinted = urljoin(server_url, resource_metadata).partition("#")[0]
        if may_fetch(hinted, server_url):
            urls.append(hinted)
    path = "" if parts.path == "/" else parts.path
    query = f"?{parts.query}" if parts.query else ""
    urls += [origin + _PRM_SUFFIX + path + query, origin + _PRM_SUFFIX]
    return tuple(dict.fromkeys(urls))


def authorization_server_metadata_urls(issuer: str) -> tuple[str, ...]:
    """Where to look for an authorization server's metadata, in the order MCP requires.

    MCP 2025-11-25 ``basic/authorization`` "Authorization Server Metadata Discovery" (and
    2026-07-28 ``basic/authorization/authorization-server-discovery``, same section), built
    on RFC 8414 §3.1 and §5 and OpenID Connect Discovery 1.0 §4. For an issuer with a path
    (``https://auth.example.com/tenant1``): RFC 8414 path insertion
    (``/.well-known/oauth-authorization-server/tenant1``), OIDC path insertion
    (``/.well-known/openid-configuration/tenant1``), OIDC path appending
    (``/tenant1/.well-known/openid-configuration``). Without a path: RFC 8414, then OIDC. A
    terminating ``/`` of the path is dropped first (OIDC Discovery §4; the official Python SDK
    does the same for all three forms).

    ``AuthorizationFailed`` when ``issuer`` is not an https URL (http on loopback only:
    ``require_secure``) or has a query or fragment (RFC 8414 §2 forbids both)."""
    parts = split_http(issuer, "the authorization server issuer")
    require_secure(issuer, "the authorization server issuer")
    if parts.query or parts.fragment:
        raise AuthorizationFailed(
            None,
            f"the authorization server issuer {redact_url(issuer)!r} has a query or fragment "
            "(RFC 8414 §2 allows neither)",
        )
    origin = url_origin(parts)
    path = parts.path.rstrip("/")
    if not path:
        return (origin + _OAUTH_SUFFIX, origin + _OIDC_SUFFIX)
    return (
        origin + _OAUTH_SUFFIX + path,
        origin + _OIDC_SUFFIX + path,
        origin + path + _OIDC_SUFFIX,
    )


# --- metadata documents ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtectedResourceMetadata:
    """An RFC 9728 §2 document that passed ``parse_protected_resource_metadata``.

    ``resource`` covers the server (``resource_covers``) and is the value to send as the
    RFC 8707 ``resource`` parameter, as the official Python SDK does (``get_resource_url``):
    it is the identifier the authorization server knows the server by.
    ``authorization_servers`` are issuer identifiers, at least one (MCP requires it);
    ``scopes_supported`` is ``None`` when the document has none."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizationServerMetadata:
    """An RFC 8414 §2 document (or an OpenID Connect Discovery one) that passed
    ``parse_authorization_server_metadata``: ``issuer`` is the one it was fetched for, every
    endpoint is https (http on loopback), and ``code_challenge_methods_supported`` lists
    ``S256`` when present. Lists are ``None`` when the document leaves them out (RFC 8414
    defaults apply: see ``supports_grant``); flags are ``False`` when absent."""

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    device_authorization_endpoint: str | None = None  # RFC 8628 §4
    scopes_supported: tuple[str, ...] | None = None
    response_types_supported: tuple[str, ...] | None = None
    grant_types_supported: tuple[str, ...] | None = None
    code_challenge_methods_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    token_endpoint_auth_signing_alg_values_supported: tuple[str, ...] | None = None
    client_id_metadata_document_supported: bool = False
    authorization_response_iss_parameter_supported: bool = False
    dpop_signing_alg_values_supported: tuple[str, ...] | None = None  # RFC 9449 §5.1

    def supports_grant(self, grant_type: str) -> bool:
        """Whether the server lists ``grant_type``; RFC 8414 §2: an absent
        ``grant_types_supported`` means ``["authorization_code", "implicit"]``."""
        listed = self.grant_types_supported
        return grant_type in (listed if listed is not None else ("authorization_code", "implicit"))


def default_endpoints(base_url: str) -> AuthorizationServerMetadata:
    """The endpoints of an authorization server that publishes no metadata, at the
    authorization base URL ``base_url`` (an origin): MCP 2025-03-26 ``basic/authorization``,
    "Fallbacks for Servers without Metadata Discovery": "clients MUST use the following
    default endpoint paths relative to the authorization base URL": ``/authorize``,
    ``/token``, ``/register``. PKCE S256 is assumed: "PKCE is REQUIRED for all clients" (same
    page, "Implementation Requirements"), and "When using default paths, all other protocol
    requirements remain unchanged"."""
    return AuthorizationServerMetadata(
        issuer=base_url,
        token_endpoint=f"{base_url}/token",
        authorization_endpoint=f"{base_url}/authorize",
        registration_endpoint=f"{base_url}/register",
        code_challenge_methods_supported=("S256",),
    )


def parse_protected_resource_metadata(body: bytes, *, server_url: str) -> ProtectedResourceMetadata:
    """Check an RFC 9728 protected resource metadata document for the server at
    ``server_url`` (MCP 2025-11-25 and 2026-07-28 ``basic/authorization``: "Authorization
    Server Location"; RFC 9728 §3.2-3.3).

    ``AuthorizationFailed`` when the body is not a JSON object, ``resource`` is missing or does
    not cover the server (``resource_covers``; RFC 9728 §3.3: "MUST NOT be used"), there is no
    ``authorization_servers`` entry (MCP: "MUST include the authorization_servers field
    containing at least one authorization server"), or a list is not a list of strings."""
    what = "the protected resource metadata"
    document = _json_object(body, what)
    resource = document.get("resource")
    if not isinstance(resource, str) or not resource:
        raise AuthorizationFailed(None, f"{what} has no resource (RFC 9728 §2 requires it)")
    if not resource_covers(resource, server_url):
        raise AuthorizationFailed(
            None,
            f"{what} is for resource {redact_url(resource)!r}, which is not the server "
            f"{redact_url(server_url)!r} or a parent of it; it is not used (RFC 9728 §3.3)",
        )
    servers = _strings(document, "authorization_servers", what)
    if not servers:
        raise AuthorizationFailed(None, f"{what} names no authorization server")
    return ProtectedResourceMetadata(
        resource=resource,
        authorization_servers=servers,
        scopes_supported=_strings(document, "scopes_supported", what),
    )


def parse_authorization_server_metadata(body: bytes, *, issuer: str) -> AuthorizationServerMetadata:
    """Check an authorization server metadata document fetched from one of
    ``authorization_server_metadata_urls(issuer)``.

    MCP 2026-07-28 ``basic/authorization/authorization-server-discovery`` "Authorization
    Server Metadata Discovery": "the issuer value in the document MUST be identical to the
    issuer identifier used to construct the well-known URL. If they differ, the client MUST
    NOT use the metadata" (RFC 8414 §3.3, OIDC Discovery §4.3): compared as strings, nothing
    normalised (the suite's ``auth/metadata-issuer-mismatch``). ``token_endpoint`` is required
    (RFC 8414 §2); each endpoint must pass ``require_secure``; a present
    ``code_challenge_methods_supported`` must list ``S256`` (2025-11-25 ``basic/authorization``
    "Authorization Code Protection": "MUST use the S256 code challenge method"; an absent one
    is refused only before the authorization code flow, by ``require_pkce_s256``). The two
    flags must be booleans. ``AuthorizationFailed`` for any of these, or a body that is not a
    JSON object."""
    what = "the authorization server metadata"
    document = _json_object(body, what)
    named = document.get("issuer")
    if named != issuer:
        shown = redact_url(named) if isinstance(named, str) else "no issuer"
        raise AuthorizationFailed(
            None,
            f"{what} fetched for issuer {redact_url(issuer)!r} names {shown!r}; it is not used "
            "(RFC 8414 §3.3: the issuer must be identical)",
        )
    local = is_loopback(urlsplit(issuer).hostname or "")
    token_endpoint = _endpoint(document, "token_endpoint", local)
    if token_endpoint is None:
        raise AuthorizationFailed(None, f"{what} has no token_endpoint (RFC 8414 §2)")
    methods = _strings(document, "code_challenge_methods_supported", what)
    if methods is not None and "S256" not in methods:
        raise AuthorizationFailed(
            None,
            f"{what} offers PKCE methods {', '.join(methods) or 'none'} but not S256, which "
            "MCP requires",
        )
    return AuthorizationServerMetadata(
        issuer=issuer,
        token_endpoint=token_endpoint,
        authorization_endpoint=_endpoint(document, "authorization_endpoint", local),
        registration_endpoint=_endpoint(document, "registration_endpoint", local),
        device_authorization_endpoint=_endpoint(document, "device_authorization_endpoint", local),
        scopes_supported=_strings(document, "scopes_supported", what),
        response_types_supported=_strings(document, "response_types_supported", what),
        grant_types_supported=_strings(document, "grant_types_supported", what),
        code_challenge_methods_supported=methods,
        token_endpoint_auth_methods_supported=_strings(
            document, "token_endpoint_auth_methods_supported", what
        ),
        token_endpoint_auth_signing_alg_values_supported=_strings(
            document, "token_endpoint_auth_signing_alg_values_supported", what
        ),
        client_id_metadata_document_supported=_flag(
            document, "client_id_metadata_document_supported", what
        ),
        authorization_response_iss_parameter_supported=_flag(
            document, "authorization_response_iss_parameter_supported", what
        ),
        dpop_signing_alg_values_supported=_strings(
            document, "dpop_signing_alg_values_supported", what
        ),
    )


def _json_object(body: bytes, what: str) -> Mapping[str, Any]:
    """``body`` parsed as a JSON object, or ``UnreadableAnswer`` saying it is not one."""
    try:
        document = loads(body)
    except (ValueError, RecursionError):
        raise UnreadableAnswer(f"{what} is not JSON") from None
    if not isinstance(document, dict):
        raise UnreadableAnswer(f"{what} is not a JSON object")
    return document


def _strings(document: Mapping[str, Any], key: str, what: str) -> tuple[str, ...] | None:
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise AuthorizationFailed(None, f"{what}: {key} is not a list of strings")
    return tuple(value)


def _flag(document: Mapping[str, Any], key: str, what: str) -> bool:
    value = document.get(key, False)
    if not isinstance(value, bool):
        raise AuthorizationFailed(None, f"{what}: {key} is not true or false")
    return value


def _endpoint(document: Mapping[str, Any], key: str, local: bool) -> str | None:
    """An endpoint of the document: https (http on loopback), and on loopback only when the
    issuer is (``local``): a remote issuer cannot send secrets to this machine's services."""
    value = document.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise AuthorizationFailed(None, f"the authorization server metadata: {key} is not a URL")
    require_secure(value, f"the authorization server's {key}")
    if not local and is_loopback(urlsplit(value).hostname or ""):
        raise AuthorizationFailed(
            None,
            f"the authorization server's {key} {redact_url(value)!r} is on this machine but "
            "its issuer is not; it is not used",
        )
    return value
