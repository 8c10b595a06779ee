"""load_config: .mcp.json files, bad entries, ${VAR} expansion, file safety."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcp_core import InvalidSpec, McpError, Spec
from mcp_core.config import InvalidConfig, LoadedConfig, load_config

SECRET = "s3cr3t-token"


def load(document: object, **options: Any) -> LoadedConfig:
    return load_config(json.dumps(document), **options)


def servers(table: dict[str, Any], key: str = "mcpServers") -> LoadedConfig:
    return load({key: table})


def assert_no_secret(loaded: LoadedConfig, secret: str = SECRET) -> None:
    shown = [repr(loaded), *loaded.skipped.values(), *loaded.notes]
    assert not [text for text in shown if secret in text]


# --- good entries --------------------------------------------------------------------------------

GOOD_CASES: list[tuple[str, dict[str, Any], Spec]] = [
    ("stdio", {"command": "npx"}, Spec(name="s", command="npx")),
    (
        "stdio with everything",
        {"command": "npx", "args": ["-y", "pkg"], "env": {"A": "1"}, "cwd": "/srv"},
        Spec(name="s", command="npx", args=("-y", "pkg"), env={"A": "1"}, cwd="/srv"),
    ),
    ("type stdio", {"type": "stdio", "command": "npx"}, Spec(name="s", command="npx")),
    ("type null", {"type": None, "command": "npx"}, Spec(name="s", command="npx")),
    (
        "type stdio with url null",
        {"type": "stdio", "command": "npx", "url": None},
        Spec(name="s", command="npx"),
    ),
    (
        "http with headers",
        {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer x"}},
        Spec(name="s", url="https://h/mcp", headers={"Authorization": "Bearer x"}),
    ),
    ("http", {"url": "https://h/mcp"}, Spec(name="s", url="https://h/mcp")),
    ("streamable", {"type": "streamable-http", "url": "http://h"}, Spec(name="s", url="http://h")),
    ("sse", {"type": "sse", "url": "http://h/sse"}, Spec(name="s", url="http://h/sse")),
    # FastMCP's spelling of "type".
    ("fastmcp http", {"transport": "http", "url": "http://h"}, Spec(name="s", url="http://h")),
    ("fastmcp stdio", {"transport": "stdio", "command": "x"}, Spec(name="s", command="x")),
    (
        "type and transport agree",
        {"type": "sse", "transport": "sse", "url": "http://h"},
        Spec(name="s", url="http://h"),
    ),
    (
        "our keys",
        {
            "url": "http://h",
            "concurrency": "pooled",
            "pool_size": 2,
            "queue_limit": 0,
            "call_timeout": 5,
            "era": "legacy",
            "fail_fast": True,
            "prices": {"search": 3},
            "max_message_bytes": 1024,
        },
        Spec(
            name="s",
            url="http://h",
            concurrency="pooled",
            pool_size=2,
            queue_limit=0,
            call_timeout=5.0,
            era="legacy",
            fail_fast=True,
            prices={"search": 3},
            max_message_bytes=1024,
        ),
    ),
    ("inner name equal to key", {"name": "s", "command": "x"}, Spec(name="s", command="x")),
    ("disabled false", {"disabled": False, "command": "x"}, Spec(name="s", command="x")),
    (
        "references stay literal without expand_env",
        {"command": "${CMD}", "args": ["${A}"], "headers": {}, "env": {"T": "${env:T}"}},
        Spec(name="s", command="${CMD}", args=("${A}",), env={"T": "${env:T}"}),
    ),
]


@pytest.mark.parametrize(
    ("entry", "spec"), [c[1:] for c in GOOD_CASES], ids=[c[0] for c in GOOD_CASES]
)
def test_good_entries_load(entry: dict[str, Any], spec: Spec) -> None:
    loaded = servers({"s": entry})
    assert loaded == LoadedConfig(servers={"s": spec}, skipped={}, source="<text>")


def test_vs_code_servers_table_and_its_other_keys() -> None:
    loaded = load(
        {
            "inputs": [{"type": "promptString", "id": "key"}],
            "servers": {"gh": {"type": "http", "url": "https://api.example/mcp"}},
        }
    )
    assert loaded.servers == {"gh": Spec(name="gh", url="https://api.example/mcp")}
    assert (loaded.skipped, loaded.notes) == ({}, ())


def test_mcp_servers_wins_over_servers_with_a_note() -> None:
    loaded = load({"servers": {"a": {"command": "a"}}, "mcpServers": {"b": {"command": "b"}}})
    assert list(loaded.servers) == ["b"]
    assert loaded.notes == ("ignored 'servers': 'mcpServers' is present and wins",)


def test_empty_table_loads_nothing() -> None:
    assert servers({}) == LoadedConfig(servers={}, skipped={}, source="<text>")
    assert servers({}, key="servers").servers == {}


def test_order_of_the_file_is_kept_for_servers_and_skipped() -> None:
    names = ["zeta", "bad2", "alpha", "bad1", "mid"]
    table = {n: ({"command": n} if not n.startswith("bad") else []) for n in names}
    loaded = servers(table)
    assert list(loaded.servers) == ["zeta", "alpha", "mid"]
    assert list(loaded.skipped) == ["bad2", "bad1"]


def test_keys_of_other_clients_are_ignored_with_notes() -> None:
    entry = {
        "command": "x",
        "autoApprove": ["read"],
        "alwaysAllow": [],
        "timeout": 60000,
        "description": "files",
        "envFile": "${workspaceFolder}/.env",
    }
    loaded = servers({"fs": entry, "gone": {**entry, "url": "http://h"}})
    assert loaded.servers == {"fs": Spec(name="fs", command="x")}
    assert list(loaded.skipped) == ["gone"]  # a skipped entry adds no notes
    assert len(loaded.notes) == 5
    assert loaded.notes[0].startswith("server 'fs': ignored 'autoApprove' (")
    assert "'call_timeout'" in loaded.notes[2] and "'env'" in loaded.notes[4]


def test_disabled_entry_is_skipped_as_disabled() -> None:
    loaded = servers(
        {"off": {"disabled": True, "command": "x", "bogus": 1}, "on": {"command": "y"}}
    )
    assert loaded.skipped == {"off": "disabled"}
    assert list(loaded.servers) == ["on"]


def test_text_is_recognised_by_its_first_non_space_character() -> None:
    assert load_config(' \n\t{"mcpServers": {}}').source == "<text>"
    with pytest.raises(InvalidConfig, match="does not exist"):
        load_config('mcpServers: {"a": 1}')


def test_loaded_config_is_frozen() -> None:
    loaded = servers({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.source = "x"  # type: ignore[misc]


# --- bad entries ---------------------------------------------------------------------------------

BAD_CASES: list[tuple[str, object, str]] = [
    ("list", ["npx"], "the entry must be a JSON object, got an array"),
    ("string", "npx", "got a string"),
    ("number", 3, "got a number"),
    ("null", None, "got null"),
    ("boolean", True, "got a boolean"),
    ("both", {"command": "x", "url": "http://h"}, "both 'command' and 'url' are set"),
    ("neither", {"args": ["a"]}, "neither 'command' nor 'url' is set"),
    ("args a string", {"command": "x", "args": "-y pkg"}, "'args' must be a list"),
    ("env a list", {"command": "x", "env": ["A=1"]}, "'env' must be a mapping"),
    ("command a number", {"command": 1}, "'command' must be a non-empty string"),
    ("header value a number", {"url": "http://h", "headers": {"A": 1}}, "headers['A'] must be"),
    ("headers on stdio", {"command": "x", "headers": {"A": "b"}}, "'headers' is set for a stdio"),
    ("unknown type", {"type": "ws", "url": "http://h"}, "got 'ws'"),
    ("type a number", {"type": 5, "command": "x"}, "'type' must be one of stdio, http,"),
    ("type unshowable", {"type": "a b", "command": "x"}, "got a string;"),
    ("stdio with url", {"type": "stdio", "url": "http://h"}, "'stdio', which needs 'command'"),
    ("http with command", {"type": "http", "command": "x"}, "but the entry sets 'command'"),
    ("sse with command", {"type": "sse", "command": "x"}, "'sse', which needs 'url'"),
    ("transport stdio, url", {"transport": "stdio", "url": "http://h"}, "fix 'transport' or"),
    ("transport unknown", {"transport": "ws", "url": "http://h"}, "'transport' must be one of"),
    (
        "type and transport differ",
        {"type": "stdio", "transport": "http", "command": "x"},
        "'type' and 'transport' name different transports",
    ),
    ("zero timeout", {"command": "x", "call_timeout": 0}, "'call_timeout' must be a positive"),
    ("string timeout", {"command": "x", "init_timeout": "60"}, "'init_timeout' must be a pos"),
    ("negative pool", {"command": "x", "pool_size": -1}, "'pool_size' must be an integer >= 1"),
    ("bad era", {"command": "x", "era": "new"}, "'era' must be one of auto, legacy, modern"),
    ("bad price", {"command": "x", "prices": {"t": 0}}, "prices['t'] must be a positive"),
    ("typo of ours", {"command": "x", "call_timout": 5}, "did you mean 'call_timeout'?"),
    ("unknown field", {"command": "x", "colour": "red"}, "unknown field 'colour'"),
    ("disabled not a bool", {"command": "x", "disabled": "yes"}, "'disabled' must be true or"),
    ("inner name differs", {"name": "other", "command": "x"}, "'name' differs from its key"),
]


@pytest.mark.parametrize(
    ("entry", "reason"), [c[1:] for c in BAD_CASES], ids=[c[0] for c in BAD_CASES]
)
def test_each_bad_entry_is_skipped_with_a_reason_while_good_ones_load(
    entry: object, reason: str
) -> None:
    loaded = servers({"good": {"command": "ok"}, "bad": entry})
    assert list(loaded.servers) == ["good"]
    assert list(loaded.skipped) == ["bad"]
    assert reason in loaded.skipped["bad"]


def test_spec_reasons_are_the_invalid_spec_message() -> None:
    entry = {"command": "x", "url": "http://h"}
    with pytest.raises(InvalidSpec) as raised:
        Spec.from_mapping({"name": "bad", **entry})
    assert servers({"bad": entry}).skipped == {"bad": raised.value.message}


@pytest.mark.parametrize("name", ["", "--", "._."])
def test_names_that_cannot_namespace_tools_are_skipped(name: str) -> None:
    loaded = servers({name: {"command": "x"}})
    assert loaded.servers == {} and list(loaded.skipped) == [name]
    assert "non-empty" in loaded.skipped[name] or "no letter or digit" in loaded.skipped[name]


SECRET_ENTRIES: list[dict[str, Any]] = [
    {"command": "x", "url": "http://h", "headers": {"Authorization": f"Bearer {SECRET}"}},
    {"command": "x", "env": {"TOKEN": SECRET}, "call_timeout": 0},
    {"command": "x", "args": ["--token", SECRET], "era": "never"},
    {"url": f"https://user:{SECRET}@h/mcp?key={SECRET}", "pool_size": 0},
    {"url": "http://h", "headers": {f"Authorization: Bearer {SECRET}": "x"}},
    {"url": "http://h", "headers": {"A": f"{SECRET}\r\nX: y"}},
    {"command": "x", "colour": SECRET},
    {"command": "x", "type": f"Bearer {SECRET}"},
    {"command": "x", "name": SECRET},
    {"command": "x", "disabled": SECRET},
]


@pytest.mark.parametrize("entry", SECRET_ENTRIES)
def test_secrets_in_bad_entries_never_reach_reasons_or_reprs(entry: dict[str, Any]) -> None:
    loaded = servers({"bad": entry})
    assert list(loaded.skipped) == ["bad"]
    assert_no_secret(loaded)


def test_secrets_in_good_entries_stay_out_of_the_repr() -> None:
    loaded = servers(
        {
            "web": {"url": f"https://h/mcp?k={SECRET}", "headers": {"X-Key": SECRET}},
            "fs": {"command": "x", "args": [SECRET], "env": {"K": SECRET}, "autoApprove": []},
        }
    )
    assert loaded.servers["web"].headers["X-Key"] == SECRET  # kept, only never shown
    assert_no_secret(loaded)


# --- ${VAR} expansion ----------------------------------------------------------------------------

ENVIRON = {"HOME": "/home/me", "TOKEN": SECRET, "EMPTY": "", "PORT": "8080"}

EXPAND_CASES: list[tuple[str, str]] = [
    ("${HOME}/bin", "/home/me/bin"),
    ("${env:HOME}", "/home/me"),
    ("${MISSING:-fallback}", "fallback"),
    ("${env:MISSING:-a:-b}", "a:-b"),
    ("${EMPTY:-used}", "used"),
    ("${EMPTY}", ""),
    ("${HOME:-unused}", "/home/me"),
    ("${MISSING:-}", ""),
    ("${HOME}:${PORT}", "/home/me:8080"),
    ("$HOME and ${unclosed", "$HOME and ${unclosed"),
    ("no references", "no references"),
]


@pytest.mark.parametrize(("written", "expanded"), EXPAND_CASES)
def test_expansion_forms(written: str, expanded: str) -> None:
    loaded = servers({"s": {"command": "x", "args": [written]}})
    assert loaded.servers["s"].args == (written,)  # off by default
    loaded = load(
        {"mcpServers": {"s": {"command": "x", "args": [written]}}}, expand_env=True, environ=ENVIRON
    )
    assert loaded.servers["s"].args == (expanded,)


def test_expansion_reaches_every_field_that_may_hold_a_reference() -> None:
    table = {
        "fs": {
            "command": "${HOME}/bin/server",
            "args": ["--port", "${PORT}", 7],
            "env": {"TOKEN": "${TOKEN}", "N": 1},
            "cwd": "${HOME}",
        },
        "web": {
            "url": "http://localhost:${PORT}/mcp",
            "headers": {"Authorization": "Bearer ${env:TOKEN}"},
            "era": "${HOME}",  # not a field that expands: stays literal, and Spec refuses it
        },
        "login": {
            "url": "https://h/mcp",
            "oauth": {"client_id": "app", "client_secret": "${TOKEN}", "redirect_port": 80},
        },
    }
    loaded = load({"mcpServers": table}, expand_env=True, environ=ENVIRON)
    assert list(loaded.skipped) == ["fs", "web"]  # args[2] and env['N'] are not strings
    assert loaded.servers["login"].oauth["client_secret"] == SECRET
    assert "args[2] must be a string" in loaded.skipped["fs"]
    assert "'${HOME}'" in loaded.skipped["web"]
    table["fs"]["args"].pop()
    del table["fs"]["env"]["N"]
    del table["web"]["era"]
    loaded = load({"mcpServers": table}, expand_env=True, environ=ENVIRON)
    assert loaded.skipped == {}
    fs, web = loaded.servers["fs"], loaded.servers["web"]
    assert (fs.command, fs.args, fs.cwd) == ("/home/me/bin/server", ("--port", "8080"), "/home/me")
    assert fs.env == {"TOKEN": SECRET}
    assert (web.url, web.headers) == (
        "http://localhost:8080/mcp",
        {"Authorization": f"Bearer {SECRET}"},
    )
    assert_no_secret(loaded)


@pytest.mark.parametrize(
    "entry",
    [
        {"command": 5, "args": "${HOME}"},
        {"command": "x", "env": ["${HOME}"]},
        {"url": ["${HOME}"], "headers": "${HOME}"},
    ],
)
def test_expansion_leaves_wrong_types_for_spec_to_refuse(entry: dict[str, Any]) -> None:
    loaded = load({"mcpServers": {"s": entry}}, expand_env=True, environ=ENVIRON)
    assert list(loaded.skipped) == ["s"]


def test_undefined_variable_skips_the_entry_naming_the_variable_only() -> None:
    entry = {"url": "http://h", "headers": {"Authorization": f"Bearer {SECRET} ${{NOPE}}"}}
    loaded = load(
        {"mcpServers": {"s": entry, "ok": {"command": "${HOME}"}}}, expand_env=True, environ={}
    )
    assert list(loaded.skipped) == ["s", "ok"]
    assert loaded.skipped["s"].startswith("undefined variable 'NOPE' in 'headers';")
    assert "${NOPE:-default}" in loaded.skipped["s"]
    assert loaded.skipped["ok"].startswith("undefined variable 'HOME' in 'command';")
    assert_no_secret(loaded)


@pytest.mark.parametrize(
    ("where", "entry"),
    [
        ("args[1]", {"command": "x", "args": ["a", "${input:api-key}"]}),
        ("'url'", {"url": "http://h/${ spaced }"}),
        ("'env'", {"command": "x", "env": {"K": f"${{{SECRET}-1}}"}}),
    ],
)
def test_references_of_other_kinds_skip_the_entry(where: str, entry: dict[str, Any]) -> None:
    loaded = load({"mcpServers": {"s": entry}}, expand_env=True, environ=ENVIRON)
    assert loaded.skipped["s"].startswith(f"{where} has a ${{...}} reference that cannot")
    assert_no_secret(loaded)


def test_expanded_secret_in_a_bad_entry_stays_redacted() -> None:
    entry = {
        "command": "x",
        "url": "http://h",
        "headers": {"A": "${TOKEN}"},
        "env": {"B": "${TOKEN}"},
    }
    loaded = load({"mcpServers": {"s": entry}}, expand_env=True, environ=ENVIRON)
    assert "both 'command' and 'url'" in loaded.skipped["s"]
    assert_no_secret(loaded)


def test_environ_is_required_to_expand_and_unused_otherwise() -> None:
    with pytest.raises(ValueError, match="pass the mapping to expand from"):
        load({"mcpServers": {}}, expand_env=True)
    loaded = load({"mcpServers": {"s": {"command": "${HOME}"}}}, environ=ENVIRON)
    assert loaded.servers["s"].command == "${HOME}"


# --- the whole config ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "the config text is not valid JSON: Expecting property name enclosed in double"),
        ('{"mcpServers": {},}', "line 1 column 19"),
        ('{"a": ' + "[" * 200_000, "nested too deeply"),
        ("{}", "has no 'mcpServers' object (nor VS Code's 'servers'); write {\"mcpServers\""),
        ('{"mcpservers": {}}', "did you mean 'mcpServers' instead of 'mcpservers'?"),
        ('{"mcp_servers": {}, "x": 1}', "instead of 'mcp_servers'?"),
        ('{"mcpServers": []}', "'mcpServers' must be an object mapping server names"),
        ('{"mcpServers": null}', "got null"),
        ('{"servers": "fs"}', "'servers' must be an object"),
    ],
)
def test_configs_that_cannot_load_at_all(text: str, message: str) -> None:
    with pytest.raises(InvalidConfig) as raised:
        load_config(text)
    assert message in str(raised.value)


def test_invalid_config_is_an_mcp_error() -> None:
    assert issubclass(InvalidConfig, McpError)


# --- files ---------------------------------------------------------------------------------------


def write(directory: Path, content: str | bytes, name: str = "mcp.json", mode: int = 0o600) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    path = directory / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    path.chmod(mode)
    return path


CONFIG = json.dumps({"mcpServers": {"fs": {"command": "${HOME}/srv"}, "bad": []}})


def test_file_loads_from_a_str_or_path(tmp_path: Path) -> None:
    path = write(tmp_path, CONFIG)
    for given in (path, str(path)):
        loaded = load_config(given)
        assert loaded.source == str(path)
        assert loaded.servers == {"fs": Spec(name="fs", command="${HOME}/srv")}
        assert list(loaded.skipped) == ["bad"]


def test_file_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = write(tmp_path, b"\xef\xbb\xbf" + CONFIG.encode())
    assert list(load_config(path).servers) == ["fs"]


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig, match=r"config file '.*missing\.json' does not exist"):
        load_config(tmp_path / "missing.json")
    with pytest.raises(InvalidConfig, match=r"cannot be read \(Is a directory\)"):
        load_config(tmp_path)
    latin = write(tmp_path, '{"mcpServers": {"caf\u00e9": {}}}'.encode("latin-1"), "latin.json")
    with pytest.raises(InvalidConfig, match="is not UTF-8 text"):
        load_config(latin)


def test_invalid_json_file_names_the_place_but_not_the_content(tmp_path: Path) -> None:
    path = write(tmp_path, '{\n  "mcpServers": {\n    "s": {"env": {"K": "' + SECRET + '"}},\n}}')
    with pytest.raises(InvalidConfig) as raised:
        load_config(path)
    message = str(raised.value)
    assert message.startswith(f"config file {str(path)!r} is not valid JSON:")
    assert "line 4 column 1" in message
    assert SECRET not in message and SECRET not in repr(raised.value)
    assert raised.value.__context__ is None and raised.value.__cause__ is None


def test_top_level_of_a_file_must_be_an_object(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfig, match="must be a JSON object, got an array"):
        load_config(write(tmp_path, "[1]"))


def test_expanding_from_a_private_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "conf", CONFIG)
    loaded = load_config(path, expand_env=True, environ=ENVIRON)
    assert loaded.servers["fs"].command == "/home/me/srv"
    monkeypatch.chdir(path.parent)  # a bare file name: its directory is "."
    assert load_config("mcp.json", expand_env=True, environ=ENVIRON).source == "mcp.json"


@pytest.mark.parametrize("file_mode", [0o620, 0o602, 0o666])
def test_refuses_to_expand_from_a_file_others_can_write(tmp_path: Path, file_mode: int) -> None:
    path = write(tmp_path, CONFIG, mode=file_mode)
    with pytest.raises(InvalidConfig) as raised:
        load_config(path, expand_env=True, environ=ENVIRON)
    assert str(raised.value).startswith(
        f"refusing to expand ${{VAR}} from config file {str(path)!r}"
    )
    assert "is writable by group or others" in str(raised.value)
    assert load_config(path).servers  # without expansion the file loads


@pytest.mark.parametrize("dir_mode", [0o770, 0o707, 0o1777])
def test_refuses_to_expand_from_a_directory_others_can_write(tmp_path: Path, dir_mode: int) -> None:
    path = write(tmp_path / "shared", CONFIG)
    path.parent.chmod(dir_mode)
    with pytest.raises(InvalidConfig, match=r"directory '.*shared' is writable by group or others"):
        load_config(path, expand_env=True, environ=ENVIRON)
    assert load_config(path).servers


def test_refuses_to_expand_through_a_symlink_into_an_open_directory(tmp_path: Path) -> None:
    target = write(tmp_path / "open", CONFIG)
    target.parent.chmod(0o777)
    link = tmp_path / "mine" / "mcp.json"
    link.parent.mkdir(mode=0o700)
    link.symlink_to(target)
    with pytest.raises(InvalidConfig, match=r"directory '.*open' is writable"):
        load_config(link, expand_env=True, environ=ENVIRON)


def test_refuses_to_expand_from_a_file_of_another_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, CONFIG)
    owner = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: owner + 1)
    with pytest.raises(InvalidConfig) as raised:
        load_config(path, expand_env=True, environ=ENVIRON)
    assert f"{str(path)!r}: the file is owned by uid {owner}, not by you (uid {owner + 1})" in (
        str(raised.value)
    )


def test_without_getuid_the_permission_check_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, CONFIG, mode=0o666)
    monkeypatch.delattr(os, "getuid")
    loaded = load_config(path, expand_env=True, environ=ENVIRON)
    assert loaded.servers["fs"].command == "/home/me/srv"


def test_text_may_always_be_expanded() -> None:
    loaded = load_config(CONFIG, expand_env=True, environ=ENVIRON)
    assert loaded.servers["fs"].command == "/home/me/srv"
