"""SessionMachine: events in, actions out, with a fake clock. No I/O here."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core
from mcp_core.replay import Recorder, encode_action, replay
from mcp_core.states import SessionPhase
from tests.core.harness import TEXT_RESULT, Harness

# --- handshake and eras ------------------------------------------------------------------


def test_connect_spawns_with_minimal_env_and_probes_with_discover() -> None:
    h = Harness(command="srv", args=["--x"], env={"TOKEN": "v"}, cwd="/tmp")
    h.feed(core.Connect(now=0.0))
    [spawn] = h.of(core.Spawn)
    assert spawn.argv == ("srv", "--x") and spawn.env == {"TOKEN": "v"} and spawn.cwd == "/tmp"
    assert "PATH" in spawn.inherit and "TOKEN" not in spawn.inherit
    assert h.machine.state == "starting"
    assert h.messages() == []  # nothing is written before the process runs
    h.spawned()
    probe = h.last_request("server/discover")
    meta = probe["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
    assert h.machine.state == "initializing"


def test_legacy_handshake_after_refused_probe() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.connect_legacy("2025-06-18")
    status = h.result(waiter)
    assert status.state == "ready" and status.era == "legacy"
    assert status.protocol_version == "2025-06-18"
    assert status.server_info == {"name": "fake", "version": "1"}


def test_initialize_offers_latest_and_sends_initialized() -> None:
    h = Harness(era="legacy")
    h.feed(core.Connect(now=0.0))
    h.spawned()
    init = h.last_request("initialize")
    assert init["params"]["protocolVersion"] == "2025-11-25"
    assert init["params"]["clientInfo"]["name"]
    assert not [m for m in h.messages() if m.get("method") == "server/discover"]
    h.take()
    h.answer(init["id"], {"protocolVersion": "2024-11-05", "capabilities": {}})
    assert h.messages() == [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    assert h.machine.state == "ready"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_every_legacy_version_is_accepted(version: str) -> None:
    h = Harness(era="legacy")
    h.connect_legacy(version)
    assert h.machine.status(h.now).protocol_version == version


def test_probe_timeout_falls_back_to_initialize_and_late_answer_is_ignored() -> None:
    h = Harness(probe_timeout=0.5)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    probe = h.last_request("server/discover")
    assert h.machine.next_deadline() == 0.5
    h.take()
    h.advance(0.5)
    init = h.last_request("initialize")
    h.answer(probe["id"], {"supportedVersions": ["2026-07-28"]})  # too late: ignored
    assert h.machine.state == "initializing"
    h.answer(init["id"], {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert h.machine.state == "ready"


MODERN_REFUSAL = {
    "code": -32022,
    "message": "unsupported protocol version",
    "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"},
}


def _probe_expired(h: Harness) -> tuple[dict[str, Any], dict[str, Any]]:
    """Connect, let the probe's deadline pass; the probe and the fallback initialize."""
    h.feed(core.Connect(now=0.0))
    h.spawned()
    probe = h.last_request("server/discover")
    h.advance(0.5)
    return probe, h.last_request("initialize")


def test_a_slow_modern_server_keeps_what_its_late_probe_answer_says() -> None:
    # A modern server slow to start (an interpreter importing, npx fetching) answers the probe
    # after its deadline, then refuses the fallback initialize naming 2026-07-28: the session
    # is the one the late answer describes, capabilities and server info included.
    cache: dict[str, str] = {}
    h = Harness(era_cache=cache, probe_timeout=0.5)
    probe, init = _probe_expired(h)
    h.answer(
        probe["id"],
        {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": True}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "slow", "version": "3"}},
        },
    )
    assert h.machine.state == "initializing"  # kept, not acted on: initialize is in flight
    h.stdout({"jsonrpc": "2.0", "id": init["id"], "error": MODERN_REFUSAL})
    status = h.machine.status(h.now)
    assert (status.state, status.era) == ("ready", "modern")
    assert status.capabilities == {"tools": {"listChanged": True}}
    assert status.server_info == {"name": "slow", "version": "3"}
    assert list(cache.values()) == ["modern"]


def test_without_a_late_probe_answer_a_modern_refusal_knows_no_capabilities() -> None:
    h = Harness(probe_timeout=0.5)
    probe, init = _probe_expired(h)
    h.answer_error(probe["id"], -32601, "method not found")  # late and not modern: dropped
    h.stdout({"jsonrpc": "2.0", "id": init["id"], "error": MODERN_REFUSAL})
    status = h.machine.status(h.now)
    assert (status.state, status.era) == ("ready", "modern")
    assert (status.capabilities, status.server_info) == (None, None)


def test_a_late_probe_answer_is_forgotten_on_the_next_connection() -> None:
    h = Harness(probe_timeout=0.5)
    probe, _ = _probe_expired(h)
    late = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
    h.answer(probe["id"], {"resultType": "complete", **late})
    h.exited(1)  # the connection fails before initialize is answered
    h.fire_due()  # the retry: a new process, a new probe
    h.spawned()
    h.take()
    h.advance(0.5)  # the new probe's deadline too
    init = h.last_request("initialize")
    h.stdout({"jsonrpc": "2.0", "id": init["id"], "error": MODERN_REFUSAL})
    status = h.machine.status(h.now)
    assert status.state == "ready"
    assert status.capabilities is None  # not what the first process's probe said


