"""Requests the server asks the client to run as tasks (MCP 2025-11-25 basic/utilities/tasks,
experimental): the client is the receiver, the server the requestor.

Opt-in (``SessionMachine(accept_tasks=True)``): the client then declares ``tasks`` with
``list``, ``cancel`` and ``requests`` for its sampling and elicitation handlers
(``_transport/eras.py``: ``client_capabilities``), in the legacy era only. A
``sampling/createMessage`` or ``elicitation/create`` with ``params.task`` (an object) is then
answered at once with a ``CreateTaskResult`` and handed to the application's handler as a
plain request is (``HandleServerRequest``); the handler's answer is kept for the server's
``tasks/result``. Without the opt-in, or for a request the client did not declare, ``task``
is ignored and the request is answered plainly ("Receivers that do not declare the task
capability for a request type MUST process requests of that type normally").

What this store serves, on the connection the task was created on: ``tasks/get`` (the task),
``tasks/result`` (held until the handler answered; then its result with
``_meta["io.modelcontextprotocol/related-task"]``, or the JSON-RPC error the plain request
would have got), ``tasks/list`` (one page, every task of that connection) and ``tasks/cancel``
(the task ``cancelled``; the handler still runs, its answer is dropped). An unknown task id,
a task of another connection, a cursor (none is ever given out) and the cancel of a task that
ended get -32602, as the spec's Error Handling requires. Statuses go ``working`` ->
``completed`` | ``failed`` | ``cancelled``; ``input_required`` never happens: the handler
asks the person itself, nothing goes back to the server meanwhile.

The choices the spec leaves to the receiver (docs/choices.md):

- Task ids are ``task-<n>``, a counter of the machine: unique among the receiver's tasks
  without randomness (the core has none). The spec asks for unguessable ids only where no
  context binds a task to its requestor ("If context-binding is unavailable"); here every
  task is bound to the connection that created it (one server process, or one HTTP session):
  only that server reaches it, and another connection's request for it gets -32602 as an
  unknown task would. The client accepts no connections, so no one else can ask.
- ``ttl``: the requested one, kept between ``MIN_TTL_MS`` and ``MAX_TTL_MS`` (1 s and one
  hour); ``MAX_TTL_MS`` when none is requested. A task is deleted ``ttl`` after its creation,
  whatever its status (the spec allows it), and an answer that comes later is dropped.
- At most ``MAX_CLIENT_TASKS`` (64) tasks are held per session: a new one replaces the oldest
  that ended; when all of them still run, the request gets -32603 and the handler is not
  asked.
- ``pollInterval``: ``POLL_INTERVAL_MS`` (1 s) is suggested.
- Tasks are dropped with the session of their connection (``forget``: a server restarted or
  a new HTTP session never asked for them), and at ``Close``; so a task's connection is the
  one its server still listens on whenever the store answers for it.
- No ``notifications/tasks/status``: they are optional ("Requestors MUST NOT rely on" them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from .._transport.connection import Connection
from .._wire import jsonrpc as rpc

__all__ = [
    "MAX_CLIENT_TASKS",
    "MAX_TTL_MS",
    "MIN_TTL_MS",
    "POLL_INTERVAL_MS",
    "RELATED_TASK",
    "TASK_REQUESTS",
    "ClientTasks",
    "wall_time",
]

# The handlers whose requests a client may run as tasks, by the request they answer.
TASK_REQUESTS: Mapping[str, str] = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
}
# "The tasks/result operation MUST include this metadata in its response".
RELATED_TASK = "io.modelcontextprotocol/related-task"
MAX_CLIENT_TASKS = 64
MIN_TTL_MS = 1_000
MAX_TTL_MS = 3_600_000
POLL_INTERVAL_MS = 1_000

_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LAST_SECOND = 253_402_300_799.0  # 9999-12-31T23:59:59Z: four-digit years end there


class _Session(Protocol):
    """What the store needs of the machine: its time, and a way to answer the server."""

    @property
    def now(self) -> float: ...

    def send(self, connection: Connection, message: Mapping[str, Any]) -> None: ...


@dataclass(slots=True, eq=False)
class _Task:
    task_id: str
    connection: Connection
    handle: int  # the HandleServerRequest whose answer ends it
    created: float  # the machine's clock
    ttl: int  # milliseconds
    status: str = "working"
    updated: float = 0.0
    message: str | None = None  # statusMessage
    outcome: Mapping[str, Any] | None = None  # a JSON-RPC response to the request, once ended
    waiting: list[rpc.RequestId] = field(default_factory=list)  # held tasks/result requests


def wall_time(seconds: float) -> str:
    """``seconds`` since 1970 in UTC as ISO 8601 with milliseconds (RFC 3339 §5.6), e.g.
    ``2025-11-25T10:30:00.000Z``; kept within years 1970..9999."""
    seconds = min(max(seconds, 0.0), _LAST_SECOND)
    moment = _EPOCH + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ttl(requested: object) -> int:
    if isinstance(requested, bool) or not isinstance(requested, (int, float)):
        return MAX_TTL_MS
    if not math.isfinite(requested):
        return MAX_TTL_MS
    return int(min(max(requested, MIN_TTL_MS), MAX_TTL_MS))


class ClientTasks:
    """The tasks this client runs for its server; see the module docstring."""

    __slots__ = ("_by_handle", "_count", "_session", "held", "kinds", "wall_offset")

    def __init__(self, handlers: Iterable[str], accept: bool, session: _Session) -> None:
        """``accept``: the requests of the 'sampling' and 'elicitation' ``handlers`` may run
        as tasks (``kinds``; ``ValueError`` when neither is given); otherwise none, and this
        store serves nothing."""
        given = frozenset(handlers)
        self.kinds = frozenset(m for m, h in TASK_REQUESTS.items() if accept and h in given)
        if accept and not self.kinds:
            raise ValueError("accept_tasks needs a sampling or an elicitation handler")
        self.wall_offset = 0.0  # Connect's: now + wall_offset is the time of day
        self._session = session
        self.held: dict[str, _Task] = {}  # the tasks, by id, oldest first
        self._by_handle: dict[int, _Task] = {}  # the tasks whose handler has not answered
        self._count = 0

    # --- a request with a task ----------------------------------------------------------

    def create(self, connection: Connection, request: rpc.Request, handle: int) -> str:
        """'plain': not a task (answer the request itself); 'task': the task was created and
        the ``CreateTaskResult`` sent, ``handle``'s answer is the task's; 'refused': the store
        is full of running tasks and the server was sent -32603 (ask no handler)."""
        asked = request.params.get("task")
        if request.method not in self.kinds or not isinstance(asked, dict) or connection.modern:
            return "plain"
        if len(self.held) >= MAX_CLIENT_TASKS and not self._make_room():
            self._session.send(
                connection,
                rpc.error_response(
                    request.id,
                    rpc.INTERNAL_ERROR,
                    f"the client runs at most {MAX_CLIENT_TASKS} tasks at once; "
                    "send the request again once one has ended",
                ),
            )
            return "refused"
        self._count += 1
        now = self._session.now
        task = _Task(f"task-{self._count}", connection, handle, now, _ttl(asked.get("ttl")))
        task.updated = now
        self.held[task.task_id] = self._by_handle[handle] = task
        # 2025-11-25 basic/utilities/tasks §Result Retrieval: a CreateTaskResult, "as soon as
        # possible after accepting the task".
        self._session.send(connection, rpc.result_response(request.id, {"task": self._view(task)}))
        return "task"

    def _make_room(self) -> bool:
        """Delete the oldest task that ended; False when every task still runs."""
        for task in self.held.values():
            if task.status in _TERMINAL:
                del self.held[task.task_id]
                return True
        return False

    def owns(self, handle: int) -> bool:
        """Whether ``handle``'s answer is a task's (one still held and running)."""
        return handle in self._by_handle

    def answered(self, handle: int, response: Mapping[str, Any]) -> None:
        """The handler answered: ``response`` is what the plain request would have been
        sent (a result, or the error of a handler that failed). The task ends with it and
        the held ``tasks/result`` requests get it."""
        task = self._by_handle.pop(handle)
        error = response.get("error")
        task.status = "failed" if error is not None else "completed"
        task.message = str(error.get("message")) if isinstance(error, Mapping) else None
        task.outcome = response
        self._ended(task)

    # --- tasks/* from the server ---------------------------------------------------------

    def serve(self, connection: Connection, request: rpc.Request) -> bool:
        """Answer a ``tasks/*`` request about this client's tasks (or hold a
        ``tasks/result``); False when it is not one (the plain path answers it: -32601)."""
        if request.method not in _METHODS or not self.kinds or connection.modern:
            return False
        answer = self._answer(connection, request)
        if answer is not None:
            self._session.send(connection, answer)
        return True

    def _answer(self, connection: Connection, request: rpc.Request) -> dict[str, Any] | None:
        params = request.params
        if request.method == "tasks/list":
            if params.get("cursor") is not None:  # none is given out: one page holds them all
                return rpc.error_response(request.id, rpc.INVALID_PARAMS, "unknown cursor")
            mine = [self._view(t) for t in self.held.values() if t.connection is connection]
            return rpc.result_response(request.id, {"tasks": mine})
        task_id = params.get("taskId")
        task = self.held.get(task_id) if isinstance(task_id, str) else None
        if task is None or task.connection is not connection:
            # Unknown, expired, deleted, or another connection's: all the same to the asker.
            return rpc.error_response(
                request.id, rpc.INVALID_PARAMS, f"unknown task {str(task_id)[:80]!r}"
            )
        if request.method == "tasks/get":
            return rpc.result_response(request.id, self._view(task))
        if request.method == "tasks/result":
            if task.status in _TERMINAL:
                return self._outcome(task, request.id)
            task.waiting.append(request.id)  # "MUST block the response" until it ends
            return None
        if task.status in _TERMINAL:  # tasks/cancel
            return rpc.error_response(
                request.id,
                rpc.INVALID_PARAMS,
                f"cannot cancel task {task.task_id!r}: already {task.status}",
            )
        # "MUST transition the task to cancelled status before sending the response"; the
        # handler cannot be stopped from here: its answer will be dropped.
        del self._by_handle[task.handle]
        task.status, task.message = "cancelled", "cancelled by the server"
        self._ended(task)
        return rpc.result_response(request.id, self._view(task))

    def _ended(self, task: _Task) -> None:
        task.updated = self._session.now
        waiting, task.waiting = task.waiting, []
        for request_id in waiting:
            self._session.send(task.connection, self._outcome(task, request_id))

    def _outcome(self, task: _Task, request_id: rpc.RequestId) -> dict[str, Any]:
        """The answer to ``tasks/result`` for a task that ended: "exactly what the underlying
        request would have returned", the result marked with the task. A cancelled task has
        none: -32602, as a task deleted at its cancellation would get."""
        outcome = task.outcome
        if outcome is None:
            return rpc.error_response(
                request_id, rpc.INVALID_PARAMS, f"task {task.task_id!r} was cancelled"
            )
        result = outcome.get("result")
        if not isinstance(result, Mapping):
            return {**outcome, "id": request_id}
        meta = result.get("_meta")
        related = {RELATED_TASK: {"taskId": task.task_id}}
        meta = {**meta, **related} if isinstance(meta, Mapping) else related
        return rpc.result_response(request_id, {**result, "_meta": meta})

    def cancelled(self, connection: Connection, request_id: object) -> None:
        """The server gave up a ``tasks/result`` it sent: it gets no answer (2025-11-25
        basic/utilities/cancellation: receivers "SHOULD ... Not send a response")."""
        for task in self.held.values():
            if task.connection is connection and request_id in task.waiting:
                task.waiting.remove(request_id)

    # --- time and endings ----------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When the next task expires (``ttl`` after its creation), or None."""
        return min((task.created + task.ttl / 1000 for task in self.held.values()), default=None)

    def expire(self, now: float) -> None:
        """Delete the tasks past their ``ttl``; held ``tasks/result`` requests get -32602."""
        for task in [t for t in self.held.values() if t.created + t.ttl / 1000 <= now]:
            self._delete(task)
            for request_id in task.waiting:
                self._session.send(
                    task.connection,
                    rpc.error_response(
                        request_id, rpc.INVALID_PARAMS, f"task {task.task_id!r} expired"
                    ),
                )

    def forget(self, connection: Connection) -> None:
        """The connection's server is gone (or is a new session): its tasks go with it."""
        for task in [t for t in self.held.values() if t.connection is connection]:
            self._delete(task)

    def _delete(self, task: _Task) -> None:
        del self.held[task.task_id]
        self._by_handle.pop(task.handle, None)

    # --- helpers -------------------------------------------------------------------------

    def _view(self, task: _Task) -> dict[str, Any]:
        """The task as the spec's ``Task``: taskId, status, statusMessage (when there is
        one), createdAt, lastUpdatedAt, ttl and pollInterval."""
        view: dict[str, Any] = {"taskId": task.task_id, "status": task.status}
        if task.message is not None:
            view["statusMessage"] = task.message
        view["createdAt"] = wall_time(task.created + self.wall_offset)
        view["lastUpdatedAt"] = wall_time(task.updated + self.wall_offset)
        view["ttl"] = task.ttl
        view["pollInterval"] = POLL_INTERVAL_MS
        return view
