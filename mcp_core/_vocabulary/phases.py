"""The transition tables: every phase a session, its connections, a stopping process and the
authorization layer can be in, and what moves them. Every phase change goes through
``session_step``, ``connection_step``, ``stop_step`` or ``auth_step`` below (a test reads the
core's source and fails on any other assignment to a phase), so these tables are the whole
truth about "in this phase, this leads there" (h11's ``_state.py`` is the model). A table
lists the moves that exist, not every event a phase lets by. ``docs/states.md`` is drawn from
them by ``scripts/draw_states.py`` and a test keeps it in sync.

Four tables, and the rules that give ``Status.state``:

- ``SESSION_TABLE``: the client as a whole. A session is ``NEW`` until ``Connect`` (or a
  ``Close``, which makes it ``CLOSED`` at once), ``RUNNING`` until ``Close``, ``CLOSING``
  until every connection is ``IDLE`` (``SessionStep.STOPPED``: then ``CLOSED``, from which
  ``Connect`` starts it again). Every
  other event keeps the phase; the driver's reports (``events.DRIVER_REPORTS``) are refused in
  ``NEW``: nothing was asked of the driver yet.
- ``CONNECTION_TABLE``: one connection ("slot": a server process, or an HTTP session), keyed by
  the three process events that move it and by the named ``Step`` values the layers take
  (``Step.PROBE`` is "server/discover was sent", and so on). Events that move no connection
  (stdout and stderr bytes, write failures, HTTP bodies, caller requests) are not in it.
- ``STOP_TABLE``: the shutdown of one server process (MCP 2025-11-25 basic/lifecycle §Shutdown):
  close stdin, SIGTERM, SIGKILL, each after ``shutdown_grace`` seconds, then give up.
- ``STATE_RULES``: what ``Status.state`` says of a session (``session_state``).
- ``AUTH_TABLE``: the authorization layer (OAuth, HTTP only): discovery, registration, the
  grant, the token, and what a failure does.

An event the session's rules refuse, or a connection move missing from its table, raises
``UnexpectedEvent`` naming the phase and the event: from ``handle()`` when a driver feeds an
event the machine did not ask for (``ProcessSpawned`` for a slot that is not spawning), and
from inside the machine if a layer ever tried a step its phase does not allow (a bug the
stateful tests look for). The session, stop and authorization steps are taken only where their
own state allows them, so a missing pair there is a ``KeyError``: a bug in the core.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from .errors import UnexpectedEvent
from .events import Close, Connect, Event, ProcessExited, ProcessSpawned, SpawnFailed, TimerFired
from .status import SessionState

__all__ = [
    "AUTH_TABLE",
    "CONNECTION_TABLE",
    "ESTABLISHED",
    "FIRST_HANDSHAKE",
    "HANDSHAKING",
    "SESSION_TABLE",
    "STATE_RULES",
    "STOP_TABLE",
    "AuthPhase",
    "AuthStep",
    "Phase",
    "SessionPhase",
    "SessionStep",
    "Step",
    "StopStage",
    "auth_step",
    "connection_step",
    "render_tables",
    "session_state",
    "session_step",
    "stop_step",
]


# _IDENTITY_HASH: the tables are looked up by (phase, event type) on every event, and
# ``enum.Enum.__hash__`` is a Python function (it hashes the member's name). Members are
# singletons compared by identity, so the identity hash is the same relation, in C.


class SessionPhase(enum.Enum):
    """The client as a whole."""

    __hash__ = object.__hash__  # see _IDENTITY_HASH

    NEW = "new"  # built, never connected
    RUNNING = "running"  # connected (or connecting, or retrying)
    CLOSING = "closing"  # Close was fed; some connection is still being shut down
    CLOSED = "closed"  # every connection is gone; Connect starts again


class Phase(enum.Enum):
    """One connection: a server process (stdio) or an HTTP session."""

    __hash__ = object.__hash__  # see _IDENTITY_HASH

    IDLE = "idle"  # nothing runs; a retry may be armed
    SPAWNING = "spawning"  # Spawn asked for; waiting for ProcessSpawned or SpawnFailed
    OPEN = "open"  # the transport is up and no handshake step is chosen yet (passing)
    PROBING = "probing"  # server/discover is in flight (era 'auto', verdict unknown)
    INITIALIZING = "initializing"  # initialize is in flight (HTTP+SSE: or the endpoint GET)
    # HTTP: the notifications/initialized POST is in flight, then (legacy, with a session)
    # the listening GET until its response head (at most LISTEN_HEAD_WAIT, 1 s)
    CONFIRMING = "confirming"
    READY = "ready"  # calls go out
    REINITIALIZING = "reinitializing"  # HTTP: a new session replaces one the server forgot
    STOPPING = "stopping"  # the transport is being shut down (after a failure, or Close)


class Step(enum.Enum):
    """What a layer does or learns that moves a connection."""

    __hash__ = object.__hash__  # see _IDENTITY_HASH

    SPAWN = "Spawn sent"
    OPEN = "HTTP endpoint opened"
    PROBE = "server/discover sent"
    INITIALIZE = "initialize sent"
    CONFIRM = "initialized POSTed"
    READY = "session established"
    FAIL = "connection failed"
    STOP = "Close"
    GONE = "transport gone"
    SHUT_DOWN = "stop the process (after a failure, or Close)"


class StopStage(enum.Enum):
    """How far the shutdown of one server process has gone (MCP 2025-11-25
    basic/lifecycle §Shutdown: close stdin, then SIGTERM, then SIGKILL)."""

    __hash__ = object.__hash__  # see _IDENTITY_HASH

    NONE = "none"  # not stopping
    STDIN_CLOSED = "stdin closed"  # CloseStdin sent; waiting shutdown_grace
    TERMINATED = "SIGTERM sent"  # waiting shutdown_grace
    KILLED = "SIGKILL sent"  # waiting shutdown_grace, then the process is given up on


# --- the session -------------------------------------------------------------------------------

class SessionStep(enum.Enum):
    """What the machine learns that moves the session without an event of its own."""

    __hash__ = object.__hash__  # see _IDENTITY_HASH

    STOPPED = "every connection idle"


# Only ``Connect``, ``Close`` and the end of a stop are in the table: every other event keeps
# the session's phase (the caller's work is answered as the phase allows), and the driver's
# reports (``events.DRIVER_REPORTS``) are refused in NEW, when nothing was asked of it yet.
SESSION_TABLE: Mapping[tuple[SessionPhase, type[Event] | SessionStep], SessionPhase] = {
    (SessionPhase.NEW, Connect): SessionPhase.RUNNING,
    (SessionPhase.NEW, Close): SessionPhase.CLOSED,  # answered at once: nothing to stop
    (SessionPhase.RUNNING, Connect): SessionPhase.RUNNING,  # already running: ignored
    (SessionPhase.RUNNING, Close): SessionPhase.CLOSING,
    (SessionPhase.CLOSING, Connect): SessionPhase.CLOSING,  # a restart waits for the stop
    (SessionPhase.CLOSING, Close): SessionPhase.CLOSING,  # answered when the stop ends
    (SessionPhase.CLOSING, SessionStep.STOPPED): SessionPhase.CLOSED,
    (SessionPhase.CLOSED, Connect): SessionPhase.RUNNING,  # a restart
    (SessionPhase.CLOSED, Close): SessionPhase.CLOSED,  # answered at once
}


def session_step(phase: SessionPhase, step: type[Event] | SessionStep) -> SessionPhase:
    """The session's next phase. The machine takes only steps its own state allows, so a
    missing pair is a bug there (``KeyError``)."""
    return SESSION_TABLE[phase, step]


# --- one connection ----------------------------------------------------------------------------

# The phases of a connection's first handshake, and those of an established session (which
# may be renewing itself: REINITIALIZING). A handshake is under way, with its connect deadline
# running, in any phase of FIRST_HANDSHAKE or in REINITIALIZING: that is HANDSHAKING.
FIRST_HANDSHAKE = (Phase.PROBING, Phase.INITIALIZING, Phase.CONFIRMING)
ESTABLISHED = (Phase.READY, Phase.REINITIALIZING)
HANDSHAKING = (*FIRST_HANDSHAKE, Phase.REINITIALIZING)
_PROCESS_RUNS = (Phase.OPEN, *FIRST_HANDSHAKE, *ESTABLISHED, Phase.STOPPING)

CONNECTION_TABLE: Mapping[tuple[Phase, type[Event] | Step], Phase] = {
    # Opening: a process to spawn (stdio), or nothing to wait for (HTTP).
    (Phase.IDLE, Step.SPAWN): Phase.SPAWNING,
    (Phase.IDLE, Step.OPEN): Phase.OPEN,
    (Phase.SPAWNING, ProcessSpawned): Phase.OPEN,
    (Phase.SPAWNING, SpawnFailed): Phase.IDLE,
    # The handshake the era needs: a probe, initialize, or none at all.
    (Phase.OPEN, Step.PROBE): Phase.PROBING,
    (Phase.OPEN, Step.INITIALIZE): Phase.INITIALIZING,
    (Phase.OPEN, Step.READY): Phase.READY,  # 2026-07-28: no handshake
    (Phase.PROBING, Step.INITIALIZE): Phase.INITIALIZING,  # no usable answer: legacy
    (Phase.PROBING, Step.READY): Phase.READY,  # server/discover answered
    (Phase.INITIALIZING, Step.INITIALIZE): Phase.INITIALIZING,  # HTTP+SSE: now the POST
    (Phase.INITIALIZING, Step.READY): Phase.READY,  # stdio: answered and acknowledged
    (Phase.INITIALIZING, Step.CONFIRM): Phase.CONFIRMING,
    (Phase.CONFIRMING, Step.READY): Phase.READY,  # the initialized POST (and the GET) answered
    # HTTP 404 for a request that carried the session id: a fresh session; admitted work
    # waits for it instead of failing.
    (Phase.READY, Step.INITIALIZE): Phase.REINITIALIZING,
    (Phase.REINITIALIZING, Step.INITIALIZE): Phase.REINITIALIZING,
    (Phase.REINITIALIZING, Step.CONFIRM): Phase.REINITIALIZING,
    (Phase.REINITIALIZING, Step.READY): Phase.READY,
    # Failure: stop what still runs (STOPPING), or nothing runs any more (IDLE).
    **{(phase, Step.FAIL): Phase.STOPPING for phase in (Phase.OPEN, *HANDSHAKING, Phase.READY)},
    **{(phase, ProcessExited): Phase.IDLE for phase in _PROCESS_RUNS},
    (Phase.STOPPING, Step.GONE): Phase.IDLE,
    # Close: every connection stops; one still spawning stops once it runs (OPEN).
    **{(phase, Step.STOP): Phase.STOPPING for phase in _PROCESS_RUNS},
    (Phase.IDLE, Step.STOP): Phase.IDLE,
    (Phase.SPAWNING, Step.STOP): Phase.SPAWNING,
}


def connection_step(phase: Phase, step: type[Event] | Step, slot: int) -> Phase:
    """The connection's next phase; ``UnexpectedEvent`` when the table has no such move."""
    try:
        return CONNECTION_TABLE[phase, step]
    except KeyError:
        name = step.__name__ if isinstance(step, type) else step.value
        raise UnexpectedEvent(phase.name, name, f" (slot {slot})") from None


