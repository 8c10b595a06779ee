"""What `mcp-client` shows a person at a shell: the status table names the states as
`--json` does, tables wrap descriptions instead of cutting them and list a tool's arguments,
and failures are told in shell words (the config entry, the flag, the subcommand), never in
the library's (a spec, a client, await_ready). Run as tests/cli/test_cli.py runs the command:
a subprocess, real servers; the wording and the table helpers are also checked in-process,
over every library error they translate.
"""

from __future__ import annotations

import json
import re
import stat
import sys
import typing
from pathlib import Path

import pytest

import mcp_core
from mcp_core import (
    AuthorizationRequired,
    AuthorizationUnavailable,
    ConnectFailed,
    InvalidConfig,
    InvalidSpec,
    ListTooLong,
    MessageTooLarge,
    NotReady,
    NotSupported,
    ServerExited,
    Spec,
    UnmeteredCall,
    UnsupportedVersion,
    UrlElicitationRequired,
    load_config,
)
from mcp_core.group import PromptTable, ToolTable
from mcp_sync._cli.listing import STATE_STYLES, tool_arguments
from mcp_sync._cli.sources import Source, explained
from tests.cli.test_cli import everything, read_table, run
from tests.conftest import fault_server_argv

pytestmark = pytest.mark.timeout(60)

# The library's words for a program, which a shell user has no use for: a spec, a client to
# create, a method or a keyword argument to call with, a group.
LIBRARY_WORDS = re.compile(
    r"\bspec\b|create a new client|await_ready|status\(\)|list_tools\(\)|list_prompts\(\)"
    r"|(?<![\w])timeout=|reservation=|authorize=|expand_env=|load_config|this group"
    r"|the client (retries|restarts|tries)|\.elicitations|upgrade the client",
    re.IGNORECASE,
)
# A server that starts and never answers its handshake: it stays "initializing".
SILENT = [sys.executable, "-c", "import sys; sys.stdin.read()"]
TOOL_COLUMNS = ["server", "tool", "arguments", "description"]
STATUS_COLUMNS = ["server", "state", "transport", "era", "protocol", "in flight"]


