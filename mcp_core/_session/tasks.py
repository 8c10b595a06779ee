"""Tool calls that run as tasks, followed from the call to its result.

A server may run a ``tools/call`` as a task: it answers at once with a handle and the client
asks again until the task ends. Both protocol versions that have tasks are followed here,
behind one caller API (``CallTool``, ``FollowTask``, and ``tasks/*`` requests):

- 2025-11-25 basic/utilities/tasks (experimental). The requestor asks for a task with a
  ``task`` param, only when the server declares ``tasks.requests.tools.call``, and "MUST" for
  a tool whose ``execution.taskSupport`` is ``"required"``; the answer is ``{"task": ...}``.
  The client polls ``tasks/get`` at the server's ``pollInterval``; once the task is
  ``input_required`` or terminal it sends ``tasks/result``, which the server holds until the
  task ends and answers with the call's own result (the server's own requests for input
  reach the handlers meanwhile, like any other server request).
- the 2026-07-28 Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663). A request that
  declares the extension in its ``clientCapabilities`` lets the server answer
  ``resultType: "task"``; ``tasks/get`` carries the outcome itself (``result`` when
  ``completed``, ``error`` when ``failed``) or ``inputRequests`` (``input_required``), which
  the handlers answer through ``tasks/update`` (keys answered once are never asked again: the
  SEP lets a server repeat them until it has processed the update).

A followed call keeps its place in the in-flight window (a task at work is work in flight)
and its deadline covers the whole task. The client's own choices where the versions are
silent: no ``ttl`` is asked for (the server's default); polling is at the server's interval,
at least ``MIN_POLL`` and ``DEFAULT_POLL`` when the server names none. A caller that gives
up, or a deadline, cancels the task it created with ``tasks/cancel``, never
``notifications/cancelled`` (both versions say so); a caller that only attached to a task
(``FollowTask``) leaves it running unless it asked otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._config.spec import Spec
from .._transport.connection import Connection
from .._transport.eras import Handshake, modern_meta, server_extensions
from .._transport.work import CallWork, Following, Work
from .._vocabulary.actions import Action, ProgressUpdate
from .._vocabulary.errors import (
    InvalidArguments,
    InvalidResponse,
    McpError,
    MissingClientCapability,
    RequestTimeout,
    TaskCancelled,
)
from .._vocabulary.events import ServerRequestAnswered
from .._vocabulary.phases import Phase
from .._vocabulary.status import Status
from .._vocabulary.tasks import TaskStatus
from .._wire import jsonrpc as rpc
from .results import rpc_error
from .server_requests import ServerRequests, handler_failed

__all__ = [
    "DEFAULT_POLL",
    "MIN_POLL",
    "TASKS_EXTENSION",
    "Tasks",
    "lists_tools_first",
    "missing_for_tasks",
    "tools_first",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
DEFAULT_POLL = 1.0  # seconds between polls when the server names no interval
MIN_POLL = 0.05  # never faster than this, whatever the server asks

# What a 2025-11-25 server must declare for each task request (basic/utilities/tasks
# §Capabilities); tasks/get and tasks/result need only that it has tasks at all.
_LEGACY_NEEDS = {
    "tools/call": ("requests", "tools", "call"),
    "tasks/list": ("list",),
    "tasks/cancel": ("cancel",),
    "tasks/get": (),
    "tasks/result": (),
}
_ENDED = ("completed", "failed", "cancelled")  # the terminal statuses of both versions
# SEP-2663 removed these two: a 2026-07-28 server has no such method.
_LEGACY_ONLY = ("tasks/list", "tasks/result")


def missing_for_tasks(handshake: Any, method: str) -> str | None:
    """The capability a task request (``method``; ``tools/call`` for one run as a task) needs
    that the server of ``handshake`` did not declare, or None."""
    if handshake.era == "modern":
        if method in _LEGACY_ONLY:
            return f"{method} (2025-11-25 only)"
        if method == "tools/call" or TASKS_EXTENSION in server_extensions(handshake):
            return None  # a modern server answers a declared call as it likes
        return f"extensions.{TASKS_EXTENSION}"
    declared: object = handshake.capabilities.get("tasks")
    for key in _LEGACY_NEEDS[method]:
        declared = declared.get(key) if isinstance(declared, Mapping) else None
    return None if isinstance(declared, Mapping) else ".".join(("tasks", *_LEGACY_NEEDS[method]))


def lists_tools_first(status: Status) -> bool:
    """Whether a driver should list the tools before a ``CallTool(task=None)``: a 2025-11-25
    server that runs tool calls as tasks, with no tool list at hand to tell which tools
    require one (the call would fail, 2025-11-25 server/tools §Tool Execution).
    ``SessionMachine.lists_tools_first`` says the same without building a status."""
    if status.era != "legacy" or status.tools is not None or status.capabilities is None:
        return False
    handshake = Handshake("legacy", "", None, status.capabilities)
    return missing_for_tasks(handshake, "tools/call") is None


def tools_first(tools: object, connections: Sequence[Connection]) -> bool:
    """``lists_tools_first`` from what its status would be made of (``snapshot.py``): the
    tool list and the first ready connection's handshake."""
    ready = next((c.handshake for c in connections if c.phase is Phase.READY), None)
    if tools is not None or ready is None or ready.era != "legacy" or not ready.known:
        return False
    return missing_for_tasks(ready, "tools/call") is None


