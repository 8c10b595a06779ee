"""OAuth 2.1 for MCP, pure building blocks: PKCE and state from the driver's random bytes,
scope selection, client identity, the requests to the authorization server and checks of its
answers. Discovery and the metadata documents are in ``metadata``, client identity and
token endpoint authentication in ``clients``, URLs in ``_vocabulary/urls``; this module
re-exports them, so the authorization layer imports everything from here.

How a layer composes them for the authorization code flow (MCP 2025-11-25
``basic/authorization`` "Authorization Flow Steps"; 2026-07-28 ``basic/authorization``, same):

1. discovery (``bearer_challenge``, ``protected_resource_metadata_urls``,
   ``authorization_server_metadata_urls`` and the two parsers);
2. client identity: ``choose_registration``, then for dynamic registration
   ``registration_request`` / ``parse_registration_response``;
3. ``select_scope``, ``require_pkce_s256``, ``begin_authorization`` (the driver supplies the
   random bytes) and the browser step, which is the driver's;
4. ``check_authorization_response`` on the redirect's parameters, then
   ``authorization_code_token_request`` / ``parse_token_response``; later
   ``refresh_token_request``; ``client_credentials_token_request`` for machine clients.

Secrets never reach an exception message or a ``repr``: the dataclasses that hold one
(``ClientAuth``, ``PendingAuthorization``, ``RegisteredClient``, ``TokenResponse``,
``OAuthRequest``) show it as ``[redacted]``, and every error names what was wrong, not the
value. Randomness comes in as bytes: there is no ``os.urandom`` here.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode

from .._vocabulary.errors import AuthorizationFailed
from .._vocabulary.urls import (
    REDACTED,
    canonical_resource,
    is_client_id_metadata_url,
    is_loopback,
    origin_of,
    redact_url,
)
from .clients import (
    AUTH_METHODS,
    AuthMethod,
    ClientAuth,
    RegisteredClient,
    _answer,
    _excerpt,
    _refusal,
    choose_registration,
    choose_token_endpoint_auth_method,
    client_assertion_claims,
    client_auth,
    client_metadata_document,
    configured_client,
    parse_registration_response,
    registration_auth_method,
    registration_request,
)
from .metadata import (
    AuthChallenge,
    AuthorizationServerMetadata,
    OAuthRequest,
    ProtectedResourceMetadata,
    UnreadableAnswer,
    authorization_server_metadata_urls,
    bearer_challenge,
    default_endpoints,
    may_fetch,
    metadata_request,
    parse_authorization_server_metadata,
    parse_protected_resource_metadata,
    parse_www_authenticate,
    protected_resource_metadata_urls,
    require_secure,
    resource_covers,
)

__all__ = [
    "AUTH_METHODS",
    "JWT_BEARER_GRANT",
    "AuthChallenge",
    "AuthMethod",
    "AuthorizationServerMetadata",
    "ClientAuth",
    "OAuthRequest",
    "PendingAuthorization",
    "ProtectedResourceMetadata",
    "RegisteredClient",
    "TokenResponse",
    "UnreadableAnswer",
    "authorization_code_token_request",
    "authorization_server_metadata_urls",
    "authorization_url",
    "bearer_challenge",
    "begin_authorization",
    "canonical_resource",
    "check_authorization_response",
    "choose_registration",
    "choose_token_endpoint_auth_method",
    "client_assertion_claims",
    "client_auth",
    "client_credentials_token_request",
    "client_metadata_document",
    "configured_client",
    "default_endpoints",
    "is_client_id_metadata_url",
    "is_loopback",
    "jwt_bearer_token_request",
    "may_fetch",
    "metadata_request",
    "origin_of",
    "parse_authorization_server_metadata",
    "parse_protected_resource_metadata",
    "parse_registration_response",
    "parse_token_response",
    "parse_www_authenticate",
    "pkce_challenge",
    "protected_resource_metadata_urls",
    "refresh_token_request",
    "registration_auth_method",
    "registration_request",
    "require_jwt_bearer_grant",
    "require_pkce_s256",
    "require_secure",
    "resource_covers",
    "select_scope",
    "state_from",
    "union_scopes",
    "verifier_from",
]

_JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"  # RFC 7523 §2.1
_FORM = (("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json"))
# RFC 7636 §4.1: code-verifier = 43*128unreserved.
_VERIFIER = re.compile(r"[A-Za-z0-9\-._~]{43,128}")


# --- PKCE and state -------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def verifier_from(entropy: bytes) -> str:
    """A PKCE ``code_verifier`` made of the driver's random bytes: their base64url form, 43 to
    128 unreserved characters (RFC 7636 §4.1, which recommends 32 octets). ``ValueError``
    unless ``entropy`` has 32 to 96 bytes."""
    if not 32 <= len(entropy) <= 96:
        raise ValueError(f"a PKCE verifier needs 32 to 96 random bytes, got {len(entropy)}")
    return _b64url(entropy)


def pkce_challenge(verifier: str) -> str:
    """The S256 ``code_challenge`` of ``verifier``: ``BASE64URL(SHA256(ASCII(verifier)))``
    (RFC 7636 §4.2; MCP 2025-11-25 ``basic/authorization`` "Authorization Code Protection":
    "MUST use the S256 code challenge method"). ``ValueError`` for a verifier RFC 7636 §4.1
    does not allow (the message does not show it)."""
    if not _VERIFIER.fullmatch(verifier):
        raise ValueError("a PKCE verifier is 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
    return _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def state_from(entropy: bytes) -> str:
    """An opaque ``state`` made of the driver's random bytes (base64url), binding the redirect
    to this request (RFC 6749 §10.12; OAuth 2.1 §7.12). ``ValueError`` unless ``entropy`` has
    16 to 96 bytes (at least 128 bits)."""
    if not 16 <= len(entropy) <= 96:
        raise ValueError(f"a state needs 16 to 96 random bytes, got {len(entropy)}")
    return _b64url(entropy)


# --- scopes ---------------------------------------------------------------------------------


def union_scopes(*scopes: str | None) -> str | None:
    """The union of space-separated scope strings, first occurrence order kept, or ``None``
    when empty. Step-up after a 403 ``insufficient_scope`` asks for the union of what was
    requested before and what the challenge names (MCP 2026-07-28 ``basic/authorization``
    "Step-Up Authorization Flow", SEP-2350; the official Python SDK also folds in the scope the
    token was granted): ``union_scopes(previous, granted, challenge.scope)``."""
    merged = dict.fromkeys(item for scope in scopes if scope for item in scope.split())
    return " ".join(merged) or None


def select_scope(
    *,
    challenge_scope: str | None,
    resource_scopes: Sequence[str] | None,
    server_scopes: Sequence[str] | None,
    wants_refresh: bool = True,
) -> str | None:
    """The ``scope`` to request, or ``None`` to leave the parameter out.

    MCP 2025-11-25 ``basic/authorization`` "Scope Selection Strategy" (2026-07-28, same
    section): the ``scope`` of the 401's challenge when present, else all of the protected
    resource metadata's ``scopes_supported``, else none. Then ``offline_access`` (2026-07-28
    ``basic/authorization`` "Refresh Tokens", SEP-2207: a client that wants refresh tokens "MAY
    add offline_access ... when the Authorization Server metadata contains it in
    scopes_supported"): appended when ``wants_refresh`` and the authorization server's
    ``server_scopes`` list it, and removed otherwise (``auth/offline-access-not-supported``
    fails a client that asks for it unlisted). It is never the only scope: with nothing else
    selected the parameter stays out, as the official Python SDK does
    (``get_client_metadata_scopes``). For a step-up, pass the union as ``challenge_scope``."""
    chosen = (challenge_scope or "").split() or list(resource_scopes or ())
    chosen = [item for item in chosen if item != "offline_access"]
    if chosen and wants_refresh and "offline_access" in (server_scopes or ()):
        chosen.append("offline_access")
    return " ".join(dict.fromkeys(chosen)) or None


# --- the authorization code flow ------------------------------------------------------------


def require_pkce_s256(metadata: AuthorizationServerMetadata) -> None:
    """Refuse to start the authorization code flow without PKCE S256: MCP 2025-11-25
    ``basic/authorization`` "Authorization Code Protection" (2026-07-28
    ``basic/authorization/security-considerations``, same): "If
    code_challenge_methods_supported is absent, the authorization server does not support PKCE
    and MCP clients MUST refuse to proceed" (OIDC providers included). ``AuthorizationFailed``
    when S256 is not listed."""
    if "S256" not in (metadata.code_challenge_methods_supported or ()):
        raise AuthorizationFailed(
            None,
            f"the authorization server {redact_url(metadata.issuer)!r} does not advertise PKCE "
            "S256 (code_challenge_methods_supported), so MCP forbids the authorization code "
            "flow with it",
        )


def authorization_url(
    authorization_endpoint: str,
    *,
    client_id: str,
    redirect_uri: str,
    scope: str | None,
    state: str,
    code_challenge: str,
    resource: str,
) -> str:
    """The URL the user's browser opens (RFC 6749 §4.1.1 with OAuth 2.1 §4.1.1 PKCE):
    ``response_type=code``, ``client_id``, ``redirect_uri``, ``scope`` (left out when
    ``None``), ``state``, ``code_challenge``, ``code_challenge_method=S256`` and the RFC 8707
    ``resource`` (MCP 2025-11-25 ``basic/authorization`` "Resource Parameter Implementation":
    "MUST be included in both authorization requests and token requests"). With
    ``offline_access`` in the scope, ``prompt=consent`` goes along (OpenID Connect Core §11
    requires it for a refresh token; the official Python SDK sends it; plain OAuth servers
    ignore it, RFC 6749 §3.1). A query already in the endpoint is kept (RFC 6749 §3.1).
    Spaces are encoded ``%20``. ``AuthorizationFailed`` for an endpoint ``require_secure``
    refuses."""
    require_secure(authorization_endpoint, "the authorization endpoint")
    params = [
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
        *([("scope", scope)] if scope is not None else []),
        ("state", state),
        ("code_challenge", code_challenge),
        ("code_challenge_method", "S256"),
        ("resource", resource),
    ]
    if scope is not None and "offline_access" in scope.split():
        params.append(("prompt", "consent"))
    base = authorization_endpoint.partition("#")[0]
    joiner = "&" if "?" in base else "?"
    return f"{base}{joiner}{urlencode(params, quote_via=quote)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingAuthorization:
    """One authorization request in flight: the ``url`` to open and what checking its answer
    and redeeming its code need. MCP 2026-07-28 ``basic/authorization`` "Authorization Response
    Validation": "the client MUST record the issuer value from the selected authorization
    server's validated metadata document ... and associate it with the same per-request record
    used to store the PKCE code verifier (and the state value)": this is that record. ``repr``
    hides ``url``, ``state`` and ``code_verifier``."""

    url: str
    state: str
    code_verifier: str
    redirect_uri: str
    resource: str
    issuer: str
    iss_parameter_supported: bool
    scope: str | None = None

    def __repr__(self) -> str:
        return (
            f"PendingAuthorization(url={REDACTED!r}, state={REDACTED!r}, "
            f"code_verifier={REDACTED!r}, redirect_uri={self.redirect_uri!r}, "
            f"resource={self.resource!r}, issuer={self.issuer!r}, "
            f"iss_parameter_supported={self.iss_parameter_supported!r}, scope={self.scope!r})"
        )


def begin_authorization(
    metadata: AuthorizationServerMetadata,
    *,
    client_id: str,
    redirect_uri: str,
    resource: str,
    scope: str | None,
    verifier_entropy: bytes,
    state_entropy: bytes,
) -> PendingAuthorization:
    """Start the authorization code flow: check PKCE S256 support (``require_pkce_s256``),
    make the verifier and state from the driver's random bytes (``verifier_from``,
    ``state_from``), build the ``authorization_url`` and record the issuer. ``resource`` is the
    RFC 8707 value (``ProtectedResourceMetadata.resource``, else ``canonical_resource``).
    ``AuthorizationFailed`` when the server has no authorization endpoint or no S256;
    ``ValueError`` for random bytes of the wrong length."""
    require_pkce_s256(metadata)
    if metadata.authorization_endpoint is None:
        raise AuthorizationFailed(
            None,
            f"the authorization server {redact_url(metadata.issuer)!r} has no "
            "authorization_endpoint",
        )
    verifier = verifier_from(verifier_entropy)
    state = state_from(state_entropy)
    url = authorization_url(
        metadata.authorization_endpoint,
        client_id=client_id,
        redirect_uri=redirect_uri,
        scope=scope,
        state=state,
        code_challenge=pkce_challenge(verifier),
        resource=resource,
    )
    return PendingAuthorization(
        url=url,
        state=state,
        code_verifier=verifier,
        redirect_uri=redirect_uri,
        resource=resource,
        issuer=metadata.issuer,
        iss_parameter_supported=metadata.authorization_response_iss_parameter_supported,
        scope=scope,
    )


def check_authorization_response(
    pending: PendingAuthorization, params: Mapping[str, str] | str
) -> str:
    """The authorization code of the redirect answering ``pending``, or ``AuthorizationFailed``.

    ``params`` is the redirect's query: a mapping, or the raw query string (where a repeated
    parameter is refused, RFC 6749 §3.1). In this order:

    1. ``iss`` (RFC 9207 §2.4, as MCP 2026-07-28 ``basic/authorization`` "Authorization
       Response Validation" tabulates it, before anything else, error responses included):
       present, it must equal the recorded issuer by simple string comparison, "MUST NOT apply
       scheme or host case folding, default-port elision, trailing-slash, or percent-encoding
       normalization" (suite ``auth/iss-wrong-issuer``, ``auth/iss-normalized``), advertised or
       not (``auth/iss-unexpected``); absent, the response is refused only when the server
       advertised ``authorization_response_iss_parameter_supported``
       (``auth/iss-supported-missing``; ``auth/iss-not-advertised`` proceeds).
    2. ``state`` must equal the request's (RFC 6749 §10.12), compared in constant time.
    3. An ``error`` parameter (RFC 6749 §4.1.2.1) becomes ``AuthorizationFailed`` with that
       code; its description shows only as a short excerpt.
    4. A non-empty ``code`` is returned.

    No message shows the code or the state."""
    if isinstance(params, str):
        pairs = parse_qsl(params.removeprefix("?"), keep_blank_values=True)
        if len({name for name, _ in pairs}) != len(pairs):
            raise AuthorizationFailed(
                None, "the authorization response repeats a parameter (RFC 6749 §3.1)"
            )
        params = dict(pairs)
    iss = params.get("iss")
    if iss is not None and iss != pending.issuer:
        raise AuthorizationFailed(
            None,
            f"the authorization response names issuer {redact_url(iss)!r}, not "
            f"{redact_url(pending.issuer)!r} the request went to (compared exactly); refused "
            "as a possible mix-up attack (RFC 9207 §2.4)",
        )
    if iss is None and pending.iss_parameter_supported:
        raise AuthorizationFailed(
            None,
            "the authorization response has no iss parameter although the authorization "
            "server advertises authorization_response_iss_parameter_supported (RFC 9207 §2.4)",
        )
    state = params.get("state")
    if state is None or not hmac.compare_digest(state.encode(), pending.state.encode()):
        raise AuthorizationFailed(
            None,
            "the authorization response's state does not match the request: a stale or "
            "forged redirect (RFC 6749 §10.12)",
        )
    if "error" in params:
        raise _refusal(params, "the authorization server refused the authorization")
    code = params.get("code")
    if not code:
        raise AuthorizationFailed(None, "the authorization response carries no code")
    return code


# --- token requests and answers -------------------------------------------------------------


def authorization_code_token_request(
    token_endpoint: str, *, auth: ClientAuth, code: str, pending: PendingAuthorization
) -> OAuthRequest:
    """Redeem ``code`` (RFC 6749 §4.1.3, OAuth 2.1 §4.1.3): ``grant_type=authorization_code``,
    the code, ``pending``'s ``redirect_uri`` and ``code_verifier`` (RFC 7636 §4.5) and the same
    ``resource`` as the authorization request (RFC 8707 §2; the suite's
    ``resource-parameter-consistency`` check), authenticated as ``auth`` says."""
    fields = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", pending.redirect_uri),
        ("code_verifier", pending.code_verifier),
        ("resource", pending.resource),
    ]
    return _token_request(token_endpoint, auth, fields)


def refresh_token_request(
    token_endpoint: str,
    *,
    auth: ClientAuth,
    refresh_token: str,
    resource: str,
    scope: str | None = None,
) -> OAuthRequest:
    """Refresh (RFC 6749 §6): ``grant_type=refresh_token``, the token, the RFC 8707
    ``resource`` (MCP: "MUST be included in both authorization requests and token requests")
    and ``scope`` only to narrow it (``None`` keeps the granted scope)."""
    fields = [("grant_type", "refresh_token"), ("refresh_token", refresh_token)]
    fields += [("scope", scope)] if scope is not None else []
    return _token_request(token_endpoint, auth, [*fields, ("resource", resource)])


def client_credentials_token_request(
    token_endpoint: str, *, auth: ClientAuth, resource: str, scope: str | None = None
) -> OAuthRequest:
    """A machine client's token (RFC 6749 §4.4; SEP-1046, the
    ``io.modelcontextprotocol/oauth-client-credentials`` extension):
    ``grant_type=client_credentials``, ``scope`` when given and the RFC 8707 ``resource``;
    ``auth`` is ``client_secret_basic``/``_post`` or ``private_key_jwt`` (suite
    ``auth/client-credentials-basic``, ``auth/client-credentials-jwt``)."""
    fields = [("grant_type", "client_credentials")]
    fields += [("scope", scope)] if scope is not None else []
    return _token_request(token_endpoint, auth, [*fields, ("resource", resource)])


def require_jwt_bearer_grant(server: AuthorizationServerMetadata) -> None:
    """``AuthorizationFailed`` (``unsupported_grant_type``) when the authorization server lists
    the grants it supports (RFC 8414 §2 ``grant_types_supported``) without the jwt-bearer
    grant: no request is worth making then (SEP-1933: the server advertises it)."""
    grants = server.grant_types_supported
    if grants is not None and JWT_BEARER_GRANT not in grants:
        raise AuthorizationFailed(
            "unsupported_grant_type",
            f"the authorization server {redact_url(server.issuer)!r} does not list the "
            "jwt-bearer grant (RFC 7523) in grant_types_supported",
        )


def jwt_bearer_token_request(
    server: AuthorizationServerMetadata,
    assertion: str,
    resource: str,
    scope: str | None = None,
    client_id: str | None = None,
) -> OAuthRequest:
    """Workload identity (SEP-1933): the platform's JWT as an RFC 7523 §2.1 authorization
    grant, ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` and ``assertion``, with
    ``scope`` when given, the RFC 8707 ``resource`` and ``client_id`` when configured; no
    client authentication (the assertion is the credential, RFC 7523 §3.1). The assertion is
    opaque here. ``AuthorizationFailed`` as ``require_jwt_bearer_grant`` says, or for an
    endpoint ``require_secure`` refuses."""
    require_jwt_bearer_grant(server)
    require_secure(server.token_endpoint, "the token endpoint")
    fields = [("grant_type", JWT_BEARER_GRANT), ("assertion", assertion)]
    fields += [("scope", scope)] if scope is not None else []
    fields += [("resource", resource)]
    fields += [("client_id", client_id)] if client_id is not None else []
    body = urlencode(fields, quote_via=quote).encode("ascii")
    return OAuthRequest(method="POST", url=server.token_endpoint, headers=_FORM, body=body)


def _token_request(
    endpoint: str,
    auth: ClientAuth,
    fields: list[tuple[str, str]],
    what: str = "the token endpoint",
) -> OAuthRequest:
    """A form POST to the token endpoint (``what``: whose, for the refusal of an insecure
    one), authenticated per ``auth.method``.

    ``client_id`` is in the body for every method: RFC 6749 §3.2.1 allows it, the official
    Python SDK's client always sends it and its authorization server requires it
    (``mcp/server/auth/middleware/client_auth.py``). ``client_secret_basic`` encodes id and
    secret with the form-urlencoding of RFC 6749 §2.3.1 before base64; spaces become ``%20``
    (not ``+``), which form decoders and the SDK's plain ``unquote`` both read back as a space.
    ``private_key_jwt`` adds ``client_assertion_type`` and ``client_assertion`` (RFC 7523
    §2.2)."""
    require_secure(endpoint, what)
    headers: tuple[tuple[str, str], ...] = _FORM
    fields = [*fields, ("client_id", auth.client_id)]
    if auth.method == "client_secret_basic":
        pair = f"{quote(auth.client_id, safe='')}:{quote(auth.client_secret or '', safe='')}"
        basic = base64.b64encode(pair.encode("utf-8")).decode("ascii")
        headers = (*headers, ("Authorization", f"Basic {basic}"))
    elif auth.method == "client_secret_post":
        fields.append(("client_secret", auth.client_secret or ""))
    elif auth.method == "private_key_jwt":
        fields += [
            ("client_assertion_type", _JWT_BEARER),
            ("client_assertion", auth.client_assertion or ""),
        ]
    body = urlencode(fields, quote_via=quote).encode("ascii")
    return OAuthRequest(method="POST", url=endpoint, headers=headers, body=body)


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenResponse:
    """A successful token answer (RFC 6749 §5.1). ``token_type`` is ``"Bearer"`` or ``"DPoP"``
    (RFC 9449 §5; compared without case, RFC 6749 §5.1 / RFC 6750 §4). ``expires_in`` is
    seconds or ``None``; ``scope`` is what was granted (RFC 6749 §5.1: when the answer omits
    it, the requested scope given to ``parse_token_response``). ``repr`` hides both tokens."""

    access_token: str
    token_type: str = "Bearer"
    expires_in: int | None = None
    refresh_token: str | None = None
    scope: str | None = None

    def __repr__(self) -> str:
        refresh = None if self.refresh_token is None else REDACTED
        return (
            f"TokenResponse(access_token={REDACTED!r}, token_type={self.token_type!r}, "
            f"expires_in={self.expires_in!r}, refresh_token={refresh!r}, scope={self.scope!r})"
        )


def parse_token_response(
    status: int, body: bytes, *, requested_scope: str | None = None
) -> TokenResponse:
    """Check a token endpoint answer (RFC 6749 §5.1, §5.2). ``AuthorizationFailed`` with the
    OAuth ``error`` code as ``error_code`` (``invalid_grant``: the refresh token or code is no
    longer good) for an error answer; without a code for a status that is not 2xx, a body that
    is not a JSON object, no ``access_token``, a ``token_type`` other than Bearer or DPoP
    (RFC 9449 §5; whether a proof asked for it is the caller's check) or an ``expires_in``
    that is not a whole number of seconds. Lenient where the official Python SDK's
    ``OAuthToken`` is: a missing ``token_type`` is read as Bearer (RFC 6749 §5.1 requires it;
    some servers leave it out), and ``expires_in`` may be a numeric string or a whole float."""
    document = _answer(status, body, "the token endpoint")
    access_token = document.get("access_token")
    token_type = document.get("token_type")
    expires_in = document.get("expires_in")
    refresh_token = document.get("refresh_token")
    scope = document.get("scope")
    if not isinstance(access_token, str) or not access_token:
        raise AuthorizationFailed(None, "the token answer has no access_token")
    if token_type is not None and (
        not isinstance(token_type, str) or token_type.lower() not in ("bearer", "dpop")
    ):
        shown = _excerpt(token_type) if isinstance(token_type, str) else "not a string"
        raise AuthorizationFailed(
            None, f"the token answer's token_type is {shown!r}, not Bearer or DPoP"
        )
    if (isinstance(expires_in, str) and expires_in.isdigit()) or (
        isinstance(expires_in, float) and expires_in.is_integer()
    ):
        expires_in = int(expires_in)
    if expires_in is not None and (
        not isinstance(expires_in, int) or isinstance(expires_in, bool) or expires_in < 0
    ):
        raise AuthorizationFailed(None, "the token answer's expires_in is not a number of seconds")
    if not isinstance(refresh_token, str | None) or not isinstance(scope, str | None):
        raise AuthorizationFailed(None, "the token answer's refresh_token or scope is not a string")
    return TokenResponse(
        access_token=access_token,
        token_type="DPoP" if token_type is not None and token_type.lower() == "dpop" else "Bearer",
        expires_in=expires_in,
        refresh_token=refresh_token or None,
        scope=scope if scope is not None else requested_scope,
    )
