"""mcp_core.providers: tool declarations and tool results in each provider's request shape,
checked against the providers' own SDK types (test-only dependencies: openai, anthropic,
google-genai), and names each provider takes, with the way back to the MCP name."""

from __future__ import annotations

import ast
import base64
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from anthropic.types import ToolParam, ToolResultBlockParam
from google.genai import types as gemini
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import (
    ChatCompletionToolMessageParam,
    ChatCompletionToolParam,
    ChatCompletionUserMessageParam,
)
from openai.types.responses import FunctionToolParam
from openai.types.responses.response_input_param import FunctionCallOutput

import mcp_core
from mcp_core import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
    UnknownContent,
    providers,
)
from mcp_core.providers import (
    ToolDeclarations,
    anthropic_tool_result,
    anthropic_tools,
    gemini_tool_result,
    gemini_tools,
    openai_response_tool_result,
    openai_response_tools,
    openai_tool_images,
    openai_tool_result,
    openai_tools,
)

# What each provider documents for a function name: OpenAI's FunctionDefinition.name ("a-z,
# A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64"), Anthropic's
# tools[].name (^[a-zA-Z0-9_-]{1,64}$), Gemini's FunctionDeclaration.name ("Must start with a
# letter or an underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, colons and
# dashes, with a maximum length of 128"). The SDKs do not check names: these patterns do.
OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
ANTHROPIC_NAME = OPENAI_NAME
GEMINI_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,127}")

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n+/").decode()  # '+' and '/': standard base64
PDF = base64.b64encode(b"%PDF-1.7").decode()


def _tool(name: str, **fields: Any) -> Tool:
    return Tool(name=name, input_schema=fields.pop("input_schema", SCHEMA), **fields)


def _materialised(value: object) -> object:
    """``value`` with the lazy iterators pydantic makes of ``Iterable[...]`` fields read out
    (reading them is what validates their items)."""
    if isinstance(value, dict):
        return {key: _materialised(item) for key, item in value.items()}
    if isinstance(value, list | tuple | Iterator):
        return [_materialised(item) for item in value]
    return value


_ADAPTERS: dict[Any, pydantic.TypeAdapter[Any]] = {}


def sdk_valid(kind: Any, value: dict[str, Any]) -> None:
    """``value`` passes the SDK's TypedDict ``kind`` (strict), and nothing of it is dropped on
    the way: a TypedDict ignores keys it does not know, so a misspelt key would vanish."""
    # The adapter must outlive the lazy iterators: they validate with its definitions.
    adapter = _ADAPTERS.setdefault(kind, pydantic.TypeAdapter(kind))
    validated = adapter.validate_python(value, strict=True)
    assert _materialised(validated) == value


def gemini_valid(model: type[pydantic.BaseModel], value: dict[str, Any]) -> pydantic.BaseModel:
    """``value`` passes google-genai's pydantic ``model``, which forbids unknown keys."""
    return model.model_validate(value)


# --- the checks themselves can fail -----------------------------------------------------------


def test_the_sdk_checks_refuse_what_the_providers_refuse() -> None:
    with pytest.raises(AssertionError):  # an unknown key, dropped by the TypedDict
        sdk_valid(ChatCompletionToolParam, {"type": "function", "function": {"name": "a"}, "x": 1})
    with pytest.raises(pydantic.ValidationError):  # a tool message carries text parts only
        sdk_valid(
            ChatCompletionToolMessageParam,
            {
                "role": "tool",
                "tool_call_id": "c",
                "content": [{"type": "image_url", "image_url": {"url": "data:,"}}],
            },
        )
    with pytest.raises(pydantic.ValidationError):  # Anthropic takes four image types
        sdk_valid(
            ToolResultBlockParam,
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/svg+xml", "data": PNG},
                    }
                ],
            },
        )
    with pytest.raises(pydantic.ValidationError):  # a misspelt key
        gemini_valid(gemini.Tool, {"function_declarations": [{"name": "a", "parameter": {}}]})
    for name in ("fs/read", "read file", "a.b", "x" * 65, ""):
        assert not OPENAI_NAME.fullmatch(name)
    for name in ("fs/read", "1st", "-a", "x" * 129):
        assert not GEMINI_NAME.fullmatch(name)


# --- declarations ------------------------------------------------------------------------------

