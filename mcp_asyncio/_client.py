# The source of mcp_sync/_client.py (scripts/unasync.py generates it): edit here, then run it.
"""``Client``: what the application holds of a session with one MCP server, on anyio (its
methods and their documentation).

What runs is ``_session.Session``: the machine, the waiters, the processes and the background
work. The client builds one, hands each call to it as an event for a new ticket, and does no
I/O of its own.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Unpack, cast

from _mcp_io.client import ProgressCallback as ProgressCallback
from _mcp_io.client import (
    caller_meta,
    output_adapter,
    replaying_spec,
    require_http_stack,
    server_log,
    with_data,
)
from _mcp_io.http import client_network
from _mcp_io.otel import end_call_span, start_call_span
from mcp_core import (
    AwaitReady,
    CallTool,
    CallToolResult,
    Completion,
    FollowTask,
    GetPromptResult,
    ListItems,
    ListTools,
    McpError,
    Prompt,
    ReadResourceResult,
    Request,
    Reservation,
    Resource,
    ResourceTemplate,
    RootsChanged,
    Spec,
    SpecFields,
    Status,
    Subscribe,
    TaskStatus,
    TokenStore,
    Tool,
    Unsubscribe,
)
from mcp_core.driver import CompletionRef, completion_params

from ._session import (
    AssertionCallback,
    AuthorizeCallback,
    CompletionCallback,
    DeviceCodeCallback,
    Handler,
    ListChangedCallback,
    Session,
    UpdateCallback,
)

if TYPE_CHECKING:
    import ssl

    from mcp_core.skills import Skill

__all__ = [
    "AssertionCallback",
    "AuthorizeCallback",
    "Client",
    "CompletionCallback",
    "DeviceCodeCallback",
    "Handler",
    "ListChangedCallback",
    "ProgressCallback",
    "Task",
    "UpdateCallback",
]


class Client:
    """A client for one MCP server, on anyio (asyncio or trio).

    ``async with Client(...)`` starts it and, unless ``wait=False``, waits until it is ready;
    leaving the block stops it. ``await start()`` and ``await stop()`` do the same by hand.
    Constructing with a refused spec raises ``InvalidSpec`` and starts nothing.

    A client belongs to the event loop it was started on: used from another loop, any call
    (``stop()`` too) raises ``WrongEventLoop``.

    A client belongs to the process that started it. In a child made by ``os.fork()``, the
    pipes, sockets and request ids are the parent's session's, which goes on unaffected:
    every call there (``call_tool``, the lists, ``request``, ``ping``, ``await_ready``,
    ``status``, ``start``, ...) raises ``UsedAfterFork`` and touches nothing, and ``stop()``
    (so the end of an ``async with`` block) returns at once without raising, leaving the
    parent's server and pipes alone. A new client made in the child works.

    A started client that is never stopped is stopped for you, with a ``ResourceWarning``
    ("unclosed client ...", as an unclosed file gets): once its owner dropped every reference
    and it is collected, its server is shut down as by ``stop()`` (close stdin, SIGTERM,
    SIGKILL of the process group, each after ``shutdown_grace``), and so is one still
    running when the run of its event loop ends. Call ``stop()`` or use ``async with`` rather
    than rely on either.
    """

    def __init__(
        self,
        spec: Spec | Mapping[str, Any] | None = None,
        /,
        *,
        wait: bool = True,
        record: str | os.PathLike[str] | None = None,
        replay: str | os.PathLike[str] | None = None,
        elicitation: Handler | None = None,
        elicitation_modes: Iterable[str] = ("form",),
        elicitation_complete: CompletionCallback | None = None,
        sampling: Handler | None = None,
        sampling_tools: bool = False,
        accept_tasks: bool = False,
        roots: Handler | None = None,
        on_list_changed: ListChangedCallback | None = None,
        authorize: AuthorizeCallback | None = None,
        assertion: AssertionCallback | None = None,
        on_device_code: DeviceCodeCallback | None = None,
        token_store: TokenStore | None = None,
        interactive: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        **fields: Unpack[SpecFields],
    ) -> None:
        """Raises ``InvalidSpec`` for a refused spec, ``NoHttpClient`` for an https URL on a
        Python without ``ssl``, ``ValueError`` for impossible ``elicitation_modes``, for
        ``sampling_tools`` without ``sampling``, or for ``accept_tasks`` without ``sampling``
        or ``elicitation``; nothing is started. See ``Handler`` and ``CompletionCallback`` for
        the handlers. ``sampling_tools=True`` declares ``sampling: {"tools": {}}`` (MCP
        2025-11-25 client/sampling): the sampling handler then also gets requests with
        ``tools`` and ``toolChoice`` (docs/server-requests.md). ``accept_tasks=True`` lets a
        2025-11-25 server ask for the sampling and elicitation requests to run as tasks
        (basic/utilities/tasks): the client answers at once with a task, runs the same handler,
        and serves the server's ``tasks/get``, ``tasks/result``, ``tasks/list`` and
        ``tasks/cancel`` (docs/tasks.md).
        ``on_list_changed(kind)`` is called each time the server says its tools, prompts or
        resources changed (see ``ListChangedCallback``; in the 2026-07-28 era it keeps a
        ``subscriptions/listen`` stream open for them).

        ``record="s.jsonl"`` writes the session's events there (docs/replay.md).
        ``replay="s.jsonl"`` answers every request from that recording instead of a server
        (docs/testing.md): the spec's command, url and the rest of how to reach a server are
        not used, its name and prices default to the recording's, and everything else (the
        handlers, the validation, the errors) is the real client's. A recording that cannot
        be opened raises ``OSError``, one that is no recording ``ValueError``; not with
        ``record`` (``ValueError``).

        OAuth (MCP 2025-11-25 basic/authorization; a ``url`` server without an ``Authorization``
        header, unless the spec's ``oauth`` says ``enabled: false``): when the server answers
        401 the client discovers its authorization server, registers if it must, and gets a
        token, then sends the request again. ``token_store`` keeps logins
        (``mcp_core.TokenStore``; by default an ``InMemoryTokenStore`` of this client's own):
        its record for the server is read here (a store that raises, such as a corrupt token
        file, raises here) and used without any flow while it lasts. The browser step opens the
        user's browser and receives the redirect on a one-shot listener on 127.0.0.1 (the spec's
        ``oauth.redirect_port``, else any port) for up to 5 minutes, in a worker thread that
        ``stop()`` ends; ``authorize=`` replaces it (see ``AuthorizeCallback``). With
        ``oauth={"grant": "jwt_bearer"}`` (workload identity, SEP-1933) the platform's JWT comes
        from the spec's ``oauth.assertion_file`` or from ``assertion=`` (see
        ``AssertionCallback``); neither or both raises ``InvalidSpec``, as ``assertion=`` for
        another grant does. With ``oauth={"grant": "enterprise"}`` (enterprise-managed
        authorization, SEP-990) the user's ID token comes the same way, from
        ``oauth.id_token_file`` or ``assertion=`` (docs/oauth.md). With
        ``oauth={"grant": "device_code", ...}`` (RFC 8628) the user approves on another
        device: ``on_device_code=`` shows them the code (see ``DeviceCodeCallback``; by
        default it goes to stderr) while the client polls.
        Tokens are DPoP-bound (RFC 9449) where the authorization server offers it and PyJWT is
        installed (the spec's ``oauth.dpop``, ``"auto"`` by default; ``true`` without PyJWT
        raises ``InvalidSpec``); the key is kept with the token.
        ``interactive=False``: no browser step at all, a flow that needs one fails with
        ``AuthorizationRequired``. Leave room for the user in ``init_timeout``: ``async with
        Client(...)`` waits that long for readiness.

        The network (docs/networks.md): the spec's ``verify`` and ``cert``, or ``ssl_context``
        (an ``ssl.SSLContext`` used for every https connection of this client, its OAuth
        requests included; not with ``verify`` or ``cert``: ``InvalidSpec``; ignored for a
        stdio server); a proxy from the spec's ``proxy``, else from
        ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` (and their lower-case spellings), read
        here, once. A CA bundle or client certificate that cannot be loaded, or a proxy
        variable that is not an http:// URL, raises ``InvalidSpec``."""
        if replay is not None:
            if record is not None:
                raise ValueError("record= and replay= together: a client records or replays")
            built = replaying_spec(replay, spec, fields)
        else:
            built = Spec.build(spec, **fields)
        self._spec = built
        require_http_stack(built)  # NoHttpClient: an https URL without ssl
        network = client_network(built, ssl_context, os.environ)
        # Only a feature with a handler is declared to the server (MCP 2025-11-25
        # basic/lifecycle §Capability Negotiation).
        given = {
            "elicitation/create": elicitation,
            "sampling/createMessage": sampling,
            "roots/list": roots,
        }
        self._session = Session(
            built,
            network,
            record=record,
            handlers={m: h for m, h in given.items() if h is not None},
            elicitation_modes=elicitation_modes,
            sampling_tools=sampling_tools,
            accept_tasks=accept_tasks,
            elicitation_complete=elicitation_complete,
            authorize=authorize,
            assertion=assertion,
            on_device_code=on_device_code,
            token_store=token_store,
            interactive=interactive,
            on_list_changed=on_list_changed,
        )
        self._wait = wait

    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def spec(self) -> Spec:
        """The validated spec this client runs (its ``repr`` is redacted)."""
        return self._spec

    def __repr__(self) -> str:
        return f"<mcp_asyncio.Client {self.name!r} {self._session.machine.state}>"

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start connecting in the background and return at once. A second call does nothing;
        a call after ``stop()`` raises ``NotReady('closed')``, one in a forked child of the
        process that started it ``UsedAfterFork``."""
        # The session gets this client only to notice its collection: it keeps no reference.
        await self._session.start(self)

    async def stop(self) -> None:
        """Close the session and wait until every server process is gone: calls still waiting
        get their error, later calls raise ``NotReady('closed')``. Never raises for the
        session's own state; idempotent. A cancelled caller still waits for the shutdown to
        end (shielded).

        In a forked child of the process that started the client it returns at once and never
        raises: the session is the parent's, and nothing of it is touched (no write, no
        signal, no wait), so that an ``async with Client(...)`` block unwinds in the child too.
        On another event loop it raises ``WrongEventLoop`` (unless the client has stopped
        already).
        """
        await self._session.stop()

    async def __aenter__(self) -> Client:
        await self.start()
        if self._wait:
            try:
                await self.await_ready(self._spec.init_timeout)
            except BaseException:
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

    # --- calls ---------------------------------------------------------------------------

    async def await_ready(self, timeout: float = 60.0, *, fail_fast: bool | None = None) -> Status:
        """Wait until the session is ready; raises ``ConnectFailed`` or ``NotReady`` if not
        by ``timeout``. ``fail_fast`` decides this wait only: True raises ``ConnectFailed`` at
        the first failed attempt (the client keeps retrying), False waits through retries,
        None follows the spec's ``fail_fast``."""
        value = await self._session.call(
            lambda t: AwaitReady(
                now=time.monotonic(), ticket=t, timeout=timeout, fail_fast=fail_fast
            )
        )
        return cast(Status, value)

    async def list_tools(
        self,
        *,
        refresh: bool = False,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> list[Tool]:
        """The server's tools, from the cache unless ``refresh``; raises ``McpError`` on
        failure. ``meta`` goes in each page's ``params._meta`` as for ``call_tool`` (a list
        the cache answers sends nothing: pass ``refresh=True`` too to be sure it goes)."""
        sent = caller_meta("tools/list", meta)
        value = await self._session.call(
            lambda t: ListTools(
                now=time.monotonic(), ticket=t, refresh=refresh, timeout=timeout, meta=sent
            )
        )
        return cast(list[Tool], value)

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
        """Call tool ``name``; a tool's own failure is a result with ``is_error=True``. Raises
        ``McpError`` (``RequestTimeout``, ``ServerExited``, ``Busy``, ...) otherwise.

        A tool the server runs as a task (a long-running one) is followed to its result: the
        call returns when the task ends, ``progress`` hears of each status change (its
        ``message`` is the server's status message), the ``elicitation=``/``sampling=``
        handlers answer what the task asks for, and ``timeout`` covers the whole task: at the
        deadline, or when the caller is cancelled, the task is cancelled on the server too
        (``tasks/cancel``). ``task=None`` (the default) asks for a task where the tool requires
        one (2025-11-25; the tools are listed first if they were not) or the server says it
        needs one (2026-07-28); ``task=True`` asks for one (``NotSupported`` where the server
        runs none), ``task=False`` never. ``TaskCancelled`` when someone else cancelled it.
        ``start_tool`` gives the task's handle instead.

        ``progress(progress, total, message)`` is called for each progress notification. It
        must be a plain function (an awaitable it returns is closed, not awaited); its
        exceptions are logged.

        A priced tool (the spec's ``prices``) needs ``reservation=`` from your ``SpendGate``
        (else ``UnmeteredCall``, nothing sent); the client commits it once the request is sent
        and releases it if the call fails before that. With OpenTelemetry configured, the call
        is a client span and its trace context goes in ``_meta`` (``_mcp_io/otel.py``).

        ``timeout`` (default: the spec's ``call_timeout``) counts from admission; each progress
        notification pushes the deadline out by it, never past ``max_call_timeout`` from
        admission and never in. A ``timeout`` above ``max_call_timeout`` is honoured, not
        refused: it is the caller's own finite bound, and the cap is there only so that
        progress cannot keep a call alive for ever.

        ``output_type=T`` (a pydantic model, a dataclass, ``list[int]``, ...; the ``pydantic``
        extra): ``result.data`` is the structured content validated as a ``T``; content that
        is missing or does not fit raises ``OutputValidationError`` (its ``path`` says where),
        a tool's own failure comes back as it is with ``data`` None. Without pydantic this
        raises ``ImportError`` before anything is sent.

        ``meta`` (JSON values) goes in the request's ``params._meta`` beside what the client
        puts there itself: a key of those (``progressToken``, any ``io.modelcontextprotocol/``
        key, ``traceparent``, ``tracestate``) or a value JSON cannot carry raises
        ``InvalidArguments`` with nothing sent. The other requests take ``meta`` the same way.
        """
        session = self._session
        session.check()  # another loop, a forked child: no span, nothing imported
        adapter = None if output_type is None else output_adapter(output_type)
        caller_meta("tools/call", meta)  # refused before a span starts
        trace, span = start_call_span(self.name, name, self._spec.transport)
        sent = caller_meta("tools/call", meta, trace)
        reservations = session.reservations
        try:
            if task is None and session.machine.lists_tools_first:
                with contextlib.suppress(McpError):  # a hint only: the call says what fails
                    await self.list_tools()
            value = await session.call(
                lambda t: reservations.call(
                    t,
                    reservation,
                    lambda facts: CallTool(
                        now=time.monotonic(),
                        ticket=t,
                        name=name,
                        arguments=arguments,
                        timeout=timeout,
                        progress=progress is not None,
                        reservation=facts,
                        meta=sent,
                        task=task,
                    ),
                ),
                progress,
            )
        except BaseException as exc:
            if span is not None:
                end_call_span(span, error=exc)
            raise
        result = cast(CallToolResult, value)
        if span is not None:
            end_call_span(span, result)
        return result if adapter is None else with_data(result, name, adapter)

    async def start_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Task:
        """Call tool ``name`` as a task and return its handle as soon as the server created
        it (``timeout``: for that answer); ``task.result()`` waits for the outcome. A
        2026-07-28 server may answer at once instead: the handle then holds the result and
        its ``id`` is None. ``NotSupported`` where the server runs no tool calls as tasks
        (2025-11-25). Over HTTP a task outlives the client: keep ``task.id`` to attach again
        with ``client.task(id)``."""
        sent = caller_meta("tools/call", meta)
        value = await self._session.call(
            lambda t: CallTool(
                now=time.monotonic(),
                ticket=t,
                name=name,
                arguments=arguments,
                timeout=timeout,
                meta=sent,
                task=True,
                detach=True,
            )
        )
        if isinstance(value, TaskStatus):
            return Task(self, value.task_id, value)
        return Task(self, None, None, cast(CallToolResult, value))

    def task(self, task_id: str) -> Task:
        """The handle of task ``task_id`` (from ``start_tool``, an earlier client, or
        ``list_tasks``); nothing is sent until it is used."""
        return Task(self, task_id, None)

    async def list_tasks(self, *, timeout: float | None = None) -> list[TaskStatus]:
        """The server's tasks of this client (2025-11-25 ``tasks/list``, every page, never
        cached). ``NotSupported`` where the server does not list them, which includes every
        2026-07-28 server: that version has no such request."""
        value = await self._list("tasks", True, timeout, None)
        return cast(list[TaskStatus], value)

    # Beyond tools: resources, prompts, completion, logging, ping. A method whose capability the
    # server did not declare raises ``NotSupported`` before anything is sent; other failures
    # raise ``McpError`` as ``call_tool`` does (``RequestTimeout``, ``JsonRpcError``,
    # ``InvalidResponse``, ...).

    async def list_resources(
        self,
        *,
        refresh: bool = False,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> list[Resource]:
        """The server's resources, every page; from the cache unless ``refresh`` (kept until
        the server says the list changed, and no longer than a 2026-07-28 server's ``ttlMs``).
        ``meta`` as for ``list_tools``."""
        return cast(list[Resource], await self._list("resources", refresh, timeout, meta))

    async def list_resource_templates(
        self,
        *,
        refresh: bool = False,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> list[ResourceTemplate]:
        """The server's resource templates, every page (cached like ``list_resources``)."""
        return cast(
            list[ResourceTemplate],
            await self._list("resource_templates", refresh, timeout, meta),
        )

    async def list_prompts(
        self,
        *,
        refresh: bool = False,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> list[Prompt]:
        """The server's prompts, every page (cached like ``list_resources``)."""
        return cast(list[Prompt], await self._list("prompts", refresh, timeout, meta))

    async def read_resource(
        self, uri: str, *, timeout: float | None = None, meta: Mapping[str, Any] | None = None
    ) -> ReadResourceResult:
        """Read resource ``uri`` (a listed one, or a template filled in): its contents, text
        or ``blob`` bytes."""
        value = await self._request("resources/read", {"uri": uri}, timeout, meta=meta)
        return cast(ReadResourceResult, value)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> GetPromptResult:
        """Prompt ``name`` filled in with ``arguments`` (strings): its messages."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        value = await self._request("prompts/get", params, timeout, meta=meta)
        return cast(GetPromptResult, value)

    async def complete(
        self,
        ref: CompletionRef,
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Completion:
        """Values the server suggests for ``argument`` of a prompt or resource template
        (``ref``: ``{"type": "ref/prompt", "name": ...}``, ``{"type": "ref/resource",
        "uri": ...}``, a ``PromptRef`` or a ``ResourceRef``), given what the user typed so far
        (``value``) and the arguments already chosen (``context``); ``ValueError`` for another
        ``ref``."""
        params = completion_params(ref, argument, value, context)
        completion = await self._request("completion/complete", params, timeout, meta=meta)
        return cast(Completion, completion)

    async def set_logging_level(
        self, level: str, *, timeout: float | None = None, meta: Mapping[str, Any] | None = None
    ) -> None:
        """Ask the server to send its log messages at ``level`` and above (one of
        ``mcp_core.LOG_LEVELS``, else ``ValueError``); they go to the ``logging`` logger
        ``mcp.server.<name>``. The level is kept: every later session gets it too (without
        ``meta``, which goes on this request only)."""
        await self._request("logging/setLevel", {"level": level}, timeout, meta=meta)

    async def ping(
        self, *, timeout: float | None = None, meta: Mapping[str, Any] | None = None
    ) -> float:
        """Ask the server whether it is there: the round trip in seconds."""
        return cast(float, await self._request("ping", None, timeout, meta=meta))

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Send request ``method`` with ``params`` and return its result as received: for
        what this client has no method of its own for. ``ValueError`` for a method it does
        have one for (``tools/call``, the lists, subscriptions: their method says why), or a
        notification."""
        value = await self._request(method, params, timeout, raw=True, meta=meta)
        return cast(dict[str, Any], value)

    # Agent Skills (the io.modelcontextprotocol/skills extension, SEP-2640; mcp_core.skills).
    # Each raises ``NotSupported`` before sending when the server did not declare the extension
    # (``status().extensions``). Nothing is read on connect or listing.

    async def list_skills(self, *, timeout: float | None = None) -> list[Skill]:
        """The server's skills, every page of ``skills/list`` (``timeout`` per page), never
        cached; ``ListTooLong`` past the spec's ``max_list_pages``. An entry the extension
        says to refuse (no manifest, more than 512 files or 16 MiB) is left out, with a
        warning on the ``mcp_client.<name>`` logger. A skill that is not listed may still be
        there: ``get_skill`` asks for one by URI."""
        from mcp_core.skills import SkillsListing  # Skills are imported by the first use

        listing = SkillsListing(self._spec.max_list_pages)
        while (params := listing.params()) is not None:
            listing.add(await self._request("skills/list", params, timeout, raw=True))
        for refused in listing.refused:
            server_log(self.name).warning("skills/list: entry left out: %s", refused)
        return listing.skills

    async def get_skill(self, uri: str, *, timeout: float | None = None) -> Skill:
        """The skill whose ``SKILL.md`` is ``uri`` (``skills/get``), listed or not; after a
        ``SkillVerificationError``, its fresh manifest. ``JsonRpcError`` (``-32602``) for
        one the server does not have."""
        result = await self._request("skills/get", {"uri": uri}, timeout, raw=True)
        from mcp_core.skills import skill_from_get

        return skill_from_get(result)

    async def read_skill(
        self, skill: Skill, path: str = "SKILL.md", *, timeout: float | None = None
    ) -> str | bytes:
        """File ``path`` of ``skill`` (relative to the skill's root, or a full URI), read with
        ``resources/read`` and checked against the skill's manifest: its text, or its bytes
        for a binary file. ``SkillVerificationError`` (``mcp_core.skills``) with ``reason``
        ``'unlisted'`` before anything is sent for a path the manifest lacks, else ``'size'``,
        ``'digest'`` or (``SKILL.md``) ``'frontmatter'`` when what came back differs from the
        listing: do not use it (``get_skill`` gets a fresh manifest)."""
        uri = skill.resource(path).uri  # an unlisted path raises here, before sending
        result = await self.read_resource(uri, timeout=timeout)
        from mcp_core.skills import read_skill_contents

        return read_skill_contents(skill, uri, result)

    async def read_skill_directory(
        self, directory: Skill | str, *, timeout: float | None = None
    ) -> list[Resource]:
        """The children of a directory resource (a skill's, or the URI of a directory in one,
        without a trailing slash), every page of ``resources/directory/read`` (``timeout`` per
        page; more than the spec's ``max_list_pages`` pages: ``ListTooLong``). A
        sub-directory's ``mime_type`` is ``'inode/directory'``. ``NotSupported`` before
        sending unless the server's skills settings say ``directoryRead: true``;
        ``JsonRpcError`` (``-32602``) for a URI that is not a directory. The children never
        extend the skill's manifest: ``read_skill`` still reads only the files it lists."""
        from mcp_core.skills import DirectoryListing

        listing = DirectoryListing(directory, self._spec.max_list_pages)
        while (params := listing.params()) is not None:
            page = await self._request("resources/directory/read", params, timeout, raw=True)
            listing.add(page)
        return listing.resources

    async def subscribe(
        self, uri: str, on_update: UpdateCallback, *, timeout: float | None = None
    ) -> None:
        """Have ``on_update(uri)`` called each time the server says resource ``uri`` changed
        (read it again for the new contents), until ``unsubscribe(uri)``. Returns once the
        server accepted it (2026-07-28: once the listen stream asking for it was sent);
        subscribing again replaces the callback. The subscription outlives reconnects. If it
        fails, the callback it replaced (if any) stays."""
        session = self._session
        session.check()  # another loop, a forked child: the callbacks stay as they are
        with session.lock:
            previous = session.on_update.get(uri)
            # Before the answer: an update may be performed right after it, in the same feed.
            session.on_update[uri] = on_update
        try:
            await session.call(
                lambda t: Subscribe(now=time.monotonic(), ticket=t, uri=uri, timeout=timeout)
            )
        except BaseException:
            with session.lock:
                if session.on_update.get(uri) is on_update:  # not replaced meanwhile
                    if previous is None:
                        del session.on_update[uri]
                    else:
                        session.on_update[uri] = previous
            raise

    async def unsubscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """Stop the updates of ``uri``: its callback is not called from now on, even if this
        raises (after telling the server failed)."""
        session = self._session
        session.check()
        with session.lock:
            session.on_update.pop(uri, None)
        await session.call(
            lambda t: Unsubscribe(now=time.monotonic(), ticket=t, uri=uri, timeout=timeout)
        )

    def notify_roots_changed(self) -> None:
        """Tell the server the answer of the ``roots=`` handler changed, so that it asks again
        (legacy sessions; 2026-07-28 servers ask on every request that needs roots). Never
        blocks; does nothing without a ``roots=`` handler or a ready session."""
        session = self._session
        session.check()
        session.feed(RootsChanged(now=time.monotonic()))

    def status(self) -> Status:
        """The session's status now; never waits for I/O. Its ``state`` is ``'new'`` until
        ``start()`` and ``'closed'`` once stopped (even if it never started); a call before
        ``start()`` raises ``NotReady('new')``. In a forked child it raises ``UsedAfterFork``
        (the parent's session is not this process's to report)."""
        return self._session.status()

    async def _list(
        self,
        kind: str,
        refresh: bool,
        timeout: float | None,
        meta: Mapping[str, Any] | None,
    ) -> object:
        method = kind.replace("resource_templates", "resources/templates") + "/list"
        sent = caller_meta(method, meta)
        return await self._session.call(
            lambda t: ListItems(
                now=time.monotonic(),
                ticket=t,
                kind=kind,
                refresh=refresh,
                timeout=timeout,
                meta=sent,
            )
        )

    async def _request(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        timeout: float | None,
        raw: bool = False,
        meta: Mapping[str, Any] | None = None,
    ) -> object:
        sent = caller_meta(method, meta)
        return await self._session.call(
            lambda t: Request(
                now=time.monotonic(),
                ticket=t,
                method=method,
                params=params,
                timeout=timeout,
                raw=raw,
                meta=sent,
            )
        )


class Task:
    """A tool call the server runs as a task: ``Client.start_tool`` or ``Client.task`` gives
    one. ``id`` is the server's task id (None when the server answered at once, with no
    task); ``last`` is the status as last seen, None before any.

    ``status()`` asks the server where the task stands; ``result()`` waits for its outcome
    (the tool's ``CallToolResult``, or the error it ended with); ``cancel()`` asks the server
    to cancel it. A handle holds no resources: drop it, or make another for the same id."""

    def __init__(
        self,
        client: Client,
        task_id: str | None,
        last: TaskStatus | None,
        result: CallToolResult | None = None,
    ) -> None:
        self._client = client
        self.id = task_id
        self.last = last
        self._result = result

    def __repr__(self) -> str:
        where = self.last.status if self.last is not None else "unknown"
        return f"<Task {self.id!r} on {self._client.name!r}: {where}>"

    async def status(self, *, timeout: float | None = None) -> TaskStatus:
        """Where the task stands now (``tasks/get``); ``JsonRpcError`` (-32602) for a task the
        server does not know (never made, or past its ``ttl``). A handle with no id reports
        ``completed``, as the call was."""
        if self.id is None:
            return TaskStatus(task_id="", status="completed")
        value = await self._client._request("tasks/get", {"taskId": self.id}, timeout)
        self.last = cast(TaskStatus, value)
        return self.last

    async def result(
        self,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        cancel: bool = False,
    ) -> CallToolResult:
        """Wait for the task to end and return the tool's result, as ``call_tool`` would
        (``TaskCancelled`` if it was cancelled, the ``JsonRpcError`` it failed with).
        ``progress`` hears of each status change. At ``timeout`` (default: the spec's
        ``call_timeout``) this raises ``RequestTimeout`` and the task goes on, unless
        ``cancel=True``: then the task is cancelled at the deadline, or when the caller is."""
        if self.id is None:
            assert self._result is not None
            return self._result
        task_id = self.id
        value = await self._client._session.call(
            lambda t: FollowTask(
                now=time.monotonic(),
                ticket=t,
                task_id=task_id,
                timeout=timeout,
                progress=progress is not None,
                cancel=cancel,
            ),
            progress,
        )
        return cast(CallToolResult, value)

    async def cancel(self, *, timeout: float | None = None) -> TaskStatus | None:
        """Ask the server to cancel the task (``tasks/cancel``): the status it reports
        (2025-11-25), or None (the 2026-07-28 extension acknowledges with nothing: ask
        ``status()``). Cancelling is cooperative: the task may still end ``completed``.
        ``JsonRpcError`` (-32602) for a task that already ended (2025-11-25) or is unknown.
        A handle with no id has nothing to cancel: None."""
        if self.id is None:
            return None
        value = await self._client._request("tasks/cancel", {"taskId": self.id}, timeout)
        if isinstance(value, TaskStatus):
            self.last = value
        return cast(TaskStatus | None, value)
