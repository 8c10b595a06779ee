"""The peer a replaying client talks to: ``python -m _mcp_io.replay_peer RECORDING``.

It reads JSON-RPC messages from stdin, one per line, and answers each request from the
recording (``mcp_core.replay.Cassette``): the recorded progress, then the recorded response,
with the request's own id and progress token. It starts no server and opens nothing but the
recording; it ends when stdin closes. ``Client(replay=...)`` runs it as its stdio server, so
the client, its validation and its errors are the real ones (docs/testing.md).

A recording that cannot be read is reported on stderr with exit code 2, which the client
shows as the server's stderr tail.
"""

from __future__ import annotations

import json
import sys

from mcp_core.replay import Cassette

__all__ = ["main"]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m _mcp_io.replay_peer RECORDING\n")
        return 2
    try:
        with open(argv[0], encoding="utf-8") as recording:
            cassette = Cassette.from_lines(recording)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"cannot replay {argv[0]}: {exc}\n")
        return 2
    stdout = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        for answer in cassette.answer(message):
            stdout.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
        stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
