"""Requests the server asks the client to run as tasks (MCP 2025-11-25 basic/utilities/tasks,
the client as receiver), on each driver, against the reference server-everything over stdio
and Streamable HTTP.

Its ``trigger-sampling-request-async`` and ``trigger-elicitation-request-async`` tools exist
only for a client that declared the handler and the matching ``tasks.requests`` entry (they
are registered when the client sends ``notifications/initialized``). Each sends its request
with ``params.task``, takes the client's CreateTaskResult, polls the client's ``tasks/get``
each second until the task ended and then fetches ``tasks/result``: the tool's text shows the
task id, the polls and the result, so what the client served is checked on the server's side.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.drivers.facade import Facade

# The same fixtures as the tasks the client asks for: a client of server-everything over stdio
# or Streamable HTTP (``connect``), and no child process left after each test.
from tests.drivers.test_tasks import _connect, _no_children_left  # noqa: F401

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

SAMPLING = "trigger-sampling-request-async"
ELICITATION = "trigger-elicitation-request-async"
RELATED = "io.modelcontextprotocol/related-task"


def sample(params: dict[str, Any]) -> dict[str, Any]:
    text = params["messages"][0]["content"]["text"]
    return {
        "role": "assistant",
        "content": {"type": "text", "text": f"sampled ({sorted(params)}): {text}"},
        "model": "test-model",
        "stopReason": "endTurn",
    }


def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada", "favoriteColor": "Blue"}}


def raw_result(text: str, marker: str) -> dict[str, Any]:
    """The JSON the tool printed after ``marker``: what the client's tasks/result gave it."""
    found: dict[str, Any] = json.loads(text.split(marker, 1)[1])
    return found


async def test_with_the_opt_in_the_server_runs_sampling_and_elicitation_as_tasks(
    connect: Callable[..., Facade],
) -> None:
    async with connect(sampling=sample, elicitation=elicit, accept_tasks=True) as client:
        names = {tool.name for tool in await client.list_tools()}
        assert {SAMPLING, ELICITATION} <= names
        sampled = await client.call_tool(SAMPLING, {"prompt": "tides", "maxTokens": 5})
        elicited = await client.call_tool(ELICITATION, {})
    assert sampled.text.startswith("[COMPLETED] Async sampling completed!"), sampled.text
    assert "Task created: task-1" in sampled.text and "Poll 1: " in sampled.text
    result = raw_result(sampled.text, "**Result:**\n")
    assert result["_meta"] == {RELATED: {"taskId": "task-1"}}
    assert result["model"] == "test-model"
    # the handler got the request's params as a plain request's, `task` among them
    assert result["content"]["text"] == (
        "sampled (['maxTokens', 'messages', 'systemPrompt', 'task', 'temperature']): "
        "Resource trigger-sampling-request-async context: tides"
    )
    assert "[COMPLETED] User provided the requested information!" in elicited.text
    assert "- Name: Ada" in elicited.text and "Task created: task-2" in elicited.text
    assert raw_result(elicited.text, "Raw result: ") == {
        "_meta": {RELATED: {"taskId": "task-2"}},
        "action": "accept",
        "content": {"name": "Ada", "favoriteColor": "Blue"},
    }


async def test_a_handler_that_fails_fails_its_task(connect: Callable[..., Facade]) -> None:
    def broken(params: dict[str, Any]) -> dict[str, Any]:
        raise LookupError("no model here")

    async with connect(sampling=broken, accept_tasks=True) as client:
        names = {tool.name for tool in await client.list_tools()}
        assert SAMPLING in names and ELICITATION not in names  # declared per handler
        result = await client.call_tool(SAMPLING, {"prompt": "x"})
    assert result.text.startswith("[FAILED] the client's handler failed: LookupError"), result.text
    assert "no model here" not in result.text  # the exception's message stays in the client


async def test_without_the_opt_in_the_async_tools_are_absent_and_plain_ones_work(
    connect: Callable[..., Facade],
) -> None:
    async with connect(sampling=sample, elicitation=elicit) as client:
        names = {tool.name for tool in await client.list_tools()}
        assert SAMPLING not in names and ELICITATION not in names
        assert {"trigger-sampling-request", "trigger-elicitation-request"} <= names
        plain = await client.call_tool("trigger-sampling-request", {"prompt": "reefs"})
        asked = await client.call_tool("trigger-elicitation-request", {})
    assert "context: reefs" in plain.text and "test-model" in plain.text
    assert "task" not in plain.text.lower()
    assert "Ada" in asked.text
