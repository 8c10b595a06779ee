"""An MCP server behind an OAuth 2.1 authorization server that speaks the device authorization
grant (RFC 8628). The MCP half is the official Python SDK (mcp 2.x) as a resource server; the
authorization server is authlib's (authlib.oauth2.rfc8628: DeviceAuthorizationEndpoint,
DeviceCodeGrant; rfc6749's RefreshTokenGrant), wired to Starlette here. Test peer only.

Run: python tests/servers/device_auth_server.py [--port N] [--interval S] [--expires-in S]
     [--access-token-lifetime S] [--auto-approve-after N] [--auto-deny-after N]
     [--slow-down-at N]
It binds 127.0.0.1 (port N, default 0: the OS picks a free one), prints one line to stdout,
    listening http://127.0.0.1:PORT/mcp
(the MCP endpoint; its origin is the issuer and the base of every other path below) and serves
until killed (SIGTERM or SIGINT). Tests start it with the conftest fixture
`device_auth_server(*flags)` (an HttpPeer: .url is the MCP endpoint; stopped at teardown).

Options:
  --port N                   port to bind on 127.0.0.1 (0, the default: the OS chooses)
  --interval S               the `interval` of every device authorization answer, whole seconds
                             (default 1; RFC 8628's default is 5)
  --expires-in S             lifetime of a device code and its user code, whole seconds
                             (default 600); past it a poll answers expired_token
  --access-token-lifetime S  seconds an access token lives (default 3600)
  --auto-approve-after N     the Nth poll of a device code (counting from 1) finds it approved,
                             as if the user had approved it between polls N-1 and N
                             (N=1: the first poll gets the token)
  --auto-deny-after N        the same, denied: the Nth poll answers access_denied
  --slow-down-at N           the Nth poll of a device code (counting from 1) answers slow_down
                             as if it came too soon, whatever the time, and that code's
                             interval grows by 5 s for good (§3.5); later polls sooner than
                             the grown interval get slow_down as usual. With --interval 0,
                             this is how a test sees a client honour slow_down

One client is registered up front, a public one: client_id `device-test-client`, no secret
(token endpoint auth method `none`), grants device_code and refresh_token. There is no dynamic
registration. Any other client_id, or none, is 400 invalid_client.

Authorization server (issuer http://127.0.0.1:PORT, no path):
  GET  /.well-known/oauth-authorization-server   RFC 8414: issuer, token_endpoint,
                             device_authorization_endpoint, grant_types_supported
                             [urn:ietf:params:oauth:grant-type:device_code, refresh_token],
                             token_endpoint_auth_methods_supported [none], scopes_supported
                             [user, admin], response_types_supported [] (no authorization
                             endpoint: this server does the device grant only)
  POST /device_authorization RFC 8628 §3.1/§3.2, form fields client_id, scope (default "user"),
                             resource (RFC 8707; anything but the MCP endpoint URL is
                             invalid_target). Answers device_code, user_code (BCDF-GHJK style),
                             verification_uri (http://127.0.0.1:PORT/device),
                             verification_uri_complete (?user_code=...), expires_in, interval.
                             Tokens are bound to the `resource` named here: a login that named
                             none gets tokens /mcp refuses (401), as RFC 8707 and MCP want the
                             client to name it
  POST /token                grant_type urn:ietf:params:oauth:grant-type:device_code (form
                             device_code, client_id), RFC 8628 §3.4/§3.5:
                               pending, polled no sooner than `interval` s after the previous
                               poll: 400 authorization_pending
                               pending, polled sooner: 400 slow_down, and that device code's
                               interval grows by 5 s for good (§3.5); the next poll must wait
                               the grown interval
                               denied: 400 access_denied (every poll from then on)
                               past expires_in: 400 expired_token (checked first)
                               approved: 200 {access_token, token_type Bearer, expires_in,
                               scope, refresh_token}; the device code is spent then (a later
                               poll with it: 400 invalid_request)
                             grant_type refresh_token (form refresh_token, client_id, scope a
                             subset or none): a new access token and a new refresh token; the
                             old refresh token is dead (rotation). Unknown: 400 invalid_grant
  GET  /device               the verification page: a form (user_code, approve or deny) that
                             posts to /device; the test endpoints below do the same without HTML

Protected resource (the SDK's MCPServer with a token verifier, validate_token_resource on):
  GET  /.well-known/oauth-protected-resource/mcp   RFC 9728: resource http://127.0.0.1:PORT/mcp,
                             authorization_servers [issuer], scopes_supported ["user"]
  /mcp                       Streamable HTTP (stateful). No, unknown or expired token, or one
                             bound to another resource (or none): 401 with WWW-Authenticate
                             Bearer ... resource_metadata= (the SDK's RequireAuthMiddleware).
                             A token without "user": 403 insufficient_scope.

Tools:
  echo(text) -> text
  whoami() -> JSON text {"client_id", "subject", "scopes", "resource"} of the calling token

Test knobs under /test/, loopback only (403 otherwise), never behind OAuth; JSON in and out:
  POST /test/approve  {"user_code": C}  the user approves C: {"approved": C}; 404
                      {"error": "unknown user_code"} if no device code has it
  POST /test/deny     {"user_code": C}  the user denies C: {"denied": C}
  GET  /test/stats    counters from server start: device_authorizations, polls (device_code
                      token requests), pending, slow_down, access_denied, expired_token,
                      tokens_issued (device_code grants), refreshes, unauthorized (401 from /mcp)
  GET  /test/secrets  every credential issued so far, for secret audits: {"device_codes": [...],
                      "user_codes": [...], "access_tokens": [...], "refresh_tokens": [...]}
"""

