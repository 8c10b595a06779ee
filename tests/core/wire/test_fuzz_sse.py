"""Fuzzing the SSE decoder (``mcp_core/_wire/sse.py``) against a reference model of WHATWG HTML
"Interpreting an event stream".

The model reads the whole body at once, the way the standard is written: one leading
byte-order mark is dropped (the UTF-8 decode); lines end in CRLF, LF or CR; the last,
unterminated line and an event without its blank line are discarded at the end; a line
starting with ":" is a comment; ``name: value`` loses one space after the colon, a line
without a colon is a name with an empty value; ``event`` sets the type, ``data`` appends its
value and a LF, ``id`` sets the last event ID buffer unless the value holds U+0000, ``retry``
takes ASCII digits only; a blank line sets the last event ID and dispatches the data (its
trailing LF removed) as an event of the type, or "message". Text is UTF-8 with replacement.

Plus the choices ``_wire/sse.py`` documents for MCP, and nothing else: no event for empty data; a
``retry`` of more than 18 digits is ignored; an event whose data (or one of whose lines, less
the room of "data: ") is over the cap is one ``SseTooLarge``, given as soon as the bytes read
prove it, whatever would follow: at the first byte of a line (finished or not, the last,
unterminated one too) whose prefix is longer than the cap plus that room, or is a ``data``
field (a colon after "data") whose value so far puts the event's data over the cap; or at
the end of a ``data`` line without a colon whose LF puts it over. Its size counts the event's
bytes up to that byte, and it sets the last event ID as a dispatch does.

The decoder, fed the same bytes cut anywhere, must give the model's frames, last event ID and
retry, hold at most about twice the cap, and never raise.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_core._wire.sse import SseDecoder, SseEvent, SseFrame, SseTooLarge

_BOM = b"\xef\xbb\xbf"
_PREFIX_ROOM = len(b"data: ")
FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- the model -----------------------------------------------------------------------------


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _known_too_large(raw: bytes, data_bytes: int, cap: int, *, ended: bool) -> int | None:
    """The length of the shortest prefix of line ``raw`` that proves its event too large, the
    event's data so far being ``data_bytes`` (-1: none); None when no prefix does."""
    for length in range(1, len(raw) + 1):
        prefix = raw[:length]
        if length > cap + _PREFIX_ROOM:
            return length
        name, colon, value = prefix.partition(b":")
        if colon and name == b"data" and data_bytes + 1 + len(value.removeprefix(b" ")) > cap:
            return length
    if ended and raw == b"data" and data_bytes + 1 > cap:
        return len(raw)
    return None


def model(body: bytes, cap: int) -> tuple[list[SseFrame], str | None, int | None]:
    """Frames, last event ID and retry after the whole ``body`` and its end."""
    body = body.removeprefix(_BOM)
    *lines, unterminated = re.split(rb"\r\n|\r|\n", body)
    frames: list[SseFrame] = []
    data: list[str] = []
    data_bytes = -1  # bytes of the data buffer without its trailing LF (-1: empty buffer)
    event_type = ""
    id_buffer: str | None = None  # None: no id seen yet (WHATWG's initial empty string)
    last_event_id: str | None = None
    retry: int | None = None
    too_large = False
    event_bytes = 0
    for raw, ended in [*((line, True) for line in lines), (unterminated, False)]:
        if not raw:
            if not ended:
                break
            last_event_id = id_buffer  # dispatch
            joined = "\n".join(data)
            if joined and not too_large:  # MCP: empty data is no event
                frames.append(
                    SseEvent(event=event_type or "message", data=joined, id=last_event_id)
                )
            data, data_bytes, event_type, too_large, event_bytes = [], -1, "", False, 0
            continue
        known = None if too_large else _known_too_large(raw, data_bytes, cap, ended=ended)
        if known is not None:  # reported at once, as dispatched
            frames.append(SseTooLarge(size=event_bytes + known))
            last_event_id = id_buffer
            too_large, data, data_bytes = True, [], -1
        event_bytes += len(raw)
        if not ended or len(raw) > cap + _PREFIX_ROOM:  # cut off, or too long to hold: not read
            continue
        line = _text(raw)
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        raw_value = raw.partition(b":")[2]
        if value.startswith(" "):
            value, raw_value = value[1:], raw_value[1:]
        if name == "data":
            if not too_large:
                data.append(value)
                data_bytes += len(raw_value) + 1
                assert data_bytes <= cap, "known too large before the line ended"
        elif name == "event":
            event_type = value
        elif name == "id":
            if "\0" not in value:
                id_buffer = value
        elif name == "retry" and value and all(c in "0123456789" for c in value):
            retry = int(value) if len(value) <= 18 else retry
    return frames, last_event_id, retry


