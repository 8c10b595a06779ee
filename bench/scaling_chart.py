"""Draw a scaling run (bench/run_scaling.py) into one PNG, and summarise it as text.

    python bench/scaling_chart.py results/scaling-X.jsonl [--out X.png]

Four panels: calls/s and p99 latency against calls in flight (log x; the median over the
run's repeats), KiB per open session and the process's total RSS growth against open sessions;
the ClientGroup figures in a box below them. matplotlib's Agg backend: no display needed.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

ORDER = ("ours-asyncio", "ours-sync", "sdk", "ts-sdk", "raw-asyncio", "ours-core")
COLORS = {  # as bench/report.py draws them
    "ours-asyncio": "#1f77b4",
    "ours-sync": "#6baed6",
    "ours-core": "#08519c",
    "sdk": "#d62728",
    "ts-sdk": "#9467bd",
    "raw-asyncio": "#2ca02c",
}

# (part, client, metric) -> x (C or S) -> median value
Curves = dict[tuple[str, str, str], dict[int, float]]


def medians(records: list[dict[str, Any]]) -> Curves:
    """The median over repeats of every figure, by part, client, metric and x: C (calls in
    flight) for the curve and group, S (sessions, the record's n) for memory."""
    samples: dict[tuple[str, str, str], dict[int, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in records:
        part = r.get("extra", {}).get("part")
        if r["suite"] != "scaling" or part is None:
            continue
        x = r["n"] if part == "memory" else r["concurrency"]
        samples[part, r["client"], r["metric"]][x].append(r["value"])
    return {
        key: {x: statistics.median(v) for x, v in sorted(by_x.items())}
        for key, by_x in samples.items()
    }


def clients_of(curves: Curves, part: str, metric: str) -> list[str]:
    found = {client for (p, client, m) in curves if p == part and m == metric}
    return [c for c in ORDER if c in found] + sorted(found - set(ORDER))


def n_per_point(records: list[dict[str, Any]]) -> dict[str, dict[int, int]]:
    """client -> C -> N of the curve points."""
    out: dict[str, dict[int, int]] = defaultdict(dict)
    for r in records:
        if r.get("extra", {}).get("part") == "curve" and r["metric"] == "calls_per_s":
            out[r["client"]][r["concurrency"]] = r["n"]
    return out


def group_lines(records: list[dict[str, Any]], curves: Curves) -> list[str]:
    """One header line for the group part, then one line per driver."""
    shape = [  # (servers, calls, in flight)
        (r["extra"]["servers"], r["n"], r["concurrency"])
        for r in records
        if r.get("extra", {}).get("part") == "group"
    ]
    clients = clients_of(curves, "group", "calls_per_s")
    if not shape or not clients:
        return []
    servers, calls, in_flight = shape[0]
    lines = [
        f"One ClientGroup of {servers} stdlib-min servers, {calls:,} calls round-robin over "
        f"their tools, {in_flight} in flight (median of repeats):"
    ]
    for client in clients:

        def get(metric: str, client: str = client) -> float:
            values = list(curves.get(("group", client, metric), {}).values())
            return values[0] if values else float("nan")

        lines.append(
            f"{client:12}  start {get('group_start_ms'):6,.0f} ms  "
            f"{get('calls_per_s'):7,.0f} calls/s  p99 {get('p99_ms'):7,.1f} ms  "
            f"peak RSS {get('peak_rss_mib'):5,.1f} MiB (servers {get('servers_rss_mib'):,.0f} MiB)"
            f"  close {get('close_ms'):5,.0f} ms  processes left {get('processes_left'):.0f}"
        )
    return lines


def summary(records: list[dict[str, Any]]) -> str:
    """A plain-text table of the medians (what the run printed as it went, collected)."""
    curves = medians(records)
    out = []
    for metric, label in (("calls_per_s", "calls/s"), ("p99_ms", "p99 ms")):
        clients = clients_of(curves, "curve", metric)
        xs = sorted({x for c in clients for x in curves[("curve", c, metric)]})
        if not xs:
            continue
        out.append(f"{label:14}" + "".join(f"{x:>10}" for x in xs))
        for client in clients:
            row = curves[("curve", client, metric)]
            digits = 0 if metric == "calls_per_s" else 1
            out.append(
                f"{client:14}"
                + "".join(f"{row[x]:>10,.{digits}f}" if x in row else f"{'-':>10}" for x in xs)
            )
    for metric, label in (("kib_per_session", "KiB/session"), ("rss_growth_mib", "growth MiB")):
        clients = clients_of(curves, "memory", metric)
        xs = sorted({x for c in clients for x in curves[("memory", c, metric)]})
        if not xs:
            continue
        out.append(f"{label:14}" + "".join(f"{x:>10}" for x in xs))
        for client in clients:
            row = curves[("memory", client, metric)]
            out.append(
                f"{client:14}"
                + "".join(f"{row[x]:>10,.1f}" if x in row else f"{'-':>10}" for x in xs)
            )
    return "\n".join(out + group_lines(records, curves))


def draw(records: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    curves = medians(records)
    plain = FuncFormatter(lambda v, _pos: f"{v:,.0f}" if v >= 1 else f"{v:g}")
    fig, axes = plt.subplots(2, 2, figsize=(14, 10.5))
    panels = [
        (axes[0][0], "curve", "calls_per_s", "calls/s (higher is better)", "calls in flight"),
        (axes[0][1], "curve", "p99_ms", "p99 latency, ms (lower is better)", "calls in flight"),
        (axes[1][0], "memory", "kib_per_session", "KiB per session", "open sessions"),
        (axes[1][1], "memory", "rss_growth_mib", "RSS growth, MiB", "open sessions"),
    ]
    for ax, part, metric, ylabel, xlabel in panels:
        log_y = metric != "kib_per_session"
        for client in clients_of(curves, part, metric):
            points = curves[(part, client, metric)]
            if log_y:  # a growth that rounds to 0 pages has no place on a log axis
                points = {x: v for x, v in points.items() if v > 0}
            label = client
            if client == "ours-core":
                label = "ours-core (SessionMachine alone)"
            elif client == "ours-sync" and part == "curve":
                label = "ours-sync (threads; to 1024)"
            ax.plot(
                list(points),
                list(points.values()),
                marker="o",
                label=label,
                color=COLORS.get(client),
                linestyle="--" if client.startswith("raw") or client == "ours-core" else "-",
            )
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(plain)
        if log_y:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(plain)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_title("tools/call rate against stdlib-min (median of repeats)")
    axes[0][1].set_title("p99 latency per call (includes waiting for its turn)")
    axes[1][0].set_title("memory per open session (client process only)")
    axes[1][1].set_title("total RSS growth of the client process")
    run = next((r for r in records if r["suite"] == "scaling"), None)
    if run is not None:
        machine = run["machine"]
        loads = [r["extra"]["loadavg"] for r in records if "loadavg" in r.get("extra", {})]
        during = f", {max(loads)} at most after a point" if loads else ""
        fig.suptitle(
            f"Scaling, run {run['run']} (code {run['code']}, {machine['cores']} cores, "
            f"load average {machine['loadavg_at_start']} at start{during})",
            fontsize=13,
        )
    lines = group_lines(records, curves)
    if lines:
        fig.text(
            0.02,
            0.012,
            "\n".join(lines),
            ha="left",
            va="bottom",
            fontsize=8.5,
            family="monospace",
            bbox={"boxstyle": "round", "facecolor": "#f4f4f4", "edgecolor": "#999999"},
        )
    fig.tight_layout(rect=(0, 0.02 + 0.018 * len(lines), 1, 0.96))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="default: the file's .png")
    args = parser.parse_args()
    with args.file.open() as file:
        records = [json.loads(line) for line in file if line.strip()]
    print(summary(records))
    out = args.out or args.file.with_suffix(".png")
    draw(records, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
