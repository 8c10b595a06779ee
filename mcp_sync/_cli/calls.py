"""The commands that make one request of one server, starting only that server: ``call`` a
tool (its result's text, or ``--json``; a tool the server runs as a task is followed to its
result, or with ``--detach`` left running and its id printed), ``read`` a resource (text as
it is, a blob described or written to ``--out FILE``) and get a ``prompt`` (its messages as
``role: text``)."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from mcp_core import (
    CallToolResult,
    GetPromptResult,
    InvalidArguments,
    MissingClientCapability,
    ReadResourceResult,
    Spec,
    Tool,
)
from mcp_core.group import PromptTable, ToolTable

from .._client import Client, Task
from .errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_TOOL_ERROR, CliError
from .render import ProgressBar, animated, block_text, print_json, wire_json
from .running import loaded_server, reported, route_of, server_group, start_one, tool_route
from .sources import Source, command_line, load_servers, named_server, source_options

__all__ = ["call", "prompt", "read", "show_result", "timeout_option"]

# The 2026-07-28 Tasks extension (SEP-2663): a server that runs a tool only as a task names
# it when refusing a call that did not declare it (-32021), as under --no-task.
_TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

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
    help="Give up on the call after this long, a task's included: it is cancelled on the "
    "server then (--detach: on the server's answer). Default: the call_timeout of the "
    "server's config entry, 30 s unless it sets one.",
)
@click.option(
    "--task/--no-task",
    default=None,
    help="Ask the server to run the call as a task (a long-running call), or never. Default: "
    "a task when the tool or the server requires one.",
)
@click.option(
    "--detach",
    is_flag=True,
    help="Start the call as a task and print its id (--json: its status) without waiting; "
    "`mcp-client task SERVER TASK_ID` follows it. For servers over HTTP: a stdio server "
    "stops, and its tasks with it, when mcp-client exits.",
)
@source_options
def call(
    name: str,
    arguments: str,
    timeout: float | None,
    task: bool | None,
    detach: bool,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """Call tool NAME with ARGUMENTS (a JSON object, default {}; - reads it from stdin).

    Prints the result's text (with --json the whole result). A tool the server runs as a
    task is followed to its result, its status messages shown while it runs (on a
    terminal). Only NAME's server is started.
    """
    if detach and task is False:
        raise click.UsageError("--detach starts a task: it does not go with --no-task")
    parsed = _arguments(arguments)
    source, loaded = load_servers(config_path, url, headers, expand_env)
    with server_group(loaded, source) as group:
        name, server = route_of(group, loaded, source, name, ToolTable)
        start_one(group, loaded, server, source, start_timeout, fancy=animated(as_json))
        with reported(name, server, source):
            client, tool = tool_route(group, server, name)
            if client.status().era == "legacy" and task is False:
                _check_task_support(tool, name)
            try:
                if detach:
                    started = client.start_tool(tool.name, parsed, timeout=timeout)
                else:
                    result = _call(
                        client, tool.name, name, parsed, timeout, task, fancy=animated(as_json)
                    )
            except InvalidArguments as exc:
                if exc.path != "task":  # the client refused to ask a task of this tool
                    raise
                flag = "--detach" if detach else "--task"
                message = f"{name} does not run as a task: leave out {flag}"
                raise CliError(message, EXIT_BAD_INPUT) from None
        if detach:
            return _show_started(started, server, loaded.servers[server], source, as_json)
        return show_result(result, as_json)


def _check_task_support(tool: Tool, name: str) -> None:
    """``CliError`` (exit 2) for --no-task on a tool a 2025-11-25 server runs only as a task
    (its ``execution.taskSupport`` is "required": 2025-11-25 server/tools §Tool Execution),
    before anything is sent: the server would refuse the call. The other way round, --task
    or --detach on a tool that runs no task, the client itself refuses (``InvalidArguments``
    on ``task``)."""
    execution = tool.raw.get("execution")
    if isinstance(execution, Mapping) and execution.get("taskSupport") == "required":
        raise CliError(f"{name} runs only as a task: leave out --no-task", EXIT_BAD_INPUT)


def _show_started(task: Task, server: str, spec: Spec, source: Source, as_json: bool) -> int:
    """``call --detach``: the task's id (its status with ``as_json``) and, on stderr, how to
    follow it; a call the server answered at once instead is shown as any call's result."""
    if task.id is None:  # a 2026-07-28 server may answer at once, making no task
        click.echo("mcp-client: the server answered at once: no task was made", err=True)
        return show_result(task.result(), as_json)
    assert task.last is not None  # a task's handle holds the status it was made with
    if as_json:
        print_json(task.last.to_wire())
    else:
        click.echo(task.id)
    click.echo(
        f"mcp-client: {_detached(server, task.id, task.last.status, spec, source)}", err=True
    )
    return EXIT_OK


def _detached(server: str, task_id: str, status: str, spec: Spec, source: Source) -> str:
    """What to do with a task just started: the line that follows it, or, for a server over
    stdio (stopped as the command exits), that it most likely ended already."""
    if spec.transport == "stdio":
        return (
            f"task started ({status}), but server {server!r} runs over stdio and stops as "
            "mcp-client exits: the task most likely ends with it (--detach is for servers "
            "over HTTP)"
        )
    follow = command_line(source, "task", server, task_id)
    return f"task started ({status}); `{follow}` shows it, with --wait waits for its result"


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
    client: Client,
    tool: str,
    name: str,
    arguments: Mapping[str, Any],
    timeout: float | None,
    task: bool | None,
    *,
    fancy: bool,
) -> CallToolResult:
    bar = ProgressBar(name) if fancy else None
    with bar if bar is not None else contextlib.nullcontext():
        try:
            return client.call_tool(tool, arguments, timeout=timeout, progress=bar, task=task)
        except MissingClientCapability as exc:
            if task is False and _TASKS_EXTENSION in exc.extensions:
                raise CliError(
                    f"{name} runs only as a task: leave out --no-task", EXIT_BAD_INPUT
                ) from None
            raise


def show_result(result: CallToolResult, as_json: bool) -> int:
    """Print a tool's result, its whole MCP JSON with ``as_json``; the exit code it makes."""
    if as_json:
        print_json(wire_json(result))
    else:
        _print_result(result)
    return EXIT_TOOL_ERROR if result.is_error else EXIT_OK


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
