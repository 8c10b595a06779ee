"""The typed view of sampling/createMessage (2025-11-25 client/sampling): parsed tolerantly,
and ``to_wire()`` gives back what parses to an equal object."""

from __future__ import annotations

import pytest

import mcp_core as core

FULL = {
    "messages": [
        {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "w", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "c2", "name": "w", "input": {}, "_meta": {"k": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "toolUseId": "c1", "content": [], "isError": True},
                {
                    "type": "tool_result",
                    "toolUseId": "c2",
                    "content": [{"type": "text", "text": "15C"}],
                    "structuredContent": {"c": 15},
                },
            ],
            "_meta": {"m": 2},
        },
    ],
    "maxTokens": 100,
    "systemPrompt": "be brief",
    "temperature": 0.5,
    "stopSequences": ["END"],
    "modelPreferences": {"hints": [{"name": "claude"}]},
    "includeContext": "none",
    "metadata": {"x": 1},
    "tools": [{"name": "w", "inputSchema": {"type": "object"}}],
    "toolChoice": {"mode": "required"},
    "_meta": {"progressToken": 1},
    "unknownField": True,
}


def test_a_full_request_is_typed_and_goes_back_to_the_wire() -> None:
    request = core.CreateMessageRequest.from_params(FULL)
    assert request.max_tokens == 100 and request.temperature == 0.5
    assert request.stop_sequences == ("END",) and request.tool_choice == "required"
    use = request.messages[1].content[0]
    assert isinstance(use, core.ToolUseContent) and use.input == {"city": "Paris"}
    result = request.messages[2].content[1]
    assert isinstance(result, core.ToolResultContent) and result.structured_content == {"c": 15}
    wire = request.to_wire()
    assert "unknownField" not in wire and wire["messages"][0] == FULL["messages"][0]
    assert core.CreateMessageRequest.from_params(wire) == request


def test_a_minimal_request_and_defaults() -> None:
    request = core.CreateMessageRequest.from_params({"messages": [], "maxTokens": 1})
    assert request.tools == () and request.tool_choice is None and request.temperature is None
    assert request.to_wire() == {"messages": [], "maxTokens": 1}
    chosen = core.CreateMessageRequest.from_params(
        {"messages": [], "maxTokens": 1, "toolChoice": {}, "temperature": 1}
    )
    assert chosen.tool_choice == "auto" and chosen.temperature == 1.0
    message = core.SamplingMessage(role="assistant", content=(core.ToolUseContent(
        id="a", name="b", input={}),))
    assert message.to_wire() == {
        "role": "assistant",
        "content": {"type": "tool_use", "id": "a", "name": "b", "input": {}},
    }


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"messages": []}, "maxTokens"),
        ({"messages": [], "maxTokens": 1, "temperature": "hot"}, "temperature"),
        ({"messages": [], "maxTokens": 1, "stopSequences": [1]}, "stopSequences"),
        ({"maxTokens": 1}, "messages"),
        ({"messages": [{"role": "user"}], "maxTokens": 1}, "content"),
        ({"messages": [], "maxTokens": 1, "toolChoice": {"mode": 3}}, "toolChoice"),
        ([], "object"),
    ],
)
def test_a_malformed_request_names_its_field(params: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        core.CreateMessageRequest.from_params(params)
