"""One ClientGroup measurement in a fresh interpreter (bench/run_scaling.py starts it):

    python bench/clients/group_worker.py '<job JSON>'

job: {"driver": "asyncio" | "sync", "servers": S, "argv": [...], "calls": N, "in_flight": C,
"pool_size": P, "queue_limit": Q, "marker": "<text>"}. It builds one `mcp_asyncio.ClientGroup`
or `mcp_sync.ClientGroup` of S stdio servers, each `argv + [marker]` (the marker is an argument
the server ignores, so its processes can be found by command line), and measures:

  start     from entering the group to every server ready (the group's own wait), then
            `list_tools()`, which must name S tools.
  calls     N `call_tool` through the group with C in flight (C workers, asyncio tasks or
            threads, each taking the next ticket): ticket i calls the tool of server i % S
            (round-robin over the namespaced names) with its own text, and counts as
            answered only when that text comes back. One untimed round of S calls first.
  memory    this process's peak RSS (servers excluded) and the servers' summed RSS after the
            calls.
  close     the time to leave the group, then the processes left: this process's children
            (zombies included) and any process whose command line carries the marker.

Prints one JSON object on its last stdout line.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH_DIR.parent))  # the repo root: our packages

Job = dict[str, Any]


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _processes() -> dict[int, tuple[int, str, list[str]]]:
    """pid -> (ppid, state, argv) of every process now in /proc."""
    table: dict[int, tuple[int, str, list[str]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile
            continue
        table[int(entry)] = (int(fields[1]), fields[0], command)
    return table


def left_behind(marker: str) -> list[int]:
    """Children of this process (zombies too: an unreaped child is a leak) and any process
    with the marker as an argument of its own (a server re-parented to init would not be our
    child any more; this worker's job JSON also holds the marker, but inside a larger argument)."""
    me = os.getpid()
    return sorted(
        pid
        for pid, (ppid, _state, command) in _processes().items()
        if pid != me and (ppid == me or marker in command)
    )


def servers_rss_mib(marker: str) -> float:
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid, (_ppid, _state, command) in _processes().items():
        if marker in command and pid != os.getpid():
            try:
                with open(f"/proc/{pid}/statm") as statm:
                    total += int(statm.read().split()[1]) * page
            except OSError:
                continue
    return total / 2**20


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))]


def specs(job: Job) -> dict[str, dict[str, Any]]:
    argv = [*job["argv"], job["marker"]]
    return {
        f"s{i:03d}": {
            "command": argv[0],
            "args": argv[1:],
            "era": "legacy",
            "pool_size": job["pool_size"],
            "queue_limit": job["queue_limit"],
        }
        for i in range(job["servers"])
    }


def text_of(result: Any) -> str | None:
    if result.is_error or not result.content:
        return None
    return getattr(result.content[0], "text", None)


def run_asyncio(job: Job) -> Job:
    import asyncio

    import mcp_asyncio

    n, concurrency = job["calls"], job["in_flight"]

    async def main() -> Job:
        started = time.perf_counter()
        async with mcp_asyncio.ClientGroup(specs(job)) as group:
            ready = time.perf_counter() - started
            names = [tool.name for tool in await group.list_tools()]
            listed = time.perf_counter() - started
            latencies: list[float] = []
            answered = 0

            async def drive(tickets: Any, timed: bool) -> None:
                nonlocal answered
                clock = time.perf_counter
                for i in tickets:
                    text = str(i)
                    begun = clock()
                    result = await group.call_tool(names[i % len(names)], {"text": text})
                    if timed:
                        latencies.append(clock() - begun)
                        answered += text_of(result) == text

            warm = iter(range(len(names)))
            await asyncio.gather(*(drive(warm, False) for _ in range(min(concurrency, 64))))
            tickets = iter(range(n))
            begun = time.perf_counter()
            await asyncio.gather(*(drive(tickets, True) for _ in range(concurrency)))
            elapsed = time.perf_counter() - begun
            servers_rss = servers_rss_mib(job["marker"])
            closing = time.perf_counter()
        closed = time.perf_counter() - closing
        return result_of(
            job, names, ready, listed, elapsed, answered, latencies, servers_rss, closed
        )

    return asyncio.run(main())


def run_sync(job: Job) -> Job:
    import mcp_sync

    n, concurrency = job["calls"], job["in_flight"]
    started = time.perf_counter()
    with mcp_sync.ClientGroup(specs(job)) as group:
        ready = time.perf_counter() - started
        names = [tool.name for tool in group.list_tools()]
        listed = time.perf_counter() - started
        latencies: list[float] = []
        outcomes: list[bool] = []

        def drive(tickets: Any, timed: bool) -> None:
            clock = time.perf_counter
            for i in tickets:  # next() on a range iterator is atomic under the GIL
                text = str(i)
                begun = clock()
                result = group.call_tool(names[i % len(names)], {"text": text})
                if timed:
                    latencies.append(clock() - begun)
                    outcomes.append(text_of(result) == text)

        def in_threads(count: int, tickets: Any, timed: bool) -> None:
            threads = [threading.Thread(target=drive, args=(tickets, timed)) for _ in range(count)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        in_threads(min(concurrency, 64), iter(range(len(names))), False)
        begun = time.perf_counter()
        in_threads(concurrency, iter(range(n)), True)
        elapsed = time.perf_counter() - begun
        servers_rss = servers_rss_mib(job["marker"])
        closing = time.perf_counter()
    closed = time.perf_counter() - closing
    return result_of(
        job, names, ready, listed, elapsed, sum(outcomes), latencies, servers_rss, closed
    )


def result_of(
    job: Job,
    names: list[str],
    ready: float,
    listed: float,
    elapsed: float,
    answered: int,
    latencies: list[float],
    servers_rss: float,
    closed: float,
) -> Job:
    latencies.sort()
    left = left_behind(job["marker"])
    return {
        "driver": job["driver"],
        "servers": job["servers"],
        "tools": len(names),
        "start_ms": ready * 1000,
        "start_and_list_ms": listed * 1000,
        "n": job["calls"],
        "in_flight": job["in_flight"],
        "answered": answered,
        "calls_per_s": job["calls"] / elapsed,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
        "peak_rss_mib": peak_rss_mib(),
        "servers_rss_mib": servers_rss,
        "close_ms": closed * 1000,
        "processes_left": len(left),
        "left_pids": left[:20],
    }


def main() -> None:
    job: Job = json.loads(sys.argv[1])
    result = run_asyncio(job) if job["driver"] == "asyncio" else run_sync(job)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
