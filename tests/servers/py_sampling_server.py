"""A stdio MCP server built with the official Python SDK (mcp 2.x) that borrows the client's
model with tools (MCP 2025-11-25 client/sampling §Tools in Sampling), used as a real peer.

Run: python tests/servers/py_sampling_server.py   (newline-delimited JSON-RPC on stdio)

Both eras, as py_server.py: the SDK's resolvers (``Resolve`` returning a ``Sample``) send a
``sampling/createMessage`` request mid-call in the legacy era and an ``input_required`` round
in the 2026-07-28 era. The SDK refuses to sample with tools when the client did not declare
``sampling.tools`` (MISSING_REQUIRED_CLIENT_CAPABILITY).

Tools:
  weather(city, choice="auto") -> JSON {"first": <the client's answer>, "final": <its answer
        to the follow-up, or null>}. The first request offers the tool get_weather with
        toolChoice {"mode": choice}; when the answer holds tool_use blocks, the server "runs"
        them (each gives "18C in <city>") and asks again with the history, a user message of
        tool_result blocks and toolChoice "none".
  sample_anyway() -> legacy era only: sends a request with tools whatever the client
        declared, bypassing the SDK's check, and returns "error <code>: <message>" or the
        client's answer as JSON.
"""

from __future__ import annotations

import json
import warnings
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResultWithTools,
    SamplingMessage,
    TextContent,
    Tool,
    ToolChoice,
    ToolResultContent,
    ToolUseContent,
)

# Sampling is deprecated at 2026-07-28; the SDK warns on every use. This peer serves it on
# purpose, so the warnings are noise here.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

server: MCPServer = MCPServer("py-sampling-server", version="1", log_level="WARNING")

GET_WEATHER = Tool(
    name="get_weather",
    description="Current weather of a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


def _question(city: str) -> SamplingMessage:
    question = TextContent(type="text", text=f"Weather in {city}?")
    return SamplingMessage(role="user", content=question)


def first_sample(city: str, choice: str = "auto") -> Sample:
    return Sample(
        [_question(city)],
        max_tokens=100,
        system_prompt="Use the tools.",
        tools=[GET_WEATHER],
        tool_choice=ToolChoice(mode=choice),  # type: ignore[arg-type]
    )


def _wire(result: Any) -> Any:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def follow_up(
    city: str, first: Annotated[CreateMessageResultWithTools, Resolve(first_sample)]
) -> Sample | None:
    uses = [block for block in first.content_as_list if isinstance(block, ToolUseContent)]
    if not uses:
        return None
    results = [
        ToolResultContent(
            type="tool_result",
            tool_use_id=use.id,
            content=[TextContent(type="text", text=f"18C in {use.input.get('city', city)}")],
        )
        for use in uses
    ]
    return Sample(
        [
            _question(city),
            SamplingMessage(role="assistant", content=uses),
            SamplingMessage(role="user", content=results),
        ],
        max_tokens=100,
        tools=[GET_WEATHER],
        tool_choice=ToolChoice(mode="none"),
    )


@server.tool()
def weather(
    city: str,
    first: Annotated[CreateMessageResultWithTools, Resolve(first_sample)],
    final: Annotated[CreateMessageResultWithTools | None, Resolve(follow_up)],
    choice: str = "auto",
) -> str:
    """Ask the client's model about the weather, with a tool it may use."""
    return json.dumps({"first": _wire(first), "final": None if final is None else _wire(final)})


@server.tool()
async def sample_anyway(ctx: Context) -> str:
    """Send a request with tools even to a client that did not declare sampling.tools."""
    params = CreateMessageRequestParams(
        messages=[_question("Oslo")], max_tokens=10, tools=[GET_WEATHER]
    )
    try:
        result = await ctx.request_context.session.send_request(
            CreateMessageRequest(params=params),
            CreateMessageResultWithTools,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
    except MCPError as exc:
        return f"error {exc.error.code}: {exc.error.message}"
    return json.dumps(_wire(result))


if __name__ == "__main__":
    server.run("stdio")
