"""What users of the other SDKs expect of a client, on every driver, against the official SDK's
server (tests/servers/py_server.py) in both eras: ``client_info`` names the client, ``meta=``
rides in a request's ``_meta`` (a key the client sets itself is refused, nothing sent), icons
are typed, and ``on_list_changed`` hears the server's list changes."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core
from tests.conftest import py_server_argv
from tests.drivers.test_surface import Surface

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

INFO = {"name": "my-app", "version": "1.2.0", "title": "My App"}
ICON = core.Icon(src="https://example.com/icon.png", mime_type="image/png", sizes=("48x48",))
DARK = core.Icon(src="data:image/svg+xml;base64,PHN2Zy8+", mime_type="image/svg+xml", theme="dark")


def py_server(driver: str, era: str, **kw: Any) -> Surface:
    argv = py_server_argv()
    return Surface(driver, command=argv[0], args=argv[1:], era=era, **kw)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_client_info_and_meta_reach_the_server(driver: str, era: str) -> None:
    async with py_server(driver, era, client_info=INFO) as client:
        mine = {"com.example/user": "ann", "n": [1, 2]}
        result = await client.call_tool("whoami", {}, meta=mine)
        seen = json.loads(result.text)
        assert seen["client"] == INFO
        assert {k: seen["meta"][k] for k in mine} == mine
        listed = await client.list_prompts(meta=mine)
        assert listed
        with pytest.raises(core.InvalidArguments, match="a key the client sets itself"):
            await client.call_tool("whoami", {}, meta={"progressToken": 7})
        with pytest.raises(core.InvalidArguments, match="traceparent"):
            await client.call_tool("whoami", {}, meta={"traceparent": "00-x"})
        with pytest.raises(core.InvalidArguments, match=r"_meta\.when"):
            await client.read_resource("test://static/hello", meta={"when": {1}})
        prompt = await client.get_prompt("simple", meta=mine)
        assert prompt.text == "This is a simple prompt."
        assert await client.request("ping", None, meta=mine) is not None
        assert await client.ping(meta=mine) >= 0
        await client.set_logging_level("info", meta=mine)
        with pytest.raises(core.InvalidArguments, match="a key the client sets itself"):
            await client.ping(meta={"io.modelcontextprotocol/x": 1})
        assert client.status().in_flight == 0


async def test_the_default_client_info_is_unchanged(driver: str) -> None:
    async with py_server(driver, "legacy") as client:
        seen = json.loads((await client.call_tool("whoami", {})).text)
        assert seen["client"] == {"name": "mcp-sansio-client", "version": "0.1.0"}


@pytest.mark.parametrize("era", ["legacy", "auto"])  # auto: server/discover, then modern
async def test_icons_are_typed(driver: str, era: str) -> None:
    async with py_server(driver, era) as client:
        status = client.status()
        assert status.era == ("legacy" if era == "legacy" else "modern")
        assert status.server_icons == (ICON, DARK)
        tools = {tool.name: tool for tool in await client.list_tools()}
        assert tools["echo"].icons == (ICON, DARK) and tools["add"].icons == ()
        prompts = {prompt.name: prompt for prompt in await client.list_prompts()}
        assert prompts["simple"].icons == (ICON, DARK)
        resources = {r.uri: r for r in await client.list_resources()}
        assert resources["test://static/hello"].icons == (ICON, DARK)
