"""2026-07-28 subscriptions: one ``subscriptions/listen`` per ready modern connection, asking
for every subscribed URI; a new set cancels it and sends another; a listen that ends is sent
again after a doubling delay (reset by an acknowledgement), one the server refuses is not."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core
from tests.core.harness import Harness, HttpHarness

LISTEN = "subscriptions/listen"
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
OFFERS = {"resources": {"subscribe": True, "listChanged": True}}
DISCOVERED = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": OFFERS}


def modern(offers: dict[str, Any] | None = None, **fields: Any) -> Harness:
    h = Harness(**fields)
    h.feed(core.Connect(now=h.now))
    h.spawned()
    discovered = DISCOVERED if offers is None else {**DISCOVERED, "capabilities": offers}
    h.answer(h.last_request("server/discover")["id"], discovered)
    assert h.machine.status(h.now).era == "modern"
    h.take()
    return h


def subscribe(h: Harness, uri: str) -> None:
    t = h.ticket()
    h.feed(core.Subscribe(now=h.now, ticket=t, uri=uri))
    assert h.replies[t] == core.Reply(ticket=t, value=None)  # answered at once


def unsubscribe(h: Harness, uri: str) -> None:
    t = h.ticket()
    h.feed(core.Unsubscribe(now=h.now, ticket=t, uri=uri))
    assert h.replies[t] == core.Reply(ticket=t, value=None)


def uris(listen: dict[str, Any]) -> list[str]:
    return list(listen["params"]["notifications"]["resourceSubscriptions"])


def notify(h: Harness, method: str, params: dict[str, Any]) -> None:
    h.stdout({"jsonrpc": "2.0", "method": method, "params": params})


def acknowledge(h: Harness, listen: dict[str, Any], honoured: list[str]) -> None:
    notify(
        h,
        "notifications/subscriptions/acknowledged",
        {
            "notifications": {"resourceSubscriptions": honoured},
            "_meta": {SUBSCRIPTION: listen["id"]},
        },
    )


def warnings(h: Harness) -> list[str]:
    return [log.message for log in h.of(core.Log) if log.level == "WARNING"]


def cancels(h: Harness) -> list[dict[str, Any]]:
    return [m["params"] for m in h.messages() if m.get("method") == "notifications/cancelled"]


def listens(h: Harness) -> list[dict[str, Any]]:
    return [m for m in h.messages() if m.get("method") == LISTEN]


# --- the listen request ------------------------------------------------------------------------


def test_subscribe_sends_a_listen_with_the_uris_and_updates_follow() -> None:
    h = modern()
    subscribe(h, "file:///a")
    [listen] = listens(h)
    assert uris(listen) == ["file:///a"]
    assert listen["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert [m["method"] for m in h.messages()] == [LISTEN]  # no resources/subscribe
    assert h.machine.in_flight == 0  # the stream is not caller work: no deadline, no slot
    acknowledge(h, listen, ["file:///a"])
    assert warnings(h) == []
    meta = {"_meta": {SUBSCRIPTION: listen["id"]}}
    notify(h, "notifications/resources/updated", {"uri": "file:///a", **meta})
    notify(h, "notifications/resources/updated", {"uri": "file:///b", **meta})
    assert h.of(core.ResourceUpdated) == [core.ResourceUpdated(uri="file:///a")]


def test_a_changed_set_cancels_the_listen_and_sends_a_new_one() -> None:
    h = modern()
    subscribe(h, "u:a")
    [first] = listens(h)
    h.take()
    subscribe(h, "u:b")
    assert cancels(h) == [{"requestId": first["id"], "reason": "the subscriptions changed"}]
    [second] = listens(h)
    assert uris(second) == ["u:a", "u:b"]
    assert [m["method"] for m in h.messages()] == ["notifications/cancelled", LISTEN]
    h.take()
    subscribe(h, "u:b")  # already in the set: nothing changes
    assert h.messages() == []
    unsubscribe(h, "u:a")
    assert cancels(h) == [{"requestId": second["id"], "reason": "the subscriptions changed"}]
    [third] = listens(h)
    assert uris(third) == ["u:b"]
    h.take()
    unsubscribe(h, "u:b")  # nothing left to listen for: cancelled, not sent again
    assert cancels(h) == [{"requestId": third["id"], "reason": "the subscriptions changed"}]
    assert listens(h) == []
    h.take()
    unsubscribe(h, "u:never")
    assert h.messages() == []
    h.answer(third["id"], {})  # the cancelled listen's late answer: ignored
    assert listens(h) == [] and h.machine.next_deadline() is None


def test_over_http_a_changed_set_closes_the_listen_stream() -> None:
    h = HttpHarness()
    h.feed(core.Connect(now=0.0))
    h.result_for(h.request("server/discover"), DISCOVERED)
    h.take()
    subscribe(h, "u:a")
    first = h.request(LISTEN)
    assert h.header(first, "Mcp-Method") == LISTEN
    h.take()
    subscribe(h, "u:b")
    assert core.AbortHttp(stream=first.stream) in h.actions
    assert [h.body(r)["method"] for r in h.requests()] == [LISTEN]  # no cancel POST
    assert uris(h.body(h.request(LISTEN))) == ["u:a", "u:b"]


def test_an_acknowledgement_naming_less_logs_a_warning() -> None:
    h = modern()
    subscribe(h, "u:a")
    subscribe(h, "u:b")
    listen = listens(h)[-1]
    h.take()
    acknowledge(h, listen, ["u:b"])
    [warning] = warnings(h)
    assert "does not send updates for 1 subscribed resource(s)" in warning and "'u:a'" in warning


@pytest.mark.parametrize("params", [{}, {"notifications": []}, {"notifications": {}}])
def test_an_acknowledgement_naming_nothing_refuses_everything(params: dict[str, Any]) -> None:
    h = modern()
    subscribe(h, "u:a")
    h.take()
    notify(h, "notifications/subscriptions/acknowledged", params)
    [warning] = warnings(h)
    assert "for 1 subscribed resource(s), e.g. 'u:a'" in warning


def test_the_acknowledgement_of_a_cancelled_listen_is_not_taken_for_the_new_one() -> None:
    h = modern()
    subscribe(h, "u:a")
    [first] = listens(h)
    subscribe(h, "u:b")
    h.take()
    acknowledge(h, first, ["u:a"])  # on its way before the cancel arrived: about {u:a} only
    assert warnings(h) == []


def test_an_acknowledgement_with_no_listen_is_ignored() -> None:
    h = modern()
    notify(h, "notifications/subscriptions/acknowledged", {"notifications": {}})
    assert warnings(h) == []


def test_a_legacy_session_never_listens() -> None:
    h = Harness(era="legacy")
    h.feed(core.Connect(now=0.0))
    h.spawned()
    h.answer(
        h.last_request("initialize")["id"],
        {"protocolVersion": "2025-11-25", "capabilities": OFFERS},
    )
    h.take()
    h.feed(core.Subscribe(now=0.0, ticket=1, uri="u:a"))
    assert [m["method"] for m in h.messages()] == ["resources/subscribe"]


# --- a listen that ends ------------------------------------------------------------------------


def test_a_graceful_end_is_listened_again_after_1_s_then_doubling() -> None:
    h = modern()
    subscribe(h, "u:a")
    listen = listens(h)[-1]
    delays = []
    for _ in range(4):
        h.take()
        h.answer(listen["id"], {"resultType": "complete"})  # the server closed the stream
        assert listens(h) == []
        ended = h.now
        due = h.machine.next_deadline()
        assert due is not None
        h.advance(due - ended - 0.001)
        assert listens(h) == []  # not before its time
        h.fire_due()
        [listen] = listens(h)
        assert uris(listen) == ["u:a"]
        delays.append(round(due - ended, 6))
    assert delays == [1.0, 2.0, 4.0, 8.0]
    # An acknowledgement resets the delay.
    acknowledge(h, listen, ["u:a"])
    h.take()
    h.answer(listen["id"], {})
    assert h.machine.next_deadline() == pytest.approx(h.now + 1.0)


def test_the_delay_stops_doubling_at_60_s() -> None:
    h = modern()
    subscribe(h, "u:a")
    delays = []
    for _ in range(8):
        listen = listens(h)[-1]
        h.take()
        h.answer(listen["id"], {})
        ended = h.now
        h.fire_due()
        delays.append(round(h.now - ended, 6))
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_next_deadline_includes_the_listen_again_time() -> None:
    h = modern()
    h.now = 10.0
    subscribe(h, "u:a")
    assert h.machine.next_deadline() is None  # nothing to time: the stream has no deadline
    h.answer(listens(h)[-1]["id"], {})
    assert h.machine.next_deadline() == pytest.approx(11.0)
    # A call's deadline that comes first is the earlier one; firing it leaves the listen be.
    h.feed(core.CallTool(now=h.now, ticket=99, name="x", timeout=0.5))
    assert h.machine.next_deadline() == pytest.approx(10.5)
    h.take()
    h.fire_due()
    assert isinstance(h.error(99), core.RequestTimeout) and listens(h) == []
    assert h.machine.next_deadline() == pytest.approx(11.0)
    h.fire_due()
    assert len(listens(h)) == 1 and h.machine.next_deadline() is None


def test_a_listen_refused_with_an_error_is_not_sent_again() -> None:
    h = modern()
    subscribe(h, "u:a")
    [listen] = listens(h)
    h.take()
    h.answer_error(listen["id"], -32601, "Method not found")
    [warning] = warnings(h)
    assert warning == "the server refused subscriptions/listen: Method not found"
    assert h.machine.next_deadline() is None
    h.take()
    h.advance(3600)
    assert listens(h) == []
    subscribe(h, "u:b")  # a new set asks again
    assert uris(listens(h)[-1]) == ["u:a", "u:b"]


def test_changing_the_set_while_waiting_to_listen_again() -> None:
    h = modern()
    subscribe(h, "u:a")
    h.answer(listens(h)[-1]["id"], {})
    h.take()
    subscribe(h, "u:b")  # the caller's change goes out at once
    assert uris(listens(h)[-1]) == ["u:a", "u:b"]
    assert h.machine.next_deadline() is None
    h.answer(listens(h)[-1]["id"], {})
    h.take()
    unsubscribe(h, "u:a")
    assert uris(listens(h)[-1]) == ["u:b"]
    h.answer(listens(h)[-1]["id"], {})
    h.take()
    unsubscribe(h, "u:b")  # nothing wanted any more: nothing to send later either
    assert h.messages() == [] and h.machine.next_deadline() is None


def test_over_http_a_lost_listen_stream_is_listened_again() -> None:
    h = HttpHarness()
    h.feed(core.Connect(now=0.0))
    h.result_for(h.request("server/discover"), DISCOVERED)
    h.take()
    subscribe(h, "u:a")
    ack = {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {"resourceSubscriptions": ["u:a"]}},
    }
    acked = b"data: " + json.dumps(ack).encode() + b"\n\n"
    h.sse(h.request(LISTEN), acked)  # acknowledged, then the stream ends without an answer
    assert warnings(h) == []
    assert h.machine.next_deadline() == pytest.approx(h.now + 1.0)
    h.take()
    h.fire_due()
    again = h.request(LISTEN)
    assert uris(h.body(again)) == ["u:a"]
    h.feed(core.HttpFailed(now=h.now, stream=again.stream, reason="ReadError"))
    assert h.machine.next_deadline() == pytest.approx(h.now + 2.0)
    h.take()
    h.fire_due()
    h.respond(h.request(LISTEN), 503)
    assert h.machine.next_deadline() == pytest.approx(h.now + 4.0)
    h.take()
    h.fire_due()
    h.sse(h.request(LISTEN), acked)  # an acknowledgement starts the delays over
    assert h.machine.next_deadline() == pytest.approx(h.now + 1.0)


# --- reconnects --------------------------------------------------------------------------------


def test_a_new_session_listens_again_with_the_same_uris() -> None:
    h = modern()
    subscribe(h, "u:a")
    subscribe(h, "u:b")
    h.take()
    h.exited(1)
    assert listens(h) == []
    h.fire_due()
    h.spawned()  # the era is known now: ready without a probe
    [listen] = listens(h)
    assert uris(listen) == ["u:a", "u:b"]


def test_a_listen_due_while_the_server_is_down_waits_for_the_new_session() -> None:
    h = modern(reconnect=5.0, jitter_seed=1)
    subscribe(h, "u:a")
    h.answer(listens(h)[-1]["id"], {})  # ended: due again at 1 s
    h.exited(1)  # and the server is gone, back in about 5 s
    h.take()
    h.advance(1.0)
    assert listens(h) == [] and h.of(core.Spawn) == []
    h.fire_due()
    assert h.of(core.Spawn)
    h.spawned()
    assert [uris(m) for m in listens(h)] == [["u:a"]]


def test_each_ready_connection_of_a_pool_has_its_own_listen() -> None:
    h = Harness(concurrency="pooled", pool_size=2)
    h.feed(core.Connect(now=0.0))
    h.spawned(slot=0)
    h.answer(h.last_request("server/discover", slot=0)["id"], DISCOVERED, slot=0)
    h.take()
    subscribe(h, "u:a")  # slot 1 is still starting: it listens once it is ready
    assert [uris(m) for m in listens(h)] == [["u:a"]]
    assert h.messages(slot=1) == []
    h.take()
    h.spawned(slot=1)  # the era is known from slot 0: no probe
    [second] = [m for m in h.messages(slot=1) if m.get("method") == LISTEN]
    assert uris(second) == ["u:a"]
    h.take()
    subscribe(h, "u:b")
    for slot in (0, 1):
        sent = h.messages(slot=slot)
        assert [m["method"] for m in sent] == ["notifications/cancelled", LISTEN]
        assert uris(sent[1]) == ["u:a", "u:b"]


def test_the_listen_carries_the_log_level_the_caller_set() -> None:
    h = modern({**OFFERS, "logging": {}})
    t = h.ticket()
    h.feed(core.Request(now=h.now, ticket=t, method="logging/setLevel", params={"level": "info"}))
    subscribe(h, "u:a")
    [listen] = listens(h)
    assert listen["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "info"


def test_an_oversized_answer_to_the_listen_loses_the_stream_not_the_connection() -> None:
    h = modern(max_message_bytes=4096)
    subscribe(h, "u:a")
    [listen] = listens(h)
    h.take()
    big = {"resultType": "complete", "pad": "x" * 8000}
    h.answer(listen["id"], big)
    assert h.machine.state == "ready"
    h.now += 1.0
    h.feed(core.TimerFired(now=h.now))
    assert [uris(m) for m in listens(h)] == [["u:a"]]  # listened again after the delay
