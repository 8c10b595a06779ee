"""The authorization layer: OAuth 2.1 between the session and the HTTP transport (SPEC §11).

It wraps ``HttpTransport`` and offers the session the same calls, so neither the session nor
the transport knows it is there (the machine builds it when the spec asks for OAuth). What it
adds:

- every MCP request carries ``Authorization: Bearer <token>`` once there is a token;
- it sees each HTTP event before the transport. A 401, or a 403 whose challenge says
  ``insufficient_scope``, to a request of the session does not reach the transport: the
  request is *held*, and so is every request the session sends meanwhile; the layer obtains a
  token and sends each held request again, once (a second 401 for the same request fails it);
- obtaining a token, in the MCP authorization spec's order (2025-11-25 and 2026-07-28
  ``basic/authorization``): refresh first when there is a refresh token; else discover the
  protected resource metadata (RFC 9728: the challenge's ``resource_metadata``, then the
  well-known URLs) and the authorization server's (RFC 8414 / OIDC), get a client identity
  (pre-registered, Client ID Metadata Document, or RFC 7591 registration), then either the
  authorization code flow (PKCE S256, ``state``, RFC 8707 ``resource``, RFC 9207 ``iss``) with
  the driver's browser step, or ``client_credentials``; step-up after 403 with the union of
  scopes; at most ``MAX_AUTHORIZATIONS`` authorization requests in a row before the server
  answers anything but a refusal (past that, the request that wants more scope fails with
  ``AuthorizationFailed``; the token in hand serves the rest);
- the driver's part is I/O only: it performs the metadata, registration and token requests
  as ``StartHttp`` (their answers come back as HTTP events on streams this layer owns), binds
  the redirect listener and supplies random bytes (``PrepareAuthorization`` ->
  ``AuthorizationPrepared``), opens the browser (``Authorize`` -> ``AuthorizationRedirected``
  or ``AuthorizationAbandoned``), signs client assertions (``SignAssertion`` ->
  ``AssertionSigned``) and keeps tokens (``SaveAuthorization``);
- a permanent refusal answers every held request: caller work with ``AuthorizationFailed``
  (or ``AuthorizationRequired`` when only the user can help), a handshake by failing the
  connection for good.

Its phases and what moves them are ``AUTH_TABLE`` in ``_phases.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _oauth as oauth
from ._actions import (
    Action,
    Authorize,
    PrepareAuthorization,
    SaveAuthorization,
    SignAssertion,
    StartHttp,
)
from ._connection import DISCOVER, INITIALIZE, Connection, Session, Work
from ._errors import AuthorizationFailed, AuthorizationRequired, ConnectFailed, McpError
from ._events import (
    AssertionSigned,
    AuthorizationAbandoned,
    AuthorizationPrepared,
    AuthorizationRedirected,
    HttpBodyReceived,
    HttpResponseEnded,
    HttpResponseStarted,
)
from ._http import find_header
from ._http_transport import HttpEvent, HttpTransport
from ._oauth_settings import OAuthSettings, token_store_key
from ._phases import AuthPhase, AuthStep, auth_step
from ._spec import Spec
from ._tokens import StoredAuthorization

__all__ = ["MAX_AUTHORIZATIONS", "AuthEvent", "Authorization", "OAuthSettings"]

# 2026-07-28 basic/authorization "Step-Up Authorization Flow": clients "SHOULD implement retry
# limits". Counted as the conformance suite's auth/scope-retry-limit counts them: authorization
# requests (the first one included) until the server answers a request with anything but a
# refusal; a fourth in a row is not made.
MAX_AUTHORIZATIONS = 3
# A token this close to its expiry is refreshed before use rather than sent.
_EXPIRY_MARGIN = 30.0

AuthEvent = (
    AuthorizationPrepared | AuthorizationRedirected | AuthorizationAbandoned | AssertionSigned
)


@dataclass(slots=True, eq=False)
class _Held:
    """A request the server refused for want of a token, or sent while one was being got."""

    connection: Connection
    message: Mapping[str, Any]
    request_id: int | None
    confirming: bool = False  # the initialized POST the handshake waits for
    refused: int = 0  # how often the server refused it for want of a token (401)


@dataclass(slots=True, eq=False)
class _Fetch:
    """A request of this layer's own (made in ``phase``) and what its answer has shown."""

    phase: AuthPhase
    status: int = 0
    body: bytearray = field(default_factory=bytearray)

    @property
    def secret(self) -> bool:
        return self.phase in (AuthPhase.REGISTERING, AuthPhase.EXCHANGING, AuthPhase.REFRESHING)


