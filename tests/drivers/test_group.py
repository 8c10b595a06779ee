"""ClientGroup on both drivers (asyncio, trio, sync) against real servers, some of them broken,
plus the tool-naming rules (``mcp__<server>__<tool>``) without any I/O.

No test sleeps to wait: each waits for the event it needs, with a deadline.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import anyio.to_thread
import pytest

import mcp_asyncio._group as async_group
import mcp_core as core
import mcp_sync._group as sync_group
from mcp_core import UnknownTool
from tests.conftest import (
    children_of,
    everything_argv,
    fault_server_argv,
    py_server_argv,
    wait_until,
)
from tests.servers.http_fault_server import HttpFaultServer

pytestmark = [pytest.mark.timeout(90)]


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    """Every test must leave no child process behind."""
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


def stdio(argv: list[str], **fields: Any) -> dict[str, Any]:
    return {"command": argv[0], "args": argv[1:], **fields}


# A server that starts and never says a word: it never becomes ready, and exits on stdin EOF.
SILENT = stdio([sys.executable, "-c", "import sys; sys.stdin.read()"])


def spy(
    group: Group,
    method: str,
    before: Callable[..., Any],
    after: Callable[[str], Any] | None = None,
    outcome: Callable[[str, object], Any] | None = None,
) -> list[Any]:
    """Wrap ``method`` of every client of ``group``; record ``before(name, *args)`` as each call
    starts (and ``after(name)`` as it returns, ``outcome(name, value or exception)`` as it
    ends). Counts and order, never durations."""
    seen: list[Any] = []
    inner = group.aio if group.aio is not None else group.sync
    assert inner is not None

    def ended(name: str, result: object) -> None:
        if outcome is not None:
            seen.append(outcome(name, result))

    for name, client in inner.clients.items():
        original = getattr(client, method)
        if group.aio is not None:

            async def wrapped(*args: Any, _o: Any = original, _n: str = name, **kw: Any) -> Any:
                seen.append(before(_n, *args))
                try:
                    value = await _o(*args, **kw)
                except Exception as exc:
                    ended(_n, exc)
                    raise
                finally:
                    if after is not None:
                        seen.append(after(_n))
                ended(_n, value)
                return value

        else:

            def wrapped(*args: Any, _o: Any = original, _n: str = name, **kw: Any) -> Any:  # type: ignore[misc]
                seen.append(before(_n, *args))
                try:
                    value = _o(*args, **kw)
                except Exception as exc:
                    ended(_n, exc)
                    raise
                finally:
                    if after is not None:
                        seen.append(after(_n))
                ended(_n, value)
                return value

        setattr(client, method, wrapped)
    return seen


class Group:
    """One awaitable face over both drivers' ClientGroup (like tests/drivers/facade.py)."""

    def __init__(self, driver: str, specs: Any, /, **options: Any) -> None:
        if driver == "sync":
            self.sync: sync_group.ClientGroup | None = sync_group.ClientGroup(specs, **options)
            self.aio: async_group.ClientGroup | None = None
        else:
            self.sync = None
            self.aio = async_group.ClientGroup(specs, **options)

    async def _run(self, method: str, *args: Any, **kw: Any) -> Any:
        if self.aio is not None:
            return await getattr(self.aio, method)(*args, **kw)
        assert self.sync is not None
        call: Callable[[], Any] = functools.partial(getattr(self.sync, method), *args, **kw)
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)

    async def __aenter__(self) -> Group:
        if self.aio is not None:
            await self.aio.__aenter__()
        else:
            assert self.sync is not None
            await anyio.to_thread.run_sync(self.sync.__enter__)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.aio is not None:
            await self.aio.__aexit__(None, None, None)
        else:
            assert self.sync is not None
            await anyio.to_thread.run_sync(self.sync.__exit__, None, None, None)

    async def await_ready(self, timeout: float = 60.0, **kw: Any) -> dict[str, core.Status]:
        result: dict[str, core.Status] = await self._run("await_ready", timeout, **kw)
        return result

    async def list_tools(self, **kw: Any) -> list[core.Tool]:
        result: list[core.Tool] = await self._run("list_tools", **kw)
        return result

    async def call_tool(self, name: str, arguments: Any = None, **kw: Any) -> core.CallToolResult:
        result: core.CallToolResult = await self._run("call_tool", name, arguments, **kw)
        return result

    def status(self) -> dict[str, core.Status]:
        group = self.aio if self.aio is not None else self.sync
        assert group is not None
        return group.status()

    @property
    def clients(self) -> Any:
        group = self.aio if self.aio is not None else self.sync
        assert group is not None
        return group.clients


# --- real servers, some broken -----------------------------------------------------------------


