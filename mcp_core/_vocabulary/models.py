"""What callers get back: tools, tool results, content blocks, resources and prompts.

Parsing is hand-written and tolerant, for every protocol version from 2024-11-05 to
2026-07-28: fields a later version added are optional, fields this
client does not know (``execution``, ...) are left in ``raw``, and a content block
of an unknown ``type`` is kept as ``UnknownContent`` rather than failing the whole result. A
required field that is missing or of the wrong type raises ``ValueError`` naming it; the
machine turns that into ``InvalidResponse`` for the one request concerned.

The wire's camelCase names become snake_case attributes (``inputSchema`` -> ``input_schema``,
``_meta`` -> ``meta``). Mappings are kept as the decoder produced them (plain dicts).

``to_wire()`` is the way back, next to each parser: the MCP JSON of the fields a model holds
(camelCase keys as in the 2025-11-25 schema, None fields left out, mappings copied into plain
dicts and lists), so that parsing it again gives an equal object.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .icons import Icon, icons_field, icons_from_wire, icons_to_wire

__all__ = [
    "AudioContent",
    "CallToolResult",
    "Completion",
    "CompletionRef",
    "ContentBlock",
    "EmbeddedResource",
    "GetPromptResult",
    "Icon",
    "ImageContent",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptRef",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceRef",
    "ResourceTemplate",
    "TextContent",
    "Tool",
    "UnknownContent",
    "completion_params",
    "content_from_wire",
    "plain_json",
]

# A tool name every major model provider takes as a function name (OpenAI's pattern is the
# strictest: 1-64 of letters, digits, '_' and '-').
_PROVIDER_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_JSON_KINDS: dict[type, str] = {
    dict: "an object",
    Mapping: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def _json_kind(value: object) -> str:
    return _JSON_KINDS.get(type(value), type(value).__name__)


def _mapping(wire: object, what: str) -> Mapping[str, Any]:
    if type(wire) is dict:  # what the JSON decoder makes: no ABC check needed
        return wire
    if not isinstance(wire, Mapping):
        raise ValueError(f"{what} must be a JSON object, got {_json_kind(wire)}")
    return wire


def _get(wire: Mapping[str, Any], key: str, what: str, kind: type, required: bool) -> Any:
    """``wire[key]`` checked against JSON type ``kind``. An optional field that is absent or
    null gives None; any other type mismatch is a ``ValueError`` naming the field."""
    value = wire.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, kind):
        got = "missing" if key not in wire else _json_kind(value)
        raise ValueError(f"{what}.{key} must be {_JSON_KINDS[kind]}, got {got}")
    return value


def _str(wire: Mapping[str, Any], key: str, what: str) -> str:
    value: str = _get(wire, key, what, str, required=True)
    return value


def _opt_str(wire: Mapping[str, Any], key: str, what: str) -> str | None:
    value: str | None = _get(wire, key, what, str, required=False)
    return value


def _obj(wire: Mapping[str, Any], key: str, what: str) -> Mapping[str, Any]:
    value: Mapping[str, Any] = _get(wire, key, what, Mapping, required=True)
    return value


def _opt_obj(wire: Mapping[str, Any], key: str, what: str) -> Mapping[str, Any] | None:
    value: Mapping[str, Any] | None = _get(wire, key, what, Mapping, required=False)
    return value


def plain_json(value: object) -> Any:
    """``value`` in plain JSON containers: each mapping a new dict, each list or tuple a new list
    (so the caller may change what ``to_wire`` returns without touching a frozen model)."""
    if isinstance(value, Mapping):
        return {key: plain_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(item) for item in value]
    return value


def _wire(fields: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """``fields`` and each of ``optional`` that is not None (wire names as keywords), in plain
    JSON containers."""
    fields.update((key, value) for key, value in optional.items() if value is not None)
    return {key: plain_json(value) for key, value in fields.items()}


# --- tools -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool as listed by ``tools/list``."""

    name: str
    input_schema: Mapping[str, Any]
    description: str | None = None
    title: str | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    # 2025-11-25: the icons the server offers for it, entries that cannot be read dropped.
    # Data only: ``Icon`` says what a host that renders them must check first.
    icons: tuple[Icon, ...] = icons_field()
    # The tool exactly as listed, every field kept (``execution``, ...).
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_wire(cls, wire: object) -> Tool:
        """Parse one entry of ``tools/list``; ``ValueError`` if ``name`` or ``inputSchema`` is
        missing or any known field has the wrong type."""
        d = _mapping(wire, "tool")
        name = _str(d, "name", "tool")
        what = f"tool {name[:64]!r}"
        return cls(
            name=name,
            # Required in every version; 2025-11-25 adds "MUST NOT be null".
            input_schema=_obj(d, "inputSchema", what),
            description=_opt_str(d, "description", what),
            title=_opt_str(d, "title", what),  # 2025-06-18+
            output_schema=_opt_obj(d, "outputSchema", what),  # 2025-06-18+
            annotations=_opt_obj(d, "annotations", what),  # 2025-03-26+
            meta=_opt_obj(d, "_meta", what),  # 2025-06-18+
            icons=icons_from_wire(d.get("icons")),  # 2025-11-25
            raw=d,
        )

    def to_wire(self) -> dict[str, Any]:
        """The tool as MCP JSON (2025-11-25 schema, ``Tool``): the modelled fields only; what this
        class does not model (``execution``, ...) is in ``raw``."""
        return _wire(
            {"name": self.name},
            title=self.title,
            description=self.description,
            inputSchema=self.input_schema,
            outputSchema=self.output_schema,
            annotations=self.annotations,
            icons=icons_to_wire(self.icons),
            _meta=self.meta,
        )

    @property
    def name_issue(self) -> str | None:
        """Why a model provider may refuse this name as a function name, or None. The tool is
        kept and callable; an application that hands tools to a model renames or skips it."""
        if _PROVIDER_SAFE.match(self.name):
            return None
        return (
            "longer than 64 characters"
            if len(self.name) > 64
            else "not only letters, digits, '_' and '-'"
        )

    @property
    def display_name(self) -> str:
        """The name to show a person. 2025-06-18 server/tools: "display name precedence":
        ``title``, then ``annotations.title``, then ``name``."""
        if self.title:
            return self.title
        annotated = self.annotations.get("title") if self.annotations else None
        return annotated if isinstance(annotated, str) and annotated else self.name


