"""An MCP server protected by OAuth 2.1, both halves built with the official Python SDK (mcp 2.x).

Run: python tests/servers/py_auth_server.py [--port N] [--mode M] [--access-token-lifetime S]
It binds 127.0.0.1 (port N, default 0: the OS picks a free one), prints one line to stdout,
    listening http://127.0.0.1:PORT/mcp
(the MCP endpoint; its origin is the issuer and the base of every other path below) and serves
until killed (SIGTERM or SIGINT). Tests start it with the conftest fixture `py_auth_server(*flags)`
(an HttpPeer: .url is the MCP endpoint; stopped at teardown).

Options:
  --port N                   port to bind on 127.0.0.1 (0, the default: the OS chooses)
  --mode M                   the MCP endpoint, as in py_http_server.py: stateful (default:
                             sessions, SSE answers), stateless, or json (sessions, JSON answers)
  --access-token-lifetime S  seconds an access token lives (default 3600; fractions allowed;
                             expires_in says ceil(S)); change it at run time with the control
                             endpoint below

Authorization server (the SDK's routes in mcp.server.auth.routes, with the provider below; the
issuer is http://127.0.0.1:PORT, no path):
  GET  /.well-known/oauth-authorization-server   RFC 8414 metadata; scopes_supported user, admin;
                             token endpoint auth client_secret_post and client_secret_basic (the
                             SDK lists no `none`); it does not advertise
                             authorization_response_iss_parameter_supported (the SDK's metadata
                             builder has no such switch), yet every redirect carries `iss`
  POST /register             RFC 7591 dynamic registration (SDK handler); a client that names no
                             `scope` is registered for "user admin", so it may step up later; one
                             that registers "user" only is refused `invalid_scope` at /authorize
                             when it asks for admin (that check is the SDK's)
  GET  /authorize            approves at once, no login page: 302 to the redirect URI with
                             `code`, `state` and `iss`. Scopes granted: those asked for, or "user"
                             when the request names none. A `resource` other than the MCP
                             endpoint URL is refused (`invalid_target`, redirected). Tokens are
                             bound to the `resource` named here (one at /token is not looked at):
                             a login whose /authorize named none gets tokens /mcp answers 401
  POST /token                authorization_code (+ PKCE S256, checked by the SDK) and
                             refresh_token. Every grant answers a new access token and a new
                             refresh token; a refresh rotates: the refresh token it used is dead
                             from then on (the access token issued with it lives on)
  POST /revoke               RFC 7009 (SDK handler); revoking either token of a pair revokes both.
                             The SDK's handler wants a `client_secret` form field even from a
                             client that authenticates with Basic: without it, 400 invalid_request

Protected resource (the SDK's MCPServer with AuthSettings, validate_token_resource on):
  GET  /.well-known/oauth-protected-resource/mcp   RFC 9728 metadata: resource
                             http://127.0.0.1:PORT/mcp, authorization_servers [issuer],
                             scopes_supported ["user"] (the SDK lists required_scopes there)
  /mcp                       Streamable HTTP. No, unknown, expired or revoked token, or one issued
                             for another resource: 401 with
                             WWW-Authenticate: Bearer error="invalid_token", ..., resource_metadata=
                             (the SDK's RequireAuthMiddleware; it sends no `scope` parameter).
                             A token without "user": 403 insufficient_scope (SDK, required_scopes).
                             A tools/call of `admin_echo` with a token without "admin": 403 with
                             WWW-Authenticate: Bearer error="insufficient_scope",
                             scope="user admin", resource_metadata="...",
                             error_description="Required scope: admin"
                             (this file's gate: the SDK has no per-tool or per-request scopes)

Tools:
  echo(text) -> text
  whoami() -> JSON text {"client_id": ..., "subject": ..., "scopes": [...]} of the calling token
  admin_echo(text) -> "admin: <text>"; needs scope admin (step-up: see above)

Test knobs: /__control/ on the same port, loopback only (a request from elsewhere gets 403), never
behind OAuth. Every answer is JSON.
  GET  /__control/stats                    the counters below, each an integer
  POST /__control/expire-access-tokens     every access token issued so far is expired from now on
                                           (the next use is a 401); answers {"expired": n}
  POST /__control/revoke-refresh-tokens    every refresh token is revoked (the next refresh is
                                           invalid_grant); answers {"revoked": n}
  POST /__control/access-token-lifetime    body {"seconds": S}: tokens issued from now on live S s
                                           (answers {"seconds": S})
  POST /__control/withhold-scope           body {"scope": S}: from now on /authorize grants what
                                           is asked for less S (a narrower grant, RFC 6749 §3.3;
                                           the token answer's `scope` says so), so a client
                                           stepping up for S is refused again and again
                                           (answers {"withheld": [...]})
Counters (GET /__control/stats), counts only, from server start:
  registrations        clients registered
  authorizations       /authorize requests answered with a code
  code_exchanges       authorization codes exchanged for tokens
  refreshes            successful refresh_token grants
  refresh_refused      refresh tokens looked up and not found (unknown, rotated out or revoked):
                       a refused refresh at /token (or the revocation of an unknown token)
  access_tokens_issued code_exchanges + refreshes
  revocations          tokens revoked at /revoke
  unauthorized         401 answers from /mcp
  insufficient_scope   403 answers from /mcp (the SDK's and the admin gate's)
  streams              GET /mcp answered 200 (a client's listening SSE stream, legacy sessions):
                       a test waits for it before expiring tokens, or the GET may be refused
"""

