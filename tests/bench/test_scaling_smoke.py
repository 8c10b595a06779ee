"""`make test` runs the scaling benchmark (bench/run_scaling.py) once with its tiny plan: proof
that every part works, never a timing.

Every assertion is a count: each curve client has a point at each concurrency of the plan, each
memory client a figure at each session count, every call was answered (`extra.answered == n`)
and each ClientGroup left no process behind.
"""

from __future__ import annotations

from collections import Counter

import pytest

from bench import run_scaling
from bench.run_stdio import unavailable

pytestmark = pytest.mark.slow


def test_scaling_smoke() -> None:
    records = run_scaling.smoke()
    plan = run_scaling.SMOKE

    failed = [(r["client"], r["extra"]["why"]) for r in records if r["metric"] == "failed"]
    assert not failed, failed
    counted = [r for r in records if "answered" in r.get("extra", {})]
    assert counted
    short = [
        (r["client"], r["extra"]["part"], r["metric"], r["extra"]["answered"], r["n"])
        for r in counted
        if r["extra"]["answered"] != r["n"]
    ]
    assert not short, f"calls left unanswered: {short}"

    clients = [c for c in plan.clients if unavailable(c) is None]
    points = Counter(
        (r["client"], r["concurrency"])
        for r in records
        if r["extra"]["part"] == "curve" and r["metric"] == "calls_per_s"
    )
    assert points == {(c, k): 1 for c in clients for k in plan.concurrencies}

    memory = Counter(
        (r["client"], r["n"])
        for r in records
        if r["extra"]["part"] == "memory" and r["metric"] == "kib_per_session"
    )
    expected = {(c, s): 1 for c in (*plan.memory_clients, "ours-core") for s in plan.sessions}
    assert memory == expected

    left = {r["client"]: r["value"] for r in records if r["metric"] == "processes_left"}
    assert left == {f"ours-{driver}": 0 for driver in plan.group_drivers}
    tools = {
        r["client"]: r["extra"]["tools"]
        for r in records
        if r["metric"] == "calls_per_s" and r["extra"]["part"] == "group"
    }
    assert tools == {f"ours-{driver}": plan.group_servers for driver in plan.group_drivers}
