"""Caller work, from admission to its single reply: ``tools/call``, the four lists, and any
other request a caller sends (``resources/read``, ``prompts/get``, ``completion/complete``,
``logging/setLevel``, ``ping``, or a method this client has no name for).

A call is checked against its price, admitted (``_session/admission.py``), sent on a ready
connection, and answered: with its result, a JSON-RPC error, ``InvalidResponse`` for a result
it cannot read, ``RequestTimeout`` at its deadline (the request is cancelled on the wire),
or the connection's failure. Progress pushes the deadline out, never past
``max_call_timeout`` from admission, and never in: a ``timeout=`` above that cap is honoured.
A 2026-07-28 ``input_required`` result is served by the application's handlers and retried
with their answers. A method that needs a capability the server did not declare is refused
before sending (``NotSupported``).

Lists (tools, resources, resource templates, prompts) are paged through ``nextCursor`` and
cached until the server says they changed (``notifications/*/list_changed``), and no longer
than the ``ttlMs`` the server gave (2026-07-28 server/utilities/caching: a modern result
without one is not cached, "treat as 0"; a legacy server's list lives until it changes). Each
cache belongs to one client and so to one authorization context, which is what
``cacheScope: "private"`` asks. A stale tool list still tells the schemas: results are checked
against the output schema of the tool as last listed.

Requests go out through the session (``Requester``), which numbers them and hands them to
the transport.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._config.spec import Spec
from .._transport.connection import Connection, Requests
from .._transport.eras import modern_meta
from .._transport.tool_headers import Designated, mirror, param_headers
from .._transport.work import CallWork, InputRounds, ListWork, RequestWork, Work
from .._vocabulary.actions import Action, ProgressUpdate, Reply
from .._vocabulary.errors import (
    Busy,
    InvalidResponse,
    McpError,
    NotSupported,
    RequestTimeout,
    UnmeteredCall,
    UrlElicitationRequired,
)
from .._vocabulary.events import (
    CallTool,
    FollowTask,
    ListItems,
    ListTools,
    Request,
    ServerRequestAnswered,
    Subscribe,
    Unsubscribe,
)
from .._vocabulary.models import Tool
from .._vocabulary.phases import Phase
from .._wire import jsonrpc as rpc
from .admission import Admission
from .checks import missing_capability, unsendable_request
from .output_schema import OutputSchemas
from .results import (
    LISTS,
    call_result,
    input_requests,
    list_page,
    names_our_modern_version,
    request_result,
    rpc_error,
)
from .server_requests import ServerRequests, handler_failed
from .tasks import Tasks, missing_for_tasks, required_by, unasked_task

__all__ = ["Calls", "ListCache", "Requester"]

@dataclass(slots=True)
class ListCache:
    """One list as last fetched."""

    items: list[Any] | None = None  # None: never fetched, or dropped on list_changed
    fresh_until: float | None = None  # serve it until then; None: until it changes
    generation: int = 0  # bumped by list_changed: a list fetched before is stale


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

    __slots__ = (
        "_admission", "_asks", "_capabilities", "_connections", "_designated", "_out", "_schemas",
        "_session", "_spec", "_task_required", "_tools_by_name", "_withdrawn", "lists",
        "log_level", "subscriptions", "subscriptions_changed", "tasks",
    )  # fmt: skip

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
        self.lists = {kind: ListCache() for kind in LISTS}
        self._tools_by_name: dict[str, Tool] = {}  # the last tool list, for output schemas
        self._task_required: set[str] = set()  # its tools that run only as tasks (2025-11-25)
        self._designated: dict[str, Designated] = {}  # its x-mcp-header parameters (HTTP)
        self._schemas = OutputSchemas(session.log)
        self.log_level: str | None = None  # logging/setLevel, kept for every session
        # The resources a caller subscribed to (an ordered set), renewed on every session;
        # the modern era's listen streams follow it through ``subscriptions_changed``.
        self.subscriptions: dict[str, None] = {}
        self.subscriptions_changed: Callable[[], None] = lambda: None
        # Tickets of legacy subscribes an Unsubscribe of their URI overtook: their answer
        # must not subscribe again what the caller has since given up.
        self._withdrawn: set[int] = set()
        self.tasks = Tasks(
            spec, connections, asks, capabilities, session, out, self.finish, self.call_done
        )

    @property
    def client_info(self) -> Mapping[str, str]:
        """The spec's ``client_info``: what every modern request's ``_meta`` names us as."""
        return self._spec.client_info

    @property
    def tools(self) -> list[Tool] | None:
        """The tool list as last fetched (even past its ttlMs), None until fetched."""
        return self.lists["tools"].items

    def list_changed(self, kind: str) -> None:
        """notifications/<kind>/list_changed: the cache is stale, and so is any list under
        way. ``resources`` drops the templates too (one notification covers both)."""
        for name in ("resources", "resource_templates") if kind == "resources" else (kind,):
            cache = self.lists[name]
            cache.items = cache.fresh_until = None
            cache.generation += 1

    def poll_tasks(self, now: float) -> None:
        """Send the polls of followed tasks that are due (``_session/tasks.py``)."""
        for work in self.tasks.due(self._admission.works, now):
            assert work.slot is not None  # sent before: it keeps its place while it follows
            self.tasks.poll(self._connections[work.slot], work, self.log_level)

    def cancel(self, tickets: Sequence[int]) -> None:
        """Callers gave up: drop their work, tell the server of each request that was sent.
        The queue is pumped once, after all of them are withdrawn: a slot freed by one
        cancelled call never goes to another cancelled caller's queued call."""
        works = self._admission.works
        gone = [work for ticket in tickets if (work := works.pop(ticket, None)) is not None]
        for work in gone:
            self._withdraw(work, "the caller cancelled the request")
        if gone:
            self.pump()

    def expire(self, now: float) -> None:
        """Answer every piece of work whose deadline has come with ``RequestTimeout``."""
        for work in self._admission.expired(now):
            self._withdraw(work, "timed out")
            if isinstance(work, CallWork) and work.following is not None:
                self._reply(work.ticket, error=self.tasks.timeout_error(work))
                continue
            self._reply(
                work.ticket,
                error=RequestTimeout(
                    f"{work.method} {work.name if isinstance(work, CallWork) else ''} got no "
                    f"answer within {work.timeout:g} s; the server was told to cancel it (raise "
                    "timeout= or call_timeout if the tool is slow)".replace("  ", " ")
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

    def list_tools(self, event: ListTools | ListItems) -> None:
        """A caller asks for a list: from the cache while it is fresh, or from the server."""
        kind = event.kind if isinstance(event, ListItems) else "tools"
        refusal = unsendable_request(LISTS[kind][0], "params", None, event.meta)
        if refusal is not None:
            self._reply(event.ticket, error=refusal)
            return
        cache = self.lists[kind]
        now = self._session.now
        if (
            cache.items is not None
            and not event.refresh
            and kind != "tasks"  # where tasks stand now, never from a cache
            and (cache.fresh_until is None or now < cache.fresh_until)
            and self._session.state == "ready"
        ):
            self._reply(event.ticket, list(cache.items))
            return
        timeout = event.timeout or self._spec.call_timeout
        method = LISTS[kind][0]
        if self._refused(event.ticket, method):
            return
        self._admit(
            ListWork(
                ticket=event.ticket,
                method=method,
                admitted_at=now,
                timeout=timeout,
                deadline=now + timeout,
                kind=kind,
                meta=event.meta,
                generation=cache.generation,
                items=[],
                cursors=set(),
            )
        )

    def request(self, event: Request) -> None:
        """A caller sends any other request."""
        refusal = unsendable_request(event.method, "params", event.params, event.meta)
        if refusal is not None:
            self._reply(event.ticket, error=refusal)
            return
        if self._refused(event.ticket, event.method):
            return
        if event.method == "logging/setLevel" and self._modern():
            # 2026-07-28 removed logging/setLevel: the level rides on every request's _meta.
            self.log_level = str((event.params or {})["level"])
            self._reply(event.ticket, None)
            return
        timeout = event.timeout or self._spec.call_timeout
        self._admit(
            RequestWork(
                ticket=event.ticket,
                method=event.method,
                admitted_at=self._session.now,
                timeout=timeout,
                deadline=self._session.now + timeout,
                params=event.params,
                raw=event.raw,
                meta=event.meta,
            )
        )

    def subscribe(self, event: Subscribe | Unsubscribe) -> None:
        """A caller subscribes to a resource's updates, or stops. Legacy: the request
        (``resources/subscribe`` / ``unsubscribe``) is caller work like any other; modern: the
        listen streams change (``_session/subscriptions.py``) and the caller is answered at once."""
        adding = isinstance(event, Subscribe)
        method = "resources/subscribe" if adding else "resources/unsubscribe"
        refusal = self._session.refusal()
        if refusal is not None:
            self._reply(event.ticket, error=refusal)
            return
        if adding and self._refused(event.ticket, method):
            return
        if not adding:
            self.subscriptions.pop(event.uri, None)  # no update is delivered from now on
            works = self._admission.works
            self._withdrawn = {ticket for ticket in self._withdrawn if ticket in works} | {
                work.ticket
                for work in works.values()
                if isinstance(work, RequestWork)
                and work.method == "resources/subscribe"
                and (work.params or {}).get("uri") == event.uri
            }
        if self._modern():
            if adding:
                self.subscriptions[event.uri] = None
            self.subscriptions_changed()
            self._reply(event.ticket, None)
            return
        timeout = event.timeout or self._spec.call_timeout
        self._admit(
            RequestWork(
                ticket=event.ticket,
                method=method,
                admitted_at=self._session.now,
                timeout=timeout,
                deadline=self._session.now + timeout,
                params={"uri": event.uri},
            )
        )

    def _handshakes(self) -> list[Any]:
        return [c.handshake for c in self._connections if c.phase is Phase.READY]

    def _modern(self) -> bool:
        return any(h.era == "modern" for h in self._handshakes())

    def _refused(self, ticket: int, method: str) -> bool:
        """Refuse ``method`` (and answer ``ticket``) when no ready session's server declared
        what it needs; the caller is told which capability is missing."""
        handshakes = self._handshakes()
        known = [h.capabilities for h in handshakes if h.known]
        if not known or len(known) < len(handshakes):
            return False  # not ready (admission answers), or not told (era='modern')
        if method.startswith("tasks/") or method == "tools/call":  # tools/call: as a task
            missing = missing_for_tasks(handshakes[0], method)
        else:
            missing = missing_capability(known[0], method)
        if missing is None:
            return False
        self._reply(ticket, error=NotSupported(method, missing))
        return True

    def connection_ready(self, connection: Connection) -> None:
        """A session opened (again). A legacy one starts at the server's own log level and
        with no subscription: both are renewed (the modern era sends the level on every
        request, and ``_session/subscriptions.py`` opens its listen). The list caches stay: a server
        that changes them says so."""
        assert connection.handshake is not None
        if connection.handshake.era == "modern":
            return
        if self.log_level is not None:
            self._session.request(
                connection, "logging/setLevel", {"level": self.log_level}, "logging/setLevel"
            )
        for uri in self.subscriptions:
            self._session.request(
                connection, "resources/subscribe", {"uri": uri}, "resources/subscribe"
            )

    def call_tool(self, event: CallTool) -> None:
        """A caller calls a tool."""
        timeout = event.timeout or self._spec.call_timeout
        facts = event.reservation
        work = CallWork(
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
        if event.task is not None or event.detach:  # the common call passes no more keywords
            work.task, work.detach = event.task, event.detach
            work.declares_tasks = bool(event.task or event.detach)
        refusal: McpError | None = unsendable_request(
            "tools/call", "arguments", event.arguments, event.meta
        )
        if refusal is None:
            refusal = self._unmetered(event.name, facts)
        if refusal is not None:
            self._admission.settle(work, commit=False)
            self._reply(event.ticket, error=refusal)
            return
        if work.declares_tasks:
            legacy = any(h.era == "legacy" for h in self._handshakes())
            asked = unasked_task(event.name, self._tools_by_name.get(event.name), legacy)
            if asked is not None:
                self._reply(event.ticket, error=asked)
            if asked is not None or self._refused(event.ticket, "tools/call"):
                self._admission.settle(work, commit=False)
                return
        if event.name not in self._spec.prices and work.reserved:
            self._admission.settle(work, commit=False)  # a free tool needs no money back
        self._admit(work)

    def follow_task(self, event: FollowTask) -> None:
        """A caller waits for a task's result (``_session/tasks.py``)."""
        refusal = unsendable_request("tasks/get", "params", None, event.meta)
        if refusal is not None:
            self._reply(event.ticket, error=refusal)
            return
        if self._refused(event.ticket, "tasks/get"):
            return
        timeout = event.timeout or self._spec.call_timeout
        now = self._session.now
        work = CallWork(
            ticket=event.ticket,
            method="tasks/get",
            admitted_at=now,
            timeout=timeout,
            deadline=now + timeout,
            name="",
            arguments=None,
            progress=event.progress,
            meta=event.meta,
            declares_tasks=True,
        )
        self.tasks.follow(work, event.task_id, owned=event.cancel)
        self._admit(work)

    def _unmetered(self, tool: str, facts: Mapping[str, Any] | None) -> UnmeteredCall | None:
        """A priced tool without a valid reservation is refused before sending."""
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
        # a maximum timeout SHOULD always be enforced: ``max_call_timeout`` from admission, or
        # the call's own ``timeout=`` when the caller asked for longer (its deadline is then
        # where it started: progress never pulls a deadline in).
        ceiling = work.admitted_at + max(work.timeout, self._spec.max_call_timeout)
        self._admission.push_out(work, min(self._session.now + work.timeout, ceiling))
        if isinstance(work, CallWork) and work.progress:
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
        if isinstance(work, CallWork) and work.following is not None:
            self.tasks.answer(connection, work, response)
            return
        if response.error is not None:
            if (
                isinstance(work, CallWork)
                and connection.modern
                and self.tasks.retry_declared(work, response.error)
            ):
                self._send_work(connection, work, work.sent_extra)
                return
            if (
                connection.modern
                and not work.version_retried
                and names_our_modern_version(response.error)
            ):
                # 2026-07-28 basic/versioning: on UnsupportedProtocolVersion the client
                # "SHOULD" retry with a version from data.supported. Ours is listed (a server
                # that forgot, or a proxy that mangled the header): one retry, same round.
                work.version_retried = True
                self._send_work(connection, work, work.sent_extra)
                return
            error = rpc_error(response.error)
            if isinstance(error, UrlElicitationRequired):
                for elicitation in error.elicitations:
                    self._asks.expect_completion(elicitation["elicitationId"])
            self.finish(work, error=error)
            return
        result = response.result
        assert result is not None
        result_type = result.get("resultType", "complete")
        if (
            (result_type == "task" or "task" in result)  # cheap checks first: the hot path
            and isinstance(work, CallWork)
            and self.tasks.is_task(connection, work, result)
        ):
            self.tasks.begin(connection, work, result)
        elif result_type == "input_required" and isinstance(work, CallWork):
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
        elif isinstance(work, CallWork):
            self.call_done(work, result)
        elif isinstance(work, ListWork):
            self._on_list_page(connection, work, result)
        elif isinstance(work, RequestWork) and work.method == "ping" and not work.raw:
            self.finish(work, max(0.0, self._session.now - work.sent_at))
        else:
            assert isinstance(work, RequestWork)  # the one kind left
            answer, problem = (result, None) if work.raw else request_result(work.method, result)
            params = work.params or {}
            if work.method == "logging/setLevel":
                self.log_level = str(params.get("level"))
            elif work.method == "resources/subscribe" and work.ticket not in self._withdrawn:
                self.subscriptions[str(params.get("uri"))] = None
            self.finish(work, answer, error=problem)

    def call_done(self, work: CallWork, result: Mapping[str, Any]) -> None:
        """A call's final result (straight, or its task's): checked, then answered."""
        value, problem = call_result(result)
        if value is not None and value.structured_content is not None and not value.is_error:
            tool = self._tools_by_name.get(work.name)
            if tool is not None:
                problem = self._schemas.check(tool, value.structured_content)
                value = None if problem is not None else value
        self.finish(work, value, error=problem)

    def _on_input_required(
        self, connection: Connection, work: CallWork, result: Mapping[str, Any]
    ) -> None:
        """2026-07-28 basic/patterns/mrtr: fulfil ``inputRequests`` with the application's
        handlers, then retry as a new request with ``inputResponses`` and ``requestState``
        echoed byte for byte (never one the server did not send)."""
        rounds = 1 if work.inputs is None else work.inputs.rounds + 1
        requests, state, problem = input_requests(result, rounds)
        if problem is None:
            problem = self._asks.input_problem(requests)
        if problem is not None:
            self.finish(work, error=InvalidResponse(work.method, problem))
            return
        work.inputs = inputs = InputRounds(rounds, set(requests), {}, state)
        for key, ask in requests.items():
            params = ask.get("params")
            self._asks.ask_input(
                work.ticket, key, ask["method"], params if isinstance(params, dict) else {}
            )
        if not inputs.awaiting:
            self._retry_with_inputs(connection, work, inputs)  # "MAY retry immediately"

    def input_answered(self, ticket: int, key: str, event: ServerRequestAnswered) -> None:
        work = self._admission.works.get(ticket)
        if isinstance(work, CallWork) and work.following is not None:
            self.tasks.input_answered(work, key, event)
            return
        inputs = work.inputs if isinstance(work, CallWork) else None
        if inputs is None or key not in inputs.awaiting:
            return  # the call ended meanwhile (timeout, cancel, loss)
        assert isinstance(work, CallWork) and work.slot is not None  # sent: in its window
        if event.result is None:
            self.finish(work, error=handler_failed(event))
            return
        inputs.awaiting.discard(key)
        inputs.responses[key] = dict(event.result)
        if not inputs.awaiting:
            self._retry_with_inputs(self._connections[work.slot], work, inputs)

    def _retry_with_inputs(self, connection: Connection, work: Work, inputs: InputRounds) -> None:
        # A connection that fails answers the work waiting between rounds, so it is ready.
        assert connection.phase is Phase.READY
        extra: dict[str, Any] = {"inputResponses": inputs.responses}
        if inputs.request_state is not None:
            extra["requestState"] = inputs.request_state
        self._send_work(connection, work, extra)

    def _on_list_page(
        self, connection: Connection, work: ListWork, result: Mapping[str, Any]
    ) -> None:
        cursor, problem, warning = list_page(
            work.kind, result, work.items, work.cursors, self._spec.max_list_pages
        )
        if problem is not None:
            self.finish(work, error=problem)
            return
        # 2026-07-28 server/utilities/caching: ttlMs absent "treat as 0", negative as 0; the
        # list lives as long as its shortest-lived page. Legacy servers send none.
        ttl = result.get("ttlMs")
        if isinstance(ttl, int | float) and not isinstance(ttl, bool):
            ttl = max(0.0, ttl / 1000)
        else:
            ttl = 0.0 if connection.modern else None
        if ttl is not None:
            work.ttl = ttl if work.ttl is None else min(work.ttl, ttl)
        if cursor is not None:
            work.cursors.add(cursor)
            self._send_work(connection, work, {"cursor": cursor})
            return
        if warning is not None:
            self._session.log("WARNING", warning)
        if work.kind == "tools" and connection.modern and self._spec.transport == "http":
            self._keep_valid_headers(work.items)
        cache = self.lists[work.kind]
        if work.generation == cache.generation:
            cache.items = list(work.items)
            cache.fresh_until = None if work.ttl is None else self._session.now + work.ttl
        if work.kind == "tools":
            self._tools_by_name = {tool.name: tool for tool in work.items}
            self._task_required = {tool.name for tool in work.items if required_by(tool)}
            self._schemas.reset()
        self.finish(work, list(work.items))

    def _keep_valid_headers(self, tools: list[Tool]) -> None:
        """2026-07-28 streamable-http §Schema Extension: the client "MUST" exclude from its
        tools/list result a tool whose ``x-mcp-header`` annotations are invalid, and
        "SHOULD" log a warning. The valid ones' header parameters are kept per tool name."""
        designated: dict[str, Designated] = {}
        kept = []
        for tool in tools:
            found = param_headers(tool.input_schema)
            if isinstance(found, str):
                self._session.log("WARNING", f"left out tool {tool.name[:64]!r}: {found}")
                continue
            if found:
                designated[tool.name] = found
            kept.append(tool)
        tools[:] = kept
        self._designated = designated

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
        # The lane of the most frequent request: a plain 2025-11-25 call (no task, _meta,
        # progress token or input round), written as the general path below writes it.
        if (
            type(work) is CallWork
            and extra is None
            and not (work.following or work.declares_tasks or work.meta or work.progress)
            and not connection.modern
            and work.name not in self._task_required
        ):
            args = work.arguments
            plain: dict[str, Any] = {"name": work.name}
            if args is not None:
                plain["arguments"] = dict(args)
            self._admission.enter(work, connection)
            work.sent_at = self._session.now
            work.sent_extra = None
            work.request_id = self._session.request(connection, "tools/call", plain, work)
            return
        params: dict[str, Any] = {}
        meta: dict[str, Any] = dict(work.meta) if work.meta else {}
        capabilities = self._capabilities
        if isinstance(work, CallWork):
            if work.following is not None:  # a task it attached to: polled from the start
                self._admission.enter(work, connection)
                self.tasks.poll(connection, work, self.log_level)
                return
            params["name"] = work.name
            if work.arguments is not None:
                params["arguments"] = dict(work.arguments)
            required = work.name in self._task_required  # usually empty: one lookup per call
            if work.declares_tasks or required:
                params.update(self.tasks.augment(connection, work, required))
            if work.declares_tasks:
                capabilities = self.tasks.capabilities
        elif isinstance(work, RequestWork):
            if work.method.startswith("tasks/"):
                capabilities = self.tasks.capabilities
            if work.params:
                params.update(work.params)
                given = params.pop("_meta", None)
                if isinstance(given, dict):  # the caller's own _meta keys, under the protocol's
                    meta = {**given, **meta}
        if extra is not None:
            params.update(extra)  # the next page's cursor, or a retry's inputResponses
        assert connection.handshake is not None
        method = work.method
        if connection.handshake.era == "modern":
            meta.update(modern_meta(capabilities, self._spec.client_info, self.log_level))
            if method == "ping":
                method = "server/discover"  # 2026-07-28 has no ping; discover is as cheap
        if isinstance(work, CallWork) and work.progress:
            # The token is the request id: unique among active requests, as progress requires.
            meta["progressToken"] = self._session.next_request_id
        self._admission.enter(work, connection)
        work.sent_at = self._session.now
        work.sent_extra = extra
        if isinstance(work, CallWork) and connection.modern and work.name in self._designated:
            # 2026-07-28 streamable-http §Custom Headers: Mcp-Param-{Name} per annotated
            # argument (the HTTP transport sends them; stdio "MAY ignore" them).
            work.headers = mirror(work.arguments, self._designated[work.name])
        work.request_id = self._session.request(connection, method, params, work, meta)

    def _withdraw(self, work: Work, reason: str) -> None:
        """Take work out of the queue or off its connection; cancel it on the wire if sent."""
        if isinstance(work, CallWork) and work.following is not None and work.slot is not None:
            self.tasks.withdraw(work)
            self._admission.release(work)
            return
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