@pytest.mark.anyio
async def test_good_servers_work_and_broken_ones_say_why(driver: str, tmp_path: Path) -> None:
    specs = {
        "everything": stdio(everything_argv()),
        "py-sdk": stdio(py_server_argv()),
        "fault": stdio(fault_server_argv()),
        "missing": {"command": str(tmp_path / "no-such-server")},
        # fail_fast: the shared deadline would otherwise wait through its retries (60 s).
        "crashes": stdio(fault_server_argv("--exit-on-start", "3"), fail_fast=True),
        "invalid": {"command": "x", "url": "http://h/", "headers": {"A": "s3cr3t"}},
    }
    with anyio.fail_after(30):
        async with Group(driver, specs) as group:
            status = group.status()
            assert list(status) == list(specs)  # every server, in the order given
            for name in ("everything", "py-sdk", "fault"):
                assert status[name].state == "ready", status[name]
            assert status["missing"].state == "closed"
            assert "no-such-server" in (status["missing"].last_error or "")
            assert "code 3" in (status["crashes"].last_error or "")
            assert status["invalid"].state == "closed"
            invalid = status["invalid"].last_error or ""
            assert "'command' and 'url'" in invalid and "s3cr3t" not in invalid
            assert set(group.clients) == set(specs) - {"invalid"}

            tools = await group.list_tools()
            names = [t.name for t in tools]
            assert len(names) == len(set(names))
            assert all(n.startswith("mcp__") and len(n) <= 64 for n in names)
            assert {"mcp__everything__echo", "mcp__py_sdk__echo", "mcp__fault__echo"} <= set(names)
            servers = {core.parse_tool_name(n)[0] for n in names}  # type: ignore[index]
            assert servers == {"everything", "py_sdk", "fault"}
            echo = next(t for t in tools if t.name == "mcp__py_sdk__echo")
            assert echo.input_schema["properties"]["text"]  # the rest of the Tool is kept

            # The same tool name on three servers, each routed to its own server.
            assert "hi" in (await group.call_tool("mcp__everything__echo", {"message": "hi"})).text
            assert (await group.call_tool("mcp__py_sdk__echo", {"text": "py"})).text == "py"
            assert (await group.call_tool("mcp__fault__echo", {"text": "f"})).text == "f"

            with pytest.raises(core.ConnectFailed) as info:
                await group.call_tool("mcp__missing__anything")
            assert info.value.permanent and "no-such-server" in str(info.value)
            with pytest.raises(core.ConnectFailed) as info:
                await group.call_tool("mcp__invalid__anything")
            assert info.value.permanent and "s3cr3t" not in str(info.value)
            with pytest.raises((core.ConnectFailed, core.NotReady)):
                await group.call_tool("mcp__crashes__echo")
            with pytest.raises(UnknownTool, match="no server is named 'nobody'"):
                await group.call_tool("mcp__nobody__echo")
            with pytest.raises(UnknownTool, match="'fault' lists no such tool"):
                await group.call_tool("mcp__fault__no_such_tool")
            with pytest.raises(UnknownTool):
                await group.call_tool("echo")
            assert (await group.call_tool("mcp__fault__echo", {"text": "still"})).text == "still"
    assert all(s.state == "closed" for s in group.status().values())


@pytest.mark.anyio
async def test_http_server_answering_401_is_down_the_others_work(driver: str) -> None:
    with HttpFaultServer() as server:
        server.set_fault("unauthorized", times=None)
        specs = {
            "fault": stdio(fault_server_argv()),
            "remote": {"url": server.url, "headers": {"Authorization": "Bearer s3cr3t"}},
        }
        with anyio.fail_after(30):
            async with Group(driver, specs) as group:
                status = group.status()
                assert status["fault"].state == "ready"
                remote = status["remote"]
                assert remote.state == "closed" and remote.transport == "http"
                assert "401" in (remote.last_error or "")
                assert "s3cr3t" not in repr(remote)
                names = [t.name for t in await group.list_tools()]
                assert len(names) == 10 and all(n.startswith("mcp__fault__") for n in names)
                with pytest.raises(core.ConnectFailed) as info:
                    await group.call_tool("mcp__remote__echo", {"text": "x"})
                assert info.value.http_error is not None and info.value.http_error.status == 401
                assert (await group.call_tool("mcp__fault__echo", {"text": "ok"})).text == "ok"


