"""Record and replay: a session's events as JSON lines, fed again to a fresh machine.

A driver writes a recording with a ``Recorder`` (``Client(..., record="s.jsonl")`` does it for
you); ``replay(path)`` or ``replay_lines(lines)`` feeds the events to a new ``SessionMachine``
and returns the actions it produced, the same every time. ``read_recording(lines)`` gives a
recording's spec and events without replaying them. ``encode_event``, ``decode_event`` and
``encode_action`` are the line format, for tools that read or compare recordings.
``Cassette.from_lines(lines)`` holds what the recorded server answered, request by request:
what ``Client(replay="s.jsonl")`` is answered from.
"""

from ._replay import (
    Cassette,
    Recorder,
    decode_event,
    encode_action,
    encode_event,
    read_recording,
    replay,
    replay_lines,
)

__all__ = [
    "Cassette",
    "Recorder",
    "decode_event",
    "encode_action",
    "encode_event",
    "read_recording",
    "replay",
    "replay_lines",
]
