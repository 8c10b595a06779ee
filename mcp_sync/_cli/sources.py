"""Where the servers come from: the SOURCE options (``--config``, ``--url``/``--header``,
``-- COMMAND``), the config they load (``CliError``, exit 2, when none can be), the one
server a command names, the library's messages about them in a shell user's words
(``explained``: "its entry in '.mcp.json'", not "the spec"), and the token file of OAuth
logins with the ``mcp-client login`` line to run when a server needs one."""

from __future__ import annotations

import dataclasses
import logging
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from _mcp_io.tokens import FileTokenStore, TokenStoreError
from mcp_core import AuthorizationRequired, InvalidSpec, Spec, StoredAuthorization
from mcp_core.config import InvalidConfig, LoadedConfig, load_config
from mcp_core.driver import redact_url, token_store_key

from .errors import EXIT_BAD_INPUT, CliError
from .wording import Place, shell_words

__all__ = [
    "CLI_SERVER",
    "DEFAULT_CONFIG",
    "Source",
    "check_token_file",
    "command_line",
    "current_source",
    "explained",
    "load_servers",
    "load_source",
    "login_command",
    "login_needed",
    "named_server",
    "needs_login",
    "server_options",
    "source_options",
    "stored_authorization",
    "token_store",
]

CLI_SERVER = "cli"  # the name of the one server given by --url or -- COMMAND
DEFAULT_CONFIG = ".mcp.json"

_Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


# --- where the servers come from ----------------------------------------------------------------


def server_options(*more: _Decorator) -> _Decorator:
    """SOURCE's options, then ``more``."""
    options: list[_Decorator] = [
        click.option(
            "--config",
            "config_path",
            metavar="FILE",
            help=f"A .mcp.json-style config (default: ./{DEFAULT_CONFIG} if present).",
        ),
        click.option("--url", metavar="URL", help=f"One HTTP server, named {CLI_SERVER!r}."),
        click.option(
            "--header",
            "headers",
            multiple=True,
            metavar="NAME:VALUE",
            help="An HTTP header for --url (repeatable); values are never printed.",
        ),
        click.option(
            "--expand-env",
            is_flag=True,
            help="Expand ${VAR} in the config from this environment (only from a config you "
            "own that others cannot write).",
        ),
        *more,
    ]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


