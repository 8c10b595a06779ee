"""A spec's ``client_info``: how the client names itself to the server (MCP 2025-11-25
basic/lifecycle, ``Implementation``: ``name`` and ``version`` required, ``title`` optional),
in ``initialize``'s ``clientInfo`` and in every 2026-07-28 request's
``_meta["io.modelcontextprotocol/clientInfo"]``. Empty (the default): the client's own name.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from .._vocabulary.urls import REDACTED

__all__ = ["CLIENT_INFO_KEYS", "client_info_problem", "redact_client_info"]

CLIENT_INFO_KEYS = ("name", "version", "title")
_HINT = 'give it as {"name": "my-app", "version": "1.2.0", "title": "My App"} (title optional)'


def client_info_problem(value: object) -> tuple[str, str] | None:
    """What is wrong with ``value`` as a ``client_info`` mapping, as (problem, hint), or None.
    A ``title`` of None is as if it were left out."""
    if not isinstance(value, Mapping):
        return f"'client_info' must be a mapping, got {type(value).__name__}", _HINT
    if not value:
        return None
    for key in value:
        if key not in CLIENT_INFO_KEYS:
            close = (
                difflib.get_close_matches(key, CLIENT_INFO_KEYS, n=1)
                if isinstance(key, str)
                else []
            )
            shown = repr(key) if isinstance(key, str) and len(key) <= 64 else "of another type"
            hint = (
                f"did you mean {close[0]!r}?"
                if close
                else f"known keys: {', '.join(CLIENT_INFO_KEYS)}"
            )
            return f"unknown key {shown} in 'client_info'", hint
    for key in CLIENT_INFO_KEYS:
        item = value.get(key)
        if (item is None and key == "title") or (isinstance(item, str) and item.strip()):
            continue
        got = "missing" if key not in value else f"{type(item).__name__} {item!r}"[:60]
        return f"client_info[{key!r}] must be a non-empty string, got {got}", _HINT
    return None


def redact_client_info(value: Mapping[Any, Any]) -> dict[str, object]:
    """``client_info`` as a spec shows it: its strings are no secret (the server gets them),
    but what sits under a key it does not know is not shown."""
    return {
        str(key): item if key in CLIENT_INFO_KEYS and isinstance(item, str | None) else REDACTED
        for key, item in value.items()
    }
