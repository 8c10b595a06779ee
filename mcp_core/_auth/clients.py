"""OAuth client identity, pure: which way a client gets its ``client_id`` (pre-registered,
Client ID Metadata Document, RFC 7591 dynamic registration), how it authenticates at the token
endpoint, and the shared reading of an authorization server's JSON answers.

MCP 2025-11-25 ``basic/authorization`` "Client Registration Approaches" and 2026-07-28
``basic/authorization/client-registration`` are the rules; ``oauth`` re-exports everything
here for the authorization layer. ``RegisteredClient`` and ``ClientAuth`` hold secrets and show
them as ``[redacted]``; no error message shows a secret or an assertion.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._config.oauth_settings import OAuthSettings
from .._vocabulary.errors import AuthorizationFailed
from .._vocabulary.urls import REDACTED, is_client_id_metadata_url, redact_url
from .._wire.json import dumps_line, loads
from .metadata import (
    AuthorizationServerMetadata,
    OAuthRequest,
    UnreadableAnswer,
    require_secure,
)

__all__ = [
    "AUTH_METHODS",
    "AuthMethod",
    "ClientAuth",
    "RegisteredClient",
    "choose_registration",
    "choose_token_endpoint_auth_method",
    "client_assertion_claims",
    "client_auth",
    "client_metadata_document",
    "configured_client",
    "parse_registration_response",
    "registration_auth_method",
    "registration_request",
]

AuthMethod = Literal["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]
# The token endpoint authentication methods this client can perform (RFC 6749 §2.3.1,
# RFC 7591 §2, RFC 7523 §2.2), in the order it prefers them when the server lists several:
# a key over a secret, and the secret in a header (RFC 6749 §2.3.1: the body form "is NOT
# RECOMMENDED").
AUTH_METHODS: tuple[AuthMethod, ...] = (
    "private_key_jwt",
    "client_secret_basic",
    "client_secret_post",
    "none",
)
# What a dynamically registering client asks for, in order: a native client is public
# (RFC 8252 §8.4), and it has no key to register for private_key_jwt.
_REGISTRATION_METHODS: tuple[AuthMethod, ...] = (
    "none",
    "client_secret_basic",
    "client_secret_post",
)
# RFC 6749 §5.2 / Appendix A.7: error = 1*NQSCHAR (no '"' and no '\').
_ERROR_CODE = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]{1,64}")
_EXCERPT = 200
# OAuth error codes that say the server cannot answer now, not that it refuses (RFC 6749
# §4.1.2.1): an answer with one of them is a failure that may pass.
_TRY_LATER = frozenset({"temporarily_unavailable", "server_error"})


# --- client identity ------------------------------------------------------------------------





def choose_registration(
    metadata: AuthorizationServerMetadata,
    *,
    pre_registered: bool,
    client_id_metadata_url: str | None = None,
) -> Literal["pre-registered", "metadata-document", "dynamic"]:
    """How this client gets a ``client_id`` at this authorization server.

    MCP 2026-07-28 ``basic/authorization/client-registration`` (2025-11-25
    ``basic/authorization`` "Client Registration Approaches"), in its priority order:
    pre-registered credentials; a Client ID Metadata Document URL when the server advertises
    ``client_id_metadata_document_supported`` (``auth/basic-cimd``); RFC 7591 dynamic
    registration when it has a ``registration_endpoint``. ``AuthorizationFailed`` saying what to
    configure when none applies; ``ValueError`` for a ``client_id_metadata_url`` that
    ``is_client_id_metadata_url`` refuses."""
    if client_id_metadata_url is not None and not is_client_id_metadata_url(client_id_metadata_url):
        raise ValueError("a Client ID Metadata Document URL must be https with a path")
    if pre_registered:
        return "pre-registered"
    if client_id_metadata_url is not None and metadata.client_id_metadata_document_supported:
        return "metadata-document"
    if metadata.registration_endpoint is not None:
        return "dynamic"
    raise AuthorizationFailed(
        None,
        f"the authorization server {redact_url(metadata.issuer)!r} supports neither Client ID "
        "Metadata Documents nor dynamic registration: configure a client_id (and "
        "client_secret) registered with it",
    )


def registration_auth_method(metadata: AuthorizationServerMetadata) -> AuthMethod | None:
    """The ``token_endpoint_auth_method`` to ask for in a dynamic registration: ``none`` (a
    native public client, RFC 8252 §8.4) when the server lists it, else
    ``client_secret_basic``, else ``client_secret_post``; ``None`` (leave it to the server,
    RFC 7591 §2) when the server lists no methods. ``AuthorizationFailed`` when it lists only
    methods a registering client cannot use."""
    listed = metadata.token_endpoint_auth_methods_supported
    if listed is None:
        return None
    for method in _REGISTRATION_METHODS:
        if method in listed:
            return method
    raise AuthorizationFailed(
        None,
        f"the authorization server accepts only {', '.join(listed) or 'no method'} at its "
        "token endpoint, which a dynamically registered client cannot use: configure a "
        "pre-registered client",
    )


def registration_request(
    registration_endpoint: str,
    *,
    client_name: str,
    redirect_uris: Sequence[str],
    grant_types: Sequence[str] = ("authorization_code", "refresh_token"),
    token_endpoint_auth_method: str | None = None,
    application_type: Literal["native", "web"] = "native",
    scope: str | None = None,
) -> OAuthRequest:
    """An RFC 7591 §3.1 registration request (a JSON POST).

    ``application_type`` is always sent: MCP 2026-07-28 ``basic/authorization/client-
    registration`` "Application Type and Redirect URI Constraints" (SEP-837): "MCP clients
    MUST specify an appropriate application_type"; ``native`` fits a client with a loopback
    redirect. ``grant_types`` includes ``refresh_token`` by default (2026-07-28
    ``basic/authorization`` "Refresh Tokens": "SHOULD include refresh_token in their
    grant_types"); ``response_types`` is ``["code"]`` when ``authorization_code`` is among
    them; ``redirect_uris`` is left out when empty (a ``client_credentials`` client);
    ``token_endpoint_auth_method`` when ``None`` (see ``registration_auth_method``).
    ``AuthorizationFailed`` for an endpoint ``require_secure`` refuses."""
    require_secure(registration_endpoint, "the registration endpoint")
    document: dict[str, object] = {"client_name": client_name, "application_type": application_type}
    if redirect_uris:
        document["redirect_uris"] = list(redirect_uris)
    document["grant_types"] = list(grant_types)
    if "authorization_code" in grant_types:
        document["response_types"] = ["code"]
    if token_endpoint_auth_method is not None:
        document["token_endpoint_auth_method"] = token_endpoint_auth_method
    if scope is not None:
        document["scope"] = scope
    return OAuthRequest(
        method="POST",
        url=registration_endpoint,
        headers=(("Content-Type", "application/json"), ("Accept", "application/json")),
        body=dumps_line(document)[:-1],
    )


def client_metadata_document(
    *,
    client_id: str,
    client_name: str,
    redirect_uris: Sequence[str],
    grant_types: Sequence[str] = ("authorization_code", "refresh_token"),
) -> bytes:
    """The JSON a user hosts at ``client_id`` to use it as a Client ID Metadata Document
    (draft-ietf-oauth-client-id-metadata-document-00 §4; MCP 2026-07-28
    ``basic/authorization/client-registration``: "MUST include at least ... client_id,
    client_name, redirect_uris" and "client_id ... matches the document URL exactly"), for a
    public client (``token_endpoint_auth_method`` ``none``). ``ValueError`` for a ``client_id``
    ``is_client_id_metadata_url`` refuses."""
    if not is_client_id_metadata_url(client_id):
        raise ValueError("a Client ID Metadata Document URL must be https with a path")
    document = {
        "client_id": client_id,
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": list(grant_types),
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    return dumps_line(document)[:-1]


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisteredClient:
    """What an RFC 7591 §3.2.1 registration answer granted. ``client_secret_expires_at`` is
    seconds since the epoch, 0 for never (``None`` when not sent). ``token_endpoint_auth_method``
    is what the server recorded (``None`` when it did not say). ``repr`` hides the secret."""

    client_id: str
    client_secret: str | None = None
    client_secret_expires_at: int | None = None
    token_endpoint_auth_method: str | None = None

    def __repr__(self) -> str:
        secret = None if self.client_secret is None else REDACTED
        return (
            f"RegisteredClient(client_id={self.client_id!r}, client_secret={secret!r}, "
            f"client_secret_expires_at={self.client_secret_expires_at!r}, "
            f"token_endpoint_auth_method={self.token_endpoint_auth_method!r})"
        )


def parse_registration_response(status: int, body: bytes) -> RegisteredClient:
    """Check a registration answer (RFC 7591 §3.2): 2xx with a ``client_id``, or
    ``AuthorizationFailed`` carrying the RFC 7591 §3.2.2 ``error`` code (e.g.
    ``invalid_redirect_uri``) as ``error_code``. A ``client_secret_basic``/``_post`` method
    without a secret is caught later, by ``choose_token_endpoint_auth_method``."""
    document = _answer(status, body, "the registration endpoint")
    client_id = document.get("client_id")
    secret = document.get("client_secret")
    expires = document.get("client_secret_expires_at")
    method = document.get("token_endpoint_auth_method")
    if not isinstance(client_id, str) or not client_id:
        raise AuthorizationFailed(None, "the registration answer has no client_id")
    if not (
        isinstance(secret, str | None)
        and (expires is None or (isinstance(expires, int) and not isinstance(expires, bool)))
        and isinstance(method, str | None)
    ):
        raise AuthorizationFailed(
            None,
            "the registration answer is malformed (client_secret, client_secret_expires_at or "
            "token_endpoint_auth_method has the wrong type)",
        )
    return RegisteredClient(
        client_id=client_id,
        client_secret=secret or None,
        client_secret_expires_at=expires,
        token_endpoint_auth_method=method,
    )


# --- token endpoint authentication ----------------------------------------------------------


def choose_token_endpoint_auth_method(
    supported: Sequence[str] | None,
    *,
    has_secret: bool,
    has_private_key: bool = False,
    registered: str | None = None,
) -> AuthMethod:
    """How to authenticate at the token endpoint: the method the server names (RFC 8414 §2
    ``token_endpoint_auth_methods_supported``; suite ``auth/token-endpoint-auth-basic``,
    ``-post``, ``-none``).

    ``registered`` (the method a registration answer or the pre-registration recorded) wins
    when this client can perform it. Otherwise the first of ``AUTH_METHODS`` the client can do
    (a key for ``private_key_jwt``, a secret for the two secret methods, ``none`` always) that
    ``supported`` (the metadata's ``token_endpoint_auth_methods_supported``) lists. When the
    server lists nothing, RFC 8414 §2's default ``client_secret_basic`` is meant; a client with
    only a key uses it, one without a secret goes as a public client (``none``).
    ``AuthorizationFailed`` when no method fits, naming what is missing."""
    can: dict[str, bool] = {
        "private_key_jwt": has_private_key,
        "client_secret_basic": has_secret,
        "client_secret_post": has_secret,
        "none": True,
    }
    if registered is not None:
        method = next((m for m in AUTH_METHODS if m == registered and can[m]), None)
        if method is None:
            raise AuthorizationFailed(
                None,
                f"the client is registered for token endpoint authentication {registered!r}, "
                "which this client cannot perform with what it was given (a secret for "
                "client_secret_*, a private key for private_key_jwt)",
            )
        return method
    # RFC 8414 §2's default is client_secret_basic; a key-only client still tries its key and
    # a client without either goes public rather than not at all (the official SDKs do too).
    listed = (
        supported if supported is not None else ("private_key_jwt", "client_secret_basic", "none")
    )
    for method in AUTH_METHODS:
        if can[method] and method in listed:
            return method
    raise AuthorizationFailed(
        None,
        f"the token endpoint accepts {', '.join(listed) or 'no method'}, none of which this "
        "client can perform: configure a client_secret or a private key",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientAuth:
    """A client's identity at the token endpoint: ``client_id`` and the ``method`` with what
    it needs (``client_secret`` for the two secret methods; a signed ``client_assertion`` JWT
    for ``private_key_jwt``, made by the driver from ``client_assertion_claims``, one per
    request). ``ValueError`` for a method this client does not know or a missing secret or
    assertion. ``repr`` hides the secret and the assertion."""

    client_id: str
    method: AuthMethod = "none"
    client_secret: str | None = None
    client_assertion: str | None = None

    def __post_init__(self) -> None:
        if self.method not in AUTH_METHODS:
            raise ValueError(f"unknown token endpoint auth method {self.method!r}")
        if not self.client_id:
            raise ValueError("client_id is empty")
        if self.method.startswith("client_secret") and not self.client_secret:
            raise ValueError(f"{self.method} needs a client_secret")
        if self.method == "private_key_jwt" and not self.client_assertion:
            raise ValueError("private_key_jwt needs a signed client_assertion")

    def __repr__(self) -> str:
        secret = None if self.client_secret is None else REDACTED
        assertion = None if self.client_assertion is None else REDACTED
        return (
            f"ClientAuth(client_id={self.client_id!r}, method={self.method!r}, "
            f"client_secret={secret!r}, client_assertion={assertion!r})"
        )


def client_assertion_claims(
    *, client_id: str, audience: str, issued_at: int, jti: str, lifetime: int = 300
) -> dict[str, str | int]:
    """The claims of a ``private_key_jwt`` client assertion for the driver to sign (RFC 7523
    §3; RFC 7521 §5.2; SEP-1046 ``client_credentials``): ``iss`` and ``sub`` the
    ``client_id``, ``aud`` the authorization server's **issuer** (draft-ietf-oauth-rfc7523bis
    makes the issuer the only audience; the suite's ``auth/client-credentials-jwt`` checks
    ``aud`` against the issuer, and the official Python SDK passes the issuer), ``iat`` and
    ``exp = iat + lifetime`` in seconds since the epoch, and a ``jti`` unique per assertion
    (the driver's random bytes, e.g. ``state_from``). ``ValueError`` for an empty ``jti`` or a
    lifetime that is not positive."""
    if not jti or lifetime <= 0:
        raise ValueError("a client assertion needs a jti and a positive lifetime")
    return {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued_at,
        "exp": issued_at + lifetime,
        "jti": jti,
    }


# --- the authorization server's answers ----------------------------------------------------


def _answer(status: int, body: bytes, who: str) -> Mapping[str, Any]:
    """The JSON object a 2xx answer carries, or what an error answer means.

    A definite refusal (``AuthorizationFailed``) is an OAuth error (RFC 6749 §5.2, RFC 7591
    §3.2.2): a JSON object with an ``error`` code, on a 2xx or a 4xx other than 408 and 429,
    whose code is not one that says to try later (``temporarily_unavailable``,
    ``server_error``, RFC 6749 §4.1.2.1). Anything else that is not a usable answer (a body
    that is not a JSON object, an error status without an OAuth error, those codes) is
    ``UnreadableAnswer``: nothing was refused for good, and the layer tries again later."""
    try:
        document = loads(body)
    except (ValueError, RecursionError):
        document = None
    if not isinstance(document, dict):
        if 200 <= status < 300:
            raise UnreadableAnswer(f"{who} answered with something that is not JSON")
        raise UnreadableAnswer(f"{who} answered HTTP {status}")
    if "error" in document or not 200 <= status < 300:
        refusal = _refusal(document, f"{who} refused (HTTP {status})")
        if (
            status in (408, 429)
            or status >= 500
            or refusal.error_code is None
            or refusal.error_code in _TRY_LATER
        ):
            code = f" with OAuth error {refusal.error_code!r}" if refusal.error_code else ""
            raise UnreadableAnswer(f"{refusal.detail}{code}") from None
        raise refusal
    return document


def _refusal(params: Mapping[str, Any], context: str) -> AuthorizationFailed:
    """``AuthorizationFailed`` for an OAuth error (RFC 6749 §4.1.2.1, §5.2): a well-formed
    ``error`` code is kept, the description shown as a short excerpt of printable text."""
    error = params.get("error")
    code = error if isinstance(error, str) and _ERROR_CODE.fullmatch(error) else None
    description = params.get("error_description")
    detail = f": {_excerpt(description)}" if isinstance(description, str) and description else ""
    return AuthorizationFailed(code, f"{context}{detail}")


def _excerpt(text: str) -> str:
    printable = "".join(ch if ch.isprintable() else " " for ch in text)
    return printable if len(printable) <= _EXCERPT else printable[: _EXCERPT - 3] + "..."


def configured_client(
    metadata: AuthorizationServerMetadata, settings: OAuthSettings
) -> RegisteredClient | None:
    """The client identity the settings give at this authorization server (pre-registered,
    or a Client ID Metadata Document, as ``choose_registration`` picks), or ``None`` when the
    client must register (RFC 7591) first."""
    way = choose_registration(
        metadata,
        pre_registered=settings.client_id is not None,
        client_id_metadata_url=settings.client_metadata_url,
    )
    if way == "pre-registered":
        assert settings.client_id is not None
        return RegisteredClient(client_id=settings.client_id, client_secret=settings.client_secret)
    if way == "metadata-document":
        assert settings.client_metadata_url is not None
        return RegisteredClient(client_id=settings.client_metadata_url)
    return None


def client_auth(
    client: RegisteredClient, metadata: AuthorizationServerMetadata, assertion: str | None
) -> ClientAuth:
    """How ``client`` authenticates at the token endpoint (``choose_token_endpoint_auth_method``),
    with its secret or the signed ``assertion`` (``private_key_jwt``)."""
    method = choose_token_endpoint_auth_method(
        metadata.token_endpoint_auth_methods_supported,
        has_secret=client.client_secret is not None,
        has_private_key=assertion is not None,
        registered=client.token_endpoint_auth_method,
    )
    return ClientAuth(
        client_id=client.client_id,
        method=method,
        client_secret=client.client_secret,
        client_assertion=assertion,
    )
