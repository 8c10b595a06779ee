"""The commands about tool calls a server runs as tasks (MCP 2025-11-25
basic/utilities/tasks; the 2026-07-28 Tasks extension, SEP-2663): ``task`` shows one task of
one server, waits for its result (``--wait``) or cancels it (``--cancel``); ``tasks`` lists
a server's tasks, which only 2025-11-25 can. ``call --detach`` (``calls.py``) starts one.

A task lives in its server. Every command starts its servers afresh and stops them as it
exits, so a task outlives the command that started it only on a server over HTTP that keeps
it; a server run over stdio is a new process, which knows no task of an earlier one: its
"unknown task" says so."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import click

from mcp_core import JsonRpcError, NotSupported, Spec, TaskStatus

from .calls import show_result
from .errors import EXIT_BAD_INPUT, EXIT_OK, CliError
from .render import ProgressBar, animated, print_json, print_table
from .running import loaded_server, reported, server_group, start_one
from .sources import Source, explained, load_servers, named_server, source_options

__all__ = ["print_task", "print_tasks", "task_command", "tasks_command"]

_UNKNOWN = -32602  # a task id the server does not know: JSON-RPC invalid params (both versions)
_NONE = "-"  # a cell with nothing to show


# A server's task ids may start with "-" (FastMCP's are URL-safe base64): an unknown option is
# taken as the id, and help is --help alone here (an id may start with "-h").
@click.command(
    "task", context_settings={"ignore_unknown_options": True, "help_option_names": ["--help"]}
)
@click.argument("server")
@click.argument("task_id")
@click.option(
    "--wait",
    is_flag=True,
    help="Wait for the task to end and print its result as `call` does (the task goes on "
    "if --timeout passes first).",
)
@click.option("--cancel", is_flag=True, help="Ask the server to cancel the task.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Give up after this long: on the request, or with --wait on waiting (default: the "
    "call_timeout of the server's config entry, 30 s unless it sets one).",
)
@source_options
def task_command(
    server: str,
    task_id: str,
    wait: bool,
    cancel: bool,
    timeout: float | None,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """Show task TASK_ID of SERVER: its status and the server's status message.

    SERVER is a config's server name ("cli" for --url or a command). --wait prints the
    task's result instead (exit 1 if the tool reported an error), --cancel asks the server to
    cancel it and shows the status it reports. With --json the task as MCP JSON (--wait: the
    result). A task outlives the command that started it only on a server over HTTP.
    """
    if wait and cancel:
        raise click.UsageError("give --wait or --cancel, not both")
    source, loaded = load_servers(config_path, url, headers, expand_env)
    spec = named_server(loaded, server, source)
    with server_group(loaded, source) as group:
        loaded_server(group, loaded, source, server)
        start_one(group, loaded, server, source, start_timeout, fancy=animated(as_json))
        handle = group.clients[server].task(task_id)
        about = f"task {task_id!r} of {server!r}"
        label = f"waiting for {about}" if wait else f"cancelling {about}" if cancel else about
        with reported(label, server, source), _known(label, spec, server, source):
            if wait:
                bar = ProgressBar(about, doing="waiting for") if animated(as_json) else None
                with bar if bar is not None else contextlib.nullcontext():
                    result = handle.result(timeout=timeout, progress=bar)
                return show_result(result, as_json)
            said = handle.cancel(timeout=timeout) if cancel else None
            # 2026-07-28 acknowledges a cancel with nothing: where it stands is asked after.
            status = said if said is not None else handle.status(timeout=timeout)
        if as_json:
            print_json(status.to_wire())
        else:
            print_task(status)
    return EXIT_OK


@contextlib.contextmanager
def _known(label: str, spec: Spec, server: str, source: Source) -> Iterator[None]:
    """A task id the server does not know (-32602), with why that is likely when ``server``
    runs over stdio: this command started it, after whichever command started the task."""
    try:
        yield
    except JsonRpcError as exc:
        if exc.code != _UNKNOWN or spec.transport != "stdio":
            raise
        raise CliError(
            f"{label} failed: {explained(str(exc), source)} (server {server!r} runs over "
            "stdio: each mcp-client command starts it afresh, and it knows no task of an "
            "earlier one)",
            EXIT_BAD_INPUT,
        ) from None


@click.command("tasks")
@click.argument("server")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Give up on the listing after this long (default: the call_timeout of the server's "
    "config entry, 30 s unless it sets one).",
)
@source_options
def tasks_command(
    server: str,
    timeout: float | None,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """List the tasks of SERVER: id, status, last update and status message.

    SERVER is a config's server name ("cli" for --url or a command). Only a 2025-11-25 server
    lists its tasks (2026-07-28 has no such request: `mcp-client task SERVER TASK_ID` shows
    one). With --json a list of tasks as MCP JSON.
    """
    source, loaded = load_servers(config_path, url, headers, expand_env)
    named_server(loaded, server, source)
    with server_group(loaded, source) as group:
        loaded_server(group, loaded, source, server)
        start_one(group, loaded, server, source, start_timeout, fancy=animated(as_json))
        client = group.clients[server]
        with reported(f"listing the tasks of {server!r}", server, source):
            try:
                listed = client.list_tasks(timeout=timeout)
            except NotSupported:
                version = client.status().protocol_version
                if client.status().era != "modern":
                    raise
                raise CliError(
                    f"server {server!r} speaks MCP {version}, which has no request to list "
                    f"tasks (2025-11-25 only); `mcp-client task {server} TASK_ID` shows one",
                    EXIT_BAD_INPUT,
                ) from None
        if as_json:
            print_json([status.to_wire() for status in listed])
        elif listed:
            print_tasks(listed)
        else:
            click.echo(f"mcp-client: server {server!r} lists no tasks", err=True)
    return EXIT_OK


def print_task(status: TaskStatus) -> None:
    """One task for a person: a line per field it has, durations in seconds."""
    fields = [
        ("task", status.task_id),
        ("status", status.status),
        ("message", status.message),
        ("created", status.created_at),
        ("updated", status.last_updated_at),
        ("ttl", _seconds(status.ttl)),
        ("poll", _seconds(status.poll_interval)),
    ]
    for key, value in fields:
        if value is not None:
            click.echo(f"{key + ':':<9}{value}")


def print_tasks(listed: Sequence[TaskStatus]) -> None:
    """Tasks as a table: id, status, last update and status message (which wraps)."""
    print_table(
        ["task", "status", "updated", "message"],
        [[s.task_id, s.status, s.last_updated_at or _NONE, s.message or _NONE] for s in listed],
        wrap={3},
    )


def _seconds(value: float | None) -> str | None:
    return None if value is None else f"{value:g} s"
