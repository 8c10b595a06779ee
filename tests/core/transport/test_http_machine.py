"""The HTTP transport of the SessionMachine: requests out as StartHttp, answers in as response
events, with a fake clock. No socket anywhere (the drivers' tests use real servers)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import mcp_core as core
from mcp_core.replay import Recorder, encode_action, replay
from tests.core.harness import TEXT_RESULT, HttpHarness

SSE = (("Content-Type", "text/event-stream"),)


def sse_message(message: dict, event_id: str | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}data: {json.dumps(message)}\n\n".encode()


def test_legacy_streamable_http_handshake_and_headers() -> None:
    h = HttpHarness(headers={"Authorization": "Bearer s3cr3t"})
    h.feed(core.Connect(now=0.0))
    assert h.of(core.Spawn) == []
    probe = h.request("server/discover")
    assert probe.url == "https://mcp.example.com/mcp"
    assert h.header(probe, "MCP-Protocol-Version") == "2026-07-28"
    assert h.header(probe, "Mcp-Method") == "server/discover"
    assert h.header(probe, "Accept") == "application/json, text/event-stream"
    assert h.header(probe, "Authorization") == "Bearer s3cr3t"
    h.take()
    h.respond(probe, 404)  # an unrecognised answer: a legacy server
    init = h.request("initialize")
    assert h.header(init, "MCP-Protocol-Version") is None
    assert h.header(init, "Mcp-Session-Id") is None
    h.result_for(
        init,
        {"protocolVersion": "2025-06-18", "capabilities": {}},
        headers=(("mcp-session-id", "sess-1"),),
    )
    note = h.request("notifications/initialized")
    assert h.header(note, "Mcp-Session-Id") == "sess-1"
    assert h.header(note, "MCP-Protocol-Version") == "2025-06-18"
    # Ready once the server has taken the notification: no call can overtake it.
    assert h.machine.state == "initializing" and not [r for r in h.requests() if r.method == "GET"]
    h.take()
    h.respond(note, 202)
    # The listening GET goes out first; ready once it is answered (any status), so no call
    # can reach the server before it.
    listen = h.request(http="GET")
    assert h.header(listen, "Accept") == "text/event-stream"
    assert h.machine.state == "initializing"
    h.take()
    h.respond(listen, 405)  # no GET stream: fine
    assert h.of(core.Log)[-1].level == "DEBUG"
    status = h.machine.status(h.now)
    assert (status.state, status.transport, status.era) == ("ready", "http", "legacy")
    assert status.concurrency == "serialized"  # legacy HTTP default
    assert "sess-1" not in repr(status)
    t = h.call("echo", {"text": "hi"})
    call = h.request("tools/call")
    assert h.header(call, "Mcp-Session-Id") == "sess-1"
    assert h.header(call, "Mcp-Method") is None  # a legacy request has no modern headers
    h.sse(
        call,
        b"id: e1\ndata:\n\n",  # 2025-11-25 priming event: an id and empty data
        b": keep-alive\n\n",
        sse_message({"jsonrpc": "2.0", "id": h.body(call)["id"], "result": TEXT_RESULT}, "e2"),
    )
    assert h.result(t).text == "hi"


def test_json_answers_and_notifications() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    t = h.call("echo")
    h.result_for(h.request("tools/call"), TEXT_RESULT)
    assert h.result(t).text == "hi"
    h.take()
    t2 = h.call("echo")
    call = h.request("tools/call")
    h.feed(core.HttpResponseStarted(now=0.0, stream=call.stream, status=200, headers=SSE))
    # a server request on the answer stream is answered with a POST of its own
    h.feed(
        core.HttpBodyReceived(
            now=0.0,
            stream=call.stream,
            data=sse_message({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
        )
    )
    answer = [r for r in h.requests() if r.body and h.body(r).get("id") == 9][-1]
    assert h.body(answer) == {"jsonrpc": "2.0", "id": 9, "result": {}}
    h.feed(
        core.HttpBodyReceived(
            now=0.0,
            stream=call.stream,
            data=b'event: message\ndata: {"jsonrpc":"2.0",'
            b'"method":"notifications/tools/list_changed"}\n\n'
            b"event: other\ndata: ignored\n\ndata: not json\n\n",
        )
    )
    assert any("not a JSON-RPC message" in log.message for log in h.of(core.Log))
    h.respond(answer, 500)  # our response was refused: logged, nothing else
    assert "HTTP 500" in h.of(core.Log)[-1].message
    h.feed(
        core.HttpBodyReceived(
            now=0.0,
            stream=call.stream,
            data=sse_message({"jsonrpc": "2.0", "id": h.body(call)["id"], "result": TEXT_RESULT}),
        )
    )
    h.feed(core.HttpResponseEnded(now=0.0, stream=call.stream))
    assert h.result(t2).text == "hi"


def test_modern_http_headers_cancel_by_closing_the_stream() -> None:
    h = HttpHarness()
    waiter = (h.feed(core.Connect(now=0.0)), h.await_ready())[1]
    h.result_for(
        h.request("server/discover"),
        {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}},
    )
    status = h.result(waiter)
    assert (status.era, status.concurrency) == ("modern", "stateless")
    h.take()
    t = h.call("grüße", {"x": 1})
    call = h.request("tools/call")
    assert h.header(call, "Mcp-Method") == "tools/call"
    encoded = "=?base64?" + base64.b64encode("grüße".encode()).decode() + "?="
    assert h.header(call, "Mcp-Name") == encoded
    assert h.header(call, "MCP-Protocol-Version") == "2026-07-28"
    assert h.header(call, "Mcp-Session-Id") is None
    assert h.body(call)["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
    assert not [r for r in h.requests() if r.method == "GET"]
    h.take()
    h.feed(core.CancelCall(now=0.0, ticket=t))
    assert h.actions == [core.AbortHttp(stream=call.stream)]  # no notifications/cancelled
    h.respond(call, 200, {"jsonrpc": "2.0", "id": 1, "result": TEXT_RESULT})  # aborted: ignored
    assert t not in h.replies


def test_plain_header_values_stay_plain() -> None:
    h = HttpHarness()
    h.connect_http_modern()
    h.call("get weather")  # inner spaces are plain visible ASCII
    assert h.header(h.request("tools/call"), "Mcp-Name") == "get weather"
    h.take()
    h.call(" padded")  # edge whitespace is not
    assert h.header(h.request("tools/call"), "Mcp-Name") == "=?base64?IHBhZGRlZA==?="
    h.take()
    h.call("=?base64?abc?=")  # nor is anything that looks encoded already
    assert h.header(h.request("tools/call"), "Mcp-Name") == "=?base64?PT9iYXNlNjQ/YWJjPz0=?="
    h.take()
    h.call("echo")
    assert h.header(h.request("tools/call"), "Mcp-Name") == "echo"


def test_mcp_name_names_the_resource_read_and_the_prompt_got() -> None:
    h = HttpHarness()
    h.feed(core.Connect(now=0.0))
    offers = {"resources": {}, "prompts": {}, "completions": {}}
    h.result_for(
        h.request("server/discover"),
        {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": offers},
    )
    h.take()
    h.feed(core.Request(now=0.0, ticket=50, method="resources/read", params={"uri": "file:///é"}))
    read = h.request("resources/read")
    assert h.header(read, "Mcp-Method") == "resources/read"
    assert (
        h.header(read, "Mcp-Name")
        == "=?base64?" + base64.b64encode(b"file:///\xc3\xa9").decode() + "?="
    )
    h.take()
    h.feed(core.Request(now=0.0, ticket=51, method="prompts/get", params={"name": "greet"}))
    assert h.header(h.request("prompts/get"), "Mcp-Name") == "greet"
    h.take()
    h.feed(core.Request(now=0.0, ticket=52, method="completion/complete", params={"name": "x"}))
    assert h.header(h.request("completion/complete"), "Mcp-Name") is None


@pytest.mark.parametrize(
    ("status", "body", "era"),
    [
        (
            400,
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32022, "message": "v", "data": {"supported": ["2026-07-28"]}},
            },
            "modern",
        ),
        (400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32601, "message": "nope"}}, None),
        (405, None, None),
        (200, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "nope"}}, None),
        (200, b"", None),
        (302, None, None),
    ],
)
def test_era_detection_over_http(status: int, body: object, era: str | None) -> None:
    h = HttpHarness()
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("server/discover"), status, body)  # type: ignore[arg-type]
    if era == "modern":
        assert h.machine.state == "ready" and h.machine.status(0).era == "modern"
    else:
        assert h.request("initialize")


@pytest.mark.parametrize("status", [401, 403])
def test_auth_refusal_at_connect_is_permanent(status: int) -> None:
    h = HttpHarness(era="legacy")
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.respond(
        h.request("initialize"),
        status,
        headers=(("WWW-Authenticate", 'Bearer resource_metadata="https://x/.well-known"'),),
    )
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.permanent
    assert err.http_error == core.HttpError(status)
    assert err.http_error is not None and err.http_error.status == status
    assert "resource_metadata" in (err.http_error.www_authenticate or "")
    assert h.machine.next_deadline() is None


def test_auth_refusal_later_fails_only_that_call() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    t = h.call("x")
    h.respond(h.request("tools/call"), 401, headers=(("www-authenticate", "Bearer"),))
    err = h.error(t)
    assert isinstance(err, core.HttpError) and err.status == 401
    assert err.www_authenticate == "Bearer" and h.machine.state == "ready"


@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_at_connect_are_retried_honouring_retry_after(status: int) -> None:
    h = HttpHarness(reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("server/discover"), status, headers=(("Retry-After", "10"),))
    retry_in = h.machine.status(h.now).retry_in
    assert retry_in is not None and retry_in >= 10
    assert f"HTTP {status}" in str(h.machine.status(h.now).last_error)
    h.take()
    h.fire_due()
    assert h.request("server/discover")


def test_a_call_answered_with_an_http_error_keeps_its_status() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    t = h.call("x")
    h.respond(h.request("tools/call"), 502, b"<html>bad gateway</html>")
    err = h.error(t)
    assert isinstance(err, core.HttpError) and err.status == 502
    assert "bad gateway" not in str(err)


def test_session_expiry_reinitializes_in_place_and_queued_work_goes_out_on_it() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy("old-session")
    t1 = h.call("first")
    first = h.request("tools/call")
    h.take()
    h.respond(first, 404)
    err = h.error(t1)
    assert isinstance(err, core.SessionRejected)
    init = h.request("initialize")
    assert h.header(init, "Mcp-Session-Id") is None
    t2 = h.call("second")  # arrives while re-initializing: waits, is not refused
    assert t2 not in h.replies and h.machine.queued == 1
    h.result_for(
        init,
        {"protocolVersion": "2025-11-25", "capabilities": {}},
        headers=(("Mcp-Session-Id", "new-session"),),
    )
    assert h.machine.queued == 1  # still: the new session is ready once initialized is taken
    h.respond(h.request("notifications/initialized"), 202)
    assert h.machine.queued == 1  # and its listening GET answered
    h.sse(h.request(http="GET"), end=False)
    second = h.request("tools/call")
    assert h.body(second)["params"]["name"] == "second"
    assert h.header(second, "Mcp-Session-Id") == "new-session"
    h.result_for(second, TEXT_RESULT)
    assert h.result(t2).text == "hi"


def test_a_404_without_a_session_is_just_an_error() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy(session=None)
    t = h.call("x")
    h.respond(h.request("tools/call"), 404)
    assert isinstance(h.error(t), core.HttpError)
    assert not [r for r in h.requests() if r.body and h.body(r).get("method") == "initialize"]


def test_a_session_404_during_a_modern_error_body_still_reinitializes() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    t = h.call("x")
    h.respond(
        h.request("tools/call"),
        404,
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": "Session not found"}},
    )
    assert isinstance(h.error(t), core.SessionRejected)


@pytest.mark.parametrize(("status", "body"), [(200, b""), (202, None), (200, b"  ")])
def test_an_empty_answer_to_a_request_fails_it_at_once(status: int, body: bytes | None) -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    t = h.call("x")
    h.respond(h.request("tools/call"), status, body)
    err = h.error(t)
    assert isinstance(err, core.InvalidResponse) and f"HTTP {status}" in str(err)


def test_an_oversized_body_is_refused_while_streaming() -> None:
    h = HttpHarness(era="legacy", max_message_bytes=1000)
    h.connect_http_legacy()
    t = h.call("x")
    call = h.request("tools/call")
    h.feed(core.HttpResponseStarted(now=0.0, stream=call.stream, status=200, headers=()))
    h.take()
    h.feed(core.HttpBodyReceived(now=0.0, stream=call.stream, data=b"x" * 1001))
    assert isinstance(h.error(t), core.MessageTooLarge)
    assert core.AbortHttp(stream=call.stream) in h.actions
    h.feed(core.HttpBodyReceived(now=0.0, stream=call.stream, data=b"x"))  # late: ignored
    h.feed(core.HttpResponseEnded(now=0.0, stream=call.stream))


def test_an_oversized_sse_event_is_refused() -> None:
    h = HttpHarness(era="legacy", max_message_bytes=1000)
    h.connect_http_legacy()
    t = h.call("x")
    h.sse(h.request("tools/call"), b"data: " + b"y" * 2000 + b"\n\n", end=False)
    assert isinstance(h.error(t), core.MessageTooLarge)


def test_a_dropped_sse_answer_is_resumed_with_last_event_id_after_retry() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    t = h.call("slow")
    call = h.request("tools/call")
    request_id = h.body(call)["id"]
    h.take()
    h.feed(core.HttpResponseStarted(now=0.0, stream=call.stream, status=200, headers=SSE))
    h.feed(
        core.HttpBodyReceived(now=0.0, stream=call.stream, data=b"id: ev-7\nretry: 500\ndata:\n\n")
    )
    h.feed(core.HttpFailed(now=0.0, stream=call.stream, reason="RemoteProtocolError"))
    assert h.requests() == [] and h.machine.next_deadline() == pytest.approx(0.5)
    h.advance(0.5)
    resume = h.request(http="GET")
    assert h.header(resume, "Last-Event-ID") == "ev-7"
    assert h.header(resume, "Mcp-Session-Id") == "sess-1"
    h.sse(
        resume,
        sse_message({"jsonrpc": "2.0", "id": request_id, "result": TEXT_RESULT}, "ev-8"),
    )
    assert h.result(t).text == "hi"


def test_resumption_gives_up_after_three_attempts() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    t = h.call("slow")
    stream = h.request("tools/call")
    for _ in range(4):
        h.take()
        h.sse(stream, b"id: e\ndata:\n\n")
        if t in h.replies:
            break
        h.fire_due()
        stream = h.request(http="GET")
    err = h.error(t)
    assert isinstance(err, core.InvalidResponse) and "SSE stream ended" in str(err)


def test_a_resume_for_an_answered_request_is_dropped() -> None:
    h = HttpHarness(era="legacy", call_timeout=0.1)
    h.connect_http_legacy()
    t = h.call("slow")
    h.sse(h.request("tools/call"), b"id: e\nretry: 1000\ndata:\n\n")
    h.take()
    assert h.machine.next_deadline() == pytest.approx(0.1)  # the call's, before the resume's
    h.advance(0.1)
    assert isinstance(h.error(t), core.RequestTimeout)
    h.take()
    h.advance(1.0)
    assert [r for r in h.requests() if r.method == "GET"] == []


def test_connection_failures() -> None:
    h = HttpHarness(era="legacy")
    h.feed(core.Connect(now=0.0))
    h.feed(core.HttpFailed(now=0.0, stream=h.request("initialize").stream, reason="ConnectError"))
    assert "ConnectError" in str(h.machine.status(0.0).last_error)
    assert h.machine.status(0.0).retry_in is not None
    h.take()
    h.fire_due()
    init = h.request("initialize")
    h.result_for(init, {"protocolVersion": "2025-11-25", "capabilities": {}})
    note = h.request("notifications/initialized")
    h.feed(core.HttpFailed(now=h.now, stream=note.stream, reason="ReadError"))  # goes on
    assert h.machine.state == "ready"
    t = h.call("x")
    h.feed(core.HttpFailed(now=h.now, stream=h.request("tools/call").stream, reason="ReadError"))
    err = h.error(t)
    assert isinstance(err, core.InvalidResponse) and "ReadError" in str(err)
    assert h.machine.state == "ready"


def test_http_sse_fallback_after_initialize_is_refused() -> None:
    cache: dict[str, str] = {}
    h = HttpHarness(era_cache=cache, headers={"Authorization": "Bearer t"})
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.respond(h.request("server/discover"), 404)
    first_init = h.request("initialize")
    h.take()
    h.respond(first_init, 405)
    get = h.request(http="GET")
    assert h.header(get, "Accept") == "text/event-stream"
    assert h.header(get, "Authorization") == "Bearer t"
    h.take()
    h.sse(get, b"event: endpoint\ndata: /messages?session=abc\n\n", end=False)
    init = h.request("initialize")
    assert init.url == "https://mcp.example.com/messages?session=abc"
    assert h.header(init, "MCP-Protocol-Version") is None
    h.respond(init, 202)  # accepted; the answer comes on the stream
    h.take()
    h.feed(core.HttpBodyReceived(now=0.0, stream=get.stream, data=b"event: endpoint\ndata: /x\n\n"))
    assert h.requests() == []  # a second endpoint event changes nothing
    assert waiter not in h.replies
    answer = {
        "jsonrpc": "2.0",
        "id": h.body(init)["id"],
        "result": {"protocolVersion": "2024-11-05", "capabilities": {}},
    }
    h.feed(core.HttpBodyReceived(now=0.0, stream=get.stream, data=sse_message(answer)))
    h.respond(h.request("notifications/initialized"), 202)
    status = h.result(waiter)
    assert (status.transport, status.protocol_version) == ("sse", "2024-11-05")
    assert cache and list(cache.values()) == ["sse"]
    note = h.request("notifications/initialized")
    assert note.url.endswith("/messages?session=abc")
    h.respond(note, 202)
    h.take()
    t = h.call("echo")
    call = h.request("tools/call")
    assert h.header(call, "MCP-Protocol-Version") is None
    h.respond(call, 202, b"Accepted")  # what the official SDK's server writes
    assert not [log for log in h.of(core.Log) if log.level == "WARNING"]
    result = {"jsonrpc": "2.0", "id": h.body(call)["id"], "result": TEXT_RESULT}
    h.feed(core.HttpBodyReceived(now=0.0, stream=get.stream, data=sse_message(result)))
    assert h.result(t).text == "hi"
    # the stream ends: the connection is lost, and the next attempt goes straight to GET
    t2 = h.call("echo")
    h.feed(core.HttpResponseEnded(now=0.0, stream=get.stream))
    lost = h.error(t2)
    assert isinstance(lost, core.ConnectFailed) and isinstance(lost.cause, core.InvalidResponse)
    h.take()
    h.fire_due()
    again = h.request(http="GET")
    assert [r.method for r in h.requests()] == ["GET"]
    h.sse(again, b"event: endpoint\ndata: https://evil.example.net/steal\n\n", end=False)
    err = h.machine.status(h.now).last_error or ""
    assert "another origin" in err and h.machine.next_deadline() is None
    refused = h.error(h.await_ready())
    assert isinstance(refused, core.ConnectFailed) and refused.permanent
    assert isinstance(refused.cause, core.InvalidResponse)


@pytest.mark.parametrize(("status", "permanent"), [(401, True), (500, False)])
def test_http_sse_get_refused(status: int, permanent: bool) -> None:
    h = HttpHarness(era="legacy")
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("initialize"), 404)
    h.respond(h.request(http="GET"), status)
    retry = h.machine.status(h.now).retry_in
    assert (retry is None) == permanent
    assert f"HTTP {status}" in (h.machine.status(h.now).last_error or "")


def test_initialize_refused_with_another_status() -> None:
    h = HttpHarness(era="legacy", fail_fast=True)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 409)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and "HTTP 409" in str(err)
    assert err.http_error is not None and err.http_error.status == 409


def initialized(h: HttpHarness, **kw: Any) -> tuple[int, core.StartHttp]:
    """Connect (legacy, session ``s``) up to the initialized POST; a waiter for readiness."""
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready()
    init = h.request("initialize")
    result = {"protocolVersion": "2025-11-25", "capabilities": {}}
    h.result_for(init, result, headers=(("Mcp-Session-Id", "s"),), **kw)
    return waiter, h.request("notifications/initialized")


def test_ready_waits_for_the_listening_gets_head_for_at_most_a_second() -> None:
    # A server may (wrongly) answer a pending call on any GET (the conformance sse-retry
    # mock): the listening GET must reach it before the first call. One that holds the GET's
    # head delays readiness by 1 s, not until init_timeout.
    h = HttpHarness(era="legacy")
    waiter, note = initialized(h)
    h.respond(note, 202)
    listen = h.request(http="GET")
    assert waiter not in h.replies and h.machine.next_deadline() == pytest.approx(1.0)
    assert isinstance(h.error(h.call("early")), core.NotReady)
    h.take()
    h.fire_due()
    assert h.now == pytest.approx(1.0) and h.result(waiter).state == "ready"
    assert "listening GET" in h.of(core.Log)[0].message
    assert not h.of(core.AbortHttp)  # the GET stays open: what comes on it is read
    h.take()
    h.sse(listen, sse_message({"jsonrpc": "2.0", "id": 9, "method": "ping"}), end=False)
    assert h.body(h.request()) == {"jsonrpc": "2.0", "id": 9, "result": {}}
    assert h.machine.next_deadline() != pytest.approx(1.0)


def test_the_wait_for_the_listening_get_never_fails_the_connect() -> None:
    h = HttpHarness(era="legacy", init_timeout=0.5)
    waiter, note = initialized(h)
    h.advance(0.2)
    h.respond(note, 202)
    assert h.machine.next_deadline() == pytest.approx(0.5)  # the connect's deadline, not 1.2
    h.fire_due()
    assert h.result(waiter).state == "ready" and h.machine.status(h.now).last_error is None


def test_a_failed_initialized_post_or_listening_get_goes_on() -> None:
    h = HttpHarness(era="legacy")
    waiter, note = initialized(h)
    h.feed(core.HttpFailed(now=h.now, stream=note.stream, reason="ReadError"))
    listen = h.request(http="GET")  # a session id: the GET goes out all the same
    assert waiter not in h.replies
    h.feed(core.HttpFailed(now=h.now, stream=listen.stream, reason="ConnectError"))
    assert h.result(waiter).state == "ready"


def test_close_while_waiting_for_the_listening_get() -> None:
    h = HttpHarness(era="legacy")
    waiter, note = initialized(h)
    h.respond(note, 202)
    listen = h.request(http="GET")
    h.take()
    stop = h.close()
    assert core.AbortHttp(stream=listen.stream) in h.actions
    assert h.machine.next_deadline() == pytest.approx(2.0)  # the DELETE's shutdown_grace
    h.respond(h.request(http="DELETE"), 200)
    assert h.result(stop) is None and isinstance(h.error(waiter), core.McpError)
    assert h.machine.state == "closed"


def test_timeout_on_legacy_http_cancels_by_notification_and_closes_the_stream() -> None:
    h = HttpHarness(era="legacy", call_timeout=1.0)
    h.connect_http_legacy()
    t = h.call("hang")
    call = h.request("tools/call")
    h.take()
    h.advance(1.0)
    assert isinstance(h.error(t), core.RequestTimeout)
    assert core.AbortHttp(stream=call.stream) in h.actions
    cancel = h.request("notifications/cancelled")
    assert h.body(cancel)["params"]["requestId"] == h.body(call)["id"]


def test_close_deletes_the_session_and_waits_for_it() -> None:
    h = HttpHarness(era="legacy")
    h.connect_http_legacy()
    h.call("x")
    call = h.request("tools/call")
    h.take()
    stop = h.close()
    assert core.AbortHttp(stream=call.stream) in h.actions
    delete = h.request(http="DELETE")
    assert h.header(delete, "Mcp-Session-Id") == "sess-1"
    assert stop not in h.replies
    h.respond(delete, 405)  # the server may refuse: fine
    assert h.result(stop) is None


@pytest.mark.parametrize("outcome", ["fails", "stalls"])
def test_close_does_not_wait_forever_for_the_delete(outcome: str) -> None:
    h = HttpHarness(era="legacy", shutdown_grace=1.0)
    h.connect_http_legacy()
    stop = h.close()
    delete = h.request(http="DELETE")
    if outcome == "fails":
        h.feed(core.HttpFailed(now=0.0, stream=delete.stream, reason="ConnectError"))
    else:
        assert h.machine.next_deadline() == h.now + 1.0  # shutdown_grace for the DELETE
        h.fire_due()
        assert core.AbortHttp(stream=delete.stream) in h.actions
    assert h.result(stop) is None


def test_close_without_a_session_or_in_the_modern_era_sends_no_delete() -> None:
    for h in (HttpHarness(era="legacy"), HttpHarness()):
        if h.spec.era == "legacy":
            h.connect_http_legacy(session=None)
        else:
            h.connect_http_modern()
        stop = h.close()
        assert h.result(stop) is None
        assert not [r for r in h.requests() if r.method == "DELETE"]


def test_a_recording_of_http_replays_identically(tmp_path) -> None:
    path = tmp_path / "http.jsonl"
    lines: list[str] = []
    h = HttpHarness(era="legacy", headers={"Authorization": "Bearer s3cr3t"})
    recorder = Recorder(h.spec, lines.append)
    original = h.feed

    def feed(event: core.Event) -> list[core.Action]:
        recorder.record(event)
        return original(event)

    h.feed = feed  # type: ignore[method-assign]
    h.connect_http_legacy("secret-session")
    h.call("echo")
    h.result_for(h.request("tools/call"), TEXT_RESULT)
    path.write_text("".join(lines))
    text = path.read_text()
    assert "s3cr3t" not in text and "secret-session" not in text
    first = [encode_action(a) for a in replay(str(path))]
    assert first == [encode_action(a) for a in replay(str(path))]
    assert any(a["action"] == "Reply" for a in first)


def test_odd_events_and_headers() -> None:
    h = HttpHarness(era="legacy", max_message_bytes=100)
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("initialize"), 503, headers=(("Retry-After", "Wed, 21 Oct 2099"),))
    retry_in = h.machine.status(h.now).retry_in
    assert retry_in is not None and retry_in < 2  # an HTTP date is not honoured
    h.fire_due()
    h.result_for(
        h.request("initialize"),
        {"protocolVersion": "2025-11-25", "capabilities": {}},
        headers=(("Mcp-Session-Id", "s"),),
    )
    h.respond(h.request("notifications/initialized"), 202)
    listen = h.request(http="GET")
    h.take()
    h.sse(listen, b"data: " + b"z" * 200 + b"\n\n", end=False)  # oversized, no request
    assert h.actions == [core.AbortHttp(stream=listen.stream)]
    h.feed(core.HttpFailed(now=0.0, stream=listen.stream, reason="late"))  # aborted: ignored
    with pytest.raises(core.UnexpectedEvent, match="stream 999 was never started"):
        h.feed(core.HttpResponseStarted(now=0.0, stream=999, status=200))  # a driver bug
    assert h.machine.state == "ready"


def test_a_modern_only_server_refusing_initialize_is_modern_after_all() -> None:
    h = HttpHarness(init_timeout=10.0)
    h.feed(core.Connect(now=0.0))
    probe = h.request("server/discover")
    assert h.machine.next_deadline() == 5.0  # HTTP waits half the connect budget for it
    h.take()
    h.advance(5.0)  # the probe's answer is late: its stream is closed
    assert core.AbortHttp(stream=probe.stream) in h.actions
    init = h.request("initialize")
    h.respond(
        init,
        400,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32022, "message": "v", "data": {"supported": ["2026-07-28"]}},
        },
    )
    assert h.machine.status(h.now).era == "modern" and h.machine.state == "ready"
    h.respond(probe, 200, {"jsonrpc": "2.0", "id": 1, "result": {}})  # aborted: ignored
    assert h.machine.state == "ready"


# --- 2026-07-28: x-mcp-header, and one retry after -32022 -------------------------------------

REGION_TOOL = {
    "name": "deploy",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
            "note": {"type": "string"},
        },
    },
}
BAD_TOOL = {
    "name": "broken",
    "inputSchema": {
        "type": "object",
        "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
    },
}


def _listed(h: HttpHarness, tools: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The names listed, and the log lines written meanwhile."""
    t = h.ticket()
    h.feed(core.ListTools(now=h.now, ticket=t))
    h.result_for(h.request("tools/list"), {"tools": tools})
    names = [tool.name for tool in h.result(t)]
    logs = [log.message for log in h.of(core.Log)]
    h.take()
    return names, logs


