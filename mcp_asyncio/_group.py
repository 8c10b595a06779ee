# The source of mcp_sync/_group.py (scripts/unasync.py generates it): edit here, then run it.
"""Many servers behind one tool list: ``ClientGroup``, on anyio.

The group starts one ``Client`` per server, waits for all of them against one deadline, shows
every ready server's tools under namespaced names ``mcp__<server>__<tool>`` and routes each
call back to its server under the tool's own name. One bad server never blocks or breaks the
others: its ``Status`` says why it is down and a call to it raises that server's own error.

Beyond tools, prompts are namespaced and routed the same way (``mcp__<server>__<prompt>``), and
resources, whose URIs mean something only to their own server, are listed per server and read
from a named server.

The naming rules (``mcp_core.group.ToolTable``, ``PromptTable``) and the reading of specs into
clients to build and refusals (``mcp_core.group.plan_group``) are the core's, shared with
``mcp_sync``. The group starts its clients one after the other (each returns at once: it
connects in the background); what it does to many clients at once (listing, stopping) is
``_fanout``'s.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from functools import partial
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from _mcp_io.client import (
    ProgressCallback,
    client_keywords,
    left_out,
    publish,
    recording_files,
    server_log,
)
from _mcp_io.fork import Origin
from mcp_core import (
    CallToolResult,
    GetPromptResult,
    McpError,
    NotReady,
    Prompt,
    ReadResourceResult,
    Reservation,
    Resource,
    ResourceTemplate,
    Status,
    TokenStore,
    Tool,
)
from mcp_core.group import (
    GroupSpecFields,
    GroupSpecs,
    PromptTable,
    ToolTable,
    down_error,
    plan_group,
)

from ._client import (
    AssertionCallback,
    AuthorizeCallback,
    Client,
    CompletionCallback,
    DeviceCodeCallback,
    Handler,
    ListChangedCallback,
)
from ._fanout import TableLock, all_at_once, stop_all

if TYPE_CHECKING:
    import ssl

__all__ = ["ClientGroup", "ClientOptions"]

# The keywords a group passes on to every client as they are (the rest are spec fields).
_CLIENT_KEYWORDS = client_keywords(Client)

T = TypeVar("T")


class ClientOptions(GroupSpecFields, total=False):
    """What ``ClientGroup(specs, **options)`` gives every client, as keywords a type checker
    reads (a misspelled ``timout=`` is refused): ``Client``'s own keywords (the handlers, OAuth,
    ``ssl_context``) as ``Client`` documents them, and the spec fields of
    ``mcp_core.group.GroupSpecFields``, laid over each server's own. Not ``wait``,
    ``fail_fast``, ``record`` nor ``replay`` (the group's own keywords: a group records one
    file per server, in a directory) nor ``name`` (each server is named by its key). Annotate
    a mapping of options you build with it: ``options: ClientOptions = {"call_timeout": 5};
    ClientGroup(specs, **options)``. A test
    keeps it equal to what the group accepts and to ``Client``'s annotations."""

    elicitation: Handler | None
    elicitation_modes: Iterable[str]
    elicitation_complete: CompletionCallback | None
    sampling: Handler | None
    sampling_tools: bool
    accept_tasks: bool
    roots: Handler | None
    on_list_changed: ListChangedCallback | None
    authorize: AuthorizeCallback | None
    assertion: AssertionCallback | None
    on_device_code: DeviceCodeCallback | None
    token_store: TokenStore | None
    interactive: bool
    ssl_context: ssl.SSLContext | None


