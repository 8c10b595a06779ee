"""Newline-delimited JSON framing for the stdio transport.

MCP 2025-11-25 basic/transports §stdio: "Messages are delimited by newlines, and MUST NOT
contain embedded newlines." and (2025-03-26+) "JSON-RPC messages MUST be UTF-8 encoded".

``LineDecoder`` turns bytes read in arbitrary pieces into frames. It splits on ``b"\\n"`` bytes
*before* decoding, so a read that ends inside a multi-byte UTF-8 character is harmless (the
byte 0x0A never occurs inside one). A line longer than ``max_message_bytes`` is not kept in
memory: only its first and last 512 bytes are, to report its size and, when the heuristic in
``_recover_id`` finds it, the id of the response it carried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .json import dumps_line, loads

__all__ = ["Frame", "LineDecoder", "Message", "NotJson", "Oversized", "encode_message"]

_EXCERPT_CHARS = 200
_KEEP = 512  # bytes kept from each end of an oversized line
_BOM = b"\xef\xbb\xbf"


def encode_message(message: object) -> bytes:
    """One message as compact UTF-8 JSON followed by ``b"\\n"``.

    Compact JSON never contains a raw newline (JSON escapes it inside strings), which is what
    the stdio framing needs. Raises ``TypeError`` for a value JSON cannot hold and
    ``ValueError`` for NaN or infinity, which are not JSON and which servers reject. A lone
    surrogate in a str is written in its ASCII escape form (``"\\udc80"``).
    """
    return dumps_line(message)


@dataclass(slots=True)
class Message:
    """A line that held a JSON object (a message) or array (a 2025-03-26 batch). Not frozen:
    one is made per line read, and a frozen dataclass costs about twice as much to build."""

    payload: dict[str, Any] | list[Any]


@dataclass(frozen=True, slots=True)
class NotJson:
    """A line that was not a JSON object or array, or not UTF-8. ``excerpt`` is its start;
    ``request_id`` the id of the response it looks like, found as for an oversized line
    (``_recover_id``), or None."""

    excerpt: str
    request_id: int | str | None = None


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line of ``size`` bytes (newline excluded), over the limit; it was discarded.

    ``request_id`` is the id of the response it most likely carried, or ``None``.
    """

    size: int
    request_id: int | str | None


Frame = Message | NotJson | Oversized


