"""One measurement in a fresh interpreter: `python bench/clients/worker.py '<job JSON>'`.

`bench/run_stdio.py` starts one worker per (client, server, repeat) so that each client's peak
RSS is its own and no library imported for one client is resident while another is measured.
A worker imports only the client it measures (lazily, inside the adapter), runs the job and
prints one JSON object on its last stdout line. Its server's stdout is a pipe, never ours.

Modes (job["mode"]):
  stdio     cold start (spawn to tools listed), a warm-up, then for each concurrency C: N calls
            with C in flight (C workers, each calling in a loop), latency of every call; then
            the process's peak RSS (ru_maxrss of this process only: children are excluded);
            then the start of a second client in the same process (lazy imports paid).
  sessions  S real sessions open at once in this process (each with its own server process);
            the growth of this process's RSS over one warm session, per session.
  flood     N calls submitted at once on one client; peak RSS and how many were answered.
  core      mcp_core alone: N calls through SessionMachine from events and bytes to actions.
  machines  S SessionMachines brought to ready without I/O; RSS growth per machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH_DIR.parent))  # the repo root: `bench.clients.*` and our packages

# Ours get a window as large as the widest concurrency and a queue behind it big enough for
# every call the job submits at once, so no call is refused with Busy.
WINDOW_FLOOR = 256

Job = dict[str, Any]


def peak_rss_mib() -> float:
    """Peak resident set of this process alone (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


def summary(concurrency: int, n: int, ok: int, elapsed: float, latencies: list[float]) -> Job:
    latencies.sort()
    return {
        "concurrency": concurrency,
        "n": n,
        "answered": ok,
        "errors": n - ok,
        "calls_per_s": n / elapsed,
        "p50_ms": percentile(latencies, 0.50) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


# --- adapters: open (spawn to tools listed), call once (True when answered, not an error),
# close. Each imports its library only when built, so the worker holds only the one measured.


class AsyncAdapter:
    def __init__(self, job: Job) -> None:
        raise NotImplementedError

    async def open(self) -> int:
        raise NotImplementedError

    async def call(self) -> bool:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class SyncAdapter:
    def __init__(self, job: Job) -> None:
        raise NotImplementedError

    def open(self) -> int:
        raise NotImplementedError

    def call(self) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class OursAsyncio(AsyncAdapter):
    def __init__(self, job: Job) -> None:
        import mcp_asyncio

        argv = job["argv"]
        self.client = mcp_asyncio.Client(
            name="bench",
            command=argv[0],
            args=argv[1:],
            era=job.get("era", "legacy"),
            pool_size=job["window"],
            queue_limit=job["queue"],
        )
        self.tool, self.arguments = job["tool"], job["arguments"]

    async def open(self) -> int:
        await self.client.__aenter__()
        return len(await self.client.list_tools())

    async def call(self) -> bool:
        return not (await self.client.call_tool(self.tool, self.arguments)).is_error

    async def close(self) -> None:
        await self.client.__aexit__(None, None, None)


class OursSync(SyncAdapter):
    def __init__(self, job: Job) -> None:
        import mcp_sync

        argv = job["argv"]
        self.client = mcp_sync.Client(
            name="bench",
            command=argv[0],
            args=argv[1:],
            era=job.get("era", "legacy"),
            pool_size=job["window"],
            queue_limit=job["queue"],
        )
        self.tool, self.arguments = job["tool"], job["arguments"]

    def open(self) -> int:
        self.client.__enter__()
        return len(self.client.list_tools())

    def call(self) -> bool:
        return not self.client.call_tool(self.tool, self.arguments).is_error

    def close(self) -> None:
        self.client.__exit__(None, None, None)


class Sdk(AsyncAdapter):
    """The official SDK as its README shows it: stdio_client + ClientSession (legacy
    initialize), server stderr to /dev/null like the raw clients."""

    def __init__(self, job: Job) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        argv = job["argv"]
        self.params = StdioServerParameters(command=argv[0], args=argv[1:])
        self.stdio_client, self.session_type = stdio_client, ClientSession
        self.tool, self.arguments = job["tool"], job["arguments"]
        self.stack = AsyncExitStack()

    async def open(self) -> int:
        errlog = self.stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115
        read, write = await self.stack.enter_async_context(self.stdio_client(self.params, errlog))
        self.session = await self.stack.enter_async_context(self.session_type(read, write))
        await self.session.initialize()
        return len((await self.session.list_tools()).tools)

    async def call(self) -> bool:
        result = await self.session.call_tool(self.tool, self.arguments)
        return not getattr(result, "is_error", True)

    async def close(self) -> None:
        await self.stack.aclose()


class FastMcp(AsyncAdapter):
    def __init__(self, job: Job) -> None:
        from fastmcp import Client
        from fastmcp.client.transports import StdioTransport

        argv = job["argv"]
        self.errlog = open(os.devnull, "w")  # noqa: SIM115
        transport = StdioTransport(argv[0], argv[1:], keep_alive=False, log_file=self.errlog)
        self.client = Client(transport, mode="legacy")
        self.tool, self.arguments = job["tool"], job["arguments"]

    async def open(self) -> int:
        await self.client.__aenter__()  # type: ignore[no-untyped-call]
        return len(await self.client.list_tools())

    async def call(self) -> bool:
        result = await self.client.call_tool(self.tool, self.arguments, raise_on_error=False)
        return not result.is_error

    async def close(self) -> None:
        await self.client.__aexit__(None, None, None)  # type: ignore[no-untyped-call]
        self.errlog.close()


class RawAsyncio(AsyncAdapter):
    def __init__(self, job: Job) -> None:
        from bench.clients.raw_asyncio import RawAsyncioClient

        self.client = RawAsyncioClient(job["argv"])
        self.tool, self.arguments = job["tool"], job["arguments"]

    async def open(self) -> int:
        return len(await self.client.start())

    async def call(self) -> bool:
        return not (await self.client.call_tool(self.tool, self.arguments)).get("isError")

    async def close(self) -> None:
        await self.client.close()


class RawBlocking(SyncAdapter):
    def __init__(self, job: Job) -> None:
        from bench.clients.raw_blocking import RawBlockingClient

        # One pipe read by whoever asks next: answers would go to the wrong thread.
        assert max(job.get("concurrency", [1])) == 1, "raw-blocking is sequential only"

        self.client = RawBlockingClient(job["argv"])
        self.tool, self.arguments = job["tool"], job["arguments"]

    def open(self) -> int:
        return len(self.client.start())

    def call(self) -> bool:
        return not self.client.call_tool(self.tool, self.arguments).get("isError")

    def close(self) -> None:
        self.client.close()


ADAPTERS: dict[str, type[AsyncAdapter] | type[SyncAdapter]] = {
    "ours-asyncio": OursAsyncio,
    "ours-sync": OursSync,
    "sdk": Sdk,
    "fastmcp": FastMcp,
    "raw-asyncio": RawAsyncio,
    "raw-blocking": RawBlocking,
}


# --- drivers: N calls with C in flight, the same loop for every client ---


async def drive_async(call: Callable[[], Awaitable[bool]], n: int, concurrency: int) -> Job:
    tickets = iter(range(n))  # shared: each worker takes the next call until none is left
    latencies: list[float] = []
    answered = 0

    async def worker() -> None:
        nonlocal answered
        clock = time.perf_counter
        for _ in tickets:
            started = clock()
            ok = await call()
            latencies.append(clock() - started)
            answered += ok

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return summary(concurrency, n, answered, time.perf_counter() - started, latencies)


def drive_sync(call: Callable[[], bool], n: int, concurrency: int) -> Job:
    tickets = iter(range(n))  # next() on a range iterator is atomic under the GIL
    latencies: list[float] = []
    results: list[bool] = []

    def worker() -> None:
        clock = time.perf_counter
        for _ in tickets:
            begun = clock()
            ok = call()
            latencies.append(clock() - begun)
            results.append(ok)

    started = time.perf_counter()
    if concurrency == 1:
        worker()
    else:
        threads = [threading.Thread(target=worker) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return summary(concurrency, n, sum(results), time.perf_counter() - started, latencies)


# --- modes ---


def run_stdio(job: Job) -> Job:
    adapter = ADAPTERS[job["client"]](job)
    if isinstance(adapter, SyncAdapter):
        return stdio_sync(adapter, job)
    return asyncio.run(stdio_async(adapter, job))


async def stdio_async(adapter: AsyncAdapter, job: Job) -> Job:
    started = time.perf_counter()
    tools = await adapter.open()
    cold = time.perf_counter() - started
    try:
        await drive_async(adapter.call, job["warmup"], 1)
        runs = [await drive_async(adapter.call, job["n"], c) for c in job["concurrency"]]
    finally:
        await adapter.close()
    # The same again with a second client: what lazy imports and first-use setup cost the
    # first start is paid once per process; this is the start every later session sees.
    second = type(adapter)(job)
    started = time.perf_counter()
    await second.open()
    again = time.perf_counter() - started
    await second.close()
    return {
        "cold_start_ms": cold * 1000,
        "second_start_ms": again * 1000,
        "tools": tools,
        "runs": runs,
        "peak_rss_mib": peak_rss_mib(),
    }


def stdio_sync(adapter: SyncAdapter, job: Job) -> Job:
    started = time.perf_counter()
    tools = adapter.open()
    cold = time.perf_counter() - started
    try:
        drive_sync(adapter.call, job["warmup"], 1)
        runs = [drive_sync(adapter.call, job["n"], c) for c in job["concurrency"]]
    finally:
        adapter.close()
    second = type(adapter)(job)  # as in stdio_async
    started = time.perf_counter()
    second.open()
    again = time.perf_counter() - started
    second.close()
    return {
        "cold_start_ms": cold * 1000,
        "second_start_ms": again * 1000,
        "tools": tools,
        "runs": runs,
        "peak_rss_mib": peak_rss_mib(),
    }


def run_sessions(job: Job) -> Job:
    """RSS growth per open session, over a baseline with one session opened and closed (so
    lazy imports and first-use caches are paid before the baseline)."""
    kind = ADAPTERS[job["client"]]
    count = job["sessions"]
    if issubclass(kind, SyncAdapter):
        warm = kind(job)
        warm.open()
        warm.call()
        warm.close()
        baseline = current_rss_mib()
        sessions = [kind(job) for _ in range(count)]
        try:
            for session in sessions:
                session.open()
            answered = sum(session.call() for session in sessions)
            grown = current_rss_mib()
        finally:
            for session in sessions:
                session.close()
    else:

        async def main() -> tuple[float, float, int]:
            warm = kind(job)
            await warm.open()
            await warm.call()
            await warm.close()
            baseline = current_rss_mib()
            sessions = [kind(job) for _ in range(count)]
            try:
                for session in sessions:
                    await session.open()
                answered = sum([await session.call() for session in sessions])
                grown = current_rss_mib()
            finally:
                # Reverse order: the SDK's and FastMCP's task groups must exit LIFO.
                for session in reversed(sessions):
                    await session.close()
            return baseline, grown, answered

        baseline, grown, answered = asyncio.run(main())
    return {
        "sessions": count,
        "answered": answered,
        "kib_per_session": (grown - baseline) * 1024 / count,
        "peak_rss_mib": peak_rss_mib(),
    }


def run_flood(job: Job) -> Job:
    """N calls submitted at once on one client (async clients only)."""
    kind = ADAPTERS[job["client"]]
    assert issubclass(kind, AsyncAdapter), "flood needs an async client"

    async def main() -> Job:
        adapter = kind(job)
        await adapter.open()
        try:
            await drive_async(adapter.call, job["warmup"], 1)
            baseline = current_rss_mib()
            run = await drive_async(adapter.call, job["n"], job["n"])
            grown = peak_rss_mib()
        finally:
            await adapter.close()
        return {**run, "baseline_rss_mib": baseline, "peak_rss_mib": grown}

    return asyncio.run(main())


def _legacy_ready(machine: Any, core: Any, now: float) -> int:
    """Connect a machine and answer its handshake as a legacy server; returns the next id."""
    machine.handle(core.Connect(now=now))
    written = machine.handle(core.ProcessSpawned(now=now, slot=0, generation=1, pid=1))
    request_id = 0
    for _ in range(4):  # initialize, then tools/list (if the machine lists eagerly)
        requests = [
            json.loads(a.data)
            for a in written
            if isinstance(a, core.WriteStdin) and b'"id"' in a.data
        ]
        if not requests:
            break
        written = []
        for request in requests:
            request_id = max(request_id, request["id"])
            method = request["method"]
            if method == "initialize":
                result: Job = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "min", "version": "1"},
                }
            elif method == "tools/list":
                result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
            else:
                continue
            line = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
            written += machine.handle(
                core.StdoutReceived(now=now, slot=0, generation=1, data=line.encode() + b"\n")
            )
    assert machine.state == "ready", machine.state
    return request_id


def run_core(job: Job) -> Job:
    """Calls per second through the machine alone: CallTool events in, WriteStdin bytes out;
    answers fed back as StdoutReceived chunks of about `chunk` bytes, Reply actions out.

    Work is fed in rounds of `window` calls (the window the drivers use at 256 in flight).
    Only `machine.handle` is timed; decoding the written requests to build the answers (the
    server's job) is not.
    """
    import mcp_core as core

    n, window, chunk = job["n"], job["window"], job["chunk"]
    spec = core.Spec(name="core", command="server", era="legacy", pool_size=window)
    machine = core.SessionMachine(spec)
    now = 1.0
    _legacy_ready(machine, core, now)
    arguments = {"text": "hello"}
    ticket = 0
    replies = 0
    request_s = answer_s = 0.0  # the two halves of handle()'s time (bench/core_halves.py)
    clock = time.perf_counter
    while ticket < n:
        round_size = min(window, n - ticket)
        calls = [
            core.CallTool(now=now, ticket=ticket + i + 1, name="echo", arguments=arguments)
            for i in range(round_size)
        ]
        ticket += round_size
        written: list[Any] = []
        started = clock()
        for call in calls:
            written += machine.handle(call)
        request_s += clock() - started
        answers = b"".join(
            b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hello"}]}}\n'
            % json.loads(action.data)["id"]
            for action in written
            if isinstance(action, core.WriteStdin)
        )
        chunks = [
            core.StdoutReceived(now=now, slot=0, generation=1, data=answers[i : i + chunk])
            for i in range(0, len(answers), chunk)
        ]
        started = clock()
        for event in chunks:
            for action in machine.handle(event):
                replies += type(action) is core.Reply and action.error is None
        answer_s += clock() - started
    elapsed = request_s + answer_s
    return {
        "n": n,
        "answered": replies,
        "calls_per_s": n / elapsed,
        "msgs_per_s": 2 * n / elapsed,
        "request_us": request_s / n * 1e6,
        "answer_us": answer_s / n * 1e6,
        "peak_rss_mib": peak_rss_mib(),
    }


def run_machines(job: Job) -> Job:
    """RSS growth per SessionMachine brought to ready (no I/O, no driver)."""
    import mcp_core as core

    count = job["sessions"]
    spec = core.Spec(name="idle", command="server", era="legacy")
    _legacy_ready(core.SessionMachine(spec), core, 1.0)  # warm every code path first
    baseline = current_rss_mib()
    machines = [core.SessionMachine(spec) for _ in range(count)]
    for machine in machines:
        _legacy_ready(machine, core, 1.0)
    grown = current_rss_mib()
    return {
        "sessions": count,
        "answered": sum(m.state == "ready" for m in machines),
        "kib_per_session": (grown - baseline) * 1024 / count,
    }


MODES: dict[str, Callable[[Job], Job]] = {
    "stdio": run_stdio,
    "sessions": run_sessions,
    "flood": run_flood,
    "core": run_core,
    "machines": run_machines,
}


def main() -> None:
    job: Job = json.loads(sys.argv[1])
    window = max([WINDOW_FLOOR, *job.get("concurrency", [])])
    job.setdefault("window", window)
    job.setdefault("queue", max(job.get("n", 0), window))
    result = MODES[job["mode"]](job)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
