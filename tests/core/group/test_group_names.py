"""Tool names across a group: normalised server parts, clashes told apart by a hash,
shortening past 64 characters, stability across restarts, and the way back. No I/O."""

from __future__ import annotations

import itertools

import mcp_core as core
import mcp_core._group.names as group_names
from mcp_core import UnknownPrompt
from mcp_core.group import PromptTable, ToolTable, server_parts


def tool(name: str) -> core.Tool:
    return core.Tool(name=name, input_schema={"type": "object"}, description=f"does {name}")


def test_server_parts_are_normalised_names() -> None:
    parts, unnamed = server_parts(["fs", "my-server", "web.search.v2", "--"])
    assert parts == {"fs": "fs", "my-server": "my_server", "web.search.v2": "web_search_v2"}
    assert list(unnamed) == ["--"]


def test_clashing_server_names_are_told_apart_deterministically() -> None:
    names = ["my_fs", "my-fs", "my.fs", "other"]
    results = [server_parts(order)[0] for order in itertools.permutations(names)]
    assert all(r == results[0] for r in results)  # the order of the servers does not matter
    parts = results[0]
    assert parts["my_fs"] == "my_fs" and parts["other"] == "other"  # spelt as the part: kept
    assert parts["my-fs"].startswith("my_fs_") and parts["my.fs"].startswith("my_fs_")
    assert len(set(parts.values())) == 4
    # The suffix depends only on the server's own name.
    assert server_parts(["my-fs", "my.fs"])[0]["my-fs"] == parts["my-fs"]
    # A server named like a suffixed part does not steal it.
    twin = server_parts(["my-fs", "my_fs", parts["my-fs"]])[0]
    assert len(set(twin.values())) == 3 and twin[parts["my-fs"]] == parts["my-fs"]


def test_servers_that_cannot_be_told_apart_are_refused(monkeypatch) -> None:
    monkeypatch.setattr(group_names, "_digest", lambda text: "00000000")
    parts, unnamed = server_parts(["a-b", "a.b", "c"])
    assert parts == {"c": "c"}
    assert set(unnamed) == {"a-b", "a.b"} and "cannot be told apart" in unnamed["a-b"]


def test_table_names_route_back_to_the_original_tools() -> None:
    table = ToolTable(["fs", "web-search"])
    listed, notes = table.publish("fs", [tool("read_file"), tool("write_file")])
    assert notes == []
    assert [t.name for t in listed] == ["mcp__fs__read_file", "mcp__fs__write_file"]
    assert listed[0].description == "does read_file"
    table.publish("web-search", [tool("read_file")])
    assert table.resolve("mcp__fs__read_file") == ("fs", "read_file")
    assert table.resolve("mcp__web_search__read_file") == ("web-search", "read_file")
    assert table.resolve("mcp__fs__nope") is None
    assert table.server_of("mcp__web_search__anything") == "web-search"
    assert table.server_of("mcp__nobody__x") is None and table.server_of("x") is None


def test_long_names_are_shortened_distinct_and_resolved() -> None:
    server = "s" * 70
    table = ToolTable([server, "fs"])
    head = "get_" + "very_long_" * 8
    tools = [tool(head + "alpha"), tool(head + "beta"), tool("x" * 200)]
    listed, _ = table.publish(server, tools)
    names = [t.name for t in listed]
    assert all(len(n) <= 64 for n in names) and len(set(names)) == 3
    for name, original in zip(names, tools, strict=True):
        assert table.resolve(name) == (server, original.name)
        # A name a restarted group has not listed yet still points at its server.
        assert table.server_of(name) == server
    listed, _ = table.publish("fs", [tool(head + "alpha")])
    assert listed[0].name not in names  # another server: another name


def test_names_are_stable_across_restarts() -> None:
    tools = [tool("read_file"), tool("q" * 90)]
    first, _ = ToolTable(["fs", "web"]).publish("fs", tools)
    again, _ = ToolTable(["web", "fs", "more"]).publish("fs", tools)
    assert [t.name for t in first] == [t.name for t in again]


