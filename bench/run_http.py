"""HTTP benchmarks (issue 4): tools/call rates and latencies over Streamable HTTP.

    python bench/run_http.py                 the full run: every server, client and concurrency
    python bench/run_http.py --n 500 --servers min-http --clients ours-asyncio,raw-h11
    python bench/run_http.py --smoke         a tiny run, printed, nothing written

Servers (each started once, on 127.0.0.1, for all the runs against it):
  sdk-http      the official SDK's Streamable HTTP server, stateless with JSON answers: the
                fastest mode of that server (no session lookup, no SSE framing, no event task
                per answer). Served by this file itself (`--serve-sdk`), with the echo tool of
                tests/servers/py_server.py.
  sdk-http-sse  the official SDK's server in its default mode: sessions, every answer an SSE
                stream (as tests/servers/py_http_server.py stateful), also served by this file.
  min-http      bench/servers/min_http.py: a few dozen lines of asyncio, JSON answers, so that
                the client is what is measured.
Clients (each run is a fresh subprocess: `--client NAME --url URL --n N --concurrency K`):
  ours-asyncio  mcp_asyncio.Client; tasks for concurrency
  ours-sync     mcp_sync.Client; threads for concurrency
  sdk           the official SDK's `mcp.Client(url)` (its streamable HTTP client); tasks
  raw-h11       bench/clients/raw_h11.py: h11 + asyncio streams, a pool of up to K connections
Every client speaks the legacy era (initialize, session id, then tools/call POSTs), so all four
send the same requests to the same server: ours with era="legacy", the SDK with mode="legacy"
(with "auto" both would take the SDK server's modern path, which raw-h11 does not speak).
Legacy HTTP defaults to `serialized` in our client (one call in flight), so ours runs with
concurrency="stateless", pool_size=256 and a queue that never fills: the window is not the limit.

Each measurement is closed-loop: K workers, each calling `echo` again as soon as its previous
call is answered, until N calls were answered; every answer is checked (its text is the one
sent). Before the timed calls each client makes a few untimed ones (connections opened,
caches warm). Order: for each server and K, repeat 3 times: every client in turn (A B C D
A B C D ...); report.py takes the median of the 3 repeats.

Records go to bench/results/http-<run_id>.jsonl, in the shared format of /work/notes/bench.md
(suite "http"); `extra.answered` is the number of calls answered with the right text.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import itertools
import json
import math
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
SERVERS = ("sdk-http", "min-http", "sdk-http-sse")
# The official SDK's server: label -> (json_response, stateless_http).
SDK_MODES = {"sdk-http": (True, True), "sdk-http-sse": (False, False)}
CLIENTS = ("ours-asyncio", "ours-sync", "sdk", "raw-h11")
CONCURRENCIES = (1, 16, 256)
REPEATS = 3
DEFAULT_N = 3000
# Our client's window, for every K: large enough that admission never waits (see the docstring).
OURS_POOL = 256
OURS_QUEUE = 100_000
WORKER_DEADLINE = 900.0  # one client run; a hung one fails the run instead of stalling it
SERVER_DEADLINE = 30.0

_LISTENING = re.compile(r"^listening (http://127\.0\.0\.1:\d+/\S*)$")

if str(ROOT) not in sys.path:  # `python bench/run_http.py` puts bench/ first, not the repo
    sys.path.insert(0, str(ROOT))


# --- the client side: one subprocess per (client, K) run ----------------------------------------

Call = Callable[[int], Awaitable[str]]


async def _closed_loop(call: Call, n: int, workers: int) -> tuple[float, list[float], int]:
    """(elapsed s, latencies s, answered): `workers` tasks making `n` calls in all."""
    latencies: list[float] = []
    answered = 0
    numbers = iter(range(n))  # shared: each worker takes the next call number

    async def worker() -> None:
        nonlocal answered
        for i in numbers:
            start = time.perf_counter()
            text = await call(i)
            latencies.append(time.perf_counter() - start)
            if text == f"c{i}":
                answered += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return time.perf_counter() - start, latencies, answered


def _closed_loop_threads(
    call: Callable[[int], str], n: int, workers: int
) -> tuple[float, list[float], int]:
    """The same with threads: `workers` threads making `n` calls in all."""
    latencies: list[float] = []
    answered = [0]
    lock = threading.Lock()
    numbers = iter(range(n))
    failures: list[BaseException] = []
    ready = threading.Barrier(workers + 1)

    def worker() -> None:
        ready.wait()
        while True:
            with lock:
                i = next(numbers, None)
            if i is None:
                return
            start = time.perf_counter()
            try:
                text = call(i)
            except BaseException as exc:  # reported by the main thread
                failures.append(exc)
                return
            latency = time.perf_counter() - start
            with lock:
                latencies.append(latency)
                answered[0] += text == f"c{i}"

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    ready.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if failures:
        raise failures[0]
    return elapsed, latencies, answered[0]


def _warmup_calls(workers: int, smoke: bool) -> int:
    """Untimed calls first: every connection opened, every lazy import and cache done."""
    return 0 if smoke else max(2 * workers, 50)


def _ours_fields(url: str) -> dict[str, Any]:
    return {
        "name": "bench",
        "url": url,
        "era": "legacy",
        "concurrency": "stateless",
        "pool_size": OURS_POOL,
        "queue_limit": OURS_QUEUE,
    }


async def _run_ours_asyncio(url: str, n: int, workers: int, warmup: int) -> tuple[Any, ...]:
    import mcp_asyncio

    async with mcp_asyncio.Client(**_ours_fields(url)) as client:

        async def call(i: int) -> str:
            return (await client.call_tool("echo", {"text": f"c{i}"})).text

        await _closed_loop(call, warmup, workers)
        return await _closed_loop(call, n, workers)


def _run_ours_sync(url: str, n: int, workers: int, warmup: int) -> tuple[Any, ...]:
    import mcp_sync

    with mcp_sync.Client(**_ours_fields(url)) as client:

        def call(i: int) -> str:
            return client.call_tool("echo", {"text": f"c{i}"}).text

        _closed_loop_threads(call, warmup, workers)
        return _closed_loop_threads(call, n, workers)


async def _run_sdk(url: str, n: int, workers: int, warmup: int) -> tuple[Any, ...]:
    import mcp

    async with mcp.Client(url, mode="legacy") as client:

        async def call(i: int) -> str:
            result = await client.call_tool("echo", {"text": f"c{i}"})
            block = result.content[0]
            return block.text if block.type == "text" else ""

        await _closed_loop(call, warmup, workers)
        return await _closed_loop(call, n, workers)


async def _run_raw_h11(url: str, n: int, workers: int, warmup: int) -> tuple[Any, ...]:
    from bench.clients.raw_h11 import RawH11Client

    async with RawH11Client(url, max_connections=workers) as client:

        async def call(i: int) -> str:
            result = await client.call_tool("echo", {"text": f"c{i}"})
            return str(result["content"][0]["text"])

        await _closed_loop(call, warmup, workers)
        return await _closed_loop(call, n, workers)


def run_client(client: str, url: str, n: int, workers: int, warmup: int) -> dict[str, Any]:
    """One measurement in this process: what the worker subprocess prints."""
    if client == "ours-sync":
        elapsed, latencies, answered = _run_ours_sync(url, n, workers, warmup)
    else:
        runner = {
            "ours-asyncio": _run_ours_asyncio,
            "sdk": _run_sdk,
            "raw-h11": _run_raw_h11,
        }[client]
        elapsed, latencies, answered = asyncio.run(runner(url, n, workers, warmup))
    latencies_ms = sorted(latency * 1000 for latency in latencies)
    return {
        "answered": answered,
        "elapsed_s": elapsed,
        "calls_per_s": n / elapsed,
        "p50_ms": statistics.median(latencies_ms),
        "p99_ms": latencies_ms[max(0, math.ceil(0.99 * len(latencies_ms)) - 1)],
    }


# --- the servers ---------------------------------------------------------------------------------


def serve_sdk(mode: str) -> None:
    """The official SDK's server with the echo tool of tests/servers/py_server.py, in `mode`
    (see SDK_MODES), on a port the OS picks; prints the line `running_server` waits for."""
    import uvicorn

    sys.path.insert(0, str(ROOT / "tests" / "servers"))
    from py_server import server

    json_response, stateless = SDK_MODES[mode]
    app = server.streamable_http_app(json_response=json_response, stateless_http=stateless)
    # We bind, so the port is ours before we print it. IPPROTO_TCP is named on purpose: asyncio
    # sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP, and accepted sockets inherit
    # the listener's. With proto 0 (socket.socket()'s default) Nagle holds uvicorn's body
    # segment behind its head segment until the client's delayed ACK: ~44 ms per keep-alive call.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(f"listening http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1, backlog=1024)
    uvicorn.Server(config).run(sockets=[sock])


def _server_argv(server: str) -> list[str]:
    if server in SDK_MODES:
        return [sys.executable, str(Path(__file__).resolve()), "--serve-sdk", server]
    if server == "min-http":
        return [sys.executable, str(BENCH / "servers" / "min_http.py")]
    raise ValueError(f"unknown server {server!r}")


@contextmanager
def running_server(server: str) -> Iterator[str]:
    """The server's URL while it runs; stopped (its process group) afterwards."""
    from tests.servers.http_peers import HttpPeer

    def ready(line: str) -> str | None:
        match = _LISTENING.match(line)
        return match.group(1) if match else None

    peer = HttpPeer(_server_argv(server), ready, dict(os.environ))
    try:
        yield peer.wait_ready(SERVER_DEADLINE)
    finally:
        peer.stop()