def write_config(path: Path, servers: dict[str, object]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def entry(argv: list[str]) -> dict[str, object]:
    return {"command": argv[0], "args": argv[1:]}


# --- status: the same state names in the table and in --json --------------------------------


def test_status_table_names_each_state_as_json_does(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "servers.json",
        {
            "fault": entry(fault_server_argv()),  # ready
            "silent": entry(SILENT),  # initializing when the wait ends
            "broken": {"command": str(tmp_path / "no-such-server")},  # closed: failed
            "typo": {"command": "true", "argz": ["x"]},  # closed: refused, no transport known
        },
    )
    source = ("--config", str(config), "--start-timeout", "3")
    table = run("status", *source)
    listed = run("status", "--json", *source)
    assert (table.returncode, listed.returncode) == (3, 3), table.stderr + listed.stderr
    rows = {row["server"][0]: row for row in read_table(table.stdout, STATUS_COLUMNS)}
    statuses = json.loads(listed.stdout)
    for name, status in statuses.items():
        assert rows[name]["state"] == [status["state"]], name
        assert rows[name]["transport"] == [status["transport"]], name
    states = {name: status["state"] for name, status in statuses.items()}
    assert states == {
        "fault": "ready",
        "silent": "initializing",
        "broken": "closed",
        "typo": "closed",
    }
    assert statuses["typo"]["transport"] == "unknown"


def test_every_state_has_a_colour_in_the_table() -> None:
    # "starting" cannot be caught from outside without a race: the table's colours, looked
    # up by the state itself, cover every state the library names.
    assert set(STATE_STYLES) == set(typing.get_args(mcp_core.SessionState))


# --- tables: descriptions wrap, arguments are shown --------------------------------------------


def test_descriptions_are_whole_when_piped_and_arguments_are_listed() -> None:
    done = run("tools", "--", *everything())  # stdout is a pipe, COLUMNS unset
    assert done.returncode == 0, done.stderr
    listed = run("tools", "--json", "--", *everything())
    tools = {tool["tool"]: tool for tool in json.loads(listed.stdout)}
    rows = {row["tool"][0]: row for row in read_table(done.stdout, TOOL_COLUMNS)}
    assert set(rows) == {tool["name"] for tool in tools.values()}
    for name, tool in tools.items():
        description = tool["description"].strip().split("\n", 1)[0]
        assert " ".join(rows[f"mcp__cli__{name}"]["description"]) == " ".join(
            description.split()
        ), name
    long = rows["mcp__cli__gzip-file-as-resource"]["description"]
    assert len(long) > 2  # it did need several lines at the width of a pipe
    assert max(len(line) for line in done.stdout.splitlines()) <= 100

    # The arguments, from the input schema: a required one bare, an optional one with "?".
    assert tools["get-sum"]["inputSchema"]["required"] == ["a", "b"]
    assert rows["mcp__cli__get-sum"]["arguments"] == ["a: number", "b: number"]
    assert rows["mcp__cli__get-annotated-message"]["arguments"] == [
        "messageType: string",
        "includeImage?: boolean",
    ]
    assert rows["mcp__cli__get-env"]["arguments"] == ["-"]


def test_a_table_takes_the_width_columns_gives() -> None:
    done = run("tools", "--", *everything(), columns=400)
    assert done.returncode == 0, done.stderr
    rows = read_table(done.stdout, TOOL_COLUMNS)
    assert all(len(row["description"]) == 1 for row in rows)  # nothing needed to wrap


def test_tool_arguments_of_schemas() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": ["integer", "null"]},
            "mode": {"anyOf": [{"type": "string"}, {"type": "number"}]},
            "raw": True,
        },
        "required": ["path", "mode"],
    }
    assert tool_arguments(schema) == "path: string\nlimit?: integer|null\nmode\nraw?"
    assert tool_arguments({"type": "object"}) == "-"
    assert tool_arguments({"type": "object", "properties": {}, "required": "x"}) == "-"


# --- failures in shell words -------------------------------------------------------------------


def test_failures_name_the_config_the_flags_and_the_subcommands(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "servers.json",
        {
            "everything": entry(everything()),
            "fault": entry(fault_server_argv()),
            "broken": {"command": str(tmp_path / "no-such-server")},
            "typo": {"command": "true", "argz": ["x"]},
            "off": {"command": "true", "disabled": True},
        },
    )
    at = ("--config", str(config))
    entry_of = f"its entry in {str(config)!r}"
    cases: list[tuple[tuple[str, ...], int, str]] = [
        (("status", *at), 3, f"typo: {entry_of} is invalid: unknown field 'argz'"),
        (("status", *at), 3, f"; fix {entry_of} and run the command again"),
        (("tools", *at), 0, "server 'broken' is down: could not connect: No such file"),
        (("call", "mcp__broken__x", "{}", *at), 3, f"fix {entry_of} and run the command again"),
        (("call", "mcp__typo__x", "{}", *at), 2, f"not loaded: {entry_of} is invalid"),
        (("call", "mcp__off__x", "{}", *at), 2, f'disabled ("disabled": true in {entry_of})'),
        (("call", "mcp__everything__ech", "{}", *at), 2, "no server has a tool named"),
        (("read", "fault", "x://y", *at), 2, "(`mcp-client status --json` shows what it offers)"),
        (("prompt", "mcp__fault__x", *at), 2, "(`mcp-client status --json` shows what"),
        (("tools", "--url", "ftp://x"), 2, "--url is invalid: 'url' must start with http://"),
        (("tools", "--url", "ftp://x", "--header", "A: b"), 2, "--url or --header is invalid"),
        (("tools", "--", str(tmp_path / "nope")), 3, "fix the command after -- and run"),
        (
            ("call", "echo", "{}", "--start-timeout", "0.5", "--", *SILENT),
            3,
            "after 0.5 s (--start-timeout SECONDS waits longer)",
        ),
        (
            ("call", "hang", "{}", "--timeout", "0.5", "--", *fault_server_argv()),
            4,
            "(give it longer with --timeout)",
        ),
        (
            ("call", "exit", '{"code": 3}', "--", *fault_server_argv()),
            4,
            "exited with code 3 before answering",
        ),
        (("status", "--url", "http://127.0.0.1:1/mcp"), 3, "this may pass: run the command again"),
    ]
    for args, code, words in cases:
        done = run(*args)
        shown = done.stdout + done.stderr
        assert done.returncode == code, (args, shown)
        assert words in shown, (args, shown)
        assert LIBRARY_WORDS.search(shown) is None, (args, shown)


