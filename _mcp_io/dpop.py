"""The driver's side of DPoP (RFC 9449; SEP-1932), done the same way by both drivers.

The core decides which request carries a proof and what it says (``StartHttp.dpop``); the
driver owns the key and signs, right before sending:

- ``DpopSigner``: one client's EC P-256 key pair, made here (``cryptography``, the system's
  randomness) the first time a proof is needed, or the one the token store kept with a
  DPoP-bound token (``StoredAuthorization.dpop_key``, a private JWK), so that token stays
  usable across runs. ``sign`` turns ``StartHttp.dpop`` into the ``DPoP`` header: a JWT with
  header ``typ: dpop+jwt``, ``alg: ES256`` and the public ``jwk`` (RFC 9449 §4.2), claims
  ``jti`` (fresh random), ``htm``, ``htu``, ``iat`` (the wall clock) and, when given, ``ath``
  and ``nonce``. ``loaded`` / ``kept`` move the key between the store's record and the signer:
  the machine is never given it.
- ``can_sign``: whether PyJWT with ``cryptography`` (the ``oauth`` extra) is installed. Without
  it ``dpop: "auto"`` means plain Bearer, and ``dpop: true`` is an ``InvalidSpec``.

The key and the proofs never reach a log record, an error or a ``repr``: a proof that cannot be
signed is logged by the exception's class only, and the request goes without it (the server
refuses it, and says so).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import secrets
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from mcp_core import InvalidSpec, Spec, StartHttp, StoredAuthorization

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey

__all__ = ["DpopSigner", "can_sign", "check_dpop"]

_ALGORITHM = "ES256"
_EC = "cryptography.hazmat.primitives.asymmetric.ec"


@functools.cache
def can_sign() -> bool:
    """Whether DPoP proofs can be signed here: PyJWT with ``cryptography`` (the ``oauth``
    extra). Found, not imported: every client asks when it is built, and importing them
    would cost each one, stdio included, about 9 MiB and their import time; the first proof
    imports them."""
    try:
        found = importlib.util.find_spec("jwt") is not None
        return found and importlib.util.find_spec(_EC) is not None
    except ImportError:  # a parent package that is missing
        return False


def check_dpop(spec: Spec) -> None:
    """``InvalidSpec`` when ``spec``'s ``oauth`` says ``dpop: true`` and nothing here can
    sign."""
    if spec.oauth_enabled and spec.oauth.get("dpop") is True and not can_sign():
        raise InvalidSpec(
            f"invalid spec for server {spec.name!r}: oauth dpop is true, but DPoP proofs need "
            "PyJWT with cryptography: pip install 'mcp-sansio-client[oauth]', or set dpop to "
            '"auto"'
        )


def _b64(number: int) -> str:
    import base64

    raw = number.to_bytes(32, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _from_b64(text: str) -> int:
    import base64

    return int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), "big")


class DpopSigner:
    """One client's DPoP key and the proofs it signs; see the module docstring. Thread-safe:
    the blocking driver signs from its callers' threads."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._key: EllipticCurvePrivateKey | None = None
        self._jwk: dict[str, str] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"DpopSigner(key={'[redacted]' if self._key is not None else None})"

    # --- the key, in and out of the token store ---------------------------------------------

    def loaded(self, record: StoredAuthorization | None) -> StoredAuthorization | None:
        """The store's ``record`` for the machine: its key taken in here and out of the record;
        a DPoP-bound record whose key is missing or unreadable keeps its registration only."""
        if record is None:
            return None
        key = record.dpop_key
        if key is not None:
            self._load(key)
            record = replace(record, dpop_key=None)
        if record.token_type.lower() == "dpop" and self._key is None:
            record = replace(record, access_token=None, refresh_token=None, token_type="Bearer")
        return record

    def kept(self, record: StoredAuthorization) -> StoredAuthorization:
        """The machine's ``record`` for the store: a DPoP-bound one with its key."""
        if record.token_type.lower() != "dpop" or self._key is None:
            return record
        return replace(record, dpop_key=json.dumps({**self._jwk, "d": self._private()}))

    def _load(self, text: str) -> None:
        try:
            from cryptography.hazmat.primitives.asymmetric import ec

            jwk = json.loads(text)
            if jwk.get("kty") != "EC" or jwk.get("crv") != "P-256":
                raise ValueError("not an EC P-256 key")
            numbers = ec.EllipticCurvePrivateNumbers(
                _from_b64(jwk["d"]),
                ec.EllipticCurvePublicNumbers(
                    _from_b64(jwk["x"]), _from_b64(jwk["y"]), ec.SECP256R1()
                ),
            )
            key = numbers.private_key()
        except Exception as exc:  # the text is the key: never quoted
            reason = type(exc).__name__
            self._log.warning("the stored DPoP key is unusable (%s): logging in again", reason)
            return
        self._set(key)

    def _set(self, key: EllipticCurvePrivateKey) -> None:
        public = key.public_key().public_numbers()
        self._jwk = {"kty": "EC", "crv": "P-256", "x": _b64(public.x), "y": _b64(public.y)}
        self._key = key

    def _private(self) -> str:
        assert self._key is not None
        return _b64(self._key.private_numbers().private_value)

    def _ensure(self) -> EllipticCurvePrivateKey:
        with self._lock:
            if self._key is None:
                from cryptography.hazmat.primitives.asymmetric import ec

                self._set(ec.generate_private_key(ec.SECP256R1()))
            assert self._key is not None
            return self._key

    @property
    def public_jwk(self) -> dict[str, str]:
        """The public JWK (RFC 7517) of the key, once there is one."""
        return dict(self._jwk)

    # --- proofs -------------------------------------------------------------------------------

    def sign(self, action: StartHttp) -> StartHttp:
        """``action`` with its proof in the ``DPoP`` header (see the module docstring)."""
        proof = action.dpop
        assert proof is not None
        try:
            import jwt

            key = self._ensure()
            claims: dict[str, object] = {
                "jti": secrets.token_urlsafe(24),
                "htm": proof.htm,
                "htu": proof.htu,
                "iat": int(time.time()),
            }
            if proof.ath is not None:
                claims["ath"] = proof.ath
            if proof.nonce is not None:
                claims["nonce"] = proof.nonce
            headers = {"typ": "dpop+jwt", "jwk": self._jwk}
            signed = jwt.encode(claims, key, algorithm=_ALGORITHM, headers=headers)
        except Exception as exc:
            self._log.warning("a DPoP proof could not be signed (%s)", type(exc).__name__)
            return replace(action, dpop=None)
        return replace(action, headers=(*action.headers, ("DPoP", signed)), dpop=None)
