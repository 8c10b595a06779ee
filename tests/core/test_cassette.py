"""Cassette: what a recording answers, request by request, for a replaying client.

Built from the stored recordings of real servers, and from sessions recorded here through the
harness (HTTP with JSON and SSE answers, progress, oversized events, a session the machine
cannot follow), all through the public API: ``Cassette.from_lines`` and ``answer``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_core as core
from mcp_core.replay import Cassette, Recorder, encode_event

from .harness import Harness, HttpHarness

RECORDINGS = Path(__file__).parent.parent / "recordings"


def _cassette(path: Path) -> Cassette:
    with path.open(encoding="utf-8") as file:
        return Cassette.from_lines(file)


def _request(request_id: object, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _recorded(harness: Harness, script: Callable[[], None]) -> list[str]:
    """The lines of a recording of what ``script`` feeds the harness's machine."""
    lines: list[str] = []
    recorder = Recorder(harness.spec, lines.append)
    feed = harness.feed

    def recording(event: core.Event) -> list[core.Action]:
        recorder.record(event)
        return feed(event)

    harness.feed = recording  # type: ignore[method-assign]
    script()
    return lines


def test_a_recorded_request_gets_the_recorded_answer_with_its_own_id() -> None:
    cassette = _cassette(RECORDINGS / "everything_stdio.jsonl")
    assert cassette.spec.name == "everything_stdio"
    (answer,) = cassette.answer(
        _request("x-1", "tools/call", {"name": "get-sum", "arguments": {"a": 1, "b": 2}})
    )
    assert answer == {
        "jsonrpc": "2.0",
        "id": "x-1",
        "result": {"content": [{"type": "text", "text": "The sum of 1 and 2 is 3."}]},
    }
    # The params' _meta is not part of what a request is; the key order neither.
    (again,) = cassette.answer(
        _request(9, "tools/call", {"arguments": {"b": 2, "a": 1}, "name": "get-sum", "_meta": {}})
    )
    assert again["id"] == 9 and again["result"] == answer["result"]


def test_the_handshake_is_answered_whatever_the_client_declares() -> None:
    cassette = _cassette(RECORDINGS / "everything_stdio.jsonl")
    (probe,) = cassette.answer(_request(1, "server/discover", {"_meta": {"x": 1}}))
    assert probe["error"]["code"] == -32601  # a legacy server: the client falls back
    (init,) = cassette.answer(_request(2, "initialize", {"capabilities": {"roots": {}}}))
    assert init["result"]["serverInfo"]["name"] == "mcp-servers/everything"


def test_progress_is_replayed_with_the_new_token_and_only_when_asked() -> None:
    cassette = _cassette(RECORDINGS / "everything_stdio.jsonl")
    params = {"name": "trigger-long-running-operation", "arguments": {"duration": 0.2, "steps": 2}}
    with_token = cassette.answer(
        _request(3, "tools/call", {**params, "_meta": {"progressToken": "t"}})
    )
    assert [m.get("method") for m in with_token] == [
        "notifications/progress",
        "notifications/progress",
        None,
    ]
    assert [m["params"] for m in with_token[:2]] == [
        {"progress": 1, "total": 2, "progressToken": "t"},
        {"progress": 2, "total": 2, "progressToken": "t"},
    ]
    assert with_token[2]["id"] == 3
    without = cassette.answer(_request(4, "tools/call", params))
    assert [m["id"] for m in without] == [4]


def test_what_the_recording_lacks_is_a_json_rpc_error_that_says_so() -> None:
    cassette = _cassette(RECORDINGS / "everything_stdio.jsonl")
    (other,) = cassette.answer(
        _request(5, "tools/call", {"name": "get-sum", "arguments": {"a": 7, "b": 2}})
    )
    assert other["error"]["code"] == -32602
    assert other["error"]["message"] == (
        'the recording holds no tools/call with these params: {"arguments":{"a":7,"b":2},'
        '"name":"get-sum"}; record the session again to add it'
    )
    (unknown,) = cassette.answer(_request(6, "prompts/list", {}))
    assert unknown["error"] == {
        "code": -32601,
        "message": "the recording holds no prompts/list request",
    }
    (ping,) = cassette.answer(_request(7, "ping"))
    assert ping == {"jsonrpc": "2.0", "id": 7, "result": {}}
    # What is no request gets nothing: a notification, a response to the server.
    assert cassette.answer({"jsonrpc": "2.0", "method": "notifications/initialized"}) == []
    assert cassette.answer({"jsonrpc": "2.0", "id": 3, "result": {}}) == []


