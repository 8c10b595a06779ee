"""Inputs to the ``SessionMachine``.

Every event is a frozen, slotted, keyword-only dataclass and carries ``now``: the driver's
monotonic clock in seconds. The machine never reads a clock of its own.

Caller events carry a ``ticket``: an integer the driver picks, unique per client, that the
machine echoes in the ``Reply`` (and ``ProgressUpdate``) actions meant for that caller.
Transport events carry a ``slot``: the index of the connection they concern (always 0 except
with ``concurrency='pooled'``, which runs ``pool_size`` connections). Process events also carry
the ``generation`` of the ``Spawn`` that started their process: a slot's process may be given up
on (after SIGKILL) and replaced while the old one still prints or exits, and the machine drops
the events of every process but the slot's current one. A driver feeds them all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .quick_init import quicken

__all__ = [
    "AUTHORIZATION_EVENTS",
    "DRIVER_REPORTS",
    "HTTP_EVENTS",
    "PROCESS_EVENTS",
    "AssertionSigned",
    "AuthorizationAbandoned",
    "AuthorizationPrepared",
    "AuthorizationRedirected",
    "AwaitReady",
    "CallTool",
    "CancelCall",
    "Close",
    "Connect",
    "Event",
    "FollowTask",
    "HttpBodyReceived",
    "HttpFailed",
    "HttpResponseEnded",
    "HttpResponseStarted",
    "ListItems",
    "ListTools",
    "ProcessExited",
    "ProcessSpawned",
    "Request",
    "RootsChanged",
    "ServerRequestAnswered",
    "SpawnFailed",
    "StderrReceived",
    "StdoutClosed",
    "StdoutReceived",
    "Subscribe",
    "TimerFired",
    "Unsubscribe",
    "WriteFailed",
]

# RFC 5424 severities, the levels of logging/setLevel and notifications/message.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# Methods a caller does not send through ``Request``: the machine sends them itself, or a
# dedicated event does (a tools/call may be priced, a subscription outlives its request).
_NOT_BY_REQUEST = {
    "initialize": "the machine opens every session itself",
    "server/discover": "the machine probes the server itself",
    "tools/call": "use CallTool (call_tool), which checks prices and validates results",
    "tools/list": "use ListTools (list_tools), which pages and caches",
    "resources/list": "use ListItems (list_resources), which pages and caches",
    "resources/templates/list": "use ListItems (list_resource_templates)",
    "prompts/list": "use ListItems (list_prompts), which pages and caches",
    "resources/subscribe": "use Subscribe (subscribe), which outlives a reconnect",
    "resources/unsubscribe": "use Unsubscribe (unsubscribe)",
    "subscriptions/listen": "use Subscribe (subscribe); the machine keeps the stream",
    "tasks/list": "use ListItems(kind='tasks') (list_tasks), which pages",
    "tasks/result": "use FollowTask (Task.result), which follows the task to its end",
    "tasks/update": "use FollowTask: the machine answers a task's input requests itself",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base class: every event says when it happened."""

    now: float


# --- caller events -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Connect(Event):
    """The client was started: open every connection the spec asks for.

    ``wall_offset``: the driver's wall clock minus its monotonic one (``time.time() -
    time.monotonic()``), so that ``now + wall_offset`` is the time of day. The machine reads
    no clock; it needs the time of day only for the ``createdAt`` and ``lastUpdatedAt`` of
    tasks the server asks it to run (2025-11-25 basic/utilities/tasks), and a recording
    keeps it, so a replay writes the same times. 0 (the default): 1970."""

    wall_offset: float = 0.0

    def __post_init__(self) -> None:
        if not math.isfinite(self.wall_offset):
            raise ValueError("Connect.wall_offset must be a finite number")