TOOLS = [
    _tool("read_file", description="Read a file", title="Read"),
    _tool("fs.write", title="Write a file"),
    _tool("mcp__docs__search/v2", input_schema={"properties": {}}),
]


def test_openai_tools() -> None:
    declared = openai_tools(TOOLS)
    assert declared.declarations == [
        {
            "type": "function",
            "function": {"name": "read_file", "description": "Read a file", "parameters": SCHEMA},
        },
        {
            "type": "function",
            "function": {"name": "fs_write", "description": "Write a file", "parameters": SCHEMA},
        },
        {
            "type": "function",
            "function": {
                "name": "mcp__docs__search_v2",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]
    for declaration in declared.declarations:
        sdk_valid(ChatCompletionToolParam, declaration)
        assert OPENAI_NAME.fullmatch(declaration["function"]["name"])
    assert declared.tool_name("fs_write") == "fs.write"
    assert declared.tool_name("read_file") == "read_file"
    assert declared.provider_name("mcp__docs__search/v2") == "mcp__docs__search_v2"


def test_openai_response_tools() -> None:
    declared = openai_response_tools(TOOLS)
    assert declared.declarations[0] == {
        "type": "function",
        "name": "read_file",
        "description": "Read a file",
        "parameters": SCHEMA,
        "strict": False,
    }
    assert "description" not in declared.declarations[2]
    for declaration in declared.declarations:
        sdk_valid(FunctionToolParam, declaration)
        assert OPENAI_NAME.fullmatch(declaration["name"])
    assert declared.tool_name("mcp__docs__search_v2") == "mcp__docs__search/v2"


def test_anthropic_tools() -> None:
    declared = anthropic_tools(TOOLS)
    assert declared.declarations == [
        {"name": "read_file", "description": "Read a file", "input_schema": SCHEMA},
        {"name": "fs_write", "description": "Write a file", "input_schema": SCHEMA},
        {"name": "mcp__docs__search_v2", "input_schema": {"type": "object", "properties": {}}},
    ]
    for declaration in declared.declarations:
        sdk_valid(ToolParam, declaration)
        assert ANTHROPIC_NAME.fullmatch(declaration["name"])
    assert declared.tool_name("fs_write") == "fs.write"


def test_gemini_tools() -> None:
    declared = gemini_tools([*TOOLS, _tool("2fa.check")])
    (tool,) = declared.declarations
    assert tool == {
        "function_declarations": [
            {"name": "read_file", "description": "Read a file", "parameters_json_schema": SCHEMA},
            # Gemini takes dots: the name is kept.
            {"name": "fs.write", "description": "Write a file", "parameters_json_schema": SCHEMA},
            {
                "name": "mcp__docs__search_v2",
                "parameters_json_schema": {"type": "object", "properties": {}},
            },
            # ... but not a digit first.
            {"name": "_2fa.check", "parameters_json_schema": SCHEMA},
        ]
    }
    validated = gemini_valid(gemini.Tool, tool)
    assert isinstance(validated, gemini.Tool)
    assert validated.function_declarations is not None
    # The JSON Schema reaches the SDK as it is ($schema, additionalProperties included).
    assert validated.function_declarations[0].parameters_json_schema == SCHEMA
    for declaration in tool["function_declarations"]:
        assert GEMINI_NAME.fullmatch(declaration["name"])
    assert declared.tool_name("fs.write") == "fs.write"
    assert declared.tool_name("_2fa.check") == "2fa.check"


def test_declarations_do_not_share_the_tools_schema() -> None:
    tool = _tool("t")
    declared = anthropic_tools([tool])
    declared.declarations[0]["input_schema"]["properties"]["path"]["type"] = "integer"
    assert tool.input_schema["properties"]["path"]["type"] == "string"


def test_an_unknown_name_is_a_key_error() -> None:
    declared = openai_tools(TOOLS)
    with pytest.raises(KeyError, match="no tool was declared to the model as 'nope'"):
        declared.tool_name("nope")
    with pytest.raises(KeyError, match="no tool named 'nope' was declared"):
        declared.provider_name("nope")
    assert isinstance(declared, ToolDeclarations)


def test_no_tools_declare_nothing() -> None:
    assert openai_tools([]).declarations == []
    assert gemini_tools([]).declarations == [{"function_declarations": []}]


# --- names -------------------------------------------------------------------------------------


def _hex(name: str, digits: int = 8) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:digits]


def _names(names: list[str], declare: Any = openai_tools) -> dict[str, str]:
    """MCP name -> declared name."""
    declared = declare([_tool(name) for name in names])
    return {mcp: provider for provider, mcp in declared.names.items()}


def test_a_name_the_provider_takes_keeps_it_and_the_other_gets_a_hash() -> None:
    assert _names(["a.b", "a_b"]) == {"a_b": "a_b", "a.b": f"a_b_{_hex('a.b')}"}
    # Gemini takes both as they are.
    assert _names(["a.b", "a_b"], gemini_tools) == {"a.b": "a.b", "a_b": "a_b"}


def test_names_that_both_change_both_get_a_hash() -> None:
    assert _names(["a.b", "a/b"]) == {"a.b": f"a_b_{_hex('a.b')}", "a/b": f"a_b_{_hex('a/b')}"}


def test_a_hashed_name_that_clashes_again_gets_a_longer_hash() -> None:
    taken = f"a_b_{_hex('a.b')}"  # a tool literally named as a.b would be
    assert _names(["a.b", "a_b", taken]) == {
        "a_b": "a_b",
        taken: taken,
        "a.b": f"a_b_{_hex('a.b', 16)}",
    }


def test_a_long_name_is_cut_with_a_hash() -> None:
    long = "t" * 70
    declared = _names([long, "u" * 64])[long]
    assert declared == "t" * 55 + "_" + _hex(long)
    assert len(declared) == 64
    assert _names(["u" * 64]) == {"u" * 64: "u" * 64}  # 64 is still fine


def test_an_empty_name_becomes_an_underscore() -> None:
    assert _names([""]) == {"": "_"}
    assert _names([""], gemini_tools) == {"": "_"}


def test_a_name_listed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'a' is listed twice"):
        openai_tools([_tool("a"), _tool("a")])


def test_names_no_hash_tells_apart_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "_digest", lambda name: "0" * 64)
    with pytest.raises(ValueError, match=r"tools \['a.b', 'a/b'\] cannot be given distinct"):
        openai_tools([_tool("a.b"), _tool("a/b")])


