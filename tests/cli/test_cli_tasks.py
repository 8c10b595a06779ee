"""`mcp-client` and the tool calls a server runs as tasks: `call` follows one to its result
(`--task`/`--no-task`), `call --detach` starts one and prints its id, `task` shows one, waits
for it or cancels it, `tasks` lists a server's. Run as tests/cli/test_cli.py runs the command:
a subprocess, real servers.

The peers: server-everything over stdio for MCP 2025-11-25 basic/utilities/tasks (its
simulate-research-query requires a task and reports four stages a second apart), and the
FastMCP peer of the 2026-07-28 Tasks extension (tests/servers/fastmcp_tasks_server.py) over
stdio and Streamable HTTP, whose tasks outlive the session that started them, so one command
can start a task and the next follow it. A server over stdio is started afresh by every
command, so its tasks never outlive one.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from mcp_sync import Client
from mcp_sync._cli.tasks import print_tasks
from tests.cli.test_cli import on_a_terminal, read_table, run
from tests.cli.test_cli_output import LIBRARY_WORDS
from tests.conftest import everything_argv, fastmcp_tasks_argv

pytestmark = pytest.mark.timeout(60)

RESEARCH = "simulate-research-query"
STDIO_HINT = "runs over stdio: each mcp-client command starts it afresh"


def said(done: subprocess.CompletedProcess[str]) -> str:
    """What the command printed on stderr, checked for the library's words."""
    assert LIBRARY_WORDS.search(done.stderr) is None, done.stderr
    return done.stderr


# --- call: a task followed to its result ------------------------------------------------------


def test_call_follows_a_required_task_to_its_result() -> None:
    """2025-11-25: the tool requires a task; into a pipe, no status line is printed."""
    done = run("call", RESEARCH, '{"topic": "tides"}', "--", *everything_argv())
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Research Report: tides\n")
    assert said(done) == ""


def test_call_of_an_extension_task_prints_its_result() -> None:
    """2026-07-28: the server says the tool needs the extension, the call declares it."""
    arguments = '{"stages": 2, "delay_ms": 20}'
    done = run("call", "staged_task", arguments, "--json", "--", *fastmcp_tasks_argv())
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["isError"], result["content"][0]["text"]) == (False, "staged: 2 stages")
    assert said(done) == ""


def test_a_tasks_status_messages_show_on_a_terminal() -> None:
    """Each stage's status message is drawn as the client sees it (300 ms a stage, polled
    every 50 ms), then the bar goes away and the result is printed as usual."""
    arguments = '{"stages": 3, "delay_ms": 300}'
    done, shown = on_a_terminal("call", "staged_task", arguments, "--", *fastmcp_tasks_argv())
    assert done.returncode == 0, shown
    assert done.stdout == b"staged: 3 stages\n"
    for stage in (1, 2, 3):
        assert f"mcp__cli__staged_task: stage {stage}/3".encode() in shown, shown


@pytest.mark.parametrize(
    ("peer", "args", "code", "words"),
    [
        ("everything", (RESEARCH, '{"topic": "x"}', "--no-task"), 2, "leave out --no-task"),
        ("everything", ("echo", '{"message": "x"}', "--task"), 2, "leave out --task"),
        ("everything", ("echo", '{"message": "x"}', "--detach"), 2, "leave out --detach"),
        ("everything", ("echo", '{"message": "x"}', "--no-task"), 0, ""),
        ("fastmcp", ("quick_task", '{"text": "x"}', "--no-task"), 2, "leave out --no-task"),
        ("fastmcp", ("sync_echo", '{"text": "x"}', "--task"), 0, ""),  # answered at once
        ("fastmcp", ("sync_echo", "{}", "--detach", "--no-task"), 2, "not go with --no-task"),
    ],
)
def test_task_flags_that_the_tool_does_not_take(
    peer: str, args: tuple[str, ...], code: int, words: str
) -> None:
    """2025-11-25 lists each tool's taskSupport, so a flag it cannot take is refused before
    anything is sent; a 2026-07-28 server refuses a call without the extension that needs it,
    and may answer a call that asked for a task at once."""
    argv = everything_argv() if peer == "everything" else fastmcp_tasks_argv()
    done = run("call", *args, "--", *argv)
    assert done.returncode == code, done.stderr
    assert words in said(done)
    if code == 0:
        assert done.stdout in ("Echo: x\n", "x\n")


