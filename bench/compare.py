"""Two REPORT.md files side by side: every target's measured ratio before and after a change.

    python bench/compare.py OLD_REPORT.md bench/results/REPORT.md > bench/results/COMPARE.md

Rows are matched by target and detail; a change of more than 10% either way is marked, which
on these shared 2-core machines is about where noise ends for one run of `make bench`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NOISE = 0.10


def targets(path: Path) -> dict[tuple[str, str], tuple[float, str]]:
    """(target, detail) -> (measured, goal) from a report's Targets table."""
    rows: dict[tuple[str, str], tuple[float, str]] = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("target", "---"):
            continue
        try:
            measured = float(cells[1])
        except ValueError:
            continue
        rows[cells[0], cells[4]] = (measured, cells[2])
    return rows


def render(old: Path, new: Path) -> str:
    before, after = targets(old), targets(new)
    lines = [
        f"# {old} vs {new}",
        "",
        "| target | detail | goal | before | after | after / before |",
        "|---|---|---|---|---|---|",
    ]
    for key in [k for k in after if k in before]:
        (was, goal), (now, _) = before[key], after[key]
        change = now / was if was else float("nan")
        # For a '<=' goal smaller is better; either way, mark what moved beyond the noise.
        worse = change > 1 + NOISE if goal.startswith("<=") else change < 1 - NOISE
        better = change < 1 - NOISE if goal.startswith("<=") else change > 1 + NOISE
        mark = " **worse**" if worse else " better" if better else ""
        lines.append(
            f"| {key[0]} | {key[1]} | {goal} | {was:.2f} | {now:.2f} | {change:.2f}{mark} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    print(render(args.old, args.new), end="")


if __name__ == "__main__":
    main()
