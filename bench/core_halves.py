"""The core's cost per call, its two halves apart: ``handle(CallTool)`` to ``WriteStdin`` (the
request) and ``handle(StdoutReceived)`` to ``Reply`` (the answer), in the loop of the core
suite (``bench/clients/worker.py`` ``run_core``: legacy stdio, 256 in flight, answers in
64 KiB chunks). Wall time of ``handle`` only, median of ``--repeats`` runs.

    .venv/bin/python bench/core_halves.py [--n 50000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import mcp_core as core
from bench.clients.worker import _legacy_ready


def halves(n: int, window: int = 256, chunk: int = 65536) -> tuple[float, float]:
    """Microseconds per call spent in the request half and in the answer half."""
    spec = core.Spec(name="core", command="server", era="legacy", pool_size=window)
    machine = core.SessionMachine(spec)
    _legacy_ready(machine, core, 1.0)
    arguments = {"text": "hello"}
    ticket = 0
    request_s = answer_s = 0.0
    clock = time.perf_counter
    while ticket < n:
        calls = [
            core.CallTool(now=1.0, ticket=ticket + i + 1, name="echo", arguments=arguments)
            for i in range(window)
        ]
        ticket += window
        written: list[core.Action] = []
        started = clock()
        for call in calls:
            written += machine.handle(call)
        request_s += clock() - started
        answers = b"".join(
            b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hello"}]}}\n'
            % json.loads(action.data)["id"]
            for action in written
            if isinstance(action, core.WriteStdin)
        )
        events = [
            core.StdoutReceived(now=1.0, slot=0, generation=1, data=answers[i : i + chunk])
            for i in range(0, len(answers), chunk)
        ]
        started = clock()
        for event in events:
            machine.handle(event)
        answer_s += clock() - started
    return request_s / ticket * 1e6, answer_s / ticket * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    runs = [halves(args.n) for _ in range(args.repeats)]
    request = statistics.median(r[0] for r in runs)
    answer = statistics.median(r[1] for r in runs)
    both = statistics.median(r[0] + r[1] for r in runs)
    print(f"request {request:.2f} us  answer {answer:.2f} us  both {both:.2f} us per call")


if __name__ == "__main__":
    main()
