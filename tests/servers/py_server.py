"""A stdio MCP server built with the official Python SDK (mcp 2.x), used as a real peer.

Run: python tests/servers/py_server.py   (speaks newline-delimited JSON-RPC on stdin/stdout)

The SDK serves both eras on one stdio connection, decided by the client's first request: a
request whose params._meta carries "io.modelcontextprotocol/protocolVersion" (e.g. a
`server/discover` probe) opens a modern 2026-07-28 connection, anything else (normally
`initialize`) opens a legacy one. Once chosen, the other era is refused on that connection.

Tools:
  echo(text) -> text
  add(a, b) -> int, as structuredContent {"result": a + b}
  slow(seconds, steps) -> "done", reporting progress `steps` times over `seconds`
  fail() -> a result with isError true
  greet() -> "hello <name>", the name asked of the client (elicitation): in the 2026-07-28 era
            through an input_required round, in the legacy era as an elicitation/create request
  connect_account() -> the client's action on a URL-mode elicitation (legacy era, 2025-11-25);
            on "accept" the server sends notifications/elicitation/complete before answering
  needs_connection() -> always the error -32042 (URLElicitationRequiredError) naming one URL
            elicitation, id "py-connect-2"
  bump() -> the counter's new value (int, structured); test://counter changes, and its
            subscribers are told (notifications/resources/updated, see Subscriptions)
  log(level, text) -> "ok", after sending notifications/message {level, data: text,
            logger: "py-test-server"} on this call's own stream (legacy: unless below the
            connection's logging/setLevel level; modern: only if the call's _meta asks for
            "io.modelcontextprotocol/logLevel" at or below `level`)
  whoami() -> JSON text {"client": the clientInfo the client gave (legacy: initialize's; modern:
            this request's _meta), "meta": this request's params._meta as received}
  change_lists(listeners=0) -> "ok", after sending notifications/resources/list_changed,
            notifications/prompts/list_changed and notifications/tools/list_changed (the lists
            themselves do not change); with listeners=N it first waits (up to 10 s; then an
            error result) until at least N modern listen streams are open, so that a client
            whose listen is still on its way hears the changes

Icons (2025-11-25): the server (serverInfo), echo, the simple prompt and test://static/hello
  carry ICONS: one https PNG and one dark-theme data: SVG.

Resources (resources/list pages 4 at a time, cursor opaque; 10 in all):
  test://static/hello     text "hello world", text/plain
  test://static/blob      blob b"\x00\x01binary\xff", application/octet-stream
  test://counter          text: the counter ("0" at start), text/plain; subscribable
  test://static/extra/N   N = 1..7, text "extra N", text/plain (filler, to make the list page)
Resource template: test://items/{item_id} -> text "item <item_id>", text/plain
Prompts:
  simple                  no arguments; one user message "This is a simple prompt."
  greeting(name, style?)  one user message: style casual (default) "Hey <name>!",
                          formal "Good day, <name>.", pirate "Ahoy, <name>!"
Completion (completion/complete): ref/prompt "greeting" argument "style" -> the styles that
  start with the value; ref/resource "test://items/{item_id}" argument "item_id" -> the ids
  1..12 that start with the value; anything else -> no values.
Logging: logging/setLevel is served (legacy era), so the logging capability is declared.

Subscriptions, per era (bump() drives both):
  legacy   resources/subscribe and resources/unsubscribe {uri}; bump() sends
           notifications/resources/updated {uri: "test://counter"} to every connection
           subscribed to it: on the caller's own connection as part of the bump call (before its
           answer, on its stream), on any other on that connection's standalone channel (stdio:
           the pipe; Streamable HTTP: the GET stream, dropped if none is open).
  modern   subscriptions/listen {notifications: {resourceSubscriptions: ["test://counter"],
           toolsListChanged, promptsListChanged, resourcesListChanged}}: the SDK answers with
           notifications/subscriptions/acknowledged, then streams the matching events, each
           with _meta "io.modelcontextprotocol/subscriptionId" = the listen request's id.
  change_lists() sends its three notifications on the legacy caller's own stream, and to
  every modern listen stream that asked for them.
The counter and the subscriptions belong to the process: every HTTP session shares them.
tests/servers/SURFACE.md has example answers, what each HTTP mode delivers where, and the SDK's
limits (what this file works around).
"""

