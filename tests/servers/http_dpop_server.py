"""``DpopServer``: ``OAuthServer`` with DPoP (RFC 9449; SEP-1932) on both of its sides, 127.0.0.1
only, strict, and keeping every proof it saw so a test can search logs and recordings for them.

    with DpopServer() as server:          # nonces demanded by both sides unless nonces=False
        server.proof_errors               # what was wrong with each refused proof ([] is good)
        server.proofs                     # every proof received, in order
        server.rotate_nonces()            # both servers want a new nonce from now on

The authorization server lists ``dpop_signing_alg_values_supported: ["ES256"]`` and wants a
proof on every token request: one ``DPoP`` header, ``typ: dpop+jwt``, ``alg: ES256``, a public
``jwk`` (no ``d``), a signature that verifies with it (PyJWT), a ``jti`` never seen before,
``htm: POST``, ``htu`` the token endpoint, ``iat`` within 60 s; with ``nonces``, the nonce it
gave, else a 400 ``use_dpop_nonce`` with a ``DPoP-Nonce``. A good proof gets a token of type
DPoP bound to the key's RFC 7638 thumbprint (``cnf.jkt`` kept here), refresh token too; with
``bind=False`` a Bearer token (unbound). A token request without a proof gets a Bearer token.

The MCP endpoint (POST, GET, DELETE) wants ``Authorization: DPoP <token>`` for a bound token and
a proof like the above with ``htm`` the request's method, ``htu`` the MCP URL, ``ath`` the
token's hash and a key whose thumbprint is the token's ``jkt``; with ``nonces``, its own nonce
(401 ``DPoP error="use_dpop_nonce"`` with ``DPoP-Nonce`` otherwise). A request without a token
is challenged with ``DPoP resource_metadata=...``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

import h11

from tests.servers.http_fault_server import _Exchange
from tests.servers.http_oauth_server import SCOPE, OAuthServer

_SKEW = 60


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 for an EC key."""
    members = {name: jwk[name] for name in ("crv", "kty", "x", "y")}
    canonical = json.dumps(members, sort_keys=True, separators=(",", ":"))
    return _b64(hashlib.sha256(canonical.encode()).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class _Captured:
    """Stands in for an exchange to catch ``OAuthServer._token``'s answer."""

    def __init__(self) -> None:
        self.answer: tuple[int, Any, list[tuple[str, str]]] | None = None

    def json(self, status: int, message: Any, headers: list[tuple[str, str]] | None = None) -> None:
        self.answer = (status, message, headers or [])


class DpopServer(OAuthServer):
    """See the module docstring."""

    def __init__(self, *, nonces: bool = True, bind: bool = True, **options: Any) -> None:
        super().__init__(**options)
        self.nonces = nonces
        self.bind = bind
        self.refuse_proofs = False  # the MCP endpoint refuses every proof (invalid_dpop_proof)
        self._as_nonce = f"as-{secrets.token_hex(6)}"
        self._rs_nonce = f"rs-{secrets.token_hex(6)}"
        self._jtis: set[str] = set()
        self._bound: dict[str, str] = {}  # access or refresh token -> jkt
        self._proofs: list[str] = []
        self._errors: list[str] = []

    @property
    def proof_errors(self) -> list[str]:
        with self._lock:
            return list(self._errors)

    @property
    def proofs(self) -> list[str]:
        with self._lock:
            return list(self._proofs)

    def rotate_nonces(self) -> None:
        with self._lock:
            self._as_nonce = f"as-{secrets.token_hex(6)}"
            self._rs_nonce = f"rs-{secrets.token_hex(6)}"

    # --- proofs ---

    def _check(
        self, proof: str | None, method: str, url: str, token: str | None = None
    ) -> tuple[dict[str, Any], str] | str:
        """The proof's claims and key thumbprint, or what is wrong with it."""
        import jwt

        if not proof:
            return "no DPoP proof"
        if "," in proof:
            return "more than one DPoP header"
        with self._lock:
            self._proofs.append(proof)
            self._secrets.add(proof)
        try:
            header = jwt.get_unverified_header(proof)
            jwk = header.get("jwk")
            if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256":
                return f"typ/alg {header.get('typ')}/{header.get('alg')}"
            if not isinstance(jwk, dict) or "d" in jwk or jwk.get("crv") != "P-256":
                return "jwk missing, private or not P-256"
            key = jwt.PyJWK(jwk, algorithm="ES256").key
            claims = jwt.decode(proof, key, algorithms=["ES256"])
        except jwt.PyJWTError as exc:
            return f"signature or format: {type(exc).__name__}"
        with self._lock:
            jti = claims.get("jti")
            if not isinstance(jti, str) or jti in self._jtis:
                return "jti missing or used before"
            self._jtis.add(jti)
        if claims.get("htm") != method:
            return f"htm {claims.get('htm')} for {method}"
        if claims.get("htu") != url:
            return f"htu {claims.get('htu')} for {url}"
        iat = claims.get("iat")
        if not isinstance(iat, int) or abs(time.time() - iat) > _SKEW:
            return "iat out of range"
        if token is not None:
            expected = _b64(hashlib.sha256(token.encode("ascii")).digest())
            if claims.get("ath") != expected:
                return "ath does not match the token"
        elif "ath" in claims:
            return "ath on a token request"
        return claims, thumbprint(jwk)

    def _refuse(self, problem: str) -> None:
        with self._lock:
            self._errors.append(problem)

    # --- the authorization server ---

    def _server_metadata(self) -> dict[str, Any]:
        return {**super()._server_metadata(), "dpop_signing_alg_values_supported": ["ES256"]}

    def _token(self, exchange: _Exchange, headers: dict[str, str], form: dict[str, str]) -> None:
        proof = headers.get("dpop")
        if proof is None:  # a Bearer client
            super()._token(exchange, headers, form)
            return
        checked = self._check(proof, "POST", f"{self.origin}/token")
        if isinstance(checked, str):
            self._refuse(f"token request: {checked}")
            exchange.json(400, {"error": "invalid_dpop_proof", "error_description": checked})
            return
        claims, jkt = checked
        with self._lock:
            nonce = self._as_nonce
        if self.nonces and claims.get("nonce") != nonce:
            self._note("nonce:as")
            if "client_assertion" in form:  # refused, but spent: it cannot come again
                self.spend_assertion(form["client_assertion"])
            body = {"error": "use_dpop_nonce", "error_description": "a nonce is required"}
            exchange.json(400, body, [("dpop-nonce", nonce)])
            return
        if form.get("grant_type") == "refresh_token":
            with self._lock:
                bound = self._bound.get(form.get("refresh_token", ""))
            if bound is not None and bound != jkt:
                self._refuse("refresh token presented with another key")
                exchange.json(400, {"error": "invalid_grant", "error_description": "key"})
                return
        captured = _Captured()
        super()._token(captured, headers, form)  # type: ignore[arg-type]
        assert captured.answer is not None
        status, answer, extra = captured.answer
        if status == 200 and self.bind:
            answer = {**answer, "token_type": "DPoP"}
            with self._lock:
                for name in ("access_token", "refresh_token"):
                    if name in answer:
                        self._bound[answer[name]] = jkt
        exchange.json(status, answer, [*extra, ("dpop-nonce", nonce)])

    # --- the MCP server ---

    def _authorized(self, value: str | None) -> bool:
        if value is None or not value.startswith("DPoP "):
            return super()._authorized(value)
        token = value[len("DPoP ") :]
        with self._lock:
            bound = token in self._bound
        return bound and super()._authorized(f"Bearer {token}")

    def _handle(self, exchange: _Exchange, received: tuple[h11.Request, bytes]) -> None:
        request, _ = received
        method = request.method.decode("ascii", "replace").upper()
        target = urlsplit(request.target.decode("latin-1"))
        if target.path != self.path:
            super()._handle(exchange, received)
            return
        headers = [(n.decode("latin-1").lower(), v.decode("latin-1")) for n, v in request.headers]
        authorization = next((v for n, v in headers if n == "authorization"), None)
        proofs = [v for n, v in headers if n == "dpop"]
        prm = f"{self.origin}/.well-known/oauth-protected-resource{self.path}"
        if authorization is None:
            self._note("challenge")
            challenge = f'DPoP algs="ES256", resource_metadata="{prm}", scope="{SCOPE}"'
            exchange.json(401, {"error": "invalid_token"}, [("www-authenticate", challenge)])
            return
        scheme, _, token = authorization.partition(" ")
        with self._lock:
            jkt = self._bound.get(token)
            nonce = self._rs_nonce
        if jkt is None:  # a Bearer token: no proof wanted (OAuthServer checks it)
            if scheme != "Bearer" or proofs:
                self._refuse(f"{method}: scheme {scheme} with proofs {len(proofs)}")
            super()._handle(exchange, received)
            return
        problem = None
        if scheme != "DPoP":
            problem = f"scheme {scheme} for a bound token"
        checked = self._check(",".join(proofs), method, self.url, token)
        if isinstance(checked, str):
            problem = checked
        elif checked[1] != jkt:
            problem = "the proof's key is not the token's (cnf.jkt)"
        elif self.refuse_proofs:
            problem = "refused by the test"
        if problem is not None:
            self._refuse(f"{method}: {problem}")
            challenge = f'DPoP error="invalid_dpop_proof", resource_metadata="{prm}"'
            exchange.json(401, {"error": "invalid_dpop_proof"}, [("www-authenticate", challenge)])
            return
        assert not isinstance(checked, str)
        if self.nonces and checked[0].get("nonce") != nonce:
            self._note("nonce:rs")
            challenge = 'DPoP error="use_dpop_nonce", error_description="nonce required"'
            extra = [("www-authenticate", challenge), ("dpop-nonce", nonce)]
            exchange.json(401, {"error": "use_dpop_nonce"}, extra)
            return
        super()._handle(exchange, received)


