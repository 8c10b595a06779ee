# Written twice, by hand (mcp_asyncio/_fanout.py is its twin): a group's work over many clients
# at once is threads here and a task group on the event loop there. What is the same,
# ClientGroup (_group.py), is generated from the anyio driver's: see scripts/unasync.py.
"""One call per client of a ``ClientGroup`` at once, blocking: a thread per call."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from ._client import Client

__all__ = ["TableLock", "all_at_once", "stop_all"]

# Guards a group's name tables: its methods may be called from many threads at once.
TableLock = threading.Lock


def all_at_once(calls: Iterable[Callable[[], object]]) -> None:
    """Run ``calls`` concurrently (the last one in this thread) and return when all have
    returned. The threads are not daemons: an interrupted caller still lets them finish,
    so a stop still removes its processes before the interpreter exits. Each call must catch
    what it means to (an exception in another thread is only printed)."""
    pending = list(calls)
    threads = [threading.Thread(target=call, name="mcp-sync-group") for call in pending[:-1]]
    for thread in threads:
        thread.start()
    try:
        if pending:
            pending[-1]()
    finally:
        for thread in threads:
            thread.join()


def stop_all(clients: Iterable[Client]) -> None:
    """Stop ``clients`` at once; an interrupted caller still lets every stop finish."""
    all_at_once([client.stop for client in clients])
