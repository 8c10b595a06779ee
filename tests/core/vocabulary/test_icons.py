"""Icons (MCP 2025-11-25 basic/index §Icons): typed on tools, resources, resource templates,
prompts and the server's info, read tolerantly (an entry this client cannot read is dropped,
never failing what carries it), and written back as the schema spells them."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_core import Icon, Prompt, Resource, ResourceTemplate, Status, Tool

GOOD = {
    "src": "https://x/i.png",
    "mimeType": "image/png",
    "sizes": ["48x48", "any"],
    "theme": "light",
}


def test_an_icon_is_read_with_every_field() -> None:
    icon = Icon.from_wire(GOOD)
    assert icon == Icon(
        src="https://x/i.png", mime_type="image/png", sizes=("48x48", "any"), theme="light"
    )
    assert icon.to_wire() == GOOD
    assert Icon(src="data:image/png;base64,AA==").to_wire() == {"src": "data:image/png;base64,AA=="}


@pytest.mark.parametrize(
    "entry",
    [
        "https://x/i.png",  # not an object
        {"mimeType": "image/png"},  # no src
        {"src": 1},
        {"src": "https://x/i.png", "mimeType": 3},
        {"src": "https://x/i.png", "sizes": "48x48"},  # not a list
        {"src": "https://x/i.png", "sizes": [48]},
        {"src": "https://x/i.png", "theme": True},
    ],
)
def test_an_entry_that_cannot_be_read_is_dropped(entry: object) -> None:
    assert Icon.from_wire(entry) is None
    tool = Tool.from_wire(
        {"name": "t", "inputSchema": {}, "icons": [entry, {"src": "https://x/ok.png"}]}
    )
    assert tool.icons == (Icon(src="https://x/ok.png"),)


@pytest.mark.parametrize("value", [None, "https://x/i.png", {"src": "x"}, 3])
def test_icons_that_are_not_a_list_give_none(value: object) -> None:
    assert Tool.from_wire({"name": "t", "inputSchema": {}, "icons": value}).icons == ()


@pytest.mark.parametrize(
    ("parse", "wire"),
    [
        (Resource.from_wire, {"uri": "file:///a", "name": "a"}),
        (ResourceTemplate.from_wire, {"uriTemplate": "file:///{p}", "name": "f"}),
        (Prompt.from_wire, {"name": "p"}),
        (Tool.from_wire, {"name": "t", "inputSchema": {}}),
    ],
)
def test_listed_items_carry_their_icons(parse: Any, wire: dict[str, Any]) -> None:
    assert parse(wire).icons == ()
    listed = parse({**wire, "icons": [GOOD, "junk"]})
    assert listed.icons == (Icon.from_wire(GOOD),)


def test_a_tools_icons_go_back_on_the_wire() -> None:
    tool = Tool(name="t", input_schema={}, icons=(Icon(src="https://x/i.png", theme="dark"),))
    assert tool.to_wire()["icons"] == [{"src": "https://x/i.png", "theme": "dark"}]
    assert "icons" not in Tool(name="t", input_schema={}).to_wire()


def test_the_servers_icons_are_typed_beside_its_info() -> None:
    status = Status(
        name="s",
        state="ready",
        transport="stdio",
        concurrency="stateless",
        server_info={"name": "srv", "version": "1", "icons": [GOOD, {"src": None}]},
    )
    assert status.server_icons == (Icon.from_wire(GOOD),)
    assert status.server_info is not None and status.server_info["icons"][0] == GOOD
    assert Status(name="s", state="new", transport="stdio", concurrency="x").server_icons == ()
