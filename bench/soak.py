"""Chaos soak (issue 13, item 6): many calls per driver while servers die and connections drop.

    python bench/soak.py                         the full soak (`make soak`): 1,000,000 stdio
                                                 calls and 250,000 HTTP calls per driver
    python bench/soak.py --calls 20000 --http-calls 5000 --drivers asyncio
    python bench/soak.py --smoke --out /tmp/soak   what tests/bench/test_soak_smoke.py runs

Four phases, in this order, each with its own client in this process:
  asyncio/stdio  mcp_asyncio.Client of bench/servers/min_stdio.py, 64 tasks calling in a loop;
                 every few thousand calls (uniform in --kill-every LO HI) the server process,
                 found as a child of this process, is SIGKILLed; the client restarts it with
                 its backoff (reconnect 0.02 s, max_backoff 0.2 s, so the soak rarely waits).
  asyncio/http   the same client class against bench/servers/min_http.py through ChaosProxy,
                 a TCP proxy in this process that resets (RST) a connection on about one
                 request in --drop-every: before forwarding the request, after forwarding it
                 (the answer is lost), or halfway through the answer.
  sync/stdio     mcp_sync.Client, 16 threads, kills as above.
  sync/http      mcp_sync.Client, 16 threads, through the proxy.

Each call echoes a text unique to it, and its answer must carry that text. A call that fails
must raise a typed `mcp_core.McpError`; the soak counts the outcome and goes on. A caller whose
call failed because the session is down (ServerExited, NotReady, ConnectFailed) waits with
`await_ready` before its next call, as an application would; nothing is retried.

Invariants, checked per phase (the exit status is 1 when one fails; the results are written
either way):
  answered       every call answered exactly once: ok + each error class = calls, each call's
                 index seen once, none pending in the soak or in the client (Status.in_flight
                 and .queued), no stall (no call answered for 90 s: the phase is then stopped)
  typed          nothing raised that is not an McpError; every answer is its own call's text
                 (a wrong text or an isError result fails this)
  flat           after warm-up (the first 10% of the calls, at least 500 and at most 50,000),
                 every sample has RSS <= warm-up RSS + 16 MiB and fds <= warm-up fds + 16; after
                 the client stopped, fds <= fds before the phase + 16
  no orphans     after stop, no child of this process that was not there before the phase and
                 no process anywhere carrying this run's marker argument (reparented orphans)
  chaos          at least one kill (stdio) or one drop (HTTP): a soak without chaos proves little
RSS is VmRSS from /proc/self/status, fds len(/proc/self/fd), sampled about 500 times a phase.
The proxy runs in this process (a thread with its own asyncio loop), so the HTTP phases count
its two sockets per client connection too.

Results: bench/results/soak-<UTC timestamp>.json and soak-<UTC timestamp>-rss.png (RSS and fd
count against calls, every phase; the dashed lines are the bounds).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import datetime
import json
import logging
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))  # our packages, when run as `python bench/soak.py`

from mcp_core import McpError  # noqa: E402

RESULTS = BENCH / "results"
MIN_STDIO = BENCH / "servers" / "min_stdio.py"
MIN_HTTP = BENCH / "servers" / "min_http.py"

# The stated bounds (also written into every result file).
RSS_BOUND_MIB = 16.0  # each sample after warm-up: RSS <= warm-up RSS + this
FD_BOUND = 16  # each sample after warm-up: fds <= warm-up fds + this; after stop, vs before
ORPHAN_GRACE_S = 5.0  # stop() has returned; its children must be gone within this

# An error that says the session is down: the caller waits for it before its next call.
SESSION_DOWN = frozenset({"ServerExited", "NotReady", "ConnectFailed"})

PHASES = (("asyncio", "stdio"), ("asyncio", "http"), ("sync", "stdio"), ("sync", "http"))


@dataclass(frozen=True)
class Plan:
    calls: int = 1_000_000  # stdio calls per driver
    http_calls: int = 250_000  # HTTP calls per driver
    drivers: tuple[str, ...] = ("asyncio", "sync")
    transports: tuple[str, ...] = ("stdio", "http")
    async_workers: int = 64
    sync_workers: int = 16
    kill_every: tuple[int, int] = (1_000, 7_000)  # calls between two kills, uniform
    drop_every: int = 2_000  # about one request in this many has its connection reset
    seed: int = 13
    call_timeout: float = 20.0
    stall: float = 90.0  # no call answered for this long: the phase is stopped and failed
    warmup_min: int = 500
    warmup_max: int = 50_000
    samples_per_phase: int = 500

    def warmup(self, n: int) -> int:
        return min(max(n // 10, self.warmup_min), self.warmup_max, n)

    def sample_every(self, n: int) -> int:
        return max(n // self.samples_per_phase, 50)


SMOKE = Plan(
    calls=3_000,
    http_calls=1_500,
    kill_every=(400, 900),
    drop_every=150,
    stall=30.0,
    samples_per_phase=60,
)


# --- /proc: memory, descriptors, processes -------------------------------------------------


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _read(path: str) -> str:
    try:
        with open(path, "rb") as file:
            return file.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process, or None when it is gone."""
    text = _read(f"/proc/{pid}/stat")
    if not text:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # the command name may hold spaces
    return fields[0], int(fields[1])