# --- what Status.state says --------------------------------------------------------------------

# A running session's ``Status.state``: the first rule one of its connections is in (a pooled
# session has several). A NEW session (never started nor closed) is ``new``; one CLOSING or
# CLOSED, or RUNNING with its connections all IDLE or STOPPING (failed, a retry perhaps
# armed), is ``closed``.
STATE_RULES: tuple[tuple[tuple[Phase, ...], SessionState], ...] = (
    ((Phase.READY,), "ready"),
    (HANDSHAKING, "initializing"),
    ((Phase.SPAWNING, Phase.OPEN), "starting"),
)


def session_state(phase: SessionPhase, connections: Iterable[Phase]) -> SessionState:
    """``Status.state`` of a session in ``phase`` whose connections are in ``connections``."""
    if phase is SessionPhase.NEW:
        return "new"
    if phase is SessionPhase.RUNNING:
        present = set(connections)
        for phases, state in STATE_RULES:
            if present.intersection(phases):
                return state
    return "closed"


# --- stopping one process ----------------------------------------------------------------------

STOP_TABLE: Mapping[tuple[StopStage, type[Event] | Step], StopStage] = {
    # (Again) from the top: Close during the stop after a failure starts it over.
    **{(stage, Step.SHUT_DOWN): StopStage.STDIN_CLOSED for stage in StopStage},
    (StopStage.STDIN_CLOSED, TimerFired): StopStage.TERMINATED,
    (StopStage.TERMINATED, TimerFired): StopStage.KILLED,
    (StopStage.KILLED, TimerFired): StopStage.NONE,  # given up on: its later events are dropped
    **{(stage, ProcessExited): StopStage.NONE for stage in StopStage},
}