# The options of every command that talks to servers.
source_options = server_options(
    click.option(
        "--start-timeout",
        type=click.FloatRange(min=0),
        metavar="SECONDS",
        help="How long to wait for servers to start (default: the init_timeout of their "
        "config entries, 60 s unless they set one).",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts."),
)


@dataclasses.dataclass(frozen=True, slots=True)
class Source:
    config_path: str | None
    url: str | None
    headers: tuple[str, ...]
    expand_env: bool
    command: tuple[str, ...]
    token_file: str | None  # the global --token-file


def load_source(source: Source) -> LoadedConfig:
    """The servers ``source`` names. ``CliError`` (exit 2) for a usage mistake, a config that
    cannot be read or names no server, or a refused ``--url``/command spec."""
    given = [
        flag
        for flag, present in (
            ("--config", source.config_path is not None),
            ("--url", source.url is not None),
            ("-- COMMAND", bool(source.command)),
        )
        if present
    ]
    if len(given) > 1:
        raise click.UsageError(f"give one of --config, --url or -- COMMAND, not {given}")
    if source.headers and source.url is None:
        raise click.UsageError("--header goes with --url")
    if source.expand_env and (source.url is not None or source.command):
        raise click.UsageError("--expand-env is for configs; --url and COMMAND are not expanded")
    if source.url is not None:
        return _single({"url": source.url, "headers": _headers(source.headers)}, source)
    if source.command:
        fields = {"command": source.command[0], "args": list(source.command[1:])}
        return _single(fields, source)
    path = source.config_path
    if path is None:
        if not Path(DEFAULT_CONFIG).is_file():
            raise CliError(
                f"no server to talk to: give --config FILE, --url URL or -- COMMAND [ARGS...] "
                f"(there is no {DEFAULT_CONFIG} in {os.getcwd()})",
                EXIT_BAD_INPUT,
            )
        path = DEFAULT_CONFIG
    try:
        loaded = load_config(
            path,
            expand_env=source.expand_env,
            environ=os.environ if source.expand_env else None,
        )
    except InvalidConfig as exc:
        raise CliError(explained(exc.message, source), EXIT_BAD_INPUT) from None
    if not loaded.servers and not loaded.skipped:
        raise CliError(
            f'config file {path!r} names no servers; add entries under "mcpServers"',
            EXIT_BAD_INPUT,
        )
    for note in loaded.notes:
        logging.getLogger("mcp_client").info("config: %s", note)
    return loaded


def _headers(pairs: Sequence[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for number, pair in enumerate(pairs, start=1):
        name, colon, value = pair.partition(":")
        if not colon or not name.strip():
            # The text is not shown: it may be a credential typed without its name.
            raise click.UsageError(
                f"--header number {number} is not NAME:VALUE (e.g. 'Authorization: Bearer ...')"
            )
        headers[name.strip()] = value.strip()
    return headers


def _single(fields: Mapping[str, Any], source: Source) -> LoadedConfig:
    try:
        spec = Spec.build({"name": CLI_SERVER, **fields})
    except InvalidSpec as exc:  # its message is redacted
        raise CliError(explained(exc.message, source), EXIT_BAD_INPUT) from None
    return LoadedConfig(servers={CLI_SERVER: spec}, skipped={}, source="<command line>")


def _no_server_loaded(loaded: LoadedConfig, source: Source) -> CliError:
    reasons = "; ".join(
        f"{name!r}: {explained(why, source)}" for name, why in loaded.skipped.items()
    )
    return CliError(f"no server of {loaded.source!r} could be loaded: {reasons}", EXIT_BAD_INPUT)


def explained(message: str, source: Source) -> str:
    """A library message about a server of ``source`` in a shell user's words: its entry in
    the config file, the ``--url``/``--header`` values or the command after ``--`` where
    the library says "the spec", a subcommand or an option where it names a method or a
    keyword (``wording.shell_words``)."""
    if source.url is not None:
        fix = "--url or --header" if source.headers else "--url"
        place = Place(fix=fix, settings="a config file entry (--config FILE)")
    elif source.command:
        place = Place(fix="the command after --", settings="a config file entry (--config FILE)")
    else:
        entry = f"its entry in {source.config_path or DEFAULT_CONFIG!r}"
        place = Place(fix=entry, settings=entry)
    return shell_words(message, place)


def current_source(
    config_path: str | None, url: str | None, headers: tuple[str, ...], expand_env: bool
) -> Source:
    """The source the running command's options name, with the ``-- COMMAND`` that ``main``
    cut off the line (the context's ``obj``) and the global ``--token-file``."""
    context = click.get_current_context()
    command: list[str] | None = context.obj
    if command == []:
        raise click.UsageError("give the server's command after --, e.g. -- npx -y <package>")
    token_file: str | None = context.find_root().params.get("token_file")
    return Source(config_path, url, headers, expand_env, tuple(command or ()), token_file)


def load_servers(
    config_path: str | None, url: str | None, headers: tuple[str, ...], expand_env: bool
) -> tuple[Source, LoadedConfig]:
    """Where the servers come from and what loaded; ``CliError`` (exit 2) when none did."""
    source = current_source(config_path, url, headers, expand_env)
    loaded = load_source(source)
    if not loaded.servers:
        raise _no_server_loaded(loaded, source)
    return source, loaded


def named_server(loaded: LoadedConfig, server: str, source: Source) -> Spec:
    """The spec of ``server`` in ``loaded``; ``CliError`` (exit 2) when it has none."""
    spec = loaded.servers.get(server)
    if spec is not None:
        return spec
    if server in loaded.skipped:
        why = explained(loaded.skipped[server], source)
        raise CliError(f"server {server!r} was not loaded: {why}", EXIT_BAD_INPUT)
    known = ", ".join(repr(name) for name in loaded.servers) or "none"
    raise CliError(
        f"unknown server {server!r} in {loaded.source!r} (its servers: {known})", EXIT_BAD_INPUT
    )


# --- logins: where they are kept, and what to run when one is needed ---------------------------


def token_store(source: Source) -> FileTokenStore:
    return FileTokenStore(source.token_file)


def stored_authorization(store: FileTokenStore, spec: Spec) -> StoredAuthorization | None:
    """``spec``'s record in ``store``; a token file that cannot be used is ``CliError``, exit 2
    (its message names the file and what to do, never a token)."""
    assert spec.url is not None
    try:
        return store.load(token_store_key(spec.url))
    except TokenStoreError as exc:
        raise CliError(exc.message, EXIT_BAD_INPUT) from None


def check_token_file(loaded: LoadedConfig, store: FileTokenStore) -> None:
    """Read the record of each OAuth server of ``loaded`` before any starts, so a corrupt token
    file is one line and exit 2, not every such server "down". Servers without OAuth (stdio,
    an ``Authorization`` header) never touch the file."""
    for spec in loaded.servers.values():
        if spec.oauth_enabled:
            stored_authorization(store, spec)


def login_command(server: str, source: Source) -> str:
    """The ``mcp-client login`` line for ``server`` of ``source``, to copy. Never a secret: a
    URL's userinfo and query are shown redacted, a header by its name only."""
    return command_line(source, "login", server)


def command_line(source: Source, *args: str) -> str:
    """The ``mcp-client`` line running ``args`` (a subcommand and its arguments) against
    ``source``'s servers, to copy, secrets left out as in ``login_command``. The command after
    ``--`` is not repeated: the lines built here are for servers over HTTP."""
    words = ["mcp-client"]
    if source.token_file is not None:
        words += ["--token-file", source.token_file]
    words += args
    if source.config_path is not None:
        words += ["--config", source.config_path]
    if source.expand_env:
        words.append("--expand-env")
    if source.url is not None:
        words += ["--url", redact_url(source.url)]
        for name in _headers(source.headers):
            words += ["--header", f"{name}: ..."]
    return shlex.join(words)


def needs_login(server: str, error: str | None) -> bool:
    """Whether ``error`` (a ``Status.last_error``, a ``ConnectFailed`` reason) says ``server``
    needs a login: a connect that ``AuthorizationRequired`` failed keeps only its message."""
    marker = AuthorizationRequired(server).message.partition(" (")[0]  # "server 'x' needs ..."
    return error is not None and marker in error


def login_needed(server: str, source: Source) -> str:
    return f"server {server!r} needs a login: run `{login_command(server, source)}`"