def test_publish_replaces_a_servers_names_and_skips_bad_tools() -> None:
    table = ToolTable(["fs"])
    table.publish("fs", [tool("old")])
    listed, notes = table.publish("fs", [tool("new"), tool("new"), tool("")])
    assert [t.name for t in listed] == ["mcp__fs__new"]
    assert len(notes) == 2 and "already names" in notes[0] and "empty" in notes[1]
    assert table.resolve("mcp__fs__old") is None
    assert table.resolve("mcp__fs__new") == ("fs", "new")


def test_an_unknown_name_says_why_and_suggests() -> None:
    table = ToolTable(["fs"])
    table.publish("fs", [tool("read_file")])
    error = table.unknown("mcp__fs__read_fil")
    assert isinstance(error, core.UnknownTool) and error.name == "mcp__fs__read_fil"
    assert "'fs' lists no such tool" in str(error) and "mcp__fs__read_file" in str(error)
    assert "mcp__<server>__<tool>" in str(table.unknown("read_file"))
    assert "no server is named 'web'" in str(table.unknown("mcp__web__x"))


# --- prompts: named like tools, in a table of their own ----------------------------------------


def prompt(name: str) -> core.Prompt:
    return core.Prompt(name=name, description=f"says {name}")


def test_prompts_are_named_and_routed_like_tools() -> None:
    servers = ["fs", "web-search", "s" * 70]
    tools, prompts = ToolTable(servers), PromptTable(servers)
    long_name = "summarise_" + "everything_" * 6
    for server in servers:
        tool_names = [t.name for t in tools.publish(server, [tool("echo"), tool(long_name)])[0]]
        listed, notes = prompts.publish(server, [prompt("echo"), prompt(long_name)])
        assert notes == []
        # The same rules: the same name for a prompt as for a tool of that name.
        assert [p.name for p in listed] == tool_names
        assert all(len(p.name) <= 64 for p in listed)
        assert listed[0].description == "says echo"  # the rest of the Prompt is kept
        for renamed, original in zip(listed, ["echo", long_name], strict=True):
            assert prompts.resolve(renamed.name) == (server, original)
            assert prompts.server_of(renamed.name) == server
    assert prompts.resolve("mcp__web_search__echo") == ("web-search", "echo")
    # Separate tables: listing prompts does not make tool names, nor the other way round.
    assert ToolTable(servers).resolve("mcp__fs__echo") is None
    assert prompts.resolve("mcp__fs__nope") is None


def test_prompt_publish_replaces_and_skips_like_tools() -> None:
    table = PromptTable(["fs"])
    table.publish("fs", [prompt("old")])
    listed, notes = table.publish("fs", [prompt("new"), prompt("new"), prompt("")])
    assert [p.name for p in listed] == ["mcp__fs__new"]
    assert "prompt 'new' left out" in notes[0] and "already names" in notes[0]
    assert notes[1] == "prompt '' left out: a prompt name must not be empty"
    assert table.resolve("mcp__fs__old") is None


def test_an_unknown_prompt_says_why_and_suggests() -> None:
    table = PromptTable(["fs"])
    table.publish("fs", [prompt("greeting")])
    error = table.unknown("mcp__fs__greting")
    assert isinstance(error, UnknownPrompt) and isinstance(error, core.McpError)
    assert not isinstance(error, core.UnknownTool)
    assert error.name == "mcp__fs__greting"
    assert str(error).startswith("no server of this group has a prompt named 'mcp__fs__greting'")
    assert "'fs' lists no such prompt" in str(error) and "mcp__fs__greeting" in str(error)
    assert "mcp__<server>__<prompt>; list_prompts() gives them" in str(table.unknown("greeting"))
    assert "no server is named 'web'" in str(table.unknown("mcp__web__x"))
