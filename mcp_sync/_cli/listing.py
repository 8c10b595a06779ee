"""The commands that start every server and show what each has: ``tools``, ``resources``,
``prompts`` (a table, or ``--json``) and ``status`` (one row per server, and the login to run
for a server that needs one).

A tool's or prompt's arguments are listed in the table one a line, by name, an optional one
marked ``?`` (``style?``), a tool's with its JSON Schema type when the schema gives one
plainly (``b?: string``); ``status`` shows the library's state names (``Status.state``), the
same words as its ``--json``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import click

from mcp_core import Prompt, Resource, ResourceTemplate, SessionState, Status, Tool

from .._group import ClientGroup
from .errors import EXIT_OK, EXIT_UNAVAILABLE
from .render import (
    animated,
    first_line,
    output_console,
    print_json,
    print_table,
    wire_dict,
    wire_json,
)
from .running import report_unlisted, server_group, start_all, start_servers, start_timeout_of
from .sources import (
    current_source,
    explained,
    load_servers,
    load_source,
    login_command,
    needs_login,
    source_options,
)

__all__ = ["STATE_STYLES", "prompts", "resources", "status", "tool_arguments", "tools"]

# The colour of each state in the status table (a test checks that every state has one).
STATE_STYLES: Mapping[SessionState, str] = {
    "new": "dim",  # never started: status starts every server, so only for completeness
    "ready": "green",
    "starting": "yellow",
    "initializing": "yellow",
    "closed": "red",
}
_NONE = "-"  # a cell with nothing to show


@click.command()
@source_options
def tools(
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """List every ready server's tools as mcp__<server>__<tool>.

    Each with its arguments (an optional one ends in ?, a type follows a colon) and
    description. Servers that did not start are named on stderr; the exit code is 3 only
    when none did.
    """
    source, loaded = load_servers(config_path, url, headers, expand_env)
    with server_group(loaded, source) as group:
        start_servers(group, loaded, source, start_timeout, fancy=animated(as_json))
        rows = [(_server_of(group, tool), tool) for tool in group.list_tools()]
        # Printed before the servers are stopped: the user need not wait for their shutdown.
        if as_json:
            print_json([_tool_json(server, tool) for server, tool in rows])
        else:
            _print_tool_table(rows)
    return EXIT_OK


def _server_of(group: ClientGroup, tool: Tool) -> tuple[str, str]:
    route = group.resolve(tool.name)
    assert route is not None  # list_tools() just published it
    return route


def _tool_json(route: tuple[str, str], tool: Tool) -> dict[str, object]:
    server, original = route
    return {"server": server, "tool": original, **wire_dict(tool)}


def _print_tool_table(rows: Sequence[tuple[tuple[str, str], Tool]]) -> None:
    print_table(
        ["server", "tool", "arguments", "description"],
        [
            [
                server,
                tool.name,
                tool_arguments(tool.input_schema),
                first_line(tool.description) or first_line(tool.title),
            ]
            for (server, _original), tool in rows
        ],
        wrap={3},
    )


def tool_arguments(schema: Mapping[str, Any]) -> str:
    """A tool's arguments from its input schema, for a person, one a line in the schema's
    order: ``a: number``, ``b?: string``. An argument not in ``required`` ends in ``?``; its
    ``type`` follows when the schema gives one plainly (a name, or a list of names as
    ``string|null``), never a composed one (``anyOf``, ``$ref``). ``-`` when it takes none."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return _NONE
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    listed = []
    for name, prop in properties.items():
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        if isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
            kind = "|".join(kind)
        typed = f": {kind}" if isinstance(kind, str) else ""
        listed.append(f"{name}{'' if name in needed else '?'}{typed}")
    return "\n".join(listed)


@click.command()
@source_options
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
    source, loaded = load_servers(config_path, url, headers, expand_env)
    with server_group(loaded, source) as group:
        start_servers(group, loaded, source, start_timeout, fancy=animated(as_json))
        listed = group.list_resources()
        templates = group.list_resource_templates()
        report_unlisted(group, "resources", listed)
        if as_json:
            print_json(
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
        {"server": server, **wire_dict(item)} for server, items in listed.items() for item in items
    ]


