"""Legacy Streamable HTTP recovery, with a fake clock: what a forgotten session (HTTP 404) does
to the other requests in flight on it, and how the standalone GET stream is reopened once the
server (or a proxy) closes it. No socket anywhere (tests/drivers/test_http_recovery.py runs the
same against a real server)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

import mcp_core as core
from tests.core.harness import TEXT_RESULT, HttpHarness

SSE = (("Content-Type", "text/event-stream"),)


def sse_message(message: dict[str, Any], event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}data: {json.dumps(message)}\n\n".encode()


def new_session(
    h: HttpHarness, session: str = "new-session", capabilities: dict[str, Any] | None = None
) -> core.StartHttp:
    """Answer the (re-)initialization under way; return the new session's listening GET."""
    init = h.request("initialize")
    assert h.header(init, "Mcp-Session-Id") is None
    result = {"protocolVersion": "2025-11-25", "capabilities": capabilities or {}}
    h.result_for(init, result, headers=(("Mcp-Session-Id", session),))
    h.respond(h.request("notifications/initialized"), 202)
    listen = h.request(http="GET")
    h.sse(listen, end=False)
    return listen


# --- 1. a forgotten session answers every request in flight on it at once ----------------------


def test_a_session_404_answers_every_call_in_flight_on_it_at_once() -> None:
    h = HttpHarness(era="legacy", concurrency="stateless", pool_size=4, call_timeout=30.0)
    h.connect_http_legacy("old-session")
    siblings = [h.call("slow", {"i": i}) for i in range(3)]
    sent = [r for r in h.requests() if r.method == "POST"]
    assert len(sent) == 3 and h.machine.in_flight == 3
    fourth = h.call("fourth")
    rejected = h.request("tools/call")
    h.take()
    h.respond(rejected, 404)
    # Every caller is answered now, once, with SessionRejected: not at its deadline.
    for ticket in [*siblings, fourth]:
        assert isinstance(h.error(ticket), core.SessionRejected), ticket
        assert h.reply_count[ticket] == 1
    assert "may or may not have run" in str(h.error(siblings[0]))
    assert h.machine.in_flight == 0 and h.machine.queued == 0
    aborted = {a.stream for a in h.of(core.AbortHttp)}
    assert {r.stream for r in sent} <= aborted
    new_session(h)
    assert h.machine.state == "ready"
    h.take()
    # Nothing of the old session reaches the new one: no cancel at the old deadlines.
    h.advance(31.0)
    assert h.requests() == [] and not h.of(core.Reply)
    t = h.call("again")
    again = h.request("tools/call")
    assert h.header(again, "Mcp-Session-Id") == "new-session"
    h.result_for(again, TEXT_RESULT)
    assert h.result(t).text == "hi"


def test_a_session_404_drops_a_resumption_due_on_the_old_session() -> None:
    # A call whose SSE answer dropped waits for its resumption (retry: 500 ms) when another
    # call finds the session gone: it is answered too, and no GET + Last-Event-ID of the old
    # session goes to the new one.
    h = HttpHarness(era="legacy", concurrency="stateless", pool_size=4)
    h.connect_http_legacy("old-session")
    dropped = h.call("slow")
    call = h.request("tools/call")
    h.take()
    h.feed(core.HttpResponseStarted(now=h.now, stream=call.stream, status=200, headers=SSE))
    h.feed(core.HttpBodyReceived(now=h.now, stream=call.stream, data=b"id: ev-1\nretry: 500\n\n"))
    h.feed(core.HttpFailed(now=h.now, stream=call.stream, reason="RemoteProtocolError"))
    assert dropped not in h.replies
    other = h.call("other")
    h.respond(h.request("tools/call"), 404)
    assert isinstance(h.error(other), core.SessionRejected)
    assert isinstance(h.error(dropped), core.SessionRejected)
    new_session(h)
    h.take()
    h.advance(1.0)
    assert h.gets() == []


