"""A real peer for the Tasks extension `io.modelcontextprotocol/tasks` of MCP 2026-07-28
(SEP-2663), built with FastMCP 4.1.4 and its `fastmcp-tasks` package (in-memory Docket backend,
no Redis).

It runs with the peer venv's interpreter, not the project's: fastmcp-tasks pins fastmcp-slim
4.1.4, which the project's own venv cannot hold next to its fastmcp 4.2. `make test` creates that
venv (.venv-tasks, from tests/servers/requirements-tasks.txt).

Run:
  .venv-tasks/bin/python tests/servers/fastmcp_tasks_server.py
      newline-delimited JSON-RPC on stdin/stdout; exits (status 0) as soon as stdin closes, even
      with tasks still running
  .venv-tasks/bin/python tests/servers/fastmcp_tasks_server.py --http
      Streamable HTTP: binds 127.0.0.1 on a port the OS picks, prints one line
      `listening http://127.0.0.1:PORT/mcp` and serves until SIGTERM or SIGINT
Options:
  --poll-interval-ms N   the pollIntervalMs of every task (default 50; FastMCP's own is 5000)
  --ttl-ms N             the ttlMs of every task (default 900000, Docket's execution TTL); past
                         it a task's record expires and tasks/get answers -32602

The extension exists only at 2026-07-28: a client declares it per request in
`_meta["io.modelcontextprotocol/clientCapabilities"].extensions`. Tools ("task" = runs as a task
when called with the extension declared; "required" = without it the call is refused, -32021):
  sync_echo(text)               never a task: a plain result, text = `text`
  quick_task(text)              required; after ~0.3 s completes with text "quick: <text>"
  optional_task(text)           optional: a task when declared, else a plain result; text
                                "optional: <text>"
  staged_task(stages, delay_ms) required; for each stage i = 1..stages sets the status message
                                "stage i/stages" (seen as statusMessage while working), waits
                                delay_ms, then completes with text "staged: <stages> stages"
  failing_task()                required; raises a tool error: the task ends `completed` with a
                                result whose isError is true (text "failing_task failed on
                                purpose")
  erroring_task()               required; raises a JSON-RPC error (code -32603): the task ends
                                `failed` with that error
  forever_task()                required; runs until cancelled (tasks/cancel -> `cancelled`)
  ask_task(question)            required; goes `input_required` with one elicitation/create input
                                request (a form with one string field "answer"); after
                                tasks/update answers it, completes with text
                                "answer: <answer>" (or "declined" / "cancelled" for those
                                actions)
  die_task(delay_ms)            required; delay_ms (default 200) after it starts the whole
                                server process exits (os._exit(3)): a server that dies mid-task
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp.shared.exceptions import MCPError

ASK_KEY = "answer"


class TunedTasksExtension(TasksExtension):
    """TasksExtension whose Docket keeps task records for `ttl` (the ttlMs of every task), and
    whose server process exits as soon as its session ends (stdin EOF on stdio): Docket's worker
    would otherwise wait there for every running task (forever_task: forever), so a client that
    closes stdin would always have to escalate to signals."""

    def __init__(self, ttl: timedelta) -> None:
        super().__init__()
        self._ttl = ttl

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with super().lifespan():
            # Set by the lifespan just entered (FastMCP annotates the attribute as None).
            docket: Any = self.server._docket
            if docket is not None:
                docket.execution_ttl = self._ttl
            try:
                yield
            finally:
                sys.stdout.flush()
                os._exit(0)


def build_server(poll_interval: timedelta, ttl: timedelta) -> FastMCP:
    mcp = FastMCP("fastmcp-tasks-peer", version="1")
    mcp.add_extension(TunedTasksExtension(ttl))
    required = TaskConfig(mode="required", poll_interval=poll_interval)
    optional = TaskConfig(mode="optional", poll_interval=poll_interval)

    @mcp.tool
    async def sync_echo(text: str) -> str:
        """Echo `text` back, never as a task."""
        return text

    @mcp.tool(task=required)
    async def quick_task(text: str) -> str:
        """A task that completes after about 0.3 s."""
        await asyncio.sleep(0.3)
        return f"quick: {text}"

    @mcp.tool(task=optional)
    async def optional_task(text: str) -> str:
        """A task when the client declared the extension, a plain call otherwise."""
        await asyncio.sleep(0.1)
        return f"optional: {text}"

    @mcp.tool(task=required)
    async def staged_task(stages: int, delay_ms: int, ctx: Context) -> str:
        """A task that reports "stage i/stages" as its status message at each stage."""
        for stage in range(1, stages + 1):
            await ctx.report_progress(stage, stages, f"stage {stage}/{stages}")
            await asyncio.sleep(delay_ms / 1000)
        return f"staged: {stages} stages"

    @mcp.tool(task=required)
    async def failing_task() -> str:
        """A task whose tool raises: it completes with an isError result."""
        raise ToolError("failing_task failed on purpose")

    @mcp.tool(task=required)
    async def erroring_task() -> str:
        """A task that raises a JSON-RPC error: it ends `failed`."""
        raise MCPError(code=mcp_types.INTERNAL_ERROR, message="erroring_task failed on purpose")

    @mcp.tool(task=required)
    async def forever_task() -> str:
        """A task that only ends when cancelled."""
        while True:
            await asyncio.sleep(3600)

    @mcp.tool(task=required)
    async def ask_task(question: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
        """A task that asks the client (elicitation) and returns the answer."""
        responses = ctx.input_responses
        if not responses or ASK_KEY not in responses:
            schema = {
                "type": "object",
                "properties": {"answer": {"type": "string", "description": question}},
                "required": ["answer"],
            }
            request = mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(message=question, requested_schema=schema)
            )
            return mcp_types.InputRequiredResult(input_requests={ASK_KEY: request})
        answer = responses[ASK_KEY]
        assert isinstance(answer, mcp_types.ElicitResult), answer
        if answer.action != "accept":
            return f"{answer.action}d" if answer.action == "decline" else answer.action
        return f"answer: {(answer.content or {}).get('answer')}"

    @mcp.tool(task=required)
    async def die_task(delay_ms: int = 200) -> str:
        """A task during which the server process exits."""
        await asyncio.sleep(delay_ms / 1000)
        sys.stdout.flush()
        os._exit(3)

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http", action="store_true", help="Streamable HTTP instead of stdio")
    parser.add_argument("--poll-interval-ms", type=int, default=50)
    parser.add_argument("--ttl-ms", type=int, default=900_000)
    args = parser.parse_args()
    server = build_server(
        timedelta(milliseconds=args.poll_interval_ms), timedelta(milliseconds=args.ttl_ms)
    )
    if not args.http:
        server.run("stdio", show_banner=False, log_level="WARNING")
        return
    # We bind, so the OS picks a free port and nobody can take it between choice and bind.
    # IPPROTO_TCP explicitly: asyncio enables TCP_NODELAY only on sockets made as TCP.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    print(f"listening http://127.0.0.1:{port}/mcp", flush=True)
    server.run(
        "http",
        show_banner=False,
        log_level="WARNING",
        host="127.0.0.1",
        port=port,
        path="/mcp",
        sockets=[sock],
    )


if __name__ == "__main__":
    main()
