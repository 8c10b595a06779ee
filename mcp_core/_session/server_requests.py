"""Requests from the server to the client, and the application's answers to them.

A server may ask the client something: ``ping`` (answered here at once), or
``elicitation/create``, ``sampling/createMessage`` and ``roots/list``, which reach the
application as ``HandleServerRequest`` only when it gave a handler for them (and the client
declared the capability); anything else gets -32601. In the 2026-07-28 era the same questions
can come inside a result (``input_required``): the session asks the same handlers through
``ask`` and gets the answers back from ``answered``.

Sampling with tools (2025-11-25) is checked in ``sampling.py``: a request with tools the
client did not declare, or a malformed one, gets -32602 and never reaches the handler; a
handler's answer the server cannot take fails as a handler that raised.

Bookkeeping kept here: which handle is which server request on which connection (an answer
for a connection that is gone is dropped: it must not reach its successor), and the URL-mode
elicitations the server may later report complete (2025-11-25). A request the server asks the
client to run as a task (2025-11-25 basic/utilities/tasks, when the client declared it) goes
to the handler the same way; its answer goes to the task (``client_tasks.py``), not back on
the request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._transport.connection import Connection
from .._vocabulary.actions import Action, ElicitationComplete, HandleServerRequest
from .._vocabulary.errors import JsonRpcError
from .._vocabulary.events import ServerRequestAnswered
from .._wire import jsonrpc as rpc
from .._wire.json import unsendable
from .client_tasks import ClientTasks
from .sampling import answer_problem, request_problem

__all__ = [
    "ELICITATION_MODES",
    "HANDLED_REQUESTS",
    "MAX_ELICITATIONS",
    "ServerRequests",
    "answer_response",
    "answered_requests",
    "checked_answer",
    "handler_failed",
]

# Server requests an application may answer, by the capability that announces the handler.
HANDLED_REQUESTS: Mapping[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}

ELICITATION_MODES = frozenset({"form", "url"})

# URL elicitations remembered until the server reports them complete; the oldest is forgotten
# beyond this (a server that never completes them must not grow our memory).
MAX_ELICITATIONS = 64


def answered_requests(
    handlers: Iterable[str], elicitation_modes: Iterable[str], sampling_tools: bool = False
) -> tuple[frozenset[str], frozenset[str]]:
    """The handlers and elicitation modes a machine is given, checked: ``ValueError`` for an
    unknown handler, an unknown or empty set of modes, modes other than form alone without
    an 'elicitation' handler, or ``sampling_tools`` without a 'sampling' handler."""
    handled = frozenset(handlers)
    unknown = handled - set(HANDLED_REQUESTS.values())
    if unknown:
        raise ValueError(f"unknown handlers {sorted(unknown)}; known: elicitation, sampling, roots")
    modes = frozenset(elicitation_modes)
    if not modes or modes - ELICITATION_MODES:
        raise ValueError(f"elicitation_modes must be 'form', 'url' or both, got {sorted(modes)}")
    if modes != {"form"} and "elicitation" not in handled:
        raise ValueError("elicitation_modes needs an elicitation handler")
    if sampling_tools and "sampling" not in handled:
        raise ValueError("sampling_tools needs a sampling handler")
    return handled, modes


class ServerRequests:
    """The server's questions in flight to the application, by handle."""

    __slots__ = (
        "_asked", "_elicitations", "_inputs", "_next_handle", "_out", "_sampling", "handlers",
        "modes", "sampling_tools", "tasks",
    )  # fmt: skip

    def __init__(
        self,
        handlers: Iterable[str],
        modes: Iterable[str],
        out: list[Action],
        sampling_tools: bool = False,
        *,
        tasks: ClientTasks,
    ) -> None:
        self.handlers = frozenset(handlers)
        self.tasks = tasks  # the requests the server asked to run as tasks
        self.modes = frozenset(modes)
        self.sampling_tools = sampling_tools
        self._out = out
        self._next_handle = 0
        self._asked: dict[int, tuple[Connection, rpc.RequestId]] = {}  # handle -> who asked
        self._inputs: dict[int, tuple[int, str]] = {}  # handle -> (ticket, input key)
        # handle -> the params of a sampling/createMessage, whose answer is checked by them
        self._sampling: dict[int, Mapping[str, Any]] = {}
        # URL elicitations we were asked for and not yet told are complete (2025-11-25: the
        # client "MUST ignore notifications referencing unknown or already-completed IDs").
        self._elicitations: dict[str, None] = {}

    def answer_for(self, request: rpc.Request) -> dict[str, Any] | None:
        """Ask the application (``HandleServerRequest``) and return None, or return the
        response to write at once."""
        if request.method == "ping":
            # Legacy basic/utilities/ping: the receiver "MUST respond promptly with an empty
            # result".
            return rpc.result_response(request.id, {})
        mode = elicitation_mode(request.params)
        if request.method == "elicitation/create" and mode not in self.modes:
            # 2025-11-25 client/elicitation: a mode the client did not declare "MUST" get
            # -32602 (a request without `mode` is form mode).
            return rpc.error_response(
                request.id,
                rpc.INVALID_PARAMS,
                f"this client does not take {str(mode)[:20]!r} elicitation; it declared "
                f"{', '.join(sorted(self.modes))}",
            )
        if HANDLED_REQUESTS.get(request.method) not in self.handlers:
            # No roots/sampling/elicitation handler is declared, so: method not found
            # (the roots page of every legacy version names -32601 for this case).
            return rpc.error_response(
                request.id,
                rpc.METHOD_NOT_FOUND,
                f"Method not found: this client has no handler for {request.method}",
            )
        if request.method == "sampling/createMessage":
            problem = request_problem(request.params, self.sampling_tools)
            if problem is not None:
                return rpc.error_response(request.id, rpc.INVALID_PARAMS, problem)
        return None

    def ask_application(self, connection: Connection, request: rpc.Request) -> None:
        """Hand a request ``answer_for`` kept to the application's handler: its answer goes
        back on the request, or to the task the request asked for (then created here)."""
        handle = self._handle()
        taken = self.tasks.create(connection, request, handle)
        if taken == "refused":
            return
        elicitation_id = request.params.get("elicitationId")
        if request.method == "elicitation/create" and isinstance(elicitation_id, str):
            self.expect_completion(elicitation_id)  # a URL-mode request
        if taken == "plain":
            self._asked[handle] = (connection, request.id)
        self._hand_over(request.method, request.params)

    def ask_input(self, ticket: int, key: str, method: str, params: Mapping[str, Any]) -> None:
        """2026-07-28 ``input_required``: ask the handler for one input of a call."""
        self._inputs[self._handle()] = (ticket, key)
        self._hand_over(method, params)

    def _hand_over(self, method: str, params: Mapping[str, Any]) -> None:
        if method == "sampling/createMessage":
            self._sampling[self._next_handle] = params
        self._out.append(
            HandleServerRequest(handle=self._next_handle, method=method, params=params)
        )

    def answered(
        self, event: ServerRequestAnswered
    ) -> tuple[
        tuple[Connection, rpc.RequestId] | tuple[int, str] | None,
        ServerRequestAnswered,
        str | None,
    ]:
        """Whom the answer is for (the connection and request id that asked, the (ticket,
        input key) of a call's input round, or None: dropped, unknown, or a task's, which
        gets it here), the answer checked (``checked_answer``; a sampling answer by
        ``sampling.answer_problem`` too), and a warning to log when it was refused."""
        params = self._sampling.pop(event.handle, None)
        found = self._inputs.pop(event.handle, None)
        asker = found if found is not None else self._asked.pop(event.handle, None)
        task = asker is None and self.tasks.owns(event.handle)
        if asker is None and not task:
            return None, event, None
        event, warning = checked_answer(event)
        problem = None
        if params is not None and event.result is not None:
            problem = answer_problem(event.result, params)
        if problem is not None:
            warning = f"the sampling handler's answer was refused: {problem}"
            event = ServerRequestAnswered(
                now=event.now, handle=event.handle, failed=f"its answer was refused ({problem})"
            )
        if task:  # kept for tasks/result: what the request itself would have been sent
            self.tasks.answered(event.handle, answer_response(0, event))
        return asker, event, warning

    def cancelled(self, connection: Connection, request_id: object) -> None:
        """Legacy basic/utilities/cancellation: the server gave up a request it sent us; its
        answer "SHOULD" not be sent. The handler still runs; its answer is dropped."""
        for handle, (asker, asked_id) in list(self._asked.items()):
            if asker is connection and asked_id == request_id:
                del self._asked[handle]
        self.tasks.cancelled(connection, request_id)

    def forget(self, connection: Connection) -> None:
        """The connection that asked is gone: an answer must not reach its successor."""
        for handle in [h for h, (asker, _) in self._asked.items() if asker is connection]:
            del self._asked[handle]
        self.tasks.forget(connection)

    def expect_completion(self, elicitation_id: str) -> None:
        """Remember a URL elicitation until the server reports it complete (bounded)."""
        self._elicitations.pop(elicitation_id, None)
        self._elicitations[elicitation_id] = None
        if len(self._elicitations) > MAX_ELICITATIONS:
            del self._elicitations[next(iter(self._elicitations))]

    def completed(self, elicitation_id: object) -> bool:
        """2025-11-25 client/elicitation: only an elicitation we were asked for and not yet
        told of reaches the application (``ElicitationComplete``); the client "MUST ignore"
        any other. False when ignored."""
        if isinstance(elicitation_id, str) and elicitation_id in self._elicitations:
            del self._elicitations[elicitation_id]
            self._out.append(ElicitationComplete(elicitation_id=elicitation_id))
            return True
        return False

    def input_problem(self, requests: Mapping[str, Any]) -> str | None:
        """Why the ``inputRequests`` of an ``input_required`` result cannot be served."""
        for ask in requests.values():
            method = ask.get("method") if isinstance(ask, dict) else None
            params = ask.get("params") if isinstance(ask, dict) else None
            params = params if isinstance(params, dict) else {}
            mode = elicitation_mode(params)
            if HANDLED_REQUESTS.get(str(method)) not in self.handlers:
                return f"the server asked for {str(method)[:60]!r}, which was not declared"
            if method == "elicitation/create" and mode not in self.modes:
                # 2026-07-28: the server "MUST NOT" ask for what the request did not
                # declare in its clientCapabilities.
                return f"the server asked for {str(mode)[:20]!r} elicitation, not declared"
            if method == "sampling/createMessage":
                problem = request_problem(params, self.sampling_tools)
                if problem is not None:
                    return f"the server's sampling request: {problem}"
        return None

    def _handle(self) -> int:
        self._next_handle += 1
        return self._next_handle


