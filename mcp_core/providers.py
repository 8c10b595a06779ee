"""Passing MCP tools to a model: tool lists as each provider's function declarations, and tool
results as what each provider takes back. Pure functions returning plain, JSON-ready dicts in
the provider's own request shape; no provider SDK is imported (tests/core checks the shapes
against the SDKs' types). The docs page "Passing tools to a model" walks through each.

Declarations: ``openai_tools`` (Chat Completions), ``openai_response_tools`` (Responses API),
``anthropic_tools`` (Messages API) and ``gemini_tools`` (google-genai) each return a
``ToolDeclarations``: ``declarations`` is what the provider's ``tools`` parameter takes, and
``tool_name(name)`` turns the name in a model's tool call back into the MCP tool name to call.

Names: OpenAI and Anthropic take ``^[a-zA-Z0-9_-]{1,64}$``; Gemini a letter or ``_`` first, then
letters, digits, ``_ . : -``, up to 128 characters (64 kept here, as for the others). MCP tool
names SHOULD be 1 to 128 of ``A-Za-z0-9_-.`` (2025-11-25 server/tools §Tool Names), so dots and
long names are to be expected, and a server may send anything else; a ``ClientGroup`` keeps
the tool's own spelling after ``mcp__<server>__``. A name the provider takes is kept as it is.
Any other has each character the provider refuses replaced by ``_`` (Gemini: a ``_`` put first
if it starts otherwise), and is cut to 64 characters with ``_`` and 8 hex digits of
``sha256(name)`` at the end when it is longer. When two tools would end up with one name, each
of them that had to change gets the hash suffix too (16, 24, then 32 hex digits while a clash
remains), so the names depend only on the set of tools, never on their order; a name listed
twice is a ``ValueError``.

Results: ``openai_tool_result`` (a Chat Completions ``tool`` message), ``openai_tool_images``
(the images that message cannot carry), ``openai_response_tool_result`` (a Responses
``function_call_output`` item), ``anthropic_tool_result`` (a ``tool_result`` block) and
``gemini_tool_result`` (a ``function_response`` part). What each block becomes:

- text: text. An empty text block is left out (Anthropic refuses empty text blocks).
- an image of a type the provider takes (OpenAI: PNG, JPEG, WEBP, GIF; Anthropic: JPEG, PNG, GIF,
  WEBP; Gemini: PNG, JPEG, WEBP): an image, in base64 as the server sent it. A Chat Completions
  tool message carries text only, so there it is a line naming the image, and
  ``openai_tool_images`` gives a user message holding them. Another image type: a line saying it
  was left out. An embedded resource whose ``blob`` is such an image counts as an image.
- audio: a line saying it was left out (none of these tool-result shapes documents audio).
- a resource link: a line with its name, URI, MIME type and description (a pointer, as in MCP).
- an embedded resource: its text under a line naming its URI; binary content other than an image
  is a line saying it was left out.
- a content type this client does not know: a line saying it was left out.
- structured content: its JSON as one more text, unless a text block already holds that JSON
  (2025-11-25 server/tools §Structured Content: a tool "SHOULD also return the serialized JSON
  in a TextContent block"). Gemini gets it as the ``response`` object itself (see
  ``gemini_tool_result``).
- ``isError``: Anthropic's ``is_error``, Gemini's ``error`` key, and for OpenAI (which has no such
  field) a first line ``[the tool reported an error]``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ._vocabulary.models import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
    plain_json,
)

__all__ = [
    "ToolDeclarations",
    "anthropic_tool_result",
    "anthropic_tools",
    "gemini_tool_result",
    "gemini_tools",
    "openai_response_tool_result",
    "openai_response_tools",
    "openai_tool_images",
    "openai_tool_result",
    "openai_tools",
]

_MAX_NAME = 64
_HASH_CHARS = 8
# Suffix lengths tried in turn: 8, 16, 24, 32 hex digits of sha256(name).
_MAX_LEVEL = 4

_OPENAI_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
_ANTHROPIC_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_GEMINI_IMAGES = frozenset({"image/png", "image/jpeg", "image/webp"})
_ERROR_NOTE = "[the tool reported an error]"


@dataclass(frozen=True, slots=True)
class _NameRule:
    """What one provider takes as a function name."""

    valid: re.Pattern[str]  # a whole name it takes
    refused: re.Pattern[str]  # one character it does not
    first: re.Pattern[str] | None = None  # what the first character must be, if anything


# OpenAI (FunctionDefinition.name: "a-z, A-Z, 0-9, or contain underscores and dashes, with a
# maximum length of 64") and Anthropic (tools[].name: ^[a-zA-Z0-9_-]{1,64}$).
_PLAIN = _NameRule(re.compile(r"[A-Za-z0-9_-]{1,64}"), re.compile(r"[^A-Za-z0-9_-]"))
# Gemini (FunctionDeclaration.name: "Must start with a letter or an underscore. Must be a-z,
# A-Z, 0-9, or contain underscores, dots, colons and dashes").
_GEMINI = _NameRule(
    re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}"),
    re.compile(r"[^A-Za-z0-9_.:-]"),
    re.compile(r"[A-Za-z_]"),
)


@dataclass(frozen=True, slots=True)
class ToolDeclarations:
    """Tools declared to one provider, and the way back to their MCP names.

    ``declarations`` is what the provider's ``tools`` parameter takes, in the order the tools
    were given. ``names`` maps each declared name to the MCP tool name (for a ``ClientGroup``'s
    tools, the group's ``mcp__<server>__<tool>`` name); most are the same string.
    """

    declarations: list[dict[str, Any]]
    names: Mapping[str, str]

    def tool_name(self, name: str) -> str:
        """The MCP tool name for ``name``, the name in a model's tool call; ``KeyError`` for a
        name these declarations do not hold (a model may invent one: answer it with an error)."""
        try:
            return self.names[name]
        except KeyError:
            raise KeyError(f"no tool was declared to the model as {name!r}") from None

    def provider_name(self, tool: str) -> str:
        """The declared name of the MCP tool ``tool`` (to force a tool with ``tool_choice``);
        ``KeyError`` for a tool these declarations do not hold."""
        for declared, name in self.names.items():
            if name == tool:
                return declared
        raise KeyError(f"no tool named {tool!r} was declared")


# --- names ----------------------------------------------------------------------------------


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", errors="surrogatepass")).hexdigest()


def _sanitise(name: str, rule: _NameRule) -> str:
    base = rule.refused.sub("_", name) or "_"
    if rule.first is not None and not rule.first.match(base):
        base = "_" + base
    return base


def _cut(base: str, suffix: str) -> str:
    return f"{base[: _MAX_NAME - 1 - len(suffix)]}_{suffix}"


def _provider_names(names: list[str], rule: _NameRule) -> dict[str, str]:
    """Each MCP name's declared name (see the module docstring); ``ValueError`` for a name
    listed twice, or names that 32 hex digits of their hashes cannot tell apart."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"tool {name!r} is listed twice: a model could not tell them apart")
        seen.add(name)
    kept = {name for name in names if rule.valid.fullmatch(name)}
    bases = {name: name if name in kept else _sanitise(name, rule) for name in names}
    # 0: the base as it is; n: the base cut to make room for 8n hex digits of its hash.
    levels = {name: 0 if len(base) <= _MAX_NAME else 1 for name, base in bases.items()}
    while True:
        chosen = {
            name: bases[name] if level == 0 else _cut(bases[name], _digest(name)[: 8 * level])
            for name, level in levels.items()
        }
        by_name: dict[str, list[str]] = {}
        for name, declared in chosen.items():
            by_name.setdefault(declared, []).append(name)
        clashes = [members for members in by_name.values() if len(members) > 1]
        if not clashes:
            return chosen
        for members in clashes:
            for name in members:
                if name not in kept:  # a name the provider takes as it is keeps it
                    levels[name] += 1
                    if levels[name] > _MAX_LEVEL:
                        raise ValueError(
                            f"tools {sorted(members)!r} cannot be given distinct names"
                        )


def _schema(tool: Tool) -> dict[str, Any]:
    """The tool's input schema as a plain dict, with ``"type": "object"`` if it has no type
    (MCP requires it, 2025-11-25 schema ``Tool.inputSchema``, and Anthropic's ``InputSchema``
    does)."""
    schema: dict[str, Any] = tool.to_wire()["inputSchema"]
    schema.setdefault("type", "object")
    return schema


# A declaration from its name, description (or None) and parameters' schema.
_Shape = Callable[[str, str | None, dict[str, Any]], dict[str, Any]]


def _declare(
    tools: Iterable[Tool], rule: _NameRule, shape: _Shape
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    listed = list(tools)
    chosen = _provider_names([tool.name for tool in listed], rule)
    declarations = []
    for tool in listed:
        description = tool.description or tool.title
        declarations.append(shape(chosen[tool.name], description, _schema(tool)))
    return declarations, {declared: name for name, declared in chosen.items()}


def _described(fields: dict[str, Any], description: str | None) -> dict[str, Any]:
    if description:
        fields["description"] = description
    return fields


def openai_tools(tools: Iterable[Tool]) -> ToolDeclarations:
    """Chat Completions function tools, ``{"type": "function", "function": {"name",
    "description", "parameters"}}`` (``ChatCompletionFunctionToolParam``), for
    ``client.chat.completions.create(tools=...)``. ``description`` is the tool's description,
    else its title, else left out; ``parameters`` its input schema. ``strict`` is left out: a
    strict schema must list every property as required, which MCP schemas seldom do."""
    declarations, names = _declare(
        tools,
        _PLAIN,
        lambda name, description, schema: {
            "type": "function",
            "function": _described({"name": name}, description) | {"parameters": schema},
        },
    )
    return ToolDeclarations(declarations, names)


def openai_response_tools(tools: Iterable[Tool]) -> ToolDeclarations:
    """Responses API function tools, ``{"type": "function", "name", "description",
    "parameters", "strict": False}`` (``FunctionToolParam``), for
    ``client.responses.create(tools=...)``. ``strict`` is a required key there; it is false
    for the reason given in ``openai_tools``."""
    declarations, names = _declare(
        tools,
        _PLAIN,
        lambda name, description, schema: (
            _described({"type": "function", "name": name}, description)
            | {"parameters": schema, "strict": False}
        ),
    )
    return ToolDeclarations(declarations, names)


def anthropic_tools(tools: Iterable[Tool]) -> ToolDeclarations:
    """Messages API tools, ``{"name", "description", "input_schema"}`` (``ToolParam``), for
    ``client.messages.create(tools=...)``."""
    declarations, names = _declare(
        tools,
        _PLAIN,
        lambda name, description, schema: (
            _described({"name": name}, description) | {"input_schema": schema}
        ),
    )
    return ToolDeclarations(declarations, names)


def gemini_tools(tools: Iterable[Tool]) -> ToolDeclarations:
    """One Gemini tool holding a function declaration per MCP tool,
    ``[{"function_declarations": [{"name", "description", "parameters_json_schema"}]}]``
    (google-genai ``types.Tool``), for ``GenerateContentConfig(tools=...)``.

    The input schema goes in ``parameters_json_schema``, which takes JSON Schema as it is,
    rather than ``parameters``, an OpenAPI 3.0 subset that refuses keys MCP schemas carry
    (``$schema``, ``additionalProperties``, ``anyOf`` in places): nothing is stripped.
    """
    declarations, names = _declare(
        tools,
        _GEMINI,
        lambda name, description, schema: (
            _described({"name": name}, description) | {"parameters_json_schema": schema}
        ),
    )
    return ToolDeclarations([{"function_declarations": declarations}], names)


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Image:
    mime_type: str
    data: str  # base64

    @property
    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.data}"


_Part = str | _Image


def _holds(block: ContentBlock, structured: object) -> bool:
    """Whether ``block`` is a text block holding ``structured`` as JSON."""
    if not isinstance(block, TextContent):
        return False
    try:
        return bool(json.loads(block.text) == structured)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return False


def _parts(result: CallToolResult, images: frozenset[str], *, apart: bool) -> list[_Part]:
    """The result as texts and images (see the module docstring). ``apart``: the structured
    content travels on its own, so the text blocks that repeat it are left out; otherwise its
    JSON is added as a text when no text block holds it."""
    structured = result.structured_content
    holders = [structured is not None and _holds(block, structured) for block in result.content]
    parts = [
        _part(block, images)
        for block, holds in zip(result.content, holders, strict=True)
        if not (apart and holds)
    ]
    if not apart and structured is not None and not any(holders):
        parts.append(json.dumps(structured, ensure_ascii=False))
    return [part for part in parts if part != ""]


def _part(block: ContentBlock, images: frozenset[str]) -> _Part:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        if block.mime_type in images:
            return _Image(block.mime_type, block.data)
        return f"[{block.mime_type} image left out: not an image type this model takes]"
    if isinstance(block, AudioContent):
        return f"[{block.mime_type} audio left out: this model takes no audio in tool results]"
    if isinstance(block, ResourceLink):
        title = block.title or block.name
        mime = f" ({block.mime_type})" if block.mime_type else ""
        described = f": {block.description}" if block.description else ""
        return f"[resource link] {title} <{block.uri}>{mime}{described}"
    if isinstance(block, EmbeddedResource):
        return _resource(block.resource, images)
    return f"[{block.type} content left out: a content type this client does not know]"


def _resource(resource: Mapping[str, Any], images: frozenset[str]) -> _Part:
    uri = resource["uri"]  # checked by content_from_wire
    mime = resource.get("mimeType")
    text, blob = resource.get("text"), resource.get("blob")
    shown = f"{uri} ({mime})" if isinstance(mime, str) else uri
    if isinstance(text, str):
        return f"[resource {shown}]\n{text}"
    if isinstance(blob, str) and mime in images:
        return _Image(mime, blob)
    return f"[resource {shown} left out: binary content this model does not take]"


def _texts(parts: list[_Part], call_id: str) -> list[str]:
    """The parts as lines of text, an image as a line naming it (Chat Completions)."""
    lines = []
    images = 0
    for part in parts:
        if isinstance(part, str):
            lines.append(part)
            continue
        images += 1
        lines.append(
            f"[image {images} ({part.mime_type}) of tool call {call_id}: in the user message "
            "after the tool results]"
        )
    return lines


def openai_tool_result(result: CallToolResult, call_id: str) -> dict[str, Any]:
    """A Chat Completions tool message, ``{"role": "tool", "tool_call_id": call_id,
    "content": <text>}`` (``ChatCompletionToolMessageParam``), ``call_id`` being the
    ``tool_calls[].id`` it answers.

    A tool message carries text only, so each image is a line naming it, and
    ``openai_tool_images`` makes the user message that holds them: send it after all the tool
    messages of the turn (a tool message must follow the assistant's tool calls directly). The
    Responses API carries images in the result itself: ``openai_response_tool_result``.
    """
    lines = _texts(_parts(result, _OPENAI_IMAGES, apart=False), call_id)
    if result.is_error:
        lines.insert(0, _ERROR_NOTE)
    return {"role": "tool", "tool_call_id": call_id, "content": "\n".join(lines)}


def openai_tool_images(result: CallToolResult, call_id: str) -> dict[str, Any] | None:
    """The images ``openai_tool_result`` could not carry, as a Chat Completions user message
    (``ChatCompletionUserMessageParam``): a text part naming the tool call, then one
    ``image_url`` part per image, a ``data:`` URL. None when the result has no image."""
    images = [p for p in _parts(result, _OPENAI_IMAGES, apart=False) if isinstance(p, _Image)]
    if not images:
        return None
    content: list[dict[str, Any]] = [
        {"type": "text", "text": f"The images of tool call {call_id}, in order:"}
    ]
    content += [{"type": "image_url", "image_url": {"url": image.data_url}} for image in images]
    return {"role": "user", "content": content}


def openai_response_tool_result(result: CallToolResult, call_id: str) -> dict[str, Any]:
    """A Responses API input item, ``{"type": "function_call_output", "call_id": call_id,
    "output": ...}`` (``FunctionCallOutput``), ``call_id`` being the ``function_call`` item's
    ``call_id``. ``output`` is a string when the result has no image, else a list of
    ``input_text`` and ``input_image`` parts (images as ``data:`` URLs)."""
    parts = _parts(result, _OPENAI_IMAGES, apart=False)
    if result.is_error:
        parts.insert(0, _ERROR_NOTE)
    output: str | list[dict[str, Any]]
    if any(isinstance(part, _Image) for part in parts):
        output = [
            {"type": "input_image", "image_url": part.data_url}
            if isinstance(part, _Image)
            else {"type": "input_text", "text": part}
            for part in parts
        ]
    else:
        output = "\n".join(part for part in parts if isinstance(part, str))
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def anthropic_tool_result(result: CallToolResult, tool_use_id: str) -> dict[str, Any]:
    """A Messages API content block, ``{"type": "tool_result", "tool_use_id", "content":
    [text and image blocks], "is_error"}`` (``ToolResultBlockParam``), for the user message
    that answers the ``tool_use`` block ``tool_use_id``. Images are base64 ``source`` blocks;
    ``content`` is left out when nothing is left of the result."""
    content = [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": part.mime_type, "data": part.data},
        }
        if isinstance(part, _Image)
        else {"type": "text", "text": part}
        for part in _parts(result, _ANTHROPIC_IMAGES, apart=False)
    ]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id}
    if content:
        block["content"] = content
    block["is_error"] = result.is_error
    return block


