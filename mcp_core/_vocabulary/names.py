"""Namespaced tool names for a group of servers: ``mcp__<server>__<tool>``.

The ``mcp__server__tool`` shape is the one agents already use (Claude Code), and it lets a
model call tools of many servers through one flat list. The server part is normalised so it
can be found again: only ``[A-Za-z0-9_]``, no ``__`` inside, no ``_`` at either end. The tool
part is kept as the server spelt it.

LLM providers cap tool names at 64 characters (OpenAI, Anthropic: ``^[a-zA-Z0-9_-]{1,64}$``).
A longer name is shortened deterministically: the head of the tool name, ``_``, and 8 hex
digits of ``sha256(server + "\\0" + tool)``, so two tools of one server cannot collide by
being cut at the same place. ``parse_tool_name`` cannot undo a shortening (the cut-off part is
gone): it returns the shortened tool part, and ``ClientGroup`` maps such names back through the
table it built when listing tools.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_TOOL_NAME", "normalise_server", "parse_tool_name", "tool_name"]

MAX_TOOL_NAME = 64
_PREFIX = "mcp__"
_SEPARATOR = "__"
_HASH_CHARS = 8
# A shortened server part: 23 chars + "_" + 8 hex = 32, leaving >= 16 chars of tool head.
_MAX_SERVER = 32
_SERVER_HEAD = _MAX_SERVER - _HASH_CHARS - 1
_SERVER_PART = re.compile(r"[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:_HASH_CHARS]


def normalise_server(server: str) -> str:
    """The server part of a namespaced name: ``"my-fs.v2"`` -> ``"my_fs_v2"``.

    Raises ``ValueError`` when nothing usable is left (``""``, ``"--"``).
    """
    part = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_]", "_", server)).strip("_")
    if not part:
        raise ValueError(
            f"server name {server!r} has no letter or digit; name the server with [A-Za-z0-9_]"
        )
    return part


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, at most 64 characters (see the module docstring).

    Raises ``ValueError`` for an empty tool name or a server name with no letter or digit.
    """
    if not tool:
        raise ValueError("tool name must not be empty")
    part = normalise_server(server)
    full = f"{_PREFIX}{part}{_SEPARATOR}{tool}"
    if len(full) <= MAX_TOOL_NAME:
        return full
    if len(part) > _MAX_SERVER:
        part = f"{part[:_SERVER_HEAD].rstrip('_')}_{_digest(server)}"
    room = MAX_TOOL_NAME - len(_PREFIX) - len(part) - len(_SEPARATOR) - 1 - _HASH_CHARS
    return f"{_PREFIX}{part}{_SEPARATOR}{tool[:room]}_{_digest(server + chr(0) + tool)}"


def parse_tool_name(name: str) -> tuple[str, str] | None:
    """``"mcp__fs__read_file"`` -> ``("fs", "read_file")``; None if ``name`` is not of that
    shape. The server comes back normalised; for a shortened name the tool part is the
    shortened one (``ClientGroup`` resolves it through its own table)."""
    if not name.startswith(_PREFIX):
        return None
    server, separator, tool = name[len(_PREFIX) :].partition(_SEPARATOR)
    if not separator or not tool or not _SERVER_PART.fullmatch(server):
        return None
    return server, tool
