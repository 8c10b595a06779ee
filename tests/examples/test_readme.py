"""The README's python blocks are programs a newcomer copies: each one runs here, as written,
against real servers, and what it prints is checked; all of them pass ``mypy --strict``.

The stdio blocks start server-everything with the README's own command (``npx -y
@modelcontextprotocol/server-everything``), run from the repository root with npm offline: npx
finds the server in ./node_modules, as after ``make demo``, and never fetches it.

The remote blocks name servers at ``https://*.example.com``; each runs with that URL replaced
by a local server's on 127.0.0.1 (nothing else of the block is changed): the token block
against the official SDK's server over Streamable HTTP and over HTTP+SSE and against
server-everything's, the OAuth block against the SDK's server behind the SDK's own
authorization server, with a headless browser (``BROWSER``) that follows the redirect the
way a user's does, and the token file in a temporary data directory (``XDG_DATA_HOME``).

A block with no ``<!-- run: NAME -->`` or ``<!-- not run: ... -->`` before it fails
``test_every_python_block_is_run_or_marked`` (tests/examples/doc_blocks.py). docs/index.md
repeats the first two blocks, and must repeat them exactly.
"""

from __future__ import annotations

import ast
import json
import stat
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, node_bin
from tests.examples.doc_blocks import Block, blocks, mypy_strict, run_block
from tests.servers.fake_browser import browser as fake_browser
from tests.servers.http_peers import HttpPeer

README = REPO_ROOT / "README.md"

pytestmark = pytest.mark.timeout(180)

# The run markers of the README, each with the test that runs its block.
RUN = ("blocking", "agent", "remote", "oauth")


def readme_block(name: str) -> Block:
    (block,) = [b for b in blocks(README) if b.name == name]
    return block


def everything_installed() -> None:
    node_bin("mcp-server-everything")  # skips (fails under CI) without `make node_modules`


def test_the_readme_starts_with_the_two_commands_and_stays_short() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.startswith("```\nmake demo\nmake test\n```\n")
    assert len(text.splitlines()) <= 250


def test_every_python_block_is_run_or_marked() -> None:
    found = blocks(README)  # AssertionError for a block with no marker
    assert [b.kind for b in found if b.kind not in ("run", "not run")] == []
    names = [b.name for b in found if b.kind == "run"]
    assert sorted(names) == sorted(RUN), "every run marker has its test here, and only those"


def test_the_docs_home_page_shows_the_readme_blocks() -> None:
    """docs/index.md repeats the README's first examples: each of its blocks is a README block
    of the same run marker, character for character, so the one run here stands for both."""
    ours = {b.name: b.code for b in blocks(README) if b.kind == "run"}
    shown = blocks(REPO_ROOT / "docs" / "index.md")
    assert [b.name for b in shown] == ["blocking", "agent"]
    for block in shown:
        assert block.code == ours[block.name], f"{block.where} differs from the README's block"


def test_blocking(tmp_path: Path) -> None:
    everything_installed()
    out = run_block(readme_block("blocking"), tmp_path).splitlines()
    assert any(line.startswith("get-sum - ") for line in out), out
    assert "The sum of 2 and 3 is 5. False" in out
    (gave_up,) = [line for line in out if line.startswith("gave up: ")]
    assert gave_up.startswith(
        "gave up: tools/call trigger-long-running-operation got no answer within 0.25 s"
    )
    progress = [line for line in out if line.endswith("/4.0")]
    assert progress == ["1.0/4.0", "2.0/4.0", "3.0/4.0", "4.0/4.0"]
    assert "Long running operation completed. Duration: 1 seconds, Steps: 4." in out
    assert out[-1].startswith("everything: ready (stdio, "), out[-1]


def test_agent(tmp_path: Path) -> None:
    everything_installed()
    out = run_block(readme_block("agent"), tmp_path)
    assert out == "100 answers: The sum of 0 and 1 is 1. ... The sum of 99 and 1 is 100.\n"


# peer id -> (fixture, its mode, the first line the block prints, a tool the peer has)
REMOTE_PEERS = {
    "sdk-streamable-http": ("py_http_server", "stateful", "http modern", "echo"),
    "sdk-sse": ("py_http_server", "sse", "sse legacy", "echo"),
    "everything-streamable-http": ("everything_http", "streamableHttp", "http legacy", "get-sum"),
}


@pytest.mark.parametrize("peer", REMOTE_PEERS)
def test_remote(peer: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    fixture, mode, first, tool = REMOTE_PEERS[peer]
    url = request.getfixturevalue(fixture)(mode).url
    replace = {"https://mcp.example.com/mcp": url}
    out = run_block(readme_block("remote"), tmp_path, replace=replace).splitlines()
    assert out[0] == first
    assert tool in ast.literal_eval(out[1])


_NO_BROWSER = """\
#!/bin/sh
# Stands for a browser that must not be needed: it leaves a trace and fails.
touch "{trace}"
exit 1
"""


def _program(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def _stats(peer: HttpPeer) -> dict[str, int]:
    origin = peer.url.removesuffix("/mcp")
    with urllib.request.urlopen(f"{origin}/__control/stats", timeout=10) as answer:
        stats: dict[str, int] = json.load(answer)
    return stats


def test_oauth(py_auth_server: Callable[..., HttpPeer], tmp_path: Path) -> None:
    peer = py_auth_server()
    block = readme_block("oauth")
    replace = {"https://notes.example.com/mcp": peer.url}
    data = tmp_path / "data"
    browser = fake_browser(tmp_path, "follow")
    env = {"XDG_DATA_HOME": str(data), "BROWSER": browser}

    out = run_block(block, tmp_path, replace=replace, env=env)
    assert out == "['echo', 'whoami', 'admin_echo']\n"
    tokens = data / "mcp-sansio-client" / "tokens.json"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert _stats(peer)["authorizations"] == 1

    # "later runs use the tokens kept": no browser, no new registration or authorization.
    trace = tmp_path / "browser-was-opened"
    env["BROWSER"] = _program(tmp_path / "no-browser", _NO_BROWSER.format(trace=trace))
    assert run_block(block, tmp_path, replace=replace, env=env) == out
    assert not trace.exists()
    stats = _stats(peer)
    assert (stats["registrations"], stats["authorizations"]) == (1, 1)


def test_mypy_strict(tmp_path: Path) -> None:
    mypy_strict(blocks(README), tmp_path)