def _sources(tmp_path: Path) -> list[Source]:
    config = str(tmp_path / ".mcp.json")
    return [
        Source(config, None, (), False, (), None),
        Source(None, "https://example.com/mcp", ("X-Key: k",), False, (), None),
        Source(None, None, (), False, ("srv", "--flag"), None),
    ]


def _invalid_spec(fields: dict[str, object]) -> str:
    with pytest.raises(InvalidSpec) as refused:
        Spec.build({"name": "s", **fields})
    return refused.value.message


def _library_messages(tmp_path: Path) -> list[str]:
    """A message of every kind of library error the command can pass on, made by the
    library itself (so a message the library rewords is checked as it now reads)."""
    servers = ["fs"]
    open_config = tmp_path / "open.json"
    open_config.write_text('{"mcpServers": {}}')
    open_config.chmod(open_config.stat().st_mode | stat.S_IWOTH)
    with pytest.raises(InvalidConfig) as too_open:
        load_config(str(open_config), expand_env=True, environ={})
    undefined = load_config(
        '{"mcpServers": {"s": {"command": "${NOPE_NOT_SET}"}}}', expand_env=True, environ={}
    )
    return [
        str(ConnectFailed("No such file or directory: srv", permanent=True)),
        str(ConnectFailed("connection refused")),
        str(ConnectFailed(_invalid_spec({"commnd": "x"}), permanent=True)),
        _invalid_spec({"commnd": "x"}),
        _invalid_spec({"command": "x", "fail_fast": "no"}),
        _invalid_spec({"url": "ftp://x"}),
        _invalid_spec({"command": "x", "headers": {"A": "b"}}),
        str(NotReady("starting")),
        str(NotSupported("resources/read", "resources")),
        ToolTable(servers).unknown("echo").message,
        ToolTable(servers).unknown("mcp__fs__x").message,
        PromptTable(servers).unknown("greet").message,
        str(MessageTooLarge(2048, 1024)),
        str(ListTooLong("tools/list", 100, 5000)),
        str(UnmeteredCall("pay", "it costs 5")),
        str(AuthorizationRequired("notes")),
        str(AuthorizationUnavailable("https://auth.example.com", "token", "timed out")),
        str(UrlElicitationRequired("go there", ({"elicitationId": "1"},))),
        str(UnsupportedVersion("1999-01-01", ("2025-11-25",))),
        str(ServerExited(3, "boom")),
        too_open.value.message,
        undefined.skipped["s"],
    ]


def test_every_library_message_reaches_the_shell_in_its_words(tmp_path: Path) -> None:
    messages = _library_messages(tmp_path)
    # The check sees the words it is about: each of these messages holds some before.
    assert [message for message in messages if not LIBRARY_WORDS.search(message)] == []
    for source in _sources(tmp_path):
        for message in messages:
            shown = explained(message, source)
            assert LIBRARY_WORDS.search(shown) is None, (source, message, shown)
    config, url, command = (explained(messages[0], source) for source in _sources(tmp_path))
    path = str(tmp_path / ".mcp.json")
    assert config.endswith(f"fix its entry in {path!r} and run the command again")
    assert url.endswith("fix --url or --header and run the command again")
    assert command.endswith("fix the command after -- and run the command again")


def test_the_library_keeps_its_own_words() -> None:
    # The translation is the command's: a program using the library reads what it always did.
    assert str(ConnectFailed("x", permanent=True)).endswith("fix the spec and create a new client")
