"""The authorization layer: OAuth 2.1 between the session and the HTTP transport (MCP
2025-11-25 and 2026-07-28 basic/authorization).

It wraps ``HttpTransport`` and offers the session the same calls, so neither the session nor
the transport knows it is there (the machine builds it when the spec asks for OAuth). What it
adds:

- every MCP request carries ``Authorization: Bearer <token>`` once there is a token;
- it sees each HTTP event before the transport. A 401, or a 403 whose challenge says
  ``insufficient_scope``, to a request of the session does not reach the transport: the
  request is *held*, and so is every request the session sends meanwhile; the layer obtains a
  token and sends each held request again, once (a second 401 for the same request fails it);
  a held request whose caller was answered meanwhile (a timeout, a cancel, a session the
  server forgot) is never sent;
- obtaining a token, in the MCP authorization spec's order (2025-11-25 and 2026-07-28
  ``basic/authorization``): refresh first when there is a refresh token; else discover the
  protected resource metadata (RFC 9728: the challenge's ``resource_metadata``, then the
  well-known URLs) and the authorization server's (RFC 8414 / OIDC), get a client identity
  (pre-registered, Client ID Metadata Document, or RFC 7591 registration), then either the
  authorization code flow (PKCE S256, ``state``, RFC 8707 ``resource``, RFC 9207 ``iss``) with
  the driver's browser step, or ``client_credentials``, or ``jwt_bearer`` (SEP-1933, the
  platform's JWT the driver supplies: ``ObtainAssertion``), or ``enterprise`` (SEP-990: the
  user's ID token, supplied the same way, exchanged at the identity provider for an ID-JAG,
  RFC 8693, which the authorization server takes as an RFC 7523 grant; ``enterprise.py``),
  or the device authorization grant (RFC 8628: the driver shows a user code,
  ``ShowDeviceCode``, while the layer polls; ``device_flow.py``); step-up after 403 with the
  union of scopes, at most ``MAX_AUTHORIZATIONS`` authorizations for any one request (past
  that, that request fails with ``AuthorizationFailed``; the token in hand serves the rest);
- the driver's part is I/O only: it performs the metadata, registration and token requests
  as ``StartHttp`` (their answers come back as HTTP events on streams this layer owns), binds
  the redirect listener and supplies random bytes (``PrepareAuthorization`` ->
  ``AuthorizationPrepared``), opens the browser (``Authorize`` -> ``AuthorizationRedirected``
  or ``AuthorizationAbandoned``), signs client assertions (``SignAssertion`` ->
  ``AssertionSigned``), reads the workload's JWT (``ObtainAssertion`` -> ``AssertionSigned``)
  and keeps tokens (``SaveAuthorization``).

Its guarantees (deadlines, transient or final failures, where tokens go) are the package's
(``_auth/__init__.py``). Its phases and what moves them are ``AUTH_TABLE`` in
``_vocabulary/phases.py``; the steps of a flow and the state they keep are ``flow.py``'s, the
requests it holds ``held.py``'s, its own ``fetch.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._config.oauth_settings import OAuthSettings
from .._transport.connection import Connection
from .._transport.http import HttpEvent
from .._transport.http_parts import find_header, parse_retry_after
from .._vocabulary.actions import AbortHttp
from .._vocabulary.errors import (
    AuthorizationFailed,
    AuthorizationRequired,
    AuthorizationUnavailable,
)
from .._vocabulary.events import (
    HTTP_EVENTS,
    AssertionSigned,
    AuthorizationAbandoned,
    AuthorizationPrepared,
    AuthorizationRedirected,
    HttpBodyReceived,
    HttpResponseEnded,
    HttpResponseStarted,
)
from .._vocabulary.phases import AuthPhase, AuthStep
from .._vocabulary.urls import origin_of, redact_url
from . import oauth as oauth
from .device_flow import ANSWERED, DeviceFlow
from .fetch import Fetch
from .flow import MAX_AUTHORIZATIONS
from .held import Held
from .metadata import UnreadableAnswer

__all__ = ["MAX_AUTHORIZATIONS", "AuthEvent", "Authorization", "OAuthSettings"]

_DISCOVERING = (
    AuthPhase.DISCOVERING_RESOURCE,
    AuthPhase.DISCOVERING_SERVER,
    AuthPhase.DISCOVERING_IDENTITY_PROVIDER,
)

AuthEvent = (
    AuthorizationPrepared | AuthorizationRedirected | AuthorizationAbandoned | AssertionSigned
)


class Authorization(DeviceFlow):
    """OAuth for one session, around its HTTP transport and with the same calls (an
    ``SseTransport``); see the module docstring. Its state and the steps of a flow are
    ``Flow``'s (``flow.py``), the device grant's ``DeviceFlow``'s (``device_flow.py``)."""

    __slots__ = ()

    events = HTTP_EVENTS

    # --- the transport's calls: most go straight through -------------------------------------

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
        held = Held(connection, message, request_id, connection.epoch)
        if phase is AuthPhase.REFUSED:
            self._held.add(held)
            self._refuse_held()
        elif phase is not AuthPhase.AUTHORIZED:
            self._held.add(held)  # a token is on its way
        elif self._server is not None and (
            self._refresh_token is not None or self._jwt or self._enterprise
        ):
            self._held.add(held)  # expired: refresh (or a fresh assertion) before sending
            if not self._waiting_out(held):
                self._guard(self._refresh if self._refresh_token is not None else self._obtain)
        else:
            self._inner.send(connection, message, request_id)  # the server will say

    def acknowledge(self, connection: Connection, message: Mapping[str, Any]) -> bool:
        return self._inner.acknowledge(connection, message)

    def cancel(self, connection: Connection, request_id: int) -> bool:
        """A caller gave up ``request_id``. One held here was never processed by the server
        (it answered 401, or never got it): nothing to tell it."""
        if self._held.drop(connection, request_id):
            return False
        return self._inner.cancel(connection, request_id)

    def forget(self, connection: Connection, request_id: int) -> None:
        # Only the probe is forgotten, at its deadline, which a held probe does not have.
        self._inner.forget(connection, request_id)

    def fail(self, connection: Connection) -> bool:
        self._held.drop_connection(connection)
        return self._inner.fail(connection)

    def close(self, connection: Connection) -> bool:
        self._held.drop_connection(connection)
        return self._inner.close(connection)

    def stop(self) -> None:
        """``Close``: end the flow under way (its requests are aborted, the browser step is
        no longer waited for) and forget a refusal: a later ``Connect`` starts again from
        the token in hand, as the session forgets its permanent failure."""
        self._held.clear()
        self._end_flow()
        self._move(AuthStep.STOP)
        if self._access_token is not None:
            self._move(AuthStep.TOKEN)

    def next_deadline(self, best: float | None) -> float | None:
        for fetch in self._fetches.values():
            if best is None or fetch.deadline < best:
                best = fetch.deadline
        best = self._device_deadline(best)  # the next poll of a device login
        return self._inner.next_deadline(best)

    def expire(self, connection: Connection, now: float) -> None:
        """A request of this layer that passed its deadline is aborted and fails; then the
        transport's own deadlines. Runs before the session checks the connect deadline, so a
        handshake that waited for a token fails naming the request that did not answer."""
        # One request is in flight at a time: the next step starts when its answer is read.
        late = next((f for f in self._fetches.values() if f.deadline <= now), None)
        if late is not None:
            self._fetch_failed(late, f"got no complete answer within {late.timeout:g} s")
        self._device_due(now)
        self._inner.expire(connection, now)

    def resume_due(self, connection: Connection, now: float) -> None:
        self._inner.resume_due(connection, now)

    # --- events ------------------------------------------------------------------------------

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
            if self._inner.proof is not None:  # a DPoP-bound token: keep the server's nonce
                self._saw_nonce(event.headers)
            resent = self._held.resent
            before = resent.pop(event.stream, None) if resent else None
            if (event.status == 401 or event.status == 403) and self._refused(event, before):
                return
        self._inner.handle(event)

    def _saw_nonce(self, headers: Sequence[tuple[str, str]]) -> None:
        """An answer of the MCP server while the token is DPoP-bound (only then do its
        requests carry proofs, so only then is its nonce read: RFC 9449 §9)."""
        assert self._dpop is not None
        self._dpop.saw(headers)

    def _refused(self, event: HttpResponseStarted, before: Held | None) -> bool:
        """A 401, or a 403 that asks for more scope, to a POST of the session: take it from
        the transport and hold it (``before``: its record, when it was held before)."""
        challenge = oauth.bearer_challenge(find_header(event.headers, "www-authenticate"))
        scope_wanted = challenge is not None and challenge.error == "insufficient_scope"
        taken = self._inner.take(event.stream) if event.status == 401 or scope_wanted else None
        if taken is None:
            return False
        connection, message, request_id, confirming = taken
        held = Held(connection, message, request_id, connection.epoch, confirming)
        if before is not None:
            held.refused, held.authorizations = before.refused, before.authorizations
        dpop = self._dpop
        # RFC 9449 §9: a nonce asked for, the request goes again with it, once.
        if (
            dpop is not None
            and dpop.nonce_refusal(event.status, event.headers)
            and (before is None or not before.nonced)
        ):
            self._with_nonce(held)
            return True
        self._challenge = challenge
        self._on_challenge(held, event.status)
        return True

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
            if self.phase is AuthPhase.SIGNING:
                what = "obtained" if self._jwt else "signed"
                reason = f"the client assertion could not be {what}: {event.reason}"
                if self._enterprise:
                    reason = f"the user's ID token could not be obtained: {event.reason}"
                self._refuse(AuthorizationFailed(None, reason))
            elif self.phase in (AuthPhase.AWAITING_DEVICE, AuthPhase.POLLING):
                reason = f"the device login's code could not be shown: {event.reason}"
                self._refuse(AuthorizationRequired(self._spec.name, reason))
            elif self.phase in (AuthPhase.PREPARING, AuthPhase.AUTHORIZING):
                reason = f"the authorization step did not finish: {event.reason}"
                self._refuse(AuthorizationRequired(self._spec.name, reason))
        elif self.phase is AuthPhase.SIGNING:
            self._guard(self._request_token, event.assertion)

    def _on_challenge(self, held: Held, status: int) -> None:
        """The server refused ``held`` for want of a (better) token: hold it, get one."""
        self._held.add(held)
        held.connection.probe_deadline = None  # the probe waits for the token, not for legacy
        if self.phase is AuthPhase.REFUSED:
            self._refuse_held()
            return
        if self._insecure:
            self._refuse(
                AuthorizationFailed(
                    None,
                    f"the server {redact_url(self._url)!r} asks for a token over plain http "
                    "and is not on this machine: a bearer token would travel unencrypted "
                    "(RFC 6750 §5.3). Use its https:// URL, or set oauth allow_insecure_http "
                    "to true if the network is trusted",
                )
            )
            return
        if self.phase not in (AuthPhase.UNAUTHORIZED, AuthPhase.AUTHORIZED):
            return  # a token is on its way: the request waits for it
        if self._waiting_out(held):
            return
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
        if held.authorizations >= MAX_AUTHORIZATIONS:
            # This request wants a scope the server does not grant: it fails, and nothing
            # else. The token in hand stays good for what it was granted (no REFUSE phase).
            refusal = AuthorizationFailed(
                "insufficient_scope",
                f"the server still wants more scope for this request after "
                f"{MAX_AUTHORIZATIONS} authorizations",
            )
            self._held.remove(held)
            self._held.fail(held, refusal)
            return
        wanted = self._challenge.scope if self._challenge is not None else None
        self._scope = oauth.union_scopes(self._scope, self._granted_scope, wanted)
        self._guard(self._identify, False)

    def _with_nonce(self, held: Held) -> None:
        """The MCP server asked for a DPoP nonce (kept by ``handle``): ``held`` goes again
        with it, once, as soon as there is a token; not a new authorization."""
        held.nonced = True
        held.connection.probe_deadline = None
        self._held.add(held)
        if self.phase is AuthPhase.REFUSED:
            self._refuse_held()
        elif self.phase is AuthPhase.AUTHORIZED:
            self._held.send_all()

    def _waiting_out(self, held: Held) -> bool:
        """Whether the authorization server asked to be left alone (``Retry-After`` on a 429
        or 503, RFC 9110 §10.2.3) for longer than now: then ``held`` fails at once with that
        answer's error instead of starting a flow, as the connect retry waits it out too."""
        last, now = self._asked_to_wait, self._session.now
        if last is None or now >= last[0]:
            return False
        until, error = last
        left = AuthorizationUnavailable(error.origin, error.step, error.detail, until - now)
        self._held.remove(held)
        self._held.fail(held, left, permanent=False)
        return True

    # --- this layer's own requests -----------------------------------------------------------

    def is_secret(self, event: HttpEvent | AuthEvent) -> bool:
        """Whether ``event`` holds a credential a recording must not keep: an answer of the
        registration or token endpoint."""
        fetch = self._fetches.get(getattr(event, "stream", -1))
        return fetch is not None and fetch.secret

    def _on_fetch_event(self, event: HttpEvent, fetch: Fetch) -> None:
        if isinstance(event, HttpResponseStarted | HttpBodyReceived):
            over = fetch.read(event)
            if over is not None:
                self._fetch_failed(fetch, over)
        elif isinstance(event, HttpResponseEnded):
            del self._fetches[event.stream]
            self._answered_fetch(fetch)
        else:  # HttpFailed
            del self._fetches[event.stream]
            self._fetch_failed(fetch, f"failed ({event.reason})")

    def _answered_fetch(self, fetch: Fetch) -> None:
        """The answer to one of this layer's requests is complete: a failure that may pass
        (HTTP 429, 5xx, a redirect, which the client does not follow: RFC 9728 §3, RFC 8414
        §3 and RFC 6749 §3.2 name the URL to use), or the flow's next step."""
        status = fetch.status
        if self._dpop is not None:  # RFC 9449 §8: a nonce asked for, the request sent again
            again = self._dpop.token_answer(fetch.phase, status, fetch.headers, bytes(fetch.body))
            if again is not None:
                if self._signs():
                    # The grant's client assertion is for one use (RFC 7523 §3): a new one is
                    # signed, not the same one replayed.
                    self._dpop.renew()
                    self._sign()
                else:
                    self._start(again)
                return
        if status in (408, 429) or status >= 500 or 300 <= status < 400:
            retry_after = parse_retry_after(find_header(fetch.headers, "retry-after"))
            self._fetch_failed(fetch, f"answered HTTP {status}", retry_after)
            return
        if status == 404 and self._guessed:
            # An endpoint the client assumed (MCP 2025-03-26's defaults) is not there: the
            # server most likely uses no OAuth at all, and asking again cannot help.
            self._refuse(
                AuthorizationFailed(
                    None,
                    f"the server answered 401 and publishes no OAuth metadata (RFC 9728, RFC "
                    f"8414), and the default endpoint MCP 2025-03-26 assumes, "
                    f"{redact_url(fetch.url)!r}, answered HTTP 404: the server may not use "
                    "OAuth. Give it the credentials it expects (a header, for instance), or "
                    "set oauth enabled to false",
                )
            )
            return
        try:
            ANSWERED[fetch.phase](self, status, bytes(fetch.body))
        except UnreadableAnswer as unreadable:
            self._fetch_failed(fetch, f"came back unusable: {unreadable.detail}")
        except AuthorizationFailed as refusal:
            self._refuse(refusal)

    def _fetch_failed(self, fetch: Fetch, detail: str, retry_after: float | None = None) -> None:
        """One of this layer's requests failed in a way that may pass: aborted if still
        followed; a metadata URL gives way to the next one, anything else falters."""
        followed = next((s for s, f in self._fetches.items() if f is fetch), None)
        if followed is not None:
            del self._fetches[followed]
            self._out.append(AbortHttp(stream=followed))
        if fetch.phase is AuthPhase.POLLING:
            self._poll_failed()  # RFC 8628 §3.5: poll less often, until the code expires
            return
        error = AuthorizationUnavailable(origin_of(fetch.url), fetch.step, detail, retry_after)
        # A metadata URL gives way to the next one, unless the server asked the client to
        # wait (429): the next URL is on the same server, or would be asked in its place.
        if fetch.phase in _DISCOVERING and fetch.status != 429:
            if self._transient is None:
                self._transient = error
            self._guard(self._fetch_next)
        else:
            self._falter(error)