def test_a_task_that_asks_for_input_fails_the_call() -> None:
    """The command declares no elicitation: a task that asks all the same cannot go on."""
    done = run("call", "ask_task", '{"question": "Your name?"}', "--", *fastmcp_tasks_argv())
    assert done.returncode == 4, done.stderr
    assert "asked for 'elicitation/create', which was not declared" in said(done)


def test_a_deadline_cancels_the_calls_task() -> None:
    done = run("call", RESEARCH, '{"topic": "x"}', "--timeout", "1", "--", *everything_argv())
    assert done.returncode == 4, done.stderr
    assert "did not finish within 1 s; it was cancelled on the server" in said(done)
    assert "(give it longer with --timeout)" in done.stderr


# --- call --detach ------------------------------------------------------------------------------


def test_detach_prints_the_id_and_warns_that_a_stdio_server_stops() -> None:
    done = run("call", "quick_task", '{"text": "x"}', "--detach", "--", *fastmcp_tasks_argv())
    assert done.returncode == 0, done.stderr
    (task_id,) = done.stdout.split()
    assert task_id and done.stdout == task_id + "\n"
    assert "task started (working), but server 'cli' runs over stdio" in said(done)


def test_detach_json_is_the_tasks_status() -> None:
    args = ("call", RESEARCH, '{"topic": "x"}', "--detach", "--json")
    done = run(*args, "--", *everything_argv())
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["taskId"] and status["status"] == "working"
    assert status["statusMessage"] == "Gathering sources..."
    assert (status["ttlMs"], status["pollIntervalMs"]) == (300000, 1000)
    assert "runs over stdio" in said(done)


def test_detach_of_a_call_answered_at_once_prints_its_result() -> None:
    done = run("call", "sync_echo", '{"text": "now"}', "--detach", "--", *fastmcp_tasks_argv())
    assert (done.returncode, done.stdout) == (0, "now\n"), done.stderr
    assert said(done) == "mcp-client: the server answered at once: no task was made\n"


# --- task and tasks: a task from an earlier command ---------------------------------------------


def test_a_task_followed_waited_for_and_cancelled_by_later_commands(
    fastmcp_tasks_http: Callable[..., Any],
) -> None:
    at = ("--url", fastmcp_tasks_http().url)
    done = run("call", "forever_task", "--detach", *at)
    assert done.returncode == 0, done.stderr
    task_id = done.stdout.strip()
    assert f"`mcp-client task cli {task_id} --url http://127.0.0.1:" in said(done)

    done = run("task", "cli", task_id, *at)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [f"task:    {task_id}", "status:  working"]
    assert "poll:    0.05 s" in done.stdout

    done = run("task", "cli", task_id, "--wait", "--timeout", "0.3", *at)
    assert done.returncode == 4, done.stderr
    assert "did not finish within 0.3 s; it goes on" in said(done)
    assert "`mcp-client task SERVER TASK_ID --wait` waits again" in done.stderr

    done = run("task", "cli", task_id, "--json", *at)  # it went on
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert (status["taskId"], status["status"]) == (task_id, "working")

    done = run("task", "cli", task_id, "--cancel", "--json", *at)
    assert done.returncode == 0, done.stderr
    # The extension acknowledges a cancel with nothing: this is the status asked after it.
    assert json.loads(done.stdout)["status"] in ("working", "cancelled")

    done = run("task", "cli", task_id, "--wait", "--timeout", "20", *at)
    assert done.returncode == 4, done.stderr
    assert said(done) == f"mcp-client: task {task_id!r} was cancelled on the server\n"


