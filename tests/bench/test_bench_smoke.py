"""`make test` runs the benchmarks once with a tiny N: proof that they work, never a timing.

Every assertion is a count: each client and suite produced its records, and every call a
measurement made was answered (`extra.answered == n`). Speed is measured by `make bench` only.
"""

from __future__ import annotations

import importlib.util
import os
from collections import Counter
from typing import Any

import pytest

from bench import run_stdio

pytestmark = pytest.mark.slow


def _require(module: str) -> None:
    """The bench extra (pyproject `[bench]`) must be installed; skip outside CI, fail in it."""
    if importlib.util.find_spec(module) is None:
        message = f"{module} is missing: install the bench extra (pip install -e '.[bench]')"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _assert_all_answered(records: list[dict[str, Any]]) -> None:
    counted = [r for r in records if "answered" in r.get("extra", {})]
    assert counted, "no record says how many calls were answered"
    short = [
        (r["suite"], r["client"], r.get("server"), r["metric"], r["extra"]["answered"], r["n"])
        for r in counted
        if r["extra"]["answered"] != r["n"]
    ]
    assert not short, f"calls left unanswered: {short}"


def test_stdio_smoke() -> None:
    _require("fastmcp")
    records = run_stdio.smoke()

    failed = [
        (r["suite"], r["client"], r["extra"]["why"]) for r in records if r["metric"] == "failed"
    ]
    assert not failed, failed
    _assert_all_answered(records)

    plan = run_stdio.smoke_plan()  # without ts-sdk where node is missing (skipped, logged)
    rates = Counter(
        r["client"] for r in records if r["suite"] == "stdio" and r["metric"] == "calls_per_s"
    )
    expected = {
        client: 1 if client == "raw-blocking" else len(plan.concurrencies)
        for client in plan.clients
    }
    assert rates == expected
    cold = Counter(r["client"] for r in records if r["metric"] == "cold_start_ms")
    assert cold == dict.fromkeys(plan.clients, 1)
    imports = {r["client"] for r in records if r["suite"] == "import"}
    assert imports == set(run_stdio.IMPORTS)
    core = [r for r in records if r["suite"] == "core" and r["metric"] == "calls_per_s"]
    assert [r["n"] for r in core] == [plan.core_n]
    sessions = {r["client"] for r in records if r["metric"] == "kib_per_session"}
    assert sessions == {*run_stdio.SESSION_CLIENTS, "ours-core"}
    flood = [r for r in records if r["metric"] == "peak_rss_mib" and r["suite"] == "memory"]
    assert {r["client"] for r in flood} == set(run_stdio.ASYNC_CLIENTS)
    assert {r["n"] for r in flood} == {plan.flood}


@pytest.mark.skipif(
    importlib.util.find_spec("bench.run_http") is None, reason="bench/run_http.py not written yet"
)
def test_http_smoke() -> None:
    from bench import run_http

    records = run_http.smoke()
    assert records
    _assert_all_answered(records)


def test_core_halves_time_both_halves_of_every_call() -> None:
    from bench import core_halves
    from bench.clients.worker import run_core

    result = run_core({"mode": "core", "n": 600, "window": 256, "chunk": 65536})
    assert result["answered"] == 600  # every call answered, in rounds of 256
    request, answer = core_halves.halves(600)
    assert request > 0 and answer > 0
