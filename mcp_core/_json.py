"""JSON in and out of the machine: orjson where it gives the stdlib's answer, the stdlib where not.

Every message crosses this module twice (a request encoded, its answer decoded), and with the
stdlib's ``json`` those two steps were a third of the machine's time per call: orjson does the
same work in about a tenth (bench/results/REPORT.md, "mcp_core alone"). The stdlib stays the
reference for what the machine accepts and produces; orjson is used only where its result is
the same:

- ``dumps_line``: orjson refuses what the stdlib may still write (integers beyond 64 bits,
  non-str keys, lone surrogates, dict/str/int subclasses) and those go to the stdlib. orjson
  writes NaN and the infinities as ``null`` where the stdlib (with ``allow_nan=False``) raises
  ``ValueError``; so an output containing ``null`` is written again by the stdlib, which raises
  for them (a ``null`` that is a real None costs one more encode, nothing else). Differences
  left: orjson writes a ``uuid.UUID`` or an ``enum.Enum`` member (which the stdlib refuses) as
  its string or value.
- ``loads``: anything orjson refuses (a ``NaN`` literal, a lone surrogate escape, a byte-order
  mark, nesting deeper than 1024) is parsed again by the stdlib, so the same inputs are accepted
  and refused as before. One difference is left: an integer beyond 64 bits (beyond any
  JavaScript server's precision anyway) is read as a float.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["dumps_line", "loads"]

_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_APPEND_NEWLINE
)
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
_ENCODE_ASCII = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_DECODE = json.JSONDecoder().decode


def dumps_line(value: object) -> bytes:
    """``value`` as compact UTF-8 JSON followed by ``b"\\n"``. ``TypeError`` for a value JSON
    cannot hold, ``ValueError`` for NaN or an infinity (not JSON; servers reject them)."""
    try:
        data = orjson.dumps(value, option=_OPTIONS)
    except TypeError:
        return _stdlib_line(value)
    if b"null" in data:
        return _stdlib_line(value)
    return data


def _stdlib_line(value: object) -> bytes:
    try:
        return _ENCODE(value).encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate in a str cannot be UTF-8; the ASCII escape form "\udc80" can.
        return _ENCODE_ASCII(value).encode("ascii") + b"\n"


def loads(data: bytes | bytearray | memoryview) -> Any:
    """Parse one JSON text. ``ValueError`` (``UnicodeDecodeError`` or ``JSONDecodeError``) when
    it is not UTF-8 JSON, ``RecursionError`` for absurd nesting."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return _DECODE(bytes(data).decode("utf-8"))
