"""``Client(on_list_changed=...)`` on both drivers (asyncio, trio, sync), against real servers:
server-everything (legacy era, stdio and Streamable HTTP), whose ``gzip-file-as-resource``
really adds a resource, and the official SDK's server (tests/servers/py_server.py, both eras,
stdio and HTTP), whose ``change_lists`` announces all three lists. In the 2026-07-28 era the
changes travel on a ``subscriptions/listen`` stream the client opens only with the callback.

No test sleeps: callbacks add to a ``Seen``, which the test waits on with a deadline.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_core as core
from mcp_core.replay import replay
from tests.conftest import children_of, everything_argv, py_server_argv, wait_until
from tests.drivers.test_group import Group
from tests.drivers.test_surface import PY_PEERS, Records, Seen, Surface, stdio

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

LISTEN = "subscriptions/listen"
ALL_THREE = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    """Every scenario must leave no child process behind."""
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


def sent(path: Path) -> list[dict[str, Any]]:
    """The requests and notifications a recorded session sent, in order (its replay's)."""
    messages = []
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
                messages.append(message)
    return messages


def listens(path: Path) -> list[dict[str, Any]]:
    return [message for message in sent(path) if message["method"] == LISTEN]


def py_client(
    driver: str, peer: tuple[str, str], request: pytest.FixtureRequest, **fields: Any
) -> Surface:
    transport, era = peer
    pinned: dict[str, Any] = {"era": "legacy"} if era == "legacy" else {}
    if transport == "stdio":
        return stdio(driver, py_server_argv(), name="py", **pinned, **fields)
    url = request.getfixturevalue("py_http_server")(transport).url
    return Surface(driver, url=url, name="py", **pinned, **fields)


# --- the official SDK's server: every list, both eras ------------------------------------------


@pytest.mark.parametrize("peer", PY_PEERS, ids=["-".join(p) for p in PY_PEERS])
async def test_each_announced_list_reaches_the_callback(
    driver: str, peer: tuple[str, str], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    seen = Seen()
    async with py_client(driver, peer, request, record=str(path), on_list_changed=seen.add) as c:
        assert c.status().era == peer[1]
        assert len(await c.list_prompts()) == 2
        # Modern: answered once the client's listen stream is open on the server.
        listeners = 1 if peer[1] == "modern" else 0
        changed = await c.call_tool("change_lists", {"listeners": listeners})
        assert changed.text == "ok", changed
        kinds = await seen.wait(lambda items: len(items) >= 3, "the three list changes")
        assert sorted(kinds) == ["prompts", "resources", "tools"]
        assert len(await c.list_prompts()) == 2
    methods = [message["method"] for message in sent(path)]
    # The change dropped the cache (legacy: kept until then; modern: py_server's ttlMs is 0).
    assert methods.count("prompts/list") == 2, methods
    if peer[1] == "modern":
        # One stream, asking for the lists py_server declares listChanged for, no URI.
        [listen] = listens(path)
        assert listen["params"]["notifications"] == ALL_THREE
    else:
        assert listens(path) == []
    header = json.loads(path.read_text().splitlines()[0])
    assert header["list_changed"] is True


@pytest.mark.parametrize("transport", ["stdio", "stateful"])
async def test_a_modern_session_without_the_callback_opens_no_stream(
    driver: str, transport: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    async with py_client(driver, (transport, "modern"), request, record=str(path)) as c:
        assert c.status().era == "modern"
        assert (await c.call_tool("change_lists")).text == "ok"  # heard by nobody
        assert len(await c.list_tools()) > 0
        # A subscription opens the stream, for its URI alone; dropping it closes it.
        await c.subscribe("test://counter", print)
        await c.unsubscribe("test://counter")
        assert (await c.call_tool("echo", {"text": "after"})).text == "after"
    [listen] = listens(path)
    assert listen["params"]["notifications"] == {"resourceSubscriptions": ["test://counter"]}
    assert "list_changed" not in json.loads(path.read_text().splitlines()[0])


async def test_a_modern_stream_for_the_lists_carries_subscriptions_too(
    driver: str, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    seen = Seen()
    async with stdio(driver, py_server_argv(), record=str(path), on_list_changed=seen.add) as c:
        await c.subscribe("test://counter", print)  # the stream is sent again, with the URI
        await c.unsubscribe("test://counter")  # and again without: the lists still want it
        assert (await c.call_tool("change_lists", {"listeners": 1})).text == "ok"
        await seen.wait(lambda items: "tools" in items, "the tools' change")
    first, second, third = (m["params"]["notifications"] for m in listens(path))
    assert (first, third) == (ALL_THREE, ALL_THREE)
    assert second == {**ALL_THREE, "resourceSubscriptions": ["test://counter"]}


# --- server-everything: a list that really changes ----------------------------------------------


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest, driver: str) -> Callable[..., Surface]:
    """``everything(**fields)``: a client of server-everything over stdio or Streamable HTTP."""
    if request.param == "stdio":
        return lambda **fields: stdio(driver, everything_argv(), name="everything", **fields)
    peer = request.getfixturevalue("everything_http")()
    return lambda **fields: Surface(driver, url=peer.url, name="everything", **fields)


async def test_a_callback_that_lists_again_gets_the_new_list(
    driver: str, everything: Callable[..., Surface]
) -> None:
    seen = Seen()
    holder: list[Surface] = []

    async def relist_async(kind: str) -> None:
        aio = holder[0].aio
        assert aio is not None
        seen.add((kind, [r.uri for r in await aio.list_resources()] if kind == "resources" else []))

    def relist(kind: str) -> None:  # in the sync driver's updates thread: it may call it
        client = holder[0].sync
        assert client is not None
        seen.add((kind, [r.uri for r in client.list_resources()] if kind == "resources" else []))

    client = everything(on_list_changed=relist if driver == "sync" else relist_async)
    holder.append(client)
    data = "data:text/plain;base64,aGk="  # "hi"
    async with client as c:
        before = [r.uri for r in await c.list_resources()]  # cached from here on
        link = await c.call_tool("gzip-file-as-resource", {"name": "hi.txt.gz", "data": data})
        (block,) = link.content
        assert isinstance(block, core.ResourceLink)
        items = await seen.wait(
            lambda items: any(kind == "resources" for kind, _ in items), "the resources' change"
        )
    [(_, listed)] = [item for item in items if item[0] == "resources"]
    assert listed == [*before, block.uri]  # the cache was dropped before the callback ran


async def test_everything_announces_its_tools_at_connect(driver: str) -> None:
    # Right after notifications/initialized it registers its conditional tools and says so.
    seen = Seen()
    async with stdio(driver, everything_argv(), on_list_changed=seen.add):
        await seen.wait(lambda items: "tools" in items, "the tools' change")


async def test_a_callback_that_raises_is_logged_and_the_client_goes_on(driver: str) -> None:
    records = Seen()
    logger = logging.getLogger("mcp_sync._client" if driver == "sync" else "mcp_asyncio._client")
    handler = Records(records)
    logger.addHandler(handler)
    calls = Seen()

    def explode(kind: str) -> None:
        calls.add(kind)
        raise RuntimeError("the application's bug")

    try:
        async with stdio(driver, py_server_argv(), era="legacy", on_list_changed=explode) as c:
            await c.call_tool("change_lists")
            await calls.wait(lambda items: len(items) == 3, "the three calls")
            await records.wait(
                lambda items: sum("on_list_changed callback raised" in m for _, m in items) == 3,
                "the three exceptions logged",
            )
            assert (await c.call_tool("echo", {"text": "still here"})).text == "still here"
    finally:
        logger.removeHandler(handler)
    assert sorted(calls.items) == ["prompts", "resources", "tools"]


# --- a group gives every client the callback ----------------------------------------------------


async def test_a_group_passes_the_callback_to_its_clients(driver: str) -> None:
    seen = Seen()
    server = {"command": sys.executable, "args": py_server_argv()[1:], "era": "legacy"}
    async with Group(driver, {"a": server, "b": server}, on_list_changed=seen.add) as group:
        assert (await group.call_tool("mcp__b__change_lists")).text == "ok"
        kinds = await seen.wait(lambda items: len(items) >= 3, "b's changes")
    assert sorted(kinds) == ["prompts", "resources", "tools"]
