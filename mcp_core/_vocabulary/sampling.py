"""What a server asks of the client's model: ``sampling/createMessage`` (MCP 2025-11-25
client/sampling), typed, with the tool use that revision adds.

A ``sampling=`` handler still gets the request's params as a mapping (what it always got);
``CreateMessageRequest.from_params(params)`` is the typed view of them. Parsing is tolerant as
in ``models.py``: unknown fields are ignored, a content block of an unknown type is kept as
``UnknownContent``; a required field missing or of the wrong type raises ``ValueError`` naming
it. ``to_wire()`` is the way back: a handler answering with tool use puts
``ToolUseContent(...).to_wire()`` blocks in its result's ``content``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .models import (
    ContentBlock,
    Tool,
    _get,
    _json_kind,
    _mapping,
    _obj,
    _opt_obj,
    _opt_str,
    _str,
    _wire,
    content_from_wire,
)

__all__ = [
    "TOOL_CHOICES",
    "CreateMessageRequest",
    "SamplingContent",
    "SamplingMessage",
    "ToolChoice",
    "ToolResultContent",
    "ToolUseContent",
    "sampling_content_from_wire",
    "wants_tools",
]

ToolChoice = Literal["auto", "required", "none"]
TOOL_CHOICES: tuple[ToolChoice, ...] = ("auto", "required", "none")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseContent:
    """``{"type": "tool_use", "id", "name", "input"}`` (2025-11-25): the model asks to call one
    of the tools the server offered; the server runs it, never the client."""

    type: ClassVar[str] = "tool_use"
    id: str
    name: str
    input: Mapping[str, Any]
    meta: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _wire(
            {"type": "tool_use", "id": self.id, "name": self.name, "input": self.input},
            _meta=self.meta,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultContent:
    """``{"type": "tool_result", "toolUseId", "content": [...], "structuredContent"?,
    "isError"?}`` (2025-11-25): what the server's tool gave for a ``tool_use``, in the user
    message of a follow-up request."""

    type: ClassVar[str] = "tool_result"
    tool_use_id: str
    content: tuple[ContentBlock, ...] = ()
    structured_content: Mapping[str, Any] | None = None
    is_error: bool | None = None
    meta: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return _wire(
            {
                "type": "tool_result",
                "toolUseId": self.tool_use_id,
                "content": [block.to_wire() for block in self.content],
            },
            structuredContent=self.structured_content,
            isError=self.is_error,
            _meta=self.meta,
        )


SamplingContent = ContentBlock | ToolUseContent | ToolResultContent


def sampling_content_from_wire(wire: object) -> SamplingContent:
    """Parse one block of a sampling message or result: the content blocks of ``models.py``
    and the two of tool use. ``ValueError`` for a block of a bad shape."""
    d = _mapping(wire, "content block")
    kind = d.get("type")
    what = f"{kind} content"
    if kind == "tool_use":
        return ToolUseContent(
            id=_str(d, "id", what),
            name=_str(d, "name", what),
            input=_obj(d, "input", what),
            meta=_opt_obj(d, "_meta", what),
        )
    if kind == "tool_result":
        blocks = _get(d, "content", what, list, required=True)
        return ToolResultContent(
            tool_use_id=_str(d, "toolUseId", what),
            content=tuple(content_from_wire(block) for block in blocks),
            structured_content=_opt_obj(d, "structuredContent", what),
            is_error=_get(d, "isError", what, bool, required=False),
            meta=_opt_obj(d, "_meta", what),
        )
    return content_from_wire(d)


def _blocks(wire: Mapping[str, Any], what: str) -> tuple[SamplingContent, ...]:
    """``content``: one block, or (2025-11-25) an array of them."""
    content = wire.get("content")
    if isinstance(content, list):
        return tuple(sampling_content_from_wire(block) for block in content)
    if isinstance(content, Mapping):
        return (sampling_content_from_wire(content),)
    got = "missing" if "content" not in wire else _json_kind(content)
    raise ValueError(f"{what}.content must be an object or an array, got {got}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingMessage:
    """One message of the conversation the server wants continued."""

    role: str  # "user" or "assistant"
    content: tuple[SamplingContent, ...]
    meta: Mapping[str, Any] | None = None

    @classmethod
    def from_wire(cls, wire: object) -> SamplingMessage:
        d = _mapping(wire, "sampling message")
        return cls(
            role=_str(d, "role", "sampling message"),
            content=_blocks(d, "sampling message"),
            meta=_opt_obj(d, "_meta", "sampling message"),
        )

    def to_wire(self) -> dict[str, Any]:
        """One block as an object (what every version reads), several as an array."""
        blocks = [block.to_wire() for block in self.content]
        content = blocks[0] if len(blocks) == 1 else blocks
        return _wire({"role": self.role, "content": content}, _meta=self.meta)


def wants_tools(params: Mapping[str, Any]) -> bool:
    """Whether a ``sampling/createMessage`` asks for tool use: it carries ``tools`` or
    ``toolChoice``, which only a client that declared ``sampling.tools`` may be sent."""
    return params.get("tools") is not None or params.get("toolChoice") is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateMessageRequest:
    """The params of ``sampling/createMessage``, typed (2025-11-25 schema,
    ``CreateMessageRequestParams``). ``tools`` is empty and ``tool_choice`` None when the
    server asked for no tool use; ``tool_choice`` is ``"auto"`` for a ``toolChoice`` without
    a mode (the spec's default)."""

    messages: tuple[SamplingMessage, ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_preferences: Mapping[str, Any] | None = None
    include_context: str | None = None
    metadata: Mapping[str, Any] | None = None
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice | None = None
    meta: Mapping[str, Any] | None = None

    @classmethod
    def from_params(cls, params: object) -> CreateMessageRequest:
        """Parse the params a ``sampling=`` handler gets. ``ValueError`` naming the field for a
        missing ``messages`` or ``maxTokens``, or a known field of the wrong type (the client
        checks a request with tools before its handler sees it: there this never raises)."""
        what = "sampling/createMessage"
        d = _mapping(params, what)
        max_tokens = d.get("maxTokens")
        if type(max_tokens) is not int:
            raise ValueError(f"{what}.maxTokens must be an integer, got {_json_kind(max_tokens)}")
        temperature = d.get("temperature")
        if temperature is not None and type(temperature) not in (int, float):
            raise ValueError(f"{what}.temperature must be a number, got {_json_kind(temperature)}")
        stops = _get(d, "stopSequences", what, list, required=False) or []
        if not all(isinstance(stop, str) for stop in stops):
            raise ValueError(f"{what}.stopSequences must be an array of strings")
        return cls(
            messages=tuple(
                SamplingMessage.from_wire(m) for m in _get(d, "messages", what, list, True)
            ),
            max_tokens=max_tokens,
            system_prompt=_opt_str(d, "systemPrompt", what),
            temperature=None if temperature is None else float(temperature),
            stop_sequences=tuple(stops),
            model_preferences=_opt_obj(d, "modelPreferences", what),
            include_context=_opt_str(d, "includeContext", what),
            metadata=_opt_obj(d, "metadata", what),
            tools=tuple(
                Tool.from_wire(tool) for tool in _get(d, "tools", what, list, False) or []
            ),
            tool_choice=_tool_choice(_opt_obj(d, "toolChoice", what)),
            meta=_opt_obj(d, "_meta", what),
        )

    def to_wire(self) -> dict[str, Any]:
        return _wire(
            {"messages": [m.to_wire() for m in self.messages], "maxTokens": self.max_tokens},
            systemPrompt=self.system_prompt,
            temperature=self.temperature,
            stopSequences=list(self.stop_sequences) or None,
            modelPreferences=self.model_preferences,
            includeContext=self.include_context,
            metadata=self.metadata,
            tools=[tool.to_wire() for tool in self.tools] or None,
            toolChoice=None if self.tool_choice is None else {"mode": self.tool_choice},
            _meta=self.meta,
        )


def _tool_choice(choice: Mapping[str, Any] | None) -> ToolChoice | None:
    if choice is None:
        return None
    mode = choice.get("mode", "auto")
    for known in TOOL_CHOICES:
        if mode == known:
            return known
    shown = repr(mode[:20]) if isinstance(mode, str) else _json_kind(mode)
    raise ValueError(f"sampling/createMessage.toolChoice.mode must be {TOOL_CHOICES}, not {shown}")