from __future__ import annotations

import json
import warnings
import weakref
from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ServerEvent
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, UrlElicitationRequiredError
from mcp_types import (
    INVALID_PARAMS,
    Completion,
    CompletionArgument,
    CompletionContext,
    ElicitRequestURLParams,
    EmptyResult,
    Icon,
    ListResourcesResult,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    PaginatedRequestParams,
    PromptListChangedNotification,
    PromptReference,
    ResourceListChangedNotification,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    ServerNotification,
    SetLevelRequestParams,
    SubscribeRequestParams,
    ToolListChangedNotification,
    UnsubscribeRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

# Logging is deprecated at 2026-07-28; the SDK warns on every use. This peer serves it on
# purpose (legacy era, and the modern per-request opt-in), so the warnings are noise here.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

ICONS = [
    Icon(src="https://example.com/icon.png", mime_type="image/png", sizes=["48x48"]),
    Icon(src="data:image/svg+xml;base64,PHN2Zy8+", mime_type="image/svg+xml", theme="dark"),
]


class ListenCount(InMemorySubscriptionBus):
    """The SDK's own bus of listen streams (each open stream is one listener of it), counting
    them: ``at_least(n)`` waits until n are open."""

    def __init__(self) -> None:
        super().__init__()
        self.open = 0
        self._waiting: list[tuple[int, anyio.Event]] = []

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        self.open += 1
        for wanted, reached in self._waiting:
            if self.open >= wanted:
                reached.set()
        done = False

        def gone() -> None:
            nonlocal done
            if not done:
                done, self.open = True, self.open - 1
            unsubscribe()

        return gone

    async def at_least(self, wanted: int) -> None:
        if self.open >= wanted:
            return
        reached = anyio.Event()
        self._waiting.append((wanted, reached))
        try:
            with anyio.fail_after(10):
                await reached.wait()
        finally:
            self._waiting.remove((wanted, reached))


LISTENS = ListenCount()
server: MCPServer = MCPServer(
    "py-test-server", version="1", log_level="WARNING", icons=ICONS, subscriptions=LISTENS
)
lowlevel = server._lowlevel_server  # the SDK's own Server: the only way to add these handlers


@server.tool(icons=ICONS)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers (structured output)."""
    return a + b


@server.tool()
async def slow(seconds: float, steps: int, ctx: Context) -> str:
    """Report progress `steps` times, spread over `seconds`, then return "done"."""
    for step in range(1, steps + 1):
        await anyio.sleep(seconds / steps)
        await ctx.report_progress(step, steps, f"step {step}/{steps}")
    return "done"


@server.tool()
def fail() -> str:
    """Always fail: the SDK turns ToolError into a result with isError true and this text."""
    raise ToolError("fail tool failed on purpose")


class Name(BaseModel):
    name: str = "Ada"


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def greet(person: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greet whoever the client says it is."""
    return f"hello {person.name}"


# The URLs carry a query, as real ones do (a state parameter): the client must pass them on
# untouched and never write them into its own error messages.
CONNECT_URL = "https://auth.example.com/connect?state=py-state-1"


@server.tool()
async def connect_account(ctx: Context) -> str:
    """Ask the user (URL mode) to connect an account; report completion if they accept."""
    result = await ctx.elicit_url("Connect your Example account", CONNECT_URL, "py-connect-1")
    if result.action == "accept":
        await ctx.request_context.session.send_elicit_complete("py-connect-1")
    return result.action


@server.tool()
def needs_connection() -> str:
    """Refuse with -32042 until the user completes a URL elicitation (never, here)."""
    raise UrlElicitationRequiredError(
        [
            ElicitRequestURLParams(
                message="Authorization is required for your Example files",
                url="https://auth.example.com/connect?state=py-state-2",
                elicitation_id="py-connect-2",
            )
        ]
    )


# --- legacy handshake: declare listChanged for tools, prompts and resources ---
# MCPServer builds its initialize answer with NotificationOptions() (every listChanged false) on
# stdio, Streamable HTTP and SSE alike; this wrapper changes the default for all three.
_create_initialization_options = lowlevel.create_initialization_options


def _initialization_options(
    notification_options: NotificationOptions | None = None,
    experimental_capabilities: dict[str, dict[str, Any]] | None = None,
    extensions: dict[str, dict[str, Any]] | None = None,
) -> InitializationOptions:
    options = notification_options or NotificationOptions(True, True, True)
    return _create_initialization_options(options, experimental_capabilities, extensions)


lowlevel.create_initialization_options = _initialization_options  # type: ignore[method-assign]


def connection_of(session: ServerSession) -> Connection:
    """The connection a request came on (the SDK keeps no public path to it from a handler)."""
    connection: Connection = session._connection
    return connection


def is_modern(ctx: Context) -> bool:
    return ctx.request_context.protocol_version in MODERN_PROTOCOL_VERSIONS


# Whether a call's own stream can carry notifications before its answer: true on stdio and for
# SSE answers; py_http_server sets it false in `json` mode, where the SDK drops them (a JSON body
# holds the answer alone), so they go on the connection's standalone channel (the GET stream).
CALL_STREAMS = True


async def notify_caller(ctx: Context, notification: ServerNotification) -> None:
    """Send `notification` to the calling connection (legacy era), on the call's own stream
    when it has one, else on the connection's standalone channel."""
    related = ctx.request_id if CALL_STREAMS else None
    await ctx.request_context.session.send_notification(notification, related_request_id=related)


# --- resources ---

HELLO_URI = "test://static/hello"
BLOB_URI = "test://static/blob"
COUNTER_URI = "test://counter"
ITEM_TEMPLATE = "test://items/{item_id}"
BLOB = b"\x00\x01binary\xff"
PAGE_SIZE = 4
ITEM_IDS = [str(n) for n in range(1, 13)]
counter = 0


@server.resource(HELLO_URI, name="hello", mime_type="text/plain", icons=ICONS)
def hello() -> str:
    return "hello world"


@server.resource(BLOB_URI, name="blob", mime_type="application/octet-stream")
def blob() -> bytes:
    return BLOB


@server.resource(COUNTER_URI, name="counter", mime_type="text/plain")
def counter_value() -> str:
    return str(counter)


def add_extra(n: int) -> None:
    @server.resource(f"test://static/extra/{n}", name=f"extra-{n}", mime_type="text/plain")
    def extra() -> str:
        return f"extra {n}"


for _n in range(1, 8):
    add_extra(_n)


@server.resource(ITEM_TEMPLATE, name="item", mime_type="text/plain")
def item(item_id: str) -> str:
    return f"item {item_id}"


async def list_resources_paged(
    ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
) -> ListResourcesResult:
    """resources/list in pages of PAGE_SIZE (MCPServer's own handler never pages)."""
    resources = await server.list_resources()
    cursor = params.cursor if params is not None else None
    start = 0
    if cursor is not None:
        offset = cursor.removeprefix("after-")
        if not (cursor.startswith("after-") and offset.isdigit()) or int(offset) >= len(resources):
            raise MCPError(INVALID_PARAMS, f"invalid cursor {cursor!r}")
        start = int(offset)
    end = start + PAGE_SIZE
    next_cursor = f"after-{end}" if end < len(resources) else None
    return ListResourcesResult(resources=resources[start:end], next_cursor=next_cursor)


lowlevel.add_request_handler("resources/list", PaginatedRequestParams, list_resources_paged)


# --- legacy subscriptions (resources/subscribe) ---

# uri -> the connections subscribed to it; a closed connection drops out by itself.
subscribers: dict[str, weakref.WeakSet[Connection]] = {}


async def subscribe(ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
    subscribers.setdefault(params.uri, weakref.WeakSet()).add(connection_of(ctx.session))
    return EmptyResult()


async def unsubscribe(
    ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams
) -> EmptyResult:
    subscribers.get(params.uri, weakref.WeakSet()).discard(connection_of(ctx.session))
    return EmptyResult()


lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


@server.tool()
async def bump(ctx: Context) -> int:
    """Add one to the counter (test://counter) and tell its subscribers."""
    global counter
    counter += 1
    await ctx.notify_resource_updated(COUNTER_URI)  # modern subscriptions/listen streams
    caller = connection_of(ctx.request_context.session)
    for connection in list(subscribers.get(COUNTER_URI, ())):
        if connection is caller:  # on this call's stream, so an HTTP client needs no GET stream
            updated = ResourceUpdatedNotificationParams(uri=COUNTER_URI)
            await notify_caller(ctx, ResourceUpdatedNotification(params=updated))
        else:
            await connection.send_resource_updated(COUNTER_URI)
    return counter


@server.tool()
def whoami(ctx: Context) -> str:
    """The clientInfo the client gave and this request's _meta, as JSON text."""
    request = ctx.request_context
    meta = dict(request.meta or {})
    if is_modern(ctx):
        client = meta.get("io.modelcontextprotocol/clientInfo")
    else:
        given = connection_of(request.session).client_params
        client = None if given is None else given.client_info.model_dump(exclude_none=True)
    return json.dumps({"client": client, "meta": meta})


@server.tool()
async def change_lists(ctx: Context, listeners: int = 0) -> str:
    """Announce that the resource, prompt and tool lists changed (they do not), once at least
    `listeners` modern listen streams are open."""
    try:
        await LISTENS.at_least(listeners)
    except TimeoutError:
        raise ToolError(f"{LISTENS.open} listen stream(s) open, not {listeners}") from None
    await ctx.notify_resources_changed()  # modern subscriptions/listen streams
    await ctx.notify_prompts_changed()
    await ctx.notify_tools_changed()
    if not is_modern(ctx):  # at 2026-07-28 these may travel on listen streams only
        await notify_caller(ctx, ResourceListChangedNotification())
        await notify_caller(ctx, PromptListChangedNotification())
        await notify_caller(ctx, ToolListChangedNotification())
    return "ok"


# --- prompts and completion ---

STYLES = {"casual": "Hey {name}!", "formal": "Good day, {name}.", "pirate": "Ahoy, {name}!"}


@server.prompt(icons=ICONS)
def simple() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt."


@server.prompt()
def greeting(
    name: Annotated[str, Field(description="Who to greet")],
    style: Annotated[str, Field(description="casual, formal or pirate")] = "casual",
) -> str:
    """Greet someone in a style (the style completes)."""
    if style not in STYLES:  # MCPError: anything else the SDK answers with code 0
        raise MCPError(INVALID_PARAMS, f"unknown style {style!r}: one of {', '.join(STYLES)}")
    return STYLES[style].format(name=name)


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    if isinstance(ref, PromptReference) and (ref.name, argument.name) == ("greeting", "style"):
        values = [style for style in STYLES if style.startswith(argument.value)]
    elif isinstance(ref, ResourceTemplateReference) and (ref.uri, argument.name) == (
        ITEM_TEMPLATE,
        "item_id",
    ):
        values = [item_id for item_id in ITEM_IDS if item_id.startswith(argument.value)]
    else:
        return None
    return Completion(values=values, total=len(values), has_more=False)


# --- logging ---

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
Level = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


async def set_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
    connection_of(ctx.session).state["log_level"] = params.level
    return EmptyResult()


lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)


@server.tool()
async def log(level: Level, text: str, ctx: Context) -> str:
    """Send notifications/message at `level` with `text` as its data."""
    if is_modern(ctx):  # the SDK sends it only if this call's _meta opted in at that level
        await ctx.log(level, text, logger_name="py-test-server")
        return "ok"
    threshold = connection_of(ctx.request_context.session).state.get("log_level", "debug")
    if LEVELS.index(level) >= LEVELS.index(threshold):
        message = LoggingMessageNotificationParams(level=level, data=text, logger="py-test-server")
        await notify_caller(ctx, LoggingMessageNotification(params=message))
    return "ok"


if __name__ == "__main__":
    server.run("stdio")
