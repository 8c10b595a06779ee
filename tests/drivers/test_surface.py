"""Beyond tools on both drivers: resources, templates, prompts, completion, logging
level, ping, any request, subscriptions, roots, list caches and ``call_tool(output_type=T)``.

Each scenario runs on mcp_asyncio (asyncio and trio) and on mcp_sync, against real servers:
``@modelcontextprotocol/server-everything`` (stdio and Streamable HTTP), the fault server (which
declares tools only) and the official SDK's server (tests/servers/py_server.py, both eras, stdio
and HTTP; its surface is in tests/servers/SURFACE.md). No scenario sleeps to wait: callbacks and
log records set a ``threading.Event`` (they run on the event loop or in a driver thread), which
the test awaits in a worker thread with a deadline.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pydantic
import pytest

import mcp_core as core
from _mcp_io.client import json_path, output_adapter, with_data
from mcp_core.replay import encode_action, replay
from tests.conftest import (
    REPO_ROOT,
    children_of,
    everything_argv,
    fault_server_argv,
    py_server_argv,
    wait_until,
)
from tests.drivers.facade import Facade

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

# How long a test waits for a server's notification before it fails.
DEADLINE = 20.0


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    """Every scenario must leave no child process behind."""
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")



class Surface(Facade):
    """The facade (tests/drivers/facade.py) with the methods beyond tools."""

    async def list_resources(self, **kw: Any) -> list[core.Resource]:
        result: list[core.Resource] = await self._run("list_resources", **kw)
        return result

    async def list_resource_templates(self, **kw: Any) -> list[core.ResourceTemplate]:
        result: list[core.ResourceTemplate] = await self._run("list_resource_templates", **kw)
        return result

    async def list_prompts(self, **kw: Any) -> list[core.Prompt]:
        result: list[core.Prompt] = await self._run("list_prompts", **kw)
        return result

    async def read_resource(self, uri: str, **kw: Any) -> core.ReadResourceResult:
        result: core.ReadResourceResult = await self._run("read_resource", uri, **kw)
        return result

    async def get_prompt(self, name: str, *args: Any, **kw: Any) -> core.GetPromptResult:
        result: core.GetPromptResult = await self._run("get_prompt", name, *args, **kw)
        return result

    async def complete(self, ref: Any, argument: str, value: str, **kw: Any) -> core.Completion:
        result: core.Completion = await self._run("complete", ref, argument, value, **kw)
        return result

    async def set_logging_level(self, level: str, **kw: Any) -> None:
        await self._run("set_logging_level", level, **kw)

    async def ping(self, **kw: Any) -> float:
        result: float = await self._run("ping", **kw)
        return result

    async def request(self, method: str, params: Any = None, **kw: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self._run("request", method, params, **kw)
        return result

    async def subscribe(self, uri: str, on_update: Callable[[str], object], **kw: Any) -> None:
        await self._run("subscribe", uri, on_update, **kw)

    async def unsubscribe(self, uri: str, **kw: Any) -> None:
        await self._run("unsubscribe", uri, **kw)

    def notify_roots_changed(self) -> None:
        client = self.aio if self.aio is not None else self.sync
        assert client is not None
        client.notify_roots_changed()


class Seen:
    """What a callback or a log handler saw, from any thread; ``wait`` for the n-th with a
    deadline, without blocking the event loop the asyncio driver runs its callbacks on."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    def add(self, item: Any) -> None:
        with self._changed:
            self.items.append(item)
            self._changed.notify_all()

    async def wait(self, predicate: Callable[[list[Any]], bool], what: str) -> list[Any]:
        def blocking() -> bool:
            with self._changed:
                return self._changed.wait_for(lambda: predicate(self.items), DEADLINE)

        if not await anyio.to_thread.run_sync(blocking):
            raise AssertionError(f"{what}: not seen within {DEADLINE} s (seen {self.items!r})")
        with self._lock:
            return list(self.items)


