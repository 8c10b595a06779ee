"""The steps that obtain a token, in the MCP authorization spec's order (2025-11-25 and
2026-07-28 ``basic/authorization``), and how a flow ends; ``Flow`` keeps the layer's state.

``Authorization`` (``layer.py``) is a ``Flow`` placed between the session and the HTTP
transport: it decides when a flow starts (a challenge, an expired token) and feeds it the
answers to its requests, through ``ANSWERED``, by the phase that sent them. Each step here
moves the phase (``AUTH_TABLE``, ``_vocabulary/phases.py``) and starts at most one request of
its own (``_start``) or asks the driver for one thing (an action); the layer's guarantees are
the package's (``_auth/__init__.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from .._config.oauth_settings import OAuthSettings, token_store_key
from .._config.spec import Spec
from .._transport.connection import Session
from .._transport.http import HttpTransport
from .._vocabulary.actions import (
    AbortHttp,
    Action,
    Authorize,
    ObtainAssertion,
    PrepareAuthorization,
    SaveAuthorization,
    SignAssertion,
    StartHttp,
)
from .._vocabulary.errors import (
    AuthorizationFailed,
    AuthorizationRequired,
    AuthorizationUnavailable,
    McpError,
)
from .._vocabulary.events import AuthorizationPrepared
from .._vocabulary.phases import AuthPhase, AuthStep, auth_step
from .._vocabulary.tokens import StoredAuthorization
from .._vocabulary.urls import origin_of, redact_url
from . import enterprise as enterprise
from . import oauth as oauth
from .dpop import Dpop, authorization, resume
from .fetch import Fetch
from .held import HeldRequests
from .metadata import UnreadableAnswer, may_fetch

__all__ = ["ANSWERED", "MAX_AUTHORIZATIONS", "Flow"]

# 2026-07-28 basic/authorization "Step-Up Authorization Flow": clients "SHOULD implement retry
# limits". Counted per request, as the conformance suite's auth/scope-retry-limit counts them
# for the one request it refuses forever: the authorizations the request waited for (the
# first one included); a request refused for scope after that many fails, and no fourth
# authorization is made for it.
MAX_AUTHORIZATIONS = 3
# The grant types a client registers for (RFC 7591 §2), by the configured grant.
_REGISTERED_GRANTS: Mapping[str, tuple[str, ...]] = {
    "authorization_code": ("authorization_code", "refresh_token"),
    "client_credentials": ("client_credentials",),
    "device_code": ("urn:ietf:params:oauth:grant-type:device_code", "refresh_token"),
}
# A token this close to its expiry is refreshed before use rather than sent.
_EXPIRY_MARGIN = 30.0


class Flow:
    """The state of one session's authorization and the steps that move it."""

    __slots__ = (
        "_access_token", "_asked_to_wait", "_candidates", "_challenge", "_client", "_dpop",
        "_enterprise", "_expires_at", "_failure", "_fetches", "_granted_scope", "_guessed",
        "_held", "_id_token", "_idp_endpoint", "_idp_methods", "_inner", "_insecure", "_issuer",
        "_jwt", "_legacy",
        "_out", "_pending", "_prepared", "_refresh_token", "_resource", "_resource_metadata",
        "_scope", "_server", "_session", "_settings", "_spec", "_token_type", "_transient", "_url",
        "phase",
    )  # fmt: skip

    def __init__(
        self,
        spec: Spec,
        inner: HttpTransport,
        session: Session,
        out: list[Action],
        settings: OAuthSettings,
        stored: StoredAuthorization | None = None,
    ) -> None:
        """``stored``: what the token store kept for this server, its ``expires_at`` already
        on the machine's clock (see ``SaveAuthorization``)."""
        assert spec.url is not None
        self._spec = spec
        self._url = spec.url
        self._inner = inner
        self._session = session
        self._out = out
        self._settings = settings
        self._resource = oauth.canonical_resource(spec.url)
        parts = urlsplit(spec.url)
        # RFC 6750 §5.3: "Clients MUST always use TLS ... when making requests with bearer
        # tokens"; a server on this machine is the exception OAuth 2.1 §1.5 makes.
        self._insecure = (
            parts.scheme.lower() == "http"
            and not oauth.is_loopback(parts.hostname or "")
            and not settings.allow_insecure_http
        )
        self.phase = AuthPhase.UNAUTHORIZED
        self._jwt = settings.grant == "jwt_bearer"
        self._enterprise = settings.grant == "enterprise"  # SEP-990: two legs per token
        self._idp_endpoint: str | None = None  # found in the identity provider's metadata
        self._idp_methods: tuple[str, ...] | None = None  # and how its clients authenticate
        self._id_token: str | None = None  # waiting for that metadata
        self._held = HeldRequests(inner, session, spec.init_timeout)
        self._fetches: dict[int, Fetch] = {}
        self._candidates: list[str] = []  # metadata URLs still to try, in order
        self._legacy = False  # no protected resource metadata: a 2025-03-26 server
        self._guessed = False  # ... and no server metadata: its default endpoints in use
        self._transient: AuthorizationUnavailable | None = None  # of a metadata URL skipped
        # Until when a Retry-After asked for quiet, and the failure that said so.
        self._asked_to_wait: tuple[float, AuthorizationUnavailable] | None = None
        self._challenge: oauth.AuthChallenge | None = None
        self._resource_metadata: oauth.ProtectedResourceMetadata | None = None
        self._server: oauth.AuthorizationServerMetadata | None = None
        self._client: oauth.RegisteredClient | None = None  # the identity in use, if known
        self._prepared: AuthorizationPrepared | None = None  # while registering for it
        self._pending: oauth.PendingAuthorization | None = None
        self._scope: str | None = None  # asked for last (step-up asks for the union)
        self._failure: McpError | None = None
        self._issuer: str | None = None
        # The token; expires_at on the machine's clock.
        self._access_token: str | None = None
        self._refresh_token: str | None = None
        self._expires_at: float | None = None
        self._granted_scope: str | None = None
        self._token_type = "Bearer"
        # DPoP (RFC 9449; ``dpop.py``): None when off.
        self._dpop = Dpop(settings.dpop, inner) if settings.dpop != "off" else None
        if stored is not None:
            stored = resume(stored, self._dpop)
            self._issuer = stored.issuer
            self._client = oauth.RegisteredClient(
                client_id=stored.client_id, client_secret=stored.client_secret
            )
            self._refresh_token = None if self._signs() else stored.refresh_token
            self._expires_at = stored.expires_at
            self._granted_scope = stored.scope
            if stored.access_token is not None and not self._insecure:
                self._token(stored.access_token, stored.token_type)
                self._move(AuthStep.TOKEN)

    # --- the steps, in the spec's order ------------------------------------------------------

    def _discover(self) -> None:
        """RFC 9728: the protected resource metadata, from the challenge's URL or the
        well-known ones, in order."""
        hint = self._challenge.resource_metadata if self._challenge is not None else None
        self._candidates = list(oauth.protected_resource_metadata_urls(self._url, hint))
        self._transient = None
        self._legacy = self._guessed = False
        self._move(AuthStep.DISCOVER)
        self._fetch_next()

    def _fetch_next(self) -> None:
        """The next metadata URL; when none is left, the first failure that may pass (so the
        attempt is retried), else a refusal: no URL has the document."""
        out_of_time = self._held.connect_bound() <= self._session.now  # the handshake's is over
        if self._transient is not None and (not self._candidates or out_of_time):
            self._falter(self._transient)
            return
        if not self._candidates:
            if self.phase is AuthPhase.DISCOVERING_RESOURCE:
                self._without_resource_metadata()
            elif self._legacy and self.phase is AuthPhase.DISCOVERING_SERVER:
                assert self._issuer is not None
                self._server = oauth.default_endpoints(self._issuer)
                self._guessed = True
                self._identify(True)
            else:
                what = (
                    "identity provider"
                    if self.phase is AuthPhase.DISCOVERING_IDENTITY_PROVIDER
                    else "authorization server"
                )
                raise AuthorizationFailed(
                    None, f"no {what} metadata was found at any well-known URL"
                )
            return
        self._start(oauth.metadata_request(self._candidates.pop(0)))

    def _without_resource_metadata(self) -> None:
        """No protected resource metadata at any URL: a server of MCP 2025-03-26, which had
        none. Its ``basic/authorization``, "Authorization Base URL": it "MUST be determined
        from the MCP server URL by discarding any existing path component", and the
        authorization server's metadata is looked for there (RFC 8414); with none there
        either, the default endpoints ("Fallbacks for Servers without Metadata Discovery",
        ``default_endpoints``). The official SDKs fall back the same way."""
        self._legacy = True
        self._resource_metadata = None
        self._discover_server(origin_of(self._url))

    def _on_resource_metadata(self, status: int, body: bytes) -> None:
        if not 200 <= status < 300:
            self._fetch_next()
            return
        metadata = oauth.parse_protected_resource_metadata(body, server_url=self._url)
        self._resource_metadata = metadata
        issuer = metadata.authorization_servers[0]
        if not may_fetch(issuer, self._url):
            raise AuthorizationFailed(
                None,
                f"the protected resource metadata names issuer {redact_url(issuer)!r}, which "
                "this client does not use for this server: an issuer is https, and on this "
                "machine only for a server on this machine",
            )
        self._discover_server(issuer)

    def _discover_server(self, issuer: str) -> None:
        """RFC 8414 (or OpenID Connect Discovery): the authorization server's metadata."""
        if self._issuer is not None and issuer != self._issuer:
            # Credentials are bound to the issuer: a new one means registering again.
            self._client = None
            self._refresh_token = None
        self._issuer = issuer
        self._candidates = list(oauth.authorization_server_metadata_urls(issuer))
        self._transient = None
        self._move(AuthStep.DISCOVER_SERVER)
        self._fetch_next()

    def _on_server_metadata(self, status: int, body: bytes) -> None:
        assert self._issuer is not None
        if not 200 <= status < 300:
            self._fetch_next()
            return
        self._server = oauth.parse_authorization_server_metadata(body, issuer=self._issuer)
        if self._dpop is not None:
            self._dpop.choose(self._server)
        self._identify(True)

    def _identify(self, may_refresh: bool) -> None:
        """A client identity at this authorization server, then a token: by refresh when
        ``may_refresh`` and there is a refresh token, else by the configured grant."""
        server, settings = self._server, self._settings
        if server is None:
            self._discover()
            return
        if self._jwt:
            self._obtain()
            return
        if self._enterprise:
            self._client = self._client or oauth.configured_client(server, settings)
            if not (may_refresh and self._refresh_token is not None):
                self._obtain()  # the user's ID token (SEP-990): pre-registered, never registers
                return
        if self._client is None:
            self._client = oauth.configured_client(server, settings)
            if self._client is None and settings.grant in ("client_credentials", "device_code"):
                self._register(server, ())
                return
            if self._client is None:
                self._prepare()  # registration needs the redirect URI: it comes first
                return
        if may_refresh and self._refresh_token is not None:
            self._refresh()
        else:
            self._grant()

    def _register(
        self, server: oauth.AuthorizationServerMetadata, redirect_uris: tuple[str, ...]
    ) -> None:
        """RFC 7591 dynamic registration."""
        assert server.registration_endpoint is not None
        self._move(AuthStep.REGISTER)
        self._start(
            oauth.registration_request(
                server.registration_endpoint,
                client_name=self._settings.client_name,
                redirect_uris=redirect_uris,
                grant_types=_REGISTERED_GRANTS[self._settings.grant],
                token_endpoint_auth_method=oauth.registration_auth_method(server),
            )
        )

    def _grant(self) -> None:
        if self._settings.grant == "authorization_code":
            self._prepare()
            return
        self._held.count_authorization()
        if self._signs():
            self._sign()
        else:
            self._request_token(None)

    def _signs(self) -> bool:
        """Whether the grant's token request carries a ``private_key_jwt`` client assertion
        (``client_credentials`` with a ``key_file``), signed afresh for each one. Such a client
        keeps no refresh token (RFC 6749 §4.4.3: one should not be issued): a refresh would
        need an assertion as well, and a new grant costs the same one request."""
        return self._settings.private_key and self._settings.grant == "client_credentials"

    def _sign(self) -> None:
        """A fresh ``private_key_jwt`` client assertion from the driver for the token request
        (RFC 7523 §3: one ``jti`` per assertion, which the server may refuse to see twice)."""
        assert self._client is not None and self._server is not None
        self._move(AuthStep.SIGN)
        self._out.append(
            SignAssertion(
                client_id=self._client.client_id,
                audience=self._server.issuer,
                algorithms=self._server.token_endpoint_auth_signing_alg_values_supported,
            )
        )

    def _obtain(self) -> None:
        """Workload identity (SEP-1933): a fresh platform JWT from the driver, for each token
        request (the platform rotates it); no registration, no refresh."""
        assert self._server is not None
        oauth.require_jwt_bearer_grant(self._server)
        self._held.count_authorization()
        self._move(AuthStep.SIGN)
        self._out.append(
            ObtainAssertion(issuer=self._server.issuer, token_endpoint=self._server.token_endpoint)
        )

    def _prepare(self) -> None:
        """The browser step is next: only where a person may be asked."""
        if not self._settings.interactive:
            self._refuse(AuthorizationRequired(self._spec.name))
            return
        self._move(AuthStep.PREPARE)
        self._out.append(PrepareAuthorization())

    def _prepared_for(self, event: AuthorizationPrepared) -> None:
        server = self._server
        assert server is not None
        if self._client is None:
            self._prepared = event
            self._register(server, (event.redirect_uri,))
        else:
            self._authorize(event)

    def _choose_scope(
        self, server: oauth.AuthorizationServerMetadata, *, wants_refresh: bool = True
    ) -> str | None:
        """The ``scope`` a request for a token asks of ``server`` (the spec's, else
        ``oauth.select_scope``'s choice), kept as the flow's scope."""
        wanted = self._challenge.scope if self._challenge is not None else None
        metadata = self._resource_metadata
        self._scope = self._settings.scope or oauth.select_scope(
            challenge_scope=self._scope or wanted,
            resource_scopes=metadata.scopes_supported if metadata is not None else None,
            server_scopes=server.scopes_supported,
            wants_refresh=wants_refresh,
        )
        return self._scope

    def _authorize(self, event: AuthorizationPrepared) -> None:
        """The authorization code flow's request (PKCE S256, state, resource)."""
        server, client = self._server, self._client
        assert server is not None and client is not None
        scope = self._choose_scope(server)
        self._pending = oauth.begin_authorization(
            server,
            client_id=client.client_id,
            redirect_uri=event.redirect_uri,
            resource=self._resource_value(),
            scope=scope,
            verifier_entropy=event.entropy[:32],
            state_entropy=event.entropy[32:],
        )
        self._held.count_authorization()
        self._move(AuthStep.AUTHORIZE)
        # The user may take minutes at the browser (``_redeem`` starts the deadlines again).
        self._held.suspend_connect_deadlines()
        self._out.append(Authorize(url=self._pending.url, state=self._pending.state))

    def _redeem(self, params: Mapping[str, str]) -> None:
        """The redirect came back: check it (state, iss) and redeem its code."""
        pending, server = self._pending, self._server
        assert pending is not None and server is not None
        self._pending = None
        self._held.rearm_connect_deadlines()
        code = oauth.check_authorization_response(pending, params)
        request = oauth.authorization_code_token_request(
            server.token_endpoint, auth=self._client_auth(None), code=code, pending=pending
        )
        self._move(AuthStep.EXCHANGE)
        self._start(request)

    def _request_token(self, assertion: str | None) -> None:
        """``client_credentials`` (RFC 6749 §4.4; SEP-1046), or ``jwt_bearer`` with the
        platform's JWT (RFC 7523 §2.1; SEP-1933); for ``enterprise`` the assertion is the
        user's ID token, exchanged first (``_exchange_identity``)."""
        server, scope = self._server, self._settings.scope or self._scope
        assert server is not None
        if self._enterprise:
            self._exchange_identity(server, assertion or "")
            return
        resource, cid = self._resource_value(), self._settings.client_id
        if self._jwt:
            request = oauth.jwt_bearer_token_request(server, assertion or "", resource, scope, cid)
        else:
            auth = self._client_auth(assertion)
            request = oauth.client_credentials_token_request(
                server.token_endpoint, auth=auth, resource=resource, scope=scope
            )
        self._move(AuthStep.EXCHANGE)
        self._start(request)

    def _exchange_identity(self, server: oauth.AuthorizationServerMetadata, id_token: str) -> None:
        """Enterprise-managed authorization, leg 1 (SEP-990, RFC 8693): the ID token for an
        ID-JAG at the identity provider, for this authorization server and resource, with the
        scope when one is known (configured, else as the authorization code flow selects it:
        the challenge's, else the resource's ``scopes_supported``). With ``idp_issuer`` instead
        of an endpoint, the endpoint is found first in the identity provider's metadata, once
        (RFC 8414, then OpenID Connect Discovery), the ID token waiting meanwhile."""
        settings = self._settings
        assert settings.idp_client_id is not None
        endpoint = settings.idp_token_endpoint or self._idp_endpoint
        if endpoint is None:
            assert settings.idp_issuer is not None
            self._id_token = id_token
            self._candidates = list(oauth.authorization_server_metadata_urls(settings.idp_issuer))
            self._transient = None
            self._move(AuthStep.DISCOVER_IDENTITY_PROVIDER)
            self._fetch_next()
            return
        scope = self._choose_scope(server, wants_refresh=False)
        request = enterprise.token_exchange_request(
            endpoint,
            id_token=id_token,
            audience=server.issuer,
            resource=self._resource_value(),
            scope=scope,
            client_id=settings.idp_client_id,
            client_secret=settings.idp_client_secret,
            auth_methods=self._idp_methods,
        )
        self._move(AuthStep.EXCHANGE_IDENTITY)
        self._start(request)

    def _on_idp_metadata(self, status: int, body: bytes) -> None:
        """The identity provider's metadata (``idp_issuer``): its token endpoint, then leg 1."""
        issuer, server, id_token = self._settings.idp_issuer, self._server, self._id_token
        assert issuer is not None and server is not None and id_token is not None
        if not 200 <= status < 300:
            self._fetch_next()
            return
        try:
            metadata = oauth.parse_authorization_server_metadata(body, issuer=issuer)
        except AuthorizationFailed as refusal:
            detail = f"the identity provider's metadata is not usable: {refusal.detail}"
            raise AuthorizationFailed(refusal.error_code, detail) from None
        self._idp_endpoint, self._id_token = metadata.token_endpoint, None
        self._idp_methods = metadata.token_endpoint_auth_methods_supported
        self._candidates = []
        self._exchange_identity(server, id_token)

    def _on_id_jag(self, status: int, body: bytes) -> None:
        """Leg 2 (RFC 7523): the ID-JAG at the authorization server, as the configured client."""
        id_jag = enterprise.parse_id_jag_response(status, body)
        server = self._server
        assert server is not None
        request = enterprise.id_jag_token_request(
            server,
            auth=self._client_auth(None),
            id_jag=id_jag,
            resource=self._resource_value(),
            scope=self._scope,
        )
        self._move(AuthStep.EXCHANGE)
        self._start(request)

    def _refresh(self) -> None:
        """Refresh (RFC 6749 §6) before asking the user again."""
        server = self._server
        assert server is not None and self._refresh_token is not None
        request = oauth.refresh_token_request(
            server.token_endpoint,
            auth=self._client_auth(None),
            refresh_token=self._refresh_token,
            resource=self._resource_value(),
        )
        self._move(AuthStep.REFRESH)
        self._start(request)

    def _client_auth(self, assertion: str | None) -> oauth.ClientAuth:
        assert self._client is not None and self._server is not None
        return oauth.client_auth(self._client, self._server, assertion)

    def _resource_value(self) -> str:
        """RFC 8707 ``resource``: the protected resource's own name for itself, once known."""
        metadata = self._resource_metadata
        return metadata.resource if metadata is not None else self._resource

    def _on_token(self, status: int, body: bytes) -> None:
        refreshing = self.phase is AuthPhase.REFRESHING
        try:
            answer = oauth.parse_token_response(status, body, requested_scope=self._scope)
        except UnreadableAnswer:
            raise
        except AuthorizationFailed as refusal:
            if not refreshing and self._enterprise:
                raise enterprise.refused_by_server(refusal) from None
            if not refreshing:
                raise
            # The refresh token is no good any more (RFC 6749 §5.2 invalid_grant, or the client
            # was refused): forget both tokens, in the store too, and authorize from the start.
            self._refresh_token = self._access_token = self._expires_at = None
            self._inner.authorization, self._token_type = None, "Bearer"
            if self._dpop is not None:
                self._dpop.unbind()
            self._save()
            self._identify(False)
            return
        if answer.refresh_token is not None and not self._signs():
            self._refresh_token = answer.refresh_token
        now = self._session.now
        self._expires_at = None if answer.expires_in is None else now + answer.expires_in
        self._granted_scope = answer.scope
        self._asked_to_wait = None  # it answered
        self._token(answer.access_token, answer.token_type)
        self._move(AuthStep.TOKEN)
        self._save()
        self._held.send_all()

    def _token(self, access_token: str, token_type: str) -> None:
        self._inner.authorization = authorization(self._dpop, token_type, access_token)
        self._access_token, self._token_type = access_token, token_type

    def _on_registered(self, status: int, body: bytes) -> None:
        self._client = oauth.parse_registration_response(status, body)
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            self._authorize(prepared)
        else:
            self._grant()

    # --- how a flow ends ---------------------------------------------------------------------

    def _refuse(self, error: McpError) -> None:
        """No token can be had: answer every held request, and every later one, with
        ``error``."""
        self._failure = error
        self._end_flow()
        self._move(AuthStep.REFUSE)
        self._refuse_held()

    def _refuse_held(self) -> None:
        error = self._failure
        assert error is not None
        for entry in self._held.take_all():
            self._held.fail(entry, error)

    def _falter(self, error: AuthorizationUnavailable) -> None:
        """A request of the flow failed in a way that may pass: answer every held request
        now (a handshake fails its connect attempt, retried with backoff; caller work gets
        ``error``) and go back to where the flow started, so the next request that needs a
        token tries again."""
        self._end_flow()
        self._move(AuthStep.FALTER)
        if self._access_token is not None:
            self._move(AuthStep.TOKEN)
        if error.retry_after is not None:
            self._asked_to_wait = (self._session.now + error.retry_after, error)
        for entry in self._held.take_all():
            self._held.fail(entry, error, permanent=False)

    # --- this flow's own requests ------------------------------------------------------------

    def _start(self, request: oauth.OAuthRequest) -> None:
        """One request of this layer's: the metadata documents are public; registration and
        token requests and their answers hold credentials (``secret``). Its deadline is the
        layer's ``request_timeout``, and no later than a waiting handshake's connect
        deadline."""
        now = self._session.now
        deadline = min(now + self._settings.request_timeout, self._held.connect_bound())
        stream = self._inner.new_stream()
        fetch = Fetch(self.phase, request.url, max(deadline - now, 0.0), deadline)
        self._fetches[stream] = fetch
        self._out.append(
            StartHttp(
                stream=stream,
                method=request.method,
                url=request.url,
                headers=request.headers,
                body=request.body,
                secret=fetch.secret,
                dpop=None if self._dpop is None else self._dpop.token_proof(self.phase, request),
            )
        )

    def _end_flow(self) -> None:
        """Abort this layer's requests in flight and forget the step under way."""
        for stream in self._fetches:
            self._out.append(AbortHttp(stream=stream))
        self._fetches.clear()
        self._candidates = []
        self._transient = None
        self._pending = self._prepared = None
        self._id_token = None

    def _guard(self, step: Callable[..., None], *args: Any) -> None:
        """Run a step of the flow; an ``AuthorizationFailed`` it raises refuses the flow."""
        try:
            step(*args)
        except AuthorizationFailed as refusal:
            self._refuse(refusal)

    # --- the token, kept ---------------------------------------------------------------------

    def _expired(self) -> bool:
        expires_at = self._expires_at
        return expires_at is not None and self._session.now >= expires_at - _EXPIRY_MARGIN

    def _save(self) -> None:
        client, issuer = self._client, self._issuer
        if client is None and self._jwt:  # none registered: the grant names the record
            client = oauth.RegisteredClient(
                client_id=self._settings.client_id or oauth.JWT_BEARER_GRANT
            )
        assert client is not None and issuer is not None
        self._out.append(
            SaveAuthorization(
                server=token_store_key(self._url),
                authorization=StoredAuthorization(
                    issuer=issuer,
                    client_id=client.client_id,
                    client_secret=client.client_secret,
                    access_token=self._access_token,
                    refresh_token=self._refresh_token,
                    expires_at=self._expires_at,
                    scope=self._granted_scope,
                    token_type=self._token_type,
                ),
            )
        )

    def _move(self, step: AuthStep) -> None:
        self.phase = auth_step(self.phase, step)


# The step that reads the answer to a request of the flow, by the phase that sent it.
ANSWERED: Mapping[AuthPhase, Callable[[Flow, int, bytes], None]] = {
    AuthPhase.DISCOVERING_RESOURCE: Flow._on_resource_metadata,
    AuthPhase.DISCOVERING_SERVER: Flow._on_server_metadata,
    AuthPhase.REGISTERING: Flow._on_registered,
    AuthPhase.EXCHANGING: Flow._on_token,
    AuthPhase.REFRESHING: Flow._on_token,
    AuthPhase.EXCHANGING_IDENTITY: Flow._on_id_jag,
    AuthPhase.DISCOVERING_IDENTITY_PROVIDER: Flow._on_idp_metadata,
}
