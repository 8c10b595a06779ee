"""docs/migration.md shows the official SDK's and FastMCP's client code next to ours. Each block
of ours runs here against server-everything (started by the page's own ``npx -y`` command,
from ./node_modules with npm offline), and what it prints is checked; all of ours pass
``mypy --strict``.

The other SDKs' blocks (titled ``official SDK ...`` or ``FastMCP ...``) are not ours to
type-check, but they run too, with the versions this repository installs (``mcp`` from the
dev extra, ``fastmcp`` from the bench extra), and must print exactly what their twin prints:
the first block of ours after them. So the page cannot claim a translation that does
something else, nor use a name the other SDK does not have.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, node_bin
from tests.examples.doc_blocks import Block, blocks, mypy_strict, run_block

PAGE = REPO_ROOT / "docs" / "migration.md"

pytestmark = pytest.mark.timeout(180)

SESSION = (
    "True\n"
    "1.0/2.0\n"
    "2.0/2.0\n"
    "False ['Long running operation completed. Duration: 0.2 seconds, Steps: 2.']\n"
    "['# Everything S']\n"
    "1\n"
)

# What each block of ours prints, by its run marker.
EXPECTED = {
    "session-asyncio": SESSION,
    "session-sync": SESSION,
    "handlers": (
        "trigger-sampling-request True False False\n"
        "trigger-elicitation-request False True False\n"
        "get-roots-list False False True\n"
    ),
    "fastmcp-client": "True\nCloudy\nrefused: True\n",
    "group": "True True\nThe sum of 2 and 3 is 5.\n{'everything': 'ready', 'fs': 'ready'}\n",
}


def page_blocks() -> list[Block]:
    return blocks(PAGE)  # AssertionError for a block with no marker


def twin(other: Block) -> str:
    """The run marker of the first block of ours after ``other``."""
    found = page_blocks()
    after = found[found.index(other) + 1 :]
    return next(b.name for b in after if b.kind == "run")


def servers_installed() -> None:
    node_bin("mcp-server-everything")  # skips (fails under CI) without `make node_modules`
    node_bin("mcp-server-filesystem")


def test_every_python_block_is_run_marked_or_another_sdks() -> None:
    found = page_blocks()
    names = [b.name for b in found if b.kind == "run"]
    assert sorted(names) == sorted(EXPECTED), "every run marker has its output here, and only those"
    others = [b for b in found if b.kind == "other"]
    assert len(others) == 3  # the SDK's session and callbacks, FastMCP's client
    assert [twin(b) for b in others] == ["session-asyncio", "handlers", "fastmcp-client"]


@pytest.mark.parametrize("name", EXPECTED)
def test_our_block(name: str, tmp_path: Path) -> None:
    servers_installed()
    (block,) = [b for b in page_blocks() if b.name == name]
    assert run_block(block, tmp_path) == EXPECTED[name]


@pytest.mark.parametrize(
    "other", [b for b in blocks(PAGE) if b.kind == "other"], ids=lambda b: f"line-{b.line}"
)
def test_the_other_sdks_block_prints_what_ours_does(other: Block, tmp_path: Path) -> None:
    servers_installed()
    module = "fastmcp" if "from fastmcp" in other.code else "mcp"
    if importlib.util.find_spec(module) is None:  # the bench extra (fastmcp) or dev extra (mcp)
        message = f"{module} is not installed here: `make venv` installs it"
        if os.environ.get("CI"):
            pytest.fail(message)  # as for the npm servers: CI never goes green by skipping
        pytest.skip(message)
    assert run_block(other, tmp_path) == EXPECTED[twin(other)]


def test_mypy_strict(tmp_path: Path) -> None:
    mypy_strict([b for b in page_blocks() if b.kind != "other"], tmp_path)