class Records(logging.Handler):
    """Log records of one logger, as ``Seen`` items (level name, message)."""

    def __init__(self, seen: Seen) -> None:
        super().__init__(logging.DEBUG)
        self.seen = seen

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.add((record.levelname, record.getMessage()))


@pytest.fixture
def server_log() -> Iterator[Callable[[str], Seen]]:
    """``server_log(name)``: the records of logger ``mcp.server.<name>`` from now on."""
    attached: list[tuple[logging.Logger, Records, int]] = []

    def attach(name: str) -> Seen:
        logger = logging.getLogger(f"mcp.server.{name}")
        handler = Records(Seen())
        attached.append((logger, handler, logger.level))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        return handler.seen

    yield attach
    for logger, handler, level in attached:
        logger.removeHandler(handler)
        logger.setLevel(level)


def stdio(driver: str, argv: list[str], **fields: Any) -> Surface:
    return Surface(driver, command=argv[0], args=argv[1:], **fields)


# --- server-everything -------------------------------------------------------------------------

DOC_URI = "demo://resource/static/document/architecture.md"
TEXT_TEMPLATE = "demo://resource/dynamic/text/{resourceId}"
BLOB_TEMPLATE = "demo://resource/dynamic/blob/{resourceId}"


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest, driver: str) -> Callable[..., Surface]:
    """``everything(**fields)``: a client of server-everything over stdio or Streamable HTTP."""
    if request.param == "stdio":
        return lambda **fields: stdio(driver, everything_argv(), name="everything", **fields)
    peer = request.getfixturevalue("everything_http")()
    return lambda **fields: Surface(driver, url=peer.url, name="everything", **fields)


async def test_everything_declares_what_it_offers(everything: Callable[..., Surface]) -> None:
    async with everything() as c:
        status = c.status()
        assert status.capabilities is not None
        assert status.capabilities["resources"]["subscribe"] is True
        assert {"tools", "prompts", "resources", "logging", "completions"} <= set(
            status.capabilities
        )
        assert status.instructions is not None and "Everything" in status.instructions


async def test_everything_resources_and_templates(everything: Callable[..., Surface]) -> None:
    async with everything() as c:
        resources = await c.list_resources()
        by_uri = {r.uri: r for r in resources}
        assert DOC_URI in by_uri and by_uri[DOC_URI].mime_type == "text/markdown"
        assert all(isinstance(r, core.Resource) for r in resources)
        assert await c.list_resources() == resources  # from the cache, the same list

        doc = await c.read_resource(DOC_URI)
        (contents,) = doc.contents
        assert contents.uri == DOC_URI and contents.blob is None
        assert contents.text is not None and contents.text.startswith("# Everything Server")
        assert doc.text == contents.text

        templates = {t.uri_template: t for t in await c.list_resource_templates()}
        assert {TEXT_TEMPLATE, BLOB_TEMPLATE} <= set(templates)
        text = await c.read_resource(TEXT_TEMPLATE.replace("{resourceId}", "3"))
        assert text.contents[0].text is not None and "Resource 3" in text.contents[0].text
        blob = await c.read_resource(BLOB_TEMPLATE.replace("{resourceId}", "4"))
        (blob_contents,) = blob.contents
        assert blob_contents.text is None and blob_contents.blob is not None
        assert blob_contents.blob.startswith(b"Resource 4: This is a base64 blob")  # decoded


