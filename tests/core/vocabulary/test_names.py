"""tool_name / parse_tool_name: namespaced tool names, ``mcp__<server>__<tool>``."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_core import parse_tool_name, tool_name


def h8(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]


@pytest.mark.parametrize(
    ("server", "tool", "name"),
    [
        ("fs", "read_file", "mcp__fs__read_file"),
        ("my-fs.v2", "read", "mcp__my_fs_v2__read"),
        ("a__b", "t", "mcp__a_b__t"),  # no "__" inside the server part
        ("_a-_-b_", "t", "mcp__a_b__t"),
        ("sérveur", "t", "mcp__s_rveur__t"),  # ASCII only
        ("fs", "tool.with-dots", "mcp__fs__tool.with-dots"),  # the tool part is kept as is
        ("fs", "_x", "mcp__fs___x"),
        ("s", "t" * 56, "mcp__s__" + "t" * 56),  # exactly 64: not shortened
        ("s", "t" * 57, "mcp__s__" + "t" * 47 + "_" + h8("s", "t" * 57)),
        ("server", "x" * 100, "mcp__server__" + "x" * 42 + "_" + h8("server", "x" * 100)),
    ],
)
def test_tool_name(server: str, tool: str, name: str) -> None:
    assert tool_name(server, tool) == name
    assert len(name) <= 64


def test_long_server_is_shortened_too() -> None:
    server = "a" * 60
    name = tool_name(server, "tool_" * 20)
    head = "a" * 23 + "_" + hashlib.sha256(server.encode()).hexdigest()[:8]
    assert name.startswith(f"mcp__{head}__tool_tool_") and len(name) == 64
    assert parse_tool_name(name) == (head, name[len(f"mcp__{head}__") :])


def test_shortened_names_of_different_tools_differ() -> None:
    names = {tool_name("srv", "x" * 80 + str(i)) for i in range(1000)}
    assert len(names) == 1000 and all(len(n) == 64 for n in names)


@pytest.mark.parametrize(("server", "tool"), [("", "t"), ("--", "t"), ("é", "t"), ("fs", "")])
def test_tool_name_refused(server: str, tool: str) -> None:
    with pytest.raises(ValueError, match=r"must not be empty|has no letter or digit"):
        tool_name(server, tool)


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("mcp__fs__read_file", ("fs", "read_file")),
        ("mcp__my_fs__a__b", ("my_fs", "a__b")),  # the first "__" after the server splits
        ("mcp__fs___x", ("fs", "_x")),
        ("mcp__fs__", None),
        ("mcp__fs", None),
        ("mcp____t", None),
        ("mcp___fs__t", None),
        ("mcp__fs-x__t", None),
        ("mcp_fs__t", None),
        ("read_file", None),
        ("", None),
    ],
)
def test_parse_tool_name(name: str, parsed: tuple[str, str] | None) -> None:
    assert parse_tool_name(name) == parsed


@given(
    server=st.from_regex(r"[A-Za-z0-9]{1,10}(_[A-Za-z0-9]{1,5}){0,2}", fullmatch=True),
    tool=st.text(min_size=1, max_size=35),  # 5 + 22 + 2 + 35 = 64: never shortened
)
def test_parse_inverts_unshortened_names(server: str, tool: str) -> None:
    assert parse_tool_name(tool_name(server, tool)) == (server, tool)
