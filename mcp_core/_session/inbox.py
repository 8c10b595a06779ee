"""What the server sends on a connection, each message to the layer it concerns.

An answer goes to the work that asked (``Calls``), the handshake (``Opening``) or the listen
stream it ends (``Subscriptions``); an answer nobody waits for any more is ignored (MCP
2025-11-25 basic/utilities/cancellation: the sender "SHOULD ignore" a late response). A
request goes to the application's handlers (``ServerRequests``), or, a ``tasks/*`` request
about a task the server asked the client to run, to that task (``client_tasks.py``). A
notification is progress, a list that changed, a resource that was updated, a subscription
acknowledged, a request the server cancelled, a URL elicitation completed, or a log line
(``notifications/message``, as a ``Log`` action on the ``mcp.server.<name>`` logger). A list
that changed drops the client's cache of it, then (for a machine built with
``list_changed=True``) becomes a ``ListChanged`` action for the application's callback.

The fast lane. Most of what a busy session receives is the result of a ``tools/call`` in
flight, so ``decoded`` looks for that first, before the message is classified: an object
with an integer ``id`` the connection waits on for a call that follows no task, a ``result``
object that is a final one (no ``task``, no ``resultType`` other than ``"complete"``), and
neither ``method`` nor ``error``. Such an answer goes straight to the call's completion, the
very step the general path (``rpc.classify``, ``received``, ``Calls.answer``) ends in, so the
actions are the same, in the same order; anything else takes the general path unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .._transport.connection import DISCOVER, INITIALIZE, Connection, Work
from .._transport.work import CallWork
from .._vocabulary.actions import Action, ListChanged, Log, ResourceUpdated
from .._wire import jsonrpc as rpc
from .calls import Calls
from .opening import Opening
from .server_requests import ServerRequests
from .subscriptions import LISTEN, Subscriptions

__all__ = ["Inbox"]

# RFC 5424 levels of notifications/message mapped to Python logging levels.
_LOG_LEVELS = {
    "debug": "DEBUG",
    "info": "INFO",
    "notice": "INFO",
    "warning": "WARNING",
    "error": "ERROR",
    "critical": "CRITICAL",
    "alert": "CRITICAL",
    "emergency": "CRITICAL",
}

# The list each list_changed notification is about (2025-11-25 server/tools, server/prompts,
# server/resources §List Changed Notification).
_LIST_CHANGES = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}


class Inbox:
    """Routes what one session's connections receive; see the module docstring."""

    __slots__ = (
        "_asks", "_calls", "_list_changed", "_log", "_opening", "_out", "_send", "_server_logger",
        "_subscriptions",
    )  # fmt: skip

    def __init__(
        self,
        calls: Calls,
        asks: ServerRequests,
        subscriptions: Subscriptions,
        opening: Opening,
        send: Callable[[Connection, Mapping[str, Any]], None],
        log: Callable[[str, str], None],
        out: list[Action],
        server_logger: str,
        list_changed: bool = False,
    ) -> None:
        self._calls = calls
        self._asks = asks
        self._subscriptions = subscriptions
        self._opening = opening
        self._send = send
        self._log = log
        self._out = out
        self._server_logger = server_logger
        self._list_changed = list_changed  # ListChanged actions wanted

    def decoded(self, connection: Connection, item: object) -> None:
        """One decoded JSON value (never a batch: the transport unpacks arrays) arrived on
        ``connection``: the fast lane, else the general path (see the module docstring)."""
        if type(item) is dict and "method" not in item and "error" not in item:
            request_id, result = item.get("id"), item.get("result")
            if type(request_id) is int and type(result) is dict:
                work = connection.requests.get(request_id)
                if (
                    type(work) is CallWork
                    and work.following is None
                    and "task" not in result
                    and result.get("resultType", "complete") == "complete"
                ):
                    del connection.requests[request_id]
                    self._calls.call_done(work, result)
                    return
        self.received(connection, rpc.classify(item))

    def received(self, connection: Connection, message: rpc.Incoming) -> None:
        """One JSON-RPC message (or an invalid one) arrived on ``connection``."""
        if isinstance(message, rpc.Response):
            self._on_response(connection, message)
        elif isinstance(message, rpc.Request):
            if self._asks.tasks.serve(connection, message):  # tasks/* about the client's tasks
                return
            answer = self._asks.answer_for(message)
            if answer is None:
                self._asks.ask_application(connection, message)
            else:
                self._send(connection, answer)
        elif isinstance(message, rpc.Notification):
            self._on_notification(connection, message)
        else:
            self._log("WARNING", f"skipped an invalid message from the server: {message.reason}")

    def _on_response(self, connection: Connection, response: rpc.Response) -> None:
        requests = connection.requests
        owner = requests.pop(response.id, None) if isinstance(response.id, int) else None
        if owner is None:
            # A late answer to a request that timed out or was cancelled: the cancellation
            # page says the sender "SHOULD ignore" it.
            self._log("DEBUG", f"ignored an answer to unknown request id {response.id!r}")
        elif isinstance(owner, Work):
            self._calls.answer(connection, owner, response)
        elif owner in (DISCOVER, INITIALIZE):
            self._opening.answered(connection, owner, response)
        elif owner == LISTEN:
            assert isinstance(response.id, int)
            self._subscriptions.ended(connection, response.id, response.error)
        elif response.error is not None:
            message = str(response.error.get("message"))[:200]
            when = "" if owner == "tasks/cancel" else " on a new session"
            self._log("WARNING", f"the server refused {owner}{when}: {message}")

    def _on_notification(self, connection: Connection, note: rpc.Notification) -> None:
        params = note.params
        if note.method == "notifications/progress":
            self._calls.progress(connection, params)
        elif note.method in _LIST_CHANGES:
            kind = _LIST_CHANGES[note.method]
            self._calls.list_changed(kind)
            if self._list_changed:  # after the drop: a callback that lists gets the new list
                self._out.append(ListChanged(kind=kind))
        elif note.method == "notifications/resources/updated":
            uri = params.get("uri")
            if isinstance(uri, str) and uri in self._calls.subscriptions:
                self._out.append(ResourceUpdated(uri=uri))
        elif note.method == "notifications/subscriptions/acknowledged":
            self._subscriptions.acknowledged(connection, params)
        elif note.method == "notifications/cancelled":
            self._asks.cancelled(connection, params.get("requestId"))
        elif note.method == "notifications/elicitation/complete":
            if not self._asks.completed(params.get("elicitationId")):
                self._log("DEBUG", "ignored a completion of an unknown URL elicitation")
        elif note.method == "notifications/message":
            level = _LOG_LEVELS.get(str(params.get("level")), "INFO")
            data = params.get("data")
            text = data if isinstance(data, str) else json.dumps(data)
            self._out.append(Log(level=level, logger=self._server_logger, message=text[:4000]))
