"""``to_wire()``: each model back to its MCP JSON. Parsing it again gives an equal object, it is
plain JSON (dicts, lists, str, numbers, bools, None: nothing shared with the model), and its
keys are the schema's (checked against the official SDK's models, ``mcp.types``)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import mcp.types as sdk
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_core import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    Icon,
    ImageContent,
    PromptMessage,
    ReadResourceResult,
    ResourceContents,
    ResourceLink,
    TextContent,
    Tool,
    UnknownContent,
)
from mcp_core._vocabulary.models import content_from_wire

# --- strategies ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
objects = st.dictionaries(st.text(max_size=6), json_values, max_size=3)
maybe_objects = st.none() | objects
maybe_text = st.none() | st.text(max_size=10)
common = {"annotations": maybe_objects, "meta": maybe_objects}

texts = st.builds(TextContent, text=st.text(max_size=20), **common)
images = st.builds(
    ImageContent, data=st.text(max_size=20), mime_type=st.text(max_size=10), **common
)
audios = st.builds(
    AudioContent, data=st.text(max_size=20), mime_type=st.text(max_size=10), **common
)
links = st.builds(
    ResourceLink,
    uri=st.text(max_size=10),
    name=st.text(max_size=10),
    title=maybe_text,
    description=maybe_text,
    mime_type=maybe_text,
    **common,
)
embedded = st.builds(
    EmbeddedResource,
    resource=st.builds(lambda extra, uri: {**extra, "uri": uri}, objects, st.text(max_size=10)),
    **common,
)
KNOWN = {"text", "image", "audio", "resource_link", "resource"}
unknown = st.builds(
    lambda kind, extra, annotations, meta: content_from_wire(
        {
            **{k: v for k, v in extra.items() if k not in ("annotations", "_meta")},
            "type": kind,
            **({} if annotations is None else {"annotations": annotations}),
            **({} if meta is None else {"_meta": meta}),
        }
    ),
    st.text(max_size=10).filter(lambda kind: kind not in KNOWN),
    objects,
    maybe_objects,
    maybe_objects,
)
blocks = texts | images | audios | links | embedded | unknown

icons = st.builds(
    Icon,
    src=st.text(max_size=10),
    mime_type=maybe_text,
    sizes=st.none() | st.lists(st.text(max_size=5), max_size=2).map(tuple),
    theme=st.none() | st.sampled_from(["light", "dark"]),
)
tools = st.builds(
    Tool,
    icons=st.lists(icons, max_size=2).map(tuple),
    name=st.text(max_size=10),
    input_schema=objects,
    description=maybe_text,
    title=maybe_text,
    output_schema=maybe_objects,
    annotations=maybe_objects,
    meta=maybe_objects,
)
results = st.builds(
    CallToolResult,
    content=st.lists(blocks, max_size=4).map(tuple),
    structured_content=json_values,
    is_error=st.booleans(),
    meta=maybe_objects,
)
# Exactly one of text and blob, as the schema has it.
contents = st.builds(
    lambda uri, data, mime, meta: ResourceContents(uri=uri, mime_type=mime, meta=meta, **data),
    st.text(max_size=10),
    st.builds(lambda text: {"text": text}, st.text(max_size=10))
    | st.builds(lambda blob: {"blob": blob}, st.binary(max_size=10)),
    maybe_text,
    maybe_objects,
)
reads = st.builds(
    ReadResourceResult, contents=st.lists(contents, max_size=3).map(tuple), meta=maybe_objects
)
messages = st.builds(PromptMessage, role=st.text(max_size=10), content=blocks)
prompts = st.builds(
    GetPromptResult,
    messages=st.lists(messages, max_size=3).map(tuple),
    description=maybe_text,
    meta=maybe_objects,
)

PARSERS: dict[type, Callable[[object], Any]] = {
    Tool: Tool.from_wire,
    CallToolResult: CallToolResult.from_wire,
    ResourceContents: ResourceContents.from_wire,
    ReadResourceResult: ReadResourceResult.from_wire,
    PromptMessage: PromptMessage.from_wire,
    GetPromptResult: GetPromptResult.from_wire,
}
models = blocks | tools | results | reads | prompts | messages | contents


def _parse(model: Any) -> Callable[[object], Any]:
    return PARSERS.get(type(model), content_from_wire)


def _is_plain_json(value: object) -> bool:
    if isinstance(value, dict):
        return all(type(k) is str and _is_plain_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_plain_json(item) for item in value)
    return value is None or type(value) in (str, int, float, bool)


# --- round trips --------------------------------------------------------------------------------


@given(models)
def test_parsing_to_wire_gives_the_model_back(model: Any) -> None:
    wire = model.to_wire()
    assert _parse(model)(wire) == model
    assert _is_plain_json(wire)
    assert json.loads(json.dumps(wire)) == wire


@given(models)
def test_to_wire_is_a_fixed_point_of_parsing(model: Any) -> None:
    wire = model.to_wire()
    assert _parse(model)(wire).to_wire() == wire


def test_to_wire_copies_what_it_shares_with_the_model() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    tool = Tool(name="read", input_schema=MappingProxyType(schema), meta={"k": (1, 2)})
    wire = tool.to_wire()
    assert wire == {
        "name": "read",
        "inputSchema": schema,
        "_meta": {"k": [1, 2]},
    }
    assert type(wire["inputSchema"]) is dict
    wire["inputSchema"]["properties"]["path"]["type"] = "integer"
    assert tool.input_schema["properties"]["path"]["type"] == "string"


# --- shapes, as the schema spells them ----------------------------------------------------------

ANNOTATIONS = {"audience": ["user"], "priority": 0.5}
WIRE: list[tuple[dict[str, Any], Callable[[object], Any], type[pydantic.BaseModel]]] = [
    (
        {
            "name": "read",
            "title": "Read",
            "description": "Read a file",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True},
            "icons": [
                {"src": "https://x/i.png", "mimeType": "image/png", "sizes": ["48x48"]},
                {"src": "data:image/svg+xml;base64,PHN2Zy8+", "theme": "dark"},
            ],
            "_meta": {"k": 1},
        },
        Tool.from_wire,
        sdk.Tool,
    ),
    (
        {
            "content": [
                {"type": "text", "text": "hi", "annotations": ANNOTATIONS},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "_meta": {"k": 1}},
                {
                    "type": "resource_link",
                    "uri": "file:///r.pdf",
                    "name": "r.pdf",
                    "title": "Report",
                    "description": "The report",
                    "mimeType": "application/pdf",
                },
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "a"}},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///b", "mimeType": "image/png", "blob": "AAEC"},
                },
            ],
            "isError": False,
            "structuredContent": {"n": 1},
            "_meta": {"k": 1},
        },
        CallToolResult.from_wire,
        sdk.CallToolResult,
    ),
    (
        {
            "contents": [
                {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "a"},
                {"uri": "file:///b.bin", "blob": "AAEC", "_meta": {"k": 1}},
            ],
            "_meta": {"k": 1},
        },
        ReadResourceResult.from_wire,
        sdk.ReadResourceResult,
    ),
    (
        {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {
                    "role": "assistant",
                    "content": {"type": "image", "data": "AA==", "mimeType": "image/png"},
                },
            ],
            "description": "A prompt",
            "_meta": {"k": 1},
        },
        GetPromptResult.from_wire,
        sdk.GetPromptResult,
    ),
]


@pytest.mark.parametrize(("wire", "parse", "model"), WIRE, ids=lambda x: getattr(x, "__name__", ""))
def test_to_wire_gives_the_schema_shape(
    wire: dict[str, Any], parse: Callable[[object], Any], model: type[pydantic.BaseModel]
) -> None:
    ours = parse(wire).to_wire()
    assert ours == wire
    # The official SDK reads it, and writes back the same keys: a misspelt or snake_case key
    # would be dropped or renamed on the way.
    validated = model.model_validate(ours)
    assert validated.model_dump(by_alias=True, exclude_unset=True, mode="json") == ours


def test_the_sdk_check_catches_a_snake_case_key() -> None:
    wrong = {"content": [], "isError": False, "structured_content": {"n": 1}}
    validated = sdk.CallToolResult.model_validate(wrong)
    assert validated.model_dump(by_alias=True, exclude_unset=True, mode="json") != wrong


def test_blobs_go_back_to_base64() -> None:
    contents = ResourceContents(uri="file:///b", blob=b"\x00\x01\x02")
    assert contents.to_wire() == {"uri": "file:///b", "blob": base64.b64encode(b"\0\1\2").decode()}


def test_unknown_content_keeps_what_the_server_sent() -> None:
    raw = {"type": "widget", "size": 3, "_meta": {"k": 1}}
    block = content_from_wire(raw)
    assert isinstance(block, UnknownContent)
    assert block.to_wire() == raw
    # A block made by hand: its own fields are laid over raw.
    made = UnknownContent(type="widget", raw={"size": 3}, annotations={"priority": 1})
    assert made.to_wire() == {"type": "widget", "size": 3, "annotations": {"priority": 1}}


def test_tool_to_wire_leaves_out_what_it_does_not_model() -> None:
    wire = {"name": "t", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "no"}}
    tool = Tool.from_wire(wire)
    assert tool.to_wire() == {"name": "t", "inputSchema": {"type": "object"}}
    assert tool.raw["execution"] == {"taskSupport": "no"}


def test_call_tool_result_to_wire_leaves_out_data() -> None:
    result = CallToolResult(structured_content={"n": 1}, data=object())
    assert result.to_wire() == {"content": [], "isError": False, "structuredContent": {"n": 1}}