def test_modern_http_mirrors_annotated_arguments_and_drops_invalid_tools() -> None:
    h = HttpHarness()
    h.connect_http_modern()
    names, logs = _listed(h, [REGION_TOOL, BAD_TOOL, {"name": "plain", "inputSchema": {}}])
    assert names == ["deploy", "plain"]
    assert any("left out tool 'broken'" in line for line in logs)
    h.call("deploy", {"region": "eu west\n", "dry": False, "note": "x"})
    call = h.request("tools/call")
    assert (
        h.header(call, "Mcp-Param-Region")
        == "=?base64?" + base64.b64encode(b"eu west\n").decode() + "?="
    )
    assert h.header(call, "Mcp-Param-Dry") == "false"
    assert h.header(call, "Mcp-Param-Note") is None
    h.take()
    h.call("deploy", {"region": None})  # null: "MUST omit the header"
    assert not [k for k, _ in h.request("tools/call").headers if k.startswith("Mcp-Param-")]
    h.take()
    h.call("plain", {"region": "eu"})  # a tool without annotations
    assert not [k for k, _ in h.request("tools/call").headers if k.startswith("Mcp-Param-")]


def test_legacy_http_ignores_x_mcp_header() -> None:
    h = HttpHarness()
    h.connect_http_legacy()
    assert _listed(h, [REGION_TOOL, BAD_TOOL])[0] == ["deploy", "broken"]
    h.call("deploy", {"region": "eu"})
    assert h.header(h.request("tools/call"), "Mcp-Param-Region") is None


