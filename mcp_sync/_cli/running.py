"""The servers of a command as a ``ClientGroup``: started all at once (the listings) or one
alone (a request), the ones that did not start named on stderr, a tool or prompt name routed
to its server, and what a request raises turned into the command's one line and exit code.
Every library message on the way is ``explained``: in a shell user's words."""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Mapping

import click

from mcp_core import (
    AuthorizationRequired,
    ConnectFailed,
    JsonRpcError,
    McpError,
    NotReady,
    NotSupported,
    Status,
    TaskCancelled,
    Tool,
    UnknownPrompt,
    UnknownTool,
    parse_tool_name,
)
from mcp_core.config import LoadedConfig
from mcp_core.group import PromptTable, ToolTable

from .._client import Client
from .._group import ClientGroup
from .errors import EXIT_BAD_INPUT, EXIT_CALL_FAILED, EXIT_UNAVAILABLE, CliError
from .render import spinner
from .sources import (
    Source,
    check_token_file,
    explained,
    login_needed,
    needs_login,
    token_store,
)

__all__ = [
    "loaded_server",
    "report_unlisted",
    "reported",
    "route_of",
    "server_group",
    "start_all",
    "start_one",
    "start_servers",
    "start_timeout_of",
    "tool_route",
]

# JSON-RPC errors that say the request itself was wrong (2025-11-25 schema: -32602 invalid
# params, e.g. an unknown URI or a missing prompt argument; server/resources: -32002 resource
# not found): bad input, not a failed call.
_REFUSED_INPUT = frozenset({-32602, -32002})
_DEFAULT_INIT_TIMEOUT = 60.0


# --- starting them ------------------------------------------------------------------------------


@contextlib.contextmanager
def server_group(loaded: LoadedConfig, source: Source) -> Iterator[ClientGroup]:
    """A group of ``loaded``'s servers, not started; stopped (no process left) on exit.

    ``fail_fast``: a person at a shell wants the first failure, not a minute of retries.
    OAuth servers use the token file and never ask anyone (``interactive=False``): ``login``
    is the command that does."""
    store = token_store(source)
    check_token_file(loaded, store)
    group = ClientGroup(loaded, wait=False, fail_fast=True, token_store=store, interactive=False)
    try:
        yield group
    finally:
        group.stop()


def start_timeout_of(loaded: LoadedConfig, given: float | None) -> float:
    if given is not None:
        return given
    timeouts = [spec.init_timeout for spec in loaded.servers.values()]
    return max(timeouts) if timeouts else _DEFAULT_INIT_TIMEOUT


def start_all(group: ClientGroup, timeout: float, *, fancy: bool) -> dict[str, Status]:
    group.start()
    names = ", ".join(group.clients)
    with spinner(fancy, f"starting {names}"):
        return group.await_ready(timeout)


def _report_down(statuses: Mapping[str, Status], source: Source, timeout: float) -> None:
    for name, status in statuses.items():
        if status.state == "ready":
            continue
        if needs_login(name, status.last_error):
            click.echo(f"mcp-client: {login_needed(name, source)}", err=True)
        elif status.last_error:
            why = explained(status.last_error, source)
            click.echo(f"mcp-client: server {name!r} is down: {why}", err=True)
        else:
            click.echo(f"mcp-client: server {name!r} {_not_started(status, timeout)}", err=True)


def _not_started(status: Status, timeout: float) -> str:
    return (
        f"is still {status.state} after {timeout:g} s (--start-timeout SECONDS waits longer)"
    )


def start_servers(
    group: ClientGroup,
    loaded: LoadedConfig,
    source: Source,
    start_timeout: float | None,
    *,
    fancy: bool,
) -> dict[str, Status]:
    """Start every server of ``group``, name the ones that did not start on stderr, and
    return every status; ``CliError`` (exit 3) when none is ready."""
    timeout = start_timeout_of(loaded, start_timeout)
    statuses = start_all(group, timeout, fancy=fancy)
    _report_down(statuses, source, timeout)
    if not any(status.state == "ready" for status in statuses.values()):
        raise CliError("no server is available", EXIT_UNAVAILABLE)
    return statuses


