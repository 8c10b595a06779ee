"""``load_config``: the ``.mcp.json`` files people already have, as specs.

Claude Code, Claude Desktop and Cursor write ``{"mcpServers": {"<name>": {...}}}``; VS Code
writes the same entries under ``"servers"``. Each entry becomes one ``Spec`` named by its key.
A config is loaded entry by entry: a bad entry is reported (name -> redacted reason) and the
good ones load, so one typo never takes every server down. Only a config that cannot be read
at all raises (``InvalidConfig``).

Reading the file (and, with ``expand_env=True``, looking at its owner and mode) is the only
I/O here, like ``replay``. The environment is never read: a caller who wants ``${VAR}``
expansion passes the mapping to expand from.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._vocabulary.errors import InvalidSpec, McpError
from .._vocabulary.names import normalise_server
from .spec import Spec

__all__ = ["InvalidConfig", "LoadedConfig", "load_config"]

_TABLES = ("mcpServers", "servers")
# The transport an entry's "type" names, as the field it needs. Every HTTP flavour is a `url`
# spec: the HTTP machine finds out by itself whether the server speaks streamable HTTP or the
# 2024-11-05 HTTP+SSE transport, so "sse" is only checked, never needed.
_TYPE_NEEDS = {"stdio": "command", "http": "url", "streamable-http": "url", "sse": "url"}
_APPROVAL = "another client's tool approval or filtering; this client calls what it is asked to"
_TIMEOUT = "another client's timeout, in that client's units; use 'call_timeout' (seconds)"
_DEV = "another client's development setting"
# Keys other clients write into entries: ignored with a note instead of refusing the entry.
_FOREIGN_KEYS = {
    "autoApprove": _APPROVAL,
    "alwaysAllow": _APPROVAL,
    "disabledTools": _APPROVAL,
    "includeTools": _APPROVAL,
    "excludeTools": _APPROVAL,
    "trust": _APPROVAL,
    "timeout": _TIMEOUT,
    "networkTimeout": _TIMEOUT,
    "description": "a description for people",
    "envFile": "env files are not read; put the variables in 'env'",
    "transportType": "another client's transport name; the transport follows 'command'/'url'",
    "watchPaths": _DEV,
    "dev": _DEV,
    "gallery": _DEV,
}
# ${VAR}, ${VAR:-default}, ${env:VAR} (VS Code's spelling), ${env:VAR:-default}.
_REFERENCE = re.compile(r"\$\{([^{}]*)\}")
_VARIABLE = re.compile(r"(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", re.DOTALL)
_SHOWABLE = re.compile(r"[A-Za-z0-9_-]{1,32}")
_GROUP_OR_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class InvalidConfig(McpError):
    """The config could not be loaded at all (missing or unreadable file, invalid JSON, no
    server table, or a file other users could write when ``expand_env=True``); nothing was
    loaded. The message names the file and what to do, never the file's content."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedConfig:
    """What ``load_config`` found, in the order of the file.

    ``servers``: the entries that became specs. ``skipped``: entry name -> why it did not load
    (redacted: names and kinds only, never a value). ``source``: the path, or ``"<text>"``.
    ``notes``: keys that were ignored (settings of other clients), one sentence each.
    """

    servers: dict[str, Spec]
    skipped: dict[str, str]
    source: str
    notes: tuple[str, ...] = ()


class _Skip(Exception):
    """One entry cannot load; the message is the (secret-free) reason."""


