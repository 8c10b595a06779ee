# Written twice, by hand (mcp_sync/_fanout.py is its twin): a group's work over many clients at
# once is a task group on the event loop here and threads there. What is the same, ClientGroup
# (_group.py), is written once: see scripts/unasync.py.
"""One call per client of a ``ClientGroup`` at once, on anyio: a task group."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

import anyio

from ._client import Client

__all__ = ["TableLock", "all_at_once", "stop_all"]

# What the blocking group guards its name tables with: here every call runs in the one thread
# of the event loop, so there is nothing to lock.
TableLock = contextlib.nullcontext


async def all_at_once(calls: Iterable[Callable[[], Coroutine[Any, Any, object]]]) -> None:
    """Run ``calls`` concurrently, each in a task of its own, and return once all have
    returned; an exception of one cancels the others and is raised (in an exception group)."""
    async with anyio.create_task_group() as tasks:
        for call in calls:
            tasks.start_soon(call)


async def stop_all(clients: Iterable[Client]) -> None:
    """Stop ``clients`` at once; a cancelled caller still waits for them (shielded)."""
    with anyio.CancelScope(shield=True):
        await all_at_once([client.stop for client in clients])
