"""The core's cost per call, its two halves apart: ``handle(CallTool)`` to ``WriteStdin`` (the
request) and ``handle(StdoutReceived)`` to ``Reply`` (the answer), in the loop of the core
suite (``bench/clients/worker.py`` ``run_core``, which times them apart: legacy stdio, 256 in
flight, answers in 64 KiB chunks). Wall time of ``handle`` only, median of ``--repeats`` runs.

    .venv/bin/python bench/core_halves.py [--n 50000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics

from bench.clients.worker import run_core


def halves(n: int, window: int = 256, chunk: int = 65536) -> tuple[float, float]:
    """Microseconds per call spent in the request half and in the answer half."""
    result = run_core({"mode": "core", "n": n, "window": window, "chunk": chunk})
    return result["request_us"], result["answer_us"]


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