async def test_everything_prompts_and_completion(everything: Callable[..., Surface]) -> None:
    async with everything() as c:
        prompts = {p.name: p for p in await c.list_prompts()}
        assert {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"} <= set(
            prompts
        )
        city, state = prompts["args-prompt"].arguments
        assert (city.name, city.required, state.name, state.required) == (
            "city",
            True,
            "state",
            False,
        )

        simple = await c.get_prompt("simple-prompt")
        assert [m.role for m in simple.messages] == ["user"]
        assert isinstance(simple.messages[0].content, core.TextContent)
        weather = await c.get_prompt("args-prompt", {"city": "Paris", "state": "Texas"})
        first = weather.messages[0].content
        assert isinstance(first, core.TextContent) and "Paris" in first.text
        embedded = await c.get_prompt(
            "resource-prompt", {"resourceType": "Text", "resourceId": "2"}
        )
        blocks = [m.content for m in embedded.messages]
        (resource,) = [b for b in blocks if isinstance(b, core.EmbeddedResource)]
        assert resource.resource["uri"] == TEXT_TEMPLATE.replace("{resourceId}", "2")

        prompt = {"type": "ref/prompt", "name": "completable-prompt"}
        departments = await c.complete(prompt, "department", "E")
        assert departments.values == ("Engineering",) and not departments.has_more
        # The 2025-06-18 context: the department already chosen narrows the names.
        names = await c.complete(
            core.PromptRef("completable-prompt"), "name", "", context={"department": "Sales"}
        )
        assert names.values == ("David", "Eve", "Frank")
        ids = await c.complete(core.ResourceRef(TEXT_TEMPLATE), "resourceId", "7")
        assert ids.values == ("7",)
        with pytest.raises(ValueError, match="ref must be"):
            await c.complete({"type": "ref/tool", "name": "echo"}, "x", "")


async def test_everything_ping_and_any_request(everything: Callable[..., Surface]) -> None:
    async with everything() as c:
        assert await c.ping() >= 0.0
        assert await c.request("ping") == {}  # as received: the raw result
        templates = await c.request("resources/read", {"uri": DOC_URI})
        assert templates["contents"][0]["uri"] == DOC_URI  # raw: the wire's own shape
        with pytest.raises(core.JsonRpcError) as refused:
            await c.request("no/such/method", {"x": 1})
        assert refused.value.code == -32601
        # A method with a call of its own is refused before anything is sent.
        with pytest.raises(ValueError, match="use CallTool"):
            await c.request("tools/call", {"name": "echo"})
        with pytest.raises(ValueError, match="not a request"):
            await c.request("notifications/roots/list_changed")


async def test_everything_logging_level_and_server_log(
    everything: Callable[..., Surface], server_log: Callable[[str], Seen]
) -> None:
    log = server_log("everything")
    async with everything() as c:
        with pytest.raises(ValueError, match="logging level must be one of"):
            await c.set_logging_level("verbose")
        await c.set_logging_level("debug")
        # Sends one randomly-leveled message at once (then one every 5 s): at "debug" every
        # level gets through.
        await c.call_tool("toggle-simulated-logging")
        seen = await log.wait(
            lambda items: any("-level message" in m or "level-message" in m for _, m in items),
            "a simulated log message",
        )
        await c.call_tool("toggle-simulated-logging")  # off again
    levels = {level for level, message in seen if "message" in message}
    assert levels <= {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}


async def test_everything_subscribe_and_unsubscribe(everything: Callable[..., Surface]) -> None:
    other = TEXT_TEMPLATE.replace("{resourceId}", "1")
    updates = Seen()
    async with everything() as c:
        await c.subscribe(DOC_URI, updates.add)
        # Sends an update for every subscribed URI at once (then every 5 s).
        await c.call_tool("toggle-subscriber-updates")
        await updates.wait(lambda items: DOC_URI in items, "the update of the document")
        await c.call_tool("toggle-subscriber-updates")  # off
        await c.unsubscribe(DOC_URI)

        async def on_other(uri: str) -> None:  # a coroutine function works on every driver
            updates.add(uri)

        callback: Callable[[str], object] = updates.add if c.driver == "sync" else on_other
        await c.subscribe(other, callback)
        await c.call_tool("toggle-subscriber-updates")  # on again: the subscribed URIs now
        seen = await updates.wait(lambda items: other in items, "the update of the other")
        await c.call_tool("toggle-subscriber-updates")
    # Callbacks run in the order the updates came: after unsubscribe, no document update.
    assert seen[0] == DOC_URI
    first_other = seen.index(other)
    assert DOC_URI not in seen[first_other:], seen