def _cmdline(pid: int) -> list[str]:
    return _read(f"/proc/{pid}/cmdline").split("\0")


def children() -> list[int]:
    """Children of this process (zombies included), from every thread's children list."""
    found: list[int] = []
    for task in os.listdir("/proc/self/task"):
        found += [int(pid) for pid in _read(f"/proc/self/task/{task}/children").split()]
    return sorted(set(found))


def leftovers(before: set[int], marker: str) -> list[dict[str, Any]]:
    """Processes this phase left behind: a child of ours that was not there before it, or
    any process (wherever it was reparented) whose command line carries the run's marker."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        stat = _stat(pid)
        if stat is None:
            continue
        state, ppid = stat
        argv = _cmdline(pid)
        ours = ppid == me and pid not in before
        if ours or (marker in argv and pid != me):
            found.append({"pid": pid, "ppid": ppid, "state": state, "argv": argv[:4]})
    return found


def kill_servers(marker: str) -> int:
    """SIGKILL the live stdio server(s) of this run among our children; how many were hit."""
    hit = 0
    for pid in children():
        stat = _stat(pid)
        argv = _cmdline(pid)
        if stat is None or stat[0] == "Z" or marker not in argv or str(MIN_STDIO) not in argv:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            hit += 1
    return hit


# --- counting the calls -------------------------------------------------------------------


class Tally:
    """Every call of one phase: who took which index, and each one's outcome, once."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._tickets = iter(range(n))
        self.seen = bytearray(n)  # answers per call index: must end all ones
        self.started = 0
        self.finished = 0
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.examples: dict[str, str] = {}  # the first message of each error class
        self.waits: collections.Counter[str] = collections.Counter()  # await_ready failures
        self.stalled = False
        self._lock = threading.Lock()

    def take(self) -> Iterator[int]:
        """The next call index for one worker, until none is left (shared by all)."""
        while True:
            with self._lock:
                index = next(self._tickets, None)
                if index is None or self.stalled:
                    return
                self.started += 1
            yield index

    def finish(self, index: int, outcome: str, error: BaseException | None = None) -> None:
        with self._lock:
            self.seen[index] += 1
            self.outcomes[outcome] += 1
            self.finished += 1
            if error is not None and outcome not in self.examples:
                self.examples[outcome] = str(error)[:300]

    def wait_failed(self, error: BaseException) -> None:
        with self._lock:
            self.waits[type(error).__name__] += 1


def judge(result: Any, text: str) -> str:
    if result.is_error:
        return "tool-error"
    return "ok" if result.text == text else "wrong-answer"


def outcome_of(error: BaseException) -> str:
    name = type(error).__name__
    return name if isinstance(error, McpError) else f"raised:{name}"


# --- the monitor: samples, kills, stall -------------------------------------------------


@dataclass
class Sample:
    calls: int
    seconds: float
    rss_kib: int
    fds: int
    threads: int

    @classmethod
    def now(cls, calls: int, since: float) -> Sample:
        return cls(
            calls,
            round(time.monotonic() - since, 3),
            rss_kib(),
            fd_count(),
            threading.active_count(),
        )