def task_support(tool: Any) -> str:
    """2025-11-25 server/tools: a listed tool's ``execution.taskSupport`` (``"forbidden"``
    when absent, the default); ``"unknown"`` for a tool not listed."""
    if tool is None:
        return "unknown"
    execution = tool.raw.get("execution")
    support = execution.get("taskSupport") if isinstance(execution, Mapping) else None
    return support if isinstance(support, str) else "forbidden"


def required_by(tool: Any) -> bool:
    """2025-11-25 server/tools: a tool whose ``execution.taskSupport`` is ``"required"``."""
    return task_support(tool) == "required"


def unasked_task(name: str, tool: Any, legacy: bool) -> InvalidArguments | None:
    """2025-11-25 server/tools §Tool Execution: for a tool whose taskSupport is forbidden (or
    absent), "clients MUST NOT attempt to invoke the tool as a task". Refused before sending
    where the tool was listed by a legacy server (a 2026-07-28 server decides itself)."""
    support = task_support(tool)
    if not legacy or support in ("optional", "required", "unknown"):
        return None
    return InvalidArguments(
        "tools/call",
        "task",
        f"is asked of tool {name[:100]!r}, which does not run as a task (its "
        f"execution.taskSupport is {support[:40]!r})",
        "call it plainly: call_tool without task=True, not start_tool",
    )