def stop_step(stage: StopStage, step: type[Event] | Step) -> StopStage:
    """The next stop stage. Only the stdio layer takes these steps, each when its own state
    allows it (a timer is armed only while stopping), so a missing pair is a bug here."""
    return STOP_TABLE[stage, step]


# --- authorization (OAuth, HTTP only) -----------------------------------------------------------


class AuthPhase(enum.Enum):
    """Where the authorization layer is (``_auth/layer.py``)."""

    __hash__ = object.__hash__  # see _IDENTITY_HASH

    UNAUTHORIZED = "unauthorized"  # no token (or a flow that failed for now): none sent
    AUTHORIZED = "authorized"  # requests carry the token
    DISCOVERING_RESOURCE = "discovering the protected resource"  # RFC 9728
    DISCOVERING_SERVER = "discovering the authorization server"  # RFC 8414 / OIDC
    REGISTERING = "registering"  # RFC 7591
    PREPARING = "preparing the browser step"  # PrepareAuthorization sent
    AUTHORIZING = "authorizing"  # Authorize sent: the user is at the browser
    SIGNING = "signing a client assertion"  # SignAssertion (or ObtainAssertion) sent
    EXCHANGING = "exchanging"  # a token request is in flight
    REFRESHING = "refreshing"  # a refresh token request is in flight
    # Enterprise-managed authorization (SEP-990): the ID token exchanged at the identity
    # provider for an ID-JAG (RFC 8693), before the ID-JAG is exchanged for a token.
    EXCHANGING_IDENTITY = "exchanging the ID token at the identity provider"
    DISCOVERING_IDENTITY_PROVIDER = "discovering the identity provider"  # its RFC 8414 / OIDC
    REFUSED = "refused"  # no token can be had: every request fails with the reason
    DEVICE_AUTHORIZING = "asking for a device code"  # RFC 8628 §3.1 request in flight
    AWAITING_DEVICE = "waiting for the user's device login"  # ShowDeviceCode sent; next poll due
    POLLING = "polling the token endpoint"  # RFC 8628 §3.4 poll in flight