async def test_everything_callback_that_raises_is_logged(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    updates = Seen()

    def explode(uri: str) -> None:
        updates.add(uri)
        raise RuntimeError("the application's bug")

    async with stdio(driver, everything_argv()) as c:
        await c.subscribe(DOC_URI, explode)
        await c.call_tool("toggle-subscriber-updates")
        await updates.wait(lambda items: DOC_URI in items, "the update")
        # The client goes on: the callback's exception was logged, not raised.
        assert "is 3" in (await c.call_tool("get-sum", {"a": 1, "b": 2})).text
        await c.call_tool("toggle-subscriber-updates")
    await anyio.to_thread.run_sync(
        lambda: wait_until(
            lambda: any("on_update callback" in r.getMessage() for r in caplog.records),
            DEADLINE,
            message="the callback's exception logged",
        )
    )


async def test_everything_list_changed_drops_the_resource_cache(driver: str) -> None:
    # gzip-file-as-resource registers a new resource for the session, and the server's SDK
    # sends notifications/resources/list_changed before the tool's answer (stdio keeps order).
    data = "data:text/plain;base64," + base64.b64encode(b"hello from a data URI").decode()
    async with stdio(driver, everything_argv()) as c:
        before = await c.list_resources()
        link = await c.call_tool("gzip-file-as-resource", {"name": "hi.txt.gz", "data": data})
        (block,) = link.content
        assert isinstance(block, core.ResourceLink)
        after = await c.list_resources()  # no refresh: the cache was dropped
        assert [r.uri for r in after] == [*(r.uri for r in before), block.uri]
        read = await c.read_resource(block.uri)
        assert read.contents[0].blob is not None
        assert gzip.decompress(read.contents[0].blob) == b"hello from a data URI"


async def test_everything_roots_changed_makes_the_server_ask_again(driver: str) -> None:
    asked = Seen()

    def roots(params: Any) -> dict[str, Any]:
        asked.add(params)
        return {"roots": [{"uri": "file:///tmp/project", "name": "project"}]}

    async with stdio(driver, everything_argv(), roots=roots) as c:
        # The server asks for the roots shortly after the handshake, then listens for changes.
        await asked.wait(lambda items: len(items) >= 1, "the first roots/list")
        c.notify_roots_changed()
        await asked.wait(lambda items: len(items) >= 2, "roots/list after the change")


async def test_notify_roots_changed_without_a_roots_handler_does_nothing(driver: str) -> None:
    async with stdio(driver, fault_server_argv()) as c:
        c.notify_roots_changed()
        assert (await c.call_tool("echo", {"text": "still here"})).text == "still here"
    c.notify_roots_changed()  # after stop: nothing to tell, nothing raised


# --- the official SDK's server (tests/servers/SURFACE.md) -------------------------------------

COUNTER = "test://counter"
PY_RESOURCES = [
    "test://static/hello",
    "test://static/blob",
    COUNTER,
    *(f"test://static/extra/{n}" for n in range(1, 8)),
]
# (transport, era): stdio, and Streamable HTTP with a session (py_http_server `stateful`); the
# modern era is what era='auto' finds (its server/discover also gives the capabilities).
PY_PEERS = [
    ("stdio", "legacy"),
    ("stdio", "modern"),
    ("stateful", "legacy"),
    ("stateful", "modern"),
]


@pytest.fixture(params=PY_PEERS, ids=["-".join(p) for p in PY_PEERS])
def py_server(request: pytest.FixtureRequest, driver: str) -> Callable[..., Surface]:
    """``py_server(**fields)``: a client of py_server, in the era and over the transport of the
    parameter; the client's ``expected_era`` says which."""
    transport, era = request.param
    pinned: dict[str, Any] = {"era": "legacy"} if era == "legacy" else {}
    if transport == "stdio":
        where: dict[str, Any] = {"command": sys.executable, "args": py_server_argv()[1:]}
    else:
        where = {"url": request.getfixturevalue("py_http_server")(transport).url}

    def make(**fields: Any) -> Surface:
        client = Surface(driver, name="py", **where, **pinned, **fields)
        client.expected_era = era  # type: ignore[attr-defined]
        return client

    return make


def sent_methods(path: Path) -> list[str]:
    """The methods of the requests and notifications a recorded session sent, in order."""
    methods = []
    for action in replay(str(path)):
        if isinstance(action, core.WriteStdin):
            data: bytes | None = action.data
        elif isinstance(action, core.StartHttp):
            data = action.body
        else:
            continue
        for line in (data or b"").splitlines():
            message = json.loads(line)
            if isinstance(message, dict) and "method" in message:
                methods.append(message["method"])
    return methods


async def test_a_modern_server_slower_than_the_probe_still_gives_its_capabilities(
    driver: str,
) -> None:
    # The official SDK's server, given no time to answer server/discover (as on a loaded
    # machine, or a server that takes seconds to import): the client falls back to initialize,
    # which that server refuses naming 2026-07-28; the probe's late answer says what it is.
    where = {"command": sys.executable, "args": py_server_argv()[1:]}
    async with Surface(driver, name="py", probe_timeout=0.001, **where) as c:
        status = c.status()
        assert (status.era, status.protocol_version) == ("modern", "2026-07-28")
        assert status.capabilities is not None and "tools" in status.capabilities
        assert status.server_info is not None and status.server_info["name"] == "py-test-server"


async def test_py_server_resources_prompts_and_completion(
    py_server: Callable[..., Surface],
) -> None:
    async with py_server() as c:
        status = c.status()
        assert status.era == c.expected_era  # type: ignore[attr-defined]
        assert status.capabilities is not None
        assert status.capabilities["resources"] == {"listChanged": True, "subscribe": True}
        assert {"completions", "logging", "prompts", "tools"} <= set(status.capabilities)

        # Pages of 4, 4 and 2, followed to the end.
        assert [r.uri for r in await c.list_resources()] == PY_RESOURCES
        hello = await c.read_resource("test://static/hello")
        assert (hello.text, hello.contents[0].mime_type) == ("hello world", "text/plain")
        blob = await c.read_resource("test://static/blob")
        assert blob.contents[0].blob == b"\x00\x01binary\xff" and blob.contents[0].text is None
        (template,) = await c.list_resource_templates()
        assert (template.uri_template, template.name) == ("test://items/{item_id}", "item")
        assert (await c.read_resource("test://items/42")).text == "item 42"
        with pytest.raises(core.JsonRpcError) as unknown:
            await c.read_resource("test://nowhere")
        assert unknown.value.code == -32602

        prompts = {p.name: p for p in await c.list_prompts()}
        assert set(prompts) == {"simple", "greeting"}
        assert [(a.name, a.required) for a in prompts["greeting"].arguments] == [
            ("name", True),
            ("style", False),
        ]
        for arguments, text in [
            ({"name": "Ada"}, "Hey Ada!"),
            ({"name": "Ada", "style": "formal"}, "Good day, Ada."),
            ({"name": "Ada", "style": "pirate"}, "Ahoy, Ada!"),
        ]:
            (message,) = (await c.get_prompt("greeting", arguments)).messages
            assert message.role == "user" and message.content == core.TextContent(text=text)
        with pytest.raises(core.JsonRpcError) as bad_style:
            await c.get_prompt("greeting", {"name": "Ada", "style": "shouty"})
        assert bad_style.value.code == -32602
        simple = await c.get_prompt("simple")
        assert simple.messages[0].content == core.TextContent(text="This is a simple prompt.")

        styles = await c.complete(core.PromptRef("greeting"), "style", "f")
        assert styles == core.Completion(values=("formal",), total=1, has_more=False)
        assert (await c.complete(core.PromptRef("greeting"), "style", "")).values == (
            "casual",
            "formal",
            "pirate",
        )
        items = await c.complete(
            {"type": "ref/resource", "uri": "test://items/{item_id}"}, "item_id", "1"
        )
        assert items.values == ("1", "10", "11", "12")
        assert (await c.complete(core.PromptRef("simple"), "x", "")).values == ()

        assert await c.ping() >= 0.0  # 2026-07-28 has no ping: a server/discover round trip
        raw = await c.request("resources/read", {"uri": "test://static/hello"})
        assert raw["contents"][0]["text"] == "hello world"


async def test_a_pinned_legacy_session_leaves_auto_clients_to_probe(driver: str) -> None:
    async with stdio(driver, py_server_argv(), era="legacy") as pinned:
        assert pinned.status().era == "legacy"
    async with stdio(driver, py_server_argv()) as probing:
        assert probing.status().era == "modern"  # py_server answers server/discover


class Sum(pydantic.BaseModel):
    result: int


class Total(pydantic.BaseModel):
    total: int


async def test_py_server_output_type(py_server: Callable[..., Surface]) -> None:
    async with py_server() as c:
        added = await c.call_tool("add", {"a": 2, "b": 3}, output_type=Sum)
        assert added.data == Sum(result=5) and added.structured_content == {"result": 5}
        with pytest.raises(core.OutputValidationError) as wrong:
            await c.call_tool("add", {"a": 2, "b": 3}, output_type=Total)
        assert (wrong.value.tool, wrong.value.path) == ("add", "$.total")
        failed = await c.call_tool("fail", output_type=Sum)
        assert failed.is_error and failed.data is None


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_py_server_lists_are_cached_until_they_change(
    driver: str, era: str, tmp_path: Path
) -> None:
    """Legacy: a list is kept until its list_changed. Modern: py_server's lists carry ttlMs 0,
    so none is kept (2026-07-28 server/utilities/caching)."""
    path = tmp_path / "session.jsonl"
    pinned: dict[str, Any] = {"era": "legacy"} if era == "legacy" else {}
    async with stdio(driver, py_server_argv(), record=str(path), **pinned) as c:
        assert c.status().era == era
        for _ in range(2):
            assert len(await c.list_resources()) == 10
            assert len(await c.list_prompts()) == 2
            assert len(await c.list_resource_templates()) == 1
        assert (await c.call_tool("change_lists")).text == "ok"
        assert len(await c.list_resources()) == 10
        assert len(await c.list_prompts()) == 2
        assert len(await c.list_resource_templates()) == 1  # resources' list_changed covers it
        assert len(await c.list_resources(refresh=True)) == 10
    methods = sent_methods(path)
    counts = [
        methods.count(m) for m in ("resources/list", "prompts/list", "resources/templates/list")
    ]
    # Three pages of resources per listing: cached, 2 listings + refresh; not, 3 + refresh.
    assert counts == ([3 * 3, 2, 2] if era == "legacy" else [3 * 4, 3, 3]), methods


@pytest.mark.parametrize(
    "peer",
    [*PY_PEERS, ("json", "legacy")],
    ids=["-".join(p) for p in [*PY_PEERS, ("json", "legacy")]],
)
async def test_py_server_logging_level(
    driver: str, peer: tuple[str, str], request: pytest.FixtureRequest, server_log: Any
) -> None:
    """Legacy: logging/setLevel, kept by the server per connection; modern: the level rides on
    every request's _meta. Either way a message below the level is not sent."""
    transport, era = peer
    pinned: dict[str, Any] = {"era": "legacy"} if era == "legacy" else {}
    if transport == "stdio":
        c = stdio(driver, py_server_argv(), name="pylog", **pinned)
    else:
        url = request.getfixturevalue("py_http_server")(transport).url
        c = Surface(driver, url=url, name="pylog", **pinned)
    log = server_log("pylog")
    async with c:
        assert c.status().era == era
        await c.set_logging_level("warning")
        assert (await c.call_tool("log", {"level": "info", "text": "quiet"})).text == "ok"
        assert (await c.call_tool("log", {"level": "error", "text": "loud"})).text == "ok"
        seen = await log.wait(lambda items: ("ERROR", "loud") in items, "the error message")
    # Sent in order on one stream: had the info message been sent, it would be here already.
    assert ("INFO", "quiet") not in seen


@pytest.mark.parametrize(
    "peer",
    [*PY_PEERS, ("json", "legacy")],
    ids=["-".join(p) for p in [*PY_PEERS, ("json", "legacy")]],
)
async def test_py_server_subscriptions(
    driver: str, peer: tuple[str, str], request: pytest.FixtureRequest
) -> None:
    """Legacy: resources/subscribe (in json mode the update comes on the GET stream); modern:
    the subscriptions/listen stream the core keeps. bump() changes test://counter."""
    transport, era = peer
    pinned: dict[str, Any] = {"era": "legacy"} if era == "legacy" else {}
    if transport == "stdio":
        c = stdio(driver, py_server_argv(), **pinned)
    else:
        c = Surface(driver, url=request.getfixturevalue("py_http_server")(transport).url, **pinned)
    seen = Seen()
    async with c:
        assert c.status().era == era
        await c.subscribe(COUNTER, lambda uri: seen.add(("first", uri)))
        start = int((await c.read_resource(COUNTER)).text)
        assert (await c.call_tool("bump")).structured_content == {"result": start + 1}
        await seen.wait(lambda items: ("first", COUNTER) in items, "the first update")
        assert (await c.read_resource(COUNTER)).text == str(start + 1)
        # Subscribing again replaces the callback.
        await c.subscribe(COUNTER, lambda uri: seen.add(("second", uri)))
        await c.call_tool("bump")
        await seen.wait(lambda items: ("second", COUNTER) in items, "the second update")
        await c.unsubscribe(COUNTER)
        await c.call_tool("bump")  # nobody is told
        await c.subscribe(COUNTER, lambda uri: seen.add(("third", uri)))
        await c.call_tool("bump")
        updates = await seen.wait(lambda items: ("third", COUNTER) in items, "the third update")
    assert updates == [("first", COUNTER), ("second", COUNTER), ("third", COUNTER)]


# --- call_tool(..., output_type=T) -------------------------------------------------------------


class Weather(pydantic.BaseModel):
    temperature: float
    conditions: str
    humidity: float


class Windy(pydantic.BaseModel):
    temperature: float
    wind: int


@dataclasses.dataclass
class Reading:
    temperature: float
    humidity: int


class Forecast(pydantic.BaseModel):
    days: list[Weather]


async def test_output_type_validates_structured_content(
    everything: Callable[..., Surface],
) -> None:
    chicago = {"location": "Chicago"}
    async with everything() as c:
        plain = await c.call_tool("get-structured-content", chicago)
        assert plain.data is None and isinstance(plain.structured_content, dict)

        typed = await c.call_tool("get-structured-content", chicago, output_type=Weather)
        assert typed.data == Weather(temperature=36, conditions="Light rain / drizzle", humidity=82)
        assert typed.structured_content == plain.structured_content  # the rest is kept
        reading = await c.call_tool("get-structured-content", chicago, output_type=Reading)
        assert reading.data == Reading(temperature=36, humidity=82)
        mapping = await c.call_tool(
            "get-structured-content", chicago, output_type=dict[str, str | int]
        )
        assert mapping.data["humidity"] == 82

        with pytest.raises(core.OutputValidationError) as missing:
            await c.call_tool("get-structured-content", chicago, output_type=Windy)
        assert (missing.value.tool, missing.value.path) == ("get-structured-content", "$.wind")
        assert "Field required" in str(missing.value)
        with pytest.raises(core.OutputValidationError) as nested:
            await c.call_tool("get-structured-content", chicago, output_type=Forecast)
        assert nested.value.path == "$.days"
        with pytest.raises(core.OutputValidationError) as whole:
            await c.call_tool("get-structured-content", chicago, output_type=list[int])
        assert whole.value.path == "$"
        # No structured content to validate.
        with pytest.raises(core.OutputValidationError) as none:
            await c.call_tool("echo", {"message": "hi"}, output_type=Weather)
        assert (none.value.tool, none.value.path) == ("echo", "$")
        # A tool's own failure comes back as it is.
        failed = await c.call_tool("get-structured-content", {"location": 5}, output_type=Weather)
        assert failed.is_error and failed.data is None


def test_output_paths_name_items_and_odd_keys() -> None:
    # The shared step both drivers run (_mcp_io/client.py), on content no test server sends.
    result = core.CallToolResult(
        structured_content={"days": [{"temperature": 1, "conditions": "x", "humidity": 2}, {}]}
    )
    with pytest.raises(core.OutputValidationError) as bad:
        with_data(result, "forecast", output_adapter(Forecast))
    assert (bad.value.tool, bad.value.path) == ("forecast", "$.days[1].temperature")
    assert json_path(("a b", 0, "c")) == "$['a b'][0].c"
    good = with_data(result, "forecast", output_adapter(dict[str, list[dict[str, Any]]]))
    assert good.data == result.structured_content and good is not result


async def test_output_type_without_pydantic_fails_before_sending(
    driver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with stdio(driver, fault_server_argv()) as c:
        monkeypatch.setitem(sys.modules, "pydantic", None)  # `import pydantic` raises
        with pytest.raises(ImportError, match=r"pip install 'mcp-sansio-client\[pydantic\]'"):
            # `hang` is never answered: had it been sent, this call would not end.
            await c.call_tool("hang", output_type=Weather)
        assert c.status().in_flight == 0
        monkeypatch.undo()
        assert json.loads((await c.call_tool("cancelled_ids")).text) == []


# --- what the server did not declare -----------------------------------------------------------


async def test_undeclared_methods_are_refused_before_sending(driver: str, tmp_path: Path) -> None:
    """The fault server declares tools only: everything else is NotSupported, nothing sent."""
    path = tmp_path / "session.jsonl"
    async with stdio(driver, fault_server_argv(), era="legacy", record=str(path)) as c:
        refused = [
            ("resources/list", c.list_resources()),
            ("resources/templates/list", c.list_resource_templates()),
            ("prompts/list", c.list_prompts()),
            ("resources/read", c.read_resource("file:///x")),
            ("prompts/get", c.get_prompt("p", {"a": "b"})),
            ("completion/complete", c.complete(core.PromptRef("p"), "a", "")),
            ("logging/setLevel", c.set_logging_level("info")),
            ("resources/subscribe", c.subscribe("file:///x", print)),
        ]
        for method, call in refused:
            with pytest.raises(core.NotSupported) as info:
                await call
            assert info.value.method == method
        # What it does serve goes through.
        assert await c.ping() >= 0.0
        assert await c.request("ping") == {}
        assert (await c.call_tool("echo", {"text": "ok"})).text == "ok"
    written = [
        json.loads(action["data"])["method"]
        for action in map(encode_action, replay(str(path)))
        if action.get("action") == "WriteStdin" and '"method"' in action["data"]
    ]
    assert "ping" in written  # the check sees the requests that were sent
    assert not {method for method, _ in refused} & set(written), written


# --- imports -----------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["mcp_sync", "mcp_asyncio"])
def test_importing_a_driver_loads_neither_jsonschema_nor_pydantic(module: str) -> None:
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert f"{module}" in loaded  # the check sees what it should
    assert not loaded & {"jsonschema", "pydantic", "pydantic_core"}