def test_modern_server_is_ready_after_discover_and_every_request_carries_meta() -> None:
    cache: dict[str, str] = {}
    h = Harness(era_cache=cache)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.connect_modern()
    status = h.result(waiter)
    assert (status.era, status.protocol_version) == ("modern", "2026-07-28")
    assert status.server_info == {"name": "modern", "version": "2"}
    assert not any(m.get("method") == "initialize" for m in h.messages())
    t = h.call("echo", {"text": "x"})
    req = h.last_request("tools/call")
    assert req["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    h.answer(req["id"], {"resultType": "complete", **TEXT_RESULT})
    assert h.result(t).text == "hi"
    assert list(cache.values()) == ["modern"]


def test_era_verdict_is_cached_per_command_line() -> None:
    cache: dict[str, str] = {}
    Harness(era_cache=cache).connect_legacy()
    h = Harness(era_cache=cache)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    assert [m["method"] for m in h.messages()] == ["initialize"]
    other = Harness(era_cache=cache, command="another")
    other.feed(core.Connect(now=0.0))
    other.spawned()
    assert [m["method"] for m in other.messages()] == ["server/discover"]


def test_a_pinned_era_is_not_a_verdict_for_the_cache() -> None:
    cache: dict[str, str] = {}
    pinned = Harness(era_cache=cache, era="legacy")
    pinned.feed(core.Connect(now=0.0))
    pinned.spawned()
    init = pinned.last_request("initialize")
    pinned.answer(init["id"], {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert pinned.machine.state == "ready"
    assert cache == {}  # nothing was probed: an era='auto' client still asks
    h = Harness(era_cache=cache)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    assert [m["method"] for m in h.messages()] == ["server/discover"]


def test_the_era_verdict_is_read_once_and_a_recording_starts_from_it(tmp_path) -> None:
    # A machine started after another learned the era skips the probe; its recording says
    # so, and its replay (a fresh process, an empty cache) skips the probe too.
    cache = {json.dumps(["srv"]): "legacy"}
    spec = core.Spec(name="r", command="srv")
    machine = core.SessionMachine(spec, era_cache=cache)
    assert machine.known_era == "legacy"
    lines: list[str] = []
    recorder = Recorder(spec, lines.append, known_era=machine.known_era)
    cache.clear()  # another client rewriting the shared cache mid-session changes nothing
    events = [
        core.Connect(now=0.0),
        core.ProcessSpawned(now=0.0, slot=0, generation=1, pid=1),
        core.StdoutReceived(
            now=0.1,
            slot=0,
            generation=1,
            data=b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}\n',
        ),
    ]
    live = []
    for event in events:
        recorder.record(event)
        live.extend(machine.handle(event))
    sent = [json.loads(a.data) for a in live if isinstance(a, core.WriteStdin)]
    assert [m["method"] for m in sent] == ["initialize", "notifications/initialized"]
    assert json.loads(lines[0])["known_era"] == "legacy"
    assert cache == {json.dumps(["srv"]): "legacy"}  # learned again, written back
    path = tmp_path / "r.jsonl"
    path.write_text("".join(lines))
    replayed = replay(str(path))
    assert [encode_action(a) for a in replayed] == [encode_action(a) for a in live]
    header = json.loads(lines[0])
    header["known_era"] = "psychic"
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(ValueError, match="known_era"):
        replay(str(path))


def test_modern_error_with_our_version_counts_as_modern() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    h.spawned()
    probe = h.last_request("server/discover")
    h.stdout(
        {
            "jsonrpc": "2.0",
            "id": probe["id"],
            "error": {
                "code": -32022,
                "message": "unsupported",
                "data": {"supported": ["2026-07-28"], "requested": "x"},
            },
        }
    )
    assert h.machine.state == "ready"
    assert h.machine.status(h.now).era == "modern"


@pytest.mark.parametrize(
    "answer",
    [
        {"result": {"supportedVersions": ["2099-01-01"]}},
        {"result": {"tools": []}},
        {"error": {"code": -32022, "message": "no", "data": {"supported": ["2099-01-01"]}}},
        {"error": {"code": -32022, "message": "no", "data": None}},
        {"error": {"code": -32602, "message": "not initialized"}},
    ],
)
def test_anything_but_a_modern_answer_falls_back_to_initialize(answer: dict) -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    h.spawned()
    probe = h.last_request("server/discover")
    h.stdout({"jsonrpc": "2.0", "id": probe["id"], **answer})
    assert h.last_request("initialize")


def test_era_modern_needs_no_handshake() -> None:
    h = Harness(era="modern")
    h.feed(core.Connect(now=0.0))
    h.spawned()
    assert h.messages() == []
    assert h.result(h.await_ready()).era == "modern"


def test_unsupported_version_is_permanent() -> None:
    h = Harness(era="legacy")
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.spawned()
    init = h.last_request("initialize")
    h.answer(init["id"], {"protocolVersion": "1999-01-01", "capabilities": {}})
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.permanent
    assert "1999-01-01" in str(err)
    assert [a for a in h.actions if isinstance(a, core.CloseStdin)]
    h.exited(0)
    assert h.machine.next_deadline() is None  # nothing retried
    assert isinstance(h.error(h.call("x")), core.ConnectFailed)
    assert isinstance(h.error(h.await_ready()), core.ConnectFailed)


@pytest.mark.parametrize(
    "result",
    [{"capabilities": {}}, {"protocolVersion": 5}],
)
def test_malformed_initialize_result_fails_the_attempt(result: dict) -> None:
    h = Harness(era="legacy", fail_fast=True)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.spawned()
    h.answer(h.last_request("initialize")["id"], result)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and not err.permanent
    assert "protocolVersion" in str(err)


def test_initialize_error_retries_with_doubling_backoff() -> None:
    h = Harness(era="legacy", reconnect=1.0, max_backoff=4.0, shutdown_grace=0.5)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(timeout=1000)
    delays = []
    for _ in range(5):
        h.spawned()
        # Each attempt fails differently: two the same way would end the wait.
        h.answer_error(h.last_request("initialize")["id"], -32603, f"boom {len(delays)}")
        assert h.of(core.CloseStdin)
        h.exited(1)
        assert h.machine.state == "closed"
        status = h.machine.status(h.now)
        assert status.retry_in is not None and "boom" in (status.last_error or "")
        # a call while retrying names the failure
        err = h.error(h.call("x"))
        assert isinstance(err, core.ConnectFailed) and "boom" in str(err)
        h.take()
        start = h.now
        h.fire_due()
        assert h.of(core.Spawn)
        delays.append(h.now - start)
    assert waiter not in h.replies  # without fail_fast, await_ready waits through retries
    short = h.await_ready(timeout=0.01)
    h.advance(0.01)
    err = h.error(short)
    assert isinstance(err, core.ConnectFailed) and err.gave_up and err.attempts == 5
    assert str(err).startswith("could not connect (5 attempts in ") and "boom 4" in str(err)
    assert delays[0] == pytest.approx(1.0, rel=0.25)
    assert delays[1] == pytest.approx(2.0, rel=0.25)
    assert delays[2] == pytest.approx(4.0, rel=0.25)
    assert delays[3] <= 4.0 * 1.25  # capped at max_backoff (plus jitter)
    h.spawned()
    h.answer(h.last_request("initialize")["id"], {"protocolVersion": "2025-11-25"})
    assert h.result(waiter).state == "ready"
    # the backoff resets once ready: a crash now retries after ~reconnect again
    h.exited(1)
    retry_in = h.machine.status(h.now).retry_in
    assert retry_in is not None and retry_in <= 1.25


def test_fail_fast_answers_waiters_at_each_failure_and_new_ones_at_once() -> None:
    h = Harness(era="legacy", fail_fast=True)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.spawned()
    h.answer_error(h.last_request("initialize")["id"], -32603, "boom")
    assert isinstance(h.error(waiter), core.ConnectFailed)
    h.exited(1)
    assert isinstance(h.error(h.await_ready()), core.ConnectFailed)
    h.fire_due()  # retry continues
    assert len(h.of(core.Spawn)) == 2


def test_fail_fast_per_wait_overrides_the_spec_for_that_wait_only() -> None:
    # A group waits fail-fast on clients whose own spec waits through retries.
    h = Harness(era="legacy", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    quick, patient = h.await_ready(fail_fast=True), h.await_ready()
    cancelled, expires = h.await_ready(fail_fast=True), h.await_ready(2.0, fail_fast=True)
    h.feed(core.CancelCall(now=h.now, ticket=cancelled))
    h.advance(2.0)
    assert isinstance(h.error(expires), core.NotReady)
    h.spawned()
    h.answer_error(h.last_request("initialize")["id"], -32603, "boom")
    err = h.error(quick)
    assert isinstance(err, core.ConnectFailed) and "boom" in str(err) and not err.permanent
    assert patient not in h.replies and cancelled not in h.replies
    h.exited(1)
    assert h.machine.state == "closed" and h.machine.status(h.now).retry_in is not None
    # Closed after a failure: a fail-fast wait is answered at once, a plain one waits.
    assert isinstance(h.error(h.await_ready(fail_fast=True)), core.ConnectFailed)
    h.fire_due()  # the retry starts: a fail-fast wait now waits for that attempt
    again = h.await_ready(fail_fast=True)
    assert again not in h.replies
    h.spawned()
    h.answer(h.last_request("initialize")["id"], {"protocolVersion": "2025-11-25"})
    assert h.result(patient).state == "ready" and h.result(again).state == "ready"
    assert h.machine.next_deadline() is None


def test_fail_fast_false_per_wait_waits_through_retries_despite_the_spec() -> None:
    h = Harness(era="legacy", fail_fast=True)
    h.feed(core.Connect(now=0.0))
    patient, quick = h.await_ready(fail_fast=False), h.await_ready()
    h.spawned()
    h.answer_error(h.last_request("initialize")["id"], -32603, "boom")
    assert isinstance(h.error(quick), core.ConnectFailed)
    assert patient not in h.replies
    h.exited(1)
    late = h.await_ready(fail_fast=False)
    assert late not in h.replies
    h.fire_due()
    h.spawned()
    h.answer(h.last_request("initialize")["id"], {"protocolVersion": "2025-11-25"})
    assert h.result(patient).state == h.result(late).state == "ready"


def test_missing_executable_is_permanent_and_answered_at_once() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.feed(
        core.SpawnFailed(
            now=0.0, slot=0, generation=h.gen(), reason="no such file: srv", missing=True
        )
    )
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.permanent and "srv" in str(err)
    assert h.machine.next_deadline() is None
    assert isinstance(h.error(h.await_ready()), core.ConnectFailed)


def test_other_spawn_failure_is_retried() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    h.feed(core.SpawnFailed(now=0.0, slot=0, generation=h.gen(), reason="too many open files"))
    assert h.machine.next_deadline() is not None
    h.fire_due()
    assert len(h.of(core.Spawn)) == 2


def test_handshake_timeout_stops_the_process_with_escalation_then_retries() -> None:
    h = Harness(era="legacy", init_timeout=5.0, shutdown_grace=1.0, fail_fast=True)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.spawned()
    h.take()
    h.advance(5.0)
    assert "init_timeout" in str(h.error(waiter))
    assert h.of(core.CloseStdin) == [core.CloseStdin(slot=0)]
    h.take()
    h.advance(1.0)
    assert h.of(core.SignalProcess) == [core.SignalProcess(slot=0, signal="SIGTERM")]
    h.take()
    h.advance(1.0)
    assert h.of(core.SignalProcess) == [core.SignalProcess(slot=0, signal="SIGKILL")]
    h.take()
    h.exited(-9)
    assert h.machine.status(h.now).retry_in is not None
    h.fire_due()
    assert h.of(core.Spawn)


def test_a_process_never_reported_gone_after_sigkill_is_given_up_on() -> None:
    h = Harness(era="legacy", shutdown_grace=1.0)
    h.connect_legacy()
    stop = h.close()
    for _ in range(3):
        h.fire_due()
    assert stop in h.replies
    assert any(isinstance(a, core.Log) and a.level == "ERROR" for a in h.actions)


def test_a_given_up_process_is_replaced_and_its_late_events_are_dropped() -> None:
    # The process ignores SIGKILL (stuck in the kernel, say): the machine stops waiting for it,
    # retries with a new process, and whatever the old one sends later changes nothing.
    h = Harness(era="legacy", init_timeout=5.0, shutdown_grace=1.0)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    old = h.gen()
    h.advance(5.0)  # the handshake times out: close stdin, SIGTERM, SIGKILL, give up
    for _ in range(3):
        h.fire_due()
    h.fire_due()  # the retry
    assert [a.generation for a in h.of(core.Spawn)] == [old, old + 1]
    h.take()
    stale: list[core.Event] = [
        core.ProcessSpawned(now=h.now, slot=0, generation=old, pid=1),
        core.StdoutReceived(now=h.now, slot=0, generation=old, data=b'{"id": 1}\n'),
        core.StderrReceived(now=h.now, slot=0, generation=old, data=b"late\n"),
        core.StdoutClosed(now=h.now, slot=0, generation=old),
        core.WriteFailed(now=h.now, slot=0, generation=old, reason="broken pipe"),
        core.SpawnFailed(now=h.now, slot=0, generation=old, reason="x"),
        core.ProcessExited(now=h.now, slot=0, generation=old, returncode=-9),
    ]
    for event in stale:
        assert h.feed(event) == []
    assert h.machine.state == "starting"  # still waiting for the new process
    h.spawned()
    assert h.last_request("initialize")


def test_exit_during_handshake_reports_code_and_stderr() -> None:
    h = Harness(era="legacy", fail_fast=True)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.spawned()
    h.feed(
        core.StderrReceived(now=0.0, slot=0, generation=h.gen(), data=b"fatal: config missing\n")
    )
    h.exited(3)
    err = h.error(waiter)
    assert "code 3" in str(err) and "config missing" in str(err)
    h.fire_due()
    h.spawned()
    h.exited(4)  # and without stderr
    assert "code 4" in str(h.machine.status(h.now).last_error)


# --- calls ---------------------------------------------------------------------------------


def test_calls_before_ready_are_refused_at_once() -> None:
    h = Harness()
    assert h.error(h.call("x")) == core.NotReady("closed")
    h.feed(core.Connect(now=0.0))
    err = h.error(h.call("x"))
    assert isinstance(err, core.NotReady) and err.state == "starting"
    assert isinstance(h.error(h.list_tools()), core.NotReady)
    assert h.machine.next_deadline() is None or h.machine.in_flight == 0


def test_call_tool_round_trip() -> None:
    h = Harness()
    h.connect_legacy()
    t = h.call("echo", {"text": "hi"})
    req = h.last_request("tools/call")
    assert req["params"] == {"name": "echo", "arguments": {"text": "hi"}}
    assert h.machine.status(h.now).in_flight == 1
    h.answer(req["id"], {**TEXT_RESULT, "structuredContent": {"a": 1}, "isError": False})
    result = h.result(t)
    assert isinstance(result, core.CallToolResult)
    assert result.text == "hi" and result.structured_content == {"a": 1} and not result.is_error
    assert h.machine.status(h.now).in_flight == 0
    assert h.machine.next_deadline() is None


def test_tool_error_is_a_result_and_rpc_error_is_an_error() -> None:
    h = Harness()
    h.connect_legacy()
    t1, t2 = h.call("a"), h.call("b", None)
    r1, r2 = [m for m in h.messages() if m.get("method") == "tools/call"]
    assert "arguments" not in r2["params"]
    h.answer(r1["id"], {"content": [{"type": "text", "text": "bad"}], "isError": True})
    h.stdout(
        {
            "jsonrpc": "2.0",
            "id": r2["id"],
            "error": {"code": -32602, "message": "Unknown tool: b", "data": {"x": 1}},
        }
    )
    assert h.result(t1).is_error
    err = h.error(t2)
    assert isinstance(err, core.JsonRpcError)
    assert (err.code, err.message, err.data) == (-32602, "Unknown tool: b", {"x": 1})


@pytest.mark.parametrize(
    ("result", "needle"),
    [
        ({"content": "nope"}, "content"),
        ({"resultType": "task", "task": {}}, "'task'"),
    ],
)
def test_invalid_call_results_are_invalid_response(result: dict, needle: str) -> None:
    h = Harness()
    h.connect_legacy()
    t = h.call("x")
    h.answer(h.last_request("tools/call")["id"], result)
    err = h.error(t)
    assert isinstance(err, core.InvalidResponse) and needle in str(err)


def test_error_with_odd_fields_is_still_an_error() -> None:
    h = Harness()
    h.connect_legacy()
    t = h.call("x")
    h.stdout({"jsonrpc": "2.0", "id": h.last_request("tools/call")["id"], "error": {}})
    err = h.error(t)
    assert isinstance(err, core.JsonRpcError) and err.code == 0


# --- admission -----------------------------------------------------------------------------


def test_serialized_cap_one_queue_one_four_callers() -> None:
    h = Harness(concurrency="serialized", queue_limit=1)
    h.connect_legacy()
    tickets = [h.call("echo", {"i": i}) for i in range(4)]
    assert [type(h.replies[t].error) for t in tickets[2:]] == [core.Busy, core.Busy]
    assert "nothing was sent" in str(h.error(tickets[2]))
    sent = [m for m in h.messages() if m.get("method") == "tools/call"]
    assert len(sent) == 1
    status = h.machine.status(h.now)
    assert (status.in_flight, status.queued) == (1, 1)
    h.take()
    h.answer(sent[0]["id"], TEXT_RESULT)
    second = h.last_request("tools/call")
    assert second["params"]["arguments"] == {"i": 1}
    h.answer(second["id"], TEXT_RESULT)
    assert all(h.replies[t].error is None for t in tickets[:2])


def test_stateless_sends_up_to_pool_size_at_once() -> None:
    h = Harness(pool_size=3, queue_limit=2)
    h.connect_legacy()
    for i in range(6):
        h.call("x", {"i": i})
    assert len([m for m in h.messages() if m.get("method") == "tools/call"]) == 3
    assert h.machine.queued == 2
    assert len([r for r in h.replies.values() if isinstance(r.error, core.Busy)]) == 1


def test_pooled_spawns_pool_size_processes_each_with_cap_one() -> None:
    h = Harness(concurrency="pooled", pool_size=2, queue_limit=4, era="legacy")
    h.feed(core.Connect(now=0.0))
    assert [s.slot for s in h.of(core.Spawn)] == [0, 1]
    h.connect_legacy(slot=0)
    t1, t2 = h.call("a"), h.call("b")
    assert len(h.messages(0)) == 1 and h.machine.queued == 1
    h.connect_legacy(slot=1)  # the second process becomes ready: the queue drains onto it
    # ids come from one counter: initialize 1 (slot 0), a 2, initialize 3 (slot 1), b 4
    h.answer(4, TEXT_RESULT, slot=1)
    assert h.result(t2).text == "hi"
    h.answer(2, TEXT_RESULT, slot=0)
    assert h.result(t1).text == "hi"
    # one slot dying leaves the other serving queued work
    t3, t4, t5 = h.call("c"), h.call("d"), h.call("e")
    h.exited(1, slot=0)
    assert isinstance(h.error(t3), core.ServerExited)
    assert t5 not in h.replies and h.machine.state == "ready"
    h.answer(h.last_request("tools/call", slot=1)["id"], TEXT_RESULT, slot=1)
    assert h.result(t4).text == "hi"


def test_request_timeout_cancels_on_the_wire_and_drains_the_queue() -> None:
    h = Harness(concurrency="serialized", call_timeout=10.0)
    h.connect_legacy()
    t1 = h.call("hang")
    t2 = h.call("echo", timeout=100.0)
    first = h.last_request("tools/call")
    h.take()
    h.advance(10.0)
    err = h.error(t1)
    assert isinstance(err, core.RequestTimeout) and "10 s" in str(err)
    msgs = h.messages()
    assert msgs[0] == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": first["id"], "reason": "timed out"},
    }
    second = msgs[1]
    assert second["method"] == "tools/call" and second["params"]["name"] == "echo"
    h.answer(first["id"], TEXT_RESULT)  # late: ignored
    assert h.reply_count[t1] == 1
    h.answer(second["id"], TEXT_RESULT)
    assert h.result(t2).text == "hi"
    assert h.machine.status(h.now).in_flight == 0


def test_queued_work_times_out_too_without_a_cancel_notice() -> None:
    h = Harness(concurrency="serialized", call_timeout=10.0)
    h.connect_legacy()
    h.call("hang", timeout=100.0)
    t2 = h.call("echo", timeout=5.0)
    h.take()
    h.advance(5.0)
    assert isinstance(h.error(t2), core.RequestTimeout)
    assert h.messages() == [] and h.machine.queued == 0


def test_cancel_queued_and_in_flight_work() -> None:
    h = Harness(concurrency="serialized")
    h.connect_legacy()
    t1, t2, t3 = h.call("a"), h.call("b"), h.call("c")
    first = h.last_request("tools/call")
    h.take()
    h.feed(core.CancelCall(now=0.0, ticket=t2))
    assert h.messages() == [] and h.machine.queued == 1
    h.feed(core.CancelCall(now=0.0, ticket=t1))
    msgs = h.messages()
    assert msgs[0]["method"] == "notifications/cancelled"
    assert msgs[0]["params"]["requestId"] == first["id"]
    assert msgs[1]["params"]["name"] == "c"
    assert t1 not in h.replies and t2 not in h.replies
    h.feed(core.CancelCall(now=0.0, ticket=999))  # unknown: no-op
    h.answer(msgs[1]["id"], TEXT_RESULT)
    assert h.result(t3)


def test_progress_reaches_the_caller_and_extends_the_deadline_up_to_the_cap() -> None:
    h = Harness(call_timeout=10.0, max_call_timeout=25.0)
    h.connect_legacy()
    t = h.call("slow", progress=True)
    req = h.last_request("tools/call")
    token = req["params"]["_meta"]["progressToken"]
    assert token == req["id"]

    def progress(value: float, **extra: object) -> None:
        h.stdout(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": value, **extra},
            }
        )

    h.take()
    h.now = 8.0
    progress(1, total=3, message="one")
    assert h.of(core.ProgressUpdate) == [
        core.ProgressUpdate(ticket=t, progress=1.0, total=3.0, message="one")
    ]
    assert h.machine.next_deadline() == 18.0
    h.now = 17.0
    progress(2)
    assert h.machine.next_deadline() == 25.0  # capped at max_call_timeout from admission
    h.advance(8.0)
    assert isinstance(h.error(t), core.RequestTimeout)
    h.take()
    progress(3)  # after the answer: ignored
    assert h.of(core.ProgressUpdate) == []


def test_progress_without_callback_still_extends_and_odd_tokens_are_ignored() -> None:
    h = Harness(call_timeout=10.0)
    h.connect_legacy()
    h.call("slow")
    req = h.last_request("tools/call")
    assert "_meta" not in req["params"]
    h.take()
    h.now = 5.0
    for params in (
        {"progressToken": req["id"], "progress": 1},
        {"progressToken": "nope", "progress": 1},
        {"progressToken": req["id"], "progress": "x"},
    ):
        h.stdout({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
    assert h.of(core.ProgressUpdate) == []
    assert h.machine.next_deadline() == 15.0


# --- server exits and stop -------------------------------------------------------------------


def test_server_exit_mid_call_fails_pending_and_queued_then_reconnects() -> None:
    h = Harness(concurrency="serialized", queue_limit=4, reconnect=1.0)
    h.connect_legacy()
    tickets = [h.call("x") for _ in range(3)]
    h.feed(
        core.StderrReceived(
            now=0.0, slot=0, generation=h.gen(), data=b"Traceback...\nValueError: bad\n"
        )
    )
    h.feed(core.StdoutClosed(now=0.0, slot=0, generation=h.gen()))
    h.exited(2)
    for t in tickets:
        err = h.error(t)
        assert isinstance(err, core.ServerExited)
        assert err.code == 2 and "ValueError: bad" in err.stderr_tail
    status = h.machine.status(h.now)
    assert (status.in_flight, status.queued, status.state) == (0, 0, "closed")
    assert isinstance(h.error(h.call("y")), core.NotReady)  # not a connect failure
    h.take()
    h.fire_due()
    assert h.of(core.Spawn)
    h.connect_legacy()
    assert h.machine.state == "ready"


def test_a_write_failure_waits_for_the_exit_to_name_the_failure() -> None:
    # A broken pipe is the server exiting: its exit code and stderr make the better error.
    h = Harness(era="legacy", shutdown_grace=2.0)
    h.connect_legacy()
    t = h.call("x")
    h.feed(core.WriteFailed(now=h.now, slot=0, generation=h.gen(), reason="BrokenPipeError"))
    assert t not in h.replies and h.machine.next_deadline() == h.now + 2.0
    h.feed(core.StderrReceived(now=h.now, slot=0, generation=h.gen(), data=b"config missing\n"))
    h.exited(7)
    err = h.error(t)
    assert isinstance(err, core.ServerExited) and err.code == 7
    assert "config missing" in str(err)
    assert h.machine.status(h.now).retry_in is not None
    h.take()
    h.advance(5.0)  # the restart; the broken-pipe deadline went with the old process
    assert h.of(core.Spawn) and "code 7" in str(h.machine.status(h.now).last_error)


def test_a_write_failure_stops_a_process_that_lives_on() -> None:
    h = Harness(era="legacy", shutdown_grace=2.0)
    h.connect_legacy()
    t = h.call("x")
    h.feed(core.WriteFailed(now=h.now, slot=0, generation=h.gen(), reason="BrokenPipeError"))
    h.feed(
        core.WriteFailed(now=h.now, slot=0, generation=h.gen(), reason="again")
    )  # one deadline, not two
    h.advance(1.0)
    assert t not in h.replies
    h.advance(1.0)  # it closed its stdin yet lives on: failed, and stopped
    err = h.error(t)
    assert isinstance(err, core.ServerExited) and err.code is None
    assert h.of(core.CloseStdin)
    h.feed(
        core.WriteFailed(now=h.now, slot=0, generation=h.gen(), reason="again")
    )  # already failing: no-op
    h.exited(None)
    assert h.machine.status(h.now).retry_in is not None


def test_a_write_failure_while_closing_changes_nothing() -> None:
    h = Harness(era="legacy", shutdown_grace=2.0)
    h.connect_legacy()
    h.feed(core.WriteFailed(now=h.now, slot=0, generation=h.gen(), reason="BrokenPipeError"))
    stop = h.close()
    h.advance(2.0)  # the broken-pipe deadline passes during the shutdown: no failure
    assert h.machine.status(h.now).last_error is None
    h.exited(0)
    assert stop in h.replies


def test_close_shuts_down_and_answers_everyone() -> None:
    h = Harness(era="legacy", shutdown_grace=2.0)
    h.connect_legacy()
    t = h.call("x")
    waiter_free = h.await_ready()
    assert h.result(waiter_free).state == "ready"
    stop = h.close()
    assert h.error(t) == core.NotReady(
        "closed", "the client was stopped before this request finished"
    )
    assert h.of(core.CloseStdin) == [core.CloseStdin(slot=0)]
    assert stop not in h.replies and h.machine.state == "closed"
    second_stop = h.close()
    h.exited(0)
    assert h.result(stop) is None and h.result(second_stop) is None
    assert h.machine.next_deadline() is None
    assert h.result(h.close()) is None  # closing a closed client: at once
    assert h.error(h.call("x")) == core.NotReady("closed")
    assert h.error(h.await_ready()) == core.NotReady("closed")


def test_close_while_spawning_waits_for_the_process_then_stops_it() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    stop = h.close()
    assert isinstance(h.error(waiter), core.NotReady) and stop not in h.replies
    h.spawned()
    assert h.of(core.CloseStdin) and stop not in h.replies
    h.exited(0)
    assert h.result(stop) is None


def test_close_while_spawning_and_spawn_fails() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    stop = h.close()
    h.feed(core.SpawnFailed(now=0.0, slot=0, generation=h.gen(), reason="x"))
    assert h.result(stop) is None


def test_close_while_waiting_to_retry_and_before_start() -> None:
    h = Harness()
    assert h.result(h.close()) is None
    h.feed(core.Connect(now=0.0))
    h.feed(core.SpawnFailed(now=0.0, slot=0, generation=h.gen(), reason="x"))
    stop = h.close()
    assert h.result(stop) is None and h.machine.next_deadline() is None


def test_connect_again_after_close_restarts_and_twice_is_ignored() -> None:
    h = Harness(era="legacy")
    h.connect_legacy()
    h.feed(core.Connect(now=0.0))  # already started
    assert len(h.of(core.Spawn)) == 0
    h.close()
    h.exited(0)
    h.take()
    h.feed(core.Connect(now=1.0))
    assert h.of(core.Spawn)


def test_await_ready_times_out_with_not_ready() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    w = h.await_ready(timeout=3.0)
    h.advance(3.0)
    err = h.error(w)
    assert isinstance(err, core.NotReady) and err.state == "starting"
    assert isinstance(h.error(h.await_ready(timeout=0)), core.NotReady)


def test_await_ready_waiters_time_out_one_by_one() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    early, late = h.await_ready(timeout=1.0), h.await_ready(timeout=5.0)
    h.advance(1.0)
    assert early in h.replies and late not in h.replies
    h.advance(4.0)
    assert late in h.replies


def test_connect_while_still_stopping_is_ignored() -> None:
    h = Harness(era="legacy")
    h.connect_legacy()
    stop = h.close()
    h.feed(core.Connect(now=0.0))
    assert h.of(core.Spawn) == []
    h.exited(0)
    assert h.result(stop) is None


def test_await_ready_is_cancellable() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    w = h.await_ready(timeout=3.0)
    h.feed(core.CancelCall(now=0.0, ticket=w))
    h.connect_legacy()
    assert w not in h.replies


# --- tools/list ----------------------------------------------------------------------------


def _tool(name: str) -> dict:
    return {"name": name, "inputSchema": {"type": "object"}}


def test_list_tools_pages_caches_and_list_changed_invalidates() -> None:
    h = Harness()
    h.connect_legacy()
    t = h.list_tools()
    first = h.last_request("tools/list")
    assert first["params"] == {}
    h.answer(first["id"], {"tools": [_tool("a")], "nextCursor": ""})
    second = h.last_request("tools/list")
    assert second["params"] == {"cursor": ""}  # "" is a cursor, not the end (2026-07-28)
    h.answer(second["id"], {"tools": [_tool("b")], "nextCursor": None})
    assert [tool.name for tool in h.result(t)] == ["a", "b"]
    assert h.machine.status(h.now).tools == 2
    h.take()
    cached = h.list_tools()
    assert h.messages() == [] and [x.name for x in h.result(cached)] == ["a", "b"]
    h.stdout({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    assert h.machine.status(h.now).tools is None
    h.list_tools()
    assert h.last_request("tools/list")
    refresh = h.list_tools(refresh=True)
    assert refresh not in h.replies


def test_list_changed_during_listing_is_not_cached() -> None:
    h = Harness()
    h.connect_legacy()
    t = h.list_tools()
    req = h.last_request("tools/list")
    h.stdout({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    h.answer(req["id"], {"tools": [_tool("a")]})
    assert len(h.result(t)) == 1 and h.machine.status(h.now).tools is None


def test_repeated_cursor_stops_paging() -> None:
    h = Harness()
    h.connect_legacy()
    t = h.list_tools()
    for _ in range(3):
        h.answer(h.last_request("tools/list")["id"], {"tools": [_tool("a")], "nextCursor": "p"})
    assert [x.name for x in h.result(t)] == ["a", "a"]
    assert any(isinstance(a, core.Log) and "repeated" in a.message for a in h.actions)


@pytest.mark.parametrize("result", [{"tools": "x"}, {"tools": [{"name": 1}]}, {}])
def test_malformed_tools_list_is_invalid_response(result: dict) -> None:
    h = Harness()
    h.connect_legacy()
    t = h.list_tools()
    h.answer(h.last_request("tools/list")["id"], result)
    assert isinstance(h.error(t), core.InvalidResponse)


def test_list_tools_timeout_and_modern_meta_on_pages() -> None:
    h = Harness()
    h.connect_modern()
    t = h.list_tools(timeout=2.0)
    req = h.last_request("tools/list")
    assert "io.modelcontextprotocol/protocolVersion" in req["params"]["_meta"]
    h.advance(2.0)
    assert isinstance(h.error(t), core.RequestTimeout)


# --- what the server sends ---------------------------------------------------------------------


def test_server_ping_and_unknown_requests() -> None:
    h = Harness()
    h.connect_legacy()
    h.stdout({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
    h.stdout({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}})
    assert h.messages() == [
        {"jsonrpc": "2.0", "id": "srv-1", "result": {}},
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32601,
                "message": "Method not found: this client has no handler for "
                "sampling/createMessage",
            },
        },
    ]


def test_log_notifications_go_to_the_server_logger() -> None:
    h = Harness(name="fs")
    h.connect_legacy()
    for params in (
        {"level": "error", "data": "disk full"},
        {"level": "odd", "data": {"k": 1}},
    ):
        h.stdout({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
    h.stdout({"jsonrpc": "2.0", "method": "notifications/other", "params": []})
    logs = h.of(core.Log)
    assert logs == [
        core.Log(level="ERROR", logger="mcp.server.fs", message="disk full"),
        core.Log(level="INFO", logger="mcp.server.fs", message='{"k": 1}'),
    ]


def test_garbage_on_stdout_is_logged_and_skipped() -> None:
    h = Harness()
    h.feed(core.Connect(now=0.0))
    h.spawned()
    h.stdout(b"starting server v1\r\n")
    h.stdout(b"[1, 2]\n")
    h.stdout(b'{"jsonrpc":"2.0"}\n')
    h.stdout(
        b'{"jsonrpc":"2.0","id":"x"}\n{"id":true,"method":"m"}\n{"jsonrpc":"2.0","id":null,"error":{"code":1}}\n'
    )
    h.feed(core.StdoutClosed(now=0.0, slot=0, generation=h.gen()))
    warnings = [a.message for a in h.of(core.Log) if a.level == "WARNING"]
    assert len(warnings) == 7
    assert "starting server v1" in warnings[0]
    assert h.machine.state == "initializing"


def test_batches_are_accepted() -> None:
    h = Harness()
    h.connect_legacy()
    t1, t2 = h.call("a"), h.call("b")
    ids = [m["id"] for m in h.messages() if m.get("method") == "tools/call"]
    h.stdout([{"jsonrpc": "2.0", "id": i, "result": TEXT_RESULT} for i in ids])
    assert h.result(t1).text == h.result(t2).text == "hi"


def test_oversized_answer_fails_only_its_caller() -> None:
    h = Harness(max_message_bytes=1000)
    h.connect_legacy()
    t1, t2 = h.call("huge"), h.call("echo")
    r1, r2 = [m for m in h.messages() if m.get("method") == "tools/call"]
    big = json.dumps({"jsonrpc": "2.0", "id": r1["id"], "result": {"x": "y" * 5000}})
    h.stdout(big.encode() + b"\n")
    err = h.error(t1)
    assert isinstance(err, core.MessageTooLarge) and err.limit == 1000
    assert t2 not in h.replies
    h.stdout(("{" + '"z":"' + "y" * 5000 + '"}\n').encode())  # no id: logged only
    assert any("discarded" in a.message for a in h.of(core.Log))
    h.answer(r2["id"], TEXT_RESULT)
    assert h.result(t2).text == "hi" and h.machine.state == "ready"


def test_a_session_closed_before_it_connected_is_closed_not_new() -> None:
    # A driver's stop() before start() feeds Close: answered at once, nothing to stop, and the
    # status then tells a stopped client from one never started.
    h = Harness()
    assert h.machine.state == "new"
    h.feed(core.Close(now=0.0, ticket=1))
    assert h.result(1) is None and h.machine.phase is SessionPhase.CLOSED
    assert h.machine.status(0.0).state == "closed"


def test_oversized_handshake_answer_fails_the_attempt() -> None:
    h = Harness(era="legacy", max_message_bytes=100, fail_fast=True)
    h.feed(core.Connect(now=0.0))
    w = h.await_ready()
    h.spawned()
    init = h.last_request("initialize")
    h.stdout(
        json.dumps({"jsonrpc": "2.0", "id": init["id"], "result": {"p": "x" * 500}}).encode()
        + b"\n"
    )
    assert isinstance(h.error(w), core.ConnectFailed)


def test_status_and_repr() -> None:
    h = Harness(name="srv1")
    assert h.machine.status(0.0).state == "new" and "new" in repr(h.machine)
    h.connect_legacy()
    status = h.machine.status(h.now)
    assert status.name == "srv1" and status.transport == "stdio"
    assert status.concurrency == "stateless" and status.retry_in is None
    assert "srv1" in repr(h.machine) and "ready" in repr(h.machine)


# --- server requests answered by the application ------------------------------------------------


def test_handlers_are_declared_and_server_requests_reach_them() -> None:
    h = Harness(era="legacy")
    h.machine = core.SessionMachine(h.spec, handlers=["elicitation"])
    h.feed(core.Connect(now=0.0))
    h.spawned()
    init = h.last_request("initialize")
    assert init["params"]["capabilities"] == {"elicitation": {}}
    h.answer(init["id"], {"protocolVersion": "2025-11-25", "capabilities": {}})
    h.take()
    params = {"message": "name?", "requestedSchema": {"type": "object"}}
    h.stdout({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": params})
    [ask] = h.of(core.HandleServerRequest)
    assert (ask.method, ask.params) == ("elicitation/create", params)
    h.take()
    h.feed(
        core.ServerRequestAnswered(
            now=0.0, handle=ask.handle, result={"action": "accept", "content": {"n": 1}}
        )
    )
    assert h.messages() == [
        {"jsonrpc": "2.0", "id": "e1", "result": {"action": "accept", "content": {"n": 1}}}
    ]
    h.take()
    h.stdout({"jsonrpc": "2.0", "id": "e2", "method": "elicitation/create", "params": params})
    [ask] = h.of(core.HandleServerRequest)
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, failed="KeyError"))
    assert h.messages()[-1]["error"] == {
        "code": -32603,
        "message": "the client's handler failed: KeyError",
    }
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, failed="X"))  # twice: no-op
    h.take()
    # URL mode was not declared: -32602; sampling has no handler: -32601
    h.stdout(
        {"jsonrpc": "2.0", "id": "e3", "method": "elicitation/create", "params": {"mode": "url"}}
    )
    h.stdout({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
    assert [m["error"]["code"] for m in h.messages()] == [-32602, -32601]
    # an answer for a connection that is gone is dropped
    h.take()
    h.stdout({"jsonrpc": "2.0", "id": "e4", "method": "elicitation/create", "params": params})
    [ask] = h.of(core.HandleServerRequest)
    h.exited(1)
    h.take()
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result={"action": "cancel"}))
    assert h.messages() == []


def test_modern_requests_declare_the_handlers_too() -> None:
    h = Harness()
    h.machine = core.SessionMachine(h.spec, handlers=("sampling", "roots"))
    h.feed(core.Connect(now=0.0))
    h.spawned()
    meta = h.last_request("server/discover")["params"]["_meta"]
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {"roots": {}, "sampling": {}}
    with pytest.raises(ValueError, match="unknown handlers"):
        core.SessionMachine(h.spec, handlers=["telepathy"])


def test_server_request_answers_are_part_of_a_recording(tmp_path) -> None:
    spec = core.Spec(name="r", command="srv", era="legacy")
    lines: list[str] = []
    recorder = Recorder(spec, lines.append, handlers=["elicitation"])
    machine = core.SessionMachine(spec, handlers=["elicitation"])
    events = [
        core.Connect(now=0.0),
        core.ProcessSpawned(now=0.0, slot=0, generation=1, pid=1),
        core.StdoutReceived(
            now=0.1,
            slot=0,
            generation=1,
            data=b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}\n'
            b'{"jsonrpc":"2.0","id":"e","method":"elicitation/create","params":{}}\n',
        ),
        core.ServerRequestAnswered(now=0.2, handle=1, result={"action": "decline"}),
    ]
    live = []
    for event in events:
        recorder.record(event)
        live.extend(machine.handle(event))
    path = tmp_path / "r.jsonl"
    path.write_text("".join(lines))
    assert json.loads(lines[0])["handlers"] == ["elicitation"]
    replayed = replay(str(path))
    assert [encode_action(a) for a in replayed] == [encode_action(a) for a in live]
    bad = tmp_path / "bad.jsonl"
    header = json.loads(lines[0])
    header["handlers"] = "elicitation"
    bad.write_text(json.dumps(header) + "\n")
    with pytest.raises(ValueError, match="handlers"):
        replay(str(bad))


def test_a_server_request_the_server_cancelled_is_not_answered() -> None:
    h = Harness(era="legacy")
    h.machine = core.SessionMachine(h.spec, handlers=["sampling"])
    h.connect_legacy()
    for request_id in ("s1", "s2"):
        h.stdout(
            {"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage", "params": {}}
        )
    first, second = h.of(core.HandleServerRequest)
    h.stdout({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "s1"}})
    h.take()
    h.feed(core.ServerRequestAnswered(now=0.0, handle=first.handle, result={"x": 1}))
    assert h.messages() == []
    h.feed(core.ServerRequestAnswered(now=0.0, handle=second.handle, result={"x": 2}))
    assert h.messages() == [{"jsonrpc": "2.0", "id": "s2", "result": {"x": 2}}]


# --- 2026-07-28 multi round-trip requests ------------------------------------------------------


def _modern_with(*handlers: str) -> Harness:
    h = Harness(era="modern")
    h.machine = core.SessionMachine(h.spec, handlers=handlers)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    h.take()
    return h


def test_input_required_is_fulfilled_and_retried_with_the_state_echoed() -> None:
    h = _modern_with("elicitation", "roots")
    t = h.call("book", {"city": "Oslo"})
    first = h.last_request("tools/call")
    h.take()
    state = '{"opaque": "é", "n": 1}'
    h.answer(
        first["id"],
        {
            "resultType": "input_required",
            "inputRequests": {
                "who": {"method": "elicitation/create", "params": {"message": "name?"}},
                "where": {"method": "roots/list", "params": {}},
            },
            "requestState": state,
        },
    )
    asks = h.of(core.HandleServerRequest)
    assert [a.method for a in asks] == ["elicitation/create", "roots/list"]
    assert h.messages() == [] and t not in h.replies
    h.feed(core.ServerRequestAnswered(now=0.0, handle=asks[1].handle, result={"roots": []}))
    assert h.messages() == []  # still waiting for the other answer
    h.feed(
        core.ServerRequestAnswered(
            now=0.0, handle=asks[0].handle, result={"action": "accept", "content": {"n": "A"}}
        )
    )
    retry = h.last_request("tools/call")
    assert retry["id"] != first["id"]
    assert retry["params"]["arguments"] == {"city": "Oslo"}
    assert retry["params"]["requestState"] == state
    assert retry["params"]["inputResponses"] == {
        "who": {"action": "accept", "content": {"n": "A"}},
        "where": {"roots": []},
    }
    h.answer(retry["id"], {"resultType": "complete", **TEXT_RESULT})
    assert h.result(t).text == "hi"


def test_input_required_without_requests_retries_at_once_without_state() -> None:
    h = _modern_with()
    t = h.call("x")
    first = h.last_request("tools/call")
    h.answer(first["id"], {"resultType": "input_required"})
    retry = h.last_request("tools/call")
    assert "requestState" not in retry["params"] and retry["params"]["inputResponses"] == {}
    for _ in range(8):
        h.answer(h.last_request("tools/call")["id"], {"resultType": "input_required"})
    err = h.error(t)
    assert isinstance(err, core.InvalidResponse) and "8 times" in str(err)


@pytest.mark.parametrize(
    "result",
    [
        {
            "resultType": "input_required",
            "inputRequests": {"x": {"method": "sampling/createMessage"}},
        },
        {"resultType": "input_required", "inputRequests": ["x"]},
        {"resultType": "input_required", "requestState": 5},
    ],
)
def test_input_required_that_cannot_be_served_fails_the_call(result: dict) -> None:
    h = _modern_with("elicitation")
    t = h.call("x")
    h.answer(h.last_request("tools/call")["id"], result)
    assert isinstance(h.error(t), core.InvalidResponse)


def test_input_handler_failure_timeout_and_loss_between_rounds() -> None:
    ask = {"resultType": "input_required", "inputRequests": {"k": {"method": "roots/list"}}}
    h = _modern_with("roots")
    t = h.call("x", timeout=5.0)
    h.answer(h.last_request("tools/call")["id"], ask)
    [first] = h.of(core.HandleServerRequest)
    h.feed(core.ServerRequestAnswered(now=0.0, handle=first.handle, failed="ValueError"))
    err = h.error(t)
    assert isinstance(err, core.JsonRpcError) and err.code == -32603
    # a call that times out while its handler runs: the late answer is dropped
    h.take()
    t2 = h.call("x", timeout=5.0)
    h.answer(h.last_request("tools/call")["id"], ask)
    [second] = h.of(core.HandleServerRequest)
    h.take()
    h.advance(5.0)
    assert isinstance(h.error(t2), core.RequestTimeout)
    assert h.messages() == []  # nothing on the wire to cancel
    h.feed(core.ServerRequestAnswered(now=h.now, handle=second.handle, result={"roots": []}))
    assert h.messages() == [] and h.machine.in_flight == 0
    # the server dies between rounds: the call fails with it
    h.take()
    t3 = h.call("x")
    h.answer(h.last_request("tools/call")["id"], ask)
    [third] = h.of(core.HandleServerRequest)
    h.exited(1)
    assert isinstance(h.error(t3), core.ServerExited)
    h.feed(core.ServerRequestAnswered(now=h.now, handle=third.handle, result={"roots": []}))


def test_an_answer_for_a_dead_process_never_reaches_its_successor() -> None:
    h = Harness(era="modern", reconnect=1.0)
    h.machine = core.SessionMachine(h.spec, handlers=["sampling"])
    h.feed(core.Connect(now=0.0))
    h.spawned()
    h.stdout({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {}})
    [ask] = h.of(core.HandleServerRequest)
    h.exited(1)
    h.fire_due()
    h.spawned(pid=200)
    h.take()
    h.feed(core.ServerRequestAnswered(now=h.now, handle=ask.handle, result={"x": 1}))
    assert h.messages() == []


def test_an_answer_after_stop_is_dropped() -> None:
    h = Harness(era="legacy")
    h.machine = core.SessionMachine(h.spec, handlers=["roots"])
    h.connect_legacy()
    h.stdout({"jsonrpc": "2.0", "id": "r1", "method": "roots/list", "params": {}})
    [ask] = h.of(core.HandleServerRequest)
    h.close()
    h.take()
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result={"roots": []}))
    assert h.messages() == []
    assert any("dropped the answer" in log.message for log in h.of(core.Log))


def test_an_unreadable_answer_fails_its_call_at_once() -> None:
    h = Harness()
    h.connect_legacy()
    t = h.call("echo")
    request_id = h.last_request("tools/call")["id"]
    line = b'{"jsonrpc":"2.0","id":%d,"result":{"content":"\xff\xfe"}}\n' % request_id
    h.feed(core.StdoutReceived(now=h.now, slot=0, generation=h.gen(0), data=line))
    error = h.error(t)
    assert isinstance(error, core.InvalidResponse) and "tools/call" in str(error)
    other = h.call("echo")  # the connection goes on
    h.answer(h.last_request("tools/call")["id"], TEXT_RESULT)
    assert h.result(other).text == "hi"


def test_an_unreadable_initialize_answer_fails_the_connect() -> None:
    h = Harness(era="legacy", fail_fast=True)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.spawned()
    init_id = h.last_request("initialize")["id"]
    line = b'{"jsonrpc":"2.0","id":%d,"result":{"x":"\xff"}}\n' % init_id
    h.feed(core.StdoutReceived(now=h.now, slot=0, generation=h.gen(0), data=line))
    failed = h.error(waiter)
    assert isinstance(failed, core.ConnectFailed)
    assert isinstance(failed.cause, core.InvalidResponse)
