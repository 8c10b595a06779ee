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
  its string or value, and a negative exponent without the stdlib's padding (``1e-8`` where
  the stdlib writes ``1e-08``: the same number).
- ``loads``: anything orjson refuses (a ``NaN`` literal, a lone surrogate escape, a byte-order
  mark, nesting deeper than 1024) is parsed again by the stdlib, so the same inputs are accepted
  and refused as before. One difference is left: an integer beyond 64 bits (beyond any
  JavaScript server's precision anyway) is read as a float. And one limit is added: a value
  nested deeper than ``MAX_NESTING`` is refused (RFC 8259 §9: "An implementation may set
  limits on the maximum depth of nesting"). orjson takes 1024 levels, but the machine prints,
  logs and checks what servers send with ``str``, ``json.dumps`` and schema validators, which
  recurse once per level and raised ``RecursionError`` out of ``handle()`` at about 1000 levels
  less the caller's stack (tests/core/wire/test_fuzz_jsonrpc.py); at 512 they have room to spare.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["MAX_NESTING", "dumps_line", "loads", "unsendable"]

MAX_NESTING = 512

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


def loads(data: bytes | bytearray) -> Any:
    """Parse one JSON text. ``ValueError`` (``UnicodeDecodeError`` or ``JSONDecodeError``) when
    it is not UTF-8 JSON or is nested deeper than ``MAX_NESTING``, ``RecursionError`` for
    nesting the stdlib's parser cannot even read."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        value = _DECODE(bytes(data).decode("utf-8"))
    # Deeper than MAX_NESTING takes more than MAX_NESTING "[" or "{" (a count that includes
    # those in strings: an upper bound) and as many closing ones, so a short text is never
    # walked, and a long one only when it has that many brackets.
    if (
        len(data) > 2 * MAX_NESTING
        and data.count(b"[") + data.count(b"{") > MAX_NESTING
        and _deeper(value, MAX_NESTING)
    ):
        raise ValueError(f"JSON nested deeper than {MAX_NESTING} levels")
    return value


def _deeper(value: object, limit: int) -> bool:
    """Whether arrays and objects in ``value`` nest more than ``limit`` deep: one level at a
    time, without recursion."""
    level = [value] if type(value) is dict or type(value) is list else []
    for _ in range(limit):
        level = [
            inner
            for item in level
            for inner in (item.values() if type(item) is dict else item)
            if type(inner) is dict or type(inner) is list
        ]
        if not level:
            return False
    return True


# What to do instead, for the values callers most often pass by mistake.
_HINTS = {
    "set": "a set (pass a list)",
    "frozenset": "a frozenset (pass a list)",
    "bytes": "bytes (pass text, or base64 it)",
    "bytearray": "a bytearray (pass text, or base64 it)",
    "datetime": "a datetime (pass .isoformat())",
    "date": "a date (pass .isoformat())",
    "Decimal": "a Decimal (pass a str or a float)",
}


def unsendable(value: object) -> tuple[str, str] | None:
    """Why ``value`` cannot be sent as JSON, or None when it can: the path from ``value`` to
    the first part that cannot be (``.items[2]``; empty for ``value`` itself) and what is
    wrong with it. Costs one encode when ``value`` can be sent; only a refused value is walked,
    without recursion, so a cycle or 100,000 levels of nesting are named, not a
    ``RecursionError``."""
    try:
        dumps_line(value)
    except (TypeError, ValueError, RecursionError):
        return _first_unsendable(value)
    return None


@dataclass(frozen=True, slots=True)
class _Up:
    """The containers above a value (a linked list, shared by siblings)."""

    ident: int
    above: _Up | None


def _first_unsendable(value: object) -> tuple[str, str]:
    stack: list[tuple[object, str, int, _Up | None]] = [(value, "", 0, None)]
    while stack:
        item, path, depth, up = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth >= MAX_NESTING:
                return f"{path[:40]}...{path[-20:]}", f"is nested deeper than {MAX_NESTING} levels"
            ident, above = id(item), up
            while above is not None:
                if above.ident == ident:
                    return path, "contains itself (a cycle)"
                above = above.above
            here = _Up(ident, up)
            if isinstance(item, dict):
                inner: list[tuple[object, str, int, _Up | None]] = []
                for key, entry in item.items():
                    if not isinstance(key, str | int | float | bool) and key is not None:
                        return path, f"has a key of type {type(key).__name__} (keys are str)"
                    if isinstance(key, float) and not math.isfinite(key):
                        return path, f"has the key {key!r} (not a JSON number)"
                    inner.append((entry, f"{path}{_segment(str(key))}", depth + 1, here))
                stack.extend(reversed(inner))
            else:
                stack.extend(
                    (entry, f"{path}[{index}]", depth + 1, here)
                    for index, entry in reversed(list(enumerate(item)))
                )
            continue
        if isinstance(item, float) and not math.isfinite(item):
            return path, f"is {item!r} (not a JSON number)"
        try:
            dumps_line(item)
        except (TypeError, ValueError):
            kind = type(item).__name__
            article = "an" if kind[:1].lower() in "aeiou" else "a"
            return path, f"is {_HINTS.get(kind, f'{article} {kind}')}, not a JSON value"
    # Every part can be sent: the encoder ran out of stack (nesting within MAX_NESTING, but
    # encoded from a call stack already deep).
    return "", "is nested too deeply to encode here"


def _segment(key: str) -> str:
    """``.name`` for a key that reads as a name, else ``["key"]`` (cut to 40 characters)."""
    if key.isidentifier():
        return f".{key[:40]}"
    return f"[{key[:40]!r}]"
