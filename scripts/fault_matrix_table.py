"""Draw the fault matrix of docs/guarantees.md from the rows of
tests/drivers/test_fault_matrix.py.

    .venv/bin/python scripts/fault_matrix_table.py           # print the section
    .venv/bin/python scripts/fault_matrix_table.py --write   # put it into docs/guarantees.md

The section sits between the START and END marker comments; a test there
(test_docs_show_the_rows) fails while the page and the rows disagree: run this after changing
a row, and read the diff.
"""

from __future__ import annotations

import sys
from pathlib import Path

import doc_section  # scripts/, beside this file

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guarantees.md"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.drivers.test_fault_matrix import (  # noqa: E402  (the repo root goes on sys.path first)
    CANCELS_TASK,
    CONNECT_FAULTS,
    FAULTS,
    ROWS,
    TRANSPORTS,
    Row,
)

START = (
    "<!-- fault matrix: drawn from tests/drivers/test_fault_matrix.py "
    "by scripts/fault_matrix_table.py -->"
)
END = "<!-- end of the fault matrix -->"


def outcome(text: str) -> str:
    """ "HttpError 503 | NotReady" -> "`HttpError(503)` or `NotReady`"."""
    shown = []
    for choice in text.split("|"):
        name, _, detail = choice.strip().partition(" ")
        if name == "result":
            shown.append("the result")
        elif name == "cancelled":
            shown.append("returns at once, cancelled")
        elif detail == "permanent":
            shown.append(f"`{name}` (permanent)")
        elif detail:
            shown.append(f"`{name}({detail})`")
        else:
            shown.append(f"`{name}`")
    return " or ".join(shown)


def cell(row: Row | None) -> str:
    if row is None:
        return "n/a"
    text = outcome(row.caller)
    if row.fault in CANCELS_TASK:
        text += "; the server gets `tasks/cancel`"
    if row.others not in ("result", "-"):
        text += f"; a call beside it: {outcome(row.others)}"
    if row.then == "-" and row.fault not in CONNECT_FAULTS:
        text += "; the server is gone"
    elif row.then not in ("result", "-"):
        text += f"; the next call: {outcome(row.then)}"
    if row.xfail:
        text += " **(bug, see below)**"
    return text


def render() -> str:
    by_key = {(row.transport, row.fault): row for row in ROWS}
    lines = [
        "| fault | " + " | ".join(TRANSPORTS.values()) + " |",
        "|---" * (len(TRANSPORTS) + 1) + "|",
    ]
    for fault in FAULTS:
        cells = [cell(by_key.get((transport, fault))) for transport in TRANSPORTS]
        lines.append(f"| {fault} | " + " | ".join(cells) + " |")
    lines += ["", "The faults:", ""]
    lines += [f"- **{fault}**: {what}." for fault, what in FAULTS.items()]
    bugs = [row for row in ROWS if row.xfail]
    if bugs:
        lines += ["", "Rows that fail today (strict `xfail`: they fail the run once fixed):", ""]
        lines += [f"- {TRANSPORTS[row.transport]}, {row.fault}: {row.xfail}." for row in bugs]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    doc_section.main(PAGE, render, START, END, "the fault matrix")