@pytest.mark.anyio
async def test_await_ready_has_one_shared_deadline(driver: str) -> None:
    specs = {"quiet1": SILENT, "fault": stdio(fault_server_argv()), "quiet2": SILENT}
    with anyio.fail_after(30):
        async with Group(driver, specs, wait=False, era="legacy") as group:
            ends = spy(group, "await_ready", lambda name, timeout: time.monotonic() + timeout)
            started = time.monotonic()
            status = await group.await_ready(1.5)
            assert time.monotonic() - started >= 1.4  # it did wait for the silent ones
            # One deadline shared by every client, not one each: each client's wait ends when
            # the group's does (up to scheduling jitter, far below the 1.5 s two would add).
            assert len(ends) == 3 and max(ends) - min(ends) < 0.5, ends
            assert status["fault"].state == "ready"
            assert status["quiet1"].state != "ready" and status["quiet2"].state != "ready"
            names = [t.name for t in await group.list_tools()]
            assert len(names) == 10 and all(n.startswith("mcp__fault__") for n in names)
            with pytest.raises(core.NotReady):
                await group.call_tool("mcp__quiet1__anything")


def _kind(name: str, result: object) -> tuple[str, str]:
    gave_up = isinstance(result, core.ConnectFailed) and result.gave_up
    return name, type(result).__name__ + ("/gave_up" if gave_up else "")


@pytest.mark.anyio
async def test_fail_fast_group_stops_waiting_for_a_crash_looping_server(driver: str) -> None:
    # No spec has fail_fast and init_timeout is 60 s: only the group's fail_fast ends the wait
    # for "crashes" (fail_after(30) fails the test otherwise). Outcomes, never durations.
    specs = {
        "fault": stdio(fault_server_argv()),
        # Each start fails differently (its pid in the line), so no wait ends on a repeat.
        "crashes": stdio(
            fault_server_argv("--exit-on-start", "3", "--exit-varies"), reconnect=0.2
        ),
    }
    with anyio.fail_after(30):
        group = Group(driver, specs, fail_fast=True)
        waits = spy(group, "await_ready", lambda name, timeout: ("wait", name), outcome=_kind)
        async with group:
            # Each server's wait ended on its own terms: ready, or its failed attempt
            # (ConnectFailed), never the shared deadline (NotReady).
            assert sorted(waits) == [
                ("crashes", "ConnectFailed"),
                ("fault", "Status"),
                ("wait", "crashes"),
                ("wait", "fault"),
            ], waits
            status = group.status()
            assert status["fault"].state == "ready"
            crashes = status["crashes"]
            assert crashes.state != "ready" and "code 3" in (crashes.last_error or "")
            # Given up on by the wait only: the client goes on retrying in the background.
            assert crashes.retry_in is not None or crashes.state != "closed", crashes
            assert (await group.call_tool("mcp__fault__echo", {"text": "up"})).text == "up"

            # fail_fast=False for one wait: the crashing server holds it to its deadline,
            # where it ends with the attempts counted (gave_up), not with one attempt.
            waits.clear()
            status = await group.await_ready(0.5, fail_fast=False)
            assert sorted(waits)[:2] == [("crashes", "ConnectFailed/gave_up"), ("fault", "Status")]
            assert "code 3" in (status["crashes"].last_error or "")
            # The client's own await_ready keeps its spec (no fail_fast): it waits.
            with pytest.raises(core.ConnectFailed, match=r"could not connect \(\d+ attempts in "):
                inner = group.clients["crashes"]
                if group.aio is not None:
                    await inner.await_ready(0.3)
                else:
                    await anyio.to_thread.run_sync(inner.await_ready, 0.3)


@pytest.mark.anyio
async def test_list_changed_shows_in_the_next_list(driver: str) -> None:
    with anyio.fail_after(30):
        async with Group(driver, {"fault": stdio(fault_server_argv())}) as group:
            assert len(await group.list_tools()) == 10
            await group.call_tool("mcp__fault__list_changed")
            assert group.status()["fault"].tools is None  # the client dropped its cache
            assert len(await group.list_tools()) == 10


@pytest.mark.anyio
async def test_call_options_reach_the_client(driver: str) -> None:
    seen: list[float] = []
    with anyio.fail_after(30):
        async with Group(driver, {"fault": stdio(fault_server_argv())}) as group:
            done = await group.call_tool(
                "mcp__fault__slow_progress",
                {"steps": 2, "delay": 0.05},
                progress=lambda p, total, message: seen.append(p),
            )
            assert done.text == "done" and len(seen) == 2
            with pytest.raises(core.RequestTimeout):
                await group.call_tool("mcp__fault__hang", timeout=0.2)


@pytest.mark.anyio
async def test_a_tool_run_as_a_task_is_followed_through_the_group(driver: str) -> None:
    with anyio.fail_after(60):
        async with Group(driver, {"ev": stdio(everything_argv())}) as group:
            await group.list_tools()
            research = "mcp__ev__simulate-research-query"
            done = await group.call_tool(research, {"topic": "kelp"})
            assert done.text.startswith("# Research Report: kelp")
            refused = await group.call_tool(research, {"topic": "kelp"}, task=False)
            assert refused.is_error  # the tool requires a task: task= reached the client


