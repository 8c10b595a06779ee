"""`make test` runs the chaos soak (bench/soak.py) once with its small plan: proof that it
works and that its invariants hold at a few thousand calls; `make soak` is the long run.

The soak runs in a process of its own (it counts that process's children, RSS and fds). This
test re-checks its invariants from the raw figures in the result file, not only its verdict.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SOAK = Path(__file__).resolve().parents[2] / "bench" / "soak.py"
PHASES = ["asyncio/stdio", "asyncio/http", "sync/stdio", "sync/http"]


def test_soak_smoke(tmp_path: Path) -> None:
    png = importlib.util.find_spec("matplotlib") is not None  # the bench extra
    argv = [sys.executable, str(SOAK), "--smoke", "--out", str(tmp_path)]
    done = subprocess.run(
        argv if png else [*argv, "--no-png"], capture_output=True, text=True, timeout=100
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [result] = tmp_path.glob("soak-*.json")
    record = json.loads(result.read_text())
    assert record["held"] and not record["failed"], record["failed"]
    if png:
        assert (tmp_path / record["chart"]).stat().st_size > 0

    phases = {p["name"]: p for p in record["phases"]}
    assert list(phases) == PHASES
    rss_bound = record["bounds"]["rss_mib_over_warmup"] * 1024
    fd_bound = record["bounds"]["fds_over_warmup"]
    for name, p in phases.items():
        assert all(check["held"] for check in p["invariants"].values()), (name, p["invariants"])
        # Every call answered exactly once, with its own answer or a typed error.
        assert sum(p["outcomes"].values()) == p["calls"], (name, p["outcomes"])
        assert p["outcomes"].get("ok", 0) > p["calls"] // 2, (name, p["outcomes"])
        assert not [k for k in p["outcomes"] if k.startswith("raised:")], (name, p["outcomes"])
        assert "wrong-answer" not in p["outcomes"], (name, p["outcomes"])
        left = (p["unanswered"], p["answered_twice"], p["pending"], p["client_pending"])
        assert left == (0, 0, 0, 0), (name, left)
        assert not p["stalled"], name
        # Flat after warm-up; nothing left behind.
        later = [s for s in p["samples"] if s[0] >= p["warm"]["calls"]]
        assert later, name
        assert max(s[2] for s in later) <= p["warm"]["rss_kib"] + rss_bound, name
        assert max(s[3] for s in later) <= p["warm"]["fds"] + fd_bound, name
        assert p["after"]["fds"] <= p["before"]["fds"] + fd_bound, name
        assert p["leftovers"] == [], (name, p["leftovers"])
        # A couple of kills (stdio) and drops (HTTP) really happened.
        if p["transport"] == "stdio":
            assert p["kills"] >= 2, (name, p["kills"])
            assert p["outcomes"].get("ServerExited", 0) > 0, (name, p["outcomes"])
        else:
            assert sum(p["drops"].values()) >= 2, (name, p["drops"])
    assert record["totals"]["calls"] == sum(p["calls"] for p in phases.values())
