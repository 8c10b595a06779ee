"""What mypy --strict says of code a user writes against the public API (``make typecheck``
checks this folder; nothing runs it). A line marked ``# type: ignore[code]`` must be an error
of that code: mypy's strict mode reports an ignore that is no longer needed, so if the API
stopped refusing that mistake, the build would fail."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_asyncio
import mcp_sync
from mcp_core import (
    GetPromptResult,
    RequestTimeout,
    SessionEra,
    SessionState,
    Spec,
    TransportName,
    UnknownTool,
)


def on_progress(progress: float, total: float | None, message: str | None) -> None:
    print(progress, total, message)


def wrong_progress(progress: float) -> None:
    print(progress)


def construction() -> None:
    # every Spec field is a keyword of Client, and a misspelled one is an error
    mcp_sync.Client(name="fs", command="npx", args=["-y", "server"], call_timeout=5, era="legacy")
    mcp_asyncio.Client(name="web", url="https://example.com/mcp", headers={"X-Key": "k"})
    mcp_sync.Client(name="fs", command="npx", timout=5)  # type: ignore[call-arg]
    mcp_asyncio.Client(name="fs", command="npx", timout=5)  # type: ignore[call-arg]
    mcp_sync.Client(name="fs", command="npx", era="newest")  # type: ignore[arg-type]
    # (args="-y server" passes mypy, a str being a Sequence[str]: the spec refuses it at run time)
    # on_list_changed gets the kind of list ("tools", "prompts", "resources")
    mcp_sync.Client(name="fs", command="npx", on_list_changed=print)
    mcp_asyncio.Client(name="fs", command="npx", on_list_changed=lambda kind: None)
    mcp_sync.Client(name="fs", command="npx", on_list_changed=on_progress)  # type: ignore[arg-type]


async def accept_async(params: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"action": "accept", "content": {}}


def accept(params: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"action": "accept", "content": {}}


def group_construction() -> None:
    # what a group gives every client is typed like Client's keywords: a misspelled option,
    # a handler of the other driver's kind, a spec field a group takes no value of
    fs = {"fs": {"command": "npx"}}
    mcp_sync.ClientGroup(fs, call_timeout=3, elicitation=accept, interactive=False)
    mcp_asyncio.ClientGroup(fs, wait=False, fail_fast=True, sampling=accept_async)
    options: mcp_asyncio.ClientOptions = {"call_timeout": 3, "elicitation": accept_async}
    mcp_asyncio.ClientGroup(fs, **options)
    mcp_sync.ClientGroup(fs, timout=3)  # type: ignore[call-arg]
    mcp_asyncio.ClientGroup(fs, timout=3)  # type: ignore[call-arg]
    mcp_sync.ClientGroup(fs, elicitation=accept_async)  # type: ignore[arg-type]
    mcp_asyncio.ClientGroup(fs, roots=wrong_progress)  # type: ignore[arg-type]
    mcp_sync.ClientGroup(fs, call_timeout="3")  # type: ignore[arg-type]
    mcp_sync.ClientGroup(fs, name="fs")  # type: ignore[call-arg]
    mcp_sync.ClientGroup(fs, record="recordings/")  # a directory: one file per server
    mcp_asyncio.ClientGroup(fs, replay="recordings/")
    bad: mcp_sync.ClientOptions = {"elicitation": accept_async}  # type: ignore[typeddict-item]
    print(bad)


def group_calls(group: mcp_sync.ClientGroup) -> None:
    group.call_tool("mcp__fs__read", {"path": "a"}, timeout=5, progress=on_progress)
    group.call_tool("mcp__fs__read", timout=5)  # type: ignore[call-arg]


def checks(client: mcp_sync.Client, prompt: GetPromptResult) -> str:
    # args as a list, as the spec's own message asks for it
    Spec(name="fs", command="npx", args=["-y", "@modelcontextprotocol/server-filesystem", "."])
    # a progress callback: a function or a lambda of (progress, total, message)
    client.call_tool("echo", {"message": "hi"}, progress=on_progress)
    client.call_tool("echo", progress=lambda progress, total, message: None)
    client.call_tool("echo", progress=wrong_progress)  # type: ignore[arg-type]
    # the errors are the builtins an application already catches
    try:
        client.call_tool("slow", timeout=1.0)
    except TimeoutError as exc:
        timeout: RequestTimeout | TimeoutError = exc
        print(timeout)
    except LookupError as exc:
        unknown: UnknownTool | LookupError = exc
        print(unknown)
    return prompt.text


def statuses(client: mcp_sync.Client) -> SessionState:
    # Status.state, .transport and .era are Literals: a misspelled name is refused, in a
    # comparison (--strict-equality) as in an assignment
    status = client.status()
    transport: TransportName = status.transport
    era: SessionEra | None = status.era
    print(transport, era, status.state == "ready", status.transport == "sse")
    print(status.state == "runing")  # type: ignore[comparison-overlap]
    print(status.transport == "websocket")  # type: ignore[comparison-overlap]
    wrong: SessionState = "down"  # type: ignore[assignment]
    return wrong


async def async_checks(client: mcp_asyncio.Client) -> None:
    await client.call_tool("echo", {"message": "hi"}, progress=on_progress)
    await client.call_tool("echo", progress=wrong_progress)  # type: ignore[arg-type]