@dataclass(frozen=True, slots=True, kw_only=True)
class AwaitReady(Event):
    """A caller waits until the session is ready, for at most ``timeout`` seconds.

    ``fail_fast`` decides this wait only: True ends it with ``ConnectFailed`` at the first
    failed connect attempt (the client keeps retrying in the background), False waits through
    the retries, None (the default) follows the spec's ``fail_fast``."""

    ticket: int
    timeout: float
    fail_fast: bool | None = None

    def __post_init__(self) -> None:
        if self.timeout < 0:
            raise ValueError("AwaitReady.timeout must be >= 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class ListTools(Event):
    """A caller asks for the tool list (from the cache unless ``refresh``)."""

    ticket: int
    refresh: bool = False
    timeout: float | None = None
    meta: Mapping[str, Any] | None = None  # as CallTool.meta, on every page it fetches

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("ListTools.timeout must be > 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class ListItems(Event):
    """A caller asks for a list other than tools: ``kind`` is 'resources',
    'resource_templates' or 'prompts' (from the cache unless ``refresh``), or 'tasks'
    (2025-11-25 ``tasks/list``, never from a cache)."""

    ticket: int
    kind: str
    refresh: bool = False
    timeout: float | None = None
    meta: Mapping[str, Any] | None = None  # as CallTool.meta, on every page it fetches

    def __post_init__(self) -> None:
        if self.kind not in ("resources", "resource_templates", "prompts", "tools", "tasks"):
            raise ValueError(
                "ListItems.kind must be 'tools', 'resources', 'resource_templates', 'prompts' "
                "or 'tasks'"
            )
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("ListItems.timeout must be > 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class Request(Event):
    """A caller sends request ``method`` with ``params`` and gets its result.

    The machine refuses a method the server did not declare (``NotSupported``) before
    sending, adds what the era needs, and reads the answer: ``resources/read``,
    ``prompts/get`` and ``completion/complete`` give their models, ``logging/setLevel``
    None, ``ping`` the round trip in seconds, any other method the result as received (all of
    them with ``raw=True``). ``logging/setLevel`` is kept: the machine applies it to every
    session it opens later (2026-07-28: on every request's ``_meta`` instead, nothing sent);
    ``ping`` in 2026-07-28, which has none, is a ``server/discover`` round trip (with
    ``raw``, its result is the ``DiscoverResult``)."""

    ticket: int
    method: str
    params: Mapping[str, Any] | None = None
    timeout: float | None = None
    raw: bool = False
    meta: Mapping[str, Any] | None = None  # as CallTool.meta

    def __post_init__(self) -> None:
        if self.method in _NOT_BY_REQUEST:
            why = _NOT_BY_REQUEST[self.method]
            raise ValueError(f"{self.method} is not sent with Request: {why}")
        if self.method.startswith("notifications/") or not self.method:
            raise ValueError(f"{self.method!r} is not a request method")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("Request.timeout must be > 0")
        if self.method == "logging/setLevel":
            level = (self.params or {}).get("level")
            if level not in LOG_LEVELS:
                raise ValueError(f"logging level must be one of {', '.join(LOG_LEVELS)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscribe(Event):
    """A caller wants ``ResourceUpdated`` for ``uri`` until it unsubscribes (legacy:
    ``resources/subscribe``; 2026-07-28: the ``subscriptions/listen`` stream the machine
    keeps). The subscription outlives reconnects: the machine renews it on every new
    session. Answered once the server accepted it (legacy), or once the listen carrying it
    was sent (2026-07-28: the server's acknowledgement, if it names less, is logged)."""

    ticket: int
    uri: str
    timeout: float | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("Subscribe.timeout must be > 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class Unsubscribe(Event):
    """Stop the updates of ``uri``; answered once the server was told (None)."""

    ticket: int
    uri: str
    timeout: float | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("Unsubscribe.timeout must be > 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class RootsChanged(Event):
    """The application's roots changed: the machine sends
    ``notifications/roots/list_changed`` on every legacy session (the roots handler declares
    ``roots.listChanged``); 2026-07-28 has no such notification, so nothing is sent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallTool(Event):
    """A caller calls tool ``name``. ``progress`` asks for ``ProgressUpdate`` actions."""

    ticket: int
    name: str
    arguments: Mapping[str, Any] | None = None
    timeout: float | None = None
    progress: bool = False
    # For a priced tool: ``mcp_core.driver.reservation_facts(reservation, fresh=...)``.
    reservation: Mapping[str, Any] | None = None
    # Entries added to the request's ``params._meta`` on every round: the caller's (``meta=``)
    # and the driver's W3C trace context (``traceparent``, ``tracestate``). One of the keys the
    # machine sets itself (``progressToken``, ``io.modelcontextprotocol/...``) is refused with
    # ``InvalidArguments``, nothing sent. Recorded like every field: no secrets.
    meta: Mapping[str, Any] | None = None
    # Tasks (2025-11-25 basic/utilities/tasks; the 2026-07-28 Tasks extension): True asks
    # the server to run the call as a task, False never lets it, None (the default) asks for
    # a tool whose ``execution.taskSupport`` is "required" (2025-11-25) and otherwise lets a
    # 2026-07-28 server choose once it says the tool needs the extension. A task is followed
    # to its result within ``timeout``; ``detach`` answers with its ``TaskStatus`` instead.
    task: bool | None = None
    detach: bool = False

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("CallTool.timeout must be > 0")
        if self.detach and self.task is False:
            raise ValueError("CallTool.detach needs a task: task=False cannot detach")


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowTask(Event):
    """A caller waits for the result of task ``task_id`` (created by ``CallTool(detach=True)``,
    or by an earlier client: over HTTP a task outlives its session). Answered like the call
    that made it: its ``CallToolResult``, its error, or ``TaskCancelled``. ``progress`` asks
    for a ``ProgressUpdate`` at each status change; at ``timeout`` the caller gets
    ``RequestTimeout`` and the task goes on (``cancel=True``: it is cancelled then, and when
    the caller gives up)."""

    ticket: int
    task_id: str
    timeout: float | None = None
    progress: bool = False
    cancel: bool = False
    meta: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError("FollowTask.timeout must be > 0")
        if not isinstance(self.task_id, str) or not self.task_id:
            raise ValueError("FollowTask.task_id must be a non-empty string")


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelCall(Event):
    """The caller holding ``ticket`` gave up (task cancelled, KeyboardInterrupt).

    The machine drops its work, tells the server if the request was sent, and sends no reply.
    ``others``: the tickets of callers that gave up at the same moment (one cancel scope over
    many calls, some in flight and some queued). All of them are withdrawn before any queued
    work is promoted into a freed slot, so no request of a caller already gone is sent.
    """

    ticket: int
    others: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Close(Event):
    """Stop the client: fail all work, shut every connection down, then reply to ``ticket``."""

    ticket: int


# --- transport events (stdio) --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSpawned(Event):
    """The process asked for by ``Spawn(slot)`` is running."""

    slot: int
    generation: int
    pid: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SpawnFailed(Event):
    """``Spawn(slot)`` failed. ``missing`` is true when the executable does not exist or is
    not executable: a permanent failure that is never retried."""

    slot: int
    generation: int
    reason: str
    missing: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StdoutReceived(Event):
    """Bytes read from the server's stdout, split anywhere."""

    slot: int
    generation: int
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class StdoutClosed(Event):
    """The server's stdout reached end of file."""

    slot: int
    generation: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StderrReceived(Event):
    """Bytes read from the server's stderr."""

    slot: int
    generation: int
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessExited(Event):
    """The server process ended (``returncode`` is negative for a signal, as in Python)."""

    slot: int
    generation: int
    returncode: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteFailed(Event):
    """A ``WriteStdin`` could not be completed (broken pipe)."""

    slot: int
    generation: int
    reason: str


# --- time ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TimerFired(Event):
    """The driver's single timer went off. Feed it when ``now >= machine.next_deadline()``;
    a timer that fires late or for nothing is a no-op."""


# --- transport events (HTTP) ---------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpResponseStarted(Event):
    """The response head of ``StartHttp(stream)`` arrived. ``headers`` keep the server's order
    and spelling (names are compared case-insensitively by the machine)."""

    stream: int
    status: int
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpBodyReceived(Event):
    """A chunk of the response body of ``stream``, split anywhere."""

    stream: int
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpResponseEnded(Event):
    """The response body of ``stream`` ended cleanly."""

    stream: int


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpFailed(Event):
    """``stream`` failed: connection refused or reset, TLS error, or the body broke off.
    ``reason`` is short and holds no header value. Not fed after ``AbortHttp(stream)``."""

    stream: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerRequestAnswered(Event):
    """The application's handler answered ``HandleServerRequest(handle)``: with ``result``,
    or it raised, and ``failed`` names the exception's class (never its message: it may hold
    what the user typed). The machine chooses the JSON-RPC error the server gets."""

    handle: int
    result: Mapping[str, Any] | None = None
    failed: str | None = None

    def __post_init__(self) -> None:
        if (self.result is None) == (self.failed is None):
            raise ValueError("give exactly one of result or failed")


# --- authorization (OAuth, HTTP only) -------------------------------------------------------


# Random bytes an authorization request needs: a PKCE verifier (32) and a state (16).
ENTROPY_BYTES = 48


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizationPrepared(Event):
    """The answer to ``PrepareAuthorization``: the ``redirect_uri`` the browser step will
    deliver the authorization response to (the driver's loopback listener, or what its
    ``authorize=`` callback expects), and fresh random bytes (``ENTROPY_BYTES``, 48, from
    ``os.urandom``) for the PKCE verifier and the ``state``. Recordings keep neither."""

    redirect_uri: str
    entropy: bytes

    def __post_init__(self) -> None:
        if len(self.entropy) != ENTROPY_BYTES:
            raise ValueError(f"AuthorizationPrepared.entropy must be {ENTROPY_BYTES} random bytes")


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizationRedirected(Event):
    """The browser came back: the query parameters of the redirect to ``redirect_uri``
    (``code``, ``state``, ``iss``, or ``error``). The machine checks them; recordings keep
    only their names."""

    params: Mapping[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizationAbandoned(Event):
    """The browser step did not come back: no browser, the listener timed out, the user or
    the ``authorize=`` callback gave up. ``reason`` is short and holds no secret."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssertionSigned(Event):
    """The answer to ``SignAssertion`` or ``ObtainAssertion``: the signed JWT (RFC 7523).
    Recordings do not keep it, and its ``repr`` does not show it."""

    assertion: str

    def __repr__(self) -> str:
        return f"AssertionSigned(now={self.now!r}, assertion='[redacted]')"


# What a driver reports about what the machine asked of it: a process (stdio), an HTTP request,
# the browser step or a signature (authorization). A session takes the reports of its own
# transport only (``Transport.events``); before the first ``Connect`` nothing was asked, so the
# machine refuses all of them then (``UnexpectedEvent``). The caller's events and
# ``TimerFired`` are never refused.
PROCESS_EVENTS: frozenset[type[Event]] = frozenset(
    {
        ProcessSpawned,
        SpawnFailed,
        StdoutReceived,
        StdoutClosed,
        StderrReceived,
        ProcessExited,
        WriteFailed,
    }
)
HTTP_EVENTS: frozenset[type[Event]] = frozenset(
    {HttpResponseStarted, HttpBodyReceived, HttpResponseEnded, HttpFailed}
)
AUTHORIZATION_EVENTS: frozenset[type[Event]] = frozenset(
    {AuthorizationPrepared, AuthorizationRedirected, AuthorizationAbandoned, AssertionSigned}
)
DRIVER_REPORTS = PROCESS_EVENTS | HTTP_EVENTS | AUTHORIZATION_EVENTS


quicken(globals(), __name__)  # every event and action: quick_init.py says why
