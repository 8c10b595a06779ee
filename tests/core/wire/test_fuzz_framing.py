"""Fuzzing the stdio line framer (``mcp_core/_wire/framing.py``) against a model.

The model is the framer's contract written the plain way, on the whole input at once: split on
``b"\\n"``; a line whose content (without one trailing ``"\\r"``) is longer than the limit is one
``Oversized`` frame; a line within it is parsed as JSON (stdlib ``json``, after as many leading
byte-order marks as stop it parsing): an object or array is a ``Message`` (unless nested deeper
than ``MAX_NESTING``), anything else a ``NotJson`` excerpt, a blank line nothing. The framer,
fed the same bytes cut into pieces anywhere, must produce exactly the model's frames, hold no
more than the limit (or 2 x 512 bytes of an oversized line) between reads, and never raise,
whatever the bytes are.
"""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_core._wire.framing import (
    _KEEP,
    Frame,
    LineDecoder,
    Message,
    NotJson,
    Oversized,
    _recover_id,
)
from mcp_core._wire.json import MAX_NESTING

_BOM = b"\xef\xbb\xbf"
FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- the model -----------------------------------------------------------------------------


def _norm(value: object) -> object:
    """Integers beyond 64 bits as floats: the framer reads them so when its fast parser takes
    the line, and as integers when the line needs the stdlib's (NaN, lone surrogates), as
    ``mcp_core/_wire/json.py`` says. Frames are compared with both sides normalized."""
    if isinstance(value, bool) or not isinstance(value, int | list | dict):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else float(value)
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return {k: _norm(v) for k, v in value.items()}


def _excerpt(line: bytes) -> str:
    return line.decode("utf-8", errors="replace")[:200]


