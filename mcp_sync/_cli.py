"""``mcp-client``: try MCP servers from the shell before wiring them into an agent.

    mcp-client tools  [SOURCE] [--json]                      the namespaced tool list
    mcp-client call   NAME [ARGUMENTS] [SOURCE] [--timeout S] [--json]
    mcp-client resources [SOURCE] [--json]                   resources and templates per server
    mcp-client read   SERVER URI [SOURCE] [--out FILE] [--timeout S] [--json]
    mcp-client prompts [SOURCE] [--json]                     the namespaced prompt list
    mcp-client prompt NAME [--arg KEY=VALUE]... [SOURCE] [--timeout S] [--json]
    mcp-client status [SOURCE] [--json]                      one line per server
    mcp-client login  SERVER [SOURCE]                        log in to an OAuth server
    mcp-client logout SERVER [SOURCE]                        forget its stored login
    mcp-client replay FILE [--json]                          the actions a recording replays to

SOURCE names the servers: ``--config FILE`` (a ``.mcp.json``; the default is ``./.mcp.json``
when it exists), ``--url URL [--header NAME:VALUE]...`` or ``-- COMMAND [ARGS...]`` (last on
the line). A server given by ``--url`` or a command is named ``cli``: its tools are
``mcp__cli__<tool>``, and a bare tool name works too.

Prompts are named like tools (``mcp__<server>__<prompt>``; a bare name works with one server).
Resources are not: a URI means something to its own server only, so ``read`` names the server.
``read`` prints a text resource as it is; a binary one (a blob) is described by its size and
MIME type, and ``--out FILE`` writes its bytes (a text one's as UTF-8). ``prompt`` prints each
message as ``role: text``.

Logins (OAuth): ``login`` runs the OAuth flow for one HTTP server (the browser step opens
the authorization URL, which is also printed on stderr, and waits for the redirect on a
one-shot listener on 127.0.0.1) and keeps the tokens in the token file, ``FileTokenStore()``'s
default path or the global ``--token-file PATH`` (before the command name); ``logout``
forgets them. The commands that talk to servers read the same file and never ask anyone
(``interactive=False``): stored tokens are used and refreshed (the new ones written back), and
a server that needs a login is reported with the ``mcp-client login ...`` line to run.

Exit codes (``EXIT_*`` below): 0 success (``login``: also a server that needs no login;
``logout``: also when nothing was stored); 1 the tool answered with ``isError``; 2 bad input
(usage, arguments that are not a JSON object, an unknown server, tool or prompt, a server that
does not offer resources or prompts at all, a request the server refused as invalid: JSON-RPC
-32602 invalid params or -32002 resource not found, a missing or empty config, an unreadable
recording, a token file that is corrupt or cannot be written, an ``--out`` file that cannot be
written); 3 a server is unavailable (it did not connect, or needs a login; for ``status``: not
every server is ready); 4 the call failed (timeout, server exit, protocol error), or the login
failed (the authorization server refused, the browser step did not finish); 70 a bug in this
command (a traceback on stderr); 130 interrupted.

This is the blocking driver's command: no event loop. Human output uses rich (a table, a
spinner while servers start, a bar while a call reports progress; the animations only when
stderr is a terminal); ``--json`` output is plain JSON on stdout. Every error is one line on
stderr; messages come from redacted specs and errors, so a ``--header`` value or a config's
secret is never printed, nor is a token, code or client secret. The authorization URL is
shown to the user on stderr by ``login`` only, never logged.

Test hook (not for users): ``MCP_CLIENT_TEST_AUTHORIZE=follow`` makes ``login`` do the browser
step headlessly: instead of a browser and a listener, it GETs the authorization URL without
following redirects and takes the 302's ``Location`` as the redirect. No other command reads
it; any other value is refused (exit 2).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import http.client
import json
import logging
import os
import shlex
import sys
import threading
import traceback
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from _mcp_io.oauth import BROWSER_TIMEOUT, CALLBACK_PATH
from _mcp_io.redirect import RedirectError, RedirectListener, authorization_state, open_browser
from _mcp_io.tokens import FileTokenStore, TokenStoreError
from mcp_core import (
    AudioContent,
    AuthorizationFailed,
    AuthorizationRequired,
    CallToolResult,
    ConnectFailed,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    InvalidSpec,
    JsonRpcError,
    McpError,
    NotReady,
    NotSupported,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceLink,
    ResourceTemplate,
    Spec,
    Status,
    StoredAuthorization,
    TextContent,
    Tool,
    UnknownContent,
    UnknownPrompt,
    UnknownTool,
    parse_tool_name,
)
from mcp_core.config import InvalidConfig, LoadedConfig, load_config
from mcp_core.driver import redact_url, token_store_key
from mcp_core.group import PromptTable, ToolTable
from mcp_core.replay import encode_action, replay

from ._client import Client
from ._group import ClientGroup

__all__ = ["main"]

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_BAD_INPUT = 2  # also click's code for usage errors
EXIT_UNAVAILABLE = 3  # also a server that needs a login
EXIT_CALL_FAILED = 4  # also a login that failed
EXIT_BUG = 70  # BSD's EX_SOFTWARE: a traceback on stderr; never confused with a tool error
EXIT_INTERRUPTED = 130
# JSON-RPC errors that say the request itself was wrong (2025-11-25 schema: -32602 invalid
# params, e.g. an unknown URI or a missing prompt argument; server/resources: -32002 resource
# not found): bad input, not a failed call.
_REFUSED_INPUT = frozenset({-32602, -32002})

CLI_SERVER = "cli"  # the name of the one server given by --url or -- COMMAND
DEFAULT_CONFIG = ".mcp.json"
_DEFAULT_INIT_TIMEOUT = 60.0
_MIN_DESCRIPTION = 20  # columns of description a table keeps on a narrow terminal
TEST_AUTHORIZE = "MCP_CLIENT_TEST_AUTHORIZE"  # the test hook of `login` (module docstring)
_FOLLOW_TIMEOUT = 30.0  # the test hook's GET

_Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class CliError(Exception):
    """Ends the command: ``message`` goes to stderr, ``exit_code`` is the process's."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


