"""Draw the authorization fault matrix of docs/guarantees.md from the rows of
tests/drivers/test_auth_fault_matrix.py.

    .venv/bin/python scripts/auth_fault_matrix_table.py           # print the section
    .venv/bin/python scripts/auth_fault_matrix_table.py --write   # put it into docs/guarantees.md

The section sits between the START and END marker comments, after the server fault matrix; a
test there (test_docs_show_the_rows) fails while the page and the rows disagree: run this after
changing a row, and read the diff.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import doc_section  # scripts/, beside this file

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guarantees.md"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import mcp_core as core  # noqa: E402  (the repo root goes on sys.path first)
from tests.drivers.test_auth_fault_matrix import (  # noqa: E402
    AUTH_TIMEOUT,
    BY_TIMEOUT,
    CONNECT_STEPS,
    FAULTS,
    MARGIN,
    ROWS,
    STEPS,
    Row,
)
from tests.servers.auth_fault_server import ENDLESS_SLACK  # noqa: E402

START = (
    "<!-- authorization fault matrix: drawn from tests/drivers/test_auth_fault_matrix.py "
    "by scripts/auth_fault_matrix_table.py -->"
)
END = "<!-- end of the authorization fault matrix -->"


def outcome(text: str) -> str:
    """What a cell says of an outcome: at connect, the cause of the ``ConnectFailed``
    ("ConnectFailed permanent / AuthorizationFailed" -> "`AuthorizationFailed` (permanent)")."""
    outer, _, cause = text.partition(" / ")
    name, _, detail = outer.partition(" ")
    if name == "result":
        return "the result"
    if cause:
        return f"`{cause}`" + (f" ({detail})" if detail else "")
    return f"`{name}`"


def cell(row: Row | None) -> str:
    if row is None:
        return "n/a"
    text = outcome(row.caller) + (", by `timeout`" if row.by == BY_TIMEOUT else ", at once")
    if row.others not in ("-", row.caller):
        text += f"; a call beside it: {outcome(row.others)}"
    if row.then == "-":
        text += "; not retried"
    elif row.then != "result":
        text += f"; then: {outcome(row.then)}"
    elif row.fault.startswith("429") and row.step in CONNECT_STEPS:
        text += "; tried again after `Retry-After`"
    elif row.fault.startswith("429"):
        text += "; so is a call before `Retry-After` has passed, without asking the server"
    if row.xfail:
        text += " **(bug, see below)**"
    return text


def intro() -> str:
    cap, slack = core.AUTH_MAX_BYTES // 1024, ENDLESS_SLACK // 1024
    default = f"{core.AUTH_REQUEST_TIMEOUT:g}"
    text = f"""\
`tests/drivers/test_auth_fault_matrix.py` holds one table of authorization faults and runs each
row on `mcp_asyncio` (asyncio and trio) and on `mcp_sync`, in `make test`, against an
authorization server that misbehaves at one step of the flow
(`tests/servers/auth_fault_server.py`). The client has `oauth={{"timeout": {AUTH_TIMEOUT:g}}}`:
each request of the authorization layer gets that long ({default} s by default,
`mcp_core.AUTH_REQUEST_TIMEOUT`), never past the connect attempt's `init_timeout`. At every step
but refresh the fault is there from the start, and a cell names the `.cause` of the
`ConnectFailed` that `async with Client(...)` raises (with `fail_fast=True`; not permanent
unless the cell says so). At refresh the client has logged in and made a call, then its access
token is refused: a cell names what the next call raises, and a call made meanwhile gets the
same. `AuthorizationUnavailable` names the step (`.step`) and the authorization server's origin
(`.origin`). "At once" means without waiting for a timeout; "by `timeout`", within the request's
`timeout` for each URL the step tries (at a metadata step, two here: a URL that does not answer
is left for the next). Unless a cell says "not retried", the fault may pass by itself: once the
server behaves, the same client becomes ready without help (it retries with backoff, honouring
`Retry-After`) and the next call succeeds; after a refresh fault, with the refresh token it kept
(no new login). Every row also checks that each caller was answered by its deadline plus
{MARGIN:g} s; that an endless answer was read no further than `mcp_core.AUTH_MAX_BYTES` ({cap}
KiB: the server sends only as fast as the client reads, and sent at most {slack} KiB more); that
no redirect was followed; that no task, thread, file descriptor or process is left; and that no
token, code, state, verifier or client secret is in an error, a log record, `Status` or the
session recording (`record=`)."""
    paragraph = textwrap.fill(
        " ".join(text.split()), width=96, break_long_words=False, break_on_hyphens=False
    )
    return f"## Authorization faults, step by step\n\n{paragraph}\n"


def render() -> str:
    by_key = {(row.step, row.fault): row for row in ROWS}
    lines = [
        intro(),
        "| fault | " + " | ".join(STEPS) + " |",
        "|---" * (len(STEPS) + 1) + "|",
    ]
    for fault in FAULTS:
        cells = [cell(by_key.get((step, fault))) for step in STEPS]
        lines.append(f"| {fault} | " + " | ".join(cells) + " |")
    lines += ["", "The steps:", ""]
    lines += [f"- **{step}**: {what}." for step, what in STEPS.items()]
    lines += ["", "The faults:", ""]
    lines += [f"- **{fault}**: {what}." for fault, what in FAULTS.items()]
    bugs = [row for row in ROWS if row.xfail]
    if bugs:
        lines += ["", "Rows that fail today (strict `xfail`: they fail the run once fixed):", ""]
        lines += [f"- {row.step}, {row.fault}: {row.xfail}." for row in bugs]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    doc_section.main(PAGE, render, START, END, "the authorization fault matrix")
