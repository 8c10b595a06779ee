"""Newline-delimited JSON framing: encoding, splitting, bad lines, the size cap (MCP
2025-11-25 basic/transports §stdio)."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_core._wire.framing import LineDecoder, Message, NotJson, Oversized, encode_message


@pytest.mark.parametrize(
    ("message", "encoded"),
    [
        (
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        ),
        ({"text": "a\nb"}, b'{"text":"a\\nb"}\n'),  # never a raw newline inside a message
        (
            {"text": "h\u00e9llo \u2603"},
            '{"text":"h\u00e9llo \u2603"}\n'.encode(),
        ),  # UTF-8, not \\u
        ({"text": "\u2028"}, '{"text":"\u2028"}\n'.encode()),
        ({"bad": "\udc80"}, b'{"bad":"\\udc80"}\n'),  # a lone surrogate falls back to ASCII escapes
        ([1, 2], b"[1,2]\n"),
    ],
)
def test_encode_message(message: object, encoded: bytes) -> None:
    assert encode_message(message) == encoded
    assert encoded.count(b"\n") == 1


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"x": float("nan")}, ValueError),
        ({"x": float("inf")}, ValueError),
        ({"x": {1, 2}}, TypeError),
    ],
)
def test_encode_message_refuses_non_json(message: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        encode_message(message)


# (chunks fed in order, frames expected in total)
CASES: list[tuple[list[bytes], list[object]]] = [
    ([b'{"a":1}\n'], [Message({"a": 1})]),
    ([b'{"a":1}\n{"b":2}\n'], [Message({"a": 1}), Message({"b": 2})]),
    ([b'{"a"', b":1}", b"\n"], [Message({"a": 1})]),
    ([b'{"a":1}'], []),  # no newline yet: nothing
    ([b'{"a":1}\r\n'], [Message({"a": 1})]),  # CRLF
    ([b'{"a":1}\r', b"\n"], [Message({"a": 1})]),
    ([b"\n\r\n  \n\t\n"], []),  # blank lines are skipped
    ([b"[1,2]\n"], [Message([1, 2])]),  # a 2025-03-26 batch
    ([b"\xef\xbb\xbf{}\n"], [Message({})]),  # a byte-order mark
    ([b'  {"a":1}  \n'], [Message({"a": 1})]),
    # A multi-byte character split between reads.
    (
        ['{"t":"\u20ac"}\n'.encode()[:7], '{"t":"\u20ac"}\n'.encode()[7:]],
        [Message({"t": "\u20ac"})],
    ),
    ([b"Server started on stdio\n"], [NotJson("Server started on stdio")]),
    ([b"42\n", b'"s"\n', b"null\n"], [NotJson("42"), NotJson('"s"'), NotJson("null")]),
    ([b'{"a":\n'], [NotJson('{"a":')]),
    ([b"\xff\xfe{}\n"], [NotJson("\ufffd\ufffd{}")]),  # not UTF-8
    ([b"x" * 300 + b"\n"], [NotJson("x" * 200)]),  # excerpts are short
    ([b"banner\n", b'{"id":1}\n'], [NotJson("banner"), Message({"id": 1})]),  # decoding goes on
    ([b"[" * 100_000 + b"\n"], [NotJson("[" * 200)]),  # nesting deeper than the parser goes
]


@pytest.mark.parametrize(("chunks", "frames"), CASES)
def test_decode(chunks: list[bytes], frames: list[object]) -> None:
    decoder = LineDecoder(200_000)
    out: list[object] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    assert out == frames


# Integers within 64 bits: beyond them the parser reads a float (mcp_core/_wire/json.py; see
# test_integers_beyond_64_bits_are_read_as_floats).
_INTEGERS = st.integers(min_value=-(2**63), max_value=2**64 - 1)


@given(
    messages=st.lists(
        st.dictionaries(st.text(max_size=5), _INTEGERS | st.text(max_size=10), max_size=3),
        max_size=5,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_split_anywhere(messages: list[dict[str, object]], cuts: list[int]) -> None:
    stream = b"".join(encode_message(m) for m in messages)
    points = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    decoder = LineDecoder(10_000)
    out = []
    for start, end in itertools.pairwise(points):
        out.extend(decoder.feed(stream[start:end]))
    assert out == [Message(m) for m in messages]
    assert decoder.buffered_bytes == 0


def response(request_id: object, size: int, *, id_last: bool = False) -> bytes:
    body = {"content": [{"type": "text", "text": "x" * size}]}
    if id_last:  # the TypeScript SDK writes {result, jsonrpc, id}
        message = {"result": body, "jsonrpc": "2.0", "id": request_id}
    else:
        message = {"jsonrpc": "2.0", "id": request_id, "result": body}
    return json.dumps(message).encode()


OVERSIZED: list[tuple[bytes, int | str | None]] = [
    (response(5, 2000), 5),
    (response(5, 2000, id_last=True), 5),
    (response("req-7", 2000), "req-7"),
    (response("req-7", 2000, id_last=True), "req-7"),
    (response(-3, 2000), -3),
    (b'{ "id" : 9 , "jsonrpc" : "2.0" , "error" : {"m": "' + b"e" * 2000 + b'"}}', 9),
    (b'{"id":9,"result":"' + b"r" * 2000 + b'"}', 9),
    # Requests and notifications from the server carry no id of ours.
    (
        b'{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":"'
        + b"p" * 2000
        + b'"}',
        None,
    ),
    (b'{"method":"x","params":"' + b"p" * 2000 + b'","jsonrpc":"2.0","id":9}', None),
    (b'{"jsonrpc":"2.0","method":"notifications/message","params":"' + b"p" * 2000 + b'"}', None),
    (response(1.5, 2000), None),  # not an integer or string id
    (response('a\\"b', 2000), None),  # escapes are not followed
    (response(None, 2000), None),
    (b'{"result":{"nested":{"id":4}}}' + b" " * 2000, None),  # an inner id is not the id
    (b"x" * 3000, None),
]


@pytest.mark.parametrize(("line", "request_id"), OVERSIZED)
@pytest.mark.parametrize("chunk", [1, 7, 100, 1500, 10_000])
def test_oversized(line: bytes, request_id: int | str | None, chunk: int) -> None:
    decoder = LineDecoder(1000)
    stream = line + b"\r\n" + b'{"after":1}\n'
    out = []
    for start in range(0, len(stream), chunk):
        out.extend(decoder.feed(stream[start : start + chunk]))
        assert decoder.buffered_bytes <= 1024 + 1001
    assert out == [Oversized(size=len(line), request_id=request_id), Message({"after": 1})]


@pytest.mark.parametrize(
    ("line", "frames"),
    [
        (b"x" * 10, [NotJson("x" * 10)]),  # exactly at the limit: kept
        (b"[" + b"1," * 4 + b"1]", [Oversized(size=11, request_id=None)]),  # one byte over
        (b'{"id":1,"result":[1,2]}', [Oversized(size=23, request_id=1)]),
    ],
)
def test_limit_boundary(line: bytes, frames: list[object]) -> None:
    decoder = LineDecoder(10)
    assert decoder.feed(line + b"\n") == frames
    assert decoder.feed(line + b"\r\n") == frames  # the CR does not count
    for ending in (b"\n", b"\r\n"):  # the same when the line arrives in pieces
        assert [f for byte in line + ending for f in decoder.feed(bytes([byte]))] == frames


def test_memory_is_bounded_and_scanning_is_linear() -> None:
    decoder = LineDecoder(64)
    total = 0
    for _ in range(20_000):  # 20 MB in small reads: each read is scanned once
        assert decoder.feed(b'{"id":1,"result":"' if total == 0 else b"y" * 1000) == []
        total += 18 if total == 0 else 1000
        assert decoder.buffered_bytes <= 1024
    assert decoder.feed(b'"}\n') == [Oversized(size=total + 2, request_id=1)]
    assert decoder.buffered_bytes == 0


def test_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_message_bytes"):
        LineDecoder(0)


@pytest.mark.parametrize(
    ("line", "frame"),
    [
        (b"\xef\xbb\xbf" + b'{"a":1}', Message({"a": 1})),  # a byte-order mark is skipped
        (b"\xef\xbb\xbf" + b"hello", NotJson("hello")),
        (b'{"a":"\\ud800"}', Message({"a": "\ud800"})),  # a lone surrogate escape, as before
        (b"[NaN]", Message([math.nan])),  # not JSON, yet Python's parser took it, as before
        (b"42", NotJson("42")),  # JSON, but not a message
    ],
)
def test_lines_the_fast_parser_refuses_are_judged_as_before(line: bytes, frame: object) -> None:
    got = LineDecoder(100).feed(line + b"\r\n")
    assert repr(got) == repr([frame])  # repr: nan != nan


def test_integers_beyond_64_bits_are_read_as_floats() -> None:
    # The one documented difference from the stdlib parser (mcp_core/_wire/json.py).
    line = b'{"a":18446744073709551615,"b":18446744073709551616,"c":-9223372036854775809}\n'
    (frame,) = LineDecoder(100).feed(line)
    assert frame == Message({"a": 2**64 - 1, "b": float(2**64), "c": -float(2**63)})


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ({"a": None, "b": [1.5, True]}, b'{"a":null,"b":[1.5,true]}\n'),  # a real null
        ({"a": 2**70}, b'{"a":1180591620717411303424}\n'),  # beyond orjson: the stdlib writes it
        ({1: "x"}, b'{"1":"x"}\n'),  # a non-str key, as the stdlib writes it
        ({"a": "é"}, '{"a":"é"}\n'.encode()),  # UTF-8, not \\u escapes
    ],
)
def test_encoding_matches_the_stdlib(value: object, line: bytes) -> None:
    assert encode_message(value) == line
    assert json.loads(line) == json.loads(json.dumps(value))


@pytest.mark.parametrize("value", [{"a": math.nan}, {"a": [math.inf]}, {"a": -math.inf}])
def test_nan_and_infinities_are_refused_not_sent_as_null(value: object) -> None:
    with pytest.raises(ValueError):
        encode_message(value)


@pytest.mark.parametrize(
    "value", [{"a": {1, 2}}, {"a": object()}, {"a": __import__("datetime").date.today()}]
)
def test_values_json_cannot_hold_raise_type_error(value: object) -> None:
    with pytest.raises(TypeError):
        encode_message(value)