def gemini_tool_result(
    result: CallToolResult, name: str, *, call_id: str | None = None
) -> dict[str, Any]:
    """A google-genai ``Part`` holding a ``function_response``: ``{"function_response":
    {"name", "response", "id"?, "parts"?}}``, ``name`` being the ``function_call``'s name (the
    declared one) and ``call_id`` its ``id`` when the model gave one.

    ``response`` is ``{"output": ...}``, or ``{"error": ...}`` when the tool reported an error
    (the keys ``FunctionResponse.response`` names): the structured content when there is some,
    else the text. Text next to structured content (other than the JSON of it) is kept under
    ``"text"``. Images go in ``parts`` as ``inline_data`` (multimodal function responses, which
    Gemini 3 models read; earlier models may refuse them).
    """
    parts = _parts(result, _GEMINI_IMAGES, apart=True)
    text = "\n".join(part for part in parts if isinstance(part, str))
    key = "error" if result.is_error else "output"
    response: dict[str, Any]
    if result.structured_content is None:
        response = {key: text}
    else:
        response = {key: plain_json(result.structured_content)}
        if text:
            response["text"] = text
    function_response: dict[str, Any] = {"name": name, "response": response}
    if call_id is not None:
        function_response["id"] = call_id
    images = [part for part in parts if isinstance(part, _Image)]
    if images:
        function_response["parts"] = [
            {"inline_data": {"mime_type": image.mime_type, "data": image.data}} for image in images
        ]
    return {"function_response": function_response}
