"""Caller work, from admission to its single reply: ``tools/call`` and ``tools/list``.

A call is checked against its price (SPEC §10), admitted (``_admission.py``), sent on a ready
connection, and answered: with its result, a JSON-RPC error, ``InvalidResponse`` for a result
it cannot read, ``RequestTimeout`` at its deadline (the request is cancelled on the wire),
or the connection's failure. Progress pushes the deadline out, never past
``max_call_timeout`` from admission. A tool list is paged through ``nextCursor`` and cached
until the server says it changed; a 2026-07-28 ``input_required`` result is served by the
application's handlers and retried with their answers.

Requests go out through the session (``Requester``), which numbers them and hands them to
the transport.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from . import _jsonrpc as rpc
from ._actions import Action, ProgressUpdate, Reply
from ._admission import Admission
from ._connection import Connection, Requests, Work
from ._eras import modern_meta
from ._errors import (
    Busy,
    InvalidResponse,
    JsonRpcError,
    McpError,
    RequestTimeout,
    UnmeteredCall,
    UrlElicitationRequired,
)
from ._events import CallTool, ListTools, ServerRequestAnswered
from ._models import Tool
from ._phases import Phase
from ._results import call_result, input_requests, rpc_error, tools_page
from ._server_requests import ServerRequests
from ._spec import Spec

__all__ = ["Calls", "Requester"]


class Requester(Requests, Protocol):
    """What caller work needs of the session."""

    @property
    def state(self) -> str: ...

    @property
    def next_request_id(self) -> int:
        """The id the next request will get (a call's progress token is its request id)."""

    def refusal(self) -> McpError | None:
        """Why no work can be admitted now, or None."""

    def send(self, connection: Connection, message: Mapping[str, Any]) -> None:
        """Send a message that expects no answer."""

    def cancel(self, connection: Connection, request_id: int) -> bool:
        """Stop waiting for ``request_id`` on the transport; True: tell the server too."""


class Calls:
    """The caller work of one session; see the module docstring."""

    def __init__(
        self,
        spec: Spec,
        connections: Sequence[Connection],
        admission: Admission,
        asks: ServerRequests,
        capabilities: Mapping[str, Any],
        session: Requester,
        out: list[Action],
    ) -> None:
        self._spec = spec
        self._connections = connections
        self._admission = admission
        self._asks = asks
        self._capabilities = capabilities
        self._session = session
        self._out = out
        self.tools: list[Tool] | None = None  # the cached tool list, until it changes
        self._tools_generation = 0

    def tools_changed(self) -> None:
        """notifications/tools/list_changed: the cache is stale, and so is any list under way."""
        self.tools = None
        self._tools_generation += 1

    def cancel(self, ticket: int) -> None:
        """The caller gave up: drop its work, tell the server if the request was sent."""
        work = self._admission.works.pop(ticket, None)
        if work is not None:
            self._withdraw(work, "the caller cancelled the request")
            self.pump()

    def expire(self, now: float) -> None:
        """Answer every piece of work whose deadline has come with ``RequestTimeout``."""
        for work in self._admission.expired(now):
            self._withdraw(work, "timed out")
            self._reply(
                work.ticket,
                error=RequestTimeout(
                    f"{work.method} {work.name or ''} got no answer within {work.timeout:g} s; "
                    "the server was told to cancel it (raise timeout= or call_timeout if the "
                    "tool is slow)".replace("  ", " ")
                ),
            )

    def connection_failed(self, connection: Connection, error: McpError) -> None:
        """Answer with ``error`` the work the failed connection carried (sent, or between
        input rounds), and all work if no connection is ready any more."""
        for owner in list(connection.requests.values()):
            if isinstance(owner, Work):
                del self._admission.works[owner.ticket]
                self._admission.release(owner)
                self._reply(owner.ticket, error=error)
        connection.requests.clear()
        for work in [w for w in self._admission.works.values() if w.slot == connection.index]:
            del self._admission.works[work.ticket]  # between input rounds: nothing on the wire
            self._admission.release(work)
            self._reply(work.ticket, error=error)
        if not any(c.phase is Phase.READY for c in self._connections):
            self.fail_all(error)

    def fail_all(self, error: McpError) -> None:
        """Answer every piece of work with ``error`` (in ticket order)."""
        for work in self.drain():
            self._reply(work.ticket, error=error)

    def list_tools(self, event: ListTools) -> None:
        """A caller asks for the tool list: from the cache, or from the server."""
        if self.tools is not None and not event.refresh and self._session.state == "ready":
            self._reply(event.ticket, list(self.tools))
            return
        self._admit(
            Work(
                ticket=event.ticket,
                method="tools/list",
                admitted_at=self._session.now,
                timeout=event.timeout or self._spec.call_timeout,
                deadline=self._session.now + (event.timeout or self._spec.call_timeout),
                generation=self._tools_generation,
                tools=[],
                cursors=set(),
            )
        )

    def call_tool(self, event: CallTool) -> None:
        """A caller calls a tool."""
        timeout = event.timeout or self._spec.call_timeout
        facts = event.reservation
        work = Work(
            ticket=event.ticket,
            method="tools/call",
            admitted_at=self._session.now,
            timeout=timeout,
            deadline=self._session.now + timeout,
            name=event.name,
            arguments=event.arguments,
            progress=event.progress,
            meta=event.meta,
            # Every unused reservation handed to a call is settled exactly once by the client.
            reserved=facts is not None and facts.get("fresh") is True,
        )
        refusal = self._unmetered(event.name, facts)
        if refusal is not None:
            self._admission.settle(work, commit=False)
            self._reply(event.ticket, error=refusal)
            return
        if event.name not in self._spec.prices and work.reserved:
            self._admission.settle(work, commit=False)  # a free tool needs no money back
        self._admit(work)

    def _unmetered(self, tool: str, facts: Mapping[str, Any] | None) -> UnmeteredCall | None:
        """SPEC §10: a priced tool without a valid reservation is refused before sending."""
        price = self._spec.prices.get(tool)
        if price is None:
            return None
        if facts is None:
            return UnmeteredCall(tool, f"it costs {price}")
        if facts.get("fresh") is not True:
            return UnmeteredCall(tool, "this reservation was already used")
        if facts.get("server") != self._spec.name or facts.get("tool") != tool:
            return UnmeteredCall(
                tool,
                f"the reservation is for {facts.get('tool')!r} on {facts.get('server')!r}",
            )
        reserved = facts.get("price")
        if not isinstance(reserved, int) or reserved < price:
            return UnmeteredCall(tool, f"{reserved} was reserved but it costs {price}")
        return None

    def progress(self, connection: Connection, params: Mapping[str, Any]) -> None:
        """notifications/progress for a request on ``connection``."""
        token, progress = params.get("progressToken"), params.get("progress")
        work = connection.requests.get(token) if isinstance(token, int) else None
        if not isinstance(work, Work) or not isinstance(progress, int | float):
            return  # progress for a finished or unknown request: ignored, as the spec allows
        # 2025-03-26 basic/lifecycle §Timeouts: progress MAY reset the timeout clock, but
        # a maximum timeout SHOULD always be enforced.
        work.deadline = min(
            self._session.now + work.timeout, work.admitted_at + self._spec.max_call_timeout
        )
        self._admission.arm(work)
        if work.progress:
            total = params.get("total")
            message = params.get("message")
            self._out.append(
                ProgressUpdate(
                    ticket=work.ticket,
                    progress=float(progress),
                    total=float(total) if isinstance(total, int | float) else None,
                    message=message if isinstance(message, str) else None,
                )
            )

    def answer(self, connection: Connection, work: Work, response: rpc.Response) -> None:
        """The server answered ``work``'s request."""
        if response.error is not None:
            error = rpc_error(response.error)
            if isinstance(error, UrlElicitationRequired):
                for elicitation in error.elicitations:
                    self._asks.expect_completion(elicitation["elicitationId"])
            self.finish(work, error=error)
            return
        result = response.result
        assert result is not None
        result_type = result.get("resultType", "complete")
        if result_type == "input_required" and work.method == "tools/call":
            self._on_input_required(connection, work, result)
        elif result_type != "complete":
            # "MUST treat an unrecognized value as invalid" (2026-07-28 basic/index).
            self.finish(
                work,
                error=InvalidResponse(
                    work.method,
                    f"resultType {str(result_type)[:40]!r} is not one this client knows",
                ),
            )
        elif work.method == "tools/call":
            value, problem = call_result(result)
            self.finish(work, value, error=problem)
        else:
            self._on_tools_page(connection, work, result)

    def _on_input_required(
        self, connection: Connection, work: Work, result: Mapping[str, Any]
    ) -> None:
        """2026-07-28 basic/patterns/mrtr: fulfil ``inputRequests`` with the application's
        handlers, then retry as a new request with ``inputResponses`` and ``requestState``
        echoed byte for byte (never one the server did not send)."""
        work.rounds += 1
        requests, state, problem = input_requests(result, work.rounds)
        if problem is None:
            problem = self._asks.input_problem(requests)
        if problem is not None:
            self.finish(work, error=InvalidResponse(work.method, problem))
            return
        work.request_state = state
        work.input_responses = {}
        work.awaiting = set(requests)
        for key, ask in requests.items():
            params = ask.get("params")
            self._asks.ask_input(
                work.ticket, key, ask["method"], params if isinstance(params, dict) else {}
            )
        if not work.awaiting:
            self._retry_with_inputs(connection, work)  # "MAY retry immediately" with none

    def input_answered(self, ticket: int, key: str, event: ServerRequestAnswered) -> None:
        work = self._admission.works.get(ticket)
        if work is None or not work.awaiting or key not in work.awaiting or work.slot is None:
            return  # the call ended meanwhile (timeout, cancel, loss)
        if event.result is None:
            self.finish(
                work,
                error=JsonRpcError(
                    rpc.INTERNAL_ERROR, f"the client's handler failed: {event.failed}", None
                ),
            )
            return
        work.awaiting.discard(key)
        assert work.input_responses is not None  # made with awaiting
        work.input_responses[key] = dict(event.result)
        if not work.awaiting:
            self._retry_with_inputs(self._connections[work.slot], work)

    def _retry_with_inputs(self, connection: Connection, work: Work) -> None:
        # A connection that fails answers the work waiting between rounds, so it is ready.
        assert connection.phase is Phase.READY
        extra: dict[str, Any] = {"inputResponses": work.input_responses}
        if work.request_state is not None:
            extra["requestState"] = work.request_state
        self._send_work(connection, work, extra)

    def _on_tools_page(self, connection: Connection, work: Work, result: Mapping[str, Any]) -> None:
        assert work.tools is not None and work.cursors is not None  # a tools/list work
        cursor, problem, warning = tools_page(result, work.tools, work.cursors)
        if problem is not None:
            self.finish(work, error=InvalidResponse("tools/list", problem))
            return
        if cursor is not None:
            work.cursors.add(cursor)
            self._send_work(connection, work, {"cursor": cursor})
            return
        if warning is not None:
            self._session.log("WARNING", warning)
        if work.generation == self._tools_generation:
            self.tools = list(work.tools)
        self.finish(work, list(work.tools))

    def _admit(self, work: Work) -> None:
        refusal = self._session.refusal()
        if refusal is not None:
            self._admission.settle(work, commit=False)
            self._reply(work.ticket, error=refusal)
            return
        placed = self._admission.admit(work)
        if isinstance(placed, Connection):
            self._send_work(placed, work, None)
        elif placed is False:
            self._admission.settle(work, commit=False)
            in_flight, queued = self._admission.in_flight, len(self._admission.queue)
            self._reply(
                work.ticket,
                error=Busy(
                    f"{in_flight} requests are in flight and {queued} queued, the most this "
                    "spec allows; nothing was sent (retry later, or raise "
                    "pool_size/queue_limit)"
                ),
            )

    def pump(self) -> None:
        while (next_up := self._admission.next_queued()) is not None:
            self._send_work(*next_up, None)

    def _send_work(
        self, connection: Connection, work: Work, extra: Mapping[str, Any] | None
    ) -> None:
        params: dict[str, Any] = {}
        meta: dict[str, Any] = dict(work.meta) if work.meta else {}
        if work.method == "tools/call":
            params["name"] = work.name
            if work.arguments is not None:
                params["arguments"] = dict(work.arguments)
        if extra is not None:
            params.update(extra)  # the next page's cursor, or a retry's inputResponses
        assert connection.handshake is not None
        if connection.handshake.era == "modern":
            meta.update(modern_meta(self._capabilities))
        if work.progress:
            # The token is the request id: unique among active requests, as progress requires.
            meta["progressToken"] = self._session.next_request_id
        self._admission.enter(work, connection)
        work.request_id = self._session.request(connection, work.method, params, work, meta)

    def _withdraw(self, work: Work, reason: str) -> None:
        """Take work out of the queue or off its connection; cancel it on the wire if sent."""
        if work.slot is None:
            self._admission.release(work)
            return
        connection = self._connections[work.slot]
        assert work.request_id is not None
        if connection.requests.pop(work.request_id, None) is None:
            # Waiting for input handlers between two rounds: nothing is on the wire.
            self._admission.release(work)
            return
        # Work that is still ours and sent is always on a live, ready connection: a failing
        # one answers its work first. Legacy basic/utilities/cancellation; 2026-07-28 stdio:
        # cancellation "MUST be" notifications/cancelled, only for a request actually issued.
        tell = self._session.cancel(connection, work.request_id)
        self._admission.release(work)
        if tell:
            self._session.send(
                connection,
                rpc.notification(
                    "notifications/cancelled", {"requestId": work.request_id, "reason": reason}
                ),
            )

    def finish(self, work: Work, value: object = None, *, error: McpError | None = None) -> None:
        """Answer ``work`` (its request is already forgotten) and send what waited."""
        self._admission.finish(work)
        self._reply(work.ticket, value, error=error)
        self.pump()

    def drain(self) -> list[Work]:
        """Remove every piece of work (in ticket order) and forget their requests."""
        works = self._admission.drain()
        for connection in self._connections:
            requests = connection.requests
            for request_id in [k for k, v in requests.items() if isinstance(v, Work)]:
                del requests[request_id]
        return works

    def _reply(self, ticket: int, value: object = None, *, error: McpError | None = None) -> None:
        self._out.append(Reply(ticket=ticket, value=value, error=error))
