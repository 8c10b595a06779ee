"""stdio and transport-free benchmarks (issue 4): clients side by side, A B A B, 3 repeats.

    python bench/run_stdio.py                   the full run (a few minutes on 2 cores)
    python bench/run_stdio.py --n 5000 --suites stdio --servers stdlib-min
    python bench/run_stdio.py --smoke           a tiny run, printed, nothing written

Suites (records in the shared format of /work/notes/bench.md, to
bench/results/stdio-<run_id>.jsonl; `extra.answered` counts the calls answered without error):
  stdio    per server and client, one fresh worker process (bench/clients/worker.py) that
           measures cold start (spawn to tools listed), then N calls at 1, 16 and 256 in
           flight (calls/s, p50, p99), then its own peak RSS (children excluded), then the
           start of a second client in the same process ("second start").
  import   `import X` timed inside a fresh interpreter (interpreter start-up excluded).
  core     mcp_core alone: calls/s through SessionMachine, events and bytes in, actions out.
  memory   per-session memory: S real sessions in one process (each with its own stdlib-min
           server process), and 1000 SessionMachines without I/O; and 10,000 calls submitted
           at once on one client (peak RSS, every call answered).
Clients: ours-asyncio, ours-sync (threads for concurrency), sdk (the official `mcp` client:
stdio_client + ClientSession), fastmcp (fastmcp.Client), raw-asyncio and raw-blocking
(bench/clients/: library-free pipe clients; raw-blocking is sequential only), and ts-sdk (the
official TypeScript SDK, @modelcontextprotocol/sdk: Client + StdioClientTransport, run by
`node bench/clients/ts_sdk_client.mjs`, `node` from PATH; stdio suite only). Every client
speaks the legacy era (initialize): ours with era="legacy", FastMCP with mode="legacy", the SDK's
ClientSession.initialize(), the TypeScript SDK's Client.connect(), so all send the same
messages. Ours run with pool_size=256 and a queue as large as N, so the window is never what
limits them.
Servers: stdlib-min (bench/servers/min_stdio.py), sdk-stdio (tests/servers/py_server.py, the
official SDK) and everything (@modelcontextprotocol/server-everything, Node).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
WORKER = BENCH / "clients" / "worker.py"
TS_SDK_CLIENT = BENCH / "clients" / "ts_sdk_client.mjs"
TS_SDK_PACKAGE = ROOT / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
PYTHON = sys.executable

CLIENTS = (
    "ours-asyncio",
    "ours-sync",
    "sdk",
    "fastmcp",
    "raw-asyncio",
    "raw-blocking",
    "ts-sdk",
)
ASYNC_CLIENTS = ("ours-asyncio", "sdk", "fastmcp", "raw-asyncio")
SESSION_CLIENTS = ("ours-asyncio", "ours-sync", "sdk", "fastmcp", "raw-asyncio")
SUITES = ("stdio", "import", "core", "memory")
CONCURRENCIES = (1, 16, 256)
REPEATS = 3
DEFAULT_N = 10_000
WORKER_DEADLINE = 600.0  # one worker; a hung one fails that measurement, not the whole run

# What each client's user writes first, timed in a fresh interpreter. FastMCP's package imports
# lazily, so its client class is what is timed for it; `import mcp` already brings the SDK's
# ClientSession and stdio_client.
IMPORTS = {
    "ours-sync": "import mcp_sync",
    "ours-asyncio": "import mcp_asyncio",
    "ours-core": "import mcp_core",
    "sdk": "import mcp",
    "fastmcp": "from fastmcp import Client",
}
IMPORT_CODE = (
    "import time; t = time.perf_counter(); {statement}; print((time.perf_counter() - t) * 1000)"
)


@dataclass(frozen=True)
class Server:
    argv: tuple[str, ...]
    tool: str
    arguments: dict[str, Any]
    # N for this server is n * scale: the SDK's server answers ~10x slower than stdlib-min, and
    # the same N everywhere would spend the run's minutes waiting on it.
    scale: float


SERVERS = {
    "stdlib-min": Server(
        (PYTHON, str(BENCH / "servers" / "min_stdio.py")), "echo", {"text": "hello"}, 1.0
    ),
    "sdk-stdio": Server(
        (PYTHON, str(ROOT / "tests" / "servers" / "py_server.py")), "echo", {"text": "hello"}, 0.15
    ),
    "everything": Server(
        (str(ROOT / "node_modules" / ".bin" / "mcp-server-everything"), "stdio"),
        "echo",
        {"message": "hello"},
        0.3,
    ),
}


@dataclass(frozen=True)
class Plan:
    n: int = DEFAULT_N
    repeats: int = REPEATS
    servers: tuple[str, ...] = tuple(SERVERS)
    clients: tuple[str, ...] = CLIENTS
    suites: tuple[str, ...] = SUITES
    concurrencies: tuple[int, ...] = CONCURRENCIES
    warmup: int = 200
    core_n: int = 200_000
    sessions: int = 1000  # the 1,000 idle sessions, each with its own server process
    machines: int = 1000
    flood: int = 10_000
    import_repeats: int = 5  # per repeat: import times are the noisiest figure here


class WorkerFailed(RuntimeError):
    pass


def unavailable(client: str) -> str | None:
    """Why `client` cannot run on this machine, or None. Only ts-sdk needs more than Python."""
    if client != "ts-sdk":
        return None
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not TS_SDK_PACKAGE.exists():
        return "node_modules/@modelcontextprotocol/sdk is missing: run `npm ci`"
    return None


def worker(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job in a fresh process (node for ts-sdk, else a fresh interpreter); raises
    WorkerFailed with its stderr tail."""
    if job.get("client") == "ts-sdk":
        why = unavailable("ts-sdk")
        if why is not None:
            raise WorkerFailed(f"{job['mode']} ts-sdk: {why}")
        argv = [shutil.which("node") or "node", str(TS_SDK_CLIENT), json.dumps(job)]
    else:
        argv = [PYTHON, str(WORKER), json.dumps(job)]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=WORKER_DEADLINE,
            cwd=ROOT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise WorkerFailed(
            f"{job['mode']} {job.get('client')}: no answer in {exc.timeout} s"
        ) from None
    if done.returncode != 0 or not done.stdout.strip():
        raise WorkerFailed(f"{job['mode']} {job.get('client')} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def code_version() -> str:
    """The commit measured, with "+dirty" when the drivers or the core had local changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "mcp_core", "mcp_asyncio", "mcp_sync"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


class Recorder:
    """Builds records in the shared format and appends them to `out` as they come."""

    def __init__(self, run_id: str, out: Path | None, log: Callable[[str], object]) -> None:
        now = datetime.datetime.now(datetime.UTC)
        self.base = {
            "run": run_id,
            "time": now.isoformat(timespec="seconds"),
            "machine": {
                "cores": os.cpu_count(),
                "python": platform.python_version(),
                "loadavg_at_start": round(os.getloadavg()[0], 2),
            },
            "code": code_version(),
        }
        self.out = out
        self.log = log
        self.records: list[dict[str, Any]] = []

    def add(
        self,
        suite: str,
        client: str,
        server: str | None,
        metric: str,
        value: float,
        *,
        concurrency: int | None = None,
        n: int | None = None,
        repeat: int = 0,
        extra: dict[str, Any] | None = None,
    ) -> None:
        record = {
            **self.base,
            "suite": suite,
            "client": client,
            "server": server,
            "metric": metric,
            "concurrency": concurrency,
            "n": n,
            "value": value,
            "repeat": repeat,
        }
        if extra is not None:
            record["extra"] = extra
        self.records.append(record)
        if self.out is not None:
            with self.out.open("a") as file:
                file.write(json.dumps(record) + "\n")

    def failed(self, suite: str, client: str, server: str | None, repeat: int, why: str) -> None:
        self.log(f"FAILED {suite} {client} {server}: {why}")
        self.add(suite, client, server, "failed", 1, repeat=repeat, extra={"why": why[-500:]})


# --- suites -------------------------------------------------------------------------------


def suite_stdio(plan: Plan, rec: Recorder, repeat: int) -> None:
    for server_name in plan.servers:
        server = SERVERS[server_name]
        n = max(1, round(plan.n * server.scale))
        for client in plan.clients:  # A B C ... then again next repeat: A B A B
            concurrencies = [1] if client == "raw-blocking" else list(plan.concurrencies)
            job = {
                "mode": "stdio",
                "client": client,
                "argv": list(server.argv),
                "tool": server.tool,
                "arguments": server.arguments,
                "n": n,
                "warmup": plan.warmup,
                "concurrency": concurrencies,
            }
            try:
                result = worker(job)
            except WorkerFailed as exc:
                rec.failed("stdio", client, server_name, repeat, str(exc))
                continue
            rec.add(
                "stdio",
                client,
                server_name,
                "cold_start_ms",
                result["cold_start_ms"],
                repeat=repeat,
                extra={"tools": result["tools"]},
            )
            rec.add(
                "stdio",
                client,
                server_name,
                "second_start_ms",
                result["second_start_ms"],
                repeat=repeat,
            )
            rec.add(
                "stdio",
                client,
                server_name,
                "peak_rss_mib",
                result["peak_rss_mib"],
                concurrency=max(concurrencies),
                n=n,
                repeat=repeat,
            )
            line = [
                f"stdio {server_name:10} #{repeat} {client:12} "
                f"cold {result['cold_start_ms']:6.0f} ms "
                f"(2nd {result['second_start_ms']:4.0f})"
            ]
            for run in result["runs"]:
                extra = {"answered": run["answered"], "errors": run["errors"]}
                for metric in ("calls_per_s", "p50_ms", "p99_ms"):
                    rec.add(
                        "stdio",
                        client,
                        server_name,
                        metric,
                        run[metric],
                        concurrency=run["concurrency"],
                        n=run["n"],
                        repeat=repeat,
                        extra=extra,
                    )
                line.append(
                    f"C={run['concurrency']}: {run['calls_per_s']:7.0f}/s "
                    f"p99 {run['p99_ms']:6.2f} ms"
                )
                if run["answered"] != run["n"]:
                    line.append(f"ANSWERED {run['answered']}/{run['n']}")
            rec.log("  ".join(line) + f"  rss {result['peak_rss_mib']:.1f} MiB")


def suite_import(plan: Plan, rec: Recorder, repeat: int) -> None:
    samples: dict[str, list[float]] = {client: [] for client in IMPORTS}
    if repeat == 0:  # untimed: the first import of a module writes its .pyc files
        for statement in IMPORTS.values():
            subprocess.run([PYTHON, "-c", statement], capture_output=True, check=False)
    for _ in range(plan.import_repeats):
        for client, statement in IMPORTS.items():  # A B A B
            done = subprocess.run(
                [PYTHON, "-c", IMPORT_CODE.format(statement=statement)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=False,
            )
            if done.returncode != 0:
                rec.failed("import", client, None, repeat, done.stderr)
                continue
            samples[client].append(float(done.stdout.split()[-1]))
    for client, values in samples.items():
        if values:
            rec.add(
                "import",
                client,
                None,
                "import_ms",
                statistics.median(values),
                n=len(values),
                repeat=repeat,
                extra={"statement": IMPORTS[client]},
            )
    rec.log(
        f"import #{repeat} "
        + "  ".join(f"{c}={statistics.median(v):.0f} ms" for c, v in samples.items() if v)
    )


def suite_core(plan: Plan, rec: Recorder, repeat: int) -> None:
    job = {"mode": "core", "n": plan.core_n, "window": 256, "chunk": 65536}
    try:
        result = worker(job)
    except WorkerFailed as exc:
        rec.failed("core", "ours-core", None, repeat, str(exc))
        return
    extra = {"answered": result["answered"], "window": 256, "chunk": 65536}
    for metric in ("calls_per_s", "msgs_per_s"):
        rec.add(
            "core",
            "ours-core",
            None,
            metric,
            result[metric],
            n=result["n"],
            repeat=repeat,
            extra=extra,
        )
    rec.log(
        f"core #{repeat} {result['calls_per_s']:.0f} calls/s "
        f"({result['msgs_per_s']:.0f} msgs/s), answered {result['answered']}/{result['n']}"
    )


def suite_memory(plan: Plan, rec: Recorder, repeat: int) -> None:
    server = SERVERS["stdlib-min"]
    common = {"argv": list(server.argv), "tool": server.tool, "arguments": server.arguments}
    for client in [c for c in SESSION_CLIENTS if c in plan.clients]:
        job = {**common, "mode": "sessions", "client": client, "sessions": plan.sessions}
        try:
            result = worker(job)
        except WorkerFailed as exc:
            rec.failed("memory", client, "stdlib-min", repeat, str(exc))
            continue
        rec.add(
            "memory",
            client,
            "stdlib-min",
            "kib_per_session",
            result["kib_per_session"],
            n=plan.sessions,
            repeat=repeat,
            extra={"answered": result["answered"]},
        )
        rec.log(
            f"memory #{repeat} {client:12} {plan.sessions} sessions: "
            f"{result['kib_per_session']:.0f} KiB each, answered {result['answered']}"
        )
    try:
        result = worker({"mode": "machines", "sessions": plan.machines})
    except WorkerFailed as exc:
        rec.failed("memory", "ours-core", None, repeat, str(exc))
    else:
        rec.add(
            "memory",
            "ours-core",
            None,
            "kib_per_session",
            result["kib_per_session"],
            n=plan.machines,
            repeat=repeat,
            extra={"answered": result["answered"]},
        )
        rec.log(
            f"memory #{repeat} ours-core    {plan.machines} machines: "
            f"{result['kib_per_session']:.1f} KiB each"
        )
    for client in [c for c in ASYNC_CLIENTS if c in plan.clients]:
        job = {
            **common,
            "mode": "flood",
            "client": client,
            "n": plan.flood,
            "warmup": min(plan.warmup, 50),
        }
        try:
            result = worker(job)
        except WorkerFailed as exc:
            rec.failed("memory", client, "stdlib-min", repeat, str(exc))
            continue
        extra = {
            "answered": result["answered"],
            "errors": result["errors"],
            "baseline_rss_mib": result["baseline_rss_mib"],
        }
        for metric, value in (
            ("peak_rss_mib", result["peak_rss_mib"]),
            ("flood_growth_mib", result["peak_rss_mib"] - result["baseline_rss_mib"]),
            ("calls_per_s", result["calls_per_s"]),
        ):
            rec.add(
                "memory",
                client,
                "stdlib-min",
                metric,
                value,
                concurrency=plan.flood,
                n=plan.flood,
                repeat=repeat,
                extra=extra,
            )
        rec.log(
            f"memory #{repeat} {client:12} {plan.flood} at once: peak "
            f"{result['peak_rss_mib']:.1f} MiB (+{extra['baseline_rss_mib']:.1f} before), "
            f"answered {result['answered']}/{plan.flood}"
        )


SUITE_FUNCTIONS = {
    "stdio": suite_stdio,
    "import": suite_import,
    "core": suite_core,
    "memory": suite_memory,
}


def run(
    plan: Plan,
    *,
    run_id: str | None = None,
    out: Path | None = None,
    log: Callable[[str], object] = lambda line: None,
) -> list[dict[str, Any]]:
    """Every suite of the plan, repeat by repeat (so each repeat alternates the clients)."""
    run_id = run_id or datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    rec = Recorder(run_id, out, log)
    for repeat in range(plan.repeats):
        for suite in plan.suites:
            SUITE_FUNCTIONS[suite](plan, rec, repeat)
    return rec.records


SMOKE = Plan(
    n=200,
    repeats=1,
    servers=("stdlib-min",),
    concurrencies=(1, 16),
    warmup=10,
    core_n=2000,
    sessions=3,
    machines=20,
    flood=500,
    import_repeats=1,
)


def smoke_plan(log: Callable[[str], object] = lambda line: None) -> Plan:
    """SMOKE without the clients this machine cannot run (ts-sdk without node), each skipped
    with its reason logged."""
    skipped = {client: unavailable(client) for client in SMOKE.clients}
    for client, why in skipped.items():
        if why is not None:
            log(f"smoke: {client} skipped: {why}")
    return replace(SMOKE, clients=tuple(c for c, why in skipped.items() if why is None))


def smoke(log: Callable[[str], object] = lambda line: None) -> list[dict[str, Any]]:
    """Every suite once with tiny N against stdlib-min; nothing written. The smoke test asserts
    counts on these records (every call answered), never a time."""
    return run(smoke_plan(log), run_id="smoke", log=log)


def _csv(text: str, known: Iterable[str]) -> tuple[str, ...]:
    names = tuple(name for name in text.split(",") if name)
    unknown = set(names) - set(known)
    if unknown:
        raise SystemExit(f"unknown: {', '.join(sorted(unknown))} (known: {', '.join(known)})")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--n",
        type=int,
        default=DEFAULT_N,
        help=f"calls per measurement against stdlib-min (default {DEFAULT_N}); "
        "other servers get a fixed fraction of it",
    )
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--suites", default=",".join(SUITES))
    parser.add_argument("--servers", default=",".join(SERVERS))
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny N, 1 repeat, stdlib-min only; prints, writes nothing",
    )
    parser.add_argument("--run-id", default=None)
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS,
        help="directory the stdio-<run id>.jsonl file is written to (default bench/results)",
    )
    args = parser.parse_args()

    def log(line: str) -> None:
        print(line, flush=True)

    if args.smoke:
        records = smoke(log)
        short = [
            r
            for r in records
            if "answered" in r.get("extra", {}) and r["extra"]["answered"] != r["n"]
        ]
        failed = [r for r in records if r["metric"] == "failed"]
        sys.exit(1 if short or failed else 0)
    plan = Plan(
        n=args.n,
        repeats=args.repeats,
        suites=_csv(args.suites, SUITES),
        servers=_csv(args.servers, SERVERS),
        clients=_csv(args.clients, CLIENTS),
    )
    run_id = args.run_id or datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"stdio-{run_id}.jsonl"
    log(f"writing {out}")
    records = run(plan, run_id=run_id, out=out, log=log)
    failed = [r for r in records if r["metric"] == "failed"]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