from __future__ import annotations

import argparse
import json
import math
import secrets
import socket
import time
from collections import Counter
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, RequireAuthMiddleware
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MODES = ("stateful", "stateless", "json")
BASE_SCOPE = "user"
ADMIN_SCOPE = "admin"
SUBJECT = "test-user"  # the one resource owner; /authorize approves as this user
CODE_LIFETIME = 300.0
TOOL_SCOPES = {"admin_echo": ADMIN_SCOPE}  # tools/call name -> the scope it needs besides "user"
COUNTERS = (
    "registrations",
    "authorizations",
    "code_exchanges",
    "refreshes",
    "refresh_refused",
    "access_tokens_issued",
    "revocations",
    "unauthorized",
    "insufficient_scope",
    "streams",
)
LOOPBACK = ("127.0.0.1", "::1")


class ApprovingProvider(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """Everything in memory; approves every authorization request at once as SUBJECT."""

    def __init__(self, issuer: str, resource: str, access_token_lifetime: float) -> None:
        self.issuer = issuer
        self.resource = resource
        self.access_token_lifetime = access_token_lifetime
        self.counts: Counter[str] = Counter({name: 0 for name in COUNTERS})
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access_tokens: dict[str, AccessToken] = {}
        # time.time() deadlines: AccessToken.expires_at is whole seconds, a test wants less
        self.deadlines: dict[str, float] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}
        self.pairs: dict[str, str] = {}  # either token of a pair -> the other one
        self.withheld: set[str] = set()  # scopes /authorize never grants (a control knob)

    # --- clients ---

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None  # the SDK handler mints it
        self.clients[client_info.client_id] = client_info
        self.counts["registrations"] += 1

    # --- authorization code ---

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        if params.resource is not None and params.resource.rstrip("/") != self.resource:
            raise AuthorizeError("invalid_target", "this server issues tokens for its /mcp only")
        code = secrets.token_urlsafe(32)
        assert client.client_id is not None
        asked = params.scopes if params.scopes is not None else [BASE_SCOPE]
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=[scope for scope in asked if scope not in self.withheld],
            expires_at=time.time() + CODE_LIFETIME,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=SUBJECT,
        )
        self.counts["authorizations"] += 1
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=self.issuer
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]  # one use only
        self.counts["code_exchanges"] += 1
        return self._issue(
            authorization_code.client_id,
            authorization_code.scopes,
            authorization_code.resource,
            authorization_code.subject,
        )

    # --- refresh ---

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh_tokens.get(refresh_token)
        if found is None:
            self.counts["refresh_refused"] += 1
        return found

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        # Rotation: the refresh token just used is gone; its access token lives until it expires.
        del self.refresh_tokens[refresh_token.token]
        self.pairs.pop(refresh_token.token, None)
        self.counts["refreshes"] += 1
        return self._issue(
            refresh_token.client_id, scopes, refresh_token.resource, refresh_token.subject
        )

    # --- access tokens ---

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access_tokens.get(token)
        if found is None or time.time() >= self.deadlines[token]:
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.counts["revocations"] += 1
        for value in (token.token, self.pairs.get(token.token)):
            if value is not None:
                self.access_tokens.pop(value, None)
                self.deadlines.pop(value, None)
                self.refresh_tokens.pop(value, None)
                self.pairs.pop(value, None)

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, subject: str | None
    ) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        lifetime = self.access_token_lifetime
        deadline = time.time() + lifetime
        self.access_tokens[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=math.ceil(deadline),
            resource=resource,
            subject=subject,
            claims={"iss": self.issuer},
        )
        self.deadlines[access] = deadline
        self.refresh_tokens[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        self.pairs[access], self.pairs[refresh] = refresh, access
        self.counts["access_tokens_issued"] += 1
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=math.ceil(lifetime),
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    # --- the control endpoint's knobs ---

    def expire_access_tokens(self) -> int:
        now = time.time()
        live = [token for token, deadline in self.deadlines.items() if deadline > now]
        for token in live:
            self.deadlines[token] = now
        return len(live)

    def revoke_refresh_tokens(self) -> int:
        revoked = len(self.refresh_tokens)
        for token in self.refresh_tokens:
            self.pairs.pop(token, None)
        self.refresh_tokens.clear()
        return revoked


class ScopeGate:
    """Wraps the SDK's RequireAuthMiddleware on /mcp: counts its 401 and 403 answers, and answers
    403 insufficient_scope (RFC 6750 §3.1, with the `scope` the call needs) to a tools/call of a
    tool in TOOL_SCOPES by a token without that tool's scope."""

    def __init__(
        self, app: ASGIApp, provider: ApprovingProvider, resource_metadata_url: str
    ) -> None:
        self.app = app
        self.provider = provider
        self.resource_metadata_url = resource_metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        user = scope.get("user")
        if scope["method"] == "POST" and isinstance(user, AuthenticatedUser):
            body, receive = await _buffered(receive)
            needed = _needed_scope(body)
            if needed is not None and needed not in user.scopes:
                await self._insufficient_scope(send, needed)
                return

        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                if message["status"] == 401:
                    self.provider.counts["unauthorized"] += 1
                elif message["status"] == 403:
                    self.provider.counts["insufficient_scope"] += 1
                elif message["status"] == 200 and scope["method"] == "GET":
                    self.provider.counts["streams"] += 1
            await send(message)

        await self.app(scope, receive, counting_send)

    async def _insufficient_scope(self, send: Send, needed: str) -> None:
        self.provider.counts["insufficient_scope"] += 1
        description = f"Required scope: {needed}"
        challenge = (
            f'Bearer error="insufficient_scope", scope="{BASE_SCOPE} {needed}", '
            f'resource_metadata="{self.resource_metadata_url}", '
            f'error_description="{description}"'
        )
        body = json.dumps(
            {"error": "insufficient_scope", "error_description": description}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def _buffered(receive: Receive) -> tuple[bytes, Receive]:
    """The whole request body, and a receive that hands it out again, then defers to the real
    one (which reports the disconnect)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # a disconnect before the body ended
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


def _needed_scope(body: bytes) -> str | None:
    """The scope a tools/call in `body` needs beyond BASE_SCOPE, if any."""
    try:
        message = json.loads(body)
    except ValueError:
        return None  # the SDK answers the parse error
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return TOOL_SCOPES.get(name) if isinstance(name, str) else None


def _calling_token() -> AccessToken:
    """The access token of the request carrying this call (the SDK's auth context)."""
    token = get_access_token()
    if token is None:  # RequireAuthMiddleware lets no tokenless request through
        raise RuntimeError("no access token on this request")
    return token


def build_server(provider: ApprovingProvider) -> MCPServer:
    auth = AuthSettings(
        # Strings, not AnyHttpUrl: AuthSettings keeps a path-less string issuer as it is, while an
        # AnyHttpUrl made here gains a "/" and the issuer would no longer equal the `iss` we send.
        issuer_url=provider.issuer,
        resource_server_url=provider.resource,
        validate_token_resource=True,
        required_scopes=[BASE_SCOPE],
        client_registration_options=ClientRegistrationOptions(
            enabled=True,
            valid_scopes=[BASE_SCOPE, ADMIN_SCOPE],
            default_scopes=[BASE_SCOPE, ADMIN_SCOPE],
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    server = MCPServer(
        "py-auth-test-server",
        version="1",
        log_level="WARNING",
        auth=auth,
        auth_server_provider=provider,
    )

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def whoami() -> str:
        """The calling token's client, subject and scopes, as JSON text."""
        token = _calling_token()
        return json.dumps(
            {
                "client_id": token.client_id,
                "subject": token.subject,
                "scopes": sorted(token.scopes),
            },
            sort_keys=True,
        )

    @server.tool()
    def admin_echo(text: str) -> str:
        """Return "admin: <text>"; needs scope admin (the gate answers 403 before this runs)."""
        if ADMIN_SCOPE not in _calling_token().scopes:  # never reached past the gate
            raise PermissionError("scope admin required")
        return f"admin: {text}"

    def control(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            if request.client is None or request.client.host not in LOOPBACK:
                return JSONResponse({"error": "loopback only"}, status_code=403)
            return await handler(request)

        return endpoint

    async def stats(_request: Request) -> Response:
        return JSONResponse({name: provider.counts[name] for name in COUNTERS})

    async def expire(_request: Request) -> Response:
        return JSONResponse({"expired": provider.expire_access_tokens()})

    async def revoke_refresh(_request: Request) -> Response:
        return JSONResponse({"revoked": provider.revoke_refresh_tokens()})

    async def lifetime(request: Request) -> Response:
        try:
            seconds = float((await request.json())["seconds"])
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": 'body must be {"seconds": S}'}, status_code=400)
        if not seconds > 0:
            return JSONResponse({"error": "seconds must be > 0"}, status_code=400)
        provider.access_token_lifetime = seconds
        return JSONResponse({"seconds": seconds})

    async def withhold(request: Request) -> Response:
        try:
            scope = (await request.json())["scope"]
        except (ValueError, KeyError, TypeError):
            scope = None
        if not isinstance(scope, str) or not scope:
            return JSONResponse({"error": 'body must be {"scope": S}'}, status_code=400)
        provider.withheld.add(scope)
        return JSONResponse({"withheld": sorted(provider.withheld)})

    server.custom_route("/__control/stats", methods=["GET"])(control(stats))
    server.custom_route("/__control/expire-access-tokens", methods=["POST"])(control(expire))
    server.custom_route("/__control/revoke-refresh-tokens", methods=["POST"])(
        control(revoke_refresh)
    )
    server.custom_route("/__control/access-token-lifetime", methods=["POST"])(control(lifetime))
    server.custom_route("/__control/withhold-scope", methods=["POST"])(control(withhold))
    return server


def build_app(provider: ApprovingProvider, mode: str) -> Starlette:
    server = build_server(provider)
    app = server.streamable_http_app(
        json_response=mode == "json", stateless_http=mode == "stateless"
    )
    # The SDK mounts /mcp as RequireAuthMiddleware(transport); put the scope gate around it.
    metadata_url = str(build_resource_metadata_url(AnyHttpUrl(provider.resource)))
    routes = [r for r in app.routes if isinstance(r, Route) and r.path == "/mcp"]
    if len(routes) != 1 or not isinstance(routes[0].app, RequireAuthMiddleware):
        raise RuntimeError(
            "the SDK no longer mounts /mcp as RequireAuthMiddleware: update ScopeGate"
        )
    routes[0].app = ScopeGate(routes[0].app, provider, metadata_url)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=MODES, default="stateful")
    parser.add_argument("--access-token-lifetime", type=float, default=3600.0, metavar="SECONDS")
    args = parser.parse_args()
    if not args.access_token_lifetime > 0:
        parser.error("--access-token-lifetime must be > 0")
    # We bind first (port 0: the OS picks), so the issuer URL can name the port. IPPROTO_TCP:
    # see py_http_server.py (TCP_NODELAY).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = ApprovingProvider(origin, f"{origin}/mcp", args.access_token_lifetime)
    app = build_app(provider, args.mode)
    print(f"listening {origin}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
