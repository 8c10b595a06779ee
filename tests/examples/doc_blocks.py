"""The ```python blocks of a Markdown page, as a reader copies them: found, classified by the
marker before each, run as programs and type-checked.

Every python block (info string ``python`` or ``py``) must be one of:

- ``<!-- run: NAME -->`` on the line before its fence: a test runs it (``run_block``) and checks
  what it printed; NAME says which check;
- ``<!-- not run: REASON -->`` on the line before its fence: it is only type-checked;
- another library's code, by its fence's title (``python title="official SDK ..."``, see
  ``OTHER_TITLES``): the page shows it for comparison; it is neither ours to run nor ours to
  type-check.

``blocks(page)`` raises for a block with none of these, so a new block cannot go untested by
being forgotten.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from tests.conftest import REPO_ROOT

OTHER_TITLES = ("official SDK", "FastMCP")
RUN_DEADLINE = 60.0  # one block's run: a server start plus a few seconds of calls
MYPY_DEADLINE = 300.0  # a cold mypy cache over the packages the blocks import

_FENCE = re.compile(r"^```(\S*)(.*)$")
_RUN = re.compile(r"^<!-- run: ([a-z0-9-]+) -->$")
_NOT_RUN = re.compile(r"^<!-- not run: \S.* -->$")
_TITLE = re.compile(r'title="([^"]*)"')


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    code: str
    kind: str  # "run", "not run" or "other"
    name: str  # the run marker's NAME; "" otherwise

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(page: Path, section: str | None = None) -> list[Block]:
    """Every python block of ``page`` in order; AssertionError for one without a marker.
    ``section``: only the blocks under the ``## `` heading of that title (to the next one),
    for a page whose sections are tested one by one."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    shown = str(page.relative_to(REPO_ROOT))
    i, end_at = 0, len(lines)
    if section is not None:
        i = lines.index(f"## {section}")
        end_at = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("## ")), end_at)
    while i < end_at:
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == "```"), None)
        assert end is not None, f"{shown}:{i + 1}: a code block that never ends"
        if fence.group(1) in ("python", "py"):
            found.append(_classify(shown, i, lines, "\n".join(lines[i + 1 : end]) + "\n"))
        i = end + 1
    return found


def _classify(page: str, i: int, lines: list[str], code: str) -> Block:
    title = _TITLE.search(lines[i])
    if title and title.group(1).startswith(OTHER_TITLES):
        return Block(page, i + 1, code, "other", "")
    before = next((line.strip() for line in reversed(lines[:i]) if line.strip()), "")
    if run := _RUN.match(before):
        return Block(page, i + 1, code, "run", run.group(1))
    if _NOT_RUN.match(before):
        return Block(page, i + 1, code, "not run", "")
    raise AssertionError(
        f"{page}:{i + 1}: a python block with no marker before it: add `<!-- run: NAME -->` "
        "and a check in the page's test, or `<!-- not run: why -->` (see tests/examples/"
        "doc_blocks.py)"
    )


def run_block(
    block: Block,
    tmp_path: Path,
    *,
    replace: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """Run ``block`` as a program (``sys.executable``, the repository root as working directory
    and ``PYTHONPATH``) and return its stdout; AssertionError with its output if it fails or
    is still running at the deadline. ``replace``: text of the block to replace first (each
    must be there), e.g. a remote URL by a local server's."""
    code = block.code
    for old, new in (replace or {}).items():
        assert old in code, f"{block.where}: {old!r} is not in the block any more"
        code = code.replace(old, new)
    script = tmp_path / f"{block.name or 'block'}_{block.line}.py"
    script.write_text(code, encoding="utf-8")
    environ = {**os.environ, **(env or {})}
    environ["PYTHONPATH"] = str(REPO_ROOT)
    # npx finds server-everything in ./node_modules (the working directory's); offline, so
    # a block that would fetch anything from the npm registry fails instead.
    environ["npm_config_offline"] = "true"
    if "BROWSER" not in (env or {}):
        environ.pop("BROWSER", None)
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=REPO_ROOT,
            env=environ,
            capture_output=True,
            text=True,
            timeout=RUN_DEADLINE,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"{block.where} still running after {RUN_DEADLINE:g} s; stdout:\n{exc.stdout!r}\n"
            f"stderr:\n{exc.stderr!r}"
        ) from None
    assert done.returncode == 0, (
        f"{block.where} exited {done.returncode}; stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    )
    return done.stdout


def mypy_strict(checked: list[Block], tmp_path: Path) -> None:
    """``mypy --strict`` over ``checked``, one file per block, as a reader type-checks what they
    copied; AssertionError with mypy's report, naming each block's page and line."""
    # A directory of their own: mypy searches the files' directory for imports, so anything
    # else there (a module named like a dependency) would be found first.
    folder = tmp_path / "mypy"
    folder.mkdir()
    files: dict[str, Block] = {}
    for block in checked:
        path = folder / f"block_{Path(block.page).stem.replace('-', '_')}_{block.line}.py"
        path.write_text(block.code, encoding="utf-8")
        files[str(path)] = block
    # The blocks import our packages from this tree (MYPYPATH), not from wherever the
    # environment's install points. A cache of its own: no other mypy run writes to it (a
    # cold one costs a few seconds).
    command = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary"]
    done = subprocess.run(
        [*command, "--cache-dir", str(tmp_path / "mypy-cache"), *files],
        cwd=REPO_ROOT,
        env={**os.environ, "MYPYPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=MYPY_DEADLINE,
    )
    report = done.stdout + done.stderr
    for path, block in files.items():  # a block's line n is the page's line block.line + n
        report = re.sub(re.escape(path) + r":(\d+)", partial(_page_line, block), report)
    assert done.returncode == 0, f"mypy --strict refuses these blocks:\n{report}"


def _page_line(block: Block, match: re.Match[str]) -> str:
    return f"{block.page}:{block.line + int(match.group(1))}"