def _print_resource_tables(
    listed: Mapping[str, Sequence[Resource]], templates: Mapping[str, Sequence[ResourceTemplate]]
) -> None:
    """The resources, then (when any server has some) the templates, each a table."""
    print_table(
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
        print_table(["server", "uri template", "name", "mime"], rows)


@click.command()
@source_options
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
    source, loaded = load_servers(config_path, url, headers, expand_env)
    with server_group(loaded, source) as group:
        start_servers(group, loaded, source, start_timeout, fancy=animated(as_json))
        rows = [(_prompt_route(group, p), p) for p in group.list_prompts()]
        # A flat list cannot tell a server with no prompts from one that failed to list them:
        # only the servers that offer none are named (the group logs a failure, -v shows it).
        report_unlisted(group, "prompts", None)
        if as_json:
            print_json(
                [
                    {"server": server, "prompt": original, **wire_dict(p)}
                    for (server, original), p in rows
                ]
            )
        else:
            print_table(
                ["server", "prompt", "arguments", "description"],
                [
                    [
                        server,
                        p.name,
                        "\n".join(a.name + ("" if a.required else "?") for a in p.arguments)
                        or _NONE,
                        first_line(p.description) or first_line(p.title),
                    ]
                    for (server, _original), p in rows
                ],
                wrap={3},
            )
    return EXIT_OK


def _prompt_route(group: ClientGroup, prompt: Prompt) -> tuple[str, str]:
    route = group.resolve_prompt(prompt.name)
    assert route is not None  # list_prompts() just published it
    return route


@click.command()
@source_options
def status(
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """Start the servers and show state, transport, era, protocol version, calls in flight
    and the last error of each; a server that needs a login shows the command to run.

    The states are starting, initializing, ready and closed (refused by the config, or
    failed: its last error says why). Exit code 0 when every server is ready, else 3."""
    source = current_source(config_path, url, headers, expand_env)
    loaded = load_source(source)
    with server_group(loaded, source) as group:
        statuses = start_all(
            group, start_timeout_of(loaded, start_timeout), fancy=animated(as_json)
        )
        logins = {
            name: login_command(name, source)
            for name, s in statuses.items()
            if s.state != "ready" and needs_login(name, s.last_error)
        }
        errors = {
            name: explained(s.last_error, source)
            for name, s in statuses.items()
            if s.last_error is not None
        }
        if as_json:
            print_json(
                {
                    name: _status_json(s, errors.get(name), logins.get(name))
                    for name, s in statuses.items()
                }
            )
        else:
            _print_status_table(statuses, errors, logins)
    ready = all(s.state == "ready" for s in statuses.values())
    return EXIT_OK if ready else EXIT_UNAVAILABLE


def _status_json(status: Status, error: str | None, login: str | None) -> dict[str, object]:
    fields = {f.name: wire_json(getattr(status, f.name)) for f in dataclasses.fields(status)}
    return {
        **fields,
        "last_error": error,
        "ready": status.ready,
        "login_required": login is not None,
        "login_command": login,
    }


def _print_status_table(
    statuses: Mapping[str, Status], errors: Mapping[str, str], logins: Mapping[str, str]
) -> None:
    """One row per server, its state as ``--json`` names it, in its colour; then the last
    error of each server that has one, in full (a table column would fold it into a narrow
    strip); for a server that needs a login, the command that logs in instead."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("server", "state", "transport", "era", "protocol", "in flight"):
        table.add_column(column, no_wrap=True)
    notes = Text()
    for name, s in statuses.items():
        in_flight = f"{s.in_flight} (+{s.queued} queued)" if s.queued else str(s.in_flight)
        table.add_row(
            Text(name),
            Text(s.state, style=STATE_STYLES[s.state]),
            Text(s.transport),
            Text(s.era or _NONE),
            Text(s.protocol_version or _NONE),
            Text(in_flight),
        )
        if name in logins:
            notes.append(f"\n{name}: ", style="bold")
            notes.append(f"needs a login: run `{logins[name]}`")
        elif name in errors:
            notes.append(f"\n{name}: ", style="bold")
            notes.append(errors[name])
    console = output_console()
    console.print(table)
    if notes:
        console.print(notes, soft_wrap=True)