@pytest.mark.anyio
async def test_shortened_names_route_and_survive_a_restart(driver: str) -> None:
    server = "a-server-with-a-name-long-enough-to-need-shortening-in-names"
    specs = {server: stdio(fault_server_argv())}
    with anyio.fail_after(30):
        async with Group(driver, specs) as group:
            names = [t.name for t in await group.list_tools()]
            assert len(names) == 10 and all(len(n) <= 64 for n in names)
            echo = next(n for n in names if "echo" in n)
            assert core.parse_tool_name(echo) is not None
            assert (await group.call_tool(echo, {"text": "short"})).text == "short"
        # A new group (a restart) knows the same name before anyone listed its tools.
        async with Group(driver, specs) as group:
            assert (await group.call_tool(echo, {"text": "again"})).text == "again"


@pytest.mark.anyio
async def test_clients_stop_concurrently(driver: str) -> None:
    # Each of these ignores stdin EOF and SIGTERM: stopping one takes two grace periods.
    argv = fault_server_argv("--ignore-stdin-eof", "--ignore-sigterm")
    specs = {f"s{i}": stdio(argv, shutdown_grace=0.4, era="legacy") for i in range(4)}
    with anyio.fail_after(30):
        group = Group(driver, specs)
        async with group:
            assert all(s.state == "ready" for s in group.status().values())
            order = spy(group, "stop", lambda name: f"start {name}", after=lambda n: f"end {n}")
    # Concurrent: every client's stop began before the first one finished.
    assert sorted(order[:4]) == [f"start s{i}" for i in range(4)], order
    assert len(order) == 8
    assert children_of(os.getpid()) == []


@pytest.mark.anyio
async def test_cancelled_body_still_stops_every_server(driver: str) -> None:
    if driver == "sync":
        pytest.skip("a thread cannot be cancelled")
    specs = {"a": stdio(fault_server_argv()), "b": stdio(fault_server_argv())}
    with anyio.fail_after(30):
        with anyio.move_on_after(0.5) as scope:
            async with Group(driver, specs) as group:
                await group.call_tool("mcp__a__hang")
        assert scope.cancelled_caught
    assert children_of(os.getpid()) == []


@pytest.mark.anyio
async def test_specs_of_every_kind_start_nothing_until_started(driver: str) -> None:
    config = SimpleNamespace(
        servers={"fs": core.Spec(name="fs", command="x")},
        skipped={"broken": "'command' must be a string, got a number"},
    )
    group = Group(driver, config)
    # A refused server is closed (it never starts), a client not started yet is new.
    assert group.status()["broken"].state == "closed"
    assert group.status()["fs"].state == "new"
    assert "fs=new" in repr(group.aio or group.sync)
    assert group.status()["broken"].last_error == "'command' must be a string, got a number"
    assert list(group.clients) == ["fs"]

    group = Group(
        driver,
        {
            "spec": core.Spec(name="spec", url="http://127.0.0.1:1/mcp"),
            "plain": {"command": "x"},  # named by its key
            "own-name": {"name": "other", "command": "x"},  # keeps its own name
            "not-a-spec": ["x"],
            "--": {"command": "x"},
        },
        concurrency="serialized",
    )
    status = group.status()
    assert status["plain"].name == "plain" and status["own-name"].name == "other"
    assert status["spec"].concurrency == status["plain"].concurrency == "serialized"
    assert "mapping" in (status["not-a-spec"].last_error or "")
    assert "no letter or digit" in (status["--"].last_error or "")
    assert set(group.clients) == {"spec", "plain", "own-name"}
    assert children_of(os.getpid()) == []


@pytest.mark.anyio
async def test_caller_mistakes_raise_at_once(driver: str) -> None:
    with pytest.raises(TypeError, match="call_timeot"):
        Group(driver, {"a": {"command": "x"}}, call_timeot=3)
    with pytest.raises(TypeError, match="name"):
        Group(driver, {"a": {"command": "x"}}, name="b")
    with pytest.raises(ValueError, match="record= and replay= together"):
        Group(driver, {"a": {"command": "x"}}, record="recordings", replay="recordings")
    with pytest.raises(TypeError, match="mapping"):
        Group(driver, [("a", {"command": "x"})])


# --- naming, no I/O ---------------------------------------------------------------------------


def tool(name: str) -> core.Tool:
    return core.Tool(name=name, input_schema={"type": "object"}, description=f"does {name}")