def load_config(
    path_or_text: str | os.PathLike[str],
    *,
    expand_env: bool = False,
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Load the servers of a ``.mcp.json``-style config.

    ``path_or_text`` is JSON text when it is a ``str`` whose first non-space character is
    ``{``; anything else is a path, read as UTF-8 (a byte-order mark is allowed).

    The server table is ``"mcpServers"`` (Claude Code, Claude Desktop, Cursor) or
    ``"servers"`` (VS Code). When both are present ``"mcpServers"`` wins and ``"servers"`` is
    ignored with a note. Every other top-level key (VS Code's ``"inputs"``, Claude Desktop's
    settings) is ignored. Each entry takes every ``Spec`` field (``command``, ``args``,
    ``env``, ``cwd``, ``url``, ``headers``, ``concurrency``, ``pool_size``, ``queue_limit``,
    ``call_timeout``, ``era``, ``fail_fast``, ``prices``, ``oauth``, ...) and ``type`` (``"stdio"``,
    ``"http"``, ``"streamable-http"`` or ``"sse"``; FastMCP writes it ``transport``, taken the
    same way), which is only checked against ``command``/``url``. The entry's key is the
    spec's name (an inner ``"name"`` must match it) and must keep a letter or digit for
    namespaced tool names. ``cwd`` and a relative ``command`` are used as written, relative to
    the driver's working directory.

    Keys other clients write (``autoApprove``, ``alwaysAllow``, ``timeout``, ``description``,
    ``envFile``, ... see ``_FOREIGN_KEYS``) are ignored with a note in ``notes``: refusing a
    whole server over another client's setting would help no one. ``disabled: true`` is
    honoured: the entry is skipped with the reason ``"disabled"``. Any other unknown key
    skips the entry (``InvalidSpec`` names the key and suggests the closest field).

    ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` in ``command``, ``args``, ``env`` values,
    ``cwd``, ``url``, ``headers`` values, ``oauth`` strings (a ``client_secret`` kept out of
    the file) and ``verify``, ``cert`` and ``proxy`` (a proxy password kept out of the file)
    are expanded from ``environ`` only when ``expand_env=True``; otherwise they stay literal
    text. ``:-`` takes the default when the variable is unset or empty, as in a shell. An
    undefined variable, or a reference of another kind (VS Code's ``${input:...}``), skips
    that entry with a reason naming the variable, never a value.

    A file is expanded from only when it and its directory (and the directory of the file a
    symlink points to) are owned by the current user and not writable by group or others:
    whoever can write the config could otherwise add ``"headers": {"X": "${GITHUB_TOKEN}"}``
    to a server of theirs and receive the caller's secrets. Otherwise ``InvalidConfig`` is
    raised and nothing loads. Where ``os.getuid`` does not exist (Windows) files have no
    owner uid and synthetic mode bits, so the check is skipped there. Text (not a file) may
    always be expanded: the caller holds it.

    Raises ``ValueError`` when ``expand_env=True`` and ``environ`` is ``None``;
    ``InvalidConfig`` for a missing or unreadable file, invalid JSON (line and column
    given), a config that is not an object, a missing or non-object server table, or a file
    too open to expand from. Bad entries never raise: they land in ``skipped``.
    """
    if expand_env and environ is None:
        raise ValueError(
            "expand_env=True needs environ=: pass the mapping to expand from "
            "(for example os.environ); the core never reads the environment itself"
        )
    if isinstance(path_or_text, str) and path_or_text.lstrip().startswith("{"):
        source, where = "<text>", "the config text"
        text = path_or_text
    else:
        source = os.fspath(path_or_text)
        where = f"config file {source!r}"
        text = _read(source, private=expand_env)
    table, notes = _server_table(_parse(text, where), where)
    servers: dict[str, Spec] = {}
    skipped: dict[str, str] = {}
    for name, entry in table.items():
        try:
            spec, entry_notes = _load_entry(name, entry, environ if expand_env else None)
        except _Skip as skip:
            skipped[name] = str(skip)
        except InvalidSpec as error:
            skipped[name] = error.message  # already redacted by Spec
        else:
            servers[name] = spec
            notes.extend(entry_notes)
    return LoadedConfig(servers=servers, skipped=skipped, source=source, notes=tuple(notes))


# --- the file ------------------------------------------------------------------------------------


def _read(path: str, *, private: bool) -> str:
    try:
        with open(path, encoding="utf-8-sig") as file:
            if private:
                _check_private(path, os.fstat(file.fileno()))
            return file.read()
    except FileNotFoundError:
        problem = "does not exist; check the path (JSON text itself must start with '{')"
    except UnicodeDecodeError:
        problem = "is not UTF-8 text; save it as UTF-8"
    except OSError as error:
        problem = f"cannot be read ({error.strerror}); check the path and its permissions"
    raise InvalidConfig(f"config file {path!r} {problem}")


def _check_private(path: str, file_stat: os.stat_result) -> None:
    """Refuse to expand from a file another user could have written (see ``load_config``)."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return
    uid = getuid()
    checks = [("the file", file_stat)]
    # The directory as written and the one the file really lives in (through symlinks):
    # whoever can write either can swap the file.
    for directory in dict.fromkeys(
        (os.path.dirname(path) or ".", os.path.dirname(os.path.realpath(path)))
    ):
        checks.append((f"directory {directory!r}", os.stat(directory)))
    refusing = f"refusing to expand ${{VAR}} from config file {path!r}"
    for what, status in checks:
        if status.st_uid != uid:
            raise InvalidConfig(
                f"{refusing}: {what} is owned by uid {status.st_uid}, not by you (uid {uid}), "
                "so its ${VAR} references could send your secrets elsewhere; use a config "
                "you own, or load it with expand_env=False"
            )
        if status.st_mode & _GROUP_OR_OTHERS_WRITE:
            raise InvalidConfig(
                f"{refusing}: {what} is writable by group or others, who could make its "
                "${VAR} references send your secrets elsewhere; run `chmod go-w` on it, or "
                "load it with expand_env=False"
            )


def _parse(text: str, where: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        # The decoder's message is a fixed phrase; the document itself is never shown.
        problem = f"{error.msg} at line {error.lineno} column {error.colno}"
    except RecursionError:
        problem = "it is nested too deeply"
    # Raised outside the handler, so no exception holding the text is chained to it.
    raise InvalidConfig(
        f"{where} is not valid JSON: {problem}; fix it (comments and trailing commas are "
        "not allowed)"
    )


def _server_table(document: object, where: str) -> tuple[dict[str, Any], list[str]]:
    example = 'write {"mcpServers": {"<name>": {"command": "..."}}}'
    if not isinstance(document, dict):
        raise InvalidConfig(f"{where} must be a JSON object, got {_json_kind(document)}; {example}")
    notes: list[str] = []
    if "mcpServers" in document:
        key = "mcpServers"
        if "servers" in document:
            notes.append("ignored 'servers': 'mcpServers' is present and wins")
    elif "servers" in document:
        key = "servers"
    else:
        close = difflib.get_close_matches(
            "mcpServers", [k for k in document if isinstance(k, str)], n=1
        )
        hint = f"did you mean 'mcpServers' instead of {close[0]!r}?" if close else example
        raise InvalidConfig(f"{where} has no 'mcpServers' object (nor VS Code's 'servers'); {hint}")
    table = document[key]
    if not isinstance(table, dict):
        raise InvalidConfig(
            f"{where}: {key!r} must be an object mapping server names to their entries, "
            f"got {_json_kind(table)}; {example}"
        )
    return table, notes


# --- one entry -----------------------------------------------------------------------------------


def _load_entry(
    name: str, raw: object, environ: Mapping[str, str] | None
) -> tuple[Spec, list[str]]:
    """The spec of one entry and its notes; raises ``_Skip`` or ``InvalidSpec``."""
    if not isinstance(raw, dict):
        raise _Skip(f"the entry must be a JSON object, got {_json_kind(raw)}")
    entry = dict(raw)
    disabled = entry.pop("disabled", False)
    if type(disabled) is not bool:
        raise _Skip(f"'disabled' must be true or false, got {_json_kind(disabled)}")
    if disabled:
        raise _Skip("disabled")
    notes = []
    for key in [key for key in entry if key in _FOREIGN_KEYS]:
        del entry[key]
        notes.append(f"server {name!r}: ignored {key!r} ({_FOREIGN_KEYS[key]})")
    # FastMCP's configs name the transport "transport"; others "type": the same values.
    kinds = {key: entry.pop(key) for key in ("type", "transport") if key in entry}
    if len(kinds) == 2 and kinds["type"] != kinds["transport"]:
        raise _Skip("'type' and 'transport' name different transports: keep one")
    for key, kind in kinds.items():
        _check_type(kind, entry, key)
    if entry.setdefault("name", name) != name:
        raise _Skip("the entry's 'name' differs from its key; the key names the server: remove it")
    if environ is not None:
        _expand_entry(entry, environ)
    spec = Spec.from_mapping(entry)
    try:
        normalise_server(name)
    except ValueError as error:
        raise _Skip(str(error)) from None
    return spec, notes


def _check_type(kind: object, entry: Mapping[str, object], key: str = "type") -> None:
    if kind is None:
        return
    needs = _TYPE_NEEDS.get(kind) if isinstance(kind, str) else None
    if needs is None:
        shown = repr(kind) if isinstance(kind, str) and _SHOWABLE.fullmatch(kind) else None
        raise _Skip(
            f"{key!r} must be one of {', '.join(_TYPE_NEEDS)}, got {shown or _json_kind(kind)}; "
            "or leave it out: 'command' or 'url' decides the transport"
        )
    other = "url" if needs == "command" else "command"
    if entry.get(other) is not None:  # null is how some tools write "not set"
        raise _Skip(
            f"{key!r} is {kind!r}, which needs {needs!r}, but the entry sets {other!r}; "
            f"fix {key!r} or use {needs!r}"
        )


def _expand_entry(entry: dict[str, Any], environ: Mapping[str, str]) -> None:
    """Expand references in the fields that may hold them, in place. Values of the wrong
    type are left for ``Spec`` to refuse."""
    for key in ("command", "cwd", "url", "verify", "cert", "proxy"):
        value = entry.get(key)
        if isinstance(value, str):
            entry[key] = _expand(value, environ, repr(key))
    cert = entry.get("cert")
    if isinstance(cert, list):
        entry["cert"] = [
            _expand(path, environ, f"cert[{i}]") if isinstance(path, str) else path
            for i, path in enumerate(cert)
        ]
    args = entry.get("args")
    if isinstance(args, list):
        entry["args"] = [
            _expand(arg, environ, f"args[{i}]") if isinstance(arg, str) else arg
            for i, arg in enumerate(args)
        ]
    for key in ("env", "headers", "oauth"):
        table = entry.get(key)
        if isinstance(table, dict):
            entry[key] = {
                k: _expand(v, environ, repr(key)) if isinstance(v, str) else v
                for k, v in table.items()
            }


def _expand(text: str, environ: Mapping[str, str], where: str) -> str:
    def substitute(match: re.Match[str]) -> str:
        variable = _VARIABLE.fullmatch(match.group(1))
        if variable is None:
            raise _Skip(
                f"{where} has a ${{...}} reference that cannot be expanded: only ${{VAR}}, "
                "${VAR:-default} and ${env:VAR} are (not VS Code's ${input:...})"
            )
        name, default = variable.groups()
        value = environ.get(name)
        if value:
            return value
        if default is not None:  # shell ':-': unset or empty takes the default
            return default
        if value is not None:
            return value
        raise _Skip(
            f"undefined variable {name!r} in {where}; put it in the environ passed to "
            f"load_config, or give a default: ${{{name}:-default}}"
        )

    return _REFERENCE.sub(substitute, text)


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
