"""The in-flight window and the queue: what each costs, to choose their defaults.

    python bench/run_window.py                       calls/s per window, then queue memory
    python bench/run_window.py --n 2000 --repeats 3 --windows 1 4 8 16 32 64

Throughput: one `mcp_asyncio.Client` on bench/servers/min_stdio.py (`--server min`, legacy
era) or tests/servers/py_server.py (`--server sdk`, the official SDK's server), `--n` calls
submitted at once (a queue as large as N, so nothing is refused), for each `pool_size` in
`--windows`; rounds interleaved (window A, B, C, then again) so that drift on the machine
touches every window alike. Prints calls/s per window and round, and the median.

Memory: `tracemalloc` over `--queued` calls queued behind a full window in a bare
`mcp_core.SessionMachine` (no driver, no I/O): bytes held per queued call, arguments
included (one small dict per call, as an agent's calls carry).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "clients"))
SERVERS = {
    "min": [sys.executable, str(ROOT / "bench" / "servers" / "min_stdio.py")],
    "sdk": [sys.executable, str(ROOT / "tests" / "servers" / "py_server.py")],
}
SERVER = SERVERS["min"]


def _client(window: int, queue: int) -> Any:
    """A legacy-era mcp_asyncio client of SERVER with this window and queue."""
    import mcp_asyncio

    return mcp_asyncio.Client(
        name="window",
        command=SERVER[0],
        args=SERVER[1:],
        era="legacy",
        pool_size=window,
        queue_limit=queue,
    )


async def throughput(window: int, n: int) -> float:
    async with _client(window, n) as client:
        for _ in range(50):  # warm-up
            await client.call_tool("echo", {"text": "x"})
        started = time.perf_counter()
        results = await asyncio.gather(
            *(client.call_tool("echo", {"text": str(i)}) for i in range(n))
        )
        elapsed = time.perf_counter() - started
    assert sum(not r.is_error for r in results) == n
    return n / elapsed


def queued_bytes(queued: int, window: int) -> float:
    from worker import _legacy_ready  # type: ignore[import-not-found]

    import mcp_core as core

    spec = core.Spec(
        name="core", command="server", era="legacy", pool_size=window, queue_limit=queued
    )
    machine = core.SessionMachine(spec)
    _legacy_ready(machine, core, 1.0)
    ticket = 0
    for _ in range(window):  # fill the window first: what follows is queued
        ticket += 1
        machine.handle(core.CallTool(now=1.0, ticket=ticket, name="echo", arguments={"t": "x"}))
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    events = [
        core.CallTool(now=1.0, ticket=ticket + i + 1, name="echo", arguments={"text": f"{i}"})
        for i in range(queued)
    ]
    for event in events:
        assert not machine.handle(event)  # queued: nothing written, nothing answered
    del events  # the machine keeps what it needs
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert machine.queued == queued
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return grown / queued


async def driver_bytes(queued: int, window: int) -> tuple[float, int]:
    """Bytes per call with `queued` calls submitted at once on a real client, caller's task
    and coroutine included, taken when every call has been submitted and before answers are
    read (one pass of the loop); returns (bytes per call, calls queued at that moment)."""
    async with _client(window, queued) as client:
        await client.call_tool("echo", {"text": "x"})  # warm every path
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        tasks = [
            asyncio.ensure_future(client.call_tool("echo", {"text": f"{i}"}))
            for i in range(queued + window)
        ]
        await asyncio.sleep(0)
        waiting = client.status().queued
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        await asyncio.gather(*tasks)
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return grown / (queued + window), waiting


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--windows", type=int, nargs="+", default=[1, 4, 8, 16, 32, 64])
    parser.add_argument("--queued", type=int, default=1000)
    parser.add_argument("--server", choices=sorted(SERVERS), default="min")
    args = parser.parse_args()
    global SERVER
    SERVER = SERVERS[args.server]
    rates: dict[int, list[float]] = {w: [] for w in args.windows}
    for _ in range(args.repeats):
        for window in args.windows:
            rates[window].append(asyncio.run(throughput(window, args.n)))
    print(f"calls/s, {args.n} calls submitted at once, {args.server}, mcp_asyncio on asyncio")
    for window, values in rates.items():
        shown = " ".join(f"{v:7.0f}" for v in values)
        print(f"  pool_size={window:3d}: {shown}   median {statistics.median(values):7.0f}")
    per_call = queued_bytes(args.queued, 8)
    print(f"core: {per_call:.0f} bytes per queued call ({args.queued} queued behind 8 in flight)")
    per_task, waiting = asyncio.run(driver_bytes(args.queued, 8))
    print(
        f"mcp_asyncio: {per_task:.0f} bytes per call submitted ({waiting} queued at the"
        " snapshot), the caller's task and coroutine included"
    )


if __name__ == "__main__":
    main()
