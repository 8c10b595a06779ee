"""The sample application's tests (examples/app_tests) as a user runs them, with the
``mcp_pytest`` plugin: from the committed recordings with no way to start a server, and from
scratch, where the first run records against the real server and the next replays.

Each run is a pytest of its own, in a subprocess with a deadline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "examples" / "app_tests"
DEADLINE = 120


def _pytest(app: Path, *options: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    """pytest over the app at ``app`` from the repository root (where npx finds the reference
    server in node_modules), with ``PATH`` replaced by ``path`` when given."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-c", str(app / "pytest.ini")),
            *("--rootdir", str(app), "-q", "-p", "no:cacheprovider", *options, str(app)),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def _recordings(app: Path) -> list[str]:
    return sorted(str(p.relative_to(app)) for p in (app / "recordings").rglob("*") if p.is_file())


def test_the_committed_recordings_answer_the_tests_with_no_server_to_start(
    tmp_path: Path,
) -> None:
    before = {p: p.read_bytes() for p in (APP / "recordings").rglob("*.jsonl")}
    assert len(before) == 5
    # PATH is an empty directory: no node, no npx, so no server could start.
    run = _pytest(APP, "--mcp-replay", path=str(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 passed" in run.stdout
    assert {p: p.read_bytes() for p in (APP / "recordings").rglob("*.jsonl")} == before


def test_the_first_run_records_and_the_next_replays(tmp_path: Path) -> None:
    app = tmp_path / "app"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("recordings", "__pycache__"))
    # A test that fails after its session: what it recorded is not kept.
    (app / "test_failing.py").write_text(
        "from app import EVERYTHING, total\n\n"
        "def test_fails(mcp_recordings):\n"
        "    with mcp_recordings.client(EVERYTHING) as client:\n"
        "        assert total(client, [1]) == 2\n"
    )
    missing = _pytest(app, "--mcp-replay", path=str(tmp_path / "nothing"))
    assert missing.returncode == 1
    assert "no recording of MCP server 'everything'" in missing.stdout
    assert "run the test once without --mcp-replay" in missing.stdout

    first = _pytest(app)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "1 failed, 4 passed" in first.stdout
    recorded = [
        "recordings/test_app/test_a_call_the_recording_lacks_says_so/everything.jsonl",
        "recordings/test_app/test_a_group_records_one_file_per_server/left.jsonl",
        "recordings/test_app/test_a_group_records_one_file_per_server/right.jsonl",
        "recordings/test_app/test_shout/everything.jsonl",
        "recordings/test_app/test_total_adds_every_number/everything.jsonl",
    ]
    assert _recordings(app) == recorded  # nothing of the failed test, no .partial left

    again = _pytest(app, "--mcp-replay", "-k", "not failing", path=str(tmp_path / "nothing"))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "4 passed" in again.stdout

    rerecorded = _pytest(app, "--mcp-record", "-k", "total")
    assert rerecorded.returncode == 0, rerecorded.stdout + rerecorded.stderr
    assert _recordings(app) == recorded

    both = _pytest(app, "--mcp-record", "--mcp-replay")
    assert both.returncode != 0 and "choose one" in both.stderr
