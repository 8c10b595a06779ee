"""The shared scenario table: every scenario runs on mcp_asyncio (asyncio and trio) and on
mcp_sync, against real server processes. No scenario sleeps to wait: each
waits for the event it needs, with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

import mcp_core as core
from mcp_core.replay import encode_action, replay
from tests.conftest import (
    children_of,
    everything_argv,
    fault_server_argv,
    filesystem_argv,
    py_server_argv,
    wait_until,
)
from tests.drivers.facade import Facade, gather

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    """Every scenario must leave no child process behind."""
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


def _argv_fields(argv: list[str]) -> dict[str, object]:
    return {"command": argv[0], "args": argv[1:]}


def client(driver: str, argv: list[str], **fields: object) -> Facade:
    return Facade(driver, **_argv_fields(argv), **fields)


# --- real servers ------------------------------------------------------------------------------


async def test_everything_server_tools_and_calls(driver: str) -> None:
    async with client(driver, everything_argv()) as c:
        status = c.status()
        assert status.state == "ready" and status.era == "legacy"
        names = {t.name for t in await c.list_tools()}
        assert {"echo", "get-sum", "trigger-long-running-operation"} <= names
        # (server-everything announces list_changed as it registers tools, so the cache may
        # already be dropped again; pagination and caching are covered on the fault server)
        echo = await c.call_tool("echo", {"message": "hello"})
        assert "hello" in echo.text and not echo.is_error
        total = await c.call_tool("get-sum", {"a": 2, "b": 40})
        assert "42" in total.text


async def test_everything_server_progress_reaches_the_callback(driver: str) -> None:
    seen: list[tuple[float, float | None]] = []
    async with client(driver, everything_argv()) as c:
        result = await c.call_tool(
            "trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            progress=lambda p, total, message: seen.append((p, total)),
        )
    assert not result.is_error
    assert [p for p, _ in seen] == [1.0, 2.0, 3.0] and seen[-1][1] == 3.0


async def test_child_gets_a_minimal_environment(driver: str, monkeypatch) -> None:
    monkeypatch.setenv("PARENT_SECRET_TOKEN", "s3cr3t-parent")
    async with client(driver, everything_argv(), env={"GIVEN": "yes"}) as c:
        env = (await c.call_tool("get-env")).text
    assert "GIVEN" in env and "PATH" in env
    assert "PARENT_SECRET_TOKEN" not in env and "s3cr3t-parent" not in env


async def test_filesystem_server(driver: str, tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello from disk")
    async with client(driver, filesystem_argv(tmp_path)) as c:
        names = {t.name for t in await c.list_tools()}
        assert "read_text_file" in names or "read_file" in names
        tool = "read_text_file" if "read_text_file" in names else "read_file"
        result = await c.call_tool(tool, {"path": str(tmp_path / "hello.txt")})
        assert "hello from disk" in result.text
        missing = await c.call_tool(tool, {"path": str(tmp_path / "nope.txt")})
        assert missing.is_error


async def test_official_sdk_server_speaks_the_modern_era(driver: str) -> None:
    seen: list[float] = []
    async with client(driver, py_server_argv()) as c:
        status = c.status()
        assert (status.era, status.protocol_version) == ("modern", "2026-07-28")
        assert {"echo", "add", "slow", "fail"} <= {t.name for t in await c.list_tools()}
        assert (await c.call_tool("echo", {"text": "hi"})).text == "hi"
        added = await c.call_tool("add", {"a": 2, "b": 3})
        assert added.structured_content == {"result": 5}
        failed = await c.call_tool("fail")
        assert failed.is_error
        slow = await c.call_tool(
            "slow", {"seconds": 0.2, "steps": 2}, progress=lambda p, t, m: seen.append(p)
        )
        assert slow.text == "done" and len(seen) == 2


async def test_official_sdk_server_in_the_legacy_era(driver: str) -> None:
    async with client(driver, py_server_argv(), era="legacy") as c:
        assert c.status().era == "legacy"
        assert (await c.call_tool("echo", {"text": "legacy"})).text == "legacy"


# --- faults ------------------------------------------------------------------------------------


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until ``predicate()`` holds, with a deadline. Only for client state that has no
    event of its own to wait on (a call being admitted or queued)."""
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.005)