# --- where the servers come from ----------------------------------------------------------------


def _server_options(*more: _Decorator) -> _Decorator:
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
_source_options = _server_options(
    click.option(
        "--start-timeout",
        type=click.FloatRange(min=0),
        metavar="SECONDS",
        help="How long to wait for servers to start (default: their init_timeout).",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts."),
)


@dataclasses.dataclass(frozen=True, slots=True)
class _Source:
    config_path: str | None
    url: str | None
    headers: tuple[str, ...]
    expand_env: bool
    command: tuple[str, ...]
    token_file: str | None  # the global --token-file


def _load(source: _Source) -> LoadedConfig:
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
        return _single({"url": source.url, "headers": _headers(source.headers)})
    if source.command:
        return _single({"command": source.command[0], "args": list(source.command[1:])})
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
        raise CliError(exc.message, EXIT_BAD_INPUT) from None
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


def _single(fields: Mapping[str, Any]) -> LoadedConfig:
    try:
        spec = Spec.build({"name": CLI_SERVER, **fields})
    except InvalidSpec as exc:  # its message is redacted
        raise CliError(exc.message, EXIT_BAD_INPUT) from None
    return LoadedConfig(servers={CLI_SERVER: spec}, skipped={}, source="<command line>")


def _no_server_loaded(loaded: LoadedConfig) -> CliError:
    reasons = "; ".join(f"{name!r}: {why}" for name, why in loaded.skipped.items())
    return CliError(f"no server of {loaded.source!r} could be loaded: {reasons}", EXIT_BAD_INPUT)


# --- logins: where they are kept, and what to run when one is needed ---------------------------


def _servers(
    config_path: str | None, url: str | None, headers: tuple[str, ...], expand_env: bool
) -> tuple[_Source, LoadedConfig]:
    """Where the servers come from and what loaded; ``CliError`` (exit 2) when none did."""
    source = _source(config_path, url, headers, expand_env)
    loaded = _load(source)
    if not loaded.servers:
        raise _no_server_loaded(loaded)
    return source, loaded


def _token_store(source: _Source) -> FileTokenStore:
    return FileTokenStore(source.token_file)


def _stored(store: FileTokenStore, spec: Spec) -> StoredAuthorization | None:
    """``spec``'s record in ``store``; a token file that cannot be used is ``CliError``, exit 2
    (its message names the file and what to do, never a token)."""
    assert spec.url is not None
    try:
        return store.load(token_store_key(spec.url))
    except TokenStoreError as exc:
        raise CliError(exc.message, EXIT_BAD_INPUT) from None


def _check_token_file(loaded: LoadedConfig, store: FileTokenStore) -> None:
    """Read the record of each OAuth server of ``loaded`` before any starts, so a corrupt token
    file is one line and exit 2, not every such server "down". Servers without OAuth (stdio,
    an ``Authorization`` header) never touch the file."""
    for spec in loaded.servers.values():
        if spec.oauth_enabled:
            _stored(store, spec)


def _login_command(server: str, source: _Source) -> str:
    """The ``mcp-client login`` line for ``server`` of ``source``, to copy. Never a secret: a
    URL's userinfo and query are shown redacted, a header by its name only."""
    words = ["mcp-client"]
    if source.token_file is not None:
        words += ["--token-file", source.token_file]
    words += ["login", server]
    if source.config_path is not None:
        words += ["--config", source.config_path]
    if source.expand_env:
        words.append("--expand-env")
    if source.url is not None:
        words += ["--url", redact_url(source.url)]
        for name in _headers(source.headers):
            words += ["--header", f"{name}: ..."]
    return shlex.join(words)


def _needs_login(server: str, error: str | None) -> bool:
    """Whether ``error`` (a ``Status.last_error``, a ``ConnectFailed`` reason) says ``server``
    needs a login: a connect that ``AuthorizationRequired`` failed keeps only its message."""
    marker = AuthorizationRequired(server).message.partition(" (")[0]  # "server 'x' needs ..."
    return error is not None and marker in error


def _login_needed(server: str, source: _Source) -> str:
    return f"server {server!r} needs a login: run `{_login_command(server, source)}`"


# --- running servers ----------------------------------------------------------------------------


@contextlib.contextmanager
def _group(loaded: LoadedConfig, source: _Source) -> Iterator[ClientGroup]:
    """A group of ``loaded``'s servers, not started; stopped (no process left) on exit.

    ``fail_fast``: a person at a shell wants the first failure, not a minute of retries.
    OAuth servers use the token file and never ask anyone (``interactive=False``): ``login``
    is the command that does."""
    store = _token_store(source)
    _check_token_file(loaded, store)
    group = ClientGroup(loaded, wait=False, fail_fast=True, token_store=store, interactive=False)
    try:
        yield group
    finally:
        group.stop()


def _start_timeout(loaded: LoadedConfig, given: float | None) -> float:
    if given is not None:
        return given
    timeouts = [spec.init_timeout for spec in loaded.servers.values()]
    return max(timeouts) if timeouts else _DEFAULT_INIT_TIMEOUT


def _start_all(group: ClientGroup, timeout: float, *, fancy: bool) -> dict[str, Status]:
    group.start()
    names = ", ".join(group.clients)
    with _spinner(fancy, f"starting {names}"):
        return group.await_ready(timeout)


def _spinner(fancy: bool, message: str) -> contextlib.AbstractContextManager[object]:
    if not fancy:
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(message)


def _report_down(statuses: Mapping[str, Status], source: _Source) -> None:
    for name, status in statuses.items():
        if status.state == "ready":
            continue
        if _needs_login(name, status.last_error):
            click.echo(f"mcp-client: {_login_needed(name, source)}", err=True)
        else:
            why = status.last_error or f"still {status.state}"
            click.echo(f"mcp-client: server {name!r} is down: {why}", err=True)


def _start_servers(
    group: ClientGroup,
    loaded: LoadedConfig,
    source: _Source,
    start_timeout: float | None,
    *,
    fancy: bool,
) -> dict[str, Status]:
    """Start every server of ``group``, name the ones that did not start on stderr, and
    return every status; ``CliError`` (exit 3) when none is ready."""
    statuses = _start_all(group, _start_timeout(loaded, start_timeout), fancy=fancy)
    _report_down(statuses, source)
    if not any(status.state == "ready" for status in statuses.values()):
        raise CliError("no server is available", EXIT_UNAVAILABLE)
    return statuses


def _start_one(
    group: ClientGroup,
    loaded: LoadedConfig,
    server: str,
    source: _Source,
    start_timeout: float | None,
    *,
    fancy: bool,
) -> None:
    """Start only ``server`` of ``group`` and wait for it, up to its first failed attempt
    (``fail_fast``, as the group's waits: see ``_group``); ``CliError`` (exit 3) when it does
    not become ready, naming the login to run when it needs one."""
    client = group.clients[server]
    client.start()
    with _spinner(fancy, f"starting {server}"):
        try:
            client.await_ready(_start_timeout(loaded, start_timeout), fail_fast=True)
        except ConnectFailed as exc:
            if _needs_login(server, exc.reason):
                raise CliError(_login_needed(server, source), EXIT_UNAVAILABLE) from None
            raise CliError(f"server {server!r} is not available: {exc}", EXIT_UNAVAILABLE) from None
        except NotReady as exc:
            raise CliError(f"server {server!r} is not available: {exc}", EXIT_UNAVAILABLE) from None


@contextlib.contextmanager
def _reported(label: str, server: str, source: _Source) -> Iterator[None]:
    """Turn what a request to ``server`` raises into the command's one line and exit code:
    2 for a name no server has, a server that does not offer the kind at all, or a request
    the server refused as invalid (``_REFUSED_INPUT``); 3 for a server that is down or needs
    a login; 4 for any other failure. ``label`` names the request in the line."""
    try:
        yield
    except (UnknownTool, UnknownPrompt) as exc:
        raise CliError(exc.message, EXIT_BAD_INPUT) from None
    except NotSupported as exc:
        raise CliError(f"{label}: {exc.message}", EXIT_BAD_INPUT) from None
    except AuthorizationRequired:  # the stored login ran out mid-session (refresh refused)
        raise CliError(_login_needed(server, source), EXIT_UNAVAILABLE) from None
    except (ConnectFailed, NotReady) as exc:
        raise CliError(f"{label}: the server is not available: {exc}", EXIT_UNAVAILABLE) from None
    except JsonRpcError as exc:
        code = EXIT_BAD_INPUT if exc.code in _REFUSED_INPUT else EXIT_CALL_FAILED
        raise CliError(f"{label} failed: {exc}", code) from None
    except McpError as exc:
        raise CliError(f"{label} failed: {exc}", EXIT_CALL_FAILED) from None


def _report_unlisted(group: ClientGroup, kind: str, listed: Collection[str] | None) -> None:
    """Name on stderr each ready server that does not declare the capability ``kind``
    (``resources``, ``prompts``): it offers none. With ``listed`` (the servers a listing
    has an entry for), also each other ready server missing from it: its listing failed, and
    the group logged why (``-v`` shows it)."""
    for name, status in group.status().items():
        if status.state != "ready" or (listed is not None and name in listed):
            continue
        if status.capabilities is not None and kind not in status.capabilities:
            click.echo(f"mcp-client: server {name!r} offers no {kind}", err=True)
        elif listed is not None:
            click.echo(
                f"mcp-client: the {kind} of server {name!r} could not be listed (-v says why)",
                err=True,
            )


# --- output helpers -----------------------------------------------------------------------------

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


def _wire(value: object) -> object:
    """A model object (``Tool``, ``Resource``, ``CallToolResult``, content block, ...) as its
    MCP JSON; any other value as plain JSON, bytes (a blob) in base64 as on the wire.

    An object that kept the server's own JSON (``raw``) starts from it, so fields this client
    does not model (``icons``, ...) are shown too; the modelled fields are laid over it (a
    group's namespaced ``name``, decoded values)."""
    if isinstance(value, UnknownContent):
        return _wire(value.raw)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        raw = getattr(value, "raw", None)
        out = {str(k): _wire(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}
        kind = getattr(type(value), "type", None)
        if isinstance(kind, str):
            out["type"] = kind
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            if item is not None and field.name != "raw":
                out[_WIRE_NAMES.get(field.name, field.name)] = _wire(item)
        return out
    if isinstance(value, Mapping):
        return {str(key): _wire(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire(item) for item in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def _print_json(value: object) -> None:
    click.echo(json.dumps(value, indent=2))


def _fancy(as_json: bool) -> bool:
    """Animations only for a person watching: never with --json, never into a file or pipe."""
    return not as_json and sys.stderr.isatty()


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0]


# --- the commands -------------------------------------------------------------------------------


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="\b\nExit codes: 0 ok, 1 the tool reported an error, 2 bad input (usage, JSON "
    "arguments,\nunknown server, tool or prompt, a request the server refused as invalid, "
    "missing\nconfig, bad token file), 3 server unavailable or needs a login, 4 call or login "
    "failed.",
)
@click.option("-v", "--verbose", count=True, help="Log to stderr (-v info, -vv debug).")
@click.option(
    "--token-file",
    metavar="PATH",
    help="Where OAuth logins are kept (default: tokens.json in your data directory).",
)
def cli(verbose: int, token_file: str | None) -> None:
    """Talk to MCP servers from the shell.

    \b
    Servers come from --config FILE (default ./.mcp.json), from --url URL, or from
    a command after `--` at the end of the line:
        mcp-client tools -- npx -y @modelcontextprotocol/server-everything
    A server given by --url or a command is named "cli" (tools: mcp__cli__<tool>).
    A server that needs an OAuth login: mcp-client login SERVER [SOURCE].
    """
    level = {0: logging.ERROR, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.basicConfig(level=level, format="%(name)s: %(levelname)s: %(message)s")


def _source(
    config_path: str | None, url: str | None, headers: tuple[str, ...], expand_env: bool
) -> _Source:
    context = click.get_current_context()
    command: list[str] | None = context.obj
    if command == []:
        raise click.UsageError("give the server's command after --, e.g. -- npx -y <package>")
    token_file: str | None = context.find_root().params.get("token_file")
    return _Source(config_path, url, headers, expand_env, tuple(command or ()), token_file)


@cli.command()
@_source_options
def tools(
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """List every ready server's tools as mcp__<server>__<tool>.

    Servers that did not start are named on stderr; the exit code is 3 only when none did.
    """
    source, loaded = _servers(config_path, url, headers, expand_env)
    with _group(loaded, source) as group:
        _start_servers(group, loaded, source, start_timeout, fancy=_fancy(as_json))
        rows = [(_server_of(group, tool), tool) for tool in group.list_tools()]
        # Printed before the servers are stopped: the user need not wait for their shutdown.
        if as_json:
            _print_json([_tool_json(server, tool) for server, tool in rows])
        else:
            _print_tool_table(rows)
    return EXIT_OK


def _server_of(group: ClientGroup, tool: Tool) -> tuple[str, str]:
    route = group.resolve(tool.name)
    assert route is not None  # list_tools() just published it
    return route


def _tool_json(route: tuple[str, str], tool: Tool) -> dict[str, object]:
    server, original = route
    wire = _wire(tool)
    assert isinstance(wire, dict)
    return {"server": server, "tool": original, **wire}


def _print_tool_table(rows: Sequence[tuple[tuple[str, str], Tool]]) -> None:
    _print_table(
        ["server", "tool", "description"],
        [
            [server, tool.name, _first_line(tool.description) or _first_line(tool.title)]
            for (server, _original), tool in rows
        ],
        squeeze_last=True,
    )


def _print_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], *, squeeze_last: bool = False
) -> None:
    """A table for a person, on stdout. Every column is shown whole (names and URIs are what
    a user copies into the next command: never cut), except with ``squeeze_last`` the last
    one (a description), which gets what the others leave, at least ``_MIN_DESCRIPTION``.
    Rich would rather squeeze a column to nothing than wrap a no_wrap one, so the widths are
    set here, and the table may be wider than a narrow terminal rather than lose a name."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    widths = [
        max([len(column)] + [len(row[i]) for row in rows]) for i, column in enumerate(columns)
    ]
    whole = widths[:-1] if squeeze_last else widths
    whole_width = sum(whole) + 2 * len(whole)  # a gap of two spaces after each
    console = Console()
    if squeeze_last:
        console = Console(width=max(console.width, whole_width + _MIN_DESCRIPTION))
    else:
        console = Console(width=max(console.width, whole_width))
    table = Table(box=None, header_style="bold", pad_edge=False)
    for column, width in zip(columns, whole, strict=False):
        table.add_column(column, no_wrap=True, min_width=width)
    if squeeze_last:
        table.add_column(
            columns[-1], no_wrap=True, overflow="ellipsis", max_width=console.width - whole_width
        )
    for row in rows:
        # Text(), not str: a description holding [brackets] is not rich markup.
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)


@cli.command()
@click.argument("name")
@click.argument("arguments", required=False, default="{}")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Give up on the call after this long (default: the server's call_timeout).",
)
@_source_options
def call(
    name: str,
    arguments: str,
    timeout: float | None,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """Call tool NAME with ARGUMENTS (a JSON object, default {}; - reads it from stdin).

    Prints the result's text (with --json the whole result). Only NAME's server is started.
    """
    parsed = _arguments(arguments)
    source, loaded = _servers(config_path, url, headers, expand_env)
    with _group(loaded, source) as group:
        name, server = _route(group, loaded, name, ToolTable)
        _start_one(group, loaded, server, source, start_timeout, fancy=_fancy(as_json))
        with _reported(name, server, source):
            result = _call(group, name, parsed, timeout, fancy=_fancy(as_json))
        if as_json:
            _print_json(_wire(result))
        else:
            _print_result(result)
    return EXIT_TOOL_ERROR if result.is_error else EXIT_OK


def _arguments(text: str) -> dict[str, Any]:
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        problem = getattr(exc, "msg", "not JSON")
        where = (
            f" at line {exc.lineno} column {exc.colno}"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        raise CliError(
            f"ARGUMENTS is not valid JSON ({problem}{where}); give an object, e.g. "
            '\'{"message": "hi"}\' (quote it for the shell)',
            EXIT_BAD_INPUT,
        ) from None
    if not isinstance(value, dict):
        raise CliError(
            f"ARGUMENTS must be a JSON object ({{...}}), got {type(value).__name__}",
            EXIT_BAD_INPUT,
        )
    return value


def _route(
    group: ClientGroup,
    loaded: LoadedConfig,
    name: str,
    kind: type[ToolTable] | type[PromptTable],
) -> tuple[str, str]:
    """``(namespaced name, server)`` for the tool or prompt (``kind``) ``name``; a bare name
    is taken as one of the only server. ``CliError`` (exit 2) when no server of the config
    could have it."""
    table = kind(group.status())  # the same names as the group's: they depend on the set
    if parse_tool_name(name) is None:
        if len(loaded.servers) != 1:
            raise CliError(
                f"unknown {table.kind} {name!r}: with several servers, name {table.kind}s "
                f"mcp__<server>__<{table.kind}> (`mcp-client {table.kind}s` lists them)",
                EXIT_BAD_INPUT,
            )
        (only,) = loaded.servers
        name = table.name(only, name)
    server = table.server_of(name)
    if server is None:
        raise CliError(table.unknown(name).message, EXIT_BAD_INPUT)
    _loaded_server(group, loaded, server)
    return name, server


def _loaded_server(group: ClientGroup, loaded: LoadedConfig, server: str) -> None:
    """``CliError`` (exit 2) unless ``server`` has a client in ``group``."""
    if server not in group.clients:
        why = loaded.skipped.get(server) or group.status()[server].last_error
        raise CliError(f"server {server!r} was not loaded: {why}", EXIT_BAD_INPUT)


def _call(
    group: ClientGroup,
    name: str,
    arguments: Mapping[str, Any],
    timeout: float | None,
    *,
    fancy: bool,
) -> CallToolResult:
    bar = _ProgressBar(name) if fancy else None
    with bar if bar is not None else contextlib.nullcontext():
        return group.call_tool(name, arguments, timeout=timeout, progress=bar)


class _ProgressBar:
    """A spinner while the call runs that becomes a bar once the server reports progress.
    Called from a driver thread; rich's Progress is thread-safe."""

    def __init__(self, name: str) -> None:
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
        self._task = self._progress.add_task(f"calling {name}", total=None)
        self._lock = threading.Lock()

    def __enter__(self) -> _ProgressBar:
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
                description=f"{self._name}: {message}" if message else f"calling {self._name}",
            )


def _print_result(result: CallToolResult) -> None:
    """The result for a person: text as is, other content as one bracketed line each. A tool
    error goes to stderr."""
    lines = [_block_text(block) for block in result.content]
    if not lines and result.structured_content is not None:
        lines = [json.dumps(_wire(result.structured_content), indent=2)]
    if not lines and result.is_error:
        lines = ["the tool reported an error without any text"]
    for line in lines:
        click.echo(line, err=result.is_error)


def _block_text(block: object) -> str:
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


# --- beyond tools: resources and prompts -------------------------------------------------------

_timeout_option = click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Give up on the request after this long (default: the server's call_timeout).",
)


@cli.command()
@_source_options
def resources(
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """List every ready server's resources and resource templates.

    One row each: server, URI, name, MIME type; the templates follow in a table of their
    own. Read a resource with `mcp-client read SERVER URI`.

    Servers that did not start, and servers that offer no resources, are named on stderr; the
    exit code is 3 only when no server started.
    """
    source, loaded = _servers(config_path, url, headers, expand_env)
    with _group(loaded, source) as group:
        _start_servers(group, loaded, source, start_timeout, fancy=_fancy(as_json))
        listed = group.list_resources()
        templates = group.list_resource_templates()
        _report_unlisted(group, "resources", listed)
        if as_json:
            _print_json(
                {
                    "resources": _per_server(listed),
                    "templates": _per_server(templates),
                }
            )
        else:
            _print_resource_tables(listed, templates)
    return EXIT_OK


def _per_server(listed: Mapping[str, Sequence[object]]) -> list[object]:
    return [
        {"server": server, **_wire_object(item)}
        for server, items in listed.items()
        for item in items
    ]


def _wire_object(value: object) -> dict[str, object]:
    wire = _wire(value)
    assert isinstance(wire, dict)
    return wire


def _print_resource_tables(
    listed: Mapping[str, Sequence[Resource]], templates: Mapping[str, Sequence[ResourceTemplate]]
) -> None:
    """The resources, then (when any server has some) the templates, each a table."""
    _print_table(
        ["server", "uri", "name", "mime"],
        [
            [server, r.uri, r.name, r.mime_type or "-"]
            for server, items in listed.items()
            for r in items
        ],
    )
    rows = [
        [server, t.uri_template, t.name, t.mime_type or "-"]
        for server, items in templates.items()
        for t in items
    ]
    if rows:
        click.echo()
        _print_table(["server", "uri template", "name", "mime"], rows)


@cli.command()
@click.argument("server")
@click.argument("uri")
@click.option(
    "--out",
    "out_path",
    metavar="FILE",
    help="Write the resource's bytes to FILE (a blob as it is, text as UTF-8).",
)
@_timeout_option
@_source_options
def read(
    server: str,
    uri: str,
    out_path: str | None,
    timeout: float | None,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """Print resource URI of SERVER.

    SERVER is a config's server name ("cli" for --url or a command). Text is printed as it
    is; a binary resource (a blob) is described by its size and MIME type instead, and
    --out FILE writes its bytes. With --json the whole result, blobs in base64. Only SERVER
    is started.
    """
    source, loaded = _servers(config_path, url, headers, expand_env)
    _named_server(loaded, server)
    with _group(loaded, source) as group:
        _loaded_server(group, loaded, server)
        _start_one(group, loaded, server, source, start_timeout, fancy=_fancy(as_json))
        with _reported(f"reading {uri} from {server!r}", server, source):
            result = group.read_resource(server, uri, timeout=timeout)
        if out_path is not None:
            _write_out(result, out_path)
        if as_json:
            _print_json(_wire(result))
        elif out_path is None:
            _print_contents(result)
    return EXIT_OK


def _write_out(result: ReadResourceResult, path: str) -> None:
    """Write the one content of ``result`` to ``path`` as bytes; ``CliError`` (exit 2) when
    there is not exactly one, or the file cannot be written. Says what it wrote on stderr."""
    if len(result.contents) != 1:
        raise CliError(
            f"the resource has {len(result.contents)} contents and --out writes one; "
            "--json shows them all",
            EXIT_BAD_INPUT,
        )
    (content,) = result.contents
    data = content.blob if content.blob is not None else (content.text or "").encode("utf-8")
    try:
        Path(path).write_bytes(data)
    except OSError as exc:
        raise CliError(f"cannot write {path!r}: {exc.strerror}", EXIT_BAD_INPUT) from None
    mime = content.mime_type or "no MIME type"
    click.echo(f"mcp-client: wrote {len(data)} bytes ({mime}) to {path}", err=True)


def _print_contents(result: ReadResourceResult) -> None:
    """Each content for a person: text as it is, a blob as one bracketed line."""
    if not result.contents:
        click.echo("mcp-client: the resource has no contents", err=True)
    for content in result.contents:
        if content.blob is not None:
            mime = content.mime_type or "no MIME type"
            click.echo(f"[blob {mime}, {len(content.blob)} bytes: --out FILE writes it]")
        else:
            text = content.text or ""
            click.echo(text, nl=not text.endswith("\n"))


@cli.command()
@_source_options
def prompts(
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """List every ready server's prompts as mcp__<server>__<prompt>.

    Each with its arguments (an optional one ends in ?) and description.

    Servers that did not start, and servers that offer no prompts, are named on stderr; the
    exit code is 3 only when no server started.
    """
    source, loaded = _servers(config_path, url, headers, expand_env)
    with _group(loaded, source) as group:
        _start_servers(group, loaded, source, start_timeout, fancy=_fancy(as_json))
        rows = [(_prompt_route(group, p), p) for p in group.list_prompts()]
        # A flat list cannot tell a server with no prompts from one that failed to list them:
        # only the servers that offer none are named (the group logs a failure, -v shows it).
        _report_unlisted(group, "prompts", None)
        if as_json:
            _print_json(
                [
                    {"server": server, "prompt": original, **_wire_object(p)}
                    for (server, original), p in rows
                ]
            )
        else:
            _print_table(
                ["server", "prompt", "arguments", "description"],
                [
                    [
                        server,
                        p.name,
                        ", ".join(a.name + ("" if a.required else "?") for a in p.arguments),
                        _first_line(p.description) or _first_line(p.title),
                    ]
                    for (server, _original), p in rows
                ],
                squeeze_last=True,
            )
    return EXIT_OK


def _prompt_route(group: ClientGroup, prompt: Prompt) -> tuple[str, str]:
    route = group.resolve_prompt(prompt.name)
    assert route is not None  # list_prompts() just published it
    return route


@cli.command()
@click.argument("name")
@click.option(
    "--arg",
    "pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="An argument of the prompt (repeatable); values are strings.",
)
@_timeout_option
@_source_options
def prompt(
    name: str,
    pairs: tuple[str, ...],
    timeout: float | None,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """Get prompt NAME and print its messages.

    NAME is filled in with the --arg values; each message prints as "role: text" (with
    --json the whole result). Only NAME's server is started.
    """
    arguments = _prompt_arguments(pairs)
    source, loaded = _servers(config_path, url, headers, expand_env)
    with _group(loaded, source) as group:
        name, server = _route(group, loaded, name, PromptTable)
        _start_one(group, loaded, server, source, start_timeout, fancy=_fancy(as_json))
        with _reported(name, server, source):
            result = group.get_prompt(name, arguments or None, timeout=timeout)
        if as_json:
            _print_json(_wire(result))
        else:
            _print_messages(result)
    return EXIT_OK


def _prompt_arguments(pairs: Sequence[str]) -> dict[str, str]:
    arguments: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise click.UsageError(f"--arg {pair!r} is not KEY=VALUE (e.g. --arg city=Paris)")
        if key in arguments:
            raise click.UsageError(f"--arg {key!r} is given twice")
        arguments[key] = value
    return arguments


def _print_messages(result: GetPromptResult) -> None:
    for message in result.messages:
        click.echo(f"{message.role}: {_block_text(message.content)}")


@cli.command()
@_source_options
def status(
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """Start the servers and show state, era, protocol version, transport, calls in flight
    and the last error of each; a server that needs a login shows the command to run.
    Exit code 0 when every server is ready, else 3."""
    source = _source(config_path, url, headers, expand_env)
    loaded = _load(source)
    with _group(loaded, source) as group:
        statuses = _start_all(group, _start_timeout(loaded, start_timeout), fancy=_fancy(as_json))
        logins = {
            name: _login_command(name, source)
            for name, s in statuses.items()
            if s.state != "ready" and _needs_login(name, s.last_error)
        }
        if as_json:
            _print_json({name: _status_json(s, logins.get(name)) for name, s in statuses.items()})
        else:
            _print_status_table(statuses, logins)
    ready = all(s.state == "ready" for s in statuses.values())
    return EXIT_OK if ready else EXIT_UNAVAILABLE


def _status_json(status: Status, login: str | None) -> dict[str, object]:
    fields = {f.name: _wire(getattr(status, f.name)) for f in dataclasses.fields(status)}
    return {
        **fields,
        "ready": status.ready,
        "login_required": login is not None,
        "login_command": login,
    }


def _print_status_table(statuses: Mapping[str, Status], logins: Mapping[str, str]) -> None:
    """One row per server, then the last error of each server that has one, in full (a
    table column would fold it into a narrow strip); for a server that needs a login, the
    command that logs in instead."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("server", "state", "transport", "era", "protocol", "in flight"):
        table.add_column(column, no_wrap=True)
    errors = Text()
    for name, s in statuses.items():
        # A closed server is down, whether it failed or its config entry was refused.
        state = "down" if s.state == "closed" else s.state
        if name in logins:
            state = "needs login"
        style = {"ready": "green", "down": "red"}.get(state, "yellow")
        in_flight = f"{s.in_flight} (+{s.queued} queued)" if s.queued else str(s.in_flight)
        table.add_row(
            Text(name),
            Text(state, style=style),
            Text(s.transport if s.transport != "unknown" else "-"),
            Text(s.era or "-"),
            Text(s.protocol_version or "-"),
            Text(in_flight),
        )
        if name in logins:
            errors.append(f"\n{name}: ", style="bold")
            errors.append(f"needs a login: run `{logins[name]}`")
        elif s.last_error:
            errors.append(f"\n{name}: ", style="bold")
            errors.append(s.last_error)
    console = Console()
    console.print(table)
    if errors:
        console.print(errors, soft_wrap=True)


@cli.command()
@click.argument("server")
@_server_options(
    click.option(
        "--start-timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="How long to wait for the server and your login (default: its init_timeout "
        f"plus {BROWSER_TIMEOUT:g} s for the browser).",
    ),
)
def login(
    server: str,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
) -> int:
    """Log in to SERVER with OAuth and keep its tokens in the token file.

    Your browser opens at the authorization server (the URL is printed on stderr too) and the
    redirect comes back to a one-shot listener on 127.0.0.1. A login replaces the server's
    stored one only once it succeeds. Exit code 3 when the server cannot be reached, 4 when
    the login fails.
    """
    source = _source(config_path, url, headers, expand_env)
    spec = _named_server(_load(source), server)
    if not spec.oauth_enabled:
        click.echo(f"server {server!r} needs no login: {_why_no_oauth(spec)}")
        return EXIT_OK
    store = _token_store(source)
    _stored(store, spec)  # a token file that cannot be used: said before anyone is asked
    keeper = _LoginStore(store)
    step = _login_step(spec)
    client = Client(spec, wait=False, token_store=keeper, authorize=step, interactive=True)
    timeout = start_timeout if start_timeout is not None else spec.init_timeout + BROWSER_TIMEOUT
    failure: McpError | None = None
    try:
        client.start()
        client.await_ready(timeout, fail_fast=True)
    except (ConnectFailed, NotReady) as exc:
        failure = exc
    finally:
        client.stop()  # joins the driver's threads: the tokens are saved by then
        step.close()
    if keeper.error is not None:  # the tokens were got but could not be kept
        raise CliError(keeper.error.message, EXIT_BAD_INPUT)
    if failure is not None:
        raise _login_failure(server, failure, step)
    if keeper.saved is None:
        click.echo(f"server {server!r} needs no login: it answered without one")
        return EXIT_OK
    click.echo(f"logged in to {server!r} (issuer {keeper.saved.issuer}); tokens in {store.path}")
    return EXIT_OK


@cli.command()
@click.argument("server")
@_server_options()
def logout(
    server: str,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
) -> int:
    """Forget SERVER's stored login (its tokens in the token file). Nothing stored is not an
    error. The authorization server is not told: its tokens expire on their own."""
    source = _source(config_path, url, headers, expand_env)
    spec = _named_server(_load(source), server)
    if spec.url is None:
        click.echo(f"server {server!r} needs no login: {_why_no_oauth(spec)}; nothing to forget")
        return EXIT_OK
    store = _token_store(source)
    key = token_store_key(spec.url)
    try:
        stored = store.load(key)
    except TokenStoreError:  # a bad record, which forget() clears, or a bad file: it says so
        stored = None
        found = True
    else:
        found = stored is not None
    if not found:
        click.echo(f"no login is stored for server {server!r}; nothing to forget")
        return EXIT_OK
    try:
        store.forget(key)
    except TokenStoreError as exc:
        raise CliError(exc.message, EXIT_BAD_INPUT) from None
    issuer = f" (issuer {stored.issuer})" if stored is not None else ""
    click.echo(f"logged out of {server!r}{issuer}: its stored tokens are forgotten")
    return EXIT_OK


def _named_server(loaded: LoadedConfig, server: str) -> Spec:
    """The spec of ``server`` in ``loaded``; ``CliError`` (exit 2) when it has none."""
    spec = loaded.servers.get(server)
    if spec is not None:
        return spec
    if server in loaded.skipped:
        raise CliError(
            f"server {server!r} was not loaded: {loaded.skipped[server]}", EXIT_BAD_INPUT
        )
    known = ", ".join(repr(name) for name in loaded.servers) or "none"
    raise CliError(
        f"unknown server {server!r} in {loaded.source!r} (its servers: {known})", EXIT_BAD_INPUT
    )


def _why_no_oauth(spec: Spec) -> str:
    if spec.url is None:
        return "it runs as a local command (stdio)"
    if spec.oauth.get("enabled", True) is not True:
        return "OAuth is disabled for it (oauth: {enabled: false})"
    return "its config sends an Authorization header of its own"


class _LoginStore:
    """The token store of ``login``'s client: it loads nothing, so the login is a new one even
    over a stored login that still works (and that one is kept until the new one is saved);
    it saves to the token file and remembers the last record saved, or the store's error
    (which the driver only logs). Saves come from driver threads."""

    def __init__(self, store: FileTokenStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._saved: StoredAuthorization | None = None
        self._error: TokenStoreError | None = None

    @property
    def saved(self) -> StoredAuthorization | None:
        with self._lock:
            return self._saved

    @property
    def error(self) -> TokenStoreError | None:
        with self._lock:
            return self._error

    def load(self, server: str) -> StoredAuthorization | None:
        return None

    def save(self, server: str, authorization: StoredAuthorization) -> None:
        try:
            self._store.save(server, authorization)
        except TokenStoreError as exc:
            with self._lock:
                self._error = exc
            raise
        if authorization.access_token is not None:
            with self._lock:
                self._saved = authorization

    def forget(self, server: str) -> None:
        self._store.forget(server)


class _LoginStep:
    """``login``'s browser step, an ``authorize=`` callback with a listener of its own: it
    prints the authorization URL on stderr (never to a log), opens the browser and waits on
    a one-shot listener on 127.0.0.1 (the spec's ``oauth.redirect_port``, else any port) for
    the redirect that carries the URL's ``state``: any other request there is answered 400
    and the wait goes on, so a stray one cannot end the login.
    ``error`` keeps why a step failed, for the one line ``login`` prints; ``asked`` whether a
    step began."""

    def __init__(self, port: int) -> None:
        self._lock = threading.Lock()
        try:
            self._listener = RedirectListener(port, CALLBACK_PATH)
        except RedirectError as exc:  # the port is taken: its message says what to do
            raise CliError(f"cannot log in: {exc.message}", EXIT_BAD_INPUT) from None
        self._port = self._listener.port  # a second step listens on the same port
        self.redirect_uri = self._listener.redirect_uri
        self.asked = False
        self.error: McpError | None = None

    def __call__(self, url: str) -> dict[str, str]:
        with self._lock:
            self.asked = True
            listener = self._listener
        try:
            state = authorization_state(url)
            if listener.closed:
                listener = RedirectListener(self._port, CALLBACK_PATH)
                with self._lock:
                    self._listener = listener
            click.echo(
                "mcp-client: log in in the browser window that opens; if none does, open this "
                f"URL on this machine:\n{url}",
                err=True,
            )
            if not open_browser(url):
                click.echo("mcp-client: no browser could be opened: open the URL above", err=True)
            return listener.wait(BROWSER_TIMEOUT, state=state)
        except RedirectError as exc:  # never quotes a parameter
            with self._lock:
                self.error = exc
            raise

    def close(self) -> None:
        with self._lock:
            listener = self._listener
        listener.close()


class _FollowStep:
    """The test hook's browser step (``MCP_CLIENT_TEST_AUTHORIZE=follow``): GET the
    authorization URL without following redirects; the 302's ``Location`` is the redirect.
    Prints nothing."""

    def __init__(self) -> None:
        self.asked = False
        self.error: McpError | None = None

    def __call__(self, url: str) -> str:
        self.asked = True
        parts = urlsplit(url)
        connection_type = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_type(parts.hostname or "", parts.port, timeout=_FOLLOW_TIMEOUT)
        try:
            connection.request("GET", f"{parts.path}?{parts.query}")
            response = connection.getresponse()
            response.read()
            status, location = response.status, response.getheader("location")
        except (OSError, http.client.HTTPException) as exc:  # named by class: never the URL
            self.error = McpError(f"the test hook's GET failed ({type(exc).__name__})")
            raise self.error from None
        finally:
            connection.close()
        if status not in (301, 302, 303, 307, 308) or location is None:
            self.error = McpError(f"the test hook's GET got HTTP {status}, not a redirect")
            raise self.error
        return location

    def close(self) -> None:
        pass


def _login_step(spec: Spec) -> _LoginStep | _FollowStep:
    hook = os.environ.get(TEST_AUTHORIZE)
    if hook is None:
        return _LoginStep(spec.oauth.get("redirect_port", 0))
    if hook != "follow":
        raise CliError(f"{TEST_AUTHORIZE} (a test hook) must be 'follow' or unset", EXIT_BAD_INPUT)
    return _FollowStep()


def _login_failure(server: str, failure: McpError, step: _LoginStep | _FollowStep) -> CliError:
    """The one line for a login that did not end with tokens: exit 4 when the flow began and
    failed (refused, or the browser step did not finish), 3 when the server was not reached."""
    reason = failure.reason if isinstance(failure, ConnectFailed) else failure.message
    if step.error is not None:
        return CliError(f"could not log in to {server!r}: {step.error.message}", EXIT_CALL_FAILED)
    if isinstance(failure, NotReady) and step.asked:
        return CliError(
            f"could not log in to {server!r}: the login did not finish in time (--start-timeout)",
            EXIT_CALL_FAILED,
        )
    refused = AuthorizationFailed(None, "").message.rstrip(": ")  # "authorization failed"
    if refused in reason or _needs_login(server, reason):
        return CliError(f"could not log in to {server!r}: {reason}", EXIT_CALL_FAILED)
    return CliError(f"server {server!r} is not available: {failure}", EXIT_UNAVAILABLE)


@cli.command(name="replay")
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def replay_command(file: str, as_json: bool) -> int:
    """Replay the recording FILE (made with Client(record=...)) through a fresh machine and
    print the actions it produces, one line each. No server is started."""
    if click.get_current_context().obj is not None:
        raise click.UsageError("replay starts no server: -- COMMAND does not go with it")
    try:
        actions = replay(file)
    except OSError as exc:
        raise CliError(f"cannot read recording {file!r}: {exc.strerror}", EXIT_BAD_INPUT) from None
    except (ValueError, McpError) as exc:
        raise CliError(
            f"{file!r} is not a recording this client replays: {exc}", EXIT_BAD_INPUT
        ) from None
    for number, action in enumerate(actions, start=1):
        encoded = encode_action(action)
        if as_json:
            click.echo(json.dumps(encoded))
            continue
        kind = encoded.pop("action")
        fields = " ".join(
            f"{key}={json.dumps(value)}" for key, value in encoded.items() if value is not None
        )
        click.echo(f"{number:>4} {kind:<16} {fields}")
    return EXIT_OK


# --- entry point --------------------------------------------------------------------------------


def _split_command(args: list[str]) -> tuple[list[str], list[str] | None]:
    """Everything after the first ``--`` is the server's command line, untouched by click
    (which would mix it with NAME and ARGUMENTS); None when there is no ``--``."""
    if "--" not in args:
        return args, None
    cut = args.index("--")
    return args[:cut], args[cut + 1 :]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default ``sys.argv[1:]``) and return its exit code."""
    args, command = _split_command(list(sys.argv[1:] if argv is None else argv))
    try:
        code = cli.main(args=args, prog_name="mcp-client", standalone_mode=False, obj=command)
    except CliError as exc:
        click.echo(f"mcp-client: {exc.message}", err=True)
        return exc.exit_code
    except click.ClickException as exc:  # usage errors: exit 2
        exc.show()
        return exc.exit_code
    except click.Abort:  # Ctrl-C: the group was stopped on the way out
        click.echo("mcp-client: interrupted", err=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `mcp-client tools | head`: the reader left, nothing to report
        _silence_stdout()
        return EXIT_OK
    except Exception:
        traceback.print_exc()
        click.echo("mcp-client: internal error (a bug: please report it)", err=True)
        return EXIT_BUG
    return code if isinstance(code, int) else EXIT_OK


def _silence_stdout() -> None:
    # Python flushes stdout at exit and would complain about the closed pipe a second time.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