names_lists = st.lists(
    st.text(
        alphabet=st.sampled_from("ab_-.:/ 1é"),
        max_size=70,
    ),
    unique=True,
    max_size=6,
)


@pytest.mark.parametrize(
    ("declare", "pattern"),
    [
        (openai_tools, OPENAI_NAME),
        (openai_response_tools, OPENAI_NAME),
        (anthropic_tools, ANTHROPIC_NAME),
        (gemini_tools, GEMINI_NAME),
    ],
)
@given(names=names_lists, data=st.data())
def test_declared_names_are_valid_distinct_and_lead_back(
    declare: Any, pattern: re.Pattern[str], names: list[str], data: st.DataObject
) -> None:
    declared = declare([_tool(name) for name in names])
    assert sorted(declared.names.values()) == sorted(names)
    for provider_name, name in declared.names.items():
        assert pattern.fullmatch(provider_name) and len(provider_name) <= 64
        assert declared.tool_name(provider_name) == name
        assert declared.provider_name(name) == provider_name
        if pattern.fullmatch(name):
            assert provider_name == name
    # The names depend on the set of tools, not on their order.
    shuffled = data.draw(st.permutations(names))
    assert declare([_tool(name) for name in shuffled]).names == declared.names


def test_group_names_are_declared_as_they_are() -> None:
    names = [mcp_core.tool_name("my-fs", "read_file"), mcp_core.tool_name("web", "x" * 80)]
    assert _names(names) == {name: name for name in names}


# --- results -----------------------------------------------------------------------------------

RICH = CallToolResult(
    content=(
        TextContent(text="two files"),
        TextContent(text=""),
        ImageContent(data=PNG, mime_type="image/png"),
        ImageContent(data="PHN2Zz4=", mime_type="image/svg+xml"),
        AudioContent(data="UklGRg==", mime_type="audio/wav"),
        ResourceLink(
            uri="file:///r.pdf",
            name="r.pdf",
            title="Report",
            mime_type="application/pdf",
            description="The report",
        ),
        ResourceLink(uri="file:///s", name="s"),
        EmbeddedResource(resource={"uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"}),
        EmbeddedResource(resource={"uri": "file:///b.txt", "text": "B"}),
        EmbeddedResource(resource={"uri": "file:///c.png", "mimeType": "image/png", "blob": PNG}),
        EmbeddedResource(
            resource={"uri": "file:///d.pdf", "mimeType": "application/pdf", "blob": PDF}
        ),
        UnknownContent(type="widget", raw={"type": "widget"}),
    ),
)
RICH_LINES = [
    "two files",
    "[image/svg+xml image left out: not an image type this model takes]",
    "[audio/wav audio left out: this model takes no audio in tool results]",
    "[resource link] Report <file:///r.pdf> (application/pdf): The report",
    "[resource link] s <file:///s>",
    "[resource file:///a.txt (text/plain)]\nA",
    "[resource file:///b.txt]\nB",
    "[resource file:///d.pdf (application/pdf) left out: binary content this model does not take]",
    "[widget content left out: a content type this client does not know]",
]


