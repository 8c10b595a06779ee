"""Wire models of resources, prompts and completion: what each field becomes, what is refused
(naming the field), and what is kept as received."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_core import (
    Completion,
    GetPromptResult,
    Icon,
    ImageContent,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptRef,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceRef,
    ResourceTemplate,
    TextContent,
    Tool,
)
from mcp_core.driver import completion_params

# --- resources ---------------------------------------------------------------------------------


RESOURCES: list[tuple[dict[str, Any], Resource]] = [
    # 2024-11-05: uri, name, description, mimeType
    (
        {"uri": "file:///a", "name": "a", "description": "d", "mimeType": "text/plain"},
        Resource(uri="file:///a", name="a", description="d", mime_type="text/plain"),
    ),
    # 2025-03-26 size and annotations, 2025-06-18 title and _meta
    (
        {
            "uri": "file:///b",
            "name": "b",
            "title": "B",
            "size": 12,
            "annotations": {"audience": ["user"]},
            "_meta": {"k": 1},
        },
        Resource(
            uri="file:///b",
            name="b",
            title="B",
            size=12,
            annotations={"audience": ["user"]},
            meta={"k": 1},
        ),
    ),
    # a server that leaves out the required name: the URI names it; nulls are absent
    (
        {"uri": "file:///c", "title": None, "size": None},
        Resource(uri="file:///c", name="file:///c"),
    ),
]


@pytest.mark.parametrize(("wire", "resource"), RESOURCES)
def test_resource_from_wire(wire: dict[str, Any], resource: Resource) -> None:
    assert Resource.from_wire(wire) == resource


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ("file:///a", "resource must be a JSON object, got a string"),
        ({"name": "a"}, "resource.uri must be a string, got missing"),
        ({"uri": 3}, "resource.uri must be a string, got a number"),
        ({"uri": "u", "name": 1}, "resource 'u'.name must be a string, got a number"),
        ({"uri": "u", "title": []}, "resource 'u'.title must be a string, got an array"),
        ({"uri": "u", "mimeType": {}}, "resource 'u'.mimeType must be a string, got an object"),
        ({"uri": "u", "size": "12"}, "resource 'u'.size must be an integer, got a string"),
        ({"uri": "u", "size": 1.5}, "resource 'u'.size must be an integer, got a number"),
        ({"uri": "u", "size": True}, "resource 'u'.size must be an integer, got a boolean"),
        ({"uri": "u", "annotations": 1}, "resource 'u'.annotations must be an object"),
        ({"uri": "u", "_meta": "m"}, "resource 'u'._meta must be an object, got a string"),
    ],
)
def test_resource_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Resource.from_wire(wire)


def test_resource_template_from_wire() -> None:
    wire = {
        "uriTemplate": "file:///{path}",
        "name": "files",
        "title": "Files",
        "description": "any file",
        "mimeType": "text/plain",
        "annotations": {"priority": 1},
        "_meta": {"m": 2},
        "icons": [{"src": "https://x/i.png"}],
    }
    template = ResourceTemplate.from_wire(wire)
    assert template == ResourceTemplate(
        uri_template="file:///{path}",
        name="files",
        title="Files",
        description="any file",
        mime_type="text/plain",
        annotations={"priority": 1},
        meta={"m": 2},
        icons=(Icon(src="https://x/i.png"),),
    )
    assert template.raw["icons"] == [{"src": "https://x/i.png"}]
    assert ResourceTemplate.from_wire({"uriTemplate": "db://{t}"}).name == "db://{t}"


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ([], "resource template must be a JSON object, got an array"),
        ({"name": "x"}, "resource template.uriTemplate must be a string, got missing"),
        ({"uriTemplate": "t", "name": 2}, "resource template 't'.name must be a string"),
        ({"uriTemplate": "t", "description": 2}, "resource template 't'.description must be"),
        ({"uriTemplate": "t", "_meta": []}, "resource template 't'._meta must be an object"),
    ],
)
def test_resource_template_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ResourceTemplate.from_wire(wire)


def test_resource_contents_text_and_blob() -> None:
    text = ResourceContents.from_wire({"uri": "file:///a", "mimeType": "text/plain", "text": ""})
    assert text == ResourceContents(uri="file:///a", mime_type="text/plain", text="")
    assert text.blob is None
    blob = ResourceContents.from_wire({"uri": "file:///b", "blob": "AAEC/w==", "_meta": {"k": 1}})
    assert blob.blob == b"\x00\x01\x02\xff" and blob.text is None and blob.meta == {"k": 1}


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (7, "resource contents must be a JSON object, got a number"),
        ({"text": "x"}, "resource contents.uri must be a string, got missing"),
        ({"uri": "u"}, "contents of 'u' must have exactly one of text and blob"),
        ({"uri": "u", "text": "x", "blob": "AA=="}, "exactly one of text and blob"),
        ({"uri": "u", "text": 1}, "contents of 'u'.text must be a string, got a number"),
        ({"uri": "u", "blob": ["AA=="]}, "contents of 'u'.blob must be a string, got an array"),
        ({"uri": "u", "blob": "not base64!"}, r"contents of 'u'\.blob is not valid base64"),
        ({"uri": "u", "blob": "AAE"}, r"\.blob is not valid base64"),  # padding missing
        ({"uri": "u", "blob": "é"}, r"\.blob is not valid base64"),  # not even ASCII
        ({"uri": "u", "text": "x", "mimeType": 5}, "contents of 'u'.mimeType must be a string"),
    ],
)
def test_resource_contents_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ResourceContents.from_wire(wire)


def test_read_resource_result() -> None:
    result = ReadResourceResult.from_wire(
        {
            "contents": [
                {"uri": "file:///d/a", "text": "one"},
                {"uri": "file:///d/b", "blob": "aGk="},
                {"uri": "file:///d/c", "text": "two"},
            ],
            "_meta": {"k": 1},
        }
    )
    assert [c.uri for c in result.contents] == ["file:///d/a", "file:///d/b", "file:///d/c"]
    assert result.contents[1].blob == b"hi"
    assert result.text == "one\ntwo"  # text contents only
    assert result.meta == {"k": 1}
    assert ReadResourceResult.from_wire({"contents": []}).text == ""


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        (None, "resources/read result must be a JSON object, got null"),
        ({}, "resources/read result.contents must be an array, got missing"),
        ({"contents": {"uri": "u"}}, "resources/read result.contents must be an array, got an"),
        ({"contents": [{"uri": "u", "blob": "%%"}]}, "contents of 'u'.blob is not valid base64"),
        ({"contents": [], "_meta": 1}, "resources/read result._meta must be an object"),
    ],
)
def test_read_resource_result_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ReadResourceResult.from_wire(wire)


@pytest.mark.parametrize(
    ("parse", "wire", "kept"),
    [
        (Resource.from_wire, {"uri": "u", "name": "n", "x-extra": [1]}, "x-extra"),
        (ResourceTemplate.from_wire, {"uriTemplate": "t", "x-extra": True}, "x-extra"),
        (
            ResourceContents.from_wire,
            {"uri": "u", "text": "t", "lastModified": "now"},
            "lastModified",
        ),
        (Prompt.from_wire, {"name": "p", "x-extra": []}, "x-extra"),
        (Tool.from_wire, {"name": "t", "inputSchema": {}, "execution": {}}, "execution"),
    ],
)
def test_unknown_fields_are_kept_in_raw(parse: Any, wire: dict[str, Any], kept: str) -> None:
    parsed = parse(wire)
    assert parsed.raw == wire and kept in parsed.raw
    assert kept not in repr(parsed)  # raw is neither shown ...
    assert parsed == parse({k: v for k, v in wire.items() if k != kept})  # ... nor compared


# --- prompts -----------------------------------------------------------------------------------


def test_prompt_from_wire() -> None:
    prompt = Prompt.from_wire(
        {
            "name": "review",
            "title": "Code review",
            "description": "Review a change",
            "arguments": [
                {"name": "diff", "description": "the change", "required": True},
                {"name": "style", "title": "Style"},
                {"name": "tone", "required": None},
            ],
            "_meta": {"k": 1},
        }
    )
    assert prompt == Prompt(
        name="review",
        title="Code review",
        description="Review a change",
        arguments=(
            PromptArgument(name="diff", description="the change", required=True),
            PromptArgument(name="style", title="Style"),
            PromptArgument(name="tone"),
        ),
        meta={"k": 1},
    )
    assert Prompt.from_wire({"name": "bare"}) == Prompt(name="bare")
    assert Prompt.from_wire({"name": "bare", "arguments": None}).arguments == ()


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ("p", "prompt must be a JSON object, got a string"),
        ({}, "prompt.name must be a string, got missing"),
        ({"name": "p", "arguments": {}}, "prompt 'p'.arguments must be an array, got an object"),
        ({"name": "p", "arguments": ["a"]}, "argument of prompt 'p' must be a JSON object"),
        ({"name": "p", "arguments": [{}]}, "argument of prompt 'p'.name must be a string"),
        (
            {"name": "p", "arguments": [{"name": "a", "required": "yes"}]},
            "argument 'a' of prompt 'p'.required must be a boolean, got a string",
        ),
        (
            {"name": "p", "arguments": [{"name": "a", "description": 1}]},
            "argument 'a' of prompt 'p'.description must be a string",
        ),
        ({"name": "p", "title": 1}, "prompt 'p'.title must be a string, got a number"),
        ({"name": "p", "_meta": []}, "prompt 'p'._meta must be an object"),
    ],
)
def test_prompt_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Prompt.from_wire(wire)


def test_get_prompt_result() -> None:
    result = GetPromptResult.from_wire(
        {
            "description": "a review",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "review this"}},
                {
                    "role": "assistant",
                    "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                },
            ],
            "_meta": {"k": 1},
        }
    )
    assert result == GetPromptResult(
        description="a review",
        messages=(
            PromptMessage(role="user", content=TextContent(text="review this")),
            PromptMessage(
                role="assistant", content=ImageContent(data="aGk=", mime_type="image/png")
            ),
        ),
        meta={"k": 1},
    )
    assert GetPromptResult.from_wire({"messages": []}) == GetPromptResult(messages=())


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ([], "prompts/get result must be a JSON object, got an array"),
        ({}, "prompts/get result.messages must be an array, got missing"),
        ({"messages": [1]}, "prompt message must be a JSON object, got a number"),
        ({"messages": [{"content": {}}]}, "prompt message.role must be a string, got missing"),
        ({"messages": [{"role": "user"}]}, "prompt message.content must be an object, got missing"),
        (
            {"messages": [{"role": "user", "content": {"type": "text"}}]},
            "text content.text must be a string",
        ),
        ({"messages": [], "description": 3}, "prompts/get result.description must be a string"),
    ],
)
def test_get_prompt_result_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        GetPromptResult.from_wire(wire)


# --- completion --------------------------------------------------------------------------------


def test_completion() -> None:
    full = Completion.from_wire(
        {"completion": {"values": ["py", "pyi"], "total": 9, "hasMore": True}}
    )
    assert full == Completion(values=("py", "pyi"), total=9, has_more=True)
    bare = Completion.from_wire({"completion": {"values": []}})
    assert bare == Completion(values=()) and bare.total is None and bare.has_more is False


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ("x", "completion/complete result must be a JSON object, got a string"),
        ({}, "completion/complete result.completion must be an object, got missing"),
        ({"completion": {}}, "completion/complete result.completion.values must be an array"),
        ({"completion": {"values": ["a", 1]}}, "completion.values must hold strings only"),
        (
            {"completion": {"values": [], "total": "9"}},
            "completion/complete result.completion.total must be an integer, got a string",
        ),
        (
            {"completion": {"values": [], "hasMore": 1}},
            "completion/complete result.completion.hasMore must be a boolean, got a number",
        ),
    ],
)
def test_completion_refused(wire: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Completion.from_wire(wire)


def test_completion_refs_to_wire() -> None:
    assert PromptRef("review").to_wire() == {"type": "ref/prompt", "name": "review"}
    assert ResourceRef("file:///{path}").to_wire() == {
        "type": "ref/resource",
        "uri": "file:///{path}",
    }


# --- tool names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "issue"),
    [
        ("read_file", None),
        ("get-sum", None),
        ("A9", None),
        ("x" * 64, None),
        ("x" * 65, "longer than 64 characters"),
        ("read file", "not only letters, digits, '_' and '-'"),
        ("fs.read", "not only letters, digits, '_' and '-'"),
        ("grüße", "not only letters, digits, '_' and '-'"),
        ("", "not only letters, digits, '_' and '-'"),
    ],
)
def test_tool_name_issue(name: str, issue: str | None) -> None:
    tool = Tool.from_wire({"name": name, "inputSchema": {"type": "object"}})
    assert tool.name_issue == issue
    assert tool.name == name  # kept and callable as listed, whatever its name


# --- the params of completion/complete ---------------------------------------------------------


def test_completion_params_from_a_ref_object_a_wire_ref_and_a_context() -> None:
    assert completion_params(PromptRef("greet"), "style", "f", None) == {
        "ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "style", "value": "f"},
    }
    wire = {"type": "ref/resource", "uri": "test://items/{id}"}
    assert completion_params(wire, "id", "1", {"kind": "x"}) == {
        "ref": wire,
        "argument": {"name": "id", "value": "1"},
        "context": {"arguments": {"kind": "x"}},
    }


@pytest.mark.parametrize("ref", [{"type": "ref/tool", "name": "x"}, "greet", None])
def test_completion_params_refuse_another_ref(ref: object) -> None:
    with pytest.raises(ValueError, match="ref must be"):
        completion_params(ref, "a", "v", None)  # type: ignore[arg-type]
