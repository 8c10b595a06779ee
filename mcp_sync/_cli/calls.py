"""The commands that make one request of one server, starting only that server: ``call`` a
tool (its result's text, or ``--json``), ``read`` a resource (text as it is, a blob described
or written to ``--out FILE``) and get a ``prompt`` (its messages as ``role: text``)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from mcp_core import CallToolResult, GetPromptResult, ReadResourceResult
from mcp_core.group import PromptTable, ToolTable

from .._group import ClientGroup
from .errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_TOOL_ERROR, CliError
from .render import ProgressBar, animated, block_text, print_json, wire_json
from .running import loaded_server, reported, route_of, server_group, start_one
from .sources import load_servers, named_server, source_options

__all__ = ["call", "prompt", "read", "timeout_option"]

# --timeout of read, prompt and skills (call has its own, which says "call").
timeout_option = click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Give up on the request after this long (default: the call_timeout of the server's "
    "config entry, 30 s unless it sets one).",
)


@click.command()
@click.argument("name")
@click.argument("arguments", required=False, default="{}")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Give up on the call after this long (default: the call_timeout of the server's "
    "config entry, 30 s unless it sets one).",
)
@source_options
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
    source, loaded = load_servers(config_path, url, headers, expand_env)
    with server_group(loaded, source) as group:
        name, server = route_of(group, loaded, source, name, ToolTable)
        start_one(group, loaded, server, source, start_timeout, fancy=animated(as_json))
        with reported(name, server, source):
            result = _call(group, name, parsed, timeout, fancy=animated(as_json))
        if as_json:
            print_json(wire_json(result))
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


def _call(
    group: ClientGroup,
    name: str,
    arguments: Mapping[str, Any],
    timeout: float | None,
    *,
    fancy: bool,
) -> CallToolResult:
    bar = ProgressBar(name) if fancy else None
    with bar if bar is not None else contextlib.nullcontext():
        return group.call_tool(name, arguments, timeout=timeout, progress=bar)


def _print_result(result: CallToolResult) -> None:
    """The result for a person: text as is, other content as one bracketed line each. A tool
    error goes to stderr."""
    lines = [block_text(block) for block in result.content]
    if not lines and result.structured_content is not None:
        lines = [json.dumps(wire_json(result.structured_content), indent=2)]
    if not lines and result.is_error:
        lines = ["the tool reported an error without any text"]
    for line in lines:
        click.echo(line, err=result.is_error)


@click.command()
@click.argument("server")
@click.argument("uri")
@click.option(
    "--out",
    "out_path",
    metavar="FILE",
    help="Write the resource's bytes to FILE (a blob as it is, text as UTF-8).",
)
@timeout_option
@source_options
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
    source, loaded = load_servers(config_path, url, headers, expand_env)
    named_server(loaded, server, source)
    with server_group(loaded, source) as group:
        loaded_server(group, loaded, source, server)
        start_one(group, loaded, server, source, start_timeout, fancy=animated(as_json))
        with reported(f"reading {uri} from {server!r}", server, source):
            result = group.read_resource(server, uri, timeout=timeout)
        if out_path is not None:
            _write_out(result, out_path)
        if as_json:
            print_json(wire_json(result))
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


@click.command()
@click.argument("name")
@click.option(
    "--arg",
    "pairs",
    multiple=True,
    metavar="KEY=VALUE",
    help="An argument of the prompt (repeatable); values are strings.",
)
@timeout_option
@source_options
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
    source, loaded = load_servers(config_path, url, headers, expand_env)
    with server_group(loaded, source) as group:
        name, server = route_of(group, loaded, source, name, PromptTable)
        start_one(group, loaded, server, source, start_timeout, fancy=animated(as_json))
        with reported(name, server, source):
            result = group.get_prompt(name, arguments or None, timeout=timeout)
        if as_json:
            print_json(wire_json(result))
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
        click.echo(f"{message.role}: {block_text(message.content)}")
