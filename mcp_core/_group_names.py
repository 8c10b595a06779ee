"""Tool names across a group of servers (SPEC §12): one namespaced name per tool, stable across
restarts, collision-free, and the way back from a name to ``(server, tool)``.

Pure: no I/O. Both drivers' ``ClientGroup`` keep one ``ToolTable`` each.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
from collections.abc import Iterable, Mapping, Sequence

from ._errors import UnknownTool
from ._models import Tool
from ._names import normalise_server, parse_tool_name, tool_name

__all__ = ["ToolTable", "server_parts"]

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


class ToolTable:
    """Namespaced tool names of a group of servers and the way back to ``(server, tool)``.

    A tool's name is ``tool_name(part, tool)`` where ``part`` comes from ``server_parts``: it
    depends only on the server's name (and, for servers whose names clash, on which names
    clash) and the tool's name, so it is the same after a restart, and a name over 64
    characters is shortened by ``tool_name``. Shortened names cannot be parsed back, so the
    table keeps every name it handed out. Not thread-safe: the blocking group locks around it.
    """

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

    def name(self, server: str, tool: str) -> str:
        """The namespaced name of ``tool`` of ``server``; ``KeyError`` for an unnamed server,
        ``ValueError`` for an empty tool name."""
        return tool_name(self.parts[server], tool)

    def publish(self, server: str, tools: Sequence[Tool]) -> tuple[list[Tool], list[str]]:
        """Replace ``server``'s entries with ``tools``; return them renamed, and notes to log
        about tools left out (a duplicate or an empty name: the first of a name wins)."""
        for old in self._names.pop(server, []):
            self._routes.pop(old, None)
        renamed: list[Tool] = []
        notes: list[str] = []
        for tool in tools:
            try:
                name = self.name(server, tool.name)
            except ValueError as exc:
                notes.append(f"tool {tool.name!r} left out: {exc}")
                continue
            if name in self._routes:
                owner = self._routes[name]
                notes.append(f"tool {tool.name!r} left out: {name!r} already names {owner!r}")
                continue
            self._routes[name] = (server, tool.name)
            renamed.append(dataclasses.replace(tool, name=name))
        self._names[server] = [tool.name for tool in renamed]
        return renamed, notes

    def resolve(self, name: str) -> tuple[str, str] | None:
        """``(server, original tool name)`` for a name this table handed out, else None."""
        return self._routes.get(name)

    def server_of(self, name: str) -> str | None:
        """The server whose part ``name`` carries (listed or not), or None."""
        parsed = parse_tool_name(name)
        return None if parsed is None else self._by_part.get(parsed[0])

    def unknown(self, name: str) -> UnknownTool:
        """The error for a name that neither the table nor any server resolves."""
        parsed = parse_tool_name(name)
        server = self.server_of(name)
        if parsed is None:
            hint = "names here look like mcp__<server>__<tool>; list_tools() gives them"
        elif server is None:
            hint = f"no server is named {parsed[0]!r} here (servers: {', '.join(self.parts)})"
        else:
            hint = f"server {server!r} lists no such tool"
        close = difflib.get_close_matches(name, list(self._routes), n=1)
        return UnknownTool(name, hint + (f"; did you mean {close[0]!r}?" if close else ""))
