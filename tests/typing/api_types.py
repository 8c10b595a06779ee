"""What mypy --strict says of code a user writes against the public API (``make typecheck``
checks this folder; nothing runs it). A line marked ``# type: ignore[code]`` must be an error
of that code: mypy's strict mode reports an ignore that is no longer needed, so if the API
stopped refusing that mistake, the build would fail."""

from __future__ import annotations

import mcp_asyncio
import mcp_sync
from mcp_core import GetPromptResult, RequestTimeout, Spec, UnknownTool


def on_progress(progress: float, total: float | None, message: str | None) -> None:
    print(progress, total, message)


def wrong_progress(progress: float) -> None:
    print(progress)


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


async def async_checks(client: mcp_asyncio.Client) -> None:
    await client.call_tool("echo", {"message": "hi"}, progress=on_progress)
    await client.call_tool("echo", progress=wrong_progress)  # type: ignore[arg-type]