async def test_server_exits_mid_call_then_reconnects(driver: str) -> None:
    async with client(
        driver, fault_server_argv(), concurrency="serialized", queue_limit=2, reconnect=0.05
    ) as c:
        await c.call_tool("stderr_spam", {"kib": 1})
        results: list[object] = [None, None]

        async def call(i: int, tool: str) -> None:
            try:
                results[i] = await c.call_tool(tool)
            except core.McpError as exc:
                results[i] = exc

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, 0, "hang")
            await until(lambda: c.status().in_flight == 1)
            tg.start_soon(call, 1, "echo")
            await until(lambda: c.status().queued == 1)
            [server] = children_of(os.getpid())
            os.kill(server, signal.SIGTERM)
        for err in results:
            assert isinstance(err, core.ServerExited), err
            assert err.code == -signal.SIGTERM and "e" * 100 in err.stderr_tail
        assert c.status().in_flight == 0 and c.status().queued == 0
        status = await c.await_ready(10)
        assert status.state == "ready"
        assert (await c.call_tool("echo", {"text": "again"})).text == "again"


async def test_exit_tool_mid_call(driver: str) -> None:
    async with client(driver, fault_server_argv(), reconnect=0.05) as c:
        with pytest.raises(core.ServerExited) as info:
            await c.call_tool("exit", {"code": 3, "stderr": "dying now\n"})
        assert info.value.code == 3 and "dying now" in info.value.stderr_tail
        assert (await c.await_ready(10)).state == "ready"


async def test_server_never_answers(driver: str) -> None:
    async with client(driver, fault_server_argv()) as c:
        with pytest.raises(core.RequestTimeout):
            await c.call_tool("hang", timeout=0.3)
        assert c.status().in_flight == 0
        cancelled = json.loads((await c.call_tool("cancelled_ids")).text)
        assert len(cancelled) == 1  # the server was told
        assert (await c.call_tool("echo", {"text": "still here"})).text == "still here"


async def test_non_json_banner_is_skipped(driver: str) -> None:
    async with client(driver, fault_server_argv("--banner")) as c:
        assert (await c.call_tool("echo", {"text": "ok"})).text == "ok"


async def test_huge_line_fails_only_its_caller(driver: str) -> None:
    async with client(driver, fault_server_argv(), max_message_bytes=1024 * 1024) as c:
        results = await gather(
            lambda: c.call_tool("huge", {"mib": 20}),
            lambda: c.call_tool("echo", {"text": "unaffected"}),
        )
        assert isinstance(results[0], core.MessageTooLarge)
        assert results[1].text == "unaffected"
        assert (await c.call_tool("echo", {"text": "after"})).text == "after"


async def test_missing_executable_is_permanent(driver: str, tmp_path: Path) -> None:
    c = Facade(driver, command=str(tmp_path / "no-such-server"))
    with pytest.raises(core.ConnectFailed) as info:
        async with c:
            pass
    assert info.value.permanent and "no-such-server" in str(info.value)
    c = Facade(driver, command=str(tmp_path / "no-such-server"))  # a stopped client stays stopped
    await c.start()
    try:
        with pytest.raises(core.ConnectFailed):
            await c.await_ready(5)
        status = c.status()
        assert status.state == "closed" and status.retry_in is None
        with pytest.raises(core.ConnectFailed):
            await c.call_tool("x")
    finally:
        await c.stop()


async def test_initialize_answered_with_an_error(driver: str) -> None:
    c = client(driver, fault_server_argv("--init-error"), fail_fast=True, reconnect=0.05)
    with pytest.raises(core.ConnectFailed) as info:
        async with c:
            pass
    assert "boom" in str(info.value) and not info.value.permanent


async def test_server_exiting_at_start_reports_its_stderr(driver: str) -> None:
    c = client(driver, fault_server_argv("--exit-on-start", "7"), fail_fast=True)
    with pytest.raises(core.ConnectFailed) as info:
        async with c:
            pass
    assert "code 7" in str(info.value) and "config missing" in str(info.value)


