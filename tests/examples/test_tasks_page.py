"""docs/tasks.md: its blocks run against server-everything (started by the page's own ``npx
-y`` command, from ./node_modules with npm offline), what they print is checked, and they pass
``mypy --strict``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, node_bin
from tests.examples.doc_blocks import blocks, mypy_strict, run_block

PAGE = REPO_ROOT / "docs" / "tasks.md"

pytestmark = pytest.mark.timeout(180)


def test_every_block_is_run() -> None:
    assert [b.name for b in blocks(PAGE)] == ["tasks-blocking", "tasks-asyncio", "tasks-client"]


def test_the_blocking_block_follows_the_task(tmp_path: Path) -> None:
    node_bin("mcp-server-everything")  # skips (fails under CI) without `make node_modules`
    (block,) = [b for b in blocks(PAGE) if b.name == "tasks-blocking"]
    out = run_block(block, tmp_path).splitlines()
    stages = [
        "status: Gathering sources...",
        "status: Analyzing content...",
        "status: Synthesizing findings...",
        "status: Generating report...",
        "status: completed",
    ]
    # Polled once a second, a stage as short as a poll may pass unseen: those seen are in order.
    assert out[-1] == "# Research Report: tides"
    assert out[:-1] == [line for line in stages if line in out] and len(out) >= 3


def test_the_asyncio_block_uses_a_handle(tmp_path: Path) -> None:
    node_bin("mcp-server-everything")
    (block,) = [b for b in blocks(PAGE) if b.name == "tasks-asyncio"]
    out = run_block(block, tmp_path).splitlines()
    assert out[0] == "started: working"
    assert out[1] in ("now: working", "now: completed")
    assert out[2:] == ["listed: True", "# Research Report: reefs"]


def test_the_client_block_runs_its_handler_as_a_task(tmp_path: Path) -> None:
    node_bin("mcp-server-everything")
    (block,) = [b for b in blocks(PAGE) if b.name == "tasks-client"]
    # Only a client that declared the task capability is offered this tool: its first line
    # says the server polled the client's task to its end and got the result.
    assert run_block(block, tmp_path).splitlines() == ["[COMPLETED] Async sampling completed!"]


def test_mypy_strict(tmp_path: Path) -> None:
    mypy_strict(blocks(PAGE), tmp_path)