from __future__ import annotations

import argparse
import html
import json
import secrets
import socket
import time
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import uvicorn
from authlib.oauth2.rfc6749 import (
    AuthorizationServer,
    ClientMixin,
    OAuth2Request,
    RefreshTokenGrant,
    TokenMixin,
)
from authlib.oauth2.rfc6749.errors import OAuth2Error
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc8628 import (
    DEVICE_CODE_GRANT_TYPE,
    DeviceAuthorizationEndpoint,
    DeviceCodeGrant,
    DeviceCredentialDict,
)
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CLIENT_ID = "device-test-client"
SUBJECT = "device-user"  # the one resource owner; approving a user code approves as this user
BASE_SCOPE = "user"
SCOPES = ("user", "admin")
SLOW_DOWN_STEP = 5  # RFC 8628 §3.5: slow_down grows the interval by 5 seconds
COUNTERS = (
    "device_authorizations",
    "polls",
    "pending",
    "slow_down",
    "access_denied",
    "expired_token",
    "tokens_issued",
    "refreshes",
    "unauthorized",
)
LOOPBACK = ("127.0.0.1", "::1")


class InvalidTargetError(OAuth2Error):  # type: ignore[misc]
    """RFC 8707 §2: a `resource` this server issues no tokens for (authlib has no such class)."""

    error = "invalid_target"


