"""Recorded sessions with real servers replay, without the server, to exactly the actions
the machine produced when they were recorded. A failure here means the machine's
behaviour changed: if that was intended, re-record (tests/recordings/make_recordings.py) and
review the diff of the .actions.jsonl file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_core import CallTool
from mcp_core.replay import encode_action, read_recording, replay

RECORDINGS = sorted(
    p
    for p in (Path(__file__).parent.parent / "recordings").glob("*.jsonl")
    if not p.name.endswith(".actions.jsonl")
)


def test_there_are_recordings_of_real_servers() -> None:
    assert {p.stem for p in RECORDINGS} >= {
        "everything_stdio",
        "py_sdk_modern_stdio",
        "fault_server_stdio",
    }


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_recording_replays_to_the_recorded_actions(path: Path) -> None:
    expected = [
        json.loads(line) for line in path.with_suffix(".actions.jsonl").read_text().splitlines()
    ]
    first = [encode_action(a) for a in replay(str(path))]
    second = [encode_action(a) for a in replay(str(path))]
    assert first == second
    assert json.loads(json.dumps(first)) == expected
    replies = [a for a in first if a["action"] == "Reply"]
    assert replies, "a recording answers its callers"


def test_recordings_hold_no_secret() -> None:
    for path in RECORDINGS:
        text = path.read_text()
        header = json.loads(text.splitlines()[0])
        assert all(arg == "[redacted]" for arg in header["spec"]["args"])
        assert "TOKEN" not in text and "SECRET" not in text


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_a_recording_is_read_without_replaying_it(path: Path) -> None:
    # as docs/replay.md shows: the spec and the events, one per line after the header
    with path.open() as file:
        spec, events = read_recording(file)
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    assert spec.name == path.stem
    assert len(events) == len(lines) - 1
    recorded_calls = sum('"CallTool"' in line for line in lines[1:])
    assert sum(isinstance(event, CallTool) for event in events) == recorded_calls > 0
