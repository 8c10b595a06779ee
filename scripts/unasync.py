"""Write the blocking driver's twins of the anyio driver's shells: ``mcp_sync/_client.py`` from
``mcp_asyncio/_client.py`` and ``mcp_sync/_group.py`` from ``mcp_asyncio/_group.py``.

``Client`` and ``ClientGroup`` are the same API on both drivers, awaited on one and blocking on
the other, and what they do is the same: build a session, hand it each call as an event,
route a group's calls. So they are written once, in the anyio driver, and the blocking twin is
this script's output, checked in. What genuinely differs (how a session waits and runs its
background work, how a group runs one call per client at once, processes, HTTP) is written
twice, by hand, in the modules each shell imports (``_session``, ``_fanout``, ``_process``,
``_http``), and each says why at its top. docs/architecture.md, "The twin drivers".

Two kinds of substitution, in this order:

- ``PHRASES``: for each file, exact passages of the anyio source (docstring sentences, a
  comment) and the blocking driver's wording of the same thing, where the drivers differ in
  what they promise (an event loop, cancellation, the thread a callback runs in). Each must
  be found in its source: a passage edited there without its entry here is an error, not a
  silent miss.
- ``TOKENS``: regular expressions over the rest, as httpcore's unasync script does:
  ``async def`` -> ``def``, ``await x`` -> ``x``, ``async with`` -> ``with``, the dunder
  methods of an async context manager, ``Awaitable[T]`` -> ``T``, and the two package names
  swapped (each refers to its twin by name).

The source's first line says it is a source; the output's first line says it is generated.
The output must be free of the anyio driver's words (``LEFTOVERS``), else this fails: add
a phrase or a token rule for what it found.

    python scripts/unasync.py          write the generated files
    python scripts/unasync.py --check  exit 1, printing a diff, if a checked-in file differs
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "mcp_asyncio"
TARGET = "mcp_sync"

SOURCE_HEADER = (
    "# The source of mcp_sync/{name} (scripts/unasync.py generates it): edit here, then run it."
)
GENERATED_HEADER = (
    "# Generated from mcp_asyncio/{name} by scripts/unasync.py; do not edit (edit that file\n"
    "# and run the script: docs/architecture.md, The twin drivers)."
)

# Each passage is written as it stands in the source, from its first column: indentation
# and line breaks are part of it.
PHRASES: dict[str, list[tuple[str, str]]] = {
    "_client.py": [
        ("with one MCP server, on anyio (its\n", "with one MCP server, blocking (its\n"),
        (
            """\
    \"\"\"A client for one MCP server, on anyio (asyncio or trio).
""",
            """\
    \"\"\"A client for one MCP server, blocking and safe to use from many threads at once.
""",
        ),
        (
            """\
    A client belongs to the event loop it was started on: used from another loop, any call
    (``stop()`` too) raises ``WrongEventLoop``.

""",
            "",
        ),
        (
            """\
    parent's server and pipes alone. A new client made in the child works.
""",
            """\
    parent's server and pipes alone (the child's copies of the descriptors are closed at
    the fork). A new client made in the child works.
""",
        ),
        (
            """\
    SIGKILL of the process group, each after ``shutdown_grace``), and so is one still
    running when the run of its event loop ends. Call ``stop()`` or use ``async with`` rather
    than rely on either.
""",
            """\
    SIGKILL of the process group, each after ``shutdown_grace``), in a thread of the
    driver's own; one still running at interpreter exit is stopped by ``stop()`` then
    (``atexit``). Call ``stop()`` or use ``with`` rather than rely on either.
""",
        ),
        (
            """\
        session's own state; idempotent. A cancelled caller still waits for the shutdown to
        end (shielded).
""",
            """\
        session's own state; idempotent. An interrupt (``KeyboardInterrupt``) ends the wait
        early: every server process left is killed before it is raised.
""",
        ),
        (
            """\
        On another event loop it raises ``WrongEventLoop`` (unless the client has stopped
        already).
""",
            "",
        ),
        (
            """\
        ``progress(progress, total, message)`` is called for each progress notification. It
        must be a plain function (an awaitable it returns is closed, not awaited); its
        exceptions are logged.