class PublicClient(ClientMixin):  # type: ignore[misc]
    """The one registered client: public (no secret), device_code and refresh_token grants."""

    def get_client_id(self) -> str:
        return CLIENT_ID

    def get_default_redirect_uri(self) -> None:
        return None

    def get_allowed_scope(self, scope: str | None) -> str:
        return " ".join(s for s in (scope or "").split() if s in SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return False

    def check_client_secret(self, client_secret: str) -> bool:
        return False

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "none"

    def check_response_type(self, response_type: str) -> bool:
        return False

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in (DEVICE_CODE_GRANT_TYPE, "refresh_token")


@dataclass
class Issued(TokenMixin):  # type: ignore[misc]
    """An access token or a refresh token, as stored."""

    value: str
    client_id: str
    scope: str
    subject: str
    resource: str | None
    deadline: float  # time.time(); refresh tokens: inf

    def check_client(self, client: ClientMixin) -> bool:
        return bool(client.get_client_id() == self.client_id)

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return max(0, int(self.deadline - time.time()))

    def is_expired(self) -> bool:
        return time.time() >= self.deadline

    def is_revoked(self) -> bool:
        return False

    def get_user(self) -> str:
        return self.subject

    def get_client(self) -> ClientMixin:
        return PublicClient()


@dataclass
class State:
    """Everything the server remembers, in memory."""

    issuer: str
    resource: str
    interval: int
    expires_in: int
    access_token_lifetime: float
    auto_approve_after: int | None
    auto_deny_after: int | None
    slow_down_at: int | None = None
    counts: Counter[str] = field(default_factory=lambda: Counter({n: 0 for n in COUNTERS}))
    devices: dict[str, DeviceCredentialDict] = field(default_factory=dict)  # by device_code
    by_user_code: dict[str, str] = field(default_factory=dict)  # user_code -> device_code
    decisions: dict[str, bool] = field(default_factory=dict)  # user_code -> approved?
    polls: Counter[str] = field(default_factory=Counter)  # device_code -> polls so far
    last_poll: dict[str, float] = field(default_factory=dict)  # device_code -> monotonic
    intervals: dict[str, int] = field(default_factory=dict)  # device_code -> current interval
    access_tokens: dict[str, Issued] = field(default_factory=dict)
    refresh_tokens: dict[str, Issued] = field(default_factory=dict)


class FormRequest(OAuth2Request):  # type: ignore[misc]
    """authlib's framework-agnostic request over an already parsed form body."""

    def __init__(self, uri: str, headers: Mapping[str, str], form: dict[str, str]) -> None:
        super().__init__("POST", uri, headers=headers)
        self.payload = BasicOAuth2Payload(form)
        self._form = form

    @property
    def args(self) -> dict[str, str]:
        return {}

    @property
    def form(self) -> dict[str, str]:
        return self._form


class DeviceServer(AuthorizationServer):  # type: ignore[misc]
    def __init__(self, state: State) -> None:
        super().__init__(scopes_supported=list(SCOPES))
        self.state = state
        self.register_token_generator("default", self._generate)
        self.register_grant(Device)
        self.register_grant(Refresh)
        self.register_endpoint(DeviceAuthorization(self))

    def query_client(self, client_id: str) -> PublicClient | None:
        return PublicClient() if client_id == CLIENT_ID else None

    def _generate(
        self,
        grant_type: str,
        client: ClientMixin,
        user: str | None = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        token: dict[str, Any] = {
            "token_type": "Bearer",
            "access_token": secrets.token_urlsafe(32),
            "expires_in": max(1, round(self.state.access_token_lifetime)),
            "scope": scope or "",
        }
        if include_refresh_token:
            token["refresh_token"] = secrets.token_urlsafe(32)
        return token

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        if request.credential is not None:  # the device_code grant
            resource = request.credential.get("resource")
        else:  # refresh_token: the resource of the login it continues
            resource = request.refresh_token.resource
        subject = str(request.user)
        client_id = request.client.get_client_id()
        scope = token["scope"]
        access = token["access_token"]
        self.state.access_tokens[access] = Issued(
            access,
            client_id,
            scope,
            subject,
            resource,
            time.time() + self.state.access_token_lifetime,
        )
        if "refresh_token" in token:
            refresh = token["refresh_token"]
            self.state.refresh_tokens[refresh] = Issued(
                refresh, client_id, scope, subject, resource, float("inf")
            )

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

    def create_oauth2_request(self, request: OAuth2Request) -> OAuth2Request:
        return request  # always built by the endpoints below

    def create_json_request(self, request: Any) -> Any:
        raise NotImplementedError  # no JSON endpoint here

    def handle_response(
        self, status: int, body: Any, headers: list[tuple[str, str]] | Mapping[str, str]
    ) -> Response:
        return JSONResponse(body, status_code=status, headers=dict(headers))


class DeviceAuthorization(DeviceAuthorizationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS: ClassVar[list[str]] = ["none"]

    def __init__(self, server: DeviceServer) -> None:
        super().__init__(server)
        self.state = server.state
        self.EXPIRES_IN = self.state.expires_in
        self.INTERVAL = self.state.interval

    def create_endpoint_response(self, request: OAuth2Request) -> Any:
        resource = request.payload.data.get("resource")
        if resource is not None and resource.rstrip("/") != self.state.resource:
            raise InvalidTargetError()
        return super().create_endpoint_response(request)

    def get_verification_uri(self) -> str:
        return f"{self.state.issuer}/device"

    def save_device_credential(
        self, client_id: str, scope: str | None, data: dict[str, Any]
    ) -> None:
        credential = DeviceCredentialDict(
            client_id=client_id,
            scope=scope or BASE_SCOPE,
            expires_at=time.time() + data["expires_in"],
            **data,
        )
        device_code = data["device_code"]
        self.state.devices[device_code] = credential
        self.state.by_user_code[data["user_code"]] = device_code
        self.state.intervals[device_code] = data["interval"]
        self.state.counts["device_authorizations"] += 1


class Device(DeviceCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = ["none"]

    @property
    def state(self) -> State:
        return self.server.state  # type: ignore[no-any-return]

    def validate_token_request(self) -> None:
        device_code = self.request.payload.data.get("device_code")
        if device_code in self.state.devices:
            self.state.counts["polls"] += 1
            self.state.polls[device_code] += 1
        try:
            super().validate_token_request()
        except Exception as error:
            name = getattr(error, "error", None)
            if name == "authorization_pending":
                self.state.counts["pending"] += 1
            elif name in ("slow_down", "access_denied", "expired_token"):
                self.state.counts[name] += 1
            raise

    def create_token_response(self) -> Any:
        answer = super().create_token_response()
        credential = self.request.credential
        self.state.devices.pop(credential["device_code"], None)  # a device code is spent once
        self.state.counts["tokens_issued"] += 1
        return answer

    def query_device_credential(self, device_code: str) -> DeviceCredentialDict | None:
        return self.state.devices.get(device_code)

    def query_user_grant(self, user_code: str) -> tuple[str, bool] | None:
        device_code = self.state.by_user_code.get(user_code)
        polls = self.state.polls[device_code] if device_code is not None else 0
        if user_code not in self.state.decisions:
            if self.state.auto_deny_after is not None and polls >= self.state.auto_deny_after:
                self.state.decisions[user_code] = False
            elif (
                self.state.auto_approve_after is not None and polls >= self.state.auto_approve_after
            ):
                self.state.decisions[user_code] = True
        if user_code not in self.state.decisions:
            return None
        return SUBJECT, self.state.decisions[user_code]

    def should_slow_down(self, credential: DeviceCredentialDict) -> bool:
        device_code = credential["device_code"]
        now = time.monotonic()
        previous = self.state.last_poll.get(device_code)
        self.state.last_poll[device_code] = now
        interval = self.state.intervals[device_code]
        forced = self.state.polls[device_code] == self.state.slow_down_at
        if forced or (previous is not None and now - previous < interval):
            self.state.intervals[device_code] = interval + SLOW_DOWN_STEP
            return True
        return False


class Refresh(RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS: ClassVar[list[str]] = ["none"]
    INCLUDE_NEW_REFRESH_TOKEN = True

    @property
    def state(self) -> State:
        return self.server.state  # type: ignore[no-any-return]

    def authenticate_refresh_token(self, refresh_token: str) -> Issued | None:
        return self.state.refresh_tokens.get(refresh_token)

    def authenticate_user(self, refresh_token: Issued) -> str:
        return refresh_token.subject

    def revoke_old_credential(self, refresh_token: Issued) -> None:
        self.state.refresh_tokens.pop(refresh_token.value, None)
        self.state.counts["refreshes"] += 1


class Verifier:
    """The SDK's TokenVerifier over the tokens issued above."""

    def __init__(self, state: State) -> None:
        self.state = state

    async def verify_token(self, token: str) -> AccessToken | None:
        found = self.state.access_tokens.get(token)
        if found is None or found.is_expired():
            return None
        return AccessToken(
            token=token,
            client_id=found.client_id,
            scopes=found.scope.split(),
            expires_at=int(found.deadline),
            resource=found.resource,
            subject=found.subject,
        )


class CountUnauthorized:
    """Counts the 401 answers of /mcp (RequireAuthMiddleware's)."""

    def __init__(self, app: ASGIApp, state: State) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                self.state.counts["unauthorized"] += 1
            await send(message)

        await self.app(scope, receive, counting_send)


async def _form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", "replace")
    return dict(urllib.parse.parse_qsl(body, keep_blank_values=True))


def _loopback(request: Request) -> bool:
    return request.client is not None and request.client.host in LOOPBACK


def build_app(state: State) -> Starlette:
    authz = DeviceServer(state)
    server = MCPServer(
        "device-auth-test-server",
        version="1",
        log_level="WARNING",
        auth=AuthSettings(
            issuer_url=state.issuer,  # a string: an AnyHttpUrl would gain a "/"
            resource_server_url=state.resource,
            validate_token_resource=True,
            required_scopes=[BASE_SCOPE],
        ),
        token_verifier=Verifier(state),
    )

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def whoami() -> str:
        """The calling token's client, subject, scopes and resource, as JSON text."""
        token = get_access_token()
        if token is None:  # RequireAuthMiddleware lets no tokenless request through
            raise RuntimeError("no access token on this request")
        return json.dumps(
            {
                "client_id": token.client_id,
                "subject": token.subject,
                "scopes": sorted(token.scopes),
                "resource": token.resource,
            },
            sort_keys=True,
        )

    async def as_metadata(_request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": state.issuer,
                "token_endpoint": f"{state.issuer}/token",
                "device_authorization_endpoint": f"{state.issuer}/device_authorization",
                "grant_types_supported": [DEVICE_CODE_GRANT_TYPE, "refresh_token"],
                "token_endpoint_auth_methods_supported": ["none"],
                "response_types_supported": [],
                "scopes_supported": list(SCOPES),
            }
        )

    async def device_authorization(request: Request) -> Response:
        oauth = FormRequest(str(request.url), request.headers, await _form(request))
        response: Response = authz.create_endpoint_response("device_authorization", oauth)
        if response.status_code == 200:
            answer = json.loads(bytes(response.body))
            state.devices[answer["device_code"]]["resource"] = oauth.payload.data.get("resource")
        return response

    async def token(request: Request) -> Response:
        oauth = FormRequest(str(request.url), request.headers, await _form(request))
        response: Response = authz.create_token_response(oauth)
        return response

    def decide(user_code: str, approved: bool) -> bool:
        if user_code not in state.by_user_code:
            return False
        state.decisions[user_code] = approved
        return True

    async def device_page(request: Request) -> Response:
        code = html.escape(request.query_params.get("user_code", ""), quote=True)
        return HTMLResponse(
            "<!doctype html><title>Device login</title><form method=post action=/device>"
            f"<input name=user_code value='{code}'>"
            "<button name=action value=approve>Approve</button>"
            "<button name=action value=deny>Deny</button></form>"
        )

    async def device_decision(request: Request) -> Response:
        form = await _form(request)
        if not decide(form.get("user_code", ""), form.get("action") == "approve"):
            return HTMLResponse("unknown code", status_code=404)
        return HTMLResponse("done: return to your device")

    def test_decision(approved: bool) -> Any:
        async def endpoint(request: Request) -> Response:
            if not _loopback(request):
                return JSONResponse({"error": "loopback only"}, status_code=403)
            try:
                user_code = (await request.json())["user_code"]
            except (ValueError, KeyError, TypeError):
                user_code = None
            if not isinstance(user_code, str):
                return JSONResponse({"error": 'body must be {"user_code": C}'}, status_code=400)
            if not decide(user_code, approved):
                return JSONResponse({"error": "unknown user_code"}, status_code=404)
            return JSONResponse({"approved" if approved else "denied": user_code})

        return endpoint

    async def stats(request: Request) -> Response:
        if not _loopback(request):
            return JSONResponse({"error": "loopback only"}, status_code=403)
        return JSONResponse({name: state.counts[name] for name in COUNTERS})

    async def issued(request: Request) -> Response:
        if not _loopback(request):
            return JSONResponse({"error": "loopback only"}, status_code=403)
        return JSONResponse(
            {
                "device_codes": sorted(state.by_user_code.values()),
                "user_codes": sorted(state.by_user_code),
                "access_tokens": sorted(state.access_tokens),
                "refresh_tokens": sorted(state.refresh_tokens),
            }
        )

    route = server.custom_route
    route("/.well-known/oauth-authorization-server", methods=["GET"])(as_metadata)
    route("/device_authorization", methods=["POST"])(device_authorization)
    route("/token", methods=["POST"])(token)
    route("/device", methods=["GET"])(device_page)
    route("/device", methods=["POST"])(device_decision)
    route("/test/approve", methods=["POST"])(test_decision(True))
    route("/test/deny", methods=["POST"])(test_decision(False))
    route("/test/stats", methods=["GET"])(stats)
    route("/test/secrets", methods=["GET"])(issued)
    app = server.streamable_http_app()
    for mounted in app.routes:
        if getattr(mounted, "path", None) == "/mcp":
            mounted.app = CountUnauthorized(mounted.app, state)  # type: ignore[attr-defined]
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--interval", type=int, default=1, metavar="SECONDS")
    parser.add_argument("--expires-in", type=int, default=600, metavar="SECONDS")
    parser.add_argument("--access-token-lifetime", type=float, default=3600.0, metavar="SECONDS")
    parser.add_argument("--auto-approve-after", type=int, default=None, metavar="POLLS")
    parser.add_argument("--auto-deny-after", type=int, default=None, metavar="POLLS")
    parser.add_argument("--slow-down-at", type=int, default=None, metavar="POLL")
    args = parser.parse_args()
    if args.interval < 0 or args.expires_in < 1 or not args.access_token_lifetime > 0:
        parser.error("--interval >= 0, --expires-in >= 1, --access-token-lifetime > 0")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    state = State(
        issuer=origin,
        resource=f"{origin}/mcp",
        interval=args.interval,
        expires_in=args.expires_in,
        access_token_lifetime=args.access_token_lifetime,
        auto_approve_after=args.auto_approve_after,
        auto_deny_after=args.auto_deny_after,
        slow_down_at=args.slow_down_at,
    )
    app = build_app(state)
    print(f"listening {origin}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