def decode(chunks: list[bytes], cap: int) -> tuple[SseDecoder, list[SseFrame]]:
    decoder = SseDecoder(cap)
    frames: list[SseFrame] = []
    for chunk in chunks:
        frames.extend(decoder.feed(chunk))
        assert decoder.buffered_bytes <= 2 * cap + _PREFIX_ROOM + len(_BOM)
    frames.extend(decoder.close())
    assert decoder.buffered_bytes == 0
    return decoder, frames


def pieces(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(body), *(c % (len(body) + 1) for c in cuts)})
    return [body[a:b] for a, b in itertools.pairwise(points)]


# --- inputs ----------------------------------------------------------------------------------

_VALUES = st.one_of(
    st.sampled_from(
        [
            b"",
            b"a",
            b" a",
            b"a b",
            b"a\x00b",
            b"\x00",
            b"\xff",
            b"\xe2\x98",
            b"\xe2\x98\x83",
            b"7",
            b"0042",
            b"12a",
            "\u0663".encode(),
            b"9" * 19,
            b"x" * 20,
            b":",
            _BOM,
        ]
    ),
    st.binary(max_size=8),
)
_FIELD_LINES = st.one_of(
    st.tuples(
        st.sampled_from(
            [
                b"data",
                b"data",
                b"data",
                b"id",
                b"id",
                b"event",
                b"retry",
                b"",
                b"Data",
                b"foo",
                b"data ",
                _BOM + b"data",
            ]
        ),
        st.sampled_from([b":", b": ", b": ", b":  ", b""]),
        _VALUES,
    ).map(b"".join),
    st.sampled_from(
        [
            b":",
            b": keep-alive",
            b"retry: 000000000000000042",
            b"retry: " + b"9" * 19,
            b"retry: 5",
            b"id: 1",
            b"id: 2\x00",
            b"id",
            b"event: e",
            b"data: ab",
            b"data: abcd",
            b"data: " + b"L" * 70,
        ]
    ),
)
_ENDS = st.sampled_from([b"\n", b"\r", b"\r\n"])
# An event: some field lines, then (mostly) its blank line.
_EVENTS = st.tuples(
    st.lists(st.tuples(_FIELD_LINES, _ENDS), max_size=4), _ENDS, st.integers(0, 9)
).map(lambda t: b"".join(line + end for line, end in t[0]) + (t[1] if t[2] else b""))
_BODIES = st.one_of(
    st.tuples(
        st.sampled_from([b"", b"", _BOM, _BOM + _BOM, _BOM[:2]]),
        st.lists(_EVENTS, max_size=8),
        st.sampled_from([b"", b"data: cut off", b"\r"]),
    ).map(lambda t: t[0] + b"".join(t[1]) + t[2]),
    st.lists(
        st.sampled_from(
            [
                b"data",
                b"id",
                b"event",
                b"retry",
                b":",
                b" ",
                b"\r",
                b"\n",
                b"\r\n",
                b"\x00",
                b"\xff",
                b"7",
                _BOM,
                b"x" * 9,
            ]
        ),
        max_size=60,
    ).map(b"".join),
    st.binary(max_size=100),
)
_CAPS = st.sampled_from([1, 2, 5, 16, 64, 1000])


# --- properties ----------------------------------------------------------------------------


@FUZZ
@given(
    body=_BODIES,
    cap=_CAPS,
    cuts=st.lists(st.integers(min_value=0, max_value=10**6), max_size=15),
    byte_at_a_time=st.booleans(),
    empty_reads=st.booleans(),
)
def test_any_split_gives_the_model_events(
    body: bytes, cap: int, cuts: list[int], byte_at_a_time: bool, empty_reads: bool
) -> None:
    chunks = [body[i : i + 1] for i in range(len(body))] if byte_at_a_time else pieces(body, cuts)
    if empty_reads:  # a driver may hand over an empty read anywhere
        chunks = [piece for chunk in chunks for piece in (b"", chunk)] + [b""]
    decoder, frames = decode(chunks, cap)
    want, last_event_id, retry = model(body, cap)
    assert frames == want
    assert decoder.last_event_id == last_event_id
    assert decoder.retry == retry


