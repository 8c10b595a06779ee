"""An SSE line that never ends, on a POST's answer and on the listening GET, with a fake clock:
the transport aborts the stream once the line is over ``max_message_bytes`` (the decoder says
so before the line ends), the caller of a POST gets ``MessageTooLarge`` and a listening GET is
reopened with backoff. Without it, a peer sending ``data: xxxx...`` forever, no newline, would
be read forever. No socket anywhere (tests/drivers/test_endless_sse.py runs it against a real
server)."""

from __future__ import annotations

import pytest

import mcp_core as core
from tests.core.harness import TEXT_RESULT, HttpHarness

LIMIT = 1000
PIECE = 100  # bytes per read of the endless line


def feed_until_aborted(h: HttpHarness, stream: int, start: bytes, endless: bytes) -> int:
    """Feed ``start``, then ``endless`` pieces until the stream is aborted; the bytes fed."""
    fed = 0
    piece = start
    for _ in range(1000):  # 100 kB at most: the abort must come long before
        h.feed(core.HttpBodyReceived(now=h.now, stream=stream, data=piece))
        fed += len(piece)
        if core.AbortHttp(stream=stream) in h.actions:
            return fed
        piece = endless * PIECE
    raise AssertionError(f"stream {stream} still read after {fed} bytes")


@pytest.mark.parametrize("line", [b"data: ", b"data:", b": ", b""], ids=repr)
def test_an_endless_line_on_a_posts_answer_fails_the_call(line: bytes) -> None:
    h = HttpHarness(era="legacy", max_message_bytes=LIMIT)
    h.connect_http_legacy()
    t = h.call("x")
    call = h.request("tools/call")
    h.sse(call, b"id: 1\ndata:\n\n", end=False)  # a priming event, then the endless line
    fed = feed_until_aborted(h, call.stream, line, b"x")
    # The line was over the limit by the one byte that showed it (WHATWG data plus "data: ").
    assert fed <= len(b"id: 1\ndata:\n\n") + LIMIT + len(b"data: ") + 1 + PIECE
    error = h.error(t)
    assert isinstance(error, core.MessageTooLarge)
    assert LIMIT < error.size <= LIMIT + len(b"data: ") + 1
    assert h.reply_count[t] == 1
    h.take()
    h.feed(core.HttpBodyReceived(now=h.now, stream=call.stream, data=b"x" * PIECE))  # late
    h.feed(core.HttpFailed(now=h.now, stream=call.stream, reason="late"))
    assert h.actions == [] and h.machine.state == "ready"


def test_an_endless_line_on_the_listening_get_reopens_it_after_the_event() -> None:
    h = HttpHarness(era="legacy", max_message_bytes=LIMIT, reconnect=1.0)
    h.connect_http_legacy()
    listen = h.listening
    assert listen is not None
    h.feed(core.HttpBodyReceived(now=h.now, stream=listen.stream, data=b"id: L-1\ndata:\n\n"))
    h.take()
    fed = feed_until_aborted(h, listen.stream, b"id: L-2\ndata: ", b"z")
    assert fed <= len(b"id: L-2\n") + LIMIT + len(b"data: ") + 1 + PIECE
    assert h.of(core.StartHttp) == []  # reopened only after the backoff
    assert h.machine.state == "ready"
    h.take()
    h.feed(core.HttpBodyReceived(now=h.now, stream=listen.stream, data=b"z" * PIECE))  # late
    assert h.actions == []
    h.fire_due()
    again = h.request(http="GET")
    # The oversized event counts as dispatched: the reopened GET does not ask for it again.
    assert h.header(again, "Last-Event-ID") == "L-2"
    assert any("an event of" in log.message for log in h.of(core.Log))
    h.take()
    h.sse(again, end=False)
    t = h.call("echo")  # the session works all along
    h.result_for(h.request("tools/call"), TEXT_RESULT)
    assert h.result(t).text == "hi"
