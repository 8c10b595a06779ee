"""Wire models: tolerant parsing of tools, results and content blocks for every version."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

import mcp_core as core
from mcp_core import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    Icon,
    ImageContent,
    ResourceLink,
    Status,
    TextContent,
    Tool,
    UnknownContent,
)
from mcp_core._vocabulary.models import content_from_wire

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}

TOOLS: list[tuple[dict[str, Any], Tool]] = [
    # 2024-11-05: name, description, inputSchema
    (
        {"name": "read", "description": "Read a file", "inputSchema": SCHEMA},
        Tool(name="read", description="Read a file", input_schema=SCHEMA),
    ),
    # 2025-03-26: annotations
    (
        {"name": "rm", "inputSchema": SCHEMA, "annotations": {"destructiveHint": True}},
        Tool(name="rm", input_schema=SCHEMA, annotations={"destructiveHint": True}),
    ),
    # 2025-06-18: title, outputSchema, _meta; nulls for optional fields are accepted
    (
        {
            "name": "t",
            "title": "T",
            "inputSchema": SCHEMA,
            "outputSchema": SCHEMA,
            "_meta": {"k": 1},
            "description": None,
        },
        Tool(name="t", title="T", input_schema=SCHEMA, output_schema=SCHEMA, meta={"k": 1}),
    ),
    # 2025-11-25 / 2026-07-28 extras this client does not model are ignored; icons are typed
    (
        {
            "name": "i",
            "inputSchema": {"type": "object", "additionalProperties": False},
            "icons": [{"src": "https://x/i.png"}],
            "execution": {"taskSupport": "optional"},
        },
        Tool(
            name="i",
            input_schema={"type": "object", "additionalProperties": False},
            icons=(Icon(src="https://x/i.png"),),
        ),
    ),
]


@pytest.mark.parametrize(("wire", "tool"), TOOLS)
def test_tool_from_wire(wire: dict[str, Any], tool: Tool) -> None:
    assert Tool.from_wire(wire) == tool


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ("read", "tool must be a JSON object, got a string"),
        ({"inputSchema": SCHEMA}, "tool.name must be a string, got missing"),
        ({"name": 5, "inputSchema": SCHEMA}, "tool.name must be a string, got a number"),
        ({"name": "t"}, "tool 't'.inputSchema must be an object, got missing"),
        ({"name": "t", "inputSchema": None}, "tool 't'.inputSchema must be an object, got null"),
        ({"name": "t", "inputSchema": []}, "tool 't'.inputSchema must be an object, got an array"),
        ({"name": "t", "inputSchema": SCHEMA, "title": 1}, "tool 't'.title must be a string"),
        ({"name": "t", "inputSchema": SCHEMA, "annotations": "x"}, "annotations must be an object"),
        (
            {"name": "t", "inputSchema": SCHEMA, "_meta": True},
            "_meta must be an object, got a bool",
        ),
    ],
)
def test_tool_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Tool.from_wire(wire)


@pytest.mark.parametrize(
    ("title", "annotations", "shown"),
    [
        ("Title", {"title": "Annotated"}, "Title"),
        (None, {"title": "Annotated"}, "Annotated"),
        ("", {"title": "Annotated"}, "Annotated"),
        (None, {"title": ""}, "name"),
        (None, {"title": 3}, "name"),
        (None, {}, "name"),
        (None, None, "name"),
    ],
)
def test_display_name(title: str | None, annotations: dict[str, Any] | None, shown: str) -> None:
    tool = Tool(name="name", input_schema={}, title=title, annotations=annotations)
    assert tool.display_name == shown


ANNOTATIONS = {"audience": ["user"], "priority": 0.5}
CONTENT: list[tuple[dict[str, Any], object]] = [
    ({"type": "text", "text": "hi"}, TextContent(text="hi")),
    (
        {"type": "text", "text": "hi", "annotations": ANNOTATIONS, "_meta": {"m": 1}},
        TextContent(text="hi", annotations=ANNOTATIONS, meta={"m": 1}),
    ),
    (
        {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        ImageContent(data="aGk=", mime_type="image/png"),
    ),
    (
        {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
        AudioContent(data="aGk=", mime_type="audio/wav"),
    ),
    (
        {"type": "resource_link", "uri": "file:///a", "name": "a"},
        ResourceLink(uri="file:///a", name="a"),
    ),
    (
        {
            "type": "resource_link",
            "uri": "file:///a",
            "name": "a",
            "title": "A",
            "description": "d",
            "mimeType": "text/plain",
            "size": 3,
            "icons": [],
        },
        ResourceLink(uri="file:///a", name="a", title="A", description="d", mime_type="text/plain"),
    ),
    (
        {"type": "resource", "resource": {"uri": "file:///a", "text": "x"}},
        EmbeddedResource(resource={"uri": "file:///a", "text": "x"}),
    ),
    (
        {"type": "hologram", "depth": 3, "annotations": ANNOTATIONS},
        UnknownContent(
            type="hologram",
            raw={"type": "hologram", "depth": 3, "annotations": ANNOTATIONS},
            annotations=ANNOTATIONS,
        ),
    ),
]


@pytest.mark.parametrize(("wire", "block"), CONTENT)
def test_content_from_wire(wire: dict[str, Any], block: object) -> None:
    assert content_from_wire(wire) == block


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (["text"], "content block must be a JSON object"),
        ({"text": "hi"}, "content block.type must be a string, got missing"),
        ({"type": "text"}, "text content.text must be a string, got missing"),
        ({"type": "text", "text": None}, "text content.text must be a string, got null"),
        ({"type": "image", "data": "x"}, "image content.mimeType must be a string"),
        ({"type": "audio", "mimeType": "a/b"}, "audio content.data must be a string"),
        ({"type": "resource_link", "uri": "u"}, "resource_link content.name must be a string"),
        ({"type": "resource"}, "resource content.resource must be an object"),
        ({"type": "resource", "resource": {"text": "x"}}, "resource content.resource.uri must be"),
        ({"type": "text", "text": "x", "annotations": []}, "text content.annotations must be an"),
    ],
)
def test_content_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        content_from_wire(wire)


RESULTS: list[tuple[dict[str, Any], CallToolResult]] = [
    (
        {"content": [{"type": "text", "text": "ok"}]},
        CallToolResult(content=(TextContent(text="ok"),)),
    ),
    ({"content": [], "isError": True}, CallToolResult(is_error=True)),
    ({"content": [], "isError": None}, CallToolResult()),
    # 2025-06-18: structuredContent (an object); 2026-07-28: any JSON value, and resultType
    ({"content": [], "structuredContent": {"n": 1}}, CallToolResult(structured_content={"n": 1})),
    (
        {"content": [], "structuredContent": [1, 2], "resultType": "complete"},
        CallToolResult(structured_content=[1, 2]),
    ),
    ({"structuredContent": 3}, CallToolResult(structured_content=3)),  # content missing: ()
    ({"content": None}, CallToolResult()),
    ({"content": [], "_meta": {"x": 1}, "extra": "ignored"}, CallToolResult(meta={"x": 1})),
]


@pytest.mark.parametrize(("wire", "result"), RESULTS)
def test_result_from_wire(wire: dict[str, Any], result: CallToolResult) -> None:
    assert CallToolResult.from_wire(wire) == result


def test_any_mapping_is_read_like_a_dict() -> None:
    # The decoder makes dicts; a caller parsing its own data may hand in another mapping.
    wire = {"content": [MappingProxyType({"type": "text", "text": "ok"})], "isError": False}
    assert CallToolResult.from_wire(MappingProxyType(wire)) == RESULTS[0][1]


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (None, "tools/call result must be a JSON object, got null"),
        ({"content": {"type": "text"}}, "tools/call result.content must be an array"),
        ({"content": [], "isError": "true"}, "tools/call result.isError must be a boolean"),
        ({"content": [{"type": "text"}]}, "text content.text must be a string"),
        ({"content": [], "resultType": "input_required"}, "resultType 'input_required'"),
        ({"content": [], "resultType": "task"}, "resultType 'task', not 'complete'"),
        ({"content": [], "resultType": 7}, "resultType not a string"),
        ({"content": [], "_meta": 1}, "_meta must be an object, got a number"),
    ],
)
def test_result_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CallToolResult.from_wire(wire)


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ((), ""),
        ((TextContent(text="a"),), "a"),
        (
            (TextContent(text="a"), ImageContent(data="", mime_type="i/p"), TextContent(text="b")),
            "a\nb",
        ),
    ],
)
def test_result_text(content: tuple[Any, ...], text: str) -> None:
    assert CallToolResult(content=content).text == text


def test_block_types() -> None:
    assert [
        c.type for c in (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
    ] == ["text", "image", "audio", "resource_link", "resource"]


def test_status() -> None:
    status = Status(name="fs", state="ready", transport="stdio", concurrency="stateless")
    assert status.ready and status.in_flight == 0 and status.tools is None
    assert not Status(
        name="fs",
        state="closed",
        transport="http",
        concurrency="serialized",
        last_error="could not connect",
    ).ready


def test_a_status_prints_as_one_short_line() -> None:
    # print(client.status()) is for a person: never the server's instructions, info or
    # capabilities (which may run to pages), and a long error is cut on one line.
    ready = core.Status(
        name="fs",
        state="ready",
        transport="stdio",
        concurrency="stateless",
        era="modern",
        protocol_version="2026-07-28",
        tools=14,
        server_info={"name": "fs-server", "version": "1"},
        capabilities={"tools": {}},
        instructions="Use the tools wisely. " * 200,
    )
    assert str(ready) == "fs: ready (stdio, modern 2026-07-28); 14 tools"
    assert "wisely" in repr(ready)  # the fields are all there for a program
    failing = core.Status(
        name="web",
        state="starting",
        transport="http",
        concurrency="serialized",
        era="legacy",
        in_flight=2,
        queued=1,
        tools=1,
        last_error="the server exited with code 1\nlast stderr:\n" + "Traceback " * 50,
        retry_in=1.25,
    )
    text = str(failing)
    assert text.startswith(
        "web: starting (http, legacy); 2 in flight, 1 queued; 1 tool; "
        "last error: the server exited with code 1 last stderr: Traceback"
    )
    assert text.endswith("\u2026 (next attempt in 1.2 s)") and "\n" not in text
    assert len(text) < 300
    given_up = core.Status(
        name="a", state="closed", transport="stdio", concurrency="stateless", last_error="gone"
    )
    assert str(given_up) == "a: closed (stdio); last error: gone"


def test_a_prompt_result_gives_its_text() -> None:
    result = core.GetPromptResult.from_wire(
        {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "What is the weather?"}},
                {
                    "role": "user",
                    "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                },
                {"role": "assistant", "content": {"type": "text", "text": "Sunny."}},
            ]
        }
    )
    assert result.text == "What is the weather?\nSunny."
    assert [m.text for m in result.messages] == ["What is the weather?", "", "Sunny."]
    assert core.GetPromptResult(messages=()).text == ""