@FUZZ
@given(
    data_size=st.integers(0, 5000),
    lines=st.integers(1, 4),
    cap=st.sampled_from([1, 100, 1000, 4096]),
    chunk=st.sampled_from([1, 7, 100, 4096]),
)
def test_long_events_are_dropped_in_bounded_memory_and_decoding_goes_on(
    data_size: int, lines: int, cap: int, chunk: int
) -> None:
    event = b"".join(b"data: " + b"d" * data_size + b"\r\n" for _ in range(lines))
    body = b"id: 1\n" + event + b"\r\nid: 2\ndata: ok\n\n"
    chunk = max(chunk, len(body) // 400)
    decoder, frames = decode([body[i : i + chunk] for i in range(0, len(body), chunk)], cap)
    assert (frames, decoder.last_event_id, decoder.retry) == model(body, cap)
    last = SseEvent(event="message", data="ok", id="2") if cap >= 2 else SseTooLarge(size=13)
    assert frames[-1] == last


# --- edge cases the fuzzing looked at, pinned as a table -------------------------------------

# (chunks, cap, frames, last event ID, retry)
TABLE: list[tuple[list[bytes], int, list[SseFrame], str | None, int | None]] = [
    # "data" with one space and nothing else: empty data, no event; two data lines: one LF.
    (
        [b"data: \n\n", b"data: \ndata: \n\n"],
        64,
        [SseEvent(event="message", data="\n", id=None)],
        None,
        None,
    ),
    # The cap counts the LF that joins data lines.
    ([b"data: ab\ndata: c\n\n"], 4, [SseEvent(event="message", data="ab\nc", id=None)], None, None),
    ([b"data: ab\ndata: cd\n\n"], 4, [SseTooLarge(size=16)], None, None),
    # A line over the cap plus "data: " is not read, even an id: the earlier id stays. It is
    # reported at its 17th byte (10 + len("data: ") + 1), and its size counts up to there.
    ([b"id: 1\n\nid: " + b"9" * 20 + b"\n\n"], 10, [SseTooLarge(size=17)], "1", None),
    # A comment line over the room makes the event too large even with small data.
    ([b": " + b"c" * 20 + b"\ndata: a\n\n"], 10, [SseTooLarge(size=17)], None, None),
    # A line that never ends is reported all the same, at the byte that shows it too large:
    # data over the cap ("data: " and 11 bytes), a line over the room, whatever its field.
    ([b"data: " + b"x" * 11], 10, [SseTooLarge(size=17)], None, None),
    ([b"data:" + b"x" * 11], 10, [SseTooLarge(size=16)], None, None),
    ([b"x" * 17], 10, [SseTooLarge(size=17)], None, None),
    ([b"x" * 16], 10, [], None, None),
    # Data over the cap across lines: at the colon of a data line once the LF joining it is
    # over; at the end of a "data" line without colon (it could have been "datum").
    ([b"data: ab\ndata:"], 2, [SseTooLarge(size=13)], None, None),
    ([b"data: ab\ndata"], 2, [], None, None),
    ([b"data: ab\ndata\n"], 2, [SseTooLarge(size=12)], None, None),
    ([b"data: ab\ndata: c"], 4, [], None, None),
    ([b"data: ab\ndata: cd"], 4, [SseTooLarge(size=16)], None, None),
    # Reported, the event counts as dispatched: its id so far is the last event ID, before its
    # blank line (here never sent); a later id of it applies at its blank line.
    ([b"id: 7\ndata: " + b"x" * 20], 10, [SseTooLarge(size=22)], "7", None),
    ([b"id: 7\ndata: " + b"x" * 20 + b"\nid: 8\n"], 10, [SseTooLarge(size=22)], "7", None),
    ([b"id: 7\ndata: " + b"x" * 20 + b"\nid: 8\n\n"], 10, [SseTooLarge(size=22)], "8", None),
    # BOM handling across reads: one is dropped, a second is part of a field name.
    ([_BOM[:1], _BOM[1:2], _BOM[2:] + _BOM + b"data: a\n\n"], 64, [], None, None),
    (
        [b"", _BOM[:2], b"", _BOM[2:] + b"data: a\n\n"],
        64,
        [SseEvent(event="message", data="a", id=None)],
        None,
        None,
    ),
    # CR at the end of one read, LF at the start of the next (after an empty read): one end.
    (
        [b"data: a\r", b"", b"\n", b"data: b\r", b"\r"],
        64,
        [SseEvent(event="message", data="a\nb", id=None)],
        None,
        None,
    ),
    # id with NUL ignored; id with an invalid byte kept (replaced).
    (
        [b"id: a\0b\ndata: x\n\nid: \xff\n\n"],
        64,
        [SseEvent(event="message", data="x", id=None)],
        "\ufffd",
        None,
    ),
    # retry: only ASCII digits, at most 18 of them.
    ([b"retry: 1\nretry: \xd9\xa3\nretry: 12a\nretry: " + b"9" * 19 + b"\n"], 64, [], None, 1),
]


@pytest.mark.parametrize(("chunks", "cap", "frames", "last_event_id", "retry"), TABLE)
def test_table(
    chunks: list[bytes],
    cap: int,
    frames: list[SseFrame],
    last_event_id: str | None,
    retry: int | None,
) -> None:
    decoder, got = decode(chunks, cap)
    assert (got, decoder.last_event_id, decoder.retry) == (frames, last_event_id, retry)
    assert model(b"".join(chunks), cap) == (frames, last_event_id, retry)