def _depth(value: object) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend(
                (v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


def _model_line(line: bytes) -> Frame | None:
    """One line within the limit (maybe with its trailing ``"\\r"``)."""
    while True:
        try:
            value = json.loads(line.decode("utf-8"))
            if _depth(value) > MAX_NESTING:
                raise ValueError("nested too deep")  # the reader's limit (_wire/json.py)
        except (ValueError, RecursionError):
            if not line.strip():
                return None
            if line.startswith(_BOM):
                line = line[len(_BOM) :]
                continue
            return _model_not_json(line)
        if isinstance(value, dict | list):
            return Message(payload=value)
        return _model_not_json(line)


def _model_not_json(line: bytes) -> NotJson:
    """An unreadable line: its excerpt, and the id of the answer it looks like, if any (the
    same shape rule as for an oversized line)."""
    line = line.rstrip(b"\r")
    return NotJson(excerpt=_excerpt(line), request_id=_recover_id(line[:_KEEP], line[-_KEEP:]))


def model(stream: bytes, limit: int) -> tuple[list[Frame], bytes]:
    """The frames of every complete line of ``stream``, and the unfinished rest."""
    *lines, rest = stream.split(b"\n")
    frames: list[Frame] = []
    for line in lines:
        content = line[:-1] if line.endswith(b"\r") else line
        if len(content) > limit:
            request_id = _recover_id(content[:_KEEP], content[-_KEEP:])
            frames.append(Oversized(size=len(content), request_id=request_id))
            continue
        frame = _model_line(line)
        if frame is not None:
            frames.append(frame)
    return frames, rest


def _normal(frames: list[Frame]) -> str:
    # repr: a parsed NaN is not equal to itself
    return repr([Message(_norm(f.payload)) if isinstance(f, Message) else f for f in frames])  # type: ignore[arg-type]


def _same(got: list[Frame], want: list[Frame]) -> bool:
    return _normal(got) == _normal(want)


# --- inputs ----------------------------------------------------------------------------------

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_IDS = st.integers(-(2**31), 2**31) | st.text("abc-_9", max_size=8)


def _response(request_id: object, padding: int, id_last: bool) -> bytes:
    result = {"content": [{"type": "text", "text": "p" * padding}]}
    if id_last:  # the TypeScript SDK: {result, jsonrpc, id}
        return json.dumps({"result": result, "jsonrpc": "2.0", "id": request_id}).encode()
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


_LINES = st.one_of(
    _VALUES.map(lambda v: json.dumps(v).encode()),  # objects and arrays are messages
    st.builds(
        lambda rid, method: json.dumps({"jsonrpc": "2.0", "id": rid, "method": method}).encode(),
        _IDS,
        st.text(max_size=8),
    ),
    st.builds(_response, _IDS, st.integers(0, 3000), st.booleans()),  # often oversized
    st.binary(max_size=60),  # garbage, invalid UTF-8, stray "\r" and "\n"
    st.sampled_from(
        [
            b"",
            b"\r",
            b" \t ",
            b"\x0b\x0c",
            _BOM,
            _BOM + b"{}",
            _BOM + _BOM + b"[1]",
            _BOM + b" ",
            b"\xff\xfe{}",
            b"[NaN, Infinity]",
            b'{"a":"\\ud800"}',
            b"[" * 2000,
            b"[" * 200 + b"]" * 200,
            b"[" * 512 + b"]" * 512,
            b"[" * 513 + b"]" * 513,
            b"Server listening on stdio",
            b"x" * 1500,
        ]
    ),
)
_ENDS = st.sampled_from([b"\n", b"\r\n", b"\r\r\n", b""])
_STREAMS = st.one_of(
    st.lists(st.tuples(_LINES, _ENDS), max_size=12).map(
        lambda pairs: b"".join(line + end for line, end in pairs)
    ),
    # Bytes from an alphabet where every piece of syntax is likely.
    st.lists(
        st.sampled_from(
            [
                b"{",
                b"}",
                b"[",
                b"]",
                b'"',
                b":",
                b",",
                b"1",
                b"a",
                b" ",
                b"\r",
                b"\n",
                b"\xff",
                b"\xc3",
                b"\xa9",
                _BOM,
                b'"id":',
                b'"result":',
            ]
        ),
        max_size=80,
    ).map(b"".join),
)
_LIMITS = st.sampled_from([1, 2, 3, 16, 100, 513, 1024, 1025, 2000, 100_000])


def pieces(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    return [stream[a:b] for a, b in itertools.pairwise(points)]


# --- properties ----------------------------------------------------------------------------


@FUZZ
@given(
    stream=_STREAMS,
    limit=_LIMITS,
    cuts=st.lists(st.integers(min_value=0, max_value=10**6), max_size=12),
    byte_at_a_time=st.booleans(),
)
def test_any_split_gives_the_model_frames_in_bounded_memory(
    stream: bytes, limit: int, cuts: list[int], byte_at_a_time: bool
) -> None:
    chunks = (
        [stream[i : i + 1] for i in range(len(stream))]
        if byte_at_a_time and len(stream) < 5000
        else pieces(stream, cuts)
    )
    decoder = LineDecoder(limit)
    bound = max(limit + 1, 2 * _KEEP)
    got: list[Frame] = []
    for chunk in chunks:
        got.extend(decoder.feed(chunk))
        assert decoder.buffered_bytes <= bound
    want, rest = model(stream, limit)
    assert _same(got, want)
    # What is held is the unfinished line (or, once it is over the limit, two ends of it).
    if len(rest) <= limit + 1:
        assert decoder.buffered_bytes == len(rest)
    else:
        assert decoder.buffered_bytes <= 2 * _KEEP
    # The stream goes on: the rest becomes a line of its own once its newline comes.
    tail = decoder.feed(b"\n")
    assert _same(got + tail, model(stream + b"\n", limit)[0])
    assert decoder.buffered_bytes == 0
    after = b'{"after":1}\n'
    assert _same(decoder.feed(after), model(after, limit)[0])


@FUZZ
@given(
    before=st.binary(max_size=20).filter(lambda b: b"\n" not in b),
    size=st.integers(0, 40_000),
    limit=st.sampled_from([1, 64, 1000, 4096]),
    chunk=st.sampled_from([1, 3, 511, 512, 513, 4096, 65536]),
    request_id=_IDS,
    id_last=st.booleans(),
)
def test_a_long_line_is_dropped_whole_and_its_id_is_found_however_it_arrives(
    before: bytes, size: int, limit: int, chunk: int, request_id: object, id_last: bool
) -> None:
    line = _response(request_id, size, id_last)
    stream = before + b"\n" + line + b"\r\n" + b'{"jsonrpc":"2.0","id":0,"result":{}}\n'
    decoder = LineDecoder(limit)
    got: list[Frame] = []
    chunk = max(chunk, len(stream) // 500)  # at most ~500 reads: fast, and still every size
    for start in range(0, len(stream), chunk):
        got.extend(decoder.feed(stream[start : start + chunk]))
        assert decoder.buffered_bytes <= max(limit + 1, 2 * _KEEP)
    assert _same(got, model(stream, limit)[0])
    if len(line) > limit:
        assert Oversized(size=len(line), request_id=request_id) in got


# --- crashes and edge cases the fuzzing looked at, pinned as a table --------------------------

# (chunks, limit, frames expected)
TABLE: list[tuple[list[bytes], int, list[Frame]]] = [
    # A "\r" that is the (limit + 1)-th byte of a line split before its newline.
    ([b"[1]\r", b"\n"], 3, [Message(payload=[1])]),
    ([b"[1]", b"\r", b"\n"], 3, [Message(payload=[1])]),
    ([b"[12]", b"\r\n"], 3, [Oversized(size=4, request_id=None)]),
    # Two "\r": only one belongs to the line end.
    ([b"[1]\r\r\n"], 3, [Oversized(size=4, request_id=None)]),
    ([b"[1]\r\r\n"], 4, [Message(payload=[1])]),
    # Blank lines of any ASCII whitespace, with or without byte-order marks: no frame.
    ([b"\x0b\x0c\r\n", _BOM + b" \n", _BOM + _BOM + b"\n"], 100, []),
    ([_BOM + _BOM + b"{}\n"], 100, [Message(payload={})]),
    ([_BOM + b"7\n"], 100, [NotJson(excerpt="7")]),
    ([_BOM[:2], _BOM[2:] + b"[]\n"], 100, [Message(payload=[])]),
    # Absurd nesting, whether the fast parser, the fallback or the nesting limit refuses it.
    ([b"[" * 1100 + b"]" * 1100 + b"\n"], 10_000, [NotJson(excerpt="[" * 200)]),
    ([b"[" * 1000 + b"]" * 1000 + b"\n"], 10_000, [NotJson(excerpt="[" * 200)]),
    ([b'{"a":' * 513 + b"1" + b"}" * 513 + b"\n"], 10_000, [NotJson(excerpt='{"a":' * 40)]),
    # An oversized line whose head arrives one byte at a time.
    (
        [bytes([b]) for b in b'{"id":7,"result":"' + b"x" * 600 + b'"}\n'],
        100,
        [Oversized(size=620, request_id=7)],
    ),
]


@pytest.mark.parametrize(("chunks", "limit", "frames"), TABLE)
def test_table(chunks: list[bytes], limit: int, frames: list[Frame]) -> None:
    decoder = LineDecoder(limit)
    got = [frame for chunk in chunks for frame in decoder.feed(chunk)]
    assert _same(got, frames)
    assert _same(got, model(b"".join(chunks), limit)[0])
    assert decoder.buffered_bytes == 0


def test_model_compares_nan_and_big_integers_as_the_framer_reads_them() -> None:
    (frame,) = LineDecoder(100).feed(b"[NaN, 18446744073709551616]\n")
    assert isinstance(frame, Message) and math.isnan(frame.payload[0])
    assert _same([frame], model(b"[NaN, 18446744073709551616]\n", 100)[0])