def test_repeated_requests_are_answered_in_order_then_the_last_again() -> None:
    h = Harness(era="legacy")

    def script() -> None:
        h.connect_legacy()
        for text in ("one", "two"):
            ticket = h.call("echo", {"text": "x"})
            h.answer(
                h.last_request("tools/call")["id"], {"content": [{"type": "text", "text": text}]}
            )
            assert h.result(ticket).text == text

    cassette = Cassette.from_lines(_recorded(h, script))
    call = _request(1, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
    texts = [cassette.answer(call)[0]["result"]["content"][0]["text"] for _ in range(3)]
    assert texts == ["one", "two", "two"]


def test_an_http_session_is_read_from_json_and_sse_bodies() -> None:
    h = HttpHarness(era="legacy", max_message_bytes=1024)

    def script() -> None:
        h.connect_http_legacy(session=None)
        # An answer as an SSE stream, with progress for it, then an event too large to keep.
        ticket = h.call("slow", {}, progress=True)
        post = h.request("tools/call")
        token = h.body(post)["params"]["_meta"]["progressToken"]
        note = {"jsonrpc": "2.0", "method": "notifications/progress"}
        progress = {**note, "params": {"progressToken": token, "progress": 1}}
        huge = {**note, "params": {"progressToken": token, "message": "x" * 2000}}
        answer = {"jsonrpc": "2.0", "id": h.body(post)["id"], "result": {"content": []}}
        h.sse(post, *(f"data: {json.dumps(m)}\n\n".encode() for m in (progress, answer, huge)))
        assert h.result(ticket).content == ()
        # An answer as a JSON body.
        ticket = h.call("fast", {})
        h.result_for(h.request("tools/call"), {"content": [{"type": "text", "text": "ok"}]})
        assert h.result(ticket).text == "ok"

    cassette = Cassette.from_lines(_recorded(h, script))
    slow = cassette.answer(
        _request(1, "tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": 8}})
    )
    assert slow == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progress": 1, "progressToken": 8},
        },
        {"jsonrpc": "2.0", "id": 1, "result": {"content": []}},
    ]
    (fast,) = cassette.answer(_request(2, "tools/call", {"name": "fast", "arguments": {}}))
    assert fast["result"]["content"][0]["text"] == "ok"
    (init,) = cassette.answer(_request(3, "initialize", {}))
    assert init["result"]["serverInfo"] == {"name": "h"}


def test_what_the_server_sent_besides_answers_is_left_out() -> None:
    h = Harness(era="legacy")

    def script() -> None:
        h.connect_legacy()
        ticket = h.call("echo", {})
        request_id = h.last_request("tools/call")["id"]
        # Not kept: a line that is no JSON object, a server request, a log notification,
        # progress without params or for no request of ours, an answer to an unknown id, an
        # answer with neither result nor error; then the answer, split across two reads.
        h.stdout(b"[1, 2]\n")
        h.stdout(b"not json\n")
        h.stdout({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
        h.stdout({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
        h.stdout({"jsonrpc": "2.0", "method": "notifications/progress"})
        h.stdout(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": "nobody", "progress": 1},
            }
        )
        h.stdout({"jsonrpc": "2.0", "id": 999, "result": {}})
        h.stdout({"jsonrpc": "2.0", "id": request_id})
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}})
        h.stdout(line[:10].encode())
        h.stdout(line[10:].encode() + b"\n")
        assert h.result(ticket).content == ()
        # A call never answered: it timed out.
        hung = h.call("hang", {}, timeout=1)
        h.advance(1)
        assert isinstance(h.error(hung), core.RequestTimeout)

    cassette = Cassette.from_lines(_recorded(h, script))
    (hang,) = cassette.answer(_request(3, "tools/call", {"name": "hang", "arguments": {}}))
    assert hang["error"]["code"] == -32602
    answers = cassette.answer(_request(1, "tools/call", {"name": "echo", "arguments": {}}))
    assert answers == [{"jsonrpc": "2.0", "id": 1, "result": {"content": []}}]
    assert cassette.answer(_request(2, "ping"))[0]["result"] == {}  # not the server's ping


def test_a_recording_is_read_up_to_where_the_machine_cannot_follow() -> None:
    h = Harness(era="legacy")
    lines = _recorded(h, h.connect_legacy)
    # An event no machine takes at that point (a driver report for a slot never spawned
    # again): replaying stops there, what came before is kept.
    lines.append(
        json.dumps(encode_event(core.ProcessSpawned(now=9, slot=0, generation=7, pid=1))) + "\n"
    )
    lines.append(json.dumps(encode_event(core.TimerFired(now=10))) + "\n")
    cassette = Cassette.from_lines(lines)
    (init,) = cassette.answer(_request(1, "initialize", {}))
    assert init["result"]["serverInfo"] == {"name": "fake", "version": "1"}