class Authorization:
    """OAuth for one session, around its HTTP transport; see the module docstring."""

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
        self.phase = AuthPhase.UNAUTHORIZED
        self._held: list[_Held] = []
        self._refused: dict[int, int] = {}  # stream of a request sent again -> its 401s so far
        self._fetches: dict[int, _Fetch] = {}
        self._candidates: list[str] = []  # metadata URLs still to try, in order
        self._challenge: oauth.AuthChallenge | None = None
        self._resource_metadata: oauth.ProtectedResourceMetadata | None = None
        self._server: oauth.AuthorizationServerMetadata | None = None
        self._client: oauth.RegisteredClient | None = None  # the identity in use, if known
        self._prepared: AuthorizationPrepared | None = None  # while registering for it
        self._pending: oauth.PendingAuthorization | None = None
        self._scope: str | None = None  # asked for last (step-up asks for the union)
        self._authorizations = 0  # in a row, without an answer that is not a refusal
        self._failure: McpError | None = None
        self._issuer: str | None = None
        # The token; expires_at on the machine's clock.
        self._access_token: str | None = None
        self._refresh_token: str | None = None
        self._expires_at: float | None = None
        self._granted_scope: str | None = None
        if stored is not None:
            self._issuer = stored.issuer
            self._client = oauth.RegisteredClient(
                client_id=stored.client_id, client_secret=stored.client_secret
            )
            self._refresh_token = stored.refresh_token
            self._expires_at = stored.expires_at
            self._granted_scope = stored.scope
            if stored.access_token is not None:
                self._token(stored.access_token)

    # --- the transport's calls: most go straight through --------------------------------------

    @property
    def sse(self) -> bool:
        return self._inner.sse

    def speaks_sse(self, connection: Connection) -> bool:
        return self._inner.speaks_sse(connection)

    def open(self, connection: Connection) -> bool:
        return self._inner.open(connection)

    def open_sse(self, connection: Connection) -> None:
        self._inner.open_sse(connection)

    def send(
        self, connection: Connection, message: Mapping[str, Any], request_id: int | None
    ) -> None:
        """Send now with the token, or hold until there is one."""
        phase = self.phase
        # The common case first, allocating nothing: it runs for every request.
        if phase is AuthPhase.UNAUTHORIZED or (
            phase is AuthPhase.AUTHORIZED and not self._expired()
        ):
            self._inner.send(connection, message, request_id)
            return
        held = _Held(connection, message, request_id)
        if phase is AuthPhase.REFUSED:
            self._held.append(held)
            self._refuse_held()
        elif phase is not AuthPhase.AUTHORIZED:
            self._held.append(held)  # a token is on its way
        elif self._refresh_token is not None and self._server is not None:
            self._held.append(held)  # expired: refresh before sending
            self._guard(self._refresh)
        else:
            self._inner.send(connection, message, request_id)  # the server will say

    def acknowledge(self, connection: Connection, message: Mapping[str, Any]) -> bool:
        return self._inner.acknowledge(connection, message)

    def cancel(self, connection: Connection, request_id: int) -> bool:
        """A caller gave up ``request_id``. One held here was never processed by the server
        (it answered 401, or never got it): nothing to tell it."""
        if self._drop_held(connection, request_id):
            return False
        return self._inner.cancel(connection, request_id)

    def forget(self, connection: Connection, request_id: int) -> None:
        # Only the probe is forgotten, at its deadline, which a held probe does not have.
        self._inner.forget(connection, request_id)

    def fail(self, connection: Connection) -> bool:
        self._held = [h for h in self._held if h.connection is not connection]
        return self._inner.fail(connection)

    def close(self, connection: Connection) -> bool:
        self._held = [h for h in self._held if h.connection is not connection]
        return self._inner.close(connection)

    def next_deadline(self, best: float | None) -> float | None:
        return self._inner.next_deadline(best)

    def expire(self, connection: Connection, now: float) -> None:
        self._inner.expire(connection, now)

    def resume_due(self, connection: Connection, now: float) -> None:
        self._inner.resume_due(connection, now)

    # --- events --------------------------------------------------------------------------------

    def handle(self, event: HttpEvent) -> None:
        """An HTTP event: this layer's own request, a refusal for want of a token, or the
        transport's business."""
        # Every response event passes here: the common case decides with few lookups.
        if self._fetches:
            fetch = self._fetches.get(event.stream)
            if fetch is not None:
                self._on_fetch_event(event, fetch)
                return
        if type(event) is HttpResponseStarted:
            if event.status != 401 and event.status != 403:
                self._authorizations = 0  # the server took a request: the episode is over
                if self._refused:
                    self._refused.pop(event.stream, None)  # a request sent again was taken
            else:
                challenge = oauth.bearer_challenge(find_header(event.headers, "www-authenticate"))
                scope_wanted = challenge is not None and challenge.error == "insufficient_scope"
                if event.status == 401 or scope_wanted:
                    taken = self._inner.take(event.stream)
                    if taken is not None:
                        held = _Held(*taken)
                        held.refused = self._refused.pop(event.stream, 0)
                        self._challenge = challenge
                        self._on_challenge(held, event.status)
                        return
        self._inner.handle(event)

    def handle_auth(self, event: AuthEvent) -> None:
        """The driver's answer to ``PrepareAuthorization``, ``Authorize`` or ``SignAssertion``;
        one that comes when no such step is under way (a late one) changes nothing."""
        if isinstance(event, AuthorizationPrepared):
            if self.phase is AuthPhase.PREPARING:
                self._guard(self._prepared_for, event)
        elif isinstance(event, AuthorizationRedirected):
            if self.phase is AuthPhase.AUTHORIZING:
                self._guard(self._redeem, event.params)
        elif isinstance(event, AuthorizationAbandoned):
            if self.phase in (AuthPhase.PREPARING, AuthPhase.AUTHORIZING, AuthPhase.SIGNING):
                reason = f"the authorization step did not finish: {event.reason}"
                self._refuse(AuthorizationRequired(self._spec.name, reason))
        elif self.phase is AuthPhase.SIGNING:
            self._guard(self._request_token, event.assertion)

    # --- the flow ----------------------------------------------------------------------------

    def _on_challenge(self, held: _Held, status: int) -> None:
        """The server refused ``held`` for want of a (better) token: hold it, get one."""
        self._held.append(held)
        connection = held.connection
        connection.connect_deadline = connection.probe_deadline = None  # see _send_held
        if self.phase is AuthPhase.REFUSED:
            self._refuse_held()
            return
        if self.phase not in (AuthPhase.UNAUTHORIZED, AuthPhase.AUTHORIZED):
            return  # a token is on its way: the request waits for it
        if status == 401:
            held.refused += 1
            if held.refused > 1:
                # Sent again with a fresh token and refused again: a token cannot help.
                self._refuse(AuthorizationFailed(None, "the server refused a fresh token"))
            elif self._refresh_token is not None and self._server is not None:
                self._guard(self._refresh)
            else:
                self._guard(self._discover)
            return
        # 2026-07-28 basic/authorization "Step-Up Authorization Flow": a new authorization
        # for the union of what was asked and what the challenge names.
        if self._authorizations >= MAX_AUTHORIZATIONS:
            # This request wants a scope the server does not grant: it fails, and nothing
            # else. The token in hand stays good for what it was granted (no REFUSE phase).
            refusal = AuthorizationFailed(
                "insufficient_scope",
                f"the server still wants more scope after {MAX_AUTHORIZATIONS} "
                "authorizations in a row",
            )
            self._held.remove(held)
            self._fail_held(held, refusal)
            return
        wanted = self._challenge.scope if self._challenge is not None else None
        self._scope = oauth.union_scopes(self._scope, self._granted_scope, wanted)
        self._guard(self._identify, False)

    def _discover(self) -> None:
        """RFC 9728: the protected resource metadata, from the challenge's URL or the
        well-known ones, in order."""
        hint = self._challenge.resource_metadata if self._challenge is not None else None
        self._candidates = list(oauth.protected_resource_metadata_urls(self._url, hint))
        self._move(AuthStep.DISCOVER)
        self._fetch_next()

    def _fetch_next(self) -> None:
        if not self._candidates:
            what = (
                "protected resource"
                if self.phase is AuthPhase.DISCOVERING_RESOURCE
                else "authorization server"
            )
            raise AuthorizationFailed(None, f"no {what} metadata was found at any well-known URL")
        self._start(oauth.metadata_request(self._candidates.pop(0)))

    def _on_resource_metadata(self, status: int, body: bytes) -> None:
        if not 200 <= status < 300:
            self._fetch_next()
            return
        metadata = oauth.parse_protected_resource_metadata(body, server_url=self._url)
        self._resource_metadata = metadata
        issuer = metadata.authorization_servers[0]
        if self._issuer is not None and issuer != self._issuer:
            # Credentials are bound to the issuer: a new one means registering again.
            self._client = None
            self._refresh_token = None
        self._issuer = issuer
        self._candidates = list(oauth.authorization_server_metadata_urls(issuer))
        self._move(AuthStep.DISCOVER_SERVER)
        self._fetch_next()

    def _on_server_metadata(self, status: int, body: bytes) -> None:
        assert self._issuer is not None
        if not 200 <= status < 300:
            self._fetch_next()
            return
        self._server = oauth.parse_authorization_server_metadata(body, issuer=self._issuer)
        self._identify(True)

    def _identify(self, may_refresh: bool) -> None:
        """A client identity at this authorization server, then a token: by refresh when
        ``may_refresh`` and there is a refresh token, else by the configured grant."""
        server, settings = self._server, self._settings
        if server is None:
            self._discover()
            return
        if self._client is None:
            way = oauth.choose_registration(
                server,
                pre_registered=settings.client_id is not None,
                client_id_metadata_url=settings.client_metadata_url,
            )
            if way == "pre-registered":
                assert settings.client_id is not None
                self._client = oauth.RegisteredClient(
                    client_id=settings.client_id, client_secret=settings.client_secret
                )
            elif way == "metadata-document":
                assert settings.client_metadata_url is not None
                self._client = oauth.RegisteredClient(client_id=settings.client_metadata_url)
            elif settings.grant == "client_credentials":
                self._register(server, ())
                return
            else:
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
        credentials = self._settings.grant == "client_credentials"
        self._move(AuthStep.REGISTER)
        self._start(
            oauth.registration_request(
                server.registration_endpoint,
                client_name=self._settings.client_name,
                redirect_uris=redirect_uris,
                grant_types=("client_credentials",)
                if credentials
                else ("authorization_code", "refresh_token"),
                token_endpoint_auth_method=oauth.registration_auth_method(server),
            )
        )

    def _grant(self) -> None:
        if self._settings.grant == "authorization_code":
            self._prepare()
        elif self._settings.private_key:
            assert self._client is not None and self._server is not None
            self._move(AuthStep.SIGN)
            self._out.append(
                SignAssertion(
                    client_id=self._client.client_id,
                    audience=self._server.issuer,
                    algorithms=self._server.token_endpoint_auth_signing_alg_values_supported,
                )
            )
        else:
            self._request_token(None)

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

    def _authorize(self, event: AuthorizationPrepared) -> None:
        """The authorization code flow's request (PKCE S256, state, resource)."""
        server, client = self._server, self._client
        assert server is not None and client is not None
        wanted = self._challenge.scope if self._challenge is not None else None
        scope = self._settings.scope or oauth.select_scope(
            challenge_scope=self._scope or wanted,
            resource_scopes=self._resource_metadata.scopes_supported
            if self._resource_metadata is not None
            else None,
            server_scopes=server.scopes_supported,
        )
        self._scope = scope
        self._pending = oauth.begin_authorization(
            server,
            client_id=client.client_id,
            redirect_uri=event.redirect_uri,
            resource=self._resource_value(),
            scope=scope,
            verifier_entropy=event.entropy[:32],
            state_entropy=event.entropy[32:],
        )
        self._authorizations += 1
        self._move(AuthStep.AUTHORIZE)
        self._out.append(Authorize(url=self._pending.url, state=self._pending.state))

    def _redeem(self, params: Mapping[str, str]) -> None:
        """The redirect came back: check it (state, iss) and redeem its code."""
        pending, server = self._pending, self._server
        assert pending is not None and server is not None
        self._pending = None
        code = oauth.check_authorization_response(pending, params)
        request = oauth.authorization_code_token_request(
            server.token_endpoint, auth=self._client_auth(None), code=code, pending=pending
        )
        self._move(AuthStep.EXCHANGE)
        self._start(request)

    def _request_token(self, assertion: str | None) -> None:
        """``client_credentials`` (RFC 6749 §4.4; SEP-1046)."""
        server = self._server
        assert server is not None
        request = oauth.client_credentials_token_request(
            server.token_endpoint,
            auth=self._client_auth(assertion),
            resource=self._resource_value(),
            scope=self._settings.scope or self._scope,
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
        client, server = self._client, self._server
        assert client is not None and server is not None
        method = oauth.choose_token_endpoint_auth_method(
            server.token_endpoint_auth_methods_supported,
            has_secret=client.client_secret is not None,
            has_private_key=assertion is not None,
            registered=client.token_endpoint_auth_method,
        )
        return oauth.ClientAuth(
            client_id=client.client_id,
            method=method,
            client_secret=client.client_secret,
            client_assertion=assertion,
        )

    def _resource_value(self) -> str:
        """RFC 8707 ``resource``: the protected resource's own name for itself, once known."""
        metadata = self._resource_metadata
        return metadata.resource if metadata is not None else self._resource

    def _on_token(self, status: int, body: bytes) -> None:
        refreshing = self.phase is AuthPhase.REFRESHING
        try:
            answer = oauth.parse_token_response(status, body, requested_scope=self._scope)
        except AuthorizationFailed:
            if not refreshing:
                raise
            self._refresh_token = None  # no good any more: authorize from the start
            self._identify(False)
            return
        if answer.refresh_token is not None:
            self._refresh_token = answer.refresh_token
        now = self._session.now
        self._expires_at = None if answer.expires_in is None else now + answer.expires_in
        self._granted_scope = answer.scope
        self._token(answer.access_token)
        self._move(AuthStep.TOKEN)
        self._save()
        self._send_held()

    def _token(self, access_token: str) -> None:
        self._access_token = access_token
        self._inner.authorization = f"Bearer {access_token}"
        self.phase = AuthPhase.AUTHORIZED if self.phase is AuthPhase.UNAUTHORIZED else self.phase

    # --- held requests ----------------------------------------------------------------------

    def _send_held(self) -> None:
        held, self._held = self._held, []
        for entry in held:
            connection = entry.connection
            if connection.handshake is None and connection.connect_deadline is None:
                # The handshake's deadline starts again now that it can go out (it was
                # suspended: the user may have spent minutes at the browser).
                connection.connect_deadline = self._session.now + self._spec.init_timeout
            if entry.confirming:
                self._inner.acknowledge(connection, entry.message)
            else:
                self._inner.send(connection, entry.message, entry.request_id)
            if entry.refused:
                self._refused[self._inner.last_stream] = entry.refused

    def _drop_held(self, connection: Connection, request_id: int) -> bool:
        for entry in self._held:
            if entry.connection is connection and entry.request_id == request_id:
                self._held.remove(entry)
                return True
        return False

    def _refuse(self, error: McpError) -> None:
        """No token can be had: answer every held request, and every later one, with
        ``error``."""
        self._failure = error
        self._move(AuthStep.REFUSE)
        self._fetches.clear()
        self._refuse_held()

    def _refuse_held(self) -> None:
        error = self._failure
        assert error is not None
        held, self._held = self._held, []
        for entry in held:
            self._fail_held(entry, error)

    def _fail_held(self, entry: _Held, error: McpError) -> None:
        """Answer one held request with ``error``: caller work loses it, the handshake fails
        the connection for good."""
        requests = entry.connection.requests
        owner = requests.pop(entry.request_id, None) if entry.request_id is not None else None
        if isinstance(owner, Work) or owner not in (None, DISCOVER, INITIALIZE):
            assert owner is not None
            self._session.lose(entry.connection, owner, error, entry.request_id)
        elif owner is not None or entry.confirming:  # the handshake: no use retrying
            failed = ConnectFailed(error.message, permanent=True, cause=error)
            self._session.fail(entry.connection, failed, permanent=True)

    # --- this layer's own requests ----------------------------------------------------------

    def _start(self, request: oauth.OAuthRequest) -> None:
        """One request of this layer's: the metadata documents are public; registration and
        token requests and their answers hold credentials (``secret``)."""
        stream = self._inner.new_stream()
        fetch = self._fetches[stream] = _Fetch(self.phase)
        self._out.append(
            StartHttp(
                stream=stream,
                method=request.method,
                url=request.url,
                headers=request.headers,
                body=request.body,
                secret=fetch.secret,
            )
        )

    def is_secret(self, event: HttpEvent | AuthEvent) -> bool:
        """Whether ``event`` holds a credential a recording must not keep: an answer of the
        registration or token endpoint."""
        fetch = self._fetches.get(getattr(event, "stream", -1))
        return fetch is not None and fetch.secret

    def _on_fetch_event(self, event: HttpEvent, fetch: _Fetch) -> None:
        if isinstance(event, HttpResponseStarted):
            fetch.status = event.status
        elif isinstance(event, HttpBodyReceived):
            fetch.body += event.data
            if len(fetch.body) > self._spec.max_message_bytes:
                self._refuse(
                    AuthorizationFailed(None, "an authorization server answer is too large")
                )
        elif isinstance(event, HttpResponseEnded):
            del self._fetches[event.stream]
            self._guard(self._answered[fetch.phase], self, fetch.status, bytes(fetch.body))
        else:
            reason = f"a request to the authorization server failed: {event.reason}"
            self._refuse(AuthorizationFailed(None, reason))

    def _on_registered(self, status: int, body: bytes) -> None:
        self._client = oauth.parse_registration_response(status, body)
        prepared, self._prepared = self._prepared, None
        if prepared is not None:
            self._authorize(prepared)
        else:
            self._grant()

    _answered: Mapping[AuthPhase, Callable[..., None]] = {}  # filled in below the class

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
                ),
            )
        )

    def _move(self, step: AuthStep) -> None:
        self.phase = auth_step(self.phase, step)


Authorization._answered = {
    AuthPhase.DISCOVERING_RESOURCE: Authorization._on_resource_metadata,
    AuthPhase.DISCOVERING_SERVER: Authorization._on_server_metadata,
    AuthPhase.REGISTERING: Authorization._on_registered,
    AuthPhase.EXCHANGING: Authorization._on_token,
    AuthPhase.REFRESHING: Authorization._on_token,
}
