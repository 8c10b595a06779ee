"""Outputs of the ``SessionMachine``: what a driver must do, in order.

Actions are frozen, slotted, keyword-only dataclasses. A driver performs each one and nothing
else: it makes no protocol decision of its own. There is no "set timer" action: after
handling any event the driver re-arms its single timer to ``machine.next_deadline()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import McpError
from .quick_init import quicken
from .tokens import StoredAuthorization
from .urls import REDACTED, redact_url

# Header values that are credentials or session handles: a recording and a ``repr`` keep their
# names only (2025-11-25 transports: the client "MUST handle" the session id "securely").
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "mcp-session-id", "dpop"}
)

__all__ = [
    "AbortHttp",
    "Action",
    "Authorize",
    "CloseStdin",
    "DpopProof",
    "ElicitationComplete",
    "HandleServerRequest",
    "ListChanged",
    "Log",
    "ObtainAssertion",
    "PrepareAuthorization",
    "ProgressUpdate",
    "Reply",
    "ResourceUpdated",
    "SaveAuthorization",
    "SettleReservation",
    "ShowDeviceCode",
    "SignAssertion",
    "SignalProcess",
    "Spawn",
    "StartHttp",
    "WriteStdin",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    """Base class of every action."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Spawn(Action):
    """Start the server process for ``slot`` in a new process group, with pipes on stdin,
    stdout and stderr.

    The child's environment is exactly: the variables named in ``inherit`` that are set in the
    driver's own environment, then ``env`` on top. The core decides which names to inherit
    and never sees their values. Answer with ``ProcessSpawned`` or
    ``SpawnFailed``; then feed ``StdoutReceived``/``StderrReceived``/``StdoutClosed`` and,
    once the process ended, ``ProcessExited``, each carrying this ``generation`` (unique per
    machine: it tells this process from an earlier one of the same slot).
    """

    slot: int
    generation: int
    argv: tuple[str, ...]
    inherit: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteStdin(Action):
    """Write ``data`` to the stdin of ``slot``'s process, in order. On error feed
    ``WriteFailed``."""

    slot: int
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class CloseStdin(Action):
    """Close the stdin of ``slot``'s process (the first step of shutdown)."""

    slot: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalProcess(Action):
    """Send ``signal`` to the process group of ``slot``'s process."""

    slot: int
    signal: Literal["SIGTERM", "SIGKILL"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply(Action):
    """Answer the caller holding ``ticket``: with ``value``, or by raising ``error``."""

    ticket: int
    value: object = None
    error: McpError | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressUpdate(Action):
    """A progress notification for the call holding ``ticket`` (MCP 2025-11-25
    basic/utilities/progress)."""

    ticket: int
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceUpdated(Action):
    """The server says resource ``uri``, which this client subscribed to, changed
    (``notifications/resources/updated``): call the application's ``on_update`` for it (the
    client reads the resource again if it wants the new contents)."""

    uri: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ListChanged(Action):
    """The server says its list of ``kind`` (``"tools"``, ``"prompts"`` or ``"resources"``)
    changed (``notifications/<kind>/list_changed``), and the client's cache of it is dropped
    already (``"resources"``: the resource templates' too): call the application's
    ``on_list_changed`` with ``kind``. Only from a machine built with ``list_changed=True``."""

    kind: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Log(Action):
    """A line for the ``logging`` logger named ``logger`` at ``level`` (a logging level name,
    e.g. ``"WARNING"``). Never contains a secret."""

    level: str
    logger: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DpopProof:
    """What the DPoP proof (RFC 9449 §4.2; SEP-1932) of one ``StartHttp`` must say. The driver
    signs it with the client's key right before sending (ES256, header ``typ: dpop+jwt`` and the
    public ``jwk``; claims ``jti`` and ``iat`` its own, and these) and adds it as the ``DPoP``
    header. ``htu`` has no query or fragment; ``ath`` (requests to the MCP server) is the
    base64url SHA-256 of the access token; ``nonce`` the server's latest ``DPoP-Nonce``.
    ``repr`` hides ``ath``."""

    htm: str
    htu: str
    ath: str | None = None
    nonce: str | None = None

    def __repr__(self) -> str:
        ath = None if self.ath is None else REDACTED
        return f"DpopProof(htm={self.htm!r}, htu={self.htu!r}, ath={ath!r}, nonce={self.nonce!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class StartHttp(Action):
    """Send one HTTP request and stream its response back as ``HttpResponseStarted``, then
    ``HttpBodyReceived`` chunks, then ``HttpResponseEnded`` (or ``HttpFailed`` at any point).

    ``stream`` names this request in those events. The driver sends exactly ``headers`` (plus
    Host and framing headers), follows no redirect, verifies TLS, and reuses pooled keep-alive
    connections. It applies no timeout of its own: the machine's deadlines decide, and end a
    request with ``AbortHttp``.

    Start order: the driver writes requests in the order of their ``StartHttp`` actions, even
    when a later one gets a connection first (it waits until every request started before it
    was written, or ended unwritten). The machine relies on it: the
    ``notifications/initialized`` POST, started while the ``initialize`` answer still streams,
    reaches the server before the calls started once the session is ready. Both executors
    keep the rule with one definition, ``_mcp_io.h11wire.StartOrder``.
    """

    stream: int
    method: Literal["GET", "POST", "DELETE"]
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None = None
    # The body and the answer hold credentials (a token request, a registration): never log
    # them; a recording keeps neither (``SessionMachine.is_secret`` says so of its events).
    secret: bool = False
    # A DPoP proof the driver signs and adds as the ``DPoP`` header (RFC 9449), or None.
    dpop: DpopProof | None = None

    def __repr__(self) -> str:
        """The URL without userinfo, query or fragment, the headers with the values of
        credential headers replaced, and the body's length only: a logged action or a test
        failure shows no token, cookie, session id or token-request form."""
        headers = [
            (name, REDACTED if name.lower() in CREDENTIAL_HEADERS else value)
            for name, value in self.headers
        ]
        body = "None" if self.body is None else f"<{len(self.body)} bytes>"
        return (
            f"StartHttp(stream={self.stream!r}, method={self.method!r}, "
            f"url={redact_url(self.url)!r}, headers={headers!r}, body={body}, "
            f"secret={self.secret!r}{'' if self.dpop is None else f', dpop={self.dpop!r}'})"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortHttp(Action):
    """Stop reading ``stream`` and close its connection (a cancel, in the 2026-07-28 era).
    Feed nothing more for it."""

    stream: int


@dataclass(frozen=True, slots=True, kw_only=True)
class HandleServerRequest(Action):
    """The server asked the client something (``elicitation/create``, ...): run the handler
    the application gave for ``method`` with ``params`` and feed ``ServerRequestAnswered``.
    Only methods the machine was told have a handler arrive here; others are refused."""

    handle: int
    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationComplete(Action):
    """The server reported (``notifications/elicitation/complete``, 2025-11-25) that the user
    finished the URL-mode elicitation ``elicitation_id``, one this client was asked for (in an
    ``elicitation/create`` request or a -32042 error) and not yet told of. The application may
    now retry what waited for it."""

    elicitation_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SettleReservation(Action):
    """Settle the reservation the call holding ``ticket`` came with: ``commit()`` it (the
    request was sent) or ``release()`` it (the call failed before sending). Once per call."""

    ticket: int
    commit: bool


# --- authorization (OAuth, HTTP only) -------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PrepareAuthorization(Action):
    """An authorization code flow is about to start: get ready for the browser step (bind the
    loopback redirect listener, or settle on what the ``authorize=`` callback expects) and
    feed ``AuthorizationPrepared`` with its redirect URI and 48 fresh random bytes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Authorize(Action):
    """Let the user authorize: open ``url`` in a browser (or hand it to the ``authorize=``
    callback) and feed the redirect's query parameters as ``AuthorizationRedirected``, or
    ``AuthorizationAbandoned``. ``url`` carries ``state`` and the PKCE challenge: never log
    either (``repr`` shows neither). A redirect listener compares each request's ``state``
    with this one and answers any other with 400, waiting on for the right one: a stray or
    forged request to the loopback port cannot end the login."""

    url: str
    state: str

    def __repr__(self) -> str:
        return f"Authorize(url={REDACTED!r}, state={REDACTED!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class SignAssertion(Action):
    """Sign a ``private_key_jwt`` client assertion (RFC 7523) with the configured key: the
    claims are ``client_assertion_claims(client_id=..., audience=..., issued_at=<now, UNIX
    seconds>, jti=<random>)``; feed ``AssertionSigned``, or ``AuthorizationAbandoned`` when
    the key cannot sign. ``algorithms`` is the authorization server's
    ``token_endpoint_auth_signing_alg_values_supported`` (``None`` when its metadata does not
    say): the signature must use one of them."""

    client_id: str
    audience: str
    algorithms: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ObtainAssertion(Action):
    """Supply the workload's identity JWT, as the platform issued it (a Kubernetes service
    account token, a SPIFFE JWT-SVID, a cloud workload token), for the ``jwt_bearer`` grant
    (RFC 7523 §2.1; SEP-1933): read it afresh (the spec's ``oauth.assertion_file``, or the
    ``assertion=`` callback), since platforms rotate it. Feed ``AssertionSigned`` with it, or
    ``AuthorizationAbandoned`` when there is none. ``issuer`` and ``token_endpoint`` are the
    authorization server it is for (a platform that mints tokens on demand takes its
    audience from them); the machine treats the JWT as opaque."""

    issuer: str
    token_endpoint: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SaveAuthorization(Action):
    """Keep ``authorization`` for ``server`` (its canonical URL) in the token store, replacing
    what was there. Its ``expires_at`` is on the machine's clock (the ``now`` of events): a
    driver converts it to wall-clock time before storing, and back when it loads a record for
    the machine. Holds secrets: never log it."""

    server: str
    authorization: StoredAuthorization


@dataclass(frozen=True, slots=True, kw_only=True)
class ShowDeviceCode(Action):
    """Show the user how to approve a device login (RFC 8628 §3.3): visit
    ``verification_uri`` on any device and enter ``user_code``, or open
    ``verification_uri_complete`` (the URI with the code in it, when the server gave one; a QR
    code of it suits a phone), within ``expires_in`` seconds. The machine polls the token
    endpoint meanwhile; nothing is fed back, except ``AuthorizationAbandoned`` when the code
    cannot be shown (the login ends). The ``user_code`` is for the user's eyes: ``repr`` (so a
    log) shows neither it nor the complete URI's query, and a recording keeps neither."""

    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: float

    def __repr__(self) -> str:
        complete = self.verification_uri_complete
        return (
            f"ShowDeviceCode(user_code={REDACTED!r}, verification_uri="
            f"{redact_url(self.verification_uri)!r}, verification_uri_complete="
            f"{None if complete is None else redact_url(complete)!r}, "
            f"expires_in={self.expires_in!r})"
        )


quicken(globals(), __name__)  # every event and action: quick_init.py says why
