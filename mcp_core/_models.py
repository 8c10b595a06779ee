"""What callers get back: tools, tool results, content blocks and ``Status`` (SPEC §3).

Parsing is hand-written and tolerant, for every protocol version from 2024-11-05 to
2026-07-28 (research/mcp-spec.md §6): fields a later version added are optional, fields this
client does not know (``icons``, ``execution``, ``size``, ...) are ignored, and a content block
of an unknown ``type`` is kept as ``UnknownContent`` rather than failing the whole result. A
required field that is missing or of the wrong type raises ``ValueError`` naming it; the
machine turns that into ``InvalidResponse`` for the one request concerned.

The wire's camelCase names become snake_case attributes (``inputSchema`` -> ``input_schema``,
``_meta`` -> ``meta``). Mappings are kept as the decoder produced them (plain dicts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "AudioContent",
    "CallToolResult",
    "ContentBlock",
    "EmbeddedResource",
    "ImageContent",
    "ResourceLink",
    "Status",
    "TextContent",
    "Tool",
    "UnknownContent",
    "content_from_wire",
]

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


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageContent:
    """``{"type": "image", "data": <base64>, "mimeType": ...}`` (all versions)."""

    type: ClassVar[str] = "image"
    data: str
    mime_type: str
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioContent:
    """``{"type": "audio", "data": <base64>, "mimeType": ...}`` (2025-03-26+)."""

    type: ClassVar[str] = "audio"
    data: str
    mime_type: str
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None


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


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddedResource:
    """``{"type": "resource", "resource": {uri, mimeType?, text | blob}}`` (all versions)."""

    type: ClassVar[str] = "resource"
    resource: Mapping[str, Any]
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownContent:
    """A block whose ``type`` this client does not know; ``raw`` is the block as received."""

    type: str
    raw: Mapping[str, Any]
    annotations: Mapping[str, Any] | None = None
    meta: Mapping[str, Any] | None = None


ContentBlock = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource | UnknownContent
)


def content_from_wire(wire: object) -> ContentBlock:
    """Parse one content block; ``ValueError`` for a known type with a bad shape, or a block
    without a string ``type``. Unknown types give ``UnknownContent``."""
    d = _mapping(wire, "content block")
    if d.get("type") == "text" and len(d) == 2 and type(text := d.get("text")) is str:
        return TextContent(text=text)  # the common block, fast: nothing else to check
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
        return cls(
            content=tuple([content_from_wire(block) for block in raw_content]),
            structured_content=d.get("structuredContent"),
            is_error=is_error is True,
            meta=_opt_obj(d, "_meta", what) if "_meta" in d else None,
        )

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (``""`` when there is none)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


# --- status ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Status:
    """A snapshot of one client (SPEC §3).

    ``state`` is ``'starting'``, ``'initializing'``, ``'ready'`` or ``'closed'``; ``transport``
    ``'stdio'``, ``'http'`` or ``'sse'``; ``era`` ``'legacy'``, ``'modern'`` or None (not
    known yet); ``concurrency`` the policy in force (SPEC §6). ``in_flight`` and ``queued``
    count caller work only; ``last_error`` is already redacted; ``retry_in`` is seconds until
    the next connect attempt, or None when none is scheduled.
    """

    name: str
    state: str
    transport: str
    concurrency: str
    era: str | None = None
    protocol_version: str | None = None
    in_flight: int = 0
    queued: int = 0
    tools: int | None = None
    last_error: str | None = None
    retry_in: float | None = None
    server_info: Mapping[str, Any] | None = None

    @property
    def ready(self) -> bool:
        return self.state == "ready"
