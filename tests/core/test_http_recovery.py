"""Legacy Streamable HTTP recovery, with a fake clock: what a forgotten session (HTTP 404) does
to the other requests in flight on it. No socket anywhere (tests/drivers/test_http_recovery.py
runs the same against a real server)."""

from __future__ import annotations

import json
from typing import Any

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
