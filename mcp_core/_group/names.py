"""Tool and prompt names across a group of servers: one namespaced name per tool or
prompt, stable across restarts, collision-free, and the way back from a name to
``(server, original name)``.

Prompts are named exactly like tools (``mcp__<server>__<prompt>``, the same server parts, the same
shortening past 64 characters): an agent that flattens many servers' prompts into one list meets
the same collisions as with tools, so the same rules settle them. The two kinds keep separate
tables, so a tool and a prompt may share a name.

Pure: no I/O. Both drivers' ``ClientGroup`` keep one ``ToolTable`` and one ``PromptTable`` each.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar, Generic, TypeVar

from .._vocabulary.errors import UnknownPrompt, UnknownTool
from .._vocabulary.models import Prompt, Tool
from .._vocabulary.names import normalise_server, parse_tool_name, tool_name

__all__ = ["PromptTable", "ToolTable", "server_parts"]

_HASH_CHARS = 8
# Rounds of disambiguation before two server names are declared impossible to tell apart
# (only an 8-hex-digit hash collision between two spellings gets that far).
_MAX_ROUNDS = 4
# A tool name long enough that tool_name() must shorten it: shows how it shortens a server part.
_LONG_TOOL = "x" * 64


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:_HASH_CHARS]


def server_parts(servers: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The server part of each server's tool names, and the servers that cannot have one.

    A server's part is ``normalise_server(name)`` (``"my-fs"`` -> ``"my_fs"``). When several
    servers normalise to the same part, each of them whose name is not already that part gets
    ``_`` and 8 hex digits of ``sha256(name)`` appended (``"my-fs"`` -> ``"my_fs_1b2c3d4e"``), and
    a server spelt exactly as the part keeps it. The result depends only on the set of names,
    never on their order. Returns ``(parts, unnamed)``; ``unnamed`` maps a server whose name has
    no letter or digit (or that cannot be told apart from another) to the reason.
    """
    parts: dict[str, str] = {}
    unnamed: dict[str, str] = {}
    for server in servers:
        try:
            parts[server] = normalise_server(server)
        except ValueError as exc:
            unnamed[server] = str(exc)
    for _ in range(_MAX_ROUNDS):
        clashes = _clashes(parts)
        if not clashes:
            return parts, unnamed
        for members in clashes:
            for server in members:
                if server != parts[server]:  # the server already spelt as the part keeps it
                    parts[server] = f"{parts[server]}_{_digest(server)}"
    for members in _clashes(parts):
        for server in members:
            del parts[server]
            unnamed[server] = (
                f"server name {server!r} cannot be told apart from {sorted(members)!r} in "
                f"tool names; rename one of them"
            )
    return parts, unnamed


def _clashes(parts: Mapping[str, str]) -> list[list[str]]:
    by_part: dict[str, list[str]] = {}
    for server, part in parts.items():
        by_part.setdefault(part, []).append(server)
    return [sorted(members) for members in by_part.values() if len(members) > 1]


# What a table names: a frozen dataclass with a ``name`` field (``Tool``, ``Prompt``).
Named = TypeVar("Named", Tool, Prompt)


class NameTable(Generic[Named]):
    """Namespaced names of one kind (tools or prompts) of a group of servers, and the way back
    to ``(server, original name)``.

    A name is ``tool_name(part, name)`` where ``part`` comes from ``server_parts``: it depends
    only on the server's name (and, for servers whose names clash, on which names clash) and
    the item's own name, so it is the same after a restart, and a name over 64 characters is
    shortened by ``tool_name``. Shortened names cannot be parsed back, so the table keeps
    every name it handed out. Not thread-safe: the blocking group locks around it.
    ``ToolTable`` and ``PromptTable`` are the two kinds; each has ``unknown(name)``, the
    error for a name that neither the table nor any server resolves.
    """

    kind: ClassVar[str]  # "tool", "prompt": the word in notes and errors
    _lister: ClassVar[str]  # the group method that lists this kind

    def __init__(self, servers: Iterable[str]) -> None:
        self.parts, self.unnamed = server_parts(servers)
        self._by_part: dict[str, str] = {}
        for server, part in self.parts.items():
            self._by_part[part] = server
            # The part as it appears in a shortened name (a part over 32 chars is cut too).
            shortened = parse_tool_name(tool_name(part, _LONG_TOOL))
            assert shortened is not None
            self._by_part.setdefault(shortened[0], server)
        self._routes: dict[str, tuple[str, str]] = {}
        self._names: dict[str, list[str]] = {}  # server -> the names it was given last

    def name(self, server: str, item: str) -> str:
        """The namespaced name of ``item`` (a tool's or prompt's own name) of ``server``;
        ``KeyError`` for an unnamed server, ``ValueError`` for an empty name."""
        return tool_name(self.parts[server], item)

    def publish(self, server: str, items: Sequence[Named]) -> tuple[list[Named], list[str]]:
        """Replace ``server``'s entries with ``items``; return them renamed, and notes to log
        about items left out (a duplicate or an empty name: the first of a name wins)."""
        for old in self._names.pop(server, []):
            self._routes.pop(old, None)
        renamed: list[Named] = []
        notes: list[str] = []
        for item in items:
            if not item.name:
                notes.append(f"{self.kind} '' left out: a {self.kind} name must not be empty")
                continue
            name = self.name(server, item.name)
            if name in self._routes:
                owner = self._routes[name]
                notes.append(
                    f"{self.kind} {item.name!r} left out: {name!r} already names {owner!r}"
                )
                continue
            self._routes[name] = (server, item.name)
            renamed.append(dataclasses.replace(item, name=name))
        self._names[server] = [item.name for item in renamed]
        return renamed, notes

    def resolve(self, name: str) -> tuple[str, str] | None:
        """``(server, original name)`` for a name this table handed out, else None."""
        return self._routes.get(name)

    def server_of(self, name: str) -> str | None:
        """The server whose part ``name`` carries (listed or not), or None."""
        parsed = parse_tool_name(name)
        return None if parsed is None else self._by_part.get(parsed[0])

    def _hint(self, name: str) -> str:
        """Why no server resolves ``name``, and the closest listed name if one is close."""
        parsed = parse_tool_name(name)
        server = self.server_of(name)
        if parsed is None:
            hint = f"names here look like mcp__<server>__<{self.kind}>; {self._lister}() gives them"
        elif server is None:
            hint = f"no server is named {parsed[0]!r} here (servers: {', '.join(self.parts)})"
        else:
            hint = f"server {server!r} lists no such {self.kind}"
        close = difflib.get_close_matches(name, list(self._routes), n=1)
        return hint + (f"; did you mean {close[0]!r}?" if close else "")


class ToolTable(NameTable[Tool]):
    """The group's tool names, ``mcp__<server>__<tool>`` (see ``NameTable``)."""

    kind = "tool"
    _lister = "list_tools"

    def unknown(self, name: str) -> UnknownTool:
        """The error for a name that neither the table nor any server resolves."""
        return UnknownTool(name, self._hint(name))


class PromptTable(NameTable[Prompt]):
    """The group's prompt names, ``mcp__<server>__<prompt>`` (see ``NameTable``)."""

    kind = "prompt"
    _lister = "list_prompts"

    def unknown(self, name: str) -> UnknownPrompt:
        """The error for a name that neither the table nor any server resolves."""
        return UnknownPrompt(name, self._hint(name))
