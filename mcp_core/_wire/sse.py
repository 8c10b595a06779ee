"""Server-Sent Events decoding for the Streamable HTTP and HTTP+SSE transports.

Follows WHATWG HTML "Interpreting an event stream" (server-sent-events.html#event-stream-
interpretation): lines end in CRLF, LF or CR; ``data`` lines join with "\\n"; ``event`` names the
type ("message" when absent); ``id`` sets the last event ID unless it holds NUL; ``retry`` takes
ASCII digits only; lines starting with ":" are comments (MCP 2026-07-28 sends them as
keep-alives); other field names are ignored. A blank line dispatches the event.

Two choices for MCP:
- An event whose data is empty is not emitted (WHATWG would fire one for ``data:`` with an empty
  value). MCP 2025-11-25 basic/transports §Sending Messages to the Server, item 6: the server
  "SHOULD immediately send an SSE event consisting of an event ID and an empty `data` field in
  order to prime the client to reconnect" - that is no message, and JSON-decoding "" would fail.
  Its id and retry still reach ``last_event_id`` and ``retry``.
- A ``retry`` of more than 18 digits is ignored, so ``int()`` stays inside Python's digit limit.
- An event too large to keep is reported (``SseTooLarge``) as soon as its bytes show it, not at
  its blank line: a line that never ends (``data: xxx...`` forever) must not be read forever.
  The event counts as dispatched then: ``last_event_id`` takes its id as read so far (a stream
  reopened after it does not ask for it again), and its blank line dispatches nothing more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SseDecoder", "SseEvent", "SseFrame", "SseTooLarge"]

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(rb"\r\n?|\n")
# A line may exceed max_event_bytes by its "data: " prefix, so the cap is one on data bytes.
_PREFIX_ROOM = len(b"data: ")
_DATA_FIELD = b"data:"
_MAX_RETRY_DIGITS = 18


@dataclass(frozen=True, slots=True, kw_only=True)
class SseEvent:
    """A dispatched event with non-empty data. ``id`` is the last event ID in effect for it."""

    event: str
    data: str
    id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SseTooLarge:
    """An event discarded because its data, or one of its lines, exceeded ``max_event_bytes``,
    reported as soon as the bytes read show it (the event may go on, unread).

    ``size`` counts the event's bytes up to and including the one that showed it too large
    (its lines, line endings excluded): the event is at least that large. It does not depend
    on how the stream was split into pieces.
    """

    size: int


SseFrame = SseEvent | SseTooLarge


class SseDecoder:
    """Turn a ``text/event-stream`` body, fed in pieces split anywhere, into ``SseFrame``s.

    ``feed`` never raises for anything the peer sends. An oversized event is not kept: one
    ``SseTooLarge`` comes as soon as it is known too large (a line longer than the cap plus
    the room of ``"data: "``, or data over the cap, the LFs joining its lines counted), even
    in the middle of a line; its data is dropped (its ``event``, ``id`` and ``retry`` lines
    still apply), and decoding goes on with the next event.
    """

    __slots__ = (
        "_after_cr", "_at_start", "_closed", "_data", "_data_size", "_event_size", "_id_buffer",
        "_last_event_id", "_line", "_line_limit", "_line_size", "_retry", "_too_large", "_type",
        "max_event_bytes",
    )  # fmt: skip

    def __init__(self, max_event_bytes: int) -> None:
        if max_event_bytes < 1:
            raise ValueError("max_event_bytes must be >= 1")
        self.max_event_bytes = max_event_bytes
        self._line_limit = max_event_bytes + _PREFIX_ROOM
        self._line = bytearray()  # the unfinished line, while within _line_limit
        self._line_size = 0  # its size, also once it is no longer held
        self._at_start = True  # a BOM may still be arriving
        self._after_cr = False  # the last piece ended in CR: an LF next is part of that line end
        self._closed = False
        self._data: list[bytes] = []
        self._data_size = 0  # bytes of the joined data buffer
        self._type = b""
        self._event_size = 0  # bytes of the event's finished lines
        self._too_large = False  # reported already: its blank line dispatches nothing
        self._id_buffer: str | None = None  # WHATWG "last event ID buffer"
        self._last_event_id: str | None = None
        self._retry: int | None = None

    @property
    def last_event_id(self) -> str | None:
        """The id to resume from (``Last-Event-ID``); ``None`` until an event carried one.

        Updated when an event is dispatched (its blank line), even one with empty data, and not
        when its ``id`` line is read: an event cut off by a dropped connection is then replayed.
        """
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The reconnection time in milliseconds the server last asked for, or ``None``."""
        return self._retry

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for the unfinished line and event data (at most about 2 x the cap)."""
        return len(self._line) + self._data_size

    def __repr__(self) -> str:
        return (
            f"SseDecoder(max_event_bytes={self.max_event_bytes}, buffered_bytes="
            f"{self.buffered_bytes}, last_event_id={self._last_event_id!r}, retry={self._retry})"
        )

    def feed(self, data: bytes) -> list[SseFrame]:
        """Add ``data`` and return the frames of every event it completed, in order.

        Raises ``RuntimeError`` after ``close()``; the decoder's state is unchanged then.
        """
        if self._closed:
            raise RuntimeError("SseDecoder.feed() after close()")
        if self._at_start:
            head = bytes(self._line) + data
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._line[:] = head
                return []
            self._at_start = False
            self._line.clear()
            data = head.removeprefix(_BOM)
        start = 1 if self._after_cr and data.startswith(b"\n") else 0
        if data:
            self._after_cr = data.endswith(b"\r")
        view = memoryview(data)  # slices of a view do not copy a large read
        frames: list[SseFrame] = []
        # Only the new bytes are searched, so many small pieces of one line stay linear.
        for line_end in _LINE_END.finditer(data, start):
            self._append(view[start : line_end.start()], frames)
            self._end_line(frames)
            start = line_end.end()
        self._append(view[start:], frames)
        return frames

    def close(self) -> list[SseFrame]:
        """End of stream. An event without its blank line is discarded, as WHATWG says ("If the
        file ends in the middle of an event, before the final empty line, the incomplete event is
        not dispatched"), so this returns ``[]``; its ``id`` does not reach ``last_event_id``."""
        self._closed = True
        self._line.clear()
        self._data.clear()
        self._data_size = 0
        return []

    def _append(self, piece: memoryview, frames: list[SseFrame]) -> None:
        """Add ``piece`` to the unfinished line; report the event once its bytes show it is too
        large, whether or not the line ever ends."""
        size = self._line_size + len(piece)
        if size <= self._line_limit:
            self._line += piece
            head = self._line[:_PREFIX_ROOM]
        else:
            # Not held. The line was held until now, unless the event was reported already.
            head = (self._line[:_PREFIX_ROOM] + piece[:_PREFIX_ROOM])[:_PREFIX_ROOM]
            self._line.clear()
        self._line_size = size
        if self._too_large:
            return
        known = self._line_limit + 1  # the byte of the line that shows the event too large
        if head.startswith(_DATA_FIELD):
            # A data line: its value is the rest, less one leading space (WHATWG).
            room = self.max_event_bytes - self._data_size - (1 if self._data else 0)
            if room < 0:
                known = len(_DATA_FIELD)
            elif len(head) == _PREFIX_ROOM:
                known = min(known, len(_DATA_FIELD) + 1 + room + (head[-1] == 0x20))
        if known <= size:
            self._overflow(self._event_size + known, frames)

    def _end_line(self, frames: list[SseFrame]) -> None:
        line, size = bytes(self._line), self._line_size
        self._line.clear()
        self._line_size = 0
        if size == 0:
            self._dispatch(frames)
            return
        self._event_size += size
        if size > self._line_limit:  # not held, not interpreted; reported by _append
            return
        name, _, value = line.partition(b":")
        if not name:  # the line starts with ":": a comment
            return
        value = value.removeprefix(b" ")
        if name == b"data":
            self._add_data(value, frames)
        elif name == b"event":
            self._type = value
        elif name == b"id":
            if b"\0" not in value:
                self._id_buffer = value.decode("utf-8", errors="replace")
        elif name == b"retry" and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
            self._retry = int(value)

    def _add_data(self, value: bytes, frames: list[SseFrame]) -> None:
        if self._too_large:
            return
        self._data_size += len(value) + (1 if self._data else 0)
        if self._data_size > self.max_event_bytes:
            # Only a "data" line without a colon gets here (its LF alone is over the cap):
            # _append reported any other data line over it before its end.
            self._overflow(self._event_size, frames)
        else:
            self._data.append(value)

    def _overflow(self, size: int, frames: list[SseFrame]) -> None:
        """The event is too large: report it now, as dispatched (see the module docstring)."""
        self._too_large = True
        self._data.clear()
        self._data_size = 0
        self._last_event_id = self._id_buffer
        frames.append(SseTooLarge(size=size))

    def _dispatch(self, frames: list[SseFrame]) -> None:
        self._last_event_id = self._id_buffer  # WHATWG: set even when nothing is dispatched
        if not self._too_large:
            joined = b"\n".join(self._data)
            if joined:  # empty data: no event (see the module docstring)
                frames.append(
                    SseEvent(
                        event=self._type.decode("utf-8", errors="replace") or "message",
                        data=joined.decode("utf-8", errors="replace"),
                        id=self._last_event_id,
                    )
                )
        self._data, self._data_size, self._type = [], 0, b""
        self._too_large, self._event_size = False, 0