# --- content blocks ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TextContent:
    """``{"type": "text", "text": ...}`` (all versions)."""

    type: ClassVar[str] = "text"
    text: str
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _wire(
            {"type": "text", "text": self.text}, annotations=self.annotations, _meta=self.meta
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageContent:
    """``{"type": "image", "data": <base64>, "mimeType": ...}`` (all versions)."""

    type: ClassVar[str] = "image"
    data: str
    mime_type: str
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _wire(
            {"type": "image", "data": self.data, "mimeType": self.mime_type},
            annotations=self.annotations,
            _meta=self.meta,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioContent:
    """``{"type": "audio", "data": <base64>, "mimeType": ...}`` (2025-03-26+)."""

    type: ClassVar[str] = "audio"
    data: str
    mime_type: str
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _wire(
            {"type": "audio", "data": self.data, "mimeType": self.mime_type},
            annotations=self.annotations,
            _meta=self.meta,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceLink:
    """``{"type": "resource_link", "uri", "name", ...}`` (2025-06-18+): a pointer, not data."""

    type: ClassVar[str] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _wire(
            {"type": "resource_link", "uri": self.uri, "name": self.name},
            title=self.title,
            description=self.description,
            mimeType=self.mime_type,
            annotations=self.annotations,
            _meta=self.meta,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddedResource:
    """``{"type": "resource", "resource": {uri, mimeType?, text | blob}}`` (all versions)."""

    type: ClassVar[str] = "resource"
    resource: Mapping[str, Any]
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _wire(
            {"type": "resource", "resource": self.resource},
            annotations=self.annotations,
            _meta=self.meta,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownContent:
    """A block whose ``type`` this client does not know; ``raw`` is the block as received."""

    type: str
    raw: Mapping[str, Any]
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """``raw``, with the fields of this object over it."""
        return _wire({**self.raw, "type": self.type}, annotations=self.annotations, _meta=self.meta)


ContentBlock = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource | UnknownContent
)


def content_from_wire(wire: object) -> ContentBlock:
    """Parse one content block; ``ValueError`` for a known type with a bad shape, or a block
    without a string ``type``. Unknown types give ``UnknownContent``."""
    d = _mapping(wire, "content block")
    if d.get("type") == "text" and len(d) == 2 and type(text := d.get("text")) is str:
        return _plain_text(text)  # the common block, fast: nothing else to check
    kind = _str(d, "type", "content block")
    what = f"{kind} content"
    common: dict[str, Any] = {
        "annotations": _opt_obj(d, "annotations", what),
        "meta": _opt_obj(d, "_meta", what),
    }
    if kind == "text":
        return TextContent(text=_str(d, "text", what), **common)
    if kind in ("image", "audio"):
        cls = ImageContent if kind == "image" else AudioContent
        return cls(data=_str(d, "data", what), mime_type=_str(d, "mimeType", what), **common)
    if kind == "resource_link":
        return ResourceLink(
            uri=_str(d, "uri", what),
            name=_str(d, "name", what),
            title=_opt_str(d, "title", what),
            description=_opt_str(d, "description", what),
            mime_type=_opt_str(d, "mimeType", what),
            **common,
        )
    if kind == "resource":
        resource = _obj(d, "resource", what)
        _str(resource, "uri", f"{what}.resource")
        return EmbeddedResource(resource=resource, **common)
    return UnknownContent(type=kind, raw=d, **common)


# --- tool results ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CallToolResult:
    """The result of ``tools/call``. A tool's own failure is ``is_error=True``, not an
    exception (2025-11-25 server/tools §Error Handling)."""

    content: tuple[ContentBlock, ...] = ()
    structured_content: object = None
    is_error: bool = False
    meta: Mapping[str, Any] | None = None
    # ``call_tool(..., output_type=T)``: the structured content validated as a ``T``.
    data: Any = None

    @classmethod
    def from_wire(cls, wire: object) -> CallToolResult:
        """Parse a ``tools/call`` result.

        ``content`` is required by every version, yet a missing one is read as empty (some
        servers send only ``structuredContent``). 2026-07-28: a ``resultType`` other than
        ``"complete"`` is not a final result ("MUST treat an unrecognized value as invalid";
        ``input_required`` is handled by the machine before this point): ``ValueError``.
        """
        d = _mapping(wire, "tools/call result")
        result_type = d.get("resultType", "complete")
        if result_type != "complete":
            shown = repr(result_type[:32]) if isinstance(result_type, str) else "not a string"
            raise ValueError(f"tools/call result has resultType {shown}, not 'complete'")
        what = "tools/call result"
        raw_content = d.get("content")
        if type(raw_content) is not list:  # the common case skips the checks that name it
            raw_content = _get(d, "content", what, list, required=False) or []
        is_error = d.get("isError")
        if is_error is not None and type(is_error) is not bool:
            _get(d, "isError", what, bool, required=False)  # raises, naming the field
        result = _new(cls)  # the hottest result: built as _plain_text explains
        _SET_CONTENT(result, tuple([content_from_wire(block) for block in raw_content]))
        _SET_STRUCTURED(result, d.get("structuredContent"))
        _SET_IS_ERROR(result, is_error is True)
        _SET_RESULT_META(result, _opt_obj(d, "_meta", what) if "_meta" in d else None)
        _SET_DATA(result, None)
        return result

    def to_wire(self) -> dict[str, Any]:
        """The result as MCP JSON (2025-11-25 schema, ``CallToolResult``), ``isError`` always
        present; ``data`` (this client's own) is not on the wire."""
        return _wire(
            {"content": [block.to_wire() for block in self.content], "isError": self.is_error},
            structuredContent=self.structured_content,
            _meta=self.meta,
        )

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (``""`` when there is none)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


# The answer to a call is the hottest thing the client parses. A frozen dataclass's __init__
# sets each field through object.__setattr__, which costs twice what setting its slot through
# the slot's own descriptor does; these two build the same objects that way, every field set.
_new = object.__new__
_SET_TEXT = TextContent.__dict__["text"].__set__
_SET_ANNOTATIONS = TextContent.__dict__["annotations"].__set__
_SET_TEXT_META = TextContent.__dict__["meta"].__set__
_SET_CONTENT = CallToolResult.__dict__["content"].__set__
_SET_STRUCTURED = CallToolResult.__dict__["structured_content"].__set__
_SET_IS_ERROR = CallToolResult.__dict__["is_error"].__set__
_SET_RESULT_META = CallToolResult.__dict__["meta"].__set__
_SET_DATA = CallToolResult.__dict__["data"].__set__


def _plain_text(text: str) -> TextContent:
    """``TextContent(text=text)``, built as the comment above says."""
    block = _new(TextContent)
    _SET_TEXT(block, text)
    _SET_ANNOTATIONS(block, None)
    _SET_TEXT_META(block, None)
    return block


# --- resources, prompts, completion --------------------------------------------------------------


def _opt_int(wire: Mapping[str, Any], key: str, what: str) -> int | None:
    value = wire.get(key)
    if value is None:
        return None
    if type(value) is not int:
        raise ValueError(f"{what}.{key} must be an integer, got {_json_kind(value)}")
    return value


def _listed_fields(d: Mapping[str, Any], what: str) -> dict[str, Any]:
    """The optional fields a resource and a resource template share (2025-06-18 schema)."""
    return {
        "title": _opt_str(d, "title", what),
        "description": _opt_str(d, "description", what),
        "mime_type": _opt_str(d, "mimeType", what),
        "annotations": _opt_obj(d, "annotations", what),
        "meta": _opt_obj(d, "_meta", what),
        "icons": icons_from_wire(d.get("icons")),
        "raw": d,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Resource:
    """A resource as listed by ``resources/list`` (all versions; ``title`` 2025-06-18+,
    ``size`` 2025-03-26+)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    icons: tuple[Icon, ...] = icons_field()  # 2025-11-25, as Tool.icons
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_wire(cls, wire: object) -> Resource:
        d = _mapping(wire, "resource")
        uri = _str(d, "uri", "resource")
        what = f"resource {uri[:80]!r}"
        return cls(
            uri=uri,
            # Required since 2024-11-05; a few servers omit it, and the URI names it as well.
            name=_opt_str(d, "name", what) or uri,
            size=_opt_int(d, "size", what),
            **_listed_fields(d, what),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceTemplate:
    """A parameterised resource (RFC 6570 ``uri_template``) from ``resources/templates/list``."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None
    icons: tuple[Icon, ...] = icons_field()  # 2025-11-25, as Tool.icons
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_wire(cls, wire: object) -> ResourceTemplate:
        d = _mapping(wire, "resource template")
        template = _str(d, "uriTemplate", "resource template")
        what = f"resource template {template[:80]!r}"
        return cls(
            uri_template=template,
            name=_opt_str(d, "name", what) or template,
            **_listed_fields(d, what),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceContents:
    """One item of ``resources/read``: ``text``, or ``blob`` (the bytes, base64 decoded)."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: bytes | None = None
    meta: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_wire(cls, wire: object) -> ResourceContents:
        d = _mapping(wire, "resource contents")
        uri = _str(d, "uri", "resource contents")
        what = f"contents of {uri[:80]!r}"
        text = _opt_str(d, "text", what)
        encoded = _opt_str(d, "blob", what)
        if (text is None) == (encoded is None):
            raise ValueError(f"{what} must have exactly one of text and blob")
        blob = None
        if encoded is not None:
            try:
                # Line breaks (MIME-style base64) are allowed, nothing else outside the alphabet.
                blob = base64.b64decode("".join(encoded.split()), validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(f"{what}.blob is not valid base64") from None
        return cls(
            uri=uri,
            mime_type=_opt_str(d, "mimeType", what),
            text=text,
            blob=blob,
            meta=_opt_obj(d, "_meta", what),
            raw=d,
        )

    def to_wire(self) -> dict[str, Any]:
        """``TextResourceContents`` or ``BlobResourceContents`` (2025-11-25 schema), ``blob``
        encoded in base64 again."""
        blob = None if self.blob is None else base64.b64encode(self.blob).decode("ascii")
        return _wire(
            {"uri": self.uri}, mimeType=self.mime_type, text=self.text, blob=blob, _meta=self.meta
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResourceResult:
    """The result of ``resources/read``: one or more contents (a directory may give many)."""

    contents: tuple[ResourceContents, ...]
    meta: Mapping[str, Any] | None = None

    @classmethod
    def from_wire(cls, wire: object) -> ReadResourceResult:
        d = _mapping(wire, "resources/read result")
        listed: list[Any] = _get(d, "contents", "resources/read result", list, required=True)
        return cls(
            contents=tuple(ResourceContents.from_wire(item) for item in listed),
            meta=_opt_obj(d, "_meta", "resources/read result"),
        )

    def to_wire(self) -> dict[str, Any]:
        return _wire({"contents": [item.to_wire() for item in self.contents]}, _meta=self.meta)

    @property
    def text(self) -> str:
        """The text contents joined by newlines (``""`` when there is none)."""
        return "\n".join(c.text for c in self.contents if c.text is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptArgument:
    """One argument a prompt takes."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool = False

    @classmethod
    def from_wire(cls, wire: object, prompt: str) -> PromptArgument:
        d = _mapping(wire, f"argument of prompt {prompt!r}")
        name = _str(d, "name", f"argument of prompt {prompt!r}")
        what = f"argument {name[:64]!r} of prompt {prompt!r}"
        return cls(
            name=name,
            title=_opt_str(d, "title", what),
            description=_opt_str(d, "description", what),
            required=_get(d, "required", what, bool, required=False) is True,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """A prompt as listed by ``prompts/list``."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    meta: Mapping[str, Any] | None = None
    icons: tuple[Icon, ...] = icons_field()  # 2025-11-25, as Tool.icons
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_wire(cls, wire: object) -> Prompt:
        d = _mapping(wire, "prompt")
        name = _str(d, "name", "prompt")
        what = f"prompt {name[:64]!r}"
        listed = _get(d, "arguments", what, list, required=False) or []
        return cls(
            name=name,
            title=_opt_str(d, "title", what),
            description=_opt_str(d, "description", what),
            arguments=tuple(PromptArgument.from_wire(item, name[:64]) for item in listed),
            meta=_opt_obj(d, "_meta", what),
            icons=icons_from_wire(d.get("icons")),
            raw=d,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptMessage:
    """One message of a prompt: ``role`` ('user' or 'assistant') and a content block."""

    role: str
    content: ContentBlock

    @classmethod
    def from_wire(cls, wire: object) -> PromptMessage:
        message = _mapping(wire, "prompt message")
        return cls(
            role=_str(message, "role", "prompt message"),
            content=content_from_wire(_obj(message, "content", "prompt message")),
        )

    def to_wire(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content.to_wire()}

    @property
    def text(self) -> str:
        """The message's text (``""`` when its content is not a text block)."""
        return self.content.text if isinstance(self.content, TextContent) else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class GetPromptResult:
    """The result of ``prompts/get``."""

    messages: tuple[PromptMessage, ...]
    description: str | None = None
    meta: Mapping[str, Any] | None = None

    @property
    def text(self) -> str:
        """The text messages joined by newlines (``""`` when there is none); roles and other
        content (images, resources) are in ``messages``."""
        return "\n".join(
            m.content.text for m in self.messages if isinstance(m.content, TextContent)
        )

    @classmethod
    def from_wire(cls, wire: object) -> GetPromptResult:
        what = "prompts/get result"
        d = _mapping(wire, what)
        listed: list[Any] = _get(d, "messages", what, list, required=True)
        return cls(
            messages=tuple(PromptMessage.from_wire(item) for item in listed),
            description=_opt_str(d, "description", what),
            meta=_opt_obj(d, "_meta", what),
        )

    def to_wire(self) -> dict[str, Any]:
        return _wire(
            {"messages": [message.to_wire() for message in self.messages]},
            description=self.description,
            _meta=self.meta,
        )


@dataclass(frozen=True, slots=True)
class PromptRef:
    """What ``complete`` completes an argument of: the prompt ``name``."""

    name: str

    def to_wire(self) -> dict[str, str]:
        return {"type": "ref/prompt", "name": self.name}


@dataclass(frozen=True, slots=True)
class ResourceRef:
    """What ``complete`` completes an argument of: the resource template ``uri``."""

    uri: str

    def to_wire(self) -> dict[str, str]:
        return {"type": "ref/resource", "uri": self.uri}


# What ``complete`` completes an argument of: a PromptRef, a ResourceRef, or their wire form.
CompletionRef = PromptRef | ResourceRef | Mapping[str, str]


def completion_params(
    ref: CompletionRef,
    argument: str,
    value: str,
    context: Mapping[str, str] | None,
) -> dict[str, Any]:
    """The params of ``completion/complete`` (2025-06-18 schema, CompleteRequest): ``ref``,
    ``argument {name, value}``, and ``context {arguments}`` (the values already chosen for
    the other arguments) when given. ``ValueError`` for a ``ref`` of no known type."""
    if isinstance(ref, PromptRef | ResourceRef):
        wire: dict[str, Any] = ref.to_wire()
    elif isinstance(ref, Mapping) and ref.get("type") in ("ref/prompt", "ref/resource"):
        wire = dict(ref)
    else:
        raise ValueError(
            "ref must be {'type': 'ref/prompt', 'name': ...}, {'type': 'ref/resource', "
            "'uri': ...}, a PromptRef or a ResourceRef"
        )
    params: dict[str, Any] = {"ref": wire, "argument": {"name": argument, "value": value}}
    if context is not None:
        params["context"] = {"arguments": dict(context)}
    return params


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """The result of ``completion/complete``: at most 100 ``values``; ``total`` and
    ``has_more`` as the server reported them."""

    values: tuple[str, ...]
    total: int | None = None
    has_more: bool = False

    @classmethod
    def from_wire(cls, wire: object) -> Completion:
        what = "completion/complete result"
        completion = _obj(_mapping(wire, what), "completion", what)
        values: list[Any] = _get(completion, "values", f"{what}.completion", list, required=True)
        if not all(isinstance(v, str) for v in values):
            raise ValueError(f"{what}.completion.values must hold strings only")
        has_more = _get(completion, "hasMore", f"{what}.completion", bool, required=False)
        return cls(
            values=tuple(values),
            total=_opt_int(completion, "total", f"{what}.completion"),
            has_more=has_more is True,
        )
