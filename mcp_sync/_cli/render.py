"""What the commands print: model objects as their MCP JSON (``--json``), and for a person
rich's tables, the spinner while servers start, the progress bar of a call, and a content
block as one line. The animations run only when stderr is a terminal (``animated``). A table
is as wide as the terminal, or ``COLUMNS``, or 100 columns when it goes to a file or a pipe;
descriptions and argument lists wrap in it, names and URIs are never cut."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import os
import sys
import threading
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

import click

from mcp_core import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    UnknownContent,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "ProgressBar",
    "animated",
    "block_text",
    "first_line",
    "output_console",
    "print_json",
    "print_table",
    "spinner",
    "wire_dict",
    "wire_json",
]

_MIN_WRAPPED = 20  # columns a wrapped column (a description, arguments) keeps at least
_PIPE_WIDTH = 100  # a table's width in a file or a pipe, unless COLUMNS says otherwise

# Our snake_case fields as the protocol spells them.
_WIRE_NAMES = {
    "mime_type": "mimeType",
    "meta": "_meta",
    "input_schema": "inputSchema",
    "output_schema": "outputSchema",
    "structured_content": "structuredContent",
    "is_error": "isError",
    "uri_template": "uriTemplate",
    "has_more": "hasMore",
}


def wire_json(value: object) -> object:
    """A model object (``Tool``, ``Resource``, ``CallToolResult``, content block, ...) as its
    MCP JSON; any other value as plain JSON, bytes (a blob) in base64 as on the wire.

    An object that kept the server's own JSON (``raw``) starts from it, so fields this client
    does not model (``icons``, ...) are shown too; the modelled fields are laid over it (a
    group's namespaced ``name``, decoded values)."""
    if isinstance(value, UnknownContent):
        return wire_json(value.raw)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        raw = getattr(value, "raw", None)
        out = {str(k): wire_json(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}
        kind = getattr(type(value), "type", None)
        if isinstance(kind, str):
            out["type"] = kind
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if item is not None and field.name != "raw":
                out[_WIRE_NAMES.get(field.name, field.name)] = wire_json(item)
        return out
    if isinstance(value, Mapping):
        return {str(key): wire_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [wire_json(item) for item in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def print_json(value: object) -> None:
    click.echo(json.dumps(value, indent=2))


def wire_dict(value: object) -> dict[str, object]:
    wire = wire_json(value)
    assert isinstance(wire, dict)
    return wire


def animated(as_json: bool) -> bool:
    """Animations only for a person watching: never with --json, never into a file or pipe."""
    return not as_json and sys.stderr.isatty()


def first_line(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0]


def spinner(fancy: bool, message: str) -> contextlib.AbstractContextManager[object]:
    if not fancy:
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(message)


def output_console(min_width: int = 0) -> Console:
    """A console on stdout as wide as the terminal, or ``COLUMNS`` (which rich reads), or
    ``_PIPE_WIDTH`` in a file or a pipe (rich's 80 would squeeze a table there); at least
    ``min_width``."""
    from rich.console import Console

    console = Console()
    width = console.width
    if not console.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        width = _PIPE_WIDTH
    return Console(width=max(width, min_width))


def print_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], *, wrap: Collection[int] = ()
) -> None:
    """A table for a person, on stdout. Every column is shown whole, each line of a cell on
    a line of its own (names and URIs are what a user copies into the next command: never cut
    nor broken), except the columns whose index is in ``wrap`` (a description): those wrap
    over as many lines as they need in what the others leave, at least ``_MIN_WRAPPED``
    columns each. Rich would rather squeeze a column to nothing than wrap a no_wrap one, so
    the widths are set here, and the table may be wider than a narrow terminal rather than
    lose a name."""
    from rich.table import Table
    from rich.text import Text

    widths = [
        max(len(line) for cell in [column, *(row[i] for row in rows)] for line in cell.split("\n"))
        for i, column in enumerate(columns)
    ]
    whole = [width for i, width in enumerate(widths) if i not in wrap]
    gaps = 2 * (len(columns) - 1)  # a gap of two spaces between columns
    console = output_console(sum(whole) + gaps + _MIN_WRAPPED * len(wrap))
    table = Table(box=None, header_style="bold", pad_edge=False)
    for i, (column, width) in enumerate(zip(columns, widths, strict=True)):
        if i in wrap:
            table.add_column(column, no_wrap=False, overflow="fold")
        else:
            table.add_column(column, no_wrap=True, min_width=width)
    for row in rows:
        # Text(), not str: a description holding [brackets] is not rich markup.
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)


class ProgressBar:
    """A spinner while the call runs that becomes a bar once the server reports progress,
    its message beside it (a task's: its status message), drawn as soon as it changes, not at
    the next tick (a short stage would go unseen). ``doing`` is the words before ``name``
    until the first message. Called from a driver thread; rich's Progress is thread-safe."""

    def __init__(self, name: str, doing: str = "calling") -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._name = name
        self._idle = f"{doing} {name}"
        self._task = self._progress.add_task(self._idle, total=None)
        self._said: str | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> ProgressBar:
        self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._progress.stop()

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        with self._lock:
            self._progress.update(
                self._task,
                completed=progress,
                total=total,
                description=f"{self._name}: {message}" if message else self._idle,
            )
            if message != self._said:
                self._said = message
                self._progress.refresh()


def block_text(block: object) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        kind = "image" if isinstance(block, ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {len(block.data)} base64 characters]"
    if isinstance(block, ResourceLink):
        return f"[resource link {block.uri}]"
    if isinstance(block, EmbeddedResource):
        text = block.resource.get("text")
        return text if isinstance(text, str) else f"[resource {block.resource.get('uri')}]"
    assert isinstance(block, UnknownContent)
    return f"[{block.type} content]"
