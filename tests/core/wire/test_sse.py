"""Server-Sent Events decoding: WHATWG parsing rules, MCP priming events, the size cap."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_core._wire.sse import SseDecoder, SseEvent, SseFrame, SseTooLarge


def ev(data: str, id: str | None = None, event: str = "message") -> SseEvent:
    return SseEvent(event=event, data=data, id=id)


def decode(chunks: list[bytes], cap: int = 64) -> tuple[SseDecoder, list[SseFrame]]:
    decoder = SseDecoder(cap)
    frames = [frame for chunk in chunks for frame in decoder.feed(chunk)]
    return decoder, frames + decoder.close()


# (chunks fed in order, frames expected, last_event_id and retry afterwards)
CASES: list[tuple[list[bytes], list[SseFrame], str | None, int | None]] = [
    ([b"data: a\n\n"], [ev("a")], None, None),
    ([b"data: a\r\n\r\n"], [ev("a")], None, None),  # CRLF
    ([b"data: a\r\r"], [ev("a")], None, None),  # CR
    ([b"data: a\r\n\rdata: b\n\r\n"], [ev("a"), ev("b")], None, None),  # mixed
    ([b"data: a\r", b"\n", b"\r", b"\n"], [ev("a")], None, None),  # CR | LF split: one line end
    ([b"data: a\r", b"", b"\ndata: b\r", b"\r"], [ev("a\nb")], None, None),  # empty piece kept CR
    ([b"data: a\r", b"\r"], [ev("a")], None, None),  # CR | CR: two line ends
    ([b"da", b"ta: a", b"\n", b"\n"], [ev("a")], None, None),
    ([b"data: a\n"], [], None, None),  # no blank line before EOF: discarded
    ([b"data: a\n\ndata: b"], [ev("a")], None, None),  # unterminated line at EOF: discarded
    ([b"data: a\ndata: b\ndata:\n\n"], [ev("a\nb\n")], None, None),  # multi-line data
    ([b"data\ndata\n\n"], [ev("\n")], None, None),  # field without colon: empty value
    ([b"data:a\n\n"], [ev("a")], None, None),  # no space after the colon
    ([b"data:  a \n\n"], [ev(" a ")], None, None),  # only one space is removed
    ([b"data: a:b\n\n"], [ev("a:b")], None, None),  # the first colon splits
    ([b"event: endpoint\ndata: /m\n\n"], [ev("/m", event="endpoint")], None, None),
    ([b"event\ndata: a\n\n"], [ev("a")], None, None),  # empty type -> "message"
    ([b"event: x\n\ndata: a\n\n"], [ev("a")], None, None),  # the type is reset per event
    ([b": keep-alive\n\n: ping\ndata: a\n:\n\n"], [ev("a")], None, None),  # comments
    ([b"foo: 1\nData: x\ndata: a\n\n"], [ev("a")], None, None),  # unknown fields ignored
    ([b"id: 7\ndata: a\n\ndata: b\n\n"], [ev("a", "7"), ev("b", "7")], "7", None),  # id persists
    ([b"id: 7\ndata: a\n\nid\ndata: b\n\n"], [ev("a", "7"), ev("b", "")], "", None),  # reset
    ([b"id: 7\n\nid: 8\0\ndata: a\n\n"], [ev("a", "7")], "7", None),  # NUL: ignored
    ([b"id: 1\ndata:\n\n"], [], "1", None),  # MCP 2025-11-25 priming event: id, empty data
    ([b"id: 1\n\n"], [], "1", None),  # id alone: no event, id learnt
    ([b"id: 1\ndata: a\n"], [], None, None),  # id of an event cut off at EOF: not learnt
    ([b"retry: 3000\n"], [], None, 3000),  # applies at once, no dispatch needed
    ([b"retry: 3000\nretry: 3s\nretry: -1\nretry:\nretry: 1e3\n\n"], [], None, 3000),
    ([b"retry: \xd9\xa3\n\n"], [], None, None),  # a non-ASCII digit
    ([b"retry: 1234567890123456789\nretry: 000000000000000005\n\n"], [], None, 5),
    ([b"\xef\xbb\xbfdata: a\n\n"], [ev("a")], None, None),  # BOM
    ([b"\xef", b"\xbb", b"\xbfdata: a\n\n"], [ev("a")], None, None),  # BOM split
    ([b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n"], [], None, None),  # second BOM: a field name
    ([b"\xef\xbb\xbf", b"\xef\xbb\xbfdata: a\n\n"], [], None, None),
    ([b"data: \xef\xbb\xbf\n\n"], [ev("\ufeff")], None, None),  # BOM inside: data
    ([b"\xef\xbbdata: a\n\ndata: b\n\n"], [ev("b")], None, None),  # half a BOM: a field name
    ([b"\xef"], [], None, None),
    ([b"data: \xe2\x98", b"\x83\n\n"], [ev("\u2603")], None, None),  # UTF-8 split
    ([b"data: \xe2\x98\ndata: \xff\n\n"], [ev("\ufffd\n\ufffd")], None, None),  # bad UTF-8
    ([b"event: \xff\ndata: a\n\n"], [ev("a", event="\ufffd")], None, None),
]


@pytest.mark.parametrize(("chunks", "frames", "last_event_id", "retry"), CASES)
def test_decode(
    chunks: list[bytes], frames: list[SseFrame], last_event_id: str | None, retry: int | None
) -> None:
    decoder, got = decode(chunks)
    assert got == frames
    assert decoder.last_event_id == last_event_id
    assert decoder.retry == retry
    assert decoder.buffered_bytes == 0


def test_byte_at_a_time() -> None:
    stream = b"\xef\xbb\xbfid: 1\r\ndata: \xe2\x98\x83\r\n\r\n: ka\revent: e\rdata: x\r\r"
    _, frames = decode([stream[i : i + 1] for i in range(len(stream))])
    assert frames == [ev("\u2603", "1"), ev("x", "1", event="e")]


def test_last_event_id_updates_at_dispatch() -> None:
    decoder = SseDecoder(64)
    assert decoder.feed(b"id: 1\ndata: a\n\nid: 2\ndata: b\n") == [ev("a", "1")]
    assert decoder.last_event_id == "1"  # event 2 is not complete: resume from 1
    assert decoder.feed(b"\n") == [ev("b", "2")]
    assert decoder.last_event_id == "2"


# Cap 10 data bytes: (chunks, frames); every case ends with a normal event to show recovery.
# An oversized event is reported as soon as its bytes show it: its size counts them up to the
# byte that did (a line's 17th byte: 10 + len("data: ") + 1, or the data byte over the cap).
CAP = 10
OVERSIZED: list[tuple[list[bytes], list[SseFrame]]] = [
    ([b"data: 0123456789\n\ndata: ok\n\n"], [ev("0123456789"), ev("ok")]),  # exactly the cap
    ([b"data:0123456789A\n\ndata: ok\n\n"], [SseTooLarge(size=16), ev("ok")]),
    ([b"data: 01234\ndata: 6789\n\n"], [ev("01234\n6789")]),  # 10 bytes with the newline
    ([b"data: 01234\ndata: 6789A\n\ndata: ok\n\n"], [SseTooLarge(size=22), ev("ok")]),
    # Over the cap, further lines are not kept; id and retry still apply.
    (
        [b"id: 1\ndata: 0123456789A\ndata: x\nid: 2\nretry: 5\n\ndata: ok\n\n"],
        [SseTooLarge(size=22), ev("ok", "2")],
    ),
    # A single line longer than the cap plus "data: ", in pieces: never held.
    ([b": " + b"c" * 50, b"c" * 50 + b"\ndata: ok\n\n"], [SseTooLarge(size=17)]),
    ([b"event: " + b"e" * 20 + b"\n\ndata: ok\n\n"], [SseTooLarge(size=17), ev("ok")]),
    ([b"data: " + b"x" * 100 + b"\r", b"\ndata: ok\r\n\r\n"], [SseTooLarge(size=17)]),
    ([b"data: " + b"x" * 100 + b"\n"], [SseTooLarge(size=17)]),  # cut off at EOF: reported
    ([b"data: " + b"x" * 100], [SseTooLarge(size=17)]),  # a line that never ended
]


@pytest.mark.parametrize(("chunks", "frames"), OVERSIZED)
def test_size_cap(chunks: list[bytes], frames: list[SseFrame]) -> None:
    _, got = decode(chunks, cap=CAP)
    assert got == frames


@pytest.mark.parametrize(
    ("start", "endless", "reported_at"),
    [
        (b"data: ", b"x", CAP + len(b"data: ") + 1),  # data over the cap
        (b"data:", b"x", CAP + len(b"data:") + 1),
        (b"id: 1\ndata: abc\ndata: ", b"x", len(b"id: 1\ndata: abc\ndata: ") + 10 - 4 + 1),
        (b"", b"x", CAP + len(b"data: ") + 1),  # any line over the cap plus "data: "
        (b": ", b"c", CAP + len(b"data: ") + 1),
    ],
)
def test_an_endless_line_is_reported_by_the_byte_that_shows_it_too_large(
    start: bytes, endless: bytes, reported_at: int
) -> None:
    # The stream's bytes one at a time, never a line end: the report comes with the byte that
    # shows the event too large, once, and the decoder holds no more than before.
    decoder = SseDecoder(CAP)
    stream = start + endless * 1000
    frames = [decoder.feed(stream[i : i + 1]) for i in range(len(stream))]
    reports = [(at + 1, got) for at, got in enumerate(frames) if got]
    assert len(reports) == 1
    at, [frame] = reports[0]
    assert at == reported_at
    assert isinstance(frame, SseTooLarge)
    assert decoder.buffered_bytes <= 2 * CAP + len(b"data: ")
    # The line ends, then the event: nothing more for it; the next event is decoded.
    assert decoder.feed(b"\n\ndata: ok\n\n") == [ev("ok", decoder.last_event_id)]


def test_many_short_data_lines_are_reported_by_the_line_that_goes_over() -> None:
    decoder = SseDecoder(100)
    line = b"data: " + b"y" * 9 + b"\n"  # 9 bytes of data and the LF joining the next
    fed = [decoder.feed(line) for _ in range(20)]
    # 10 lines make 99 bytes of data, the 11th's LF 100: its first data byte, its 7th, is over.
    assert fed[:10] == [[]] * 10
    assert fed[10] == [SseTooLarge(size=10 * len(line[:-1]) + 7)]
    assert fed[11:] == [[]] * 9


def test_a_reported_event_counts_as_dispatched() -> None:
    decoder = SseDecoder(CAP)
    assert decoder.feed(b"id: 1\ndata: a\n\nid: 2\ndata: ") == [ev("a", "1")]
    assert decoder.last_event_id == "1"
    assert decoder.feed(b"x" * 11) == [SseTooLarge(size=len(b"id: 2") + 17)]
    assert decoder.last_event_id == "2"  # a stream resumed from here skips the oversized event
    assert decoder.close() == []
    assert decoder.last_event_id == "2"


def test_oversized_event_memory_stays_bounded() -> None:
    decoder = SseDecoder(100)
    held = []
    frames: list[SseFrame] = []
    for _ in range(1000):  # one line of 100 kB, then 1000 data lines of 100 bytes
        frames += decoder.feed(b"x" * 100)
        held.append(decoder.buffered_bytes)
    frames += decoder.feed(b"\n")
    for _ in range(1000):
        frames += decoder.feed(b"data: " + b"y" * 100 + b"\n")
        held.append(decoder.buffered_bytes)
    frames += decoder.feed(b"\ndata: ok\n\n")
    assert max(held) <= 2 * 100 + len(b"data: ")
    assert frames == [SseTooLarge(size=100 + len(b"data: ") + 1), ev("ok")]


def test_many_small_pieces_of_one_event() -> None:
    decoder = SseDecoder(1 << 20)
    body = b"data: " + b"z" * 200_000 + b"\n\n"
    frames = [f for i in range(0, len(body), 3) for f in decoder.feed(body[i : i + 3])]
    assert frames == [ev("z" * 200_000)]


def test_close() -> None:
    decoder = SseDecoder(64)
    assert decoder.feed(b"data: a\n\ndata: b\ndata: c") == [ev("a")]
    assert decoder.buffered_bytes == len(b"b") + len(b"data: c")
    assert decoder.close() == []
    assert decoder.buffered_bytes == 0
    assert decoder.close() == []
    with pytest.raises(RuntimeError, match="after close"):
        decoder.feed(b"\n")


def test_bad_cap_and_repr() -> None:
    with pytest.raises(ValueError, match=">= 1"):
        SseDecoder(0)
    decoder = SseDecoder(64)
    decoder.feed(b"id: a\nretry: 5\n\ndata")
    assert repr(decoder) == (
        "SseDecoder(max_event_bytes=64, buffered_bytes=4, last_event_id='a', retry=5)"
    )


_LINE = st.sampled_from(
    [
        b"data: a",
        b"data:\xe2\x98\x83",
        b"data",
        b"id: 1",
        b"id",
        b"id: \0",
        b"event: e",
        b"retry: 12",
        b": comment",
        b"data: " + b"L" * 40,
        b"x" * 80,
        b"",
        b"",
    ]
)
_ENDS = st.sampled_from([b"\n", b"\r", b"\r\n"])


@given(
    lines=st.lists(st.tuples(_LINE, _ENDS), max_size=40),
    bom=st.booleans(),
    cuts=st.lists(st.integers(min_value=0), max_size=20),
)
def test_split_points_do_not_matter(
    lines: list[tuple[bytes, bytes]], bom: bool, cuts: list[int]
) -> None:
    stream = (b"\xef\xbb\xbf" if bom else b"") + b"".join(line + end for line, end in lines)
    whole, expected = decode([stream], cap=50)
    points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    pieces = [stream[a:b] for a, b in itertools.pairwise(points)]
    split, got = decode(pieces, cap=50)
    assert got == expected
    assert (split.last_event_id, split.retry) == (whole.last_event_id, whole.retry)
