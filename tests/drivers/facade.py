"""One awaitable face over both drivers, so one scenario table runs against each.

``asyncio`` and ``trio`` run ``mcp_asyncio.Client`` on that backend; ``sync`` runs
``mcp_sync.Client`` and calls each blocking method in a worker thread, so scenarios can start
concurrent callers the same way for every driver. The client itself never sees an event loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

import mcp_asyncio
import mcp_core as core
import mcp_sync

DRIVERS = ["asyncio", "trio", "sync"]


class Facade:
    def __init__(self, driver: str, /, **fields: Any) -> None:
        self.driver = driver
        fields.setdefault("name", "t")
        if driver == "sync":
            self.sync: mcp_sync.Client | None = mcp_sync.Client(**fields)
            self.aio: mcp_asyncio.Client | None = None
        else:
            self.sync = None
            self.aio = mcp_asyncio.Client(**fields)

    async def _run(self, method: str, *args: Any, **kw: Any) -> Any:
        if self.aio is not None:
            return await getattr(self.aio, method)(*args, **kw)
        assert self.sync is not None
        call: Callable[[], Any] = functools.partial(getattr(self.sync, method), *args, **kw)
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)

    async def __aenter__(self) -> Facade:
        if self.aio is not None:
            await self.aio.__aenter__()
        else:
            assert self.sync is not None
            await anyio.to_thread.run_sync(self.sync.__enter__)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.aio is not None:
            await self.aio.__aexit__(None, None, None)
        else:
            assert self.sync is not None
            await anyio.to_thread.run_sync(self.sync.__exit__, None, None, None)

    async def start(self) -> None:
        await self._run("start")

    async def stop(self) -> None:
        await self._run("stop")

    async def await_ready(self, timeout: float = 60.0) -> core.Status:
        result: core.Status = await self._run("await_ready", timeout)
        return result

    async def list_tools(self, **kw: Any) -> list[core.Tool]:
        result: list[core.Tool] = await self._run("list_tools", **kw)
        return result

    async def call_tool(self, name: str, arguments: Any = None, **kw: Any) -> core.CallToolResult:
        result: core.CallToolResult = await self._run("call_tool", name, arguments, **kw)
        return result

    def status(self) -> core.Status:
        client = self.aio if self.aio is not None else self.sync
        assert client is not None
        return client.status()

    async def start_tool(self, name: str, arguments: Any = None, **kw: Any) -> FacadeTask:
        return FacadeTask(await self._run("start_tool", name, arguments, **kw))

    def task(self, task_id: str) -> FacadeTask:
        client = self.aio if self.aio is not None else self.sync
        assert client is not None
        return FacadeTask(client.task(task_id))

    async def list_tasks(self, **kw: Any) -> list[core.TaskStatus]:
        result: list[core.TaskStatus] = await self._run("list_tasks", **kw)
        return result


class FacadeTask:
    """A task handle of either driver, awaited the same way."""

    def __init__(self, task: mcp_asyncio.Task | mcp_sync.Task) -> None:
        self.handle = task

    @property
    def id(self) -> str | None:
        return self.handle.id

    async def _run(self, method: str, **kw: Any) -> Any:
        if isinstance(self.handle, mcp_asyncio.Task):
            return await getattr(self.handle, method)(**kw)
        call: Callable[[], Any] = functools.partial(getattr(self.handle, method), **kw)
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)

    async def status(self, **kw: Any) -> core.TaskStatus:
        result: core.TaskStatus = await self._run("status", **kw)
        return result

    async def result(self, **kw: Any) -> core.CallToolResult:
        result: core.CallToolResult = await self._run("result", **kw)
        return result

    async def cancel(self, **kw: Any) -> core.TaskStatus | None:
        result: core.TaskStatus | None = await self._run("cancel", **kw)
        return result


async def gather(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls concurrently; each result is the value or the exception raised."""
    results: list[Any] = [None] * len(calls)

    async def one(i: int, call: Callable[[], Any]) -> None:
        try:
            results[i] = await call()
        except core.McpError as exc:
            results[i] = exc

    async with anyio.create_task_group() as tg:
        for i, call in enumerate(calls):
            tg.start_soon(one, i, call)
    return results