def start_one(
    group: ClientGroup,
    loaded: LoadedConfig,
    server: str,
    source: Source,
    start_timeout: float | None,
    *,
    fancy: bool,
) -> None:
    """Start only ``server`` of ``group`` and wait for it, up to its first failed attempt
    (``fail_fast``, as the group's waits: see ``server_group``); ``CliError`` (exit 3) when it
    does not become ready, naming the login to run when it needs one."""
    client = group.clients[server]
    client.start()
    timeout = start_timeout_of(loaded, start_timeout)
    with spinner(fancy, f"starting {server}"):
        try:
            client.await_ready(timeout, fail_fast=True)
        except ConnectFailed as exc:
            if needs_login(server, exc.reason):
                raise CliError(login_needed(server, source), EXIT_UNAVAILABLE) from None
            why = explained(str(exc), source)
            raise CliError(f"server {server!r} is not available: {why}", EXIT_UNAVAILABLE) from None
        except NotReady:
            why = _not_started(client.status(), timeout)
            raise CliError(f"server {server!r} {why}", EXIT_UNAVAILABLE) from None


# --- asking them --------------------------------------------------------------------------------


@contextlib.contextmanager
def reported(label: str, server: str, source: Source) -> Iterator[None]:
    """Turn what a request to ``server`` raises into the command's one line and exit code:
    2 for a name no server has, a server that does not offer the kind at all, or a request
    the server refused as invalid (``_REFUSED_INPUT``); 3 for a server that is down or needs
    a login; 4 for a task cancelled on the server and any other failure. ``label`` names the
    request in the line."""
    try:
        yield
    except (UnknownTool, UnknownPrompt) as exc:
        raise CliError(explained(exc.message, source), EXIT_BAD_INPUT) from None
    except NotSupported as exc:
        raise CliError(f"{label}: {explained(exc.message, source)}", EXIT_BAD_INPUT) from None
    except TaskCancelled as exc:  # it names the task; the label would only repeat it
        raise CliError(explained(str(exc), source), EXIT_CALL_FAILED) from None
    except AuthorizationRequired:  # the stored login ran out mid-session (refresh refused)
        raise CliError(login_needed(server, source), EXIT_UNAVAILABLE) from None
    except (ConnectFailed, NotReady) as exc:
        why = explained(str(exc), source)
        raise CliError(f"{label}: the server is not available: {why}", EXIT_UNAVAILABLE) from None
    except JsonRpcError as exc:
        code = EXIT_BAD_INPUT if exc.code in _REFUSED_INPUT else EXIT_CALL_FAILED
        raise CliError(f"{label} failed: {explained(str(exc), source)}", code) from None
    except McpError as exc:
        raise CliError(f"{label} failed: {explained(str(exc), source)}", EXIT_CALL_FAILED) from None


def report_unlisted(group: ClientGroup, kind: str, listed: Collection[str] | None) -> None:
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


def route_of(
    group: ClientGroup,
    loaded: LoadedConfig,
    source: Source,
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
        raise CliError(explained(table.unknown(name).message, source), EXIT_BAD_INPUT)
    loaded_server(group, loaded, source, server)
    return name, server


def loaded_server(group: ClientGroup, loaded: LoadedConfig, source: Source, server: str) -> None:
    """``CliError`` (exit 2) unless ``server`` has a client in ``group``."""
    if server not in group.clients:
        why = loaded.skipped.get(server) or group.status()[server].last_error or "no reason given"
        raise CliError(
            f"server {server!r} was not loaded: {explained(why, source)}", EXIT_BAD_INPUT
        )


def tool_route(group: ClientGroup, server: str, name: str) -> tuple[Client, Tool]:
    """The client of ``server`` (started) and the tool listed as ``name``, as the server
    lists it (its own name), by the group's naming rules: a call through the client takes
    every keyword of ``Client.call_tool`` (``task=``) and ``start_tool``. ``UnknownTool``
    (with the names it may have meant) when ``server`` lists no such tool; the client's error
    when it cannot list."""
    client = group.clients[server]
    listed = client.list_tools()
    table = ToolTable(group.status())  # the same names as the group's: they depend on the set
    table.publish(server, listed)
    route = table.resolve(name)
    if route is None:
        raise table.unknown(name)
    return client, next(tool for tool in listed if tool.name == route[1])