class Tasks:
    """The calls of one session that follow a task; see the module docstring."""

    __slots__ = (
        "_asks", "_completed", "_connections", "_finish", "_out", "_session", "_spec",
        "capabilities", "followed",
    )  # fmt: skip

    def __init__(
        self,
        spec: Spec,
        connections: Sequence[Connection],
        asks: ServerRequests,
        capabilities: Mapping[str, Any],
        session: Any,
        out: list[Action],
        finish: Callable[..., None],
        completed: Callable[[CallWork, Mapping[str, Any]], None],
    ) -> None:
        self._spec = spec
        self._connections = connections
        self._asks = asks
        self._session = session
        self._out = out
        self._finish = finish
        self._completed = completed
        self.followed: dict[int, CallWork] = {}  # followed calls, by ticket (some may be gone)
        extensions = dict(capabilities.get("extensions") or {})
        # 2026-07-28 requests that declare the extension (SEP-2133: per request).
        self.capabilities = {**capabilities, "extensions": {**extensions, TASKS_EXTENSION: {}}}

    # --- sending ---------------------------------------------------------------------------

    def meta(self, connection: Connection, work: Work, log_level: str | None) -> dict[str, Any]:
        """The ``_meta`` of a task request: the caller's entries, and in 2026-07-28 the
        declaration of the extension with the keys every request carries."""
        meta: dict[str, Any] = dict(work.meta) if work.meta else {}
        if connection.modern:
            meta.update(modern_meta(self.capabilities, self._spec.client_info, log_level))
        return meta

    def augment(self, connection: Connection, work: CallWork, required: bool) -> dict[str, Any]:
        """The ``task`` param of a 2025-11-25 call that asks for a task ({} otherwise): asked
        for when the caller wants one, or (``task=None``) when the tool is ``required`` (its
        ``execution.taskSupport``) and the server runs tool calls as tasks."""
        if connection.modern or work.task is False:
            return {}
        assert connection.handshake is not None
        # Asked for by the caller (admission refused it where the server cannot), or needed.
        work.declares_tasks = bool(
            work.task
            or work.detach
            or (required and missing_for_tasks(connection.handshake, "tools/call") is None)
        )
        return {"task": {}} if work.declares_tasks else {}

    def poll(self, connection: Connection, work: CallWork, log_level: str | None) -> None:
        """Send what a followed call asks next: 2025-11-25 ``tasks/result`` once the task
        needs input or has ended, else (and in 2026-07-28) ``tasks/get``."""
        following = work.following
        assert following is not None
        following.poll_at = None
        method = "tasks/get"
        if not connection.modern and following.status in ("input_required", "completed", "failed"):
            method = "tasks/result"
        self._send(connection, work, method, {"taskId": following.task_id}, log_level)

    def _send(
        self,
        connection: Connection,
        work: CallWork,
        method: str,
        params: dict[str, Any],
        log_level: str | None,
    ) -> None:
        meta = self.meta(connection, work, log_level)
        work.method = method
        work.sent_at = self._session.now
        work.request_id = self._session.request(connection, method, params, work, meta)

    # --- the server's answers ----------------------------------------------------------------

    def begin(self, connection: Connection, work: CallWork, result: Mapping[str, Any]) -> None:
        """The call was answered with a task: follow it (or, detached, answer with it)."""
        wire = result if connection.modern else result.get("task")
        try:
            status = TaskStatus.from_wire(wire)
        except ValueError as exc:
            self._finish(work, error=InvalidResponse("tools/call", str(exc)))
            return
        if work.detach:
            self._finish(work, status)
            return
        work.following = Following(status.task_id, self._interval(status), owned=True)
        work.headers = None  # the call's Mcp-Param-* headers are not the task requests'
        self.followed[work.ticket] = work
        self._update(connection, work, status)

    def follow(self, work: CallWork, task_id: str, owned: bool) -> None:
        """A caller attaches to a task by id: polled as soon as the call has its place."""
        work.following = Following(task_id, DEFAULT_POLL, owned=owned)
        self.followed[work.ticket] = work

    def is_task(self, connection: Connection, work: CallWork, result: Mapping[str, Any]) -> bool:
        """The answer to a ``tools/call`` is a task handle (2026-07-28: ``resultType:
        "task"``; 2025-11-25: ``{"task": ...}`` to a call that asked for one)."""
        if connection.modern:
            return result.get("resultType") == "task"
        return "task" in result and work.declares_tasks

    def retry_declared(self, work: CallWork, error: Mapping[str, Any]) -> bool:
        """A 2026-07-28 server refused an undeclared call with -32021 naming the extension
        (a tool that only runs as a task): declare it and send the call again, once."""
        if work.declares_tasks or work.task is False or error.get("code") != -32021:
            return False
        if TASKS_EXTENSION not in MissingClientCapability("", error.get("data")).extensions:
            return False
        work.declares_tasks = True
        return True

    def answer(self, connection: Connection, work: CallWork, response: rpc.Response) -> None:
        """The server answered a followed call's ``tasks/get``, ``tasks/result`` or
        ``tasks/update``."""
        following = work.following
        assert following is not None
        if response.error is not None:
            self._finish(work, error=rpc_error(response.error))
            return
        result = response.result
        assert result is not None
        if work.method == "tasks/result":
            self._completed(work, result)
        elif work.method == "tasks/update":
            self._schedule(work)
        else:
            try:
                status = TaskStatus.from_wire(result)
            except ValueError as exc:
                self._finish(work, error=InvalidResponse("tasks/get", str(exc)))
                return
            self._update(connection, work, status)

    def _update(self, connection: Connection, work: CallWork, status: TaskStatus) -> None:
        following = work.following
        assert following is not None
        if status.poll_interval is not None:
            following.poll_interval = self._interval(status)
        # What changed: the server's new message, else the status itself. A task that ends
        # is reported by its status last, after a message the poll had not seen yet (the
        # server may end a task without changing the message of its last stage).
        said: list[str] = []
        if (status.status, status.message) != (following.status, following.message):
            if status.message and status.message != following.message:
                said.append(status.message)
            if not said or (status.status != following.status and status.status in _ENDED):
                said.append(status.status.replace("_", " "))
        following.status, following.message = status.status, status.message
        for message in said:
            following.changes += 1
            if work.progress:
                self._out.append(
                    ProgressUpdate(
                        ticket=work.ticket, progress=float(following.changes), message=message
                    )
                )
        if status.status == "cancelled":
            self._finish(work, error=TaskCancelled(status.task_id, status.message))
        elif not connection.modern:
            if status.status == "working":
                self._schedule(work)
            else:
                self.poll(connection, work, None)  # tasks/result
        elif status.status == "completed":
            done = status.raw.get("result")
            if isinstance(done, Mapping):
                self._completed(work, done)
            else:
                self._finish(work, error=InvalidResponse("tasks/get", "completed without result"))
        elif status.status == "failed":
            failure = status.raw.get("error")
            if isinstance(failure, Mapping):
                self._finish(work, error=rpc_error(failure))
            else:
                self._finish(work, error=InvalidResponse("tasks/get", "failed without error"))
        elif status.status == "input_required":
            self._ask(work, status.raw.get("inputRequests"))
        else:
            self._schedule(work)

    def _ask(self, work: CallWork, requests: object) -> None:
        """SEP-2663 ``input_required``: each input request the handlers have not answered
        yet goes to them, like the standalone request it stands for."""
        following = work.following
        assert following is not None
        if not isinstance(requests, Mapping):
            self._finish(work, error=InvalidResponse("tasks/get", "inputRequests is no object"))
            return
        fresh = {
            key: ask
            for key, ask in requests.items()
            if key not in following.answered and key not in following.awaiting
        }
        problem = self._asks.input_problem(fresh)
        if problem is not None:
            self._finish(work, error=InvalidResponse("tasks/get", problem))
            return
        for key, ask in fresh.items():
            following.awaiting.add(key)
            params = ask.get("params")
            self._asks.ask_input(
                work.ticket, key, ask["method"], params if isinstance(params, dict) else {}
            )
        if not following.awaiting:
            self._schedule(work)  # all answered: the server has not read the update yet

    def input_answered(self, work: CallWork, key: str, event: ServerRequestAnswered) -> None:
        """A handler answered one of the task's input requests; once none is owed, the
        answers go to the server in one ``tasks/update``."""
        following = work.following
        # Each input is asked once and its answer comes once (``ServerRequests``).
        assert following is not None and work.slot is not None and key in following.awaiting
        if event.result is None:
            self._finish(work, error=handler_failed(event))
            return
        following.awaiting.discard(key)
        following.answered.add(key)
        following.responses[key] = dict(event.result)
        if not following.awaiting:
            responses, following.responses = following.responses, {}
            params = {"taskId": following.task_id, "inputResponses": responses}
            self._send(self._connections[work.slot], work, "tasks/update", params, None)

    # --- time, and giving up -----------------------------------------------------------------

    def _interval(self, status: TaskStatus) -> float:
        interval = status.poll_interval
        return DEFAULT_POLL if interval is None else max(MIN_POLL, interval)

    def _schedule(self, work: CallWork) -> None:
        following = work.following
        assert following is not None
        following.poll_at = self._session.now + following.poll_interval

    def next_deadline(self, works: Mapping[int, Work]) -> float | None:
        """The earliest poll due among the followed calls still in ``works``."""
        best = None
        for ticket, work in list(self.followed.items()):
            if works.get(ticket) is not work:
                del self.followed[ticket]  # answered, withdrawn or lost
                continue
            assert work.following is not None
            at = work.following.poll_at
            if at is not None and (best is None or at < best):
                best = at
        return best

    def due(self, works: Mapping[int, Work], now: float) -> list[CallWork]:
        """The followed calls whose next poll is due, in ticket order."""
        self.next_deadline(works)  # forget the calls that are gone
        return [
            work
            for _, work in sorted(self.followed.items())
            if work.following is not None
            and work.following.poll_at is not None
            and work.following.poll_at <= now
        ]

    def withdraw(self, work: CallWork) -> None:
        """The caller gave up (or its deadline came): stop waiting for the poll under way,
        and cancel the task the call owns with ``tasks/cancel`` (2025-11-25
        basic/utilities/tasks and SEP-2663: never ``notifications/cancelled`` for a task)."""
        following = work.following
        assert following is not None and work.slot is not None
        connection = self._connections[work.slot]
        request_id = work.request_id
        if request_id is not None and connection.requests.pop(request_id, None) is not None:
            self._session.cancel(connection, request_id)
        if following.owned and connection.handshake is not None:
            params = {"taskId": following.task_id}
            meta = self.meta(connection, work, None)
            self._session.request(connection, "tasks/cancel", params, "tasks/cancel", meta)

    def timeout_error(self, work: CallWork) -> McpError:
        following = work.following
        assert following is not None
        what = f"task {following.task_id[:100]!r} (status {following.status})"
        then = (
            "it was cancelled on the server"
            if following.owned
            else "it goes on: attach again with its id to wait longer"
        )
        return RequestTimeout(
            f"{what} did not finish within {work.timeout:g} s; {then} (raise timeout= if the "
            "tool is slow)"
        )