def test_a_32022_naming_our_version_is_retried_once_then_failed() -> None:
    h = HttpHarness()
    h.connect_http_modern()
    t = h.call("echo", {"x": 1})
    first = h.request("tools/call")
    unsupported = {
        "code": -32022,
        "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"},
    }
    h.take()
    h.respond(first, 400, {"jsonrpc": "2.0", "id": h.body(first)["id"], "error": unsupported})
    again = h.request("tools/call")
    assert h.body(again)["id"] != h.body(first)["id"]
    assert h.body(again)["params"]["arguments"] == {"x": 1}
    assert t not in h.replies
    h.respond(again, 400, {"jsonrpc": "2.0", "id": h.body(again)["id"], "error": unsupported})
    assert isinstance(h.replies[t].error, core.JsonRpcError)
    assert h.replies[t].error.code == -32022


def test_http_sse_an_answer_too_large_fails_the_stream_and_its_calls_at_once() -> None:
    h = HttpHarness(era="legacy", max_message_bytes=4096)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.respond(h.request("initialize"), 405)  # not Streamable HTTP: the HTTP+SSE GET
    get = h.request(http="GET")
    h.sse(get, b"event: endpoint\ndata: /messages?session=abc\n\n", end=False)
    init = h.request("initialize")
    h.respond(init, 202)
    answer = {
        "jsonrpc": "2.0",
        "id": h.body(init)["id"],
        "result": {"protocolVersion": "2024-11-05", "capabilities": {}},
    }
    h.feed(core.HttpBodyReceived(now=0.0, stream=get.stream, data=sse_message(answer)))
    h.respond(h.request("notifications/initialized"), 202)
    assert h.result(waiter).transport == "sse"
    h.take()
    first, second = h.call("echo"), h.call("echo")
    for call in [r for r in h.requests() if r.body and b"tools/call" in r.body]:
        h.respond(call, 202)
    big = {"jsonrpc": "2.0", "id": 99, "result": {"pad": "x" * 8000}}
    h.feed(core.HttpBodyReceived(now=0.0, stream=get.stream, data=sse_message(big)))
    for ticket in (first, second):
        assert isinstance(h.error(ticket), core.MessageTooLarge)
    assert core.AbortHttp(stream=get.stream) in h.actions
    assert h.machine.state != "ready" and h.machine.next_deadline() is not None  # retried