def test_a_session_404_loses_a_renewal_in_flight_and_the_new_session_sends_it_again() -> None:
    h = HttpHarness(era="legacy", concurrency="stateless", pool_size=4)
    logging = {"logging": {}}
    h.feed(core.Connect(now=h.now))
    new_session(h, "old-session", logging)
    level = h.ticket()
    params = {"level": "warning"}
    h.feed(core.Request(now=h.now, ticket=level, method="logging/setLevel", params=params))
    h.result_for(h.request("logging/setLevel"), {})
    first = h.call("first")
    h.respond(h.request("tools/call"), 404)
    assert isinstance(h.error(first), core.SessionRejected)
    new_session(h, "middle-session", logging)
    renewal = h.request("logging/setLevel")  # in flight on the middle session
    assert h.header(renewal, "Mcp-Session-Id") == "middle-session"
    h.take()
    second = h.call("second")
    h.respond(h.request("tools/call"), 404)
    assert isinstance(h.error(second), core.SessionRejected)
    assert core.AbortHttp(stream=renewal.stream) in h.actions
    assert any("logging/setLevel was lost" in log.message for log in h.of(core.Log))
    new_session(h, capabilities=logging)
    assert h.rpc_methods().count("logging/setLevel") == 1  # renewed once, on the new session
    assert h.header(h.request("logging/setLevel"), "Mcp-Session-Id") == "new-session"


# --- 2. the listening GET is reopened while the session lives ----------------------------------


def test_the_listening_get_is_reopened_with_last_event_id_after_it_ends() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    listen = h.listening
    assert listen is not None
    note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    h.feed(
        core.HttpBodyReceived(
            now=h.now,
            stream=listen.stream,
            data=b"id: L-0\nretry: 2000\ndata:\n\n" + sse_message(note, "L-1"),
        )
    )
    h.feed(core.HttpResponseEnded(now=h.now, stream=listen.stream))  # a proxy's idle timeout
    assert h.gets() == [] and h.machine.next_deadline() == pytest.approx(2.0)  # retry: 2000
    h.fire_due()
    again = h.request(http="GET")
    assert h.header(again, "Last-Event-ID") == "L-1"
    assert h.header(again, "Mcp-Session-Id") == "sess-1"
    assert h.header(again, "MCP-Protocol-Version") == "2025-11-25"
    h.take()
    # The reopened GET leaves readiness alone: no second confirmation, no renewals.
    h.sse(again, sse_message({"jsonrpc": "2.0", "id": 7, "method": "ping"}, "L-2"), end=False)
    assert h.body(h.request()) == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert not h.of(core.Reply) and h.machine.state == "ready"
    h.take()
    h.feed(core.HttpFailed(now=h.now, stream=again.stream, reason="RemoteProtocolError"))
    h.fire_due()
    third = h.request(http="GET")
    assert h.header(third, "Last-Event-ID") == "L-2"
    t = h.call("x")  # calls go on all along
    h.result_for(h.request("tools/call"), TEXT_RESULT)
    assert h.result(t).text == "hi"


def test_a_listening_get_that_keeps_failing_backs_off() -> None:
    h = HttpHarness(era="legacy", reconnect=1.0, max_backoff=8.0)
    h.connect_http_legacy()
    listen = h.listening
    assert listen is not None
    h.take()
    h.feed(core.HttpResponseEnded(now=h.now, stream=listen.stream))
    delays = []
    for _ in range(6):
        before = h.now
        h.fire_due()
        delays.append(h.now - before)
        get = h.request(http="GET")
        assert h.header(get, "Last-Event-ID") is None  # the server gave no id
        h.take()
        h.feed(core.HttpFailed(now=h.now, stream=get.stream, reason="ConnectError"))
    assert 0.8 <= delays[0] < 1.2
    assert all(later > earlier for earlier, later in itertools.pairwise(delays[:4]))
    assert all(delay < 8.0 * 1.2 for delay in delays)
    # An established stream starts the backoff over.
    h.fire_due()
    get = h.request(http="GET")
    h.take()
    h.sse(get, b": keep-alive\n\n")
    before = h.now
    h.fire_due()
    assert 0.8 <= h.now - before < 1.2 and h.gets()


@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (405, (("Allow", "POST, DELETE"),)),
        (404, ()),
        (200, (("Content-Type", "application/json"),)),
    ],
)
def test_a_listening_get_refused_is_not_reopened(
    status: int, headers: tuple[tuple[str, str], ...]
) -> None:
    # 405: "the server does not offer an SSE stream at this endpoint"; a 404 says the same or
    # that the session is gone (the next POST finds out and renews it); a 2xx that is no
    # event stream is no stream either.
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    listen = h.listening
    assert listen is not None
    h.feed(core.HttpResponseEnded(now=h.now, stream=listen.stream))
    h.fire_due()
    again = h.request(http="GET")
    h.take()
    h.respond(again, status, b"{}" if status == 200 else None, headers)
    assert h.machine.next_deadline() is None and h.machine.state == "ready"
    h.advance(3600.0)
    assert h.gets() == [] and not h.of(core.Reply)