def _image_note(number: int, call_id: str = "call_1") -> str:
    return (
        f"[image {number} (image/png) of tool call {call_id}: in the user message after the "
        "tool results]"
    )


def test_openai_tool_result_is_text_with_the_images_named() -> None:
    message = openai_tool_result(RICH, "call_1")
    sdk_valid(ChatCompletionToolMessageParam, message)
    lines = [*RICH_LINES]
    lines.insert(1, _image_note(1))
    lines.insert(8, _image_note(2))
    assert message == {"role": "tool", "tool_call_id": "call_1", "content": "\n".join(lines)}


def test_openai_tool_images_is_a_user_message_with_the_images() -> None:
    message = openai_tool_images(RICH, "call_1")
    assert message is not None
    sdk_valid(ChatCompletionUserMessageParam, message)
    url = f"data:image/png;base64,{PNG}"
    assert message == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The images of tool call call_1, in order:"},
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }
    assert openai_tool_images(CallToolResult(content=(TextContent(text="x"),)), "c") is None


def test_openai_response_tool_result_carries_the_images() -> None:
    item = openai_response_tool_result(RICH, "call_1")
    sdk_valid(FunctionCallOutput, item)
    image = {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"}
    texts = [{"type": "input_text", "text": line} for line in RICH_LINES]
    assert item == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [texts[0], image, *texts[1:7], image, *texts[7:]],
    }
    text_only = openai_response_tool_result(CallToolResult(content=(TextContent(text="x"),)), "c")
    sdk_valid(FunctionCallOutput, text_only)
    assert text_only == {"type": "function_call_output", "call_id": "c", "output": "x"}


def test_anthropic_tool_result_carries_the_images() -> None:
    block = anthropic_tool_result(RICH, "toolu_1")
    sdk_valid(ToolResultBlockParam, block)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    texts = [{"type": "text", "text": line} for line in RICH_LINES]
    assert block == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [texts[0], image, *texts[1:7], image, *texts[7:]],
        "is_error": False,
    }


def test_an_empty_result() -> None:
    empty = CallToolResult()
    block = anthropic_tool_result(empty, "t")
    sdk_valid(ToolResultBlockParam, block)
    assert block == {"type": "tool_result", "tool_use_id": "t", "is_error": False}
    assert openai_tool_result(empty, "c")["content"] == ""
    assert gemini_tool_result(empty, "f") == {
        "function_response": {"name": "f", "response": {"output": ""}}
    }


def test_gemini_tool_result_puts_images_in_parts() -> None:
    part = gemini_tool_result(RICH, "read_file", call_id="fc_1")
    validated = gemini_valid(gemini.Part, part)
    assert isinstance(validated, gemini.Part)
    response = validated.function_response
    assert response is not None and response.parts is not None
    assert [p.inline_data.data for p in response.parts if p.inline_data] == [
        base64.b64decode(PNG)
    ] * 2
    inline = {"inline_data": {"mime_type": "image/png", "data": PNG}}
    assert part == {
        "function_response": {
            "name": "read_file",
            "response": {"output": "\n".join(RICH_LINES)},
            "id": "fc_1",
            "parts": [inline, inline],
        }
    }


def test_gemini_leaves_out_images_it_does_not_take() -> None:
    gif = CallToolResult(content=(ImageContent(data="R0lGOA==", mime_type="image/gif"),))
    part = gemini_tool_result(gif, "f")
    gemini_valid(gemini.Part, part)
    assert part == {
        "function_response": {
            "name": "f",
            "response": {
                "output": "[image/gif image left out: not an image type this model takes]"
            },
        }
    }
    # Anthropic and OpenAI take GIF.
    assert anthropic_tool_result(gif, "t")["content"][0]["type"] == "image"
    assert openai_tool_images(gif, "c") is not None


