"""DPoP (RFC 9449; SEP-1932, the MCP authorization extension ``io.modelcontextprotocol/auth/dpop``),
pure: what each proof must say, the nonces the servers hand out, and which token is bound.

The core never holds a key. It decides which requests carry a proof and what the proof says
(``DpopProof`` on ``StartHttp``: ``htm``, ``htu`` without query or fragment, ``ath`` on requests
to the MCP server, the latest ``nonce``); the driver signs it with the client's EC P-256 key
(ES256), adds ``jti``, ``iat`` and the public ``jwk``, and sends it as the ``DPoP`` header.

- Token requests (code exchange, refresh, ``client_credentials``, ``jwt_bearer``, a device
  login's polls) carry a proof once the authorization server lists ES256 in
  ``dpop_signing_alg_values_supported`` (RFC 9449 §5.1) and the settings allow it
  (``OAuthSettings.dpop``: ``prefer``, or ``require``, which refuses a server that does not
  list it).
- A token answered with ``token_type: DPoP`` is bound: every MCP request (POST, the GET
  stream, DELETE) carries a proof with its ``ath`` and ``Authorization: DPoP <token>``
  (RFC 9449 §7.1). One answered ``Bearer`` is not: no proofs (RFC 9449 §5: the server may
  issue a Bearer token).
- Nonces (RFC 9449 §8, §9): the authorization server's 400 ``use_dpop_nonce`` sends the token
  request again, once, with the ``DPoP-Nonce`` it gave (a ``private_key_jwt`` request with a
  newly signed client assertion: ``renew``); the MCP server's 401 with a ``DPoP``
  challenge ``error="use_dpop_nonce"`` sends the request again with its nonce (not a new
  authorization). The latest nonce of each server is kept, from any ``DPoP-Nonce`` header.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import replace

from .._transport.http import HttpTransport
from .._transport.http_parts import find_header
from .._vocabulary.actions import DpopProof
from .._vocabulary.errors import AuthorizationFailed
from .._vocabulary.phases import AuthPhase
from .._vocabulary.tokens import StoredAuthorization
from .._vocabulary.urls import redact_url
from .._wire.json import loads
from .metadata import AuthorizationServerMetadata, OAuthRequest, parse_www_authenticate

__all__ = [
    "ALGORITHM",
    "Dpop",
    "access_token_hash",
    "authorization",
    "htu",
    "is_nonce_error",
    "resume",
]

# The one algorithm the client signs proofs with (its key is EC P-256): SEP-1932 names ES256.
ALGORITHM = "ES256"
_TOKEN_PHASES = (AuthPhase.EXCHANGING, AuthPhase.REFRESHING, AuthPhase.POLLING)
# The most of a DPoP-Nonce value kept: RFC 9449 §8 makes it an opaque NQCHAR string, short.
_MAX_NONCE = 512
_NQCHAR = frozenset(chr(c) for c in range(0x21, 0x7F) if chr(c) not in '"\\')


def htu(url: str) -> str:
    """RFC 9449 §4.2 ``htu``: the request's URI "without query and fragment parts"."""
    return url.partition("#")[0].partition("?")[0]


