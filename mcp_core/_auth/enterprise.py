"""Enterprise-managed authorization, pure building blocks (SEP-990, the MCP authorization
extension ``io.modelcontextprotocol/enterprise-managed-authorization``).

The user signed in to the enterprise's identity provider (single sign-on) and holds an ID
token. The client never sends anyone to a browser or to the authorization server's
authorization endpoint; it exchanges tokens in two legs:

1. at the identity provider's token endpoint, an RFC 8693 token exchange
   (``token_exchange_request``): the ID token as ``subject_token``, asking for an Identity
   Assertion JWT Authorization Grant (ID-JAG) whose ``audience`` is the MCP authorization
   server's issuer and whose ``resource`` is the MCP server's (RFC 9728); the answer is read
   by ``parse_id_jag_response``;
2. at the authorization server's token endpoint, the ID-JAG as an RFC 7523 jwt-bearer grant
   (``id_jag_token_request``), the client authenticated as its metadata allows; the answer is
   an ordinary token answer (``oauth.parse_token_response``).

A refusal at either leg is final and says which leg refused (``AuthorizationFailed`` whose
detail begins "the identity provider" or "the authorization server"). The ID token, the
ID-JAG and the secrets appear in no message and no ``repr``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._config.enterprise import EXTENSION
from .._vocabulary.errors import AuthorizationFailed
from .clients import ClientAuth, _answer, choose_token_endpoint_auth_method
from .metadata import AuthorizationServerMetadata, OAuthRequest
from .oauth import JWT_BEARER_GRANT, _token_request, require_jwt_bearer_grant

__all__ = [
    "EXTENSION",
    "ID_JAG_TYPE",
    "ID_TOKEN_TYPE",
    "TOKEN_EXCHANGE_GRANT",
    "id_jag_token_request",
    "parse_id_jag_response",
    "refused_by_server",
    "token_exchange_request",
]

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"  # RFC 8693 §2.1
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"  # RFC 8693 §3
_IDP = "the identity provider's token endpoint"


def token_exchange_request(
    endpoint: str,
    *,
    id_token: str,
    audience: str,
    resource: str,
    scope: str | None,
    client_id: str,
    client_secret: str | None = None,
    auth_methods: Sequence[str] | None = None,
) -> OAuthRequest:
    """Leg 1 (RFC 8693 §2.1; SEP-990): ``grant_type`` token-exchange, ``requested_token_type``
    ID-JAG, ``audience`` (the authorization server's issuer), ``resource`` (the protected
    resource metadata's), ``scope`` when known, the ID token as ``subject_token`` of type
    ``id_token``, and ``client_id``; with a ``client_secret``, the client authenticates as the
    identity provider's metadata lists (``auth_methods``: its
    ``token_endpoint_auth_methods_supported``, known when it was found by its issuer), else
    with ``client_secret_basic`` (RFC 8414 §2's default, RFC 6749 §2.3.1's method every token
    endpoint supports). ``AuthorizationFailed`` for an endpoint ``require_secure`` refuses
    (the ID token is a credential), or when the listed methods need what the client lacks."""
    fields = [
        ("grant_type", TOKEN_EXCHANGE_GRANT),
        ("requested_token_type", ID_JAG_TYPE),
        ("audience", audience),
        ("resource", resource),
        *([("scope", scope)] if scope is not None else []),
        ("subject_token", id_token),
        ("subject_token_type", ID_TOKEN_TYPE),
    ]
    has_secret = client_secret is not None
    try:
        method = choose_token_endpoint_auth_method(auth_methods, has_secret=has_secret)
    except AuthorizationFailed:
        raise AuthorizationFailed(
            None,
            f"the identity provider's token endpoint accepts {', '.join(auth_methods or ())}, "
            "none of which this client can perform: set oauth idp_client_secret (the secret "
            "methods are the ones it has)",
        ) from None
    auth = ClientAuth(client_id=client_id, method=method, client_secret=client_secret)
    return _token_request(endpoint, auth, fields, what=_IDP)


def parse_id_jag_response(status: int, body: bytes) -> str:
    """The ID-JAG of the identity provider's answer (RFC 8693 §2.2.1: ``access_token`` holds
    the issued token, ``issued_token_type`` says what it is). ``AuthorizationFailed`` when the
    identity provider refused (its OAuth error code kept: ``invalid_grant`` for an ID token it
    no longer takes) or issued something else; ``UnreadableAnswer`` (may pass) as
    ``oauth.parse_token_response``."""
    document = _answer(status, body, _IDP)  # "the identity provider's ... refused"
    token = document.get("access_token")
    if not isinstance(token, str) or not token:
        raise AuthorizationFailed(
            None, "the identity provider's token exchange answer has no access_token (ID-JAG)"
        )
    if document.get("issued_token_type") != ID_JAG_TYPE:
        raise AuthorizationFailed(
            None,
            "the identity provider issued a token that is not an ID-JAG (issued_token_type is "
            f"not {ID_JAG_TYPE})",
        )
    return token


def id_jag_token_request(
    server: AuthorizationServerMetadata,
    *,
    auth: ClientAuth,
    id_jag: str,
    resource: str,
    scope: str | None,
) -> OAuthRequest:
    """Leg 2 (RFC 7523 §2.1; SEP-990): ``grant_type`` jwt-bearer with the ID-JAG as
    ``assertion``, ``scope`` when known and the RFC 8707 ``resource`` (MCP: "MUST be included
    in ... token requests"), authenticated as ``auth`` says (``client_secret_basic`` or
    ``_post``, as the server lists). ``AuthorizationFailed`` as
    ``oauth.require_jwt_bearer_grant`` says, or for an endpoint ``require_secure`` refuses."""
    require_jwt_bearer_grant(server)
    fields = [("grant_type", JWT_BEARER_GRANT), ("assertion", id_jag)]
    fields += [("scope", scope)] if scope is not None else []
    return _token_request(server.token_endpoint, auth, [*fields, ("resource", resource)])


def refused_by_server(refusal: AuthorizationFailed) -> AuthorizationFailed:
    """A refusal of leg 2, saying it was the authorization server that refused the ID-JAG."""
    return AuthorizationFailed(
        refusal.error_code, f"the authorization server refused the ID-JAG: {refusal.detail}"
    )
