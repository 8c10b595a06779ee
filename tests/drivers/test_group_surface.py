"""ClientGroup beyond tools on both drivers (asyncio, trio, sync), against real
servers: server-everything and the SDK's py_server (tests/servers/SURFACE.md says what each
serves), next to the fault server, which declares tools only, and servers that are down.

Prompts are namespaced and routed like tools; resources and templates are listed per server and
read from a named server; a server that is down or offers no resources is left out of a listing
(and logged), never failing the group. No test sleeps to wait or asserts on durations.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_asyncio
import mcp_core as core
import mcp_sync
from mcp_core import UnknownPrompt
from tests.conftest import (
    children_of,
    everything_argv,
    fault_server_argv,
    py_server_argv,
    wait_until,
)
from tests.drivers.test_group import Group, stdio

pytestmark = [pytest.mark.timeout(90)]


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    """Every test must leave no child process behind."""
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


class SurfaceGroup(Group):
    """``Group`` (tests/drivers/test_group.py) with the methods beyond tools."""

    async def list_prompts(self, **kw: Any) -> list[core.Prompt]:
        result: list[core.Prompt] = await self._run("list_prompts", **kw)
        return result

    async def get_prompt(self, name: str, arguments: Any = None, **kw: Any) -> Any:
        return await self._run("get_prompt", name, arguments, **kw)

    async def list_resources(self, **kw: Any) -> dict[str, list[core.Resource]]:
        result: dict[str, list[core.Resource]] = await self._run("list_resources", **kw)
        return result

    async def list_resource_templates(self, **kw: Any) -> dict[str, list[Any]]:
        result: dict[str, list[Any]] = await self._run("list_resource_templates", **kw)
        return result

    async def read_resource(self, server: str, uri: str, **kw: Any) -> core.ReadResourceResult:
        result: core.ReadResourceResult = await self._run("read_resource", server, uri, **kw)
        return result

    def resolve_prompt(self, name: str) -> tuple[str, str] | None:
        group = self.aio if self.aio is not None else self.sync
        assert group is not None
        return group.resolve_prompt(name)


def specs_with_broken_ones(tmp_path: Path) -> dict[str, Any]:
    """Two servers with prompts and resources, one with tools only, one that cannot start and
    one refused at construction."""
    return {
        "everything": stdio(everything_argv()),
        "py-sdk": stdio(py_server_argv()),
        "fault": stdio(fault_server_argv()),  # declares tools only
        "missing": {"command": str(tmp_path / "no-such-server"), "fail_fast": True},
        "invalid": {"command": "x", "url": "http://h/"},
    }


def only_text(result: Any) -> str:
    (message,) = result.messages
    assert message.role == "user"
    assert isinstance(message.content, core.TextContent)
    return message.content.text


# --- prompts -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_prompts_are_namespaced_like_tools_and_routed(
    driver: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_client")
    async with SurfaceGroup(driver, specs_with_broken_ones(tmp_path)) as group:
        prompts = await group.list_prompts()
        names = [p.name for p in prompts]
        assert names == [
            "mcp__everything__simple-prompt",
            "mcp__everything__args-prompt",
            "mcp__everything__completable-prompt",
            "mcp__everything__resource-prompt",
            "mcp__py_sdk__simple",
            "mcp__py_sdk__greeting",
        ], names  # server order, each server's own order; no fault, no down server
        # The same name a tool of that name would get (one naming rule for both kinds).
        assert names[-1] == core.tool_name("py_sdk", "greeting")
        greeting = prompts[-1]
        assert [(a.name, a.required) for a in greeting.arguments] == [
            ("name", True),
            ("style", False),
        ]
        assert group.resolve_prompt("mcp__py_sdk__greeting") == ("py-sdk", "greeting")
        assert group.resolve_prompt("mcp__everything__args-prompt") == (
            "everything",
            "args-prompt",
        )
        assert group.resolve_prompt("mcp__py_sdk__echo") is None  # a tool, not a prompt

        result = await group.get_prompt("mcp__py_sdk__greeting", {"name": "Ada", "style": "pirate"})
        assert only_text(result) == "Ahoy, Ada!"
        assert only_text(await group.get_prompt("mcp__py_sdk__simple")) == (
            "This is a simple prompt."
        )
        args = {"city": "Paris", "state": "TX"}
        assert "Paris, TX" in only_text(
            await group.get_prompt("mcp__everything__args-prompt", args)
        )
        # A refused argument is the server's answer, raised as the client raises it.
        with pytest.raises(core.JsonRpcError):
            await group.get_prompt("mcp__py_sdk__greeting", {"name": "Ada", "style": "rude"})

        with pytest.raises(UnknownPrompt, match="'py-sdk' lists no such prompt") as info:
            await group.get_prompt("mcp__py_sdk__greting", {"name": "x"})
        assert "did you mean 'mcp__py_sdk__greeting'" in str(info.value)
        assert info.value.name == "mcp__py_sdk__greting"
        with pytest.raises(UnknownPrompt, match="no server is named 'nobody'"):
            await group.get_prompt("mcp__nobody__simple")
        with pytest.raises(UnknownPrompt, match="list_prompts"):
            await group.get_prompt("simple")
        with pytest.raises(UnknownPrompt):  # tools and prompts have separate names
            await group.get_prompt("mcp__py_sdk__echo")
        with pytest.raises(core.NotSupported):  # the fault server declares no prompts
            await group.get_prompt("mcp__fault__anything")
        with pytest.raises(core.ConnectFailed) as down:
            await group.get_prompt("mcp__invalid__anything")
        assert down.value.permanent
        with pytest.raises(core.ConnectFailed, match="no-such-server"):
            await group.get_prompt("mcp__missing__anything")
    offers_none = [r for r in caplog.records if "offers no prompts" in r.getMessage()]
    assert [(r.name, r.levelname) for r in offers_none] == [("mcp_client.fault", "INFO")]


@pytest.mark.anyio
async def test_a_prompt_is_routed_before_anyone_listed_prompts(driver: str) -> None:
    # A new group (a restart) knows a name from an earlier one: it asks that server once.
    specs = {"py-sdk": stdio(py_server_argv()), "fault": stdio(fault_server_argv())}
    async with SurfaceGroup(driver, specs) as group:
        assert group.resolve_prompt("mcp__py_sdk__greeting") is None
        result = await group.get_prompt("mcp__py_sdk__greeting", {"name": "Bo", "style": "formal"})
        assert only_text(result) == "Good day, Bo."
        assert group.resolve_prompt("mcp__py_sdk__greeting") == ("py-sdk", "greeting")


@pytest.mark.anyio
async def test_a_second_group_of_a_modern_server_lists_its_prompts(driver: str) -> None:
    # The second group skips server/discover (the era verdict is cached): the capabilities
    # are unknown then, and nothing may be refused for their sake.
    specs = {"py-sdk": stdio(py_server_argv())}
    async with SurfaceGroup(driver, specs) as group:
        assert group.status()["py-sdk"].era == "modern"
        assert len(await group.list_prompts()) == 2
    async with SurfaceGroup(driver, specs) as group:  # the era verdict is cached now
        assert group.status()["py-sdk"].era == "modern"
        assert len(await group.list_prompts()) == 2


# --- resources ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_resources_are_listed_per_server_and_read_from_one(
    driver: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_client")
    async with SurfaceGroup(driver, specs_with_broken_ones(tmp_path)) as group:
        resources = await group.list_resources()
        # Only the servers that offer resources, in server order; never a failure.
        assert list(resources) == ["everything", "py-sdk"]
        py_uris = [r.uri for r in resources["py-sdk"]]
        assert py_uris[:3] == ["test://static/hello", "test://static/blob", "test://counter"]
        assert len(py_uris) == 10  # every page (4, 4, 2)
        hello = resources["py-sdk"][0]
        assert (hello.name, hello.mime_type) == ("hello", "text/plain")
        documents = resources["everything"]
        assert len(documents) == 7
        assert all(r.uri.startswith("demo://resource/static/document/") for r in documents)

        templates = await group.list_resource_templates()
        assert list(templates) == ["everything", "py-sdk"]
        assert [t.uri_template for t in templates["py-sdk"]] == ["test://items/{item_id}"]
        assert {t.uri_template for t in templates["everything"]} == {
            "demo://resource/dynamic/text/{resourceId}",
            "demo://resource/dynamic/blob/{resourceId}",
        }

        (text,) = (await group.read_resource("py-sdk", "test://static/hello")).contents
        assert (text.text, text.blob, text.mime_type) == ("hello world", None, "text/plain")
        (blob,) = (await group.read_resource("py-sdk", "test://static/blob")).contents
        assert blob.blob == b"\x00\x01binary\xff" and blob.text is None
        (item,) = (await group.read_resource("py-sdk", "test://items/42")).contents
        assert item.text == "item 42"
        (document,) = (await group.read_resource("everything", documents[0].uri)).contents
        assert document.text and document.uri == documents[0].uri

        # The same URI means something to one server only.
        with pytest.raises(core.JsonRpcError):
            await group.read_resource("everything", "test://static/hello")
        with pytest.raises(core.NotSupported):
            await group.read_resource("fault", "test://static/hello")
        with pytest.raises(core.ConnectFailed) as down:
            await group.read_resource("invalid", "test://static/hello")
        assert down.value.permanent
        with pytest.raises(core.ConnectFailed, match="no-such-server"):
            await group.read_resource("missing", "test://static/hello")
        with pytest.raises(KeyError, match="no server named 'nobody'"):
            await group.read_resource("nobody", "test://static/hello")
    notes = sorted(
        (r.name, r.levelname, r.getMessage().split(":")[0])
        for r in caplog.records
        if "offers no" in r.getMessage()
    )
    assert notes == [
        ("mcp_client.fault", "INFO", "server 'fault' offers no resource templates"),
        ("mcp_client.fault", "INFO", "server 'fault' offers no resources"),
    ]


@pytest.mark.anyio
async def test_a_server_that_fails_to_list_is_left_out_and_logged(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    specs = {"everything": stdio(everything_argv()), "py-sdk": stdio(py_server_argv())}
    async with SurfaceGroup(driver, specs) as group:
        client = group.clients["py-sdk"]

        def refuse(*args: Any, **kw: Any) -> Any:
            raise core.RequestTimeout("resources/list got no answer in time")

        if group.aio is not None:

            async def refuse_async(*args: Any, **kw: Any) -> Any:
                refuse()

            client.list_resources = refuse_async
        else:
            client.list_resources = refuse
        resources = await group.list_resources()
        assert list(resources) == ["everything"] and len(resources["everything"]) == 7
        assert list(await group.list_resource_templates()) == ["everything", "py-sdk"]
        (note,) = [r for r in caplog.records if "left out" in r.getMessage()]
        assert (note.name, note.levelname) == ("mcp_client.py-sdk", "WARNING")
        assert note.getMessage() == (
            "resources of server 'py-sdk' left out: resources/list got no answer in time"
        )


# --- the same API on both drivers --------------------------------------------------------------


@pytest.mark.parametrize("group_class", [mcp_asyncio.ClientGroup, mcp_sync.ClientGroup])
def test_both_groups_offer_the_surface(group_class: type) -> None:
    # tests/drivers/test_twins.py shows the two are the same; this pins what they offer.
    def parameters(method: str) -> list[tuple[str, str, object]]:
        signature = inspect.signature(getattr(group_class, method))
        return [(p.name, p.kind.name, p.default) for p in signature.parameters.values()]

    listing = [
        ("self", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty),
        ("refresh", "KEYWORD_ONLY", False),
        ("timeout", "KEYWORD_ONLY", None),
    ]
    for method in ("list_prompts", "list_resources", "list_resource_templates"):
        assert parameters(method) == listing, method
    assert [name for name, _, _ in parameters("get_prompt")] == [
        "self",
        "name",
        "arguments",
        "timeout",
    ]
    assert [name for name, _, _ in parameters("read_resource")] == [
        "self",
        "server",
        "uri",
        "timeout",
    ]
    assert [name for name, _, _ in parameters("resolve_prompt")] == ["self", "name"]
