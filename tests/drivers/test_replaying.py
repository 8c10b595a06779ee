"""Client(replay=...) and ClientGroup(record=DIR / replay=DIR), on each driver: a session
recorded against a real server (stdio, Streamable HTTP) is answered again from its file with
no server, through the real client (results, progress, errors)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import mcp_core as core
import mcp_sync
from mcp_pytest import Recordings
from tests.conftest import everything_argv, py_server_argv
from tests.drivers.facade import Facade
from tests.drivers.test_group import Group
from tests.servers.http_fault_server import HttpFaultServer

pytestmark = pytest.mark.anyio

SUM = ("get-sum", {"a": 2, "b": 3})
LONG = ("trigger-long-running-operation", {"duration": 0.2, "steps": 2})


async def _session(c: Facade) -> tuple[list[str], str, str, list[float]]:
    """What the test asks of server-everything: its tools, a sum, and a call with progress."""
    seen: list[float] = []
    async with c:
        tools = [t.name for t in await c.list_tools()]
        total = (await c.call_tool(*SUM, timeout=10)).text
        long = await c.call_tool(*LONG, timeout=10, progress=lambda p, t, m: seen.append(p))
    return tools, total, long.text, seen


async def test_a_stdio_session_replays_through_the_real_client(driver: str, tmp_path: Path) -> None:
    path = tmp_path / "everything.jsonl"
    with anyio.fail_after(60):
        command, *args = everything_argv()
        live = await _session(Facade(driver, name="e", command=command, args=args, record=path))
        replayed = Facade(driver, replay=path)
        assert await _session(replayed) == live
        assert live[1] == "The sum of 2 and 3 is 5." and live[3] == [1, 2]
        async with Facade(driver, replay=path) as again:
            with pytest.raises(core.JsonRpcError, match="the recording holds no tools/call"):
                await again.call_tool("get-sum", {"a": 9, "b": 9})
            with pytest.raises(core.JsonRpcError, match="holds no prompts/list request"):
                await again._run("list_prompts")


async def test_an_http_session_replays_too(driver: str, tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    with anyio.fail_after(60), HttpFaultServer(sse=True) as server:
        async with Facade(driver, name="h", url=server.url, record=path) as live:
            recorded = (await live.call_tool("echo", {"text": "over http"})).text
    # The server is gone: only the recording answers.
    async with Facade(driver, replay=path, call_timeout=5) as replayed:
        assert (await replayed.call_tool("echo", {"text": "over http"})).text == recorded
        assert replayed.status().transport == "stdio"  # a replay peer stands for the server


async def test_a_group_records_one_file_per_server_and_replays_them(
    driver: str, tmp_path: Path
) -> None:
    command, *args = everything_argv()
    specs: dict[str, Any] = {
        "everything": {"command": command, "args": args},
        "sdk": {"command": py_server_argv()[0], "args": py_server_argv()[1:]},
    }

    async def ask(group: Group) -> list[str]:
        async with group:
            return [
                (await group.call_tool("mcp__everything__get-sum", {"a": 1, "b": 1})).text,
                (await group.call_tool("mcp__sdk__echo", {"text": "hi"})).text,
            ]

    with anyio.fail_after(90):
        live = await ask(Group(driver, specs, record=tmp_path / "rec"))
        assert sorted(p.name for p in (tmp_path / "rec").iterdir()) == [
            "everything.jsonl",
            "sdk.jsonl",
        ]
        assert await ask(Group(driver, specs, replay=tmp_path / "rec")) == live


def test_the_plugin_finds_the_file_a_group_records_whatever_the_server_name(
    tmp_path: Path,
) -> None:
    # Names a file system would mangle: the plugin must look where the group wrote, or a
    # group of such servers would never replay.
    names = ["my  server", "dé/v"]
    specs = {name: {"command": py_server_argv()[0], "args": py_server_argv()[1:]} for name in names}
    with mcp_sync.ClientGroup(specs, record=tmp_path) as group:
        assert (group.call_tool("mcp__my_server__echo", {"text": "x"})).text == "x"
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(Recordings(tmp_path, "auto").path(n).name for n in names)
    assert written == ["d_v.jsonl", "my_server.jsonl"]


def test_the_recordings_name_and_prices_are_the_defaults() -> None:
    stored = Path(__file__).parent.parent / "recordings" / "everything_stdio.jsonl"
    client = mcp_sync.Client(replay=stored)
    assert client.spec.name == "everything_stdio"
    assert client.spec.command == sys.executable
    assert client.spec.args[:2] == ("-m", "_mcp_io.replay_peer")
    renamed = mcp_sync.Client(
        {"name": "mine", "command": "npx", "url": None}, replay=stored, prices={"x": 3}
    )
    assert (renamed.spec.name, renamed.spec.prices) == ("mine", {"x": 3})
    assert renamed.spec.command == sys.executable  # how to reach the server is not used


def test_a_missing_recording_and_both_keywords_are_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.jsonl"
    with pytest.raises(FileNotFoundError, match=r"nothing\.jsonl"):
        mcp_sync.Client(replay=missing)
    not_a_recording = tmp_path / "not.jsonl"
    not_a_recording.write_text('{"hello": 1}\n')
    with pytest.raises(ValueError, match="not an mcp-replay recording"):
        mcp_sync.Client(replay=not_a_recording)
    with pytest.raises(ValueError, match="record= and replay= together"):
        mcp_sync.Client(replay=missing, record=tmp_path / "r.jsonl")
    with pytest.raises(ValueError, match="record= and replay= together"):
        mcp_sync.ClientGroup({"a": {"command": "x"}}, replay=tmp_path, record=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"a\.jsonl"):
        mcp_sync.ClientGroup({"a": {"command": "x"}}, replay=tmp_path)