class ClientGroup:
    """Many MCP servers, one namespaced tool list, on anyio (asyncio or trio).

    ``async with ClientGroup({"fs": {...}, "web": {...}}) as group:`` starts every client, waits
    (one shared deadline: the largest ``init_timeout``, unless ``wait=False``) and, when the
    block ends, stops them all at once, leaving no process behind. ``specs`` is a mapping of
    server name to ``Spec`` or mapping (a mapping gets ``name`` = its key unless it has one) or
    a loaded config (``.servers``, ``.skipped``). ``client_options`` go to every client: Client
    keywords (``elicitation=``, ...) as they are, spec fields (``call_timeout=``, ...) over
    each server's own; ``ClientOptions`` types them, so mypy refuses a misspelled one or a
    handler of the wrong kind. A server refused here is reported by ``status()``, never raised:
    ``closed`` (not ``new``, as the others are until ``start()``: it will never start) with
    ``last_error`` saying why; ``TypeError`` only for an unknown option or ``specs`` of the
    wrong type. A group runs once: ``start()`` after ``stop()`` raises ``NotReady('closed')``.

    ``record=DIRECTORY`` records each server's session in ``DIRECTORY/<server>.jsonl``
    (``<server>`` is its key in ``specs``; the directory is made if need be);
    ``replay=DIRECTORY`` answers each server from that file instead (``Client``'s ``record``
    and ``replay``, docs/testing.md). A server with no recording there raises
    ``FileNotFoundError`` naming the file; not both (``ValueError``).

    ``fail_fast=True`` makes the group's readiness waits (the ``async with`` block's and
    ``await_ready``'s) stop waiting for a server as soon as a connect attempt of it fails: a
    crash-looping server then costs one attempt, not the whole deadline, and keeps retrying
    in the background (its Status shows ``last_error`` and ``retry_in``; a later call works
    once it is up). It is a choice of the group's waits, not of the clients: each client's own
    ``await_ready`` keeps its spec's ``fail_fast``. With ``fail_fast=False`` (the default) the
    group waits for each server as its spec says, so a server whose spec has ``fail_fast`` is
    still given up on at its first failure.

    Tool names are ``mcp__<server>__<tool>`` (see ``ToolTable``); the key of a server in
    ``specs`` is its name there, in ``status()`` and in ``clients``.

    Beyond tools:

    - Prompts are named exactly like tools, ``mcp__<server>__<prompt>`` (``PromptTable``: the
      same server parts, shortening and duplicate rule, in a table of their own, so a tool
      and a prompt may share a name). ``get_prompt`` of a name no server lists raises
      ``mcp_core.UnknownPrompt``, ``UnknownTool``'s twin: a name is either kind's,
      never both, so each kind has its own error.
    - Resources are not namespaced: a URI means something only to its own server, and
      rewriting it would break the links between resources. ``list_resources`` and
      ``list_resource_templates`` return ``{server: [...]}`` in server order, and
      ``read_resource(server, uri)`` names the server. A server that is down, offers no
      resources (``NotSupported``) or fails to list them has no entry; why is logged to
      ``mcp_client.<server>`` (info for not offering them, warning for a failure), and the
      rest of the group is listed as usual.

    Like ``Client``, a group belongs to the event loop it was started on: used from another
    loop, its methods raise ``WrongEventLoop``.

    After ``os.fork()``, as for a ``Client``: in the child every method of a group started in
    the parent raises ``UsedAfterFork`` (``status()`` too), touching nothing, and ``stop()``
    (so the end of an ``async with`` block) returns at once without raising. A group nobody
    stopped is collected with its clients: each warns and has its server stopped (see
    ``Client``).
    """

    def __init__(
        self,
        specs: GroupSpecs,
        /,
        *,
        wait: bool = True,
        fail_fast: bool = False,
        record: str | os.PathLike[str] | None = None,
        replay: str | os.PathLike[str] | None = None,
        **client_options: Unpack[ClientOptions],
    ) -> None:
        plan = plan_group(specs, client_options, client_keywords=_CLIENT_KEYWORDS)
        files = recording_files(record, replay)
        self._order = plan.order
        self._clients, self._down = plan.build(
            lambda name, spec: Client(
                spec,
                wait=False,
                record=files(name)[0],
                replay=files(name)[1],
                **plan.client_options,
            )
        )
        self._table = plan.table
        self._prompts = PromptTable(plan.order)  # the same server parts as the tools'
        self._init_timeout = plan.init_timeout
        self._wait = wait
        self._fail_fast = fail_fast
        for name, status in self._down.items():
            server_log(name).warning("server %r is not started: %s", name, status.last_error)
        self._lock = TableLock()  # guards the tables
        self._origin: Origin | None = None  # the process that started it
        self._phase = "new"  # -> "running" -> "stopped": a group runs once

    @property
    def clients(self) -> Mapping[str, Client]:
        """The client of every server that was started (refused servers have none)."""
        return MappingProxyType(self._clients)

    def __repr__(self) -> str:
        if self._origin is not None and not self._origin.here():
            return f"<mcp_asyncio.ClientGroup {', '.join(self._order)} (in a forked child)>"
        states = ", ".join(f"{name}={s.state}" for name, s in self.status().items())
        return f"<mcp_asyncio.ClientGroup {states}>"

    def _check(self, clients: Iterable[Client] = ()) -> None:
        """``UsedAfterFork`` in a forked child of the process that started the group, before
        anything is touched (a lock copied from the parent may be held for ever); then what
        each of ``clients`` would raise for being used here (``WrongEventLoop`` on another loop):
        before a fan-out, which reads a client's ``McpError`` as that server being down."""
        if self._origin is not None:
            self._origin.check(", ".join(self._order))
        for client in clients:
            client._session.check()

    # --- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every client; each connects in the background, so this returns at once.

        If a client cannot start, the ones already started are stopped and its error is
        raised. ``NotReady('closed')`` on a stopped group; nothing on a running one.
        """
        self._check(self._clients.values())
        if self._phase == "running":
            return
        if self._phase == "stopped":
            raise NotReady("closed")
        self._origin = Origin()
        started: list[Client] = []
        try:
            for client in self._clients.values():
                await client.start()
                started.append(client)
        except BaseException:
            await stop_all(started)
            raise
        self._phase = "running"

    async def stop(self) -> None:
        """Stop every client at once and wait until every server process is gone. Never
        raises for a server; idempotent; a cancelled caller still waits for it (shielded). In
        a forked child of the process that started the group it returns at once, touching
        nothing."""
        if self._origin is not None and not self._origin.here():
            return  # the sessions are the parent's
        clients = list(self._clients.values())
        self._check(clients)  # before any client is stopped
        self._phase = "stopped"
        await stop_all(clients)

    async def __aenter__(self) -> ClientGroup:
        await self.start()
        if self._wait:
            try:
                await self.await_ready(self._init_timeout)
            except BaseException:  # only an interruption: await_ready never raises for a server
                await self.stop()
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # --- calls -----------------------------------------------------------------------------

    async def await_ready(
        self, timeout: float = 60.0, *, fail_fast: bool | None = None
    ) -> dict[str, Status]:
        """Wait until every server is ready or the shared deadline ``timeout`` s from now has
        passed, and return every server's status. A server that failed (for good, or still
        retrying at the deadline) shows it in its Status: nothing is raised for it.
        ``fail_fast`` (default: the group's) True stops waiting for a server at its first
        failed attempt; False leaves it to each server's spec. ``ValueError`` for a negative
        timeout."""
        self._check(self._clients.values())
        if timeout < 0:
            raise ValueError("timeout must be >= 0")
        # True decides every client's wait; otherwise each spec's fail_fast does (None).
        quick = True if (self._fail_fast if fail_fast is None else fail_fast) else None
        deadline = time.monotonic() + timeout
        # One after the other against the same deadline: every client connects in the
        # background meanwhile, so this waits no longer than waiting for all at once.
        for name, client in self._clients.items():
            try:
                await client.await_ready(max(0.0, deadline - time.monotonic()), fail_fast=quick)
            except McpError as exc:
                server_log(name).debug("server %r is not ready: %s", name, exc)
        return self.status()

    async def list_tools(
        self, *, refresh: bool = False, timeout: float | None = None
    ) -> list[Tool]:
        """The tools of every ready server, named ``mcp__<server>__<tool>``, in server order.

        Each client is asked at once (``refresh`` and ``timeout`` are passed on); its cache
        makes that cheap, and when a server reports ``notifications/tools/list_changed`` its
        client drops the cache (``status().tools`` becomes None), so the next call here shows
        the new list. A server that is not ready is left out; one that fails to list is left
        out and logged to ``mcp_client.<server>``. Never raises for a server.
        """
        listed = await self._each_ready(
            "tools", lambda client: client.list_tools(refresh=refresh, timeout=timeout)
        )
        out: list[Tool] = []
        with self._lock:
            for name, tools in listed.items():
                out.extend(publish(self._table, name, tools))
        return out

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        reservation: Reservation | None = None,
        progress: ProgressCallback | None = None,
        output_type: Any = None,
        meta: Mapping[str, Any] | None = None,
        task: bool | None = None,
    ) -> CallToolResult:
        """Call the tool listed as ``name`` on its server, under the tool's own name;
        ``timeout``, ``reservation``, ``progress``, ``output_type``, ``meta`` and ``task`` are
        ``Client.call_tool``'s (a tool the server runs as a task is followed to its result;
        ``group.clients[server].start_tool`` gives a task's handle).

        Raises ``UnknownTool`` when no server has that name (nothing is sent); for a server
        that is down, that client's own error (``NotReady``, ``ConnectFailed``; for a server
        refused at construction ``ConnectFailed(permanent)`` with the reason); otherwise
        whatever ``Client.call_tool`` raises.
        """
        self._check()
        server, tool = await self._route(self._table, name)
        return await self._clients[server].call_tool(
            tool,
            arguments,
            timeout=timeout,
            reservation=reservation,
            progress=progress,
            output_type=output_type,
            meta=meta,
            task=task,
        )

    def resolve(self, name: str) -> tuple[str, str] | None:
        """``(server, tool)`` behind a name ``list_tools()`` returned; None if not (yet)
        listed. Never does I/O."""
        self._check()
        with self._lock:
            return self._table.resolve(name)

    # --- beyond tools ----------------------------------------------------------------------

    async def list_prompts(
        self, *, refresh: bool = False, timeout: float | None = None
    ) -> list[Prompt]:
        """The prompts of every ready server, named ``mcp__<server>__<prompt>`` by the same
        rules as tools (normalised server part, shortened past 64 characters, the first of a
        duplicate name kept), in server order; the rest of each ``Prompt`` is the server's.

        As ``list_tools``: every client is asked at once (its cache makes that cheap); a
        server that is not ready, offers no prompts (``NotSupported``) or fails to list is
        left out and logged to ``mcp_client.<server>``. Never raises for a server.
        """
        listed = await self._each_ready(
            "prompts", lambda client: client.list_prompts(refresh=refresh, timeout=timeout)
        )
        out: list[Prompt] = []
        with self._lock:
            for name, prompts in listed.items():
                out.extend(publish(self._prompts, name, prompts))
        return out

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> GetPromptResult:
        """Get the prompt listed as ``name`` from its server, under the prompt's own name,
        filled in with ``arguments`` (strings).

        Raises ``UnknownPrompt`` when no server has that name (nothing is sent); for a server
        that is down, that client's own error (as ``call_tool``); ``NotSupported`` for a
        server that offers no prompts; otherwise whatever ``Client.get_prompt`` raises (a
        ``JsonRpcError`` for arguments the server refuses).
        """
        self._check()
        server, prompt = await self._route(self._prompts, name)
        return await self._clients[server].get_prompt(prompt, arguments, timeout=timeout)

    def resolve_prompt(self, name: str) -> tuple[str, str] | None:
        """``(server, prompt)`` behind a name ``list_prompts()`` returned; None if not (yet)
        listed. Never does I/O."""
        self._check()
        with self._lock:
            return self._prompts.resolve(name)

    async def list_resources(
        self, *, refresh: bool = False, timeout: float | None = None
    ) -> dict[str, list[Resource]]:
        """Every ready server's resources, by server name in server order; URIs as the server
        gave them (a URI is only meaningful to its own server: read it with
        ``read_resource(server, uri)``).

        Every client is asked at once (``refresh`` and ``timeout`` passed on). A server that
        is not ready, offers no resources (``NotSupported``) or fails to list them has no
        entry, and why is logged to ``mcp_client.<server>``; a server that offers none has
        an empty list. Never raises for a server.
        """
        return await self._each_ready(
            "resources", lambda client: client.list_resources(refresh=refresh, timeout=timeout)
        )

    async def list_resource_templates(
        self, *, refresh: bool = False, timeout: float | None = None
    ) -> dict[str, list[ResourceTemplate]]:
        """Every ready server's resource templates, by server name, left out and logged like
        ``list_resources``. Never raises for a server."""
        return await self._each_ready(
            "resource templates",
            lambda client: client.list_resource_templates(refresh=refresh, timeout=timeout),
        )

    async def read_resource(
        self, server: str, uri: str, *, timeout: float | None = None
    ) -> ReadResourceResult:
        """Read ``uri`` from ``server`` (a name of ``specs``): its contents, text or blob.

        ``KeyError`` for a name that is not a server of this group (a caller's mistake, as
        ``clients[server]``); for a server refused at construction ``ConnectFailed(permanent)``
        with the reason; otherwise whatever ``Client.read_resource`` raises (``NotReady``,
        ``NotSupported`` when it offers no resources, ``JsonRpcError`` for an unknown URI).
        """
        self._check()
        return await self._client_of(server).read_resource(uri, timeout=timeout)

    def status(self) -> dict[str, Status]:
        """Every server's status, in the order of ``specs``; never blocks on I/O."""
        self._check()
        return {
            name: self._down[name] if name in self._down else self._clients[name].status()
            for name in self._order
        }

    # --- fan-out and routing ----------------------------------------------------------------

    async def _each_ready(self, what: str, fetch: Callable[[Client], Awaitable[T]]) -> dict[str, T]:
        """``fetch(client)`` of every ready client at once, by server name in server order;
        a server whose fetch raises ``McpError`` is left out, and why is logged."""
        self._check(self._clients.values())
        got: dict[str, T] = {}

        async def one(name: str, client: Client) -> None:
            try:
                got[name] = await fetch(client)
            except McpError as exc:
                left_out(name, what, exc)

        ready = [
            partial(one, name, client)
            for name, client in self._clients.items()
            if client.status().state == "ready"
        ]
        await all_at_once(ready)
        return {name: got[name] for name in self._order if name in got}

    def _client_of(self, server: str) -> Client:
        if server in self._clients:
            return self._clients[server]
        if server in self._down:
            raise down_error(self._down[server])
        raise KeyError(f"no server named {server!r} in this group (servers: {self._order})")

    async def _route(self, table: ToolTable | PromptTable, name: str) -> tuple[str, str]:
        with self._lock:
            route = table.resolve(name)
            server = table.server_of(name)
        if route is not None:
            return route
        if server is None:
            raise table.unknown(name)
        if server in self._down:
            raise down_error(self._down[server])
        # Not listed yet (cheap: the client's cache); raises the client's error if it is down.
        client = self._clients[server]
        if isinstance(table, PromptTable):
            prompts = await client.list_prompts()
            with self._lock:
                publish(table, server, prompts)
                route = table.resolve(name)
        else:
            tools = await client.list_tools()
            with self._lock:
                publish(table, server, tools)
                route = table.resolve(name)
        if route is None:
            raise table.unknown(name)
        return route
