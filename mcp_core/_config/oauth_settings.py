"""``OAuthSettings``: what the machine is told about its OAuth client, on its own so that
importing ``mcp_core`` does not load the OAuth layer (``_auth/layer.py``) until a machine
needs it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .._vocabulary.urls import canonical_resource
from .spec import Spec

__all__ = ["AUTH_MAX_BYTES", "AUTH_REQUEST_TIMEOUT", "OAuthSettings", "token_store_key"]

# How long one request of the authorization layer may take by default (a metadata document,
# registration, the token endpoint), in seconds: these answer in well under a second; ten
# leaves room for a slow identity provider and still ends a hung one long before a person
# wonders. Never past what is left of the connect attempt (``init_timeout``).
AUTH_REQUEST_TIMEOUT = 10.0
# The most the authorization layer reads of one answer: metadata documents, registration and
# token answers are a few KiB (a token answer with a large JWT, tens of KiB), far below
# ``max_message_bytes``. Past it the request is aborted, unread.
AUTH_MAX_BYTES = 256 * 1024


def token_store_key(url: str) -> str:
    """The key a login for the server at ``url`` is kept under in a ``TokenStore``: its
    canonical URL (RFC 8707), the name ``SaveAuthorization.server`` carries. One definition for
    the machine, the drivers loading a login and ``mcp-client logout``."""
    return canonical_resource(url)


@dataclass(frozen=True, slots=True, kw_only=True)
class OAuthSettings:
    """How this client identifies itself to authorization servers, and what it may do.

    ``client_id`` (and ``client_secret``) for a pre-registered client; ``client_metadata_url``
    for a Client ID Metadata Document; neither: RFC 7591 registration. ``grant`` is
    ``authorization_code`` (a user in a browser), ``client_credentials`` (a machine client,
    with a secret or, when ``private_key`` is true, a key the driver signs assertions with) or
    ``jwt_bearer`` (workload identity, SEP-1933: the driver supplies the platform's JWT as an
    RFC 7523 authorization grant; ``client_id`` is optional), ``enterprise``
    (enterprise-managed authorization, SEP-990: the driver supplies the user's ID token, which
    the identity provider at ``idp_token_endpoint`` (or found in ``idp_issuer``'s metadata)
    exchanges for an ID-JAG, RFC 8693, as the
    client ``idp_client_id``, with ``idp_client_secret`` if any; the ID-JAG is then an RFC
    7523 grant at the authorization server, as the pre-registered ``client_id``) or
    ``device_code`` (RFC 8628: a person approves on another device, with the code the driver
    shows; a pre-registered ``client_id``, else RFC 7591 registration).
    ``scope`` replaces the scope selection when given. ``interactive`` false: the browser step
    (and a device login) is not allowed here, a flow that needs it fails with
    ``AuthorizationRequired``.
    ``request_timeout`` bounds each request of the authorization layer (metadata, registration,
    token), and never past the connect attempt's own deadline. ``allow_insecure_http``: send a
    bearer token to a plain ``http://`` MCP server that is not on this machine (refused
    otherwise, RFC 6750 §5.3). ``dpop``: DPoP (RFC 9449; SEP-1932), ``"prefer"`` where the
    authorization server lists ES256 in ``dpop_signing_alg_values_supported``, ``"require"``
    (``AuthorizationFailed`` where it does not), ``"off"``; a driver that signs proofs says so
    to ``from_spec``, which resolves the spec's ``"auto"``."""

    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    grant: Literal[
        "authorization_code", "client_credentials", "jwt_bearer", "enterprise", "device_code"
    ] = "authorization_code"
    private_key: bool = False
    scope: str | None = None
    client_name: str = "mcp-sansio-client"
    interactive: bool = True
    request_timeout: float = AUTH_REQUEST_TIMEOUT
    allow_insecure_http: bool = False
    # grant "enterprise" (SEP-990): the identity provider's token endpoint and this client there.
    idp_token_endpoint: str | None = None
    idp_issuer: str | None = None  # to find idp_token_endpoint in its metadata (RFC 8414/OIDC)
    idp_client_id: str | None = None
    idp_client_secret: str | None = None
    dpop: Literal["off", "prefer", "require"] = "off"

    def __post_init__(self) -> None:
        if not self.request_timeout > 0:
            raise ValueError("request_timeout must be a positive number of seconds")

    def __repr__(self) -> str:
        secret = None if self.client_secret is None else "[redacted]"
        return (
            f"OAuthSettings(client_id={self.client_id!r}, client_secret={secret!r}, "
            f"grant={self.grant!r}, interactive={self.interactive!r})"
        )

    @classmethod
    def from_spec(
        cls, spec: Spec, *, interactive: bool = True, dpop_signer: bool = False
    ) -> OAuthSettings | None:
        """What ``spec``'s ``oauth`` mapping says, or ``None`` when OAuth is off for it (a
        stdio server, an ``Authorization`` header, or ``oauth: {enabled: false}``): the
        machine's ``oauth=``. ``private_key`` is true when a ``key_file`` is set.
        ``dpop_signer``: whether the driver signs DPoP proofs (``StartHttp.dpop``); without
        one, ``dpop: "auto"`` is off (plain Bearer) and ``dpop: true`` still requires it (the
        driver refuses the client)."""
        if not spec.oauth_enabled:
            return None
        oauth = spec.oauth
        dpop = oauth.get("dpop", "auto")
        return cls(
            client_id=oauth.get("client_id"),
            client_secret=oauth.get("client_secret"),
            client_metadata_url=oauth.get("client_metadata_url"),
            grant=oauth.get("grant", "authorization_code"),
            private_key=oauth.get("key_file") is not None,
            scope=oauth.get("scope"),
            interactive=interactive,
            request_timeout=float(oauth.get("timeout", AUTH_REQUEST_TIMEOUT)),
            allow_insecure_http=oauth.get("allow_insecure_http", False),
            idp_token_endpoint=oauth.get("idp_token_endpoint"),
            idp_issuer=oauth.get("idp_issuer"),
            idp_client_id=oauth.get("idp_client_id"),
            idp_client_secret=oauth.get("idp_client_secret"),
            dpop="require" if dpop is True else "prefer" if dpop_signer and dpop else "off",
        )
