"""Sampling with tools (MCP 2025-11-25 client/sampling §Tools in Sampling): what the client
checks of a ``sampling/createMessage`` before its handler sees it, and of the handler's answer
before the server does.

A request with ``tools`` or ``toolChoice`` is for a client that declared ``sampling.tools``
only (servers "MUST NOT" send one otherwise): -32602 when it did not, as for a malformed one,
and as the spec names for a tool result missing or mixed with other content ("Clients SHOULD
return errors ... -32602 (Invalid params)", §Error Handling). A request without tool use or
tool blocks reaches the handler unchecked, as before.

The answer to a request with tool use is checked as a ``CreateMessageResult``: content blocks
of a good shape, ``tool_use`` only from the assistant and not under ``toolChoice`` "none", no
``tool_result`` (those come from the server), a string ``model``, every ``tool_use`` naming a
tool the server offered, and at least one under ``toolChoice`` "required" ("the model MUST use
at least one tool", §Tool Choice). An answer to any other
request is checked for tool blocks only. A refused answer fails as a handler that raised does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._vocabulary.sampling import (
    CreateMessageRequest,
    SamplingMessage,
    ToolResultContent,
    ToolUseContent,
    wants_tools,
)

__all__ = ["answer_problem", "request_problem"]

_TOOL_BLOCKS = ("tool_use", "tool_result")


def request_problem(params: Mapping[str, Any], tools_declared: bool) -> str | None:
    """Why a ``sampling/createMessage`` with these params gets -32602, or None."""
    tooled = wants_tools(params)
    if tooled and not tools_declared:
        return "this client did not declare sampling.tools: a request with tools is not for it"
    messages = params.get("messages")
    if not tooled and not any(_holds_tool_blocks(m) for m in _listed(messages)):
        return None
    try:
        request = CreateMessageRequest.from_params(params)
    except ValueError as exc:
        return str(exc)
    return _balance_problem(request.messages)


def answer_problem(result: Mapping[str, Any], params: Mapping[str, Any]) -> str | None:
    """Why the handler's answer to a request with ``params`` must not reach the server."""
    if not wants_tools(params):
        if _holds_tool_blocks(result):
            return "tool_use or tool_result content, but the server offered no tools"
        return None
    try:
        message = SamplingMessage.from_wire(result)
    except ValueError as exc:
        return str(exc)
    if not isinstance(result.get("model"), str):
        return "model must be a string"
    stop = result.get("stopReason")
    if stop is not None and not isinstance(stop, str):
        return "stopReason must be a string"
    uses = [block for block in message.content if isinstance(block, ToolUseContent)]
    if any(isinstance(block, ToolResultContent) for block in message.content):
        return "a tool_result block: tool results come from the server"
    if uses and message.role != "assistant":
        return f"tool_use blocks in a {message.role[:20]!r} message, not 'assistant'"
    choice = params.get("toolChoice")
    mode = choice.get("mode") if isinstance(choice, Mapping) else None
    if uses and mode == "none":
        return "tool_use blocks, but the server's toolChoice mode was 'none'"
    if not uses and mode == "required":
        return "no tool_use block, but the server's toolChoice mode was 'required'"
    offered = {
        tool.get("name") for tool in _listed(params.get("tools")) if isinstance(tool, Mapping)
    }
    unknown = [block.name for block in uses if block.name not in offered]
    if unknown:
        return f"a tool_use of {unknown[0][:64]!r}, a tool the server did not offer"
    if stop == "toolUse" and not uses:
        return "stopReason 'toolUse' without a tool_use block"
    return None


def _balance_problem(messages: Sequence[SamplingMessage]) -> str | None:
    """2025-11-25 client/sampling §Tool Use and Result Balance: every assistant message with
    tool use is followed by a user message of tool results only, one per tool use."""
    for index, message in enumerate(messages):
        uses = {b.id for b in message.content if isinstance(b, ToolUseContent)}
        answers = [b for b in message.content if isinstance(b, ToolResultContent)]
        results = {b.tool_use_id for b in answers}
        if answers and (message.role != "user" or len(answers) != len(message.content)):
            return "Tool results mixed with other content (or not in a user message)"
        if results:
            before = messages[index - 1].content if index else ()
            if results != {b.id for b in before if isinstance(b, ToolUseContent)}:
                return "Tool results that answer no tool_use of the message before"
        if uses:
            after = messages[index + 1].content if index + 1 < len(messages) else ()
            if message.role != "assistant":
                return "tool_use blocks in a message that is not the assistant's"
            if not any(isinstance(b, ToolResultContent) for b in after):
                return "Tool result missing in request"
    return None


def _listed(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _holds_tool_blocks(message: object) -> bool:
    content = message.get("content") if isinstance(message, Mapping) else None
    blocks = content if isinstance(content, list) else [content]
    return any(isinstance(b, Mapping) and b.get("type") in _TOOL_BLOCKS for b in blocks)
