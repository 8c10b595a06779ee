"""An MCP server behind OAuth 2.1 that the tests control: ``HttpFaultServer`` (its MCP endpoint,
its faults, its request log) plus a small authorization server on the same origin, 127.0.0.1
only. Smaller than the official SDK's (tests/servers/py_auth_server.py) and made for breaking:
tokens expire and refresh tokens are revoked on demand, and every secret it ever handed out or
received is kept, so a test can search logs and recordings for each.

    with OAuthServer() as server:               # started on a free port, stopped on exit
        server.url                              # http://127.0.0.1:PORT/mcp
        server.expire_access_tokens()           # every access token is refused from now on
        server.revoke_refresh_tokens()          # and every refresh token
        server.oauth_log                        # ["register", "authorize", "token:..."], in order
        server.secrets                          # every code, token, state, verifier, secret...

What it serves:
  /.well-known/oauth-protected-resource/mcp   RFC 9728 metadata (and at the root path)
  /.well-known/oauth-authorization-server      RFC 8414 metadata, issuer = the origin
  POST /register                               RFC 7591: a public client ("none"), or one with a
                                               secret for any other token_endpoint_auth_method
  GET /authorize                               302 to redirect_uri with code, state and iss
                                               (RFC 9207), after checking the client, the
                                               redirect URI, PKCE S256 and the resource
  POST /token                                  authorization_code (PKCE checked), refresh_token
                                               (rotated), client_credentials (client_secret_basic,
                                               client_secret_post or private_key_jwt), and with
                                               workload_key the RFC 7523 jwt-bearer grant
                                               (SEP-1933: the JWT's signature, aud = issuer or
                                               token endpoint, exp checked; no client auth)
  the MCP path                                 401 with a WWW-Authenticate challenge
                                               (resource_metadata, scope) until a request carries
                                               a live access token; then HttpFaultServer's answers

A pre-registered client is given as ``clients={"id": {"client_secret": ...}}`` or
``{"public_key": <PEM>}`` for private_key_jwt; ``workload_key=<PEM>`` is the public key of the
platform that issues workload JWTs (the jwt-bearer grant is listed only then).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import secrets
import threading
import time
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import h11

from tests.servers.http_fault_server import HttpFaultServer, _Exchange

SCOPE = "mcp"
_JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class OAuthServer(HttpFaultServer):
    """See the module docstring. Every public method is thread-safe."""

    def __init__(
        self,
        *,
        token_lifetime: int = 3600,
        clients: dict[str, dict[str, Any]] | None = None,
        workload_key: bytes | None = None,
        refresh_client_credentials: bool = False,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.token_lifetime = token_lifetime
        # A refresh token with client_credentials too, which RFC 6749 §4.4.3 says should not be.
        self.refresh_client_credentials = refresh_client_credentials
        self.workload_key = workload_key
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        # "preset": the public client of the records tests put in a token store by hand.
        self._clients: dict[str, dict[str, Any]] = {"preset": {}, **(clients or {})}
        self._codes: dict[str, dict[str, str]] = {}
        self._access: dict[str, float] = {}  # token -> expiry (time.monotonic)
        self._refresh: dict[str, str] = {}  # refresh token -> client id
        self._assertion_ids: set[str] = set()  # client assertions' jti: each used once
        self._log: list[str] = []
        self._secrets: set[str] = {
            c["client_secret"] for c in self._clients.values() if "client_secret" in c
        }

    # --- control ---

    @property
    def issuer(self) -> str:
        return self.origin

    @property
    def oauth_log(self) -> list[str]:
        """What the authorization server did, in order: ``register``, ``authorize``,
        ``token:<grant_type>``, ``refused:<grant_type>``, ``metadata``, ``challenge``."""
        with self._lock:
            return list(self._log)

    @property
    def secrets(self) -> set[str]:
        """Every code, token, client secret, state, PKCE verifier and assertion this server
        issued or received."""
        with self._lock:
            return set(self._secrets)

    def mint_token(self, client_id: str = "preset") -> tuple[str, str]:
        """An access token and a refresh token, as if a login had happened."""
        with self._lock:
            return self._issue(client_id)

    def expire_access_tokens(self) -> None:
        with self._lock:
            self._access.clear()

    def revoke_refresh_tokens(self) -> None:
        with self._lock:
            self._refresh.clear()

    # --- dispatch ---

    def _handle(self, exchange: _Exchange, received: tuple[h11.Request, bytes]) -> None:
        request, body = received
        method = request.method.decode("ascii", "replace").upper()
        target = urlsplit(request.target.decode("latin-1"))
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in request.headers
        }
        prm = "/.well-known/oauth-protected-resource"
        if method == "GET" and target.path in (prm, prm + self.path):
            self._note("metadata")
            resource = {
                "resource": self.url,
                "authorization_servers": [self.issuer],
                "scopes_supported": [SCOPE],
                "bearer_methods_supported": ["header"],
            }
            exchange.json(200, resource)
        elif method == "GET" and target.path == "/.well-known/oauth-authorization-server":
            self._note("metadata")
            exchange.json(200, self._server_metadata())
        elif method == "POST" and target.path == "/register":
            self._register(exchange, body)
        elif method == "GET" and target.path == "/authorize":
            self._authorize(exchange, dict(parse_qsl(target.query)))
        elif method == "POST" and target.path == "/token":
            self._token(exchange, headers, dict(parse_qsl(body.decode())))
        elif target.path == self.path and not self._authorized(headers.get("authorization")):
            self._note("challenge")
            challenge = f'Bearer resource_metadata="{self.origin}{prm}{self.path}", scope="{SCOPE}"'
            if headers.get("authorization"):
                challenge += ', error="invalid_token"'
            exchange.json(401, {"error": "invalid_token"}, [("www-authenticate", challenge)])
        else:
            super()._handle(exchange, received)

    def _server_metadata(self) -> dict[str, Any]:
        grants = ["authorization_code", "refresh_token", "client_credentials"]
        if self.workload_key is not None:
            grants.append(JWT_BEARER_GRANT)
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.origin}/authorize",
            "token_endpoint": f"{self.origin}/token",
            "registration_endpoint": f"{self.origin}/register",
            "response_types_supported": ["code"],
            "grant_types_supported": grants,
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_basic",
                "client_secret_post",
                "private_key_jwt",
            ],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256", "ES256"],
            "scopes_supported": [SCOPE, "offline_access"],
            "authorization_response_iss_parameter_supported": True,
        }

    def _note(self, what: str, *secrets_seen: str) -> None:
        with self._lock:
            self._log.append(what)
            self._secrets.update(s for s in secrets_seen if s)

    def _keep(self, *secrets_seen: str) -> None:
        with self._lock:
            self._secrets.update(s for s in secrets_seen if s)

    def _authorized(self, value: str | None) -> bool:
        if value is None or not value.startswith("Bearer "):
            return False
        with self._lock:
            expiry = self._access.get(value[len("Bearer ") :])
        return expiry is not None and time.monotonic() < expiry

    def _issue(self, client_id: str) -> tuple[str, str]:
        """With the lock held: a new access token and refresh token for ``client_id``."""
        access, refresh = f"at-{secrets.token_hex(12)}", f"rt-{secrets.token_hex(12)}"
        self._access[access] = time.monotonic() + self.token_lifetime
        self._refresh[refresh] = client_id
        self._secrets.update((access, refresh))
        return access, refresh

    # --- the authorization server ---

    def _register(self, exchange: _Exchange, body: bytes) -> None:
        document = json.loads(body)
        method = document.get("token_endpoint_auth_method", "client_secret_basic")
        client_id = f"client-{next(self._numbers)}"
        client = {**document, "client_id": client_id, "token_endpoint_auth_method": method}
        if method != "none":
            client["client_secret"] = f"cs-{secrets.token_hex(12)}"
        with self._lock:
            self._clients[client_id] = client
        self._note("register", client.get("client_secret", ""))
        exchange.json(201, client)

    def _authorize(self, exchange: _Exchange, query: dict[str, str]) -> None:
        self._note("authorize", query.get("state", ""))
        with self._lock:
            client = self._clients.get(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        problem = None
        if client is None:
            problem = "unknown client"
        elif client.get("redirect_uris") and redirect_uri not in client["redirect_uris"]:
            problem = "unregistered redirect_uri"
        elif query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            problem = "code with S256 only"
        elif query.get("resource") != self.url:
            problem = "wrong resource"
        if problem is not None:
            exchange.full(400, [("content-type", "text/plain")], problem.encode())
            return
        code = f"code-{secrets.token_hex(12)}"
        with self._lock:
            self._codes[code] = {**query}
            self._secrets.add(code)
        answer = {"code": code, "state": query.get("state", ""), "iss": self.issuer}
        exchange.full(302, [("location", f"{redirect_uri}?{urlencode(answer)}")])

    def _token(self, exchange: _Exchange, headers: dict[str, str], form: dict[str, str]) -> None:
        grant = form.get("grant_type", "")
        if grant == JWT_BEARER_GRANT:
            self._workload_token(exchange, form)
            return
        client_id = self._client_auth(headers, form)
        self._keep(*(form.get(name, "") for name in ("code_verifier", "client_assertion")))
        refusal = None
        with self._lock:
            if client_id is None:
                refusal = "invalid_client"
            elif grant == "authorization_code":
                pending = self._codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                challenge = (
                    base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                    .rstrip(b"=")
                    .decode()
                )
                if (
                    pending is None
                    or pending.get("client_id") != client_id
                    or pending.get("redirect_uri") != form.get("redirect_uri")
                    or pending.get("code_challenge") != challenge
                    or form.get("resource") != self.url
                ):
                    refusal = "invalid_grant"
            elif grant == "refresh_token":
                owner = self._refresh.pop(form.get("refresh_token", ""), None)
                if owner != client_id or form.get("resource") != self.url:
                    refusal = "invalid_grant"
            elif grant == "client_credentials":
                if form.get("resource") != self.url:
                    refusal = "invalid_target"
            else:
                refusal = "unsupported_grant_type"
            tokens = None if refusal is not None else self._issue(client_id or "")
        if tokens is None:
            self._note(f"refused:{grant}")
            exchange.json(400, {"error": refusal, "error_description": "refused by the test"})
            return
        self._note(f"token:{grant}")
        access, refresh = tokens
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.token_lifetime,
            "scope": SCOPE,
        }
        if grant != "client_credentials" or self.refresh_client_credentials:
            answer["refresh_token"] = refresh
        exchange.json(200, answer, [("cache-control", "no-store")])

    def _client_auth(self, headers: dict[str, str], form: dict[str, str]) -> str | None:
        """The client the token request authenticates as, or None when it fails to."""
        basic = headers.get("authorization", "")
        if basic.startswith("Basic "):
            decoded = base64.b64decode(basic[len("Basic ") :]).decode()
            client_id, _, secret = decoded.partition(":")
            self._keep(secret)
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        assertion = form.get("client_assertion")
        if assertion is not None:
            return self._assertion_client(assertion, form)
        with self._lock:
            client = self._clients.get(client_id)
        if client is None:
            return None
        expected = client.get("client_secret")
        if expected is None:  # a public client: PKCE is its proof
            return client_id
        return client_id if secrets.compare_digest(secret, expected) else None

    def _assertion_client(self, assertion: str, form: dict[str, str]) -> str | None:
        import jwt  # the oauth extra's library, to check what the client signed

        if form.get("client_assertion_type") != _JWT_BEARER:
            return None
        unverified = jwt.decode(assertion, options={"verify_signature": False})
        client_id = unverified.get("sub")
        with self._lock:
            client = self._clients.get(client_id or "")
        if client is None or "public_key" not in client:
            return None
        try:
            claims = jwt.decode(
                assertion, client["public_key"], algorithms=["RS256", "ES256"], audience=self.issuer
            )
        except jwt.InvalidTokenError:
            return None
        if claims.get("iss") != client_id or not self.spend_assertion(assertion):
            return None
        return client_id

    def spend_assertion(self, assertion: str) -> bool:
        """Note a client assertion's ``jti`` as used; ``False`` when it was before (RFC 7523 §3:
        the server may refuse a replayed one, and this one does)."""
        import jwt

        jti = jwt.decode(assertion, options={"verify_signature": False}).get("jti")
        with self._lock:
            if not isinstance(jti, str) or not jti or jti in self._assertion_ids:
                return False
            self._assertion_ids.add(jti)
            return True

    def _workload_token(self, exchange: _Exchange, form: dict[str, str]) -> None:
        """The RFC 7523 §2.1 jwt-bearer grant: the assertion is the only credential."""
        import jwt

        assertion = form.get("assertion", "")
        self._keep(assertion)
        refusal = None
        if self.workload_key is None:
            refusal = "unsupported_grant_type"
        elif form.get("resource") != self.url:
            refusal = "invalid_target"
        else:
            try:
                jwt.decode(
                    assertion,
                    self.workload_key,
                    algorithms=["RS256", "ES256"],
                    audience=[self.issuer, f"{self.origin}/token"],
                    options={"require": ["exp", "sub"]},
                )
            except jwt.InvalidTokenError:
                refusal = "invalid_grant"
        if refusal is not None:
            self._note("refused:jwt-bearer")
            exchange.json(400, {"error": refusal, "error_description": "refused by the test"})
            return
        with self._lock:
            access, _ = self._issue("workload")
        self._note("token:jwt-bearer")
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": self.token_lifetime}
        exchange.json(200, answer, [("cache-control", "no-store")])
