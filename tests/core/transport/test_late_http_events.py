"""The one filter for late HTTP events: once the machine asked for ``AbortHttp`` (or the
response ended), whatever a driver still feeds for that stream changes nothing. The drivers
do not filter such events themselves (an executor that learns of the abort late, or reads the
last bytes just before it, feeds them as they come): this is the guarantee they rely on."""

from __future__ import annotations

import mcp_core as core
from tests.core.harness import TEXT_RESULT, HttpHarness


def _late_events(stream: int, now: float) -> list[core.Event]:
    body = b'{"jsonrpc": "2.0", "id": 2, "result": {"content": []}}'
    return [
        core.HttpResponseStarted(
            now=now, stream=stream, status=200, headers=(("Content-Type", "application/json"),)
        ),
        core.HttpBodyReceived(now=now, stream=stream, data=body),
        core.HttpResponseEnded(now=now, stream=stream),
        core.HttpFailed(now=now, stream=stream, reason="ReadError: late"),
    ]


def test_every_kind_of_late_event_after_abort_http_is_harmless() -> None:
    h = HttpHarness()
    h.connect_http_modern()
    h.take()
    ticket = h.call("echo", {"x": 1})
    call = h.request("tools/call")
    h.take()
    h.feed(core.CancelCall(now=h.now, ticket=ticket))
    assert h.actions == [core.AbortHttp(stream=call.stream)]
    before = h.machine.status(h.now)
    for event in _late_events(call.stream, h.now):
        assert h.feed(event) == []
    assert h.machine.status(h.now) == before
    assert ticket not in h.replies
    # The session goes on as if nothing came.
    again = h.call("echo", {"x": 2})
    h.result_for(h.request("tools/call"), TEXT_RESULT)
    assert h.result(again).content


def test_events_after_the_end_of_a_response_are_harmless() -> None:
    h = HttpHarness()
    h.connect_http_modern()
    h.take()
    ticket = h.call("echo")
    call = h.request("tools/call")
    h.result_for(call, TEXT_RESULT)
    assert h.result(ticket).content
    h.take()
    for event in _late_events(call.stream, h.now):
        assert h.feed(event) == []
    assert h.machine.state == "ready"
