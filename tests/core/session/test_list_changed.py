"""``SessionMachine(list_changed=True)``: each ``notifications/<kind>/list_changed`` becomes a
``ListChanged`` action once the client's cache of that list is dropped, and a 2026-07-28
listen stream asks for the changes of the lists the server declared ``listChanged`` for, open
with no URI subscribed. Without it, nothing changes: the cache is dropped, no action, and no
stream unless a URI is subscribed."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core
from mcp_core.replay import Recorder, encode_action, read_recording, replay_lines
from tests.core.harness import Harness, HttpHarness

LISTEN = "subscriptions/listen"
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
EVERY_LIST = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
}
ALL_THREE = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
CHANGES = [f"notifications/{kind}/list_changed" for kind in ("tools", "prompts", "resources")]


def harness(list_changed: bool = True, **fields: Any) -> Harness:
    h = HttpHarness(**fields) if "url" in fields else Harness(**fields)
    h.machine = core.SessionMachine(h.spec, list_changed=list_changed)
    return h


def modern(offers: dict[str, Any], list_changed: bool = True, **fields: Any) -> Harness:
    h = harness(list_changed, **fields)
    h.feed(core.Connect(now=h.now))
    h.spawned()
    discovered = {"resultType": "complete", "supportedVersions": ["2026-07-28"]}
    h.answer(h.last_request("server/discover")["id"], {**discovered, "capabilities": offers})
    assert h.machine.status(h.now).era == "modern"
    return h


def listens(h: Harness) -> list[dict[str, Any]]:
    return [m for m in h.messages() if m.get("method") == LISTEN]


def asked(listen: dict[str, Any]) -> dict[str, Any]:
    notifications: dict[str, Any] = listen["params"]["notifications"]
    return notifications


def notify(h: Harness, method: str, params: dict[str, Any] | None = None) -> None:
    h.stdout({"jsonrpc": "2.0", "method": method, "params": params or {}})


def subscribe(h: Harness, uri: str, unsubscribe: bool = False) -> None:
    t = h.ticket()
    kind = core.Unsubscribe if unsubscribe else core.Subscribe
    h.feed(kind(now=h.now, ticket=t, uri=uri))
    assert h.replies[t] == core.Reply(ticket=t, value=None)


def debug(h: Harness) -> list[str]:
    return [log.message for log in h.of(core.Log) if log.level == "DEBUG"]


# --- the action ---------------------------------------------------------------------------------


def test_each_list_change_is_an_action_after_the_cache_is_dropped() -> None:
    h = harness(era="legacy")
    h.connect_legacy()
    t = h.list_tools()
    h.answer(h.last_request("tools/list")["id"], {"tools": [{"name": "a", "inputSchema": {}}]})
    assert [tool.name for tool in h.result(t)] == ["a"]
    h.take()
    for method in CHANGES:
        notify(h, method)
    assert h.of(core.ListChanged) == [
        core.ListChanged(kind="tools"),
        core.ListChanged(kind="prompts"),
        core.ListChanged(kind="resources"),
    ]
    # Dropped before the action: the callback that lists again asks the server.
    h.list_tools()
    assert [m["method"] for m in h.messages()] == ["tools/list"]


def test_without_the_keyword_a_change_only_drops_the_cache() -> None:
    h = harness(list_changed=False, era="legacy")
    h.connect_legacy()
    t = h.list_tools()
    h.answer(h.last_request("tools/list")["id"], {"tools": []})
    h.take()
    notify(h, "notifications/tools/list_changed")
    assert h.actions == []
    h.list_tools()
    assert [m["method"] for m in h.messages()] == ["tools/list"]
    assert h.result(t) == []


def test_the_action_is_recorded_by_name_and_kind() -> None:
    assert encode_action(core.ListChanged(kind="prompts")) == {
        "action": "ListChanged",
        "kind": "prompts",
    }


# --- 2026-07-28: the listen stream --------------------------------------------------------------


def test_a_modern_session_listens_for_the_declared_lists_with_nothing_subscribed() -> None:
    h = modern(EVERY_LIST)
    [listen] = listens(h)
    assert asked(listen) == ALL_THREE  # no resourceSubscriptions: none wanted
    assert listen["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert h.machine.in_flight == 0 and h.machine.next_deadline() is None
    h.take()
    meta = {"_meta": {SUBSCRIPTION: listen["id"]}}
    notify(h, "notifications/subscriptions/acknowledged", {"notifications": ALL_THREE, **meta})
    assert h.actions == []  # everything asked for is honoured: nothing to say
    notify(h, "notifications/prompts/list_changed", meta)
    assert h.of(core.ListChanged) == [core.ListChanged(kind="prompts")]


@pytest.mark.parametrize(
    ("offers", "wanted"),
    [
        ({"tools": {"listChanged": True}, "prompts": {}}, {"toolsListChanged": True}),
        ({"resources": {"listChanged": True, "subscribe": False}}, {"resourcesListChanged": True}),
        ({"tools": {"listChanged": "yes"}, "prompts": True, "resources": {}}, None),
        ({}, None),
    ],
)
def test_only_the_lists_the_server_declared_listchanged_for_are_asked(
    offers: dict[str, Any], wanted: dict[str, Any] | None
) -> None:
    # 2026-07-28 server/tools §List Changed Notification: servers "that declared the
    # listChanged capability SHOULD send" them; no stream at all when none did.
    h = modern(offers)
    assert [asked(listen) for listen in listens(h)] == ([wanted] if wanted else [])


def test_a_server_never_asked_is_asked_for_every_list() -> None:
    # era='modern' skips server/discover: what the server declares is unknown.
    h = harness(era="modern")
    h.feed(core.Connect(now=0.0))
    h.spawned()
    [listen] = listens(h)
    assert asked(listen) == ALL_THREE


def test_without_the_keyword_a_modern_session_opens_no_stream() -> None:
    h = modern(EVERY_LIST, list_changed=False)
    assert listens(h) == []
    h.take()
    subscribe(h, "u:a")
    [listen] = listens(h)
    assert asked(listen) == {"resourceSubscriptions": ["u:a"]}


def test_subscriptions_join_the_list_changes_on_one_stream() -> None:
    h = modern({"tools": {"listChanged": True}, "resources": {"subscribe": True}})
    [first] = listens(h)
    h.take()
    subscribe(h, "u:a")
    cancelled, second = h.messages()
    assert cancelled["params"]["requestId"] == first["id"]
    assert asked(second) == {"toolsListChanged": True, "resourceSubscriptions": ["u:a"]}
    h.take()
    subscribe(h, "u:a", unsubscribe=True)  # the list changes still want the stream
    cancelled, third = h.messages()
    assert cancelled["params"]["requestId"] == second["id"]
    assert asked(third) == {"toolsListChanged": True}


def test_an_acknowledgement_without_a_list_is_logged_and_the_stream_kept() -> None:
    h = modern(EVERY_LIST)
    assert len(listens(h)) == 1
    h.take()
    honoured = {"toolsListChanged": True, "promptsListChanged": False}
    notify(h, "notifications/subscriptions/acknowledged", {"notifications": honoured})
    assert debug(h) == ["the server will not say when its prompts, resources change"]
    assert h.messages() == [] and h.machine.next_deadline() is None
    h.take()
    notify(h, "notifications/subscriptions/acknowledged", {"notifications": ["tools"]})
    assert debug(h) == ["the server will not say when its tools, prompts, resources change"]


def test_a_list_only_stream_that_ends_is_listened_again() -> None:
    h = modern({"prompts": {"listChanged": True}})
    [listen] = listens(h)
    h.take()
    h.answer(listen["id"], {"resultType": "complete"})  # the server closed it
    assert listens(h) == []
    assert h.machine.next_deadline() == pytest.approx(h.now + 1.0)
    h.fire_due()
    [again] = listens(h)
    assert asked(again) == {"promptsListChanged": True}


def test_a_new_session_listens_for_the_lists_again() -> None:
    h = modern(EVERY_LIST)
    h.take()
    h.exited(1)
    h.fire_due()
    h.spawned()  # the era is known: ready without a probe, so the lists are not known either
    [listen] = listens(h)
    assert asked(listen) == ALL_THREE


def test_over_http_the_list_stream_is_a_listen_post() -> None:
    h = harness(url="https://mcp.example.com/mcp")
    assert isinstance(h, HttpHarness)
    h.feed(core.Connect(now=0.0))
    discovered = {"resultType": "complete", "supportedVersions": ["2026-07-28"]}
    h.result_for(h.request("server/discover"), {**discovered, "capabilities": EVERY_LIST})
    listen = h.request(LISTEN)
    assert h.header(listen, "Mcp-Method") == LISTEN
    assert asked(h.body(listen)) == ALL_THREE
    h.take()
    note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
    h.sse(listen, b"data: " + json.dumps(note).encode() + b"\n\n", end=False)
    assert h.of(core.ListChanged) == [core.ListChanged(kind="tools")]


# --- recordings ---------------------------------------------------------------------------------


def _session(recorder: Recorder, machine: core.SessionMachine) -> list[core.Action]:
    events = [
        core.Connect(now=0.0),
        core.ProcessSpawned(now=0.0, slot=0, generation=1, pid=1),
        core.StdoutReceived(
            now=0.1,
            slot=0,
            generation=1,
            data=b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}\n'
            b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n',
        ),
    ]
    actions = []
    for event in events:
        recorder.record(event)
        actions.extend(machine.handle(event))
    return actions


def test_a_recording_keeps_the_keyword_and_replays_the_actions() -> None:
    spec = core.Spec(name="r", command="srv", era="legacy")
    lines: list[str] = []
    recorder = Recorder(spec, lines.append, list_changed=True)
    live = _session(recorder, core.SessionMachine(spec, list_changed=True))
    assert core.ListChanged(kind="tools") in live
    assert json.loads(lines[0])["list_changed"] is True
    assert [encode_action(a) for a in replay_lines(lines)] == [encode_action(a) for a in live]
    assert read_recording(lines)[1][-1].now == 0.1


def test_a_recording_without_the_keyword_has_no_header_field_and_no_action() -> None:
    spec = core.Spec(name="r", command="srv", era="legacy")
    lines: list[str] = []
    live = _session(Recorder(spec, lines.append), core.SessionMachine(spec))
    assert "list_changed" not in json.loads(lines[0])  # older recordings read the same
    replayed = replay_lines(lines)
    assert not any(isinstance(a, core.ListChanged) for a in replayed)
    assert [encode_action(a) for a in replayed] == [encode_action(a) for a in live]


def test_a_header_with_a_bad_keyword_is_refused() -> None:
    spec = core.Spec(name="r", command="srv")
    lines: list[str] = []
    Recorder(spec, lines.append, list_changed=True)
    header = json.loads(lines[0])
    header["list_changed"] = "yes"
    with pytest.raises(ValueError, match='"list_changed" must be true or false'):
        replay_lines([json.dumps(header)])
