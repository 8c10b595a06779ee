"""The transition tables: every phase a session and its connections can be in, and what moves
them. Everything that changes a phase goes through ``session_step``, ``connection_step`` or
``stop_step`` below, so these tables are the whole truth about "in this phase, this leads
there" (h11's ``_state.py`` is the model). ``docs/states.md`` is drawn from them by
``scripts/draw_states.py`` and a test keeps it in sync.

Three tables:

- ``SESSION_TABLE``: the client as a whole, keyed by the public event types a driver feeds.
  A session is ``NEW`` until ``Connect``, ``RUNNING`` until ``Close``, ``CLOSING`` until every
  connection is ``IDLE`` (then ``CLOSED``, from which ``Connect`` starts it again). Process and
  HTTP events are refused in ``NEW``: nothing was asked of the driver yet.
- ``CONNECTION_TABLE``: one connection ("slot": a server process, or an HTTP session), keyed by
  the three process events that move it and by the named ``Step`` values the layers take
  (``Step.PROBE`` is "server/discover was sent", and so on). Events that move no connection
  (stdout and stderr bytes, write failures, HTTP bodies, caller requests) are not in it.
- ``STOP_TABLE``: the shutdown of one server process (MCP 2025-11-25 basic/lifecycle §Shutdown):
  close stdin, SIGTERM, SIGKILL, each after ``shutdown_grace`` seconds, then give up.

A pair missing from a table raises ``UnexpectedEvent`` naming the phase and the event: from
``handle()`` when a driver feeds an event the machine did not ask for (``ProcessSpawned`` for
a slot that is not spawning), and from inside the machine if a layer ever tried a step its
phase does not allow (a bug the stateful tests look for).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from .errors import UnexpectedEvent
from .events import (
    AssertionSigned,
    AuthorizationAbandoned,
    AuthorizationPrepared,
    AuthorizationRedirected,
    AwaitReady,
    CallTool,
    CancelCall,
    Close,
    Connect,
    Event,
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
    ListItems,
    ListTools,
    ProcessExited,
    ProcessSpawned,
    Request,
    RootsChanged,
    ServerRequestAnswered,
    SpawnFailed,
    StderrReceived,
    StdoutClosed,
    StdoutReceived,
    Subscribe,
    TimerFired,
    Unsubscribe,
    WriteFailed,
)

__all__ = [
    "AUTH_TABLE",
    "CONNECTION_TABLE",
    "SESSION_TABLE",
    "STOP_TABLE",
    "AuthPhase",
    "AuthStep",
    "Phase",
    "SessionPhase",
    "Step",
    "StopStage",
    "auth_step",
    "connection_step",
    "render_tables",
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

_CALLER = (
    AwaitReady,
    ListTools,
    ListItems,
    CallTool,
    Request,
    Subscribe,
    Unsubscribe,
    RootsChanged,
    CancelCall,
    ServerRequestAnswered,
    TimerFired,
)
_TRANSPORT = (
    ProcessSpawned,
    SpawnFailed,
    StdoutReceived,
    StdoutClosed,
    StderrReceived,
    ProcessExited,
    WriteFailed,
    HttpResponseStarted,
    HttpBodyReceived,
    HttpResponseEnded,
    HttpFailed,
    AuthorizationPrepared,
    AuthorizationRedirected,
    AuthorizationAbandoned,
    AssertionSigned,
)

SESSION_TABLE: Mapping[tuple[SessionPhase, type[Event]], SessionPhase] = {
    (SessionPhase.NEW, Connect): SessionPhase.RUNNING,
    (SessionPhase.NEW, Close): SessionPhase.NEW,  # answered at once: nothing to stop
    **{(SessionPhase.NEW, kind): SessionPhase.NEW for kind in _CALLER},
    (SessionPhase.RUNNING, Connect): SessionPhase.RUNNING,  # already running: ignored
    (SessionPhase.RUNNING, Close): SessionPhase.CLOSING,
    **{(SessionPhase.RUNNING, kind): SessionPhase.RUNNING for kind in _CALLER + _TRANSPORT},
    (SessionPhase.CLOSING, Connect): SessionPhase.CLOSING,  # a restart waits for the stop
    (SessionPhase.CLOSING, Close): SessionPhase.CLOSING,  # answered when the stop ends
    **{(SessionPhase.CLOSING, kind): SessionPhase.CLOSING for kind in _CALLER + _TRANSPORT},
    (SessionPhase.CLOSED, Connect): SessionPhase.RUNNING,  # a restart
    (SessionPhase.CLOSED, Close): SessionPhase.CLOSED,  # answered at once
    **{(SessionPhase.CLOSED, kind): SessionPhase.CLOSED for kind in _CALLER + _TRANSPORT},
}
# And one transition no event triggers: CLOSING becomes CLOSED once every connection is IDLE
# (the machine checks after each event that can end a connection).


def session_step(phase: SessionPhase, event: Event) -> SessionPhase:
    """The session's next phase; ``UnexpectedEvent`` for an event the table does not allow
    there (a process or HTTP event before ``Connect``, or something that is no event)."""
    try:
        return SESSION_TABLE[phase, type(event)]
    except KeyError:
        raise UnexpectedEvent(phase.name, type(event).__name__) from None


# --- one connection ----------------------------------------------------------------------------

_HANDSHAKING = (Phase.PROBING, Phase.INITIALIZING, Phase.CONFIRMING)
_ESTABLISHED = (Phase.READY, Phase.REINITIALIZING)
_PROCESS_RUNS = (Phase.OPEN, *_HANDSHAKING, *_ESTABLISHED, Phase.STOPPING)

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
    **{(phase, Step.FAIL): Phase.STOPPING for phase in (Phase.OPEN, *_HANDSHAKING, *_ESTABLISHED)},
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
    SIGNING = "signing a client assertion"  # SignAssertion sent
    EXCHANGING = "exchanging"  # a token request is in flight
    REFRESHING = "refreshing"  # a refresh token request is in flight
    REFUSED = "refused"  # no token can be had: every request fails with the reason


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
    TOKEN = "token received (or one in hand: stored, or kept after a failure)"
    FALTER = "failed for now (no answer in time, HTTP 429/5xx, unreadable): retried later"
    REFUSE = "refused"
    STOP = "Close"


_STARTS = (AuthPhase.UNAUTHORIZED, AuthPhase.AUTHORIZED)  # where a challenge starts a flow
# Where a request of the layer's own is in flight.
_FETCHING = (
    AuthPhase.DISCOVERING_RESOURCE,
    AuthPhase.DISCOVERING_SERVER,
    AuthPhase.REGISTERING,
    AuthPhase.EXCHANGING,
    AuthPhase.REFRESHING,
)
# From where a client identity is in hand, the grant begins.
_GRANTS = {
    AuthStep.PREPARE: AuthPhase.PREPARING,
    AuthStep.SIGN: AuthPhase.SIGNING,
    AuthStep.EXCHANGE: AuthPhase.EXCHANGING,
    AuthStep.REFRESH: AuthPhase.REFRESHING,
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
}


def auth_step(phase: AuthPhase, step: AuthStep) -> AuthPhase:
    """The authorization layer's next phase. The layer takes only steps its own state allows,
    so a missing pair is a bug there (``KeyError``)."""
    return AUTH_TABLE[phase, step]


# --- drawing -----------------------------------------------------------------------------------


def _name(step: type[Event] | Step) -> str:
    return f"`{step.__name__}`" if isinstance(step, type) else step.value


def render_tables() -> str:
    """The three tables as Markdown (``docs/states.md``)."""
    lines = [
        "# State tables",
        "",
        "Drawn from `mcp_core/_vocabulary/phases.py` by `python scripts/draw_states.py`;",
        "a test fails when this file and the code disagree. Any pair not listed raises",
        "`UnexpectedEvent` naming the phase and the event.",
        "",
        "## Session",
        "",
        "Every caller event (`AwaitReady`, `ListTools`, `ListItems`, `CallTool`, `Request`,",
        "`Subscribe`, `Unsubscribe`, `RootsChanged`, `CancelCall`, `ServerRequestAnswered`,",
        "`TimerFired`) keeps the phase it arrives in. Process and HTTP",
        "events keep it too, except in NEW, where they are refused. CLOSING becomes CLOSED once",
        "every connection is idle.",
        "",
        "| phase | event | next phase |",
        "|---|---|---|",
    ]
    for (phase, kind), after in SESSION_TABLE.items():
        if kind in (Connect, Close):
            lines.append(f"| {phase.name} | `{kind.__name__}` | {after.name} |")
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
