"""Enterprise-managed authorization (SEP-990) for the tests: an enterprise identity provider,
the MCP server's authorization server and the MCP server itself, on 127.0.0.1, all checking
what the client sends. ``OAuthServer`` (tests/servers/http_oauth_server.py) is the MCP server
and its authorization server; this adds:

  GET /.well-known/oauth-authorization-server/idp
                         the identity provider's RFC 8414 metadata (issuer ORIGIN/idp)
  POST /idp/token        the identity provider's token endpoint: an RFC 8693 token exchange
                         (grant_type token-exchange, requested_token_type id-jag,
                         subject_token_type id_token, audience = the authorization server's
                         issuer, resource = the MCP server's, the ID token signed by the
                         enterprise sign-on with aud = the IdP client, client_id = that client,
                         and its secret by client_secret_basic when it has one), answered with
                         an ID-JAG (typ oauth-id-jag+jwt, signed by the IdP; sub, aud,
                         resource, client_id, jti, exp, iat, scope)
  POST /token            also the RFC 7523 jwt-bearer grant with an ID-JAG: the IdP's
                         signature, typ, aud = issuer, resource, its client_id = the client
                         that authenticates, with a method the metadata lists

    with EnterpriseServer() as server:
        server.id_token()          # a fresh ID token for the user, as the sign-on issues it
        server.idp_token_endpoint  # http://127.0.0.1:PORT/idp/token
        server.refuse_exchange = "invalid_grant"   # leg 1 refuses from now on
        server.refuse_grant = "invalid_grant"      # leg 2 refuses from now on
        server.exchanges           # the token exchange forms received, secrets masked
        server.oauth_log           # "token:token-exchange", "token:id-jag", "refused:..."
"""

from __future__ import annotations

import secrets
import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from tests.servers.http_fault_server import _Exchange
from tests.servers.http_oauth_server import JWT_BEARER_GRANT, OAuthServer

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
CLIENT_ID, CLIENT_SECRET = "mcp-agent", f"as-secret-{secrets.token_hex(8)}"
IDP_CLIENT_ID = "agent-at-idp"
USER = "alice@example.com"
_MASKED = ("subject_token",)
_IDP_METADATA = "/.well-known/oauth-authorization-server/idp"  # RFC 8414 §3.1 for .../idp