class AuthStep(enum.Enum):
    """What the authorization layer starts or learns."""

    __hash__ = object.__hash__  # see _IDENTITY_HASH

    DISCOVER = "protected resource metadata asked for"
    DISCOVER_SERVER = "authorization server metadata asked for"
    REGISTER = "registration sent"
    PREPARE = "PrepareAuthorization sent"
    AUTHORIZE = "Authorize sent"
    SIGN = "SignAssertion sent"
    EXCHANGE = "token request sent"
    REFRESH = "refresh token request sent"
    EXCHANGE_IDENTITY = "token exchange sent to the identity provider"
    DISCOVER_IDENTITY_PROVIDER = "identity provider metadata asked for"
    TOKEN = "token received (or one in hand: stored, or kept after a failure)"
    FALTER = "failed for now (no answer in time, HTTP 429/5xx, unreadable): retried later"
    REFUSE = "refused"
    STOP = "Close"
    DEVICE = "device authorization request sent"
    SHOW_CODE = "ShowDeviceCode sent"
    POLL = "device token poll sent"
    WAIT = "authorization_pending or slow_down (or no answer): poll again later"


_STARTS = (AuthPhase.UNAUTHORIZED, AuthPhase.AUTHORIZED)  # where a challenge starts a flow
# Where a request of the layer's own is in flight.
_FETCHING = (
    AuthPhase.DISCOVERING_RESOURCE,
    AuthPhase.DISCOVERING_SERVER,
    AuthPhase.REGISTERING,
    AuthPhase.EXCHANGING,
    AuthPhase.REFRESHING,
    AuthPhase.EXCHANGING_IDENTITY,
    AuthPhase.DISCOVERING_IDENTITY_PROVIDER,
)
# From where a client identity is in hand, the grant begins.
_GRANTS = {
    AuthStep.PREPARE: AuthPhase.PREPARING,
    AuthStep.SIGN: AuthPhase.SIGNING,
    AuthStep.EXCHANGE: AuthPhase.EXCHANGING,
    AuthStep.REFRESH: AuthPhase.REFRESHING,
    AuthStep.DEVICE: AuthPhase.DEVICE_AUTHORIZING,
}

