"""`mcp-client` after a plain `pip install`, without the `cli` extra: one line naming the extra,
exit code 2, no traceback. The missing packages are simulated in a fresh interpreter by a
meta-path finder that refuses to import them, so the test runs in the dev environment."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.timeout(60)

LINE = "mcp-client needs its optional dependencies: pip install 'mcp-sansio-client[cli]'"

# Runs the console script's function with the named top-level packages unimportable, as if
# they were not installed.
_WITHOUT = """
import sys

BLOCKED = set(sys.argv[1].split(","))


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
from mcp_sync._cli_entry import main

sys.exit(main(sys.argv[2:]))
"""


def run_without(blocked: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, blocked, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize("blocked", ["click,rich", "click", "rich"])
@pytest.mark.parametrize("args", [(), ("tools", "--", "server"), ("--help",)])
def test_without_the_extra_one_line_names_it(blocked: str, args: tuple[str, ...]) -> None:
    done = run_without(blocked, *args)
    assert done.returncode == 2
    assert done.stderr == LINE + "\n"
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_with_the_extra_the_command_runs() -> None:
    done = run_without("nothing-blocked", "--help")
    assert done.returncode == 0, done.stderr
    assert "replay" in done.stdout


def test_the_console_script_is_the_guarded_entry_point() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["mcp-client"] == "mcp_sync._cli_entry:main"


def test_importing_mcp_sync_loads_nothing_of_the_command() -> None:
    """The command is loaded by its entry point only: a program that imports the library
    loads neither the command's package nor click and rich (installed here, with dev)."""
    code = "import json, sys; import mcp_sync; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "mcp_sync._client" in loaded  # the check sees what it should
    parts = [module.split(".") for module in loaded]
    assert [p for p in parts if p[0] in ("click", "rich") or p[:2] == ["mcp_sync", "_cli"]] == []
    assert "mcp_sync._cli_entry" not in loaded