def checked_answer(event: ServerRequestAnswered) -> tuple[ServerRequestAnswered, str | None]:
    """The application's answer, and a warning to log when its result is no JSON: such an
    answer fails like a handler that raised (the server is answered with an error, and the
    application is told which value it was)."""
    found = None if event.result is None else unsendable(event.result)
    if found is None:
        return event, None
    path, problem = found
    failed = ServerRequestAnswered(
        now=event.now, handle=event.handle, failed=f"its answer is not JSON ({problem})"
    )
    return failed, f"a server request's handler answered with result{path} {problem}"


def answer_response(request_id: rpc.RequestId, event: ServerRequestAnswered) -> dict[str, Any]:
    """The response to the server's request: the handler's result, or, when it failed, an
    error on our side of the request (-32603)."""
    if event.result is not None:
        return rpc.result_response(request_id, event.result)
    return rpc.error_response(request_id, rpc.INTERNAL_ERROR, handler_failed(event).message)


def handler_failed(event: ServerRequestAnswered) -> JsonRpcError:
    """What a handler that failed (``event.failed``) means for the server's request: an error
    on our side of it (-32603), also the error of a call whose input it was to provide."""
    return JsonRpcError(rpc.INTERNAL_ERROR, f"the client's handler failed: {event.failed}", None)


def elicitation_mode(params: Mapping[str, Any]) -> str | None:
    """An elicitation request's mode (None if it is not a string); "Clients MUST treat
    requests without a mode field as form mode" (2025-11-25 client/elicitation)."""
    mode = params.get("mode", "form")
    return mode if isinstance(mode, str) else None