class EnterpriseServer(OAuthServer):
    """See the module docstring. ``auth_methods``: what the authorization server lists in
    ``token_endpoint_auth_methods_supported`` (and accepts); ``idp_client_secret``: the IdP
    client's secret (None: a public client there)."""

    def __init__(
        self,
        *,
        auth_methods: tuple[str, ...] = ("client_secret_basic",),
        idp_client_secret: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(clients={CLIENT_ID: {"client_secret": CLIENT_SECRET}}, **options)
        self.auth_methods = auth_methods
        self.idp_client_secret = idp_client_secret
        self._sso_key = ec.generate_private_key(ec.SECP256R1())  # the enterprise sign-on
        self._idp_key = ec.generate_private_key(ec.SECP256R1())  # signs ID-JAGs
        self.refuse_exchange: str | None = None
        self.refuse_grant: str | None = None
        self.exchanges: list[dict[str, str]] = []
        self._keep(*(s for s in (idp_client_secret,) if s))

    @property
    def idp_issuer(self) -> str:
        """The identity provider's issuer: its RFC 8414 metadata names ``idp_token_endpoint``."""
        return f"{self.origin}/idp"

    @property
    def idp_token_endpoint(self) -> str:
        return f"{self.origin}/idp/token"

    def oauth(self, **extra: Any) -> dict[str, Any]:
        """The client's ``oauth`` mapping for this server (without the ID token's source)."""
        settings = {
            "grant": "enterprise",
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "idp_token_endpoint": self.idp_token_endpoint,
            "idp_client_id": IDP_CLIENT_ID,
        }
        if self.idp_client_secret is not None:
            settings["idp_client_secret"] = self.idp_client_secret
        return {**settings, **extra}

    def id_token(self, lifetime: int = 600) -> str:
        """A user's ID token from the enterprise sign-on, for the IdP client."""
        now = int(time.time())
        claims = {"iss": f"{self.origin}/sso", "sub": USER, "aud": IDP_CLIENT_ID}
        claims |= {"iat": now, "exp": now + lifetime, "jti": uuid.uuid4().hex}
        token = jwt.encode(claims, self._sso_key, algorithm="ES256")
        self._keep(token)
        return token

    # --- dispatch ---

    def _handle(self, exchange: _Exchange, received: Any) -> None:
        request, body = received
        if request.method.upper() == b"GET" and request.target == _IDP_METADATA.encode():
            self._note("idp-metadata")
            issuer = self.idp_issuer
            exchange.json(200, {"issuer": issuer, "token_endpoint": self.idp_token_endpoint})
            return
        if request.method.upper() == b"POST" and request.target == b"/idp/token":
            headers = {k.decode().lower(): v.decode() for k, v in request.headers}
            self._token_exchange(exchange, headers, _form(body))
            return
        super()._handle(exchange, received)

    def _server_metadata(self) -> dict[str, Any]:
        metadata = super()._server_metadata()
        metadata["grant_types_supported"] = [JWT_BEARER_GRANT]
        metadata["token_endpoint_auth_methods_supported"] = list(self.auth_methods)
        return metadata

    def _token(self, exchange: _Exchange, headers: dict[str, str], form: dict[str, str]) -> None:
        if form.get("grant_type") == JWT_BEARER_GRANT:
            self._id_jag_grant(exchange, headers, form)
        else:
            super()._token(exchange, headers, form)

    # --- leg 1: the identity provider ---

    def _token_exchange(
        self, exchange: _Exchange, headers: dict[str, str], form: dict[str, str]
    ) -> None:
        self._keep(form.get("subject_token", ""))
        with self._lock:
            self.exchanges.append({k: "[masked]" if k in _MASKED else v for k, v in form.items()})
        problem = self.refuse_exchange or _exchange_problem(form, self.issuer, self.url)
        if problem is None and not self._idp_client(headers, form):
            problem = "invalid_client"
        if problem is None:
            try:
                claims = jwt.decode(
                    form["subject_token"],
                    self._sso_key.public_key(),
                    algorithms=["ES256"],
                    audience=IDP_CLIENT_ID,
                    options={"require": ["exp", "sub"]},
                )
            except jwt.InvalidTokenError:
                problem = "invalid_grant"
        if problem is not None:
            self._note("refused:token-exchange")
            exchange.json(400, {"error": problem, "error_description": "refused by the test"})
            return
        now = int(time.time())
        grant = {
            "iss": f"{self.origin}/idp",
            "sub": claims["sub"],
            "aud": form["audience"],
            "resource": form["resource"],
            "client_id": CLIENT_ID,
            "jti": uuid.uuid4().hex,
            "iat": now,
            "exp": now + 300,
            **({"scope": form["scope"]} if "scope" in form else {}),
        }
        id_jag = jwt.encode(
            grant, self._idp_key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"}
        )
        self._note("token:token-exchange", id_jag)
        answer = {"access_token": id_jag, "issued_token_type": ID_JAG_TYPE, "token_type": "N_A"}
        exchange.json(200, answer | {"expires_in": 300}, [("cache-control", "no-store")])

    def _idp_client(self, headers: dict[str, str], form: dict[str, str]) -> bool:
        if form.get("client_id") != IDP_CLIENT_ID:
            return False
        if self.idp_client_secret is None:
            return "authorization" not in headers
        import base64

        expected = base64.b64encode(f"{IDP_CLIENT_ID}:{self.idp_client_secret}".encode()).decode()
        return secrets.compare_digest(headers.get("authorization", ""), f"Basic {expected}")

    # --- leg 2: the authorization server ---

    def _id_jag_grant(
        self, exchange: _Exchange, headers: dict[str, str], form: dict[str, str]
    ) -> None:
        assertion = form.get("assertion", "")
        self._keep(assertion)
        method = "client_secret_basic" if headers.get("authorization") else "client_secret_post"
        client_id = self._client_auth(headers, form) if method in self.auth_methods else None
        problem = self.refuse_grant
        if problem is None and client_id is None:
            problem = "invalid_client"
        if problem is None and form.get("resource") != self.url:
            problem = "invalid_target"
        if problem is None:
            try:
                if jwt.get_unverified_header(assertion).get("typ") != "oauth-id-jag+jwt":
                    raise jwt.InvalidTokenError("typ")
                claims = jwt.decode(
                    assertion,
                    self._idp_key.public_key(),
                    algorithms=["ES256"],
                    audience=self.issuer,
                    options={"require": ["exp", "sub", "jti"]},
                )
                if claims.get("client_id") != client_id or claims.get("resource") != self.url:
                    raise jwt.InvalidTokenError("client_id or resource")
            except jwt.InvalidTokenError:
                problem = "invalid_grant"
        if problem is not None:
            self._note("refused:id-jag")
            status = 401 if problem == "invalid_client" else 400
            exchange.json(status, {"error": problem, "error_description": "refused by the test"})
            return
        with self._lock:
            access, _ = self._issue(CLIENT_ID)
        self._note("token:id-jag")
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": self.token_lifetime}
        exchange.json(200, answer, [("cache-control", "no-store")])


def _form(body: bytes) -> dict[str, str]:
    from urllib.parse import parse_qsl

    return dict(parse_qsl(body.decode()))


def _exchange_problem(form: dict[str, str], issuer: str, resource: str) -> str | None:
    """The OAuth error for a token exchange whose parameters are not SEP-990's, or None."""
    if form.get("grant_type") != TOKEN_EXCHANGE:
        return "unsupported_grant_type"
    if (
        form.get("requested_token_type") != ID_JAG_TYPE
        or form.get("subject_token_type") != ID_TOKEN_TYPE
        or not form.get("subject_token")
    ):
        return "invalid_request"
    if form.get("audience") != issuer or form.get("resource") != resource:
        return "invalid_target"
    return None