class LineDecoder:
    """Split a byte stream into newline-delimited JSON frames, with a size cap per line.

    ``feed`` never raises for anything the peer sends: bad lines become ``NotJson`` or
    ``Oversized`` frames and decoding continues with the next line. Blank lines are skipped
    and a ``\\r`` before the newline is ignored (servers on Windows write CRLF).
    """

    __slots__ = ("_discarding", "_head", "_line", "_size", "_tail", "max_message_bytes")

    def __init__(self, max_message_bytes: int) -> None:
        if max_message_bytes < 1:
            raise ValueError("max_message_bytes must be >= 1")
        self.max_message_bytes = max_message_bytes
        self._line = bytearray()  # the current line, while it is within the limit
        self._discarding = False  # True while skipping an oversized line
        self._size = 0  # bytes of the oversized line seen so far
        self._head = b""  # its first _KEEP bytes
        self._tail = b""  # its last _KEEP bytes

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for the unfinished line (bounded by the limit, or by 2 x 512)."""
        return len(self._line) + len(self._head) + len(self._tail)

    def feed(self, data: bytes) -> list[Frame]:
        """Add ``data`` and return the frames of every line it completed, in order."""
        frames: list[Frame] = []
        start = 0
        # Only the new bytes are searched: the held partial line has no newline in it, so
        # many small reads of one long line stay linear.
        while (newline := data.find(b"\n", start)) >= 0:
            if self._line or self._discarding:
                self._append(memoryview(data)[start:newline])
                frame = self._finish_held()
            elif newline - start <= self.max_message_bytes:
                # The common case: a whole line within this read, parsed without being held.
                frame = self._frame(data[start:newline])
            else:
                frame = self._oversized(data[start:newline])
            if frame is not None:
                frames.append(frame)
            start = newline + 1
        if start < len(data):
            self._append(memoryview(data)[start:])  # slices of a view do not copy a large read
        return frames

    def _append(self, chunk: memoryview) -> None:
        if self._discarding:
            self._size += len(chunk)
            if len(self._head) < _KEEP:  # the line overflowed before its head was complete
                self._head += bytes(chunk[: _KEEP - len(self._head)])
            self._tail = (self._tail + bytes(chunk[-_KEEP:]))[-_KEEP:]
            return
        # One extra byte of room: a trailing "\r" is not part of the message.
        if len(self._line) + len(chunk) <= self.max_message_bytes + 1:
            self._line += chunk
            return
        held = bytes(self._line)
        self._discarding = True
        self._size = len(held) + len(chunk)
        self._head = (held[:_KEEP] + bytes(chunk[:_KEEP]))[:_KEEP]
        self._tail = (held[-_KEEP:] + bytes(chunk[-_KEEP:]))[-_KEEP:]
        self._line = bytearray()

    def _finish_held(self) -> Frame | None:
        if self._discarding:
            size, head, tail = self._size, self._head, self._tail
            self._discarding, self._size, self._head, self._tail = False, 0, b"", b""
            if tail.endswith(b"\r"):
                size, tail = size - 1, tail[:-1]
            return Oversized(size=size, request_id=_recover_id(head, tail))
        line, self._line = self._line, bytearray()
        if len(line) > self.max_message_bytes:
            return self._oversized(bytes(line))  # "\r" or one byte too many
        return self._frame(line)

    def _oversized(self, line: bytes) -> Oversized | Message | NotJson | None:
        if line.endswith(b"\r") and len(line) - 1 <= self.max_message_bytes:
            return self._frame(line)
        if line.endswith(b"\r"):
            line = line[:-1]
        return Oversized(size=len(line), request_id=_recover_id(line[:_KEEP], line[-_KEEP:]))

    def _frame(self, line: bytes | bytearray) -> Message | NotJson | None:
        """One line (at most ``max_message_bytes`` plus a trailing ``"\\r"``, which JSON reads
        as whitespace) as a frame; a blank line is no frame."""
        try:
            payload = loads(line)
        # UnicodeDecodeError and JSONDecodeError are ValueErrors; absurd nesting ("[[[[...")
        # exhausts the parser's recursion instead, and must not crash the caller either.
        except (ValueError, RecursionError):
            return self._retry(bytes(line))
        if type(payload) is dict or type(payload) is list:
            return Message(payload=payload)
        return _not_json(bytes(line))

    def _retry(self, line: bytes) -> Message | NotJson | None:
        # Only lines that did not parse come here: blank ones, and those led by a byte-order
        # mark, which some Windows tools write.
        if not line.strip():
            return None
        if line.startswith(_BOM):
            return self._frame(line[len(_BOM) :])
        return _not_json(line)


def _not_json(line: bytes) -> NotJson:
    line = line.rstrip(b"\r")
    return NotJson(excerpt=_excerpt(line), request_id=_recover_id(line[:_KEEP], line[-_KEEP:]))


def _excerpt(line: bytes) -> str:
    return line[: _EXCERPT_CHARS * 4].decode("utf-8", errors="replace")[:_EXCERPT_CHARS]


# --- id recovery from an oversized or unreadable line -------------------------------------------
#
# Only the two ends of the line are kept, so the id is found by shape, not by parsing:
#   head  {"jsonrpc":"2.0","id":5,"result":...     (Python SDK, most servers)
#   tail  ...,"jsonrpc":"2.0","id":5}              (TypeScript SDK: {result, jsonrpc, id})
# The id must belong to a response: a line whose head is a request ({"id":5,"method":...}) or
# a notification yields None, so a server's own request id is never mistaken for ours.
# Integer ids and short strings without escapes are recognised; anything else gives None.

_WS = rb"[ \t\r\n]*"
_ID = rb"(-?\d{1,19}|\"[^\"\\]{0,64}\")"
_JSONRPC = rb"(?:\"jsonrpc\"" + _WS + rb":" + _WS + rb"\"2\.0\"" + _WS + rb"," + _WS + rb")?"
_RESPONSE_KEY = rb"\"(?:result|error)\"" + _WS + rb":"
_HEAD_WITH_ID = re.compile(
    rb"\A"
    + _WS
    + rb"\{"
    + _WS
    + _JSONRPC
    + rb"\"id\""
    + _WS
    + rb":"
    + _WS
    + _ID
    + _WS
    + rb","
    + _WS
    + _JSONRPC
    + _RESPONSE_KEY
)
_HEAD_OF_RESPONSE = re.compile(rb"\A" + _WS + rb"\{" + _WS + _JSONRPC + _RESPONSE_KEY)
_TAIL_WITH_ID = re.compile(
    rb"," + _WS + rb"\"id\"" + _WS + rb":" + _WS + _ID + _WS + rb"\}" + _WS + rb"\Z"
)


def _recover_id(head: bytes, tail: bytes) -> int | str | None:
    match = _HEAD_WITH_ID.match(head)
    if match is None and _HEAD_OF_RESPONSE.match(head):
        match = _TAIL_WITH_ID.search(tail)
    if match is None:
        return None
    value = match.group(1)
    if value.startswith(b'"'):
        return value[1:-1].decode("utf-8", errors="replace")
    return int(value)