async def test_serialized_cap_one_queue_one_four_callers(driver: str) -> None:
    async with client(driver, fault_server_argv(), concurrency="serialized", queue_limit=1) as c:
        results = await gather(
            *[
                (lambda i=i: c.call_tool("slow_progress", {"steps": 1, "delay": 0.2, "i": i}))
                for i in range(4)
            ]
        )
    busy = [r for r in results if isinstance(r, core.Busy)]
    ok = [r for r in results if isinstance(r, core.CallToolResult)]
    assert (len(ok), len(busy)) == (2, 2)


async def test_server_requests_are_answered(driver: str) -> None:
    async with client(driver, fault_server_argv()) as c:
        ping = json.loads((await c.call_tool("ping_client")).text)
        assert ping["result"] == {}
        other = json.loads((await c.call_tool("unknown_server_request")).text)
        assert other["error"]["code"] == -32601


async def test_pagination_and_list_changed(driver: str) -> None:
    async with client(driver, fault_server_argv()) as c:
        tools = await c.list_tools()
        assert len(tools) == 10  # five pages of two
        await c.call_tool("list_changed")
        assert c.status().tools is None
        assert len(await c.list_tools()) == 10


async def test_repeated_cursor_does_not_loop(driver: str) -> None:
    async with client(driver, fault_server_argv("--repeat-cursor")) as c:
        assert len(await c.list_tools(timeout=10)) == 4


async def test_stop_escalates_to_sigkill(driver: str) -> None:
    argv = fault_server_argv("--ignore-stdin-eof", "--ignore-sigterm")
    async with client(driver, argv, shutdown_grace=0.2, era="legacy") as c:
        assert (await c.call_tool("echo", {"text": "x"})).text == "x"
    assert children_of(os.getpid()) == []


async def test_pooled_runs_pool_size_processes(driver: str) -> None:
    async with client(driver, fault_server_argv(), concurrency="pooled", pool_size=2) as c:
        await c.await_ready(10)
        results = await gather(
            lambda: c.call_tool("slow_progress", {"steps": 1, "delay": 0.1}),
            lambda: c.call_tool("slow_progress", {"steps": 1, "delay": 0.1}),
        )
        assert all(isinstance(r, core.CallToolResult) for r in results)
        wait_until(lambda: len(children_of(os.getpid(), include_zombies=False)) == 2, 10)
        assert c.status().concurrency == "pooled"


async def test_wait_false_and_await_ready(driver: str) -> None:
    async with client(driver, fault_server_argv(), wait=False) as c:
        status = await c.await_ready(10)
        assert status.state == "ready"


async def test_stderr_is_drained_and_bounded(driver: str) -> None:
    async with client(driver, fault_server_argv()) as c:
        assert (await c.call_tool("stderr_spam", {"kib": 512})).text == "ok"


async def test_invalid_spec_starts_nothing(driver: str) -> None:
    with pytest.raises(core.InvalidSpec) as info:
        Facade(driver, command="x", url="http://h/", headers={"A": "s3cr3t"})
    assert "s3cr3t" not in str(info.value)
    assert children_of(os.getpid()) == []