AUTH_TABLE: Mapping[tuple[AuthPhase, AuthStep], AuthPhase] = {
    # A 401 (or 403 insufficient_scope): discover, or go on with what is known.
    **{(phase, AuthStep.DISCOVER): AuthPhase.DISCOVERING_RESOURCE for phase in _STARTS},
    **{(phase, AuthStep.REGISTER): AuthPhase.REGISTERING for phase in _STARTS},
    **{(phase, step): after for phase in _STARTS for step, after in _GRANTS.items()},
    (AuthPhase.DISCOVERING_RESOURCE, AuthStep.DISCOVER_SERVER): AuthPhase.DISCOVERING_SERVER,
    (AuthPhase.DISCOVERING_SERVER, AuthStep.REGISTER): AuthPhase.REGISTERING,
    **{(AuthPhase.DISCOVERING_SERVER, step): after for step, after in _GRANTS.items()},
    # Registration needs the redirect URI of the browser step (authorization code) or not.
    (AuthPhase.PREPARING, AuthStep.REGISTER): AuthPhase.REGISTERING,
    (AuthPhase.REGISTERING, AuthStep.AUTHORIZE): AuthPhase.AUTHORIZING,
    (AuthPhase.REGISTERING, AuthStep.SIGN): AuthPhase.SIGNING,
    (AuthPhase.REGISTERING, AuthStep.EXCHANGE): AuthPhase.EXCHANGING,
    (AuthPhase.PREPARING, AuthStep.AUTHORIZE): AuthPhase.AUTHORIZING,
    (AuthPhase.AUTHORIZING, AuthStep.EXCHANGE): AuthPhase.EXCHANGING,
    (AuthPhase.SIGNING, AuthStep.EXCHANGE): AuthPhase.EXCHANGING,
    # A DPoP nonce asked of a private_key_jwt request: a new client assertion for it.
    (AuthPhase.EXCHANGING, AuthStep.SIGN): AuthPhase.SIGNING,
    # Enterprise-managed authorization: the ID token (SIGNING) for an ID-JAG, then a token.
    (AuthPhase.SIGNING, AuthStep.EXCHANGE_IDENTITY): AuthPhase.EXCHANGING_IDENTITY,
    (AuthPhase.EXCHANGING_IDENTITY, AuthStep.EXCHANGE): AuthPhase.EXCHANGING,
    # ... its token endpoint found first in the identity provider's metadata (idp_issuer).
    (AuthPhase.SIGNING, AuthStep.DISCOVER_IDENTITY_PROVIDER): (
        AuthPhase.DISCOVERING_IDENTITY_PROVIDER
    ),
    (AuthPhase.DISCOVERING_IDENTITY_PROVIDER, AuthStep.EXCHANGE_IDENTITY): (
        AuthPhase.EXCHANGING_IDENTITY
    ),
    (AuthPhase.EXCHANGING, AuthStep.TOKEN): AuthPhase.AUTHORIZED,
    (AuthPhase.REFRESHING, AuthStep.TOKEN): AuthPhase.AUTHORIZED,
    (AuthPhase.UNAUTHORIZED, AuthStep.TOKEN): AuthPhase.AUTHORIZED,  # stored, or kept
    # A refresh token that no longer works: authorize from the start.
    (AuthPhase.REFRESHING, AuthStep.PREPARE): AuthPhase.PREPARING,
    (AuthPhase.REFRESHING, AuthStep.SIGN): AuthPhase.SIGNING,
    (AuthPhase.REFRESHING, AuthStep.EXCHANGE): AuthPhase.EXCHANGING,
    (AuthPhase.REFRESHING, AuthStep.REGISTER): AuthPhase.REGISTERING,
    # A request of the flow failed in a way that may pass: back to the start, where the next
    # request that needs a token starts again (with the token in hand, if any: then TOKEN).
    **{(phase, AuthStep.FALTER): AuthPhase.UNAUTHORIZED for phase in _FETCHING},
    **{(phase, AuthStep.REFUSE): AuthPhase.REFUSED for phase in AuthPhase},
    # Close ends any flow (its requests are aborted); a restart starts from the token in hand.
    **{(phase, AuthStep.STOP): AuthPhase.UNAUTHORIZED for phase in AuthPhase},
    # The device authorization grant (RFC 8628): a code shown, then polls until a token.
    (AuthPhase.REGISTERING, AuthStep.DEVICE): AuthPhase.DEVICE_AUTHORIZING,
    (AuthPhase.REFRESHING, AuthStep.DEVICE): AuthPhase.DEVICE_AUTHORIZING,
    (AuthPhase.DEVICE_AUTHORIZING, AuthStep.SHOW_CODE): AuthPhase.AWAITING_DEVICE,
    (AuthPhase.DEVICE_AUTHORIZING, AuthStep.FALTER): AuthPhase.UNAUTHORIZED,
    (AuthPhase.AWAITING_DEVICE, AuthStep.POLL): AuthPhase.POLLING,
    (AuthPhase.POLLING, AuthStep.WAIT): AuthPhase.AWAITING_DEVICE,
    (AuthPhase.POLLING, AuthStep.TOKEN): AuthPhase.AUTHORIZED,
}


