"""``mcp-client replay FILE``: the actions a recording replays to, through a fresh machine,
one line each (or one JSON object per line with ``--json``); no server is started."""

from __future__ import annotations

import json

import click

from mcp_core import McpError
from mcp_core.replay import encode_action, replay

from .errors import EXIT_BAD_INPUT, EXIT_OK, CliError

__all__ = ["replay_command"]


@click.command(name="replay")
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