# --- structured content and errors -------------------------------------------------------------

STRUCTURED = {"files": ["a", "b"], "count": 2}
# What a 2025-06-18+ server sends: the structured content and its JSON in a text block.
BOTH = CallToolResult(
    content=(TextContent(text='{"files": ["a", "b"], "count": 2}'),),
    structured_content=STRUCTURED,
)
ONLY_STRUCTURED = CallToolResult(structured_content=STRUCTURED)
WITH_SUMMARY = CallToolResult(
    content=(TextContent(text="two files"), ImageContent(data=PNG, mime_type="image/png")),
    structured_content=STRUCTURED,
)


def test_structured_content_is_sent_once_as_text() -> None:
    as_json = '{"files": ["a", "b"], "count": 2}'
    assert openai_tool_result(BOTH, "c")["content"] == as_json
    assert openai_tool_result(ONLY_STRUCTURED, "c")["content"] == as_json
    assert openai_tool_result(WITH_SUMMARY, "c")["content"] == "\n".join(
        ["two files", _image_note(1, "c"), as_json]
    )
    for result in (BOTH, ONLY_STRUCTURED):
        block = anthropic_tool_result(result, "t")
        sdk_valid(ToolResultBlockParam, block)
        assert block["content"] == [{"type": "text", "text": as_json}]


def test_gemini_gets_structured_content_as_the_response() -> None:
    for result in (BOTH, ONLY_STRUCTURED):
        part = gemini_tool_result(result, "f")
        gemini_valid(gemini.Part, part)
        assert part == {"function_response": {"name": "f", "response": {"output": STRUCTURED}}}
    part = gemini_tool_result(WITH_SUMMARY, "f")
    gemini_valid(gemini.Part, part)
    assert part["function_response"]["response"] == {"output": STRUCTURED, "text": "two files"}
    # A copy: the result is left as it was.
    part["function_response"]["response"]["output"]["files"].append("c")
    assert STRUCTURED["files"] == ["a", "b"]


def test_text_that_is_not_the_structured_json_is_kept() -> None:
    for text in ("not json", '{"count": 3}', "[" * 100_000):
        result = CallToolResult(content=(TextContent(text=text),), structured_content={"n": 1})
        assert openai_tool_result(result, "c")["content"] == f'{text}\n{{"n": 1}}'
        response = gemini_tool_result(result, "f")["function_response"]["response"]
        assert response == {"output": {"n": 1}, "text": text}


ERROR = CallToolResult(content=(TextContent(text="no such file"),), is_error=True)


def test_an_error_result() -> None:
    message = openai_tool_result(ERROR, "c")
    sdk_valid(ChatCompletionToolMessageParam, message)
    assert message["content"] == "[the tool reported an error]\nno such file"
    item = openai_response_tool_result(ERROR, "c")
    sdk_valid(FunctionCallOutput, item)
    assert item["output"] == "[the tool reported an error]\nno such file"
    block = anthropic_tool_result(ERROR, "t")
    sdk_valid(ToolResultBlockParam, block)
    assert block["is_error"] is True
    assert block["content"] == [{"type": "text", "text": "no such file"}]
    part = gemini_tool_result(ERROR, "f")
    gemini_valid(gemini.Part, part)
    assert part["function_response"]["response"] == {"error": "no such file"}
    structured = CallToolResult(structured_content={"code": 2}, is_error=True)
    assert gemini_tool_result(structured, "f")["function_response"]["response"] == {
        "error": {"code": 2}
    }


def test_an_error_with_an_image_leads_with_the_note() -> None:
    result = CallToolResult(content=(ImageContent(data=PNG, mime_type="image/png"),), is_error=True)
    item = openai_response_tool_result(result, "c")
    sdk_valid(FunctionCallOutput, item)
    assert item["output"][0] == {"type": "input_text", "text": "[the tool reported an error]"}


# --- purity ------------------------------------------------------------------------------------


def test_the_core_imports_no_provider_sdk() -> None:
    core = Path(mcp_core.__file__).parent
    imported = set()
    for path in core.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    assert not imported & {"openai", "anthropic", "google", "pydantic"}
    assert "json" in imported  # the walk sees imports at all