def auth_step(phase: AuthPhase, step: AuthStep) -> AuthPhase:
    """The authorization layer's next phase. The layer takes only steps its own state allows,
    so a missing pair is a bug there (``KeyError``)."""
    return AUTH_TABLE[phase, step]


# --- drawing -----------------------------------------------------------------------------------


def _name(step: type[Event] | Step | SessionStep) -> str:
    return f"`{step.__name__}`" if isinstance(step, type) else step.value


def render_tables() -> str:
    """The four tables as Markdown (``docs/states.md``)."""
    lines = [
        "# State tables",
        "",
        "Drawn from `mcp_core/_vocabulary/phases.py` by `python scripts/draw_states.py`;",
        "a test fails when this file and the code disagree. Every phase change of the core",
        "is one of these rows, and a row is a move that exists: an event that moves nothing",
        "is not listed. A driver event a connection's table does not allow raises",
        "`UnexpectedEvent` naming the phase and the event.",
        "",
        "## Session",
        "",
        "Only `Connect`, `Close` and the end of a stop move the session; every other event",
        "keeps the phase it arrives in. The driver's reports (process, HTTP, browser step and",
        "signing events) are refused in NEW: nothing was asked of the driver yet.",
        "",
        "| phase | event or step | next phase |",
        "|---|---|---|",
    ]
    for (phase, step), after in SESSION_TABLE.items():
        lines.append(f"| {phase.name} | {_name(step)} | {after.name} |")
    lines += [
        "",
        "## Connection",
        "",
        "One server process (stdio) or HTTP session. A step is what a layer did or learned;",
        "`ProcessSpawned`, `SpawnFailed` and `ProcessExited` are the driver's events.",
        "",
        "| phase | step | next phase |",
        "|---|---|---|",
    ]
    lines += [
        f"| {phase.name} | {_name(step)} | {after.name} |"
        for (phase, step), after in CONNECTION_TABLE.items()
    ]
    lines += [
        "",
        "## `Status.state`",
        "",
        "What `status()` says of a RUNNING session: the first row one of its connections is",
        "in (a pooled session has several). A NEW session (never started, nor stopped) is",
        "`new`. A CLOSING or CLOSED one, or a RUNNING one whose connections are all IDLE or",
        "STOPPING (it failed; `retry_in` says when it tries again), is `closed`.",
        "",
        "| a connection in | `Status.state` |",
        "|---|---|",
    ]
    lines += [
        f"| {', '.join(phase.name for phase in phases)} | `{state}` |"
        for phases, state in STATE_RULES
    ]
    lines += [
        "",
        "## Authorization (OAuth, HTTP only)",
        "",
        "| phase | step | next phase |",
        "|---|---|---|",
    ]
    lines += [
        f"| {phase.name} | {step.value} | {after.name} |"
        for (phase, step), after in AUTH_TABLE.items()
    ]
    lines += [
        "",
        "## Stopping a process",
        "",
        "| stage | step | next stage |",
        "|---|---|---|",
    ]
    lines += [
        f"| {stage.name} | {_name(step)} | {after.name} |"
        for (stage, step), after in STOP_TABLE.items()
    ]
    return "\n".join(lines) + "\n"
