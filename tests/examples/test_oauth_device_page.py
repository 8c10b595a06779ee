"""docs/oauth.md, its "Device login" section: the blocking and the asyncio block run against
the device-grant test server (tests/servers/device_auth_server.py, which approves the login at
its first poll, as the person would on their phone), what they print is checked, and they pass
``mypy --strict``. Only this section's blocks: the rest of the page is not run here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.examples.doc_blocks import Block, mypy_strict, run_block

PAGE = REPO_ROOT / "docs" / "oauth.md"
SECTION = "## Device login"
URL = "https://notes.example.com/mcp"
CLIENT_ID = '"client_id": "notes-cli"'

pytestmark = pytest.mark.timeout(180)

_RUN = re.compile(r"^<!-- run: ([a-z0-9-]+) -->$")


def section_blocks() -> list[Block]:
    """The section's python blocks, each with the run marker before it (any other block
    there is an error: it would go untested)."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index(SECTION)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    found: list[Block] = []
    i = start
    while i < end:
        if lines[i].startswith("```python"):
            close = lines.index("```", i + 1)
            marker = _RUN.match(lines[i - 1])
            assert marker, f"docs/oauth.md:{i + 1}: a block of {SECTION!r} without a run marker"
            code = "\n".join(lines[i + 1 : close]) + "\n"
            found.append(Block("docs/oauth.md", i + 1, code, "run", marker.group(1)))
            i = close
        i += 1
    return found


def block(name: str) -> Block:
    (found,) = [b for b in section_blocks() if b.name == name]
    return found


def local(peer: Any) -> dict[str, str]:
    return {URL: peer.url, CLIENT_ID: '"client_id": "device-test-client"'}


def test_every_block_is_run() -> None:
    assert [b.name for b in section_blocks()] == ["device-blocking", "device-asyncio"]


def test_the_blocking_block_logs_in_with_the_code_on_stderr(
    device_auth_server: Any, tmp_path: Path
) -> None:
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "1")
    # FileTokenStore() writes to the user's data directory: here, tmp_path's.
    out = run_block(
        block("device-blocking"),
        tmp_path,
        replace=local(peer),
        env={"XDG_DATA_HOME": str(tmp_path)},
    )
    assert out == "hello\n"
    assert list(tmp_path.glob("*/tokens.json"))  # the login was kept


def test_the_asyncio_block_shows_the_code_its_own_way(
    device_auth_server: Any, tmp_path: Path
) -> None:
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "1")
    out = run_block(block("device-asyncio"), tmp_path, replace=local(peer)).splitlines()
    origin = peer.url.rsplit("/", 1)[0]
    assert len(out) == 2 and out[1] == "hello"
    assert re.fullmatch(
        rf"visit {re.escape(origin)}/device and enter [A-Z]{{4}}-[A-Z]{{4}}", out[0]
    )


def test_mypy_strict(tmp_path: Path) -> None:
    mypy_strict(section_blocks(), tmp_path)