class Monitor:
    """A thread that watches a phase's answer count: samples RSS and fds, kills the server on
    schedule, and flags a stall. It only reads the count, so both drivers share it."""

    def __init__(
        self, tally: Tally, plan: Plan, rng: random.Random, kill: Callable[[], int] | None
    ) -> None:
        self.tally = tally
        self.rng = rng
        self.kill = kill
        self.kill_every = plan.kill_every
        self.stall = plan.stall
        self.warmup_at = plan.warmup(tally.n)
        self.every = plan.sample_every(tally.n)
        self.samples: list[Sample] = []
        self.warm: Sample | None = None
        self.kills = 0
        self.kill_calls: list[int] = []  # the answer count at each kill
        self.started = time.monotonic()
        self._next_sample = 0
        self._next_kill = self._gap()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-monitor", daemon=True)

    def _gap(self) -> int:
        return self.rng.randint(*self.kill_every)

    def __enter__(self) -> Monitor:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.samples.append(Sample.now(self.tally.finished, self.started))

    def _run(self) -> None:
        last, last_change = -1, time.monotonic()
        while not self._done.wait(0.005):
            done = self.tally.finished
            now = time.monotonic()
            if done != last:
                last, last_change = done, now
            elif now - last_change > self.stall and done < self.tally.n:
                self.tally.stalled = True
            if done >= self._next_sample:
                self.samples.append(Sample.now(done, self.started))
                self._next_sample = done + self.every
            if self.warm is None and done >= self.warmup_at:
                self.warm = Sample.now(done, self.started)
                self.samples.append(self.warm)
            # No kill once every call is answered: the client is stopping then.
            # None hit: the server is restarting; it is tried again on the next tick.
            due = self.kill is not None and self._next_kill <= done < self.tally.n
            if due and self.kill is not None and self.kill():
                self.kills += 1
                self.kill_calls.append(done)
                self._next_kill = done + self._gap()


# --- the HTTP side: the minimal server and the chaos proxy --------------------------------


