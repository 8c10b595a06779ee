"""A README.md section drawn by a script: the text between two marker comments, read and
written the same way for every table the README shows from test rows (the server fault matrix,
the authorization fault matrix)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def section_of(readme: str, start: str, end: str) -> str:
    """What ``readme`` has between the markers ("" when a marker is missing)."""
    if start not in readme or end not in readme:
        return ""
    return readme.split(start, 1)[1].split(end, 1)[0].removeprefix("\n")


def main(render: Callable[[], str], start: str, end: str, what: str) -> None:
    """Print the section; with ``--write``, put it into README.md between the markers."""
    section = render()
    if sys.argv[1:] != ["--write"]:
        print(section, end="")
        return
    readme = README.read_text()
    if start not in readme or end not in readme:
        sys.exit(f"{README} has no markers: put {start!r} and {end!r} where {what} goes")
    head, rest = readme.split(start, 1)
    tail = rest.split(end, 1)[1]
    README.write_text(f"{head}{start}\n{section}{end}{tail}")
    print(f"wrote {what} into {README}")