def test_a_first_listening_get_refused_with_405_is_never_retried() -> None:
    h = HttpHarness(era="legacy")
    h.feed(core.Connect(now=h.now))
    init = h.request("initialize")
    result = {"protocolVersion": "2025-11-25", "capabilities": {}}
    h.result_for(init, result, headers=(("Mcp-Session-Id", "s"),))
    h.respond(h.request("notifications/initialized"), 202)
    h.respond(h.request(http="GET"), 405)
    assert h.machine.state == "ready" and h.machine.next_deadline() is None
    h.take()
    h.advance(3600.0)
    assert h.gets() == []


def test_a_failed_first_listening_get_is_reopened_after_readiness() -> None:
    h = HttpHarness(era="legacy")
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready()
    init = h.request("initialize")
    result = {"protocolVersion": "2025-11-25", "capabilities": {}}
    h.result_for(init, result, headers=(("Mcp-Session-Id", "s"),))
    h.respond(h.request("notifications/initialized"), 202)
    first = h.request(http="GET")
    h.take()
    h.feed(core.HttpFailed(now=h.now, stream=first.stream, reason="ConnectError"))
    assert h.result(waiter).state == "ready"
    h.take()
    h.fire_due()
    h.sse(h.request(http="GET"), end=False)  # its head changes nothing: ready already
    assert not h.of(core.Reply) and h.machine.state == "ready"


def test_a_listening_get_answered_503_honours_retry_after() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    listen = h.listening
    assert listen is not None
    h.take()
    h.respond(listen, 503, None, (("Retry-After", "30"),))
    assert h.machine.next_deadline() == pytest.approx(30.0)
    h.fire_due()
    assert h.gets()


def test_an_oversized_event_on_the_listening_get_skips_it_and_reopens() -> None:
    h = HttpHarness(era="legacy", max_message_bytes=1000)
    h.connect_http_legacy()
    listen = h.listening
    assert listen is not None
    h.take()
    h.feed(
        core.HttpBodyReceived(
            now=h.now, stream=listen.stream, data=b"id: big\ndata: " + b"y" * 2000 + b"\n\n"
        )
    )
    assert core.AbortHttp(stream=listen.stream) in h.actions
    h.fire_due()
    assert h.header(h.request(http="GET"), "Last-Event-ID") == "big"


def test_no_reopen_after_close() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    listen = h.listening
    assert listen is not None
    h.feed(core.HttpResponseEnded(now=h.now, stream=listen.stream))
    assert h.machine.next_deadline() is not None
    h.take()
    stop = h.close()
    h.respond(h.request(http="DELETE"), 200)
    assert h.result(stop) is None and h.machine.next_deadline() is None
    h.take()
    h.advance(3600.0)
    assert h.requests() == []


def test_no_reopen_of_the_old_sessions_get_after_a_renewal() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy("old-session")
    listen = h.listening
    assert listen is not None
    h.feed(core.HttpBodyReceived(now=h.now, stream=listen.stream, data=b"id: old-3\n\n"))
    h.feed(core.HttpResponseEnded(now=h.now, stream=listen.stream))
    t = h.call("x")
    h.respond(h.request("tools/call"), 404)  # before the reopen is due
    assert isinstance(h.error(t), core.SessionRejected)
    first = new_session(h)  # the new session's own GET, which readiness waited for
    assert h.header(first, "Last-Event-ID") is None
    assert h.header(first, "Mcp-Session-Id") == "new-session"
    h.take()
    h.advance(3600.0)
    assert h.gets() == []


def test_an_oversized_event_for_a_request_answered_elsewhere_only_closes_its_stream() -> None:
    # The listening GET's own oversized event reopens it; a POST's, for a request the server
    # already answered on the listening GET, just closes that POST's stream.
    h = HttpHarness(era="legacy", max_message_bytes=1000)
    h.connect_http_legacy()
    listen = h.listening
    assert listen is not None
    t = h.call("x")
    call = h.request("tools/call")
    h.take()
    answer = {"jsonrpc": "2.0", "id": h.body(call)["id"], "result": TEXT_RESULT}
    h.feed(core.HttpBodyReceived(now=h.now, stream=listen.stream, data=sse_message(answer)))
    assert h.result(t).text == "hi"
    h.sse(call, b"data: " + b"y" * 2000 + b"\n\n", end=False)
    assert h.actions[-1] == core.AbortHttp(stream=call.stream)
    assert h.reply_count[t] == 1 and h.machine.next_deadline() is None