class MinHttp:
    """bench/servers/min_http.py as a child process; `url` once it listens."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> MinHttp:
        self.proc = subprocess.Popen(
            [sys.executable, str(MIN_HTTP), self.marker],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening "):
            self.__exit__()
            raise RuntimeError(f"min_http.py did not start: {line!r}")
        self.url = line.split(" ", 1)[1]
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


_LINGER_RST = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST


def _reset(transport: asyncio.Transport | None) -> None:
    if transport is None or transport.is_closing():
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
    transport.abort()


class _Side(asyncio.Protocol):
    def __init__(self, link: _Link, upstream: bool) -> None:
        self.link = link
        self.upstream = upstream

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.link.made(self.upstream, transport)

    def data_received(self, data: bytes) -> None:
        if self.upstream:
            self.link.from_server(data)
        else:
            self.link.from_client(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.lost()


class _Link:
    """One client connection and its upstream connection. Messages here are small (an echo
    of a short text), so nothing is flow-controlled."""

    def __init__(self, proxy: ChaosProxy) -> None:
        self.proxy = proxy
        self.client: asyncio.Transport | None = None
        self.server: asyncio.Transport | None = None
        self.early: list[bytes] = []  # client bytes before the upstream connection is made
        self.doom: str | None = None  # "response" or "partial": reset on the server's bytes
        self.closed = False

    def made(self, upstream: bool, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if self.closed:
            transport.abort()
            return
        if upstream:
            self.server = transport
            for chunk in self.early:
                transport.write(chunk)
            self.early.clear()
        else:
            self.client = transport
            self.proxy.links.add(self)
            host, port = self.proxy.upstream
            task = self.proxy.loop.create_task(
                self.proxy.loop.create_connection(lambda: _Side(self, True), host, port)
            )
            task.add_done_callback(self._connected)

    def _connected(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self.lost()

    def from_client(self, data: bytes) -> None:
        mode = self.proxy.roll()
        if mode == "request":  # the request never reaches the server
            self.reset(mode)
            return
        if mode is not None:
            self.doom = mode
        if self.server is None:
            self.early.append(data)
        else:
            self.server.write(data)

    def from_server(self, data: bytes) -> None:
        assert self.client is not None
        if self.doom == "partial":  # half the answer, then the reset
            self.client.write(data[: len(data) // 2])
        if self.doom is not None:
            self.reset(self.doom)
            return
        self.client.write(data)

    def reset(self, mode: str) -> None:
        if self.closed:
            return
        self.proxy.drops[mode] += 1
        _reset(self.client)
        _reset(self.server)
        self.lost()

    def lost(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.proxy.links.discard(self)
        for transport in (self.client, self.server):
            if transport is not None and not transport.is_closing():
                transport.close()


class ChaosProxy:
    """A TCP proxy on 127.0.0.1 in a thread of its own (its own asyncio loop, so both
    drivers see the same proxy) that resets a connection on about one request in
    `drop_every`, each time one of three ways at random: the request is not forwarded
    ("request"), the request is forwarded and the answer replaced by the reset ("response"),
    or half of the answer's first chunk is forwarded and then the reset ("partial")."""

    MODES = ("request", "response", "partial")

    def __init__(self, upstream_url: str, drop_every: int, seed: int) -> None:
        hostport = upstream_url.split("//", 1)[1].split("/", 1)[0]
        host, port = hostport.rsplit(":", 1)
        self.upstream = (host, int(port))
        self.path = "/" + upstream_url.split("//", 1)[1].split("/", 1)[1]
        self.p = 1.0 / drop_every
        self.rng = random.Random(seed)
        self.drops: collections.Counter[str] = collections.Counter()
        self.forwarded = 0  # client chunks seen (about one per request)
        self.connections = 0
        self.links: set[_Link] = set()
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def roll(self) -> str | None:
        self.forwarded += 1
        if self.rng.random() >= self.p:
            return None
        return self.rng.choice(self.MODES)

    def _accept(self) -> _Side:
        self.connections += 1
        return _Side(_Link(self), False)

    def _run(self) -> None:
        loop = self.loop
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(loop.create_server(self._accept, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            for link in list(self.links):
                link.lost()
            loop.run_until_complete(server.wait_closed())
            loop.run_until_complete(asyncio.sleep(0))  # let the transports finish closing
            loop.close()

    def __enter__(self) -> ChaosProxy:
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()


# --- the drivers ---------------------------------------------------------------------------


def _fields(plan: Plan, transport: str, workers: int, marker: str, url: str) -> dict[str, Any]:
    common: dict[str, Any] = {
        "era": "legacy",
        "pool_size": workers,
        "queue_limit": workers,
        "reconnect": 0.02,
        "max_backoff": 0.2,
        "call_timeout": plan.call_timeout,
        "init_timeout": 20.0,
        "shutdown_grace": 1.0,
    }
    if transport == "stdio":
        return {
            "name": "soak-stdio",
            "command": sys.executable,
            "args": [str(MIN_STDIO), marker],
            **common,
        }
    return {"name": "soak-http", "url": url, "concurrency": "stateless", **common}


async def _drive_asyncio(fields: dict[str, Any], tally: Tally, workers: int, tag: str) -> int:
    """All the phase's calls on one mcp_asyncio client; returns what its Status still counts
    as in flight or queued once every worker is done."""
    import anyio

    import mcp_asyncio

    async with mcp_asyncio.Client(**fields) as client:

        async def worker() -> None:
            for index in tally.take():
                text = f"{tag}{index}"
                try:
                    result = await client.call_tool("echo", {"text": text})
                except Exception as error:
                    outcome = outcome_of(error)
                    tally.finish(index, outcome, error)
                    if outcome in SESSION_DOWN:
                        try:
                            await client.await_ready(fields["init_timeout"])
                        except Exception as failed:
                            tally.wait_failed(failed)
                else:
                    tally.finish(index, judge(result, text))

        async def watchdog(scope: anyio.CancelScope) -> None:
            while not tally.stalled:
                await anyio.sleep(0.2)
            scope.cancel()  # the calls still pending stay counted as pending

        async with anyio.create_task_group() as outer:
            with anyio.CancelScope() as calls:
                outer.start_soon(watchdog, calls)
                async with anyio.create_task_group() as tasks:
                    for _ in range(workers):
                        tasks.start_soon(worker)
            outer.cancel_scope.cancel()
        status = client.status()
        return status.in_flight + status.queued


def _drive_sync(fields: dict[str, Any], tally: Tally, workers: int, tag: str) -> int:
    import mcp_sync

    with mcp_sync.Client(**fields) as client:

        def worker() -> None:
            for index in tally.take():
                text = f"{tag}{index}"
                try:
                    result = client.call_tool("echo", {"text": text})
                except Exception as error:
                    outcome = outcome_of(error)
                    tally.finish(index, outcome, error)
                    if outcome in SESSION_DOWN:
                        try:
                            client.await_ready(fields["init_timeout"])
                        except Exception as failed:
                            tally.wait_failed(failed)
                else:
                    tally.finish(index, judge(result, text))

        threads = [
            threading.Thread(target=worker, name=f"soak-caller-{k}", daemon=True)
            for k in range(workers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive() and not tally.stalled:
                thread.join(0.2)
        status = client.status()
        pending = status.in_flight + status.queued
    # stop() answered whatever a stalled phase left pending; its callers end now.
    for thread in threads:
        thread.join(10)
    return pending


# --- one phase -----------------------------------------------------------------------------


@dataclass
class Phase:
    driver: str
    transport: str
    calls: int
    workers: int
    warmup: int
    sample_every: int
    outcomes: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)
    await_ready_failures: dict[str, int] = field(default_factory=dict)
    answered: int = 0
    unanswered: int = 0
    answered_twice: int = 0
    not_made: int = 0  # calls never made: a stalled phase stops its callers
    pending: int = 0
    client_pending: int = 0
    stalled: bool = False
    kills: int = 0
    kill_calls: list[int] = field(default_factory=list)
    drops: dict[str, int] = field(default_factory=dict)
    proxy: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0
    calls_per_s: float = 0.0
    before: dict[str, Any] = field(default_factory=dict)
    warm: dict[str, Any] = field(default_factory=dict)
    end: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    max_after_warmup: dict[str, Any] = field(default_factory=dict)
    rss_slope_bytes_per_call: float = 0.0
    leftovers: list[dict[str, Any]] = field(default_factory=list)
    leftovers_after_s: float = 0.0
    log_records: dict[str, int] = field(default_factory=dict)
    log_errors: list[str] = field(default_factory=list)  # the first ERROR records, in full
    uncaught: list[str] = field(default_factory=list)  # exceptions that ended a thread
    crash: str = ""  # the traceback of an exception that ended the phase itself
    samples: list[list[float]] = field(default_factory=list)  # calls, s, rss KiB, fds, threads
    invariants: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.driver}/{self.transport}"

    @property
    def held(self) -> bool:
        return all(check["held"] for check in self.invariants.values())


class _LogCounter(logging.Handler):
    """The client's log records, counted by logger and level, never printed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.counts: collections.Counter[str] = collections.Counter()
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[f"{record.levelname} {record.name}"] += 1
        if record.levelno >= logging.ERROR and len(self.errors) < 5:
            self.errors.append(f"{record.name}: {self.format(record)}"[:2000])


def _snapshot() -> dict[str, Any]:
    return {
        "rss_kib": rss_kib(),
        "fds": fd_count(),
        "threads": threading.active_count(),
        "children": len(children()),
    }


def _slope(samples: list[Sample]) -> float:
    """Least-squares RSS growth in bytes per call over the given samples."""
    if len(samples) < 2:
        return 0.0
    xs = [s.calls for s in samples]
    ys = [s.rss_kib * 1024 for s in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def run_phase(plan: Plan, driver: str, transport: str, marker: str, rng: random.Random) -> Phase:
    n = plan.calls if transport == "stdio" else plan.http_calls
    workers = plan.async_workers if driver == "asyncio" else plan.sync_workers
    phase = Phase(driver, transport, n, workers, plan.warmup(n), plan.sample_every(n))
    tally = Tally(n)
    counter = _LogCounter()
    logging.getLogger().addHandler(counter)
    before_children = set(children())
    phase.before = _snapshot()
    tag = f"{driver[0]}{transport[0]}-"
    kill = (lambda: kill_servers(marker)) if transport == "stdio" else None
    proxy: ChaosProxy | None = None
    monitor = Monitor(tally, plan, random.Random(rng.randrange(2**32)), kill)
    proxy_seed = rng.randrange(2**32)
    hook = threading.excepthook

    def uncaught(args: threading.ExceptHookArgs) -> None:
        where = args.thread.name if args.thread is not None else "?"
        phase.uncaught.append(f"{where}: {args.exc_type.__name__}: {args.exc_value}"[:500])
        hook(args)

    threading.excepthook = uncaught
    started = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            url = ""
            if transport == "http":
                server = stack.enter_context(MinHttp(marker))
                proxy = stack.enter_context(ChaosProxy(server.url, plan.drop_every, proxy_seed))
                url = proxy.url
            fields = _fields(plan, transport, workers, marker, url)
            with monitor:
                if driver == "asyncio":
                    phase.client_pending = asyncio.run(_drive_asyncio(fields, tally, workers, tag))
                else:
                    phase.client_pending = _drive_sync(fields, tally, workers, tag)
            phase.duration_s = round(time.monotonic() - started, 2)
    except Exception as crash:  # counted as a failure of the phase; the run goes on
        phase.crash = "".join(traceback.format_exception(crash))[-4000:]
        phase.duration_s = round(time.monotonic() - started, 2)
    finally:
        logging.getLogger().removeHandler(counter)
        threading.excepthook = hook
    waited = time.monotonic()
    phase.leftovers = leftovers(before_children, marker)
    while phase.leftovers and time.monotonic() - waited < ORPHAN_GRACE_S:
        time.sleep(0.05)
        phase.leftovers = leftovers(before_children, marker)
    phase.leftovers_after_s = round(time.monotonic() - waited, 2)
    phase.after = _snapshot()

    phase.outcomes = dict(tally.outcomes.most_common())
    phase.examples = tally.examples
    phase.await_ready_failures = dict(tally.waits)
    phase.answered = sum(tally.outcomes.values())
    phase.unanswered = tally.seen.count(0)
    phase.answered_twice = n - phase.unanswered - tally.seen.count(1)
    phase.pending = tally.started - tally.finished
    phase.not_made = n - tally.started
    phase.stalled = tally.stalled
    phase.kills = monitor.kills
    phase.kill_calls = monitor.kill_calls
    if proxy is not None:
        phase.drops = dict(proxy.drops)
        phase.proxy = {"connections": proxy.connections, "requests": proxy.forwarded}
    phase.calls_per_s = round(n / phase.duration_s, 1) if phase.duration_s else 0.0
    phase.log_records = dict(counter.counts.most_common())
    phase.log_errors = counter.errors
    phase.samples = [[s.calls, s.seconds, s.rss_kib, s.fds, s.threads] for s in monitor.samples]
    if monitor.samples:
        phase.end = asdict(monitor.samples[-1])
    judge_phase(phase, monitor)
    return phase


def judge_phase(phase: Phase, monitor: Monitor) -> None:
    checks: dict[str, dict[str, Any]] = {}
    n = phase.calls
    ok = phase.outcomes.get("ok", 0)
    errors = phase.answered - ok
    checks["answered"] = {
        "held": phase.answered == n
        and phase.unanswered == 0
        and phase.answered_twice == 0
        and phase.pending == 0
        and phase.client_pending == 0
        and not phase.stalled,
        "detail": (
            f"{ok} ok + {errors} typed errors = {phase.answered} of {n}; "
            f"{phase.unanswered} never answered ({phase.not_made} of them never made), "
            f"{phase.answered_twice} answered twice, "
            f"{phase.pending} pending in the soak, {phase.client_pending} in the client"
            + ("; STALLED" if phase.stalled else "")
        ),
    }
    foreign = {k: v for k, v in phase.outcomes.items() if k.startswith("raised:")}
    wrong = {k: phase.outcomes[k] for k in ("wrong-answer", "tool-error") if k in phase.outcomes}
    # An error the event loop logs (a task's exception nobody retrieved) escaped a caller too.
    loop_errors = [e for e in phase.log_errors if e.startswith("asyncio:")]
    escaped = ([phase.crash.splitlines()[-1]] if phase.crash else []) + phase.uncaught
    checks["typed"] = {
        "held": not foreign and not wrong and not escaped and not loop_errors,
        "detail": (
            f"not McpError: {foreign or 'none'}; wrong or error answers: {wrong or 'none'}; "
            f"escaped the callers: {escaped + loop_errors or 'nothing'}"
        ),
    }
    warm = monitor.warm
    if warm is None:
        checks["flat"] = {"held": False, "detail": "the phase never got past its warm-up"}
    else:
        later = [s for s in monitor.samples if s.calls >= warm.calls]
        top_rss = max(later, key=lambda s: s.rss_kib)
        top_fds = max(later, key=lambda s: s.fds)
        rss_limit = warm.rss_kib + RSS_BOUND_MIB * 1024
        phase.warm = asdict(warm)
        phase.max_after_warmup = {"rss_kib": top_rss.rss_kib, "fds": top_fds.fds}
        phase.rss_slope_bytes_per_call = round(_slope(later), 3)
        after_fds = phase.after["fds"]
        checks["flat"] = {
            "held": top_rss.rss_kib <= rss_limit
            and top_fds.fds <= warm.fds + FD_BOUND
            and after_fds <= phase.before["fds"] + FD_BOUND,
            "detail": (
                f"RSS {warm.rss_kib / 1024:.1f} MiB at warm-up ({warm.calls} calls), "
                f"at most {top_rss.rss_kib / 1024:.1f} MiB after (bound +{RSS_BOUND_MIB:g} MiB), "
                f"{phase.samples[-1][2] / 1024:.1f} MiB at the end; fds {warm.fds} at warm-up, "
                f"at most {top_fds.fds} after (bound +{FD_BOUND}); after stop {after_fds} "
                f"vs {phase.before['fds']} before the phase"
            ),
        }
    checks["no orphans"] = {
        "held": not phase.leftovers,
        "detail": (
            f"left behind after {phase.leftovers_after_s} s: {phase.leftovers}"
            if phase.leftovers
            else "no child of this process and no process with the run's marker after stop"
        ),
    }
    if phase.transport == "stdio":
        checks["chaos"] = {"held": phase.kills > 0, "detail": f"{phase.kills} kills"}
    else:
        total = sum(phase.drops.values())
        checks["chaos"] = {"held": total > 0, "detail": f"{total} drops {phase.drops}"}
    phase.invariants = checks


# --- the run, its files and its report -----------------------------------------------------


def code_version() -> str:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, cwd=ROOT, check=False
        ).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "mcp_core", "mcp_asyncio", "mcp_sync", "_mcp_io")
    return head + ("+dirty" if dirty else "")


def run(plan: Plan, out: Path | None, png: bool = True) -> tuple[dict[str, Any], Path | None]:
    run_id = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    marker = f"--soak-run={run_id}-{os.getpid()}"
    rng = random.Random(plan.seed)
    logging.getLogger().setLevel(logging.INFO)  # the counter sees the client's records
    logging.lastResort = None  # and nothing is printed for them
    record: dict[str, Any] = {
        "run": run_id,
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count(),
            "python": sys.version.split()[0],
            "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "code": code_version(),
        "plan": asdict(plan),
        "bounds": {
            "rss_mib_over_warmup": RSS_BOUND_MIB,
            "fds_over_warmup": FD_BOUND,
            "fds_after_stop_over_before": FD_BOUND,
            "orphan_grace_s": ORPHAN_GRACE_S,
        },
        "before": _snapshot(),
    }
    began = time.monotonic()
    phases: list[Phase] = []
    for driver, transport in PHASES:
        if driver not in plan.drivers or transport not in plan.transports:
            continue
        print(f"soak: {driver}/{transport} ...", flush=True)
        phase = run_phase(plan, driver, transport, marker, rng)
        phases.append(phase)
        print(report_phase(phase), flush=True)
    record["after"] = _snapshot()
    record["duration_s"] = round(time.monotonic() - began, 1)
    record["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    record["phases"] = [{"name": p.name, **asdict(p)} for p in phases]
    record["totals"] = totals(phases)
    record["held"] = all(p.held for p in phases)
    record["failed"] = [
        f"{p.name}: {name}: {check['detail']}"
        for p in phases
        for name, check in p.invariants.items()
        if not check["held"]
    ]
    path = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"soak-{run_id}.json"
        if png:
            record["chart"] = f"soak-{run_id}-rss.png"
            chart(phases, out / record["chart"], run_id)
        path.write_text(_dump(record) + "\n")
    return record, path


def _dump(record: dict[str, Any]) -> str:
    """Indented JSON with each list of numbers (a sample, the kill points) on one line."""
    text = json.dumps(record, indent=1)
    return re.sub(
        r"\[\s+([-0-9.e,\s]+?)\s+\]",
        lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
        text,
    )


def totals(phases: list[Phase]) -> dict[str, Any]:
    outcomes: collections.Counter[str] = collections.Counter()
    for p in phases:
        outcomes.update(p.outcomes)
    return {
        "calls": sum(p.calls for p in phases),
        "outcomes": dict(outcomes.most_common()),
        "kills": sum(p.kills for p in phases),
        "drops": sum(sum(p.drops.values()) for p in phases),
    }


def report_phase(p: Phase) -> str:
    lines = [
        f"  {p.name}: {p.calls} calls in {p.duration_s} s ({p.calls_per_s:.0f}/s), "
        f"{p.kills} kills, {sum(p.drops.values())} drops {p.drops or ''}",
        f"    outcomes: {p.outcomes}",
    ]
    for name, check in p.invariants.items():
        verdict = "held" if check["held"] else "FAILED"
        lines.append(f"    {name}: {verdict}: {check['detail']}")
    return "\n".join(lines)


def chart(phases: list[Phase], path: Path, run_id: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for p, colour in zip(phases, ("C0", "C1", "C2", "C3"), strict=False):
        xs = [s[0] / 1000 for s in p.samples]
        top.plot(xs, [s[2] / 1024 for s in p.samples], colour, lw=1, label=p.name)
        bottom.plot(xs, [s[3] for s in p.samples], colour, lw=1, label=p.name)
        if p.warm:
            w = p.warm["calls"] / 1000
            top.hlines(
                p.warm["rss_kib"] / 1024 + RSS_BOUND_MIB, w, xs[-1], colour, "dashed", lw=0.8
            )
            bottom.hlines(p.warm["fds"] + FD_BOUND, w, xs[-1], colour, "dashed", lw=0.8)
            top.plot([w], [p.warm["rss_kib"] / 1024], colour, marker="o", ms=4)
            bottom.plot([w], [p.warm["fds"]], colour, marker="o", ms=4)
    top.set_ylabel("RSS (MiB)")
    bottom.set_ylabel("open fds")
    bottom.set_xlabel("calls answered in the phase (thousands)")
    top.set_title(f"soak {run_id}: RSS and fds per phase (dot: end of warm-up; dashed: the bound)")
    top.legend(loc="lower right", fontsize=8)
    top.set_ylim(bottom=0)
    bottom.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, help="stdio calls per driver (1,000,000)")
    parser.add_argument("--http-calls", type=int, help="HTTP calls per driver (250,000)")
    parser.add_argument("--drivers", help="asyncio,sync")
    parser.add_argument("--transports", help="stdio,http")
    parser.add_argument("--kill-every", type=int, nargs=2, metavar=("LO", "HI"))
    parser.add_argument("--drop-every", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--smoke", action="store_true", help="the small plan of the smoke test")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where results go")
    parser.add_argument("--no-png", action="store_true")
    args = parser.parse_args(argv)
    plan = SMOKE if args.smoke else Plan()
    changes: dict[str, Any] = {}
    for name in ("calls", "http_calls", "drop_every", "seed"):
        if getattr(args, name) is not None:
            changes[name] = getattr(args, name)
    if args.kill_every is not None:
        changes["kill_every"] = tuple(args.kill_every)
    if args.drivers:
        changes["drivers"] = tuple(args.drivers.split(","))
    if args.transports:
        changes["transports"] = tuple(args.transports.split(","))
    plan = replace(plan, **changes)
    record, path = run(plan, args.out, png=not args.no_png)
    totals_ = record["totals"]
    print(
        f"soak {record['run']}: {totals_['calls']} calls, {totals_['kills']} kills, "
        f"{totals_['drops']} drops in {record['duration_s']} s; invariants "
        + ("held" if record["held"] else "FAILED:\n  " + "\n  ".join(record["failed"]))
    )
    if path is not None:
        print(f"results: {path}")
    return 0 if record["held"] else 1


if __name__ == "__main__":
    sys.exit(main())
