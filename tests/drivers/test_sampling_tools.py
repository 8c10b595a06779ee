"""Sampling with tools (MCP 2025-11-25 client/sampling §Tools in Sampling) on each driver,
against a server of the official SDK (tests/servers/py_sampling_server.py) in both eras: the
capability is declared only when the application opts in, the handler sees the tools typed, a
tool_use answer reaches the server intact, and a malformed answer is an error, never a crash."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import mcp_core as core
from tests.conftest import SERVERS_DIR, children_of, wait_until
from tests.drivers.facade import Facade

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

ARGV = [sys.executable, str(SERVERS_DIR / "py_sampling_server.py")]
ERAS = ["legacy", "modern"]


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


def client(driver: str, era: str, sampling: Any, **fields: Any) -> Facade:
    return Facade(driver, command=ARGV[0], args=ARGV[1:], era=era, sampling=sampling, **fields)


def _tool_use(request: core.CreateMessageRequest) -> dict[str, Any]:
    use = core.ToolUseContent(id="call-1", name=request.tools[0].name, input={"city": "Oslo"})
    return {"role": "assistant", "content": [use.to_wire()], "model": "m", "stopReason": "toolUse"}


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_use_round_trip(driver: str, era: str) -> None:
    seen: list[core.CreateMessageRequest] = []

    def sampling(params: dict) -> dict:
        request = core.CreateMessageRequest.from_params(params)
        seen.append(request)
        if len(seen) == 1:
            return _tool_use(request)
        return {"role": "assistant", "content": {"type": "text", "text": "mild"}, "model": "m"}

    async with client(driver, era, sampling, sampling_tools=True) as c:
        assert c.status().era == era
        answer = json.loads((await c.call_tool("weather", {"city": "Oslo"})).text)
    first, follow = seen
    assert [t.name for t in first.tools] == ["get_weather"] and first.tool_choice == "auto"
    assert first.system_prompt == "Use the tools." and first.max_tokens == 100
    assert answer["first"]["content"] == [
        {"type": "tool_use", "id": "call-1", "name": "get_weather", "input": {"city": "Oslo"}}
    ]
    assert answer["first"]["stopReason"] == "toolUse"
    [result] = follow.messages[2].content
    assert isinstance(result, core.ToolResultContent) and result.tool_use_id == "call-1"
    assert follow.tool_choice == "none"
    assert answer["final"]["content"] == {"type": "text", "text": "mild"}


@pytest.mark.parametrize("era", ERAS)
async def test_without_the_opt_in_no_tools_are_declared(driver: str, era: str) -> None:
    asked: list[object] = []
    async with client(driver, era, asked.append) as c:
        # the SDK will not sample with tools for a client that did not declare them
        with pytest.raises(core.JsonRpcError, match=r"sampling\.tools"):
            await c.call_tool("weather", {"city": "Oslo"})
        if era == "legacy":  # a server that sends tools anyway gets -32602
            refused = await c.call_tool("sample_anyway")
            assert refused.text.startswith("error -32602:") and "sampling.tools" in refused.text
    assert asked == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_malformed_answer_is_an_error(driver: str, era: str) -> None:
    def sampling(params: dict) -> dict:
        return {"role": "assistant", "content": [{"type": "tool_use", "name": "x"}], "model": "m"}

    async with client(driver, era, sampling, sampling_tools=True) as c:
        # legacy: the server got -32603 for its request and passes it on as the call's
        # error; modern: the answer never leaves, the call fails as a handler that raised
        with pytest.raises(core.JsonRpcError) as caught:
            await c.call_tool("weather", {"city": "Oslo"})
        assert caught.value.code == -32603 and "content.id must be a string" in str(caught.value)
        assert c.status().state == "ready"


def test_sampling_tools_needs_a_sampling_handler() -> None:
    with pytest.raises(ValueError, match="sampling handler"):
        Facade("sync", command="x", sampling_tools=True)


async def test_an_answer_that_is_no_mapping_is_an_error(driver: str) -> None:
    async with client(driver, "legacy", lambda params: ["no", "mapping"], sampling_tools=True) as c:
        with pytest.raises(core.JsonRpcError) as caught:
            await c.call_tool("weather", {"city": "Oslo"})
        assert caught.value.code == -32603 and "ValueError" in str(caught.value)
        assert c.status().state == "ready"
