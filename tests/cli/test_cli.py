"""The `mcp-client` command, run as a user runs it: a subprocess, real servers, exit codes.

Every test starts the command afresh (the console script when installed, else
`python -m mcp_sync._cli`); stdout and stderr are pipes, so the command runs without its
terminal animations, except in the one test that gives it a pseudo-terminal on purpose.
"""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, node_bin

pytestmark = pytest.mark.timeout(60)

RECORDING = REPO_ROOT / "tests" / "recordings" / "everything_stdio.jsonl"
SECRET = "s3cr3t-token-do-not-print"
_SCRIPT = Path(sys.executable).with_name("mcp-client")
COMMAND = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "mcp_sync._cli"]


def run(
    *args: str, cwd: Path | None = None, stdin: str | None = None, columns: int | None = None
) -> subprocess.CompletedProcess[str]:
    """The command with ``args``; ``COLUMNS`` is ``columns``, unset when None (a table then
    has its width for a pipe, whatever the terminal that runs the tests)."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [*COMMAND, *args],
        cwd=cwd or REPO_ROOT,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
        env=env,
    )


def read_table(stdout: str, columns: Sequence[str]) -> list[dict[str, list[str]]]:
    """The rows of the first table a command printed, each column's cell as its lines: a
    row starts on a line whose first column is filled; a line with the first column blank
    carries on the row above (a wrapped description, an argument list). The columns are cut
    where the header names them."""
    lines = stdout.splitlines()
    header = lines[0]
    starts = []
    for column in columns:
        starts.append(header.index(column, starts[-1] if starts else 0))
    assert header.split() == " ".join(columns).split(), header
    rows: list[dict[str, list[str]]] = []
    for line in lines[1:]:
        if not line.strip():
            break
        cells = [
            line[start:end].strip()
            for start, end in zip(starts, [*starts[1:], None], strict=True)
        ]
        if cells[0]:
            rows.append({column: [] for column in columns})
        for column, cell in zip(columns, cells, strict=True):
            if cell:
                rows[-1][column].append(cell)
    return rows


def everything() -> list[str]:
    return [node_bin("mcp-server-everything"), "stdio"]


@pytest.fixture(name="group_config")
def _group_config(tmp_path: Path) -> Path:
    """A config naming server-everything, server-filesystem (allowed tmp_path/files), a server
    whose executable does not exist, and an entry with a typo; written as tmp_path/.mcp.json."""
    files = tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hello from the filesystem server\n")
    config = {
        "mcpServers": {
            "everything": {"command": everything()[0], "args": ["stdio"]},
            "filesystem": {
                "command": node_bin("mcp-server-filesystem"),
                "args": [str(files)],
                "autoApprove": [],  # another client's key: ignored, not fatal
            },
            "broken": {"command": str(tmp_path / "no-such-server")},
            "typo": {"command": "true", "argz": ["x"]},
        }
    }
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps(config))
    return path


# --- one server from the command line ----------------------------------------------------------


def test_tools_from_a_command_line_server() -> None:
    done = run("tools", "--", *everything())
    assert done.returncode == 0, done.stderr
    assert "mcp__cli__echo" in done.stdout
    assert "mcp__cli__trigger-long-running-operation" in done.stdout  # never cut
    assert "Echoes back the input" in done.stdout
    assert done.stdout.splitlines()[0].split() == ["server", "tool", "arguments", "description"]


def test_tools_json_is_a_list_of_namespaced_tools() -> None:
    done = run("tools", "--json", "--", *everything())
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)
    echo = next(tool for tool in tools if tool["tool"] == "echo")
    assert echo["name"] == "mcp__cli__echo"
    assert echo["server"] == "cli"
    assert echo["inputSchema"]["required"] == ["message"]


@pytest.mark.parametrize("name", ["echo", "mcp__cli__echo"])
def test_call_prints_the_text(name: str) -> None:
    done = run("call", name, '{"message": "hi there"}', "--", *everything())
    assert (done.returncode, done.stdout) == (0, "Echo: hi there\n"), done.stderr


def test_call_json_prints_the_whole_result() -> None:
    done = run("call", "get-sum", '{"a": 19, "b": 23}', "--json", "--", *everything())
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["isError"] is False
    assert result["content"][0]["type"] == "text"
    assert "42" in result["content"][0]["text"]


def test_arguments_can_come_from_stdin() -> None:
    done = run("call", "echo", "-", "--", *everything(), stdin='{"message": "piped"}')
    assert (done.returncode, done.stdout) == (0, "Echo: piped\n"), done.stderr


def test_a_tool_error_exits_1_with_the_text_on_stderr() -> None:
    done = run("call", "get-sum", '{"a": "x"}', "--", *everything())
    assert done.returncode == 1
    assert done.stdout == ""
    assert "expected number" in done.stderr


def test_progress_bar_on_a_terminal_leaves_the_result_intact() -> None:
    """stderr on a pseudo-terminal: the spinner and the progress bar run (and go away)."""
    args = '{"duration": 0.4, "steps": 4}'
    done, shown = on_a_terminal("call", "trigger-long-running-operation", args, "--", *everything())
    assert done.returncode == 0, shown
    assert done.stdout.decode().startswith("Long running operation completed")
    assert b"100%" in shown  # the bar reached the end before it was cleared


def on_a_terminal(*args: str) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """The command with stderr on a pseudo-terminal 200 columns wide (the animations run, and
    nothing is cut): what it did and everything it drew there."""
    controller, terminal = pty.openpty()
    shown: list[bytes] = []

    def drain() -> None:  # a full pty buffer would block the command
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the command closed the terminal
                return
            if not chunk:
                return
            shown.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        done = subprocess.run(
            [*COMMAND, *args],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=terminal,
            timeout=50,
            env={**os.environ, "COLUMNS": "200"},
        )
    finally:
        os.close(terminal)
        reader.join(timeout=10)
        os.close(controller)
    return done, b"".join(shown)


# --- bad input: exit 2, before any server is started -----------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [('{"message": ', "ARGUMENTS is not valid JSON"), ("[1, 2]", "must be a JSON object")],
)
def test_bad_json_arguments_exit_2(arguments: str, message: str) -> None:
    done = run("call", "echo", arguments, "--", *everything())
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""


def test_unknown_tool_exits_2_with_a_suggestion() -> None:
    done = run("call", "ecko", "{}", "--", *everything())
    assert done.returncode == 2
    assert "'mcp__cli__ecko'" in done.stderr
    assert "did you mean 'mcp__cli__echo'" in done.stderr


def test_missing_config_exits_2(tmp_path: Path) -> None:
    done = run("tools", "--config", str(tmp_path / "nope.json"))
    assert done.returncode == 2
    assert "nope.json' does not exist" in done.stderr
    # No source at all, and no .mcp.json to fall back on.
    done = run("status", cwd=tmp_path)
    assert done.returncode == 2
    assert "no server to talk to" in done.stderr
    assert ".mcp.json" in done.stderr


def test_config_without_servers_exits_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text('{"mcpServers": {}}')
    done = run("tools", "--config", str(empty))
    assert done.returncode == 2
    assert "names no servers" in done.stderr


def test_two_sources_are_a_usage_error(group_config: Path) -> None:
    done = run("tools", "--config", str(group_config), "--", *everything())
    assert done.returncode == 2
    assert "give one of --config, --url or -- COMMAND" in done.stderr


# --- a config naming several servers, one of them broken ---------------------------------------


def test_tools_of_a_group_with_a_broken_server(group_config: Path) -> None:
    done = run("tools", "--config", str(group_config))
    assert done.returncode == 0, done.stderr
    assert "mcp__everything__echo" in done.stdout
    assert "mcp__filesystem__list_directory" in done.stdout
    assert "server 'broken' is down" in done.stderr
    assert "No such file or directory" in done.stderr
    assert "server 'typo' is down" in done.stderr
    assert "did you mean 'args'?" in done.stderr


def test_status_says_why_the_broken_server_is_down(group_config: Path) -> None:
    done = run("status", cwd=group_config.parent)  # ./.mcp.json is the default config
    assert done.returncode == 3  # not every server is ready
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.strip()}
    assert rows["everything"][1:4] == ["ready", "stdio", "legacy"]
    assert rows["filesystem"][1] == "ready"
    assert rows["broken"][1] == "closed"
    assert "broken: could not connect: No such file or directory" in done.stdout
    assert "typo: its entry in '.mcp.json' is invalid: unknown field 'argz'" in done.stdout


def test_status_json(group_config: Path) -> None:
    done = run("status", "--json", "--config", str(group_config))
    assert done.returncode == 3
    statuses = json.loads(done.stdout)
    assert list(statuses) == ["everything", "filesystem", "broken", "typo"]
    assert statuses["everything"]["ready"] is True
    assert statuses["everything"]["protocol_version"]
    assert statuses["everything"]["server_info"]["name"] == "mcp-servers/everything"
    assert statuses["broken"]["state"] == "closed"
    assert "No such file or directory" in statuses["broken"]["last_error"]


def test_call_is_routed_to_its_server(group_config: Path) -> None:
    files = group_config.parent / "files"
    arguments = json.dumps({"path": str(files)})
    done = run("call", "mcp__filesystem__list_directory", arguments, "--config", str(group_config))
    assert (done.returncode, done.stdout) == (0, "[FILE] hello.txt\n"), done.stderr


@pytest.mark.parametrize(
    ("name", "code", "message"),
    [
        ("mcp__broken__anything", 3, "server 'broken' is not available"),
        ("mcp__typo__anything", 2, "server 'typo' was not loaded"),
        ("mcp__nosuch__echo", 2, "no server is named 'nosuch'"),
        ("echo", 2, "name tools mcp__<server>__<tool>"),
    ],
)
def test_calls_that_cannot_be_routed(
    group_config: Path, name: str, code: int, message: str
) -> None:
    done = run("call", name, "{}", "--config", str(group_config))
    assert done.returncode == code
    assert message in done.stderr


# --- HTTP, and secrets -------------------------------------------------------------------------


def test_url_server_with_a_header_never_prints_it(everything_http: Callable[..., object]) -> None:
    peer = everything_http("streamableHttp")
    url = str(getattr(peer, "url"))  # noqa: B009 (HttpPeer is not typed for tests)
    header = f"Authorization: Bearer {SECRET}"
    done = run("-vv", "call", "echo", '{"message": "over http"}', "--url", url, "--header", header)
    assert (done.returncode, done.stdout) == (0, "Echo: over http\n"), done.stderr
    assert SECRET not in done.stderr


def test_secrets_stay_out_of_errors() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    header = f"Authorization: Bearer {SECRET}"
    cases: list[Sequence[str]] = [
        ("status", "--url", f"http://127.0.0.1:{port}/mcp", "--header", header),
        ("status", "--url", f"http://127.0.0.1:{port}/mcp?key={SECRET}"),
        ("tools", "--url", "http://127.0.0.1:1/mcp", "--header", f"Bearer {SECRET}"),
        ("tools", "--url", "http://127.0.0.1:1/mcp", "--header", f"X-Key: a\nb {SECRET}"),
    ]
    codes = []
    for args in cases:
        done = run(*args)
        codes.append(done.returncode)
        assert SECRET not in done.stdout + done.stderr, args
    assert codes == [3, 3, 2, 2]


# --- replay ------------------------------------------------------------------------------------


def test_replay_prints_one_line_per_action() -> None:
    expected = (REPO_ROOT / "tests" / "recordings" / "everything_stdio.actions.jsonl").read_text()
    done = run("replay", str(RECORDING))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(expected.splitlines())
    assert lines[0].split()[:2] == ["1", "Spawn"]
    assert any(" Reply " in line and '"Echo: ' in line for line in lines)


def test_replay_json_gives_the_recorded_actions() -> None:
    done = run("replay", "--json", str(RECORDING))
    assert done.returncode == 0, done.stderr
    expected = (REPO_ROOT / "tests" / "recordings" / "everything_stdio.actions.jsonl").read_text()
    got = [json.loads(line) for line in done.stdout.splitlines()]
    assert got == [json.loads(line) for line in expected.splitlines()]


def test_replay_of_what_is_not_a_recording_exits_2(tmp_path: Path) -> None:
    done = run("replay", str(tmp_path / "missing.jsonl"))
    assert done.returncode == 2
    assert "cannot read recording" in done.stderr
    done = run("replay", str(REPO_ROOT / "README.md"))
    assert done.returncode == 2
    assert "is not a recording" in done.stderr


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("hang", "{}", "got no answer within 0.5 s"),
        ("exit", '{"code": 3, "stderr": "boom"}', "exited with code 3"),
    ],
)
def test_a_failed_call_exits_4(
    fault_server_argv: Callable[..., list[str]], tool: str, arguments: str, message: str
) -> None:
    done = run("call", tool, arguments, "--timeout", "0.5", "--", *fault_server_argv())
    assert done.returncode == 4, done.stderr
    assert f"mcp__cli__{tool} failed" in done.stderr
    assert message in done.stderr
