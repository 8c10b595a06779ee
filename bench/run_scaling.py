"""Scaling curves (issue 14, part 5): how rate, latency and memory move with load.

    python bench/run_scaling.py                  the full run (about 6 minutes on 2 cores)
    python bench/run_scaling.py --parts curve --clients ours-asyncio,raw-asyncio --repeats 1
    python bench/run_scaling.py --out /tmp/scaling
    python bench/run_scaling.py --smoke          a tiny run, printed, nothing written

Parts (records in the shared format of bench/README.md, suite "scaling", `extra.part` names
the part, to <out>/scaling-<run id>.jsonl, drawn in <out>/scaling-<run id>.png):
  curve    calls/s, p50 and p99 against calls in flight C = 1, 4, 16, ..., 10000 against
           stdlib-min (bench/servers/min_stdio.py), one fresh worker (bench/clients/worker.py,
           mode "stdio"; node bench/clients/ts_sdk_client.mjs for ts-sdk) per client and C,
           clients in turn at each C (A B A B), `--repeats` times. Ours get worker.py's window,
           pool_size = max(256, C), and a queue of N: every call is on the wire at once, as for
           the other clients. ours-sync stops at C = 1024 (SYNC_MAX says why).
           N per point: at least 2 C, else about 1.5 s of calls (choose_n says how it is
           estimated); each record and log line carries it.
  memory   RSS growth per open session at S = 1, 10, 100, 1000 real sessions in one process
           (worker.py mode "sessions": each session has its own stdlib-min process), and per
           SessionMachine brought to ready without I/O (mode "machines"); once, not repeated.
  group    one mcp_asyncio.ClientGroup and one mcp_sync.ClientGroup of 100 stdlib-min servers
           (bench/clients/group_worker.py): start to all ready, 10,000 calls round-robin over
           the namespaced tools with 400 in flight (calls/s, p50, p99), peak RSS of the client
           process, the servers' summed RSS, close time, and the processes left after close.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run_stdio import (
    PYTHON,
    RESULTS,
    ROOT,
    SERVERS,
    WORKER_DEADLINE,
    Recorder,
    WorkerFailed,
    _csv,
    unavailable,
    worker,
)

BENCH = Path(__file__).resolve().parent
GROUP_WORKER = BENCH / "clients" / "group_worker.py"

PARTS = ("curve", "memory", "group")
CURVE_CLIENTS = ("ours-asyncio", "ours-sync", "sdk", "raw-asyncio", "ts-sdk")
MEMORY_CLIENTS = ("ours-asyncio", "ours-sync", "sdk")
GROUP_DRIVERS = ("asyncio", "sync")
CONCURRENCIES = (1, 4, 16, 64, 256, 1024, 4096, 10000)
SESSION_COUNTS = (1, 10, 100, 1000)
SERVER = "stdlib-min"
# The sync driver takes one OS thread per call in flight (drive_sync starts C threads, each
# blocked in call_tool). At 1024 its rate is already well below its 256-thread peak: every
# answer wakes a thread that must take the GIL from hundreds of others, so more threads buy
# only switching and stacks. At 10,000 threads a trial did not finish 20,000 calls in
# worker.py's 600 s and held the 2-core machine at a load average above 400 meanwhile. A
# program with thousands of calls in flight belongs on mcp_asyncio.
SYNC_MAX = 1024
TARGET_S = 1.5  # seconds a curve point aims at (see choose_n)
FIRST_N = 3000  # C = 1 has no previous point: about 1 s at the ~3,000 calls/s seen there
# Three, for a median that one odd repeat cannot move: near a client's knee a point can land
# on either side of it (ours-sync at 1024 threads: 5,400 and 13,400 calls/s in two repeats).
DEFAULT_REPEATS = 3
GROUP_SERVERS = 100
GROUP_CALLS = 10_000
GROUP_IN_FLIGHT = 400
# Per server of the group: ~4 of the 400 calls are in flight at a time; a queue as deep as
# everything in flight means no call can ever be refused with Busy, however they bunch up.
GROUP_POOL = 16


@dataclass(frozen=True)
class Plan:
    parts: tuple[str, ...] = PARTS
    clients: tuple[str, ...] = CURVE_CLIENTS
    concurrencies: tuple[int, ...] = CONCURRENCIES
    repeats: int = DEFAULT_REPEATS
    fixed_n: int | None = None  # the same N at every point (the smoke); None: the N rule
    warmup: int = 200
    sessions: tuple[int, ...] = SESSION_COUNTS
    memory_clients: tuple[str, ...] = MEMORY_CLIENTS
    group_drivers: tuple[str, ...] = GROUP_DRIVERS
    group_servers: int = GROUP_SERVERS
    group_calls: int = GROUP_CALLS
    group_in_flight: int = GROUP_IN_FLIGHT


SMOKE = Plan(
    concurrencies=(1, 16),
    repeats=1,
    fixed_n=200,
    warmup=10,
    sessions=(1, 3),
    group_servers=4,
    group_calls=400,
    group_in_flight=16,
)


def curve_concurrencies(plan: Plan, client: str) -> list[int]:
    return [c for c in plan.concurrencies if client != "ours-sync" or c <= SYNC_MAX]


def choose_n(c: int, known: tuple[int, float] | None) -> int:
    """N for a curve point with C in flight, from `known` = (C', calls/s) measured before.

    At least 2 C, so every worker makes two calls and at least half of them run with C truly
    in flight. Otherwise about TARGET_S seconds: at the rate of this very point when an
    earlier repeat measured it (C' = C), else at the rate of the client's previous C, scaled
    by sqrt(C' / C): past its knee a client's rate can fall tenfold within one step of C
    (ts-sdk, 35,000 calls/s at 256 and 1,800 at 4096 in one trial), and a point must not take
    half a minute because of it.
    """
    if known is None:
        return max(2 * c, FIRST_N)
    known_c, rate = known
    return max(2 * c, round(TARGET_S * rate * math.sqrt(min(1.0, known_c / c))))


def part_curve(plan: Plan, rec: Recorder) -> None:
    server = SERVERS[SERVER]
    measured: dict[tuple[str, int], float] = {}  # (client, C) -> calls/s, first repeat
    previous: dict[str, tuple[int, float]] = {}  # client -> (C, calls/s) of its last point
    for repeat in range(plan.repeats):
        for c in plan.concurrencies:
            for client in plan.clients:  # A B C ... at each C, and again next repeat
                if c not in curve_concurrencies(plan, client):
                    continue
                if plan.fixed_n is not None:
                    n = plan.fixed_n
                elif (client, c) in measured:
                    n = choose_n(c, (c, measured[client, c]))
                else:
                    n = choose_n(c, previous.get(client))
                job = {
                    "mode": "stdio",
                    "client": client,
                    "argv": list(server.argv),
                    "tool": server.tool,
                    "arguments": server.arguments,
                    "n": n,
                    "warmup": plan.warmup,
                    "concurrency": [c],
                }
                begun = time.perf_counter()
                try:
                    result = worker(job)
                except WorkerFailed as exc:
                    rec.failed("scaling", client, SERVER, repeat, str(exc))
                    continue
                wall = time.perf_counter() - begun
                [run] = result["runs"]
                previous[client] = (c, run["calls_per_s"])
                measured.setdefault((client, c), run["calls_per_s"])
                extra = {
                    "part": "curve",
                    "answered": run["answered"],
                    "errors": run["errors"],
                    "worker_s": round(wall, 2),
                    # The machine is shared: a point measured while others ran shows here.
                    "loadavg": round(os.getloadavg()[0], 2),
                }
                if client.startswith("ours-"):
                    extra["pool_size"] = max(256, c)  # worker.py's window for one C
                for metric in ("calls_per_s", "p50_ms", "p99_ms"):
                    rec.add(
                        "scaling",
                        client,
                        SERVER,
                        metric,
                        run[metric],
                        concurrency=c,
                        n=n,
                        repeat=repeat,
                        extra=extra,
                    )
                rec.add(
                    "scaling",
                    client,
                    SERVER,
                    "peak_rss_mib",
                    result["peak_rss_mib"],
                    concurrency=c,
                    n=n,
                    repeat=repeat,
                    extra={"part": "curve"},
                )
                short = "" if run["answered"] == n else f"  ANSWERED {run['answered']}/{n}"
                rec.log(
                    f"curve #{repeat} C={c:<5} {client:12} N={n:<6} "
                    f"{run['calls_per_s']:7.0f}/s  p50 {run['p50_ms']:8.2f}  "
                    f"p99 {run['p99_ms']:8.2f} ms  rss {result['peak_rss_mib']:5.0f} MiB  "
                    f"({wall:.1f} s){short}"
                )


def part_memory(plan: Plan, rec: Recorder) -> None:
    server = SERVERS[SERVER]
    common = {"argv": list(server.argv), "tool": server.tool, "arguments": server.arguments}
    for sessions in plan.sessions:
        for client in (*plan.memory_clients, "ours-core"):
            if client == "ours-core":
                job: dict[str, Any] = {"mode": "machines", "sessions": sessions}
                server_name = None
            else:
                job = {**common, "mode": "sessions", "client": client, "sessions": sessions}
                server_name = SERVER
            begun = time.perf_counter()
            try:
                result = worker(job)
            except WorkerFailed as exc:
                rec.failed("scaling", client, server_name, 0, str(exc))
                continue
            kib = result["kib_per_session"]
            extra = {"part": "memory", "sessions": sessions, "answered": result["answered"]}
            rec.add("scaling", client, server_name, "kib_per_session", kib, n=sessions, extra=extra)
            rec.add(
                "scaling",
                client,
                server_name,
                "rss_growth_mib",
                kib * sessions / 1024,
                n=sessions,
                extra=extra,
            )
            rec.log(
                f"memory S={sessions:<5} {client:12} {kib:7.1f} KiB each, "
                f"{kib * sessions / 1024:6.1f} MiB in all, answered {result['answered']}"
                f"/{sessions}  ({time.perf_counter() - begun:.1f} s)"
            )


def group_worker(job: dict[str, Any]) -> dict[str, Any]:
    try:
        done = subprocess.run(
            [PYTHON, str(GROUP_WORKER), json.dumps(job)],
            capture_output=True,
            text=True,
            timeout=WORKER_DEADLINE,
            cwd=ROOT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise WorkerFailed(f"group {job['driver']}: no answer in {exc.timeout} s") from None
    if done.returncode != 0 or not done.stdout.strip():
        raise WorkerFailed(f"group {job['driver']} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def part_group(plan: Plan, rec: Recorder) -> None:
    server_name = f"group-{plan.group_servers}x-{SERVER}"
    for repeat in range(plan.repeats):
        for driver in plan.group_drivers:
            client = f"ours-{driver}"
            job = {
                "driver": driver,
                "servers": plan.group_servers,
                "argv": list(SERVERS[SERVER].argv),
                "calls": plan.group_calls,
                "in_flight": plan.group_in_flight,
                "pool_size": GROUP_POOL,
                "queue_limit": plan.group_in_flight,
                # An argument the server ignores, by which its processes are found afterwards.
                "marker": f"--bench-scaling={rec.base['run']}-{uuid.uuid4().hex[:12]}",
            }
            try:
                result = group_worker(job)
            except WorkerFailed as exc:
                rec.failed("scaling", client, server_name, repeat, str(exc))
                continue
            extra = {
                "part": "group",
                "answered": result["answered"],
                "servers": result["servers"],
                "tools": result["tools"],
                "pool_size": GROUP_POOL,
                "queue_limit": plan.group_in_flight,
                "start_and_list_ms": result["start_and_list_ms"],
                "left_pids": result["left_pids"],
                "loadavg": round(os.getloadavg()[0], 2),
            }
            for metric, key in (
                ("group_start_ms", "start_ms"),
                ("calls_per_s", "calls_per_s"),
                ("p50_ms", "p50_ms"),
                ("p99_ms", "p99_ms"),
                ("peak_rss_mib", "peak_rss_mib"),
                ("servers_rss_mib", "servers_rss_mib"),
                ("close_ms", "close_ms"),
                ("processes_left", "processes_left"),
            ):
                rec.add(
                    "scaling",
                    client,
                    server_name,
                    metric,
                    result[key],
                    concurrency=plan.group_in_flight,
                    n=plan.group_calls,
                    repeat=repeat,
                    extra=extra,
                )
            rec.log(
                f"group #{repeat} {client:12} {result['servers']} servers: start "
                f"{result['start_ms']:6.0f} ms, {result['calls_per_s']:6.0f} calls/s, p99 "
                f"{result['p99_ms']:6.1f} ms, peak RSS {result['peak_rss_mib']:5.1f} MiB "
                f"(servers {result['servers_rss_mib']:.0f}), close {result['close_ms']:4.0f} ms, "
                f"answered {result['answered']}/{plan.group_calls}, "
                f"processes left {result['processes_left']}"
            )


PART_FUNCTIONS: dict[str, Callable[[Plan, Recorder], None]] = {
    "curve": part_curve,
    "memory": part_memory,
    "group": part_group,
}


def available(clients: tuple[str, ...], log: Callable[[str], object]) -> tuple[str, ...]:
    """`clients` without those this machine cannot run (ts-sdk without node), each logged."""
    kept = []
    for client in clients:
        why = unavailable(client)
        if why is None:
            kept.append(client)
        else:
            log(f"{client} skipped: {why}")
    return tuple(kept)


def run(
    plan: Plan,
    *,
    run_id: str | None = None,
    out: Path | None = None,
    log: Callable[[str], object] = lambda line: None,
) -> list[dict[str, Any]]:
    run_id = run_id or datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    rec = Recorder(run_id, out, log)
    plan = replace(plan, clients=available(plan.clients, log))
    for part in plan.parts:
        begun = time.perf_counter()
        PART_FUNCTIONS[part](plan, rec)
        log(f"-- {part}: {time.perf_counter() - begun:.0f} s")
    return rec.records


def smoke(log: Callable[[str], object] = lambda line: None) -> list[dict[str, Any]]:
    """Every part once, tiny; nothing written. The smoke test asserts counts on the records
    (every call answered, no process left), never a time."""
    return run(SMOKE, run_id="smoke", log=log)


def problems(records: list[dict[str, Any]]) -> list[str]:
    """Failed measurements, calls not answered and processes left: what makes the exit 1."""
    found = [
        f"failed: {r['client']} {r['extra']['why'][-200:]}"
        for r in records
        if r["metric"] == "failed"
    ]
    found += [
        f"answered {r['extra']['answered']}/{r['n']}: {r['client']} {r['extra']['part']} "
        f"{r['metric']} C={r['concurrency']}"
        for r in records
        if "answered" in r.get("extra", {}) and r["extra"]["answered"] != r["n"]
    ]
    found += [
        f"{r['value']} processes left: {r['client']}"
        for r in records
        if r["metric"] == "processes_left" and r["value"] != 0
    ]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument(
        "--clients",
        default=",".join(CURVE_CLIENTS),
        help="curve clients (default all; ts-sdk is skipped when node is missing)",
    )
    parser.add_argument("--concurrency", default=",".join(map(str, CONCURRENCIES)))
    parser.add_argument("--sessions", default=",".join(map(str, SESSION_COUNTS)))
    parser.add_argument(
        "--repeats", type=int, default=DEFAULT_REPEATS, help="of the curve and group parts"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="tiny, every part once, nothing written"
    )
    parser.add_argument("--run-id", default=None)
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS,
        help="directory for scaling-<run id>.jsonl and .png (default bench/results)",
    )
    parser.add_argument("--no-png", action="store_true", help="write the records only")
    args = parser.parse_args()

    def log(line: str) -> None:
        print(line, flush=True)

    if args.smoke:
        records = smoke(log)
        found = problems(records)
        for line in found:
            log(line)
        sys.exit(1 if found else 0)
    plan = Plan(
        parts=_csv(args.parts, PARTS),
        clients=_csv(args.clients, CURVE_CLIENTS),
        concurrencies=tuple(int(c) for c in args.concurrency.split(",") if c),
        sessions=tuple(int(s) for s in args.sessions.split(",") if s),
        repeats=args.repeats,
    )
    run_id = args.run_id or datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"scaling-{run_id}.jsonl"
    log(f"writing {out}")
    begun = time.perf_counter()
    records = run(plan, run_id=run_id, out=out, log=log)
    log(f"-- all: {time.perf_counter() - begun:.0f} s")
    from bench.scaling_chart import draw, summary

    log(summary(records))
    if not args.no_png:
        png = out.with_suffix(".png")
        draw(records, png)
        log(f"wrote {png}")
    found = problems(records)
    for line in found:
        log(line)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