def access_token_hash(access_token: str) -> str:
    """RFC 9449 §4.2 ``ath``: base64url (no padding) of the SHA-256 of the ASCII token."""
    digest = hashlib.sha256(access_token.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _nonce(headers: Sequence[tuple[str, str]]) -> str | None:
    """The ``DPoP-Nonce`` header's value when it is a usable nonce (RFC 9449 §8.1: 1*NQCHAR)."""
    value = find_header(headers, "dpop-nonce")
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > _MAX_NONCE or not set(value) <= _NQCHAR:
        return None
    return value


def is_nonce_error(status: int, body: bytes) -> bool:
    """Whether a token endpoint answer is RFC 9449 §8's 400 ``{"error": "use_dpop_nonce"}``."""
    if status != 400 or b"use_dpop_nonce" not in body:
        return False
    try:
        document = loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(document, dict) and document.get("error") == "use_dpop_nonce"


def _nonce_challenge(headers: Sequence[tuple[str, str]]) -> bool:
    """Whether a 401 carries RFC 9449 §9's ``DPoP error="use_dpop_nonce"`` challenge."""
    value = find_header(headers, "www-authenticate")
    if not value or "use_dpop_nonce" not in value:
        return False
    challenges = parse_www_authenticate(value)
    return any(c.scheme == "dpop" and c.param("error") == "use_dpop_nonce" for c in challenges)


class Dpop:
    """One session's DPoP state (see the module docstring); absent when ``dpop`` is off."""

    __slots__ = (
        "_ath", "_inner", "_renewing", "_request", "_retried", "active", "as_nonce", "mode",
        "rs_nonce",
    )  # fmt: skip

    def __init__(self, mode: str, inner: HttpTransport) -> None:
        self.mode = mode  # "prefer" or "require"
        self.active = False  # the authorization server takes proofs: token requests carry one
        self.as_nonce: str | None = None
        self.rs_nonce: str | None = None
        self._inner = inner
        self._ath: str | None = None  # of the bound token
        self._request: OAuthRequest | None = None  # the token request last sent
        self._retried = False  # it was sent again with a nonce
        self._renewing = False  # the next token request is that one again, newly signed

    # --- the authorization server ---------------------------------------------------------

    def choose(self, server: AuthorizationServerMetadata) -> None:
        """Whether token requests to ``server`` carry proofs: it lists ES256 (RFC 9449 §5.1).
        ``AuthorizationFailed`` when DPoP is required and it does not."""
        self.active = ALGORITHM in (server.dpop_signing_alg_values_supported or ())
        if not self.active and self.mode == "require":
            raise AuthorizationFailed(
                None,
                f"the authorization server {redact_url(server.issuer)!r} does not list "
                f"{ALGORITHM} in dpop_signing_alg_values_supported (RFC 9449 §5.1), and oauth "
                "dpop is true: set it to \"auto\" to accept Bearer tokens from this server",
            )

    def token_proof(self, phase: AuthPhase, request: OAuthRequest) -> DpopProof | None:
        """The proof a request of the flow carries: token requests only, once active."""
        if not self.active or phase not in _TOKEN_PHASES:
            return None
        if request is not self._request:
            self._request, self._retried, self._renewing = request, self._renewing, False
        return DpopProof(htm=request.method, htu=htu(request.url), nonce=self.as_nonce)

    def token_answer(
        self, phase: AuthPhase, status: int, headers: Sequence[tuple[str, str]], body: bytes
    ) -> OAuthRequest | None:
        """A token request's answer: keep its nonce; the request to send again when it asks
        for one (``use_dpop_nonce``, RFC 9449 §8), once, else ``None``."""
        if not self.active or phase not in _TOKEN_PHASES:
            return None
        nonce = _nonce(headers)
        if nonce is not None:
            self.as_nonce = nonce
        if self._retried or nonce is None or not is_nonce_error(status, body):
            return None
        self._retried = True
        return self._request

    def renew(self) -> None:
        """The request ``token_answer`` gave goes again as a new one (its client assertion
        signed afresh): it counts as sent again, so a second ``use_dpop_nonce`` is final."""
        self._renewing = True

    # --- the token and the MCP server -----------------------------------------------------

    def bind(self, token_type: str, access_token: str) -> str:
        """The ``Authorization`` value for a token of ``token_type``; a DPoP-bound one makes
        every MCP request carry a proof. ``AuthorizationFailed`` for a DPoP token no proof
        asked for."""
        if token_type.lower() != "dpop":
            self.unbind()
            return f"Bearer {access_token}"
        if not self.active:
            raise AuthorizationFailed(
                None, "the token answer's token_type is DPoP, but the token request had no proof"
            )
        self._ath = access_token_hash(access_token)
        self._inner.proof = self.resource_proof
        return f"DPoP {access_token}"

    def unbind(self) -> None:
        self._ath = None
        self._inner.proof = None

    def resource_proof(self, method: str, url: str) -> DpopProof:
        """The proof of one MCP request (the transport asks, for a bound token)."""
        return DpopProof(htm=method, htu=htu(url), ath=self._ath, nonce=self.rs_nonce)

    def saw(self, headers: Sequence[tuple[str, str]]) -> None:
        """Any answer of the MCP server: keep a ``DPoP-Nonce`` it gave."""
        nonce = _nonce(headers)
        if nonce is not None:
            self.rs_nonce = nonce

    def nonce_refusal(self, status: int, headers: Sequence[tuple[str, str]]) -> bool:
        """Whether a refusal of the MCP server only asks for a nonce (RFC 9449 §9): a 401
        with ``DPoP error="use_dpop_nonce"``, while the token is bound."""
        return status == 401 and self._ath is not None and _nonce_challenge(headers)


def resume(stored: StoredAuthorization, dpop: Dpop | None) -> StoredAuthorization:
    """``stored`` as a session starts from it: a DPoP-bound record's tokens only while DPoP is
    on (the driver holds the key they are bound to), else it is a registration only."""
    if stored.token_type.lower() != "dpop":
        return stored
    if dpop is None:
        return replace(stored, access_token=None, refresh_token=None, token_type="Bearer")
    dpop.active = True  # the server took proofs when it issued them
    return stored


def authorization(dpop: Dpop | None, token_type: str, access_token: str) -> str:
    """The ``Authorization`` value of a token (``Dpop.bind``); with DPoP off, a DPoP-bound
    token is refused: no proof asked for it."""
    if dpop is not None:
        return dpop.bind(token_type, access_token)
    if token_type != "Bearer":
        raise AuthorizationFailed(
            None, "the token answer's token_type is DPoP, but the token request had no proof"
        )
    return f"Bearer {access_token}"
