"""Many servers behind one tool list: ``ClientGroup`` (SPEC §3, §12), blocking.

The group starts one ``Client`` per server, waits for all of them against one deadline, shows
every ready server's tools under namespaced names ``mcp__<server>__<tool>`` and routes each call
back to its server under the tool's own name. One bad server never blocks or breaks the others:
its ``Status`` says why it is down and a call to it raises that server's own error.

The naming rules (``mcp_core.group.ToolTable``) and the reading of specs into clients to build and
refusals (``mcp_core.group.plan_group``) are the core's, shared with ``mcp_asyncio``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from types import MappingProxyType, TracebackType
from typing import Any

from _mcp_io.client import client_keywords, publish, server_log
from mcp_core import (
    CallToolResult,
    McpError,
    Status,
    Tool,
)
from mcp_core.group import GroupSpecs, down_error, plan_group

from ._client import Client

__all__ = ["ClientGroup"]

# The keywords a group passes on to every client as they are (the rest are spec fields).
_CLIENT_KEYWORDS = client_keywords(Client)


# --- the blocking group ------------------------------------------------------------------------


class ClientGroup:
    """Many MCP servers, one namespaced tool list; blocking and safe to use from many threads.

    ``with ClientGroup({"fs": {...}, "web": {...}}) as group:`` starts every client, waits (one
    shared deadline: the largest ``init_timeout``, unless ``wait=False``) and, when the block
    ends, stops them all at once, leaving no process behind. ``specs`` is a mapping of server
    name to ``Spec`` or mapping (a mapping gets ``name`` = its key unless it has one) or a
    loaded config (``.servers``, ``.skipped``). ``client_options`` go to every client: Client
    keywords (``elicitation=``, ...) as they are, spec fields (``call_timeout=``, ...) over
    each server's own. A server refused here is reported by ``status()``, never raised;
    ``TypeError`` only for an unknown option or ``specs`` of the wrong type.

    ``fail_fast=True`` makes the group's readiness waits (the ``with`` block's and
    ``await_ready``'s) stop waiting for a server as soon as a connect attempt of it fails: a
    crash-looping server then costs one attempt, not the whole deadline, and keeps retrying
    in the background (its Status shows ``last_error`` and ``retry_in``; a later call works
    once it is up). It is a choice of the group's waits, not of the clients: each client's own
    ``await_ready`` keeps its spec's ``fail_fast``. With ``fail_fast=False`` (the default) the
    group waits for each server as its spec says, so a server whose spec has ``fail_fast`` is
    still given up on at its first failure.

    Tool names are ``mcp__<server>__<tool>`` (see ``ToolTable``); the key of a server in
    ``specs`` is its name there, in ``status()`` and in ``clients``.
    """

    def __init__(
        self,
        specs: GroupSpecs,
        /,
        *,
        wait: bool = True,
        fail_fast: bool = False,
        **client_options: Any,
    ) -> None:
        plan = plan_group(specs, client_options, client_keywords=_CLIENT_KEYWORDS)
        self._order = plan.order
        self._clients, self._down = plan.build(
            lambda spec: Client(spec, wait=False, **plan.client_options)
        )
        self._table = plan.table
        self._init_timeout = plan.init_timeout
        self._wait = wait
        self._fail_fast = fail_fast
        for name, status in self._down.items():
            server_log(name).warning("server %r is not started: %s", name, status.last_error)
        self._lock = threading.Lock()  # guards the table

    @property
    def clients(self) -> Mapping[str, Client]:
        """The client of every server that was started (refused servers have none)."""
        return MappingProxyType(self._clients)

    def __repr__(self) -> str:
        states = ", ".join(f"{name}={s.state}" for name, s in self.status().items())
        return f"<mcp_sync.ClientGroup {states}>"

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start every client; each connects in the background, so this returns at once.

        If a client cannot start, the ones already started are stopped and its error is
        raised.
        """
        started: list[Client] = []
        try:
            for client in self._clients.values():
                client.start()
                started.append(client)
        except BaseException:
            _all_at_once([client.stop for client in started])
            raise

    def stop(self) -> None:
        """Stop every client at once and wait until every server process is gone. Never
        raises for a server; idempotent."""
        _all_at_once([client.stop for client in self._clients.values()])

    def __enter__(self) -> ClientGroup:
        self.start()
        if self._wait:
            try:
                self.await_ready(self._init_timeout)
            except BaseException:  # only an interrupt: await_ready never raises for a server
                self.stop()
                raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- calls -----------------------------------------------------------------------------

    def await_ready(
        self, timeout: float = 60.0, *, fail_fast: bool | None = None
    ) -> dict[str, Status]:
        """Wait until every server is ready or the shared deadline ``timeout`` s from now has
        passed, and return every server's status. A server that failed (for good, or still
        retrying at the deadline) shows it in its Status: nothing is raised for it.
        ``fail_fast`` (default: the group's) True stops waiting for a server at its first
        failed attempt; False leaves it to each server's spec. ``ValueError`` for a negative
        timeout."""
        if timeout < 0:
            raise ValueError("timeout must be >= 0")
        # True decides every client's wait; otherwise each spec's fail_fast does (None).
        quick = True if (self._fail_fast if fail_fast is None else fail_fast) else None
        deadline = time.monotonic() + timeout
        # One after the other against the same deadline: every client connects in the
        # background meanwhile, so this waits no longer than waiting for all at once.
        for name, client in self._clients.items():
            try:
                client.await_ready(max(0.0, deadline - time.monotonic()), fail_fast=quick)
            except McpError as exc:
                server_log(name).debug("server %r is not ready: %s", name, exc)
        return self.status()

    def list_tools(self, *, refresh: bool = False, timeout: float | None = None) -> list[Tool]:
        """The tools of every ready server, named ``mcp__<server>__<tool>``, in server order.

        Each client is asked at once (``refresh`` and ``timeout`` are passed on); its cache
        makes that cheap, and when a server reports ``notifications/tools/list_changed`` its
        client drops the cache (``status().tools`` becomes None), so the next call here shows
        the new list. A server that is not ready is left out; one that fails to list is left
        out and logged to ``mcp_client.<server>``. Never raises for a server.
        """
        ready = [
            (name, client)
            for name, client in self._clients.items()
            if client.status().state == "ready"
        ]
        listed: dict[str, list[Tool]] = {}

        def fetch(name: str, client: Client) -> None:
            try:
                listed[name] = client.list_tools(refresh=refresh, timeout=timeout)
            except McpError as exc:
                server_log(name).warning("tools of server %r left out: %s", name, exc)

        _all_at_once([partial(fetch, name, client) for name, client in ready])
        out: list[Tool] = []
        with self._lock:
            for name in self._order:
                if name in listed:
                    out.extend(publish(self._table, name, listed[name]))
        return out

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, **options: Any
    ) -> CallToolResult:
        """Call the tool listed as ``name`` on its server, under the tool's own name;
        ``options`` (``timeout=``, ``progress=``, ``reservation=``) go to ``Client.call_tool``.

        Raises ``UnknownTool`` when no server has that name (nothing is sent); for a server
        that is down, that client's own error (``NotReady``, ``ConnectFailed``; for a server
        refused at construction ``ConnectFailed(permanent)`` with the reason); otherwise
        whatever ``Client.call_tool`` raises.
        """
        server, tool = self._route(name)
        return self._clients[server].call_tool(tool, arguments, **options)

    def resolve(self, name: str) -> tuple[str, str] | None:
        """``(server, tool)`` behind a name ``list_tools()`` returned; None if not (yet)
        listed. Never does I/O."""
        with self._lock:
            return self._table.resolve(name)

    def status(self) -> dict[str, Status]:
        """Every server's status, in the order of ``specs``; never blocks on I/O."""
        return {
            name: self._down[name] if name in self._down else self._clients[name].status()
            for name in self._order
        }

    # --- routing ---------------------------------------------------------------------------

    def _route(self, name: str) -> tuple[str, str]:
        with self._lock:
            route = self._table.resolve(name)
            server = self._table.server_of(name)
            if route is None and server is None:
                raise self._table.unknown(name)
        if route is not None:
            return route
        assert server is not None
        if server in self._down:
            raise down_error(self._down[server])
        # Not listed yet (cheap: the client's cache); raises the client's error if it is down.
        tools = self._clients[server].list_tools()
        with self._lock:
            publish(self._table, server, tools)
            route = self._table.resolve(name)
            if route is None:
                raise self._table.unknown(name)
        return route


def _all_at_once(calls: list[Callable[[], None]]) -> None:
    """Run ``calls`` concurrently (the last one in this thread) and return when all have
    returned. The threads are not daemons: an interrupted caller still lets them finish,
    so a stop still removes its processes before the interpreter exits."""
    threads = [threading.Thread(target=call, name="mcp-sync-group") for call in calls[:-1]]
    for thread in threads:
        thread.start()
    try:
        if calls:
            calls[-1]()
    finally:
        for thread in threads:
            thread.join()