def test_later_commands_wait_for_a_tasks_result(fastmcp_tasks_http: Callable[..., Any]) -> None:
    at = ("--url", fastmcp_tasks_http().url)
    started = {
        tool: run("call", tool, arguments, "--detach", *at).stdout.strip()
        for tool, arguments in [
            ("quick_task", '{"text": "later"}'),
            ("failing_task", "{}"),
            ("erroring_task", "{}"),
        ]
    }
    assert all(started.values()), started
    done = run("task", "cli", started["quick_task"], "--wait", *at)
    assert (done.returncode, done.stdout, said(done)) == (0, "quick: later\n", "")
    done = run("task", "cli", started["quick_task"], "--wait", "--json", *at)
    assert json.loads(done.stdout)["content"][0]["text"] == "quick: later"
    done = run("task", "cli", started["failing_task"], "--wait", *at)
    assert (done.returncode, done.stdout) == (1, "")
    assert said(done) == "failing_task failed on purpose\n"
    done = run("task", "cli", started["erroring_task"], "--wait", *at)
    assert done.returncode == 4, done.stderr
    assert "JSON-RPC error -32603: erroring_task failed on purpose" in said(done)
    done = run("task", "cli", started["erroring_task"], *at)
    assert (done.returncode, done.stdout.splitlines()[1:3]) == (
        0,
        ["status:  failed", "message: erroring_task failed on purpose"],
    )


def test_what_cannot_be_asked_of_a_2026_server(fastmcp_tasks_http: Callable[..., Any]) -> None:
    at = ("--url", fastmcp_tasks_http().url)
    done = run("task", "cli", "no-such-task", *at)
    assert done.returncode == 2, done.stderr
    unknown = "task 'no-such-task' of 'cli' failed: the server answered with JSON-RPC error -32602"
    assert unknown in said(done)
    assert STDIO_HINT not in done.stderr  # an HTTP server might well have known it
    done = run("tasks", "cli", *at)
    assert done.returncode == 2, done.stderr
    assert "speaks MCP 2026-07-28, which has no request to list tasks" in said(done)
    done = run("task", "cli", "x", "--wait", "--cancel", *at)
    assert done.returncode == 2
    assert "give --wait or --cancel, not both" in done.stderr


@pytest.mark.parametrize("task_id", ["-Qx7_unknown", "-h-unknown", "--unknown"])
def test_a_task_id_that_starts_with_a_dash_is_taken_as_one(
    fastmcp_tasks_http: Callable[..., Any], task_id: str
) -> None:
    """Task ids are the server's: FastMCP's are URL-safe base64 and may start with "-". Such an
    id reaches the server as typed (which answers it knows none), never as an option."""
    done = run("task", "cli", task_id, "--url", fastmcp_tasks_http().url)
    assert done.returncode == 2, done.stderr
    assert f"task {task_id!r} of 'cli' failed: the server answered with JSON-RPC error" in said(
        done
    )


@pytest.mark.parametrize("flags", [(), ("--wait",), ("--cancel",)])
def test_a_stdio_server_knows_no_task_of_an_earlier_command(flags: tuple[str, ...]) -> None:
    done = run("task", "cli", "earlier-task", *flags, "--", *everything_argv())
    assert done.returncode == 2, done.stderr
    assert "JSON-RPC error -32602" in said(done)
    assert STDIO_HINT in done.stderr


def test_tasks_of_a_server_that_has_none() -> None:
    done = run("tasks", "cli", "--", *everything_argv())
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert said(done) == "mcp-client: server 'cli' lists no tasks\n"
    done = run("tasks", "cli", "--json", "--", *everything_argv())
    assert (done.returncode, json.loads(done.stdout)) == (0, [])


def test_the_task_table_shows_what_a_server_lists(capsys: pytest.CaptureFixture[str]) -> None:
    """In-process: a server over stdio lists tasks only to the client that started them."""
    argv = everything_argv()
    with Client({"name": "e", "command": argv[0], "args": argv[1:]}) as client:
        started = client.start_tool(RESEARCH, {"topic": "a"})
        listed = client.list_tasks()
    assert [status.task_id for status in listed] == [started.id]
    print_tasks(listed)
    rows = read_table(capsys.readouterr().out, ["task", "status", "updated", "message"])
    assert rows == [
        {
            "task": [status.task_id],
            "status": [status.status],
            "updated": [status.last_updated_at],
            "message": [status.message],
        }
        for status in listed
    ]
    assert listed[0].message and listed[0].message.endswith("...")  # a stage, not "-"
