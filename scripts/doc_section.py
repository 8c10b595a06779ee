"""A docs page section drawn by a script: the text between two marker comments, read and
written the same way for every table the docs show from test rows (the server fault matrix and
the authorization fault matrix, both on docs/guarantees.md).

A table script names its page (PAGE), its markers (START, END) and how it draws the section
(render); ``main`` prints or writes the section, and ``shown_and_drawn`` is what a test compares.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent


def section_of(page: str, start: str, end: str) -> str:
    """What ``page`` has between the markers ("" when a marker is missing)."""
    if start not in page or end not in page:
        return ""
    return page.split(start, 1)[1].split(end, 1)[0].removeprefix("\n")


def main(page: Path, render: Callable[[], str], start: str, end: str, what: str) -> None:
    """Print the section; with ``--write``, put it into ``page`` between the markers."""
    section = render()
    if sys.argv[1:] != ["--write"]:
        print(section, end="")
        return
    text = page.read_text()
    if start not in text or end not in text:
        sys.exit(f"{page} has no markers: put {start!r} and {end!r} where {what} goes")
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    page.write_text(f"{head}{start}\n{section}{end}{tail}")
    print(f"wrote {what} into {page}")


def shown_and_drawn(script: str) -> tuple[str, str]:
    """For the test beside a table's rows: what scripts/<script>.py's page shows between its
    markers, and what the script draws from the rows now. They differ until the script has
    been run with ``--write``."""
    sys.path.insert(0, str(SCRIPTS))  # the table scripts import this module by its bare name
    try:
        module = importlib.import_module(script)
    finally:
        sys.path.remove(str(SCRIPTS))
    shown = section_of(module.PAGE.read_text(), module.START, module.END)
    return shown, module.render()
