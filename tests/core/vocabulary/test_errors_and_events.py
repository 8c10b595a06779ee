"""Errors are values with plain-language messages; events refuse impossible values."""

from __future__ import annotations

import pytest

import mcp_core as core

ERRORS = [
    core.InvalidSpec("invalid spec: x"),
    core.NoHttpClient("no HTTP stack"),
    core.Busy("the queue is full"),
    core.RequestTimeout("no answer in time"),
    core.NotReady("starting"),
    core.ConnectFailed("no such file", permanent=True),
    core.ConnectFailed("boom"),
    core.InitializationFailed("boom"),
    core.UnsupportedVersion("1999-01-01", ("2025-11-25",)),
    core.ServerExited(3, "fatal\n"),
    core.ServerExited(None, ""),
    core.MessageTooLarge(20_000_000, 8_000_000),
    core.SessionRejected("the server forgot the session"),
    core.HttpError(401, 'Bearer resource_metadata="x"'),
    core.JsonRpcError(-32602, "Unknown tool", {"x": 1}),
    core.InvalidResponse("tools/call", "content is not a list"),
    core.UrlElicitationRequired(
        "needs auth", ({"mode": "url", "elicitationId": "e", "url": "https://x/", "message": "m"},)
    ),
    core.UnmeteredCall("buy", "reservation already used"),
    core.UnmeteredCall("buy"),
    core.UnknownTool("mcp__fs__nope", "did you mean mcp__fs__read_file?"),
    core.ServerExited(None, "", "closed its stdout while still running"),
    core.InvalidArguments("tools/call", "arguments.when", "is a datetime, not a JSON value"),
    core.ListTooLong("tools/list", 100, 10_000),
    core.UsedAfterFork("fs", 100, 101),
    core.WrongEventLoop("fs"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_errors_are_comparable_values_with_messages(error: core.McpError) -> None:
    assert isinstance(error, core.McpError)
    # A JsonRpcError's message is the server's own; its str is the sentence, as for the rest.
    assert str(error) == error.message or isinstance(error, core.JsonRpcError)
    assert len(str(error)) > 10
    assert error == error and hash(error) == hash(error)
    assert error != core.McpError(str(error))
    assert repr(error).startswith(type(error).__name__ + "(")


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (core.RequestTimeout("the call passed its deadline"), TimeoutError),
        (core.UnknownTool("mcp__a__b", "see list_tools()"), LookupError),
        (core.UnknownPrompt("mcp__a__b", "see list_prompts()"), LookupError),
        (core.InvalidArguments("tools/call", "arguments.x", "a set"), TypeError),
        (core.InvalidArguments("tools/call", "arguments.x", "a set"), ValueError),
    ],
)
def test_errors_are_also_the_builtin_error_of_their_kind(
    error: core.McpError, builtin: type[Exception]
) -> None:
    # An application that knows nothing of this client catches them by the builtin's name
    # (``except TimeoutError`` around a call, as around asyncio.wait_for).
    with pytest.raises(builtin) as raised:
        raise error
    assert raised.value is error
    assert isinstance(raised.value, core.McpError)
    assert str(error) == error.message


def test_error_fields() -> None:
    assert core.HttpError(403).status == 403 and core.HttpError(403).www_authenticate is None
    assert core.UnmeteredCall("buy").tool == "buy"
    assert "will not be retried" in str(core.ConnectFailed("x", permanent=True))
    assert "retries" in str(core.ConnectFailed("x"))
    assert core.ServerExited(None, "").stderr_tail == ""
    assert "closed its stdout" in str(core.ServerExited(None, "", "closed its stdout"))
    refused = core.InvalidArguments("tools/call", "arguments.x", "is a set")
    assert isinstance(refused, TypeError) and isinstance(refused, ValueError)
    assert (refused.method, refused.path, refused.problem) == (
        "tools/call",
        "arguments.x",
        "is a set",
    )
    assert core.ListTooLong("tools/list", 3, 30).pages == 3
    forked = core.UsedAfterFork("fs", 100, 101)
    assert isinstance(forked, RuntimeError) and (forked.parent, forked.child) == (100, 101)
    assert isinstance(core.WrongEventLoop("fs"), RuntimeError)


@pytest.mark.parametrize(
    "make",
    [
        lambda: core.AwaitReady(now=0, ticket=1, timeout=-1),
        lambda: core.ListTools(now=0, ticket=1, timeout=0),
        lambda: core.CallTool(now=0, ticket=1, name="x", timeout=-2),
    ],
)
def test_events_refuse_impossible_timeouts(make: object) -> None:
    with pytest.raises(ValueError, match="timeout"):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    "fields",
    [{}, {"result": {}, "failed": "ValueError"}],
)
def test_a_server_request_answer_is_a_result_or_an_error(fields: dict) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        core.ServerRequestAnswered(now=0, handle=1, **fields)