async def test_recording_replays_to_identical_actions(driver: str, tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    async with client(driver, fault_server_argv(), era="legacy", record=str(path)) as c:
        await c.list_tools()
        await c.call_tool("echo", {"text": "recorded"})
    lines = path.read_text().splitlines()
    assert len(lines) > 5
    first = [encode_action(a) for a in replay(str(path))]
    second = [encode_action(a) for a in replay(str(path))]
    assert first == second
    assert any(a.get("action") == "Reply" and "recorded" in json.dumps(a) for a in first), (
        "the replay reproduces the call's answer"
    )


async def test_caller_cancellation_tells_the_server(driver: str) -> None:
    if driver == "sync":
        pytest.skip("a thread cannot be cancelled; mcp_sync's KeyboardInterrupt test covers it")
    async with client(driver, fault_server_argv()) as c:
        with anyio.move_on_after(0.3):
            await c.call_tool("hang")
        assert c.status().in_flight == 0
        assert len(json.loads((await c.call_tool("cancelled_ids")).text)) == 1


async def test_priced_tools_need_and_settle_reservations(driver: str) -> None:
    gate = core.InMemorySpendGate(budget=10)
    async with client(driver, fault_server_argv(), name="shop", prices={"echo": 3}) as c:
        with pytest.raises(core.UnmeteredCall):
            await c.call_tool("echo", {"text": "free?"})
        reservation = gate.reserve("shop", "echo", 3)
        assert (await c.call_tool("echo", {"text": "paid"}, reservation=reservation)).text == "paid"
        assert (gate.spent, gate.held) == (3, 0)
        with pytest.raises(core.UnmeteredCall, match="already used"):
            await c.call_tool("echo", {"text": "again"}, reservation=reservation)
        wrong = gate.reserve("shop", "hang", 3)
        with pytest.raises(core.UnmeteredCall):
            await c.call_tool("echo", {"text": "x"}, reservation=wrong)
        assert (gate.spent, gate.held, gate.remaining) == (3, 0, 7)  # released, not spent
        cancelled = json.loads((await c.call_tool("cancelled_ids")).text)
        assert cancelled == []
    sent = [r for r in gate.reservations if r.state == "committed"]
    assert len(sent) == 1


async def test_server_requests_reach_the_handlers(driver: str) -> None:
    asked: list[str] = []

    def sampling(params: dict) -> dict:
        asked.append("sampling")
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "sampled by the test"},
            "model": "test-model",
            "stopReason": "endTurn",
        }

    def elicitation(params: dict) -> dict:
        asked.append("elicitation")
        return {"action": "decline"}

    def roots(params: dict) -> dict:
        asked.append("roots")
        return {"roots": [{"uri": "file:///tmp/project", "name": "project"}]}

    async with client(
        driver, everything_argv(), sampling=sampling, elicitation=elicitation, roots=roots
    ) as c:
        sampled = await c.call_tool("trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
        assert "sampled by the test" in sampled.text
        elicited = await c.call_tool("trigger-elicitation-request")
        assert "decline" in elicited.text.lower()
        listed = await c.call_tool("get-roots-list")
        assert "file:///tmp/project" in listed.text
    assert {"sampling", "elicitation", "roots"} <= set(asked)


async def test_url_elicitation_against_the_official_sdk(driver: str) -> None:
    # 2025-11-25 URL mode: the handler gets the URL, the server reports completion, and a
    # -32042 error arrives as a typed error carrying the elicitations.
    asked: list[tuple[str, str, str]] = []
    completed: list[str] = []
    done = threading.Event()

    def elicitation(params: dict) -> dict:
        asked.append((params["mode"], params["elicitationId"], params["url"]))
        return {"action": "accept"}

    def elicitation_complete(elicitation_id: str) -> None:
        completed.append(elicitation_id)
        done.set()

    async with client(
        driver,
        py_server_argv(),
        era="legacy",
        elicitation=elicitation,
        elicitation_modes=("form", "url"),
        elicitation_complete=elicitation_complete,
    ) as c:
        assert (await c.call_tool("connect_account")).text == "accept"
        assert asked == [
            ("url", "py-connect-1", "https://auth.example.com/connect?state=py-state-1")
        ]
        assert await anyio.to_thread.run_sync(done.wait, 10)
        with pytest.raises(core.UrlElicitationRequired) as info:
            await c.call_tool("needs_connection")
        [needed] = info.value.elicitations
        assert needed["elicitationId"] == "py-connect-2" and "state=py-state-2" in needed["url"]
        assert "https://" not in str(info.value) and "1 URL elicitation" in str(info.value)
        # form mode still works next to URL mode
        asked.clear()
        assert (await c.call_tool("echo", {"text": "x"})).text == "x"
    assert completed == ["py-connect-1"]


async def test_url_elicitation_not_opted_in_is_refused(driver: str) -> None:
    asked: list[dict] = []

    def elicitation(params: dict) -> dict:
        asked.append(params)
        return {"action": "accept"}

    async with client(driver, py_server_argv(), era="legacy", elicitation=elicitation) as c:
        try:
            result = await c.call_tool("connect_account")
        except core.JsonRpcError:
            pass  # the SDK passes our -32602 on as the tool's error
        else:
            assert result.is_error, result
    assert asked == []


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_elicitation_in_both_eras_against_the_official_sdk(driver: str, era: str) -> None:
    asked: list[dict] = []

    def elicitation(params: dict) -> dict:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Grace"}}

    async with client(driver, py_server_argv(), era=era, elicitation=elicitation) as c:
        assert c.status().era == era
        assert (await c.call_tool("greet")).text == "hello Grace"
    assert asked and "name" in asked[0]["message"]