# --- the run -------------------------------------------------------------------------------------


def _measure(client: str, url: str, n: int, workers: int, smoke: bool) -> dict[str, Any]:
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--client",
        client,
        "--url",
        url,
        "--n",
        str(n),
        "--concurrency",
        str(workers),
    ]
    if smoke:
        argv.append("--smoke")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=WORKER_DEADLINE, env=env, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{client} against {url} (K={workers}) failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _records(
    base: dict[str, Any],
    client: str,
    server: str,
    workers: int,
    n: int,
    repeat: int,
    result: dict[str, Any],
) -> list[dict[str, Any]]:
    extra: dict[str, Any] = {
        "answered": result["answered"],
        "elapsed_s": result["elapsed_s"],
        "era": "legacy",
    }
    if client.startswith("ours"):
        extra["client_config"] = {
            "concurrency": "stateless",
            "pool_size": OURS_POOL,
            "queue_limit": OURS_QUEUE,
        }
    if client == "raw-h11":
        extra["max_connections"] = workers
    return [
        {
            **base,
            "client": client,
            "server": server,
            "metric": metric,
            "concurrency": workers,
            "n": n,
            "value": result[metric],
            "repeat": repeat,
            "extra": extra,
        }
        for metric in ("calls_per_s", "p50_ms", "p99_ms")
    ]