""",
            """\
        ``progress(progress, total, message)`` is called for each progress notification, in
        the thread that read it: this caller's own while it reads its answer itself (over
        HTTP, its own request; over stdio, while it waits alone), else a driver thread (over
        stdio, the I/O thread every session of the process shares: keep it quick); its
        exceptions are logged.
""",
        ),
        ("  # another loop, a forked child: ", "  # a forked child: "),
    ],
    "_group.py": [
        ("``ClientGroup``, on anyio.\n", "``ClientGroup``, blocking.\n"),
        (
            "one namespaced tool list, on anyio (asyncio or trio).\n",
            "one namespaced tool list; blocking and safe to use from many threads.\n",
        ),
        (
            """\
    Like ``Client``, a group belongs to the event loop it was started on: used from another
    loop, its methods raise ``WrongEventLoop``.

""",
            "",
        ),
        (" (``WrongEventLoop`` on another loop)", ""),
        (
            "idempotent; a cancelled caller still waits for it (shielded).",
            "idempotent; an interrupted caller still waits for it.",
        ),
    ],
}


def _swap_packages(match: re.Match[str]) -> str:
    return TARGET if match.group(0) == SOURCE else SOURCE


TOKENS: list[tuple[str, str | Callable[[re.Match[str]], str]]] = [
    (r"\ban ``async with\b", "a ``with"),  # the article of what follows
    (r"\basync def\b", "def"),
    (r"\basync with\b", "with"),
    (r"\basync for\b", "for"),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAsyncIterable\b", "Iterable"),
    (r"\bAwaitable\[(\w+)\]", r"\1"),
    (r"\bAwaitable, ", ""),  # from collections.abc import Awaitable, Callable, ...
    (r"\bmcp_(asyncio|sync)\b", _swap_packages),
]

# Words of the anyio driver that must not be left in a blocking twin.
LEFTOVERS = re.compile(r"\b(async|await|awaited|anyio|trio|asyncio|WrongEventLoop|shielded)\b")


class Drift(Exception):
    """The source and the rules no longer fit together."""


def unasync(name: str, source: str) -> str:
    """The blocking twin of the anyio driver's file ``name`` whose text is ``source``."""
    first, newline, rest = source.partition("\n")
    if first != SOURCE_HEADER.format(name=name):
        raise Drift(f"{SOURCE}/{name}: its first line must be {SOURCE_HEADER.format(name=name)!r}")
    protected: list[str] = []
    for old, new in PHRASES[name]:
        if old not in rest:
            raise Drift(f"{SOURCE}/{name}: no longer holds the passage {old!r} (PHRASES)")
        rest = rest.replace(old, f"\0{len(protected)}\0")
        protected.append(new)
    for pattern, replacement in TOKENS:
        rest = re.sub(pattern, replacement, rest)
    rest = re.sub("\0(\\d+)\0", lambda match: protected[int(match.group(1))], rest)
    for number, line in enumerate(rest.split("\n"), start=2):
        left = LEFTOVERS.search(line)
        if left is not None:
            raise Drift(
                f"{TARGET}/{name}:{number}: {left.group(0)!r} is left in the blocking twin "
                f"(add a rule to scripts/unasync.py): {line.strip()}"
            )
    return GENERATED_HEADER.format(name=name) + newline + rest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 and print a diff if a generated file differs",
    )
    args = parser.parse_args(argv)
    drifted = False
    for name in PHRASES:
        source_path, target_path = ROOT / SOURCE / name, ROOT / TARGET / name
        try:
            wanted = unasync(name, source_path.read_text(encoding="utf-8"))
        except Drift as exc:
            print(f"unasync: {exc}", file=sys.stderr)
            return 2
        present = target_path.read_text(encoding="utf-8") if target_path.exists() else ""
        if present == wanted:
            continue
        if args.check:
            drifted = True
            sys.stdout.writelines(
                difflib.unified_diff(
                    present.splitlines(keepends=True),
                    wanted.splitlines(keepends=True),
                    f"{TARGET}/{name} (checked in)",
                    f"{TARGET}/{name} (generated from {SOURCE}/{name})",
                )
            )
        else:
            target_path.write_text(wanted, encoding="utf-8")
            print(f"wrote {target_path.relative_to(ROOT)}")
    if drifted:
        print(
            "\nunasync: the blocking twins differ from what scripts/unasync.py generates: edit "
            "the mcp_asyncio file, not the mcp_sync one, and run `python scripts/unasync.py`",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