def run(
    *,
    n: int,
    servers: tuple[str, ...] = SERVERS,
    clients: tuple[str, ...] = CLIENTS,
    concurrencies: tuple[int, ...] = CONCURRENCIES,
    repeats: int = REPEATS,
    smoke: bool = False,
    run_id: str | None = None,
    out: Path | None = None,
    log: Callable[[str], object] = lambda line: None,
) -> list[dict[str, Any]]:
    """Every measurement, A B A B; records appended to `out` as they come (if given)."""
    now = datetime.datetime.now(datetime.UTC)
    base = {
        "run": run_id or now.strftime("%Y%m%dT%H%M%SZ"),
        "time": now.isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "suite": "http",
    }
    records: list[dict[str, Any]] = []
    for server in servers:
        with running_server(server) as url:
            for workers, repeat in itertools.product(concurrencies, range(repeats)):
                for client in clients:
                    result = _measure(client, url, n, workers, smoke)
                    new = _records(base, client, server, workers, n, repeat, result)
                    records.extend(new)
                    if out is not None:
                        with out.open("a") as file:
                            file.writelines(json.dumps(record) + "\n" for record in new)
                    log(
                        f"{server:13} K={workers:<3} #{repeat} {client:13} "
                        f"{result['calls_per_s']:9.0f} calls/s  p50 {result['p50_ms']:7.2f} ms  "
                        f"p99 {result['p99_ms']:7.2f} ms  answered {result['answered']}/{n}"
                    )
    return records


def smoke() -> list[dict[str, Any]]:
    """Every client once against each fast server at K=1 and K=16, tiny N: proves the suite works
    (the smoke test asserts extra.answered == n, never a time)."""
    return run(n=20, servers=("sdk-http", "min-http"), concurrencies=(1, 16), repeats=1, smoke=True)


def summary(records: list[dict[str, Any]]) -> str:
    """Medians over repeats, and the issue's ratios (ours / raw-h11, ours / sdk)."""
    groups: dict[tuple[str, int, str, str], list[float]] = {}
    for r in records:
        key = (r["server"], r["concurrency"], r["metric"], r["client"])
        groups.setdefault(key, []).append(r["value"])
    median = {key: statistics.median(values) for key, values in groups.items()}
    lines = []
    for server, workers in sorted({(k[0], k[1]) for k in median}):
        rates = {k[3]: v for k, v in median.items() if k[:3] == (server, workers, "calls_per_s")}
        cells = "  ".join(f"{c}={v:.0f}" for c, v in rates.items())
        lines.append(f"{server} K={workers}: {cells}")
        for ours in ("ours-asyncio", "ours-sync"):
            if ours in rates:
                ratios = [
                    f"/{other}={rates[ours] / rates[other]:.2f}"
                    for other in ("raw-h11", "sdk")
                    if other in rates
                ]
                lines.append(f"    {ours}{' '.join(ratios)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=None, help=f"calls per run ({DEFAULT_N})")
    parser.add_argument("--smoke", action="store_true", help="tiny N, 1 repeat, K=1 and 16")
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--concurrencies", default=",".join(map(str, CONCURRENCIES)))
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--run-id", default=None)
    # Internal: one client run (the parent starts these), or the SDK server.
    parser.add_argument("--client", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--serve-sdk", choices=sorted(SDK_MODES), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.serve_sdk:
        serve_sdk(args.serve_sdk)
        return
    if args.client:
        n = args.n or DEFAULT_N
        warmup = _warmup_calls(args.concurrency, args.smoke)
        print(json.dumps(run_client(args.client, args.url, n, args.concurrency, warmup)))
        return
    if args.smoke:
        records = smoke()
        print(summary(records))
        missing = [r for r in records if r["extra"]["answered"] != r["n"]]
        sys.exit(1 if missing else 0)
    run_id = args.run_id or datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"http-{run_id}.jsonl"
    records = run(
        n=args.n or DEFAULT_N,
        servers=tuple(args.servers.split(",")),
        clients=tuple(args.clients.split(",")),
        concurrencies=tuple(int(k) for k in args.concurrencies.split(",")),
        repeats=args.repeats,
        run_id=run_id,
        out=out,
        log=lambda line: print(line, flush=True),
    )
    print(summary(records))
    print(f"records: {out}")


if __name__ == "__main__":
    main()
