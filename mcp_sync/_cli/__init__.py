"""``mcp-client``: try MCP servers from the shell before wiring them into an agent.

    mcp-client tools  [SOURCE] [--json]                      the namespaced tool list
    mcp-client call   NAME [ARGUMENTS] [SOURCE] [--timeout S] [--json]
                      [--task|--no-task] [--detach]          a task: followed, or its id printed
    mcp-client task   SERVER TASK_ID [--wait|--cancel] [SOURCE] [--timeout S] [--json]
    mcp-client tasks  SERVER [SOURCE] [--json]               a server's tasks (2025-11-25)
    mcp-client resources [SOURCE] [--json]                   resources and templates per server
    mcp-client read   SERVER URI [SOURCE] [--out FILE] [--timeout S] [--json]
    mcp-client prompts [SOURCE] [--json]                     the namespaced prompt list
    mcp-client prompt NAME [--arg KEY=VALUE]... [SOURCE] [--timeout S] [--json]
    mcp-client skills SERVER [SKILL] [--read [PATH]] [SOURCE] [--timeout S] [--json]
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
message as ``role: text``. ``skills`` lists one server's Agent Skills (SEP-2640), a skill's
files, or with ``--read`` one file, printed only once it matches the skill's manifest.

Logins (OAuth): ``login`` runs the OAuth flow for one HTTP server (the browser step opens
the authorization URL, which is also printed on stderr, and waits for the redirect on a
one-shot listener on 127.0.0.1) and keeps the tokens in the token file, ``FileTokenStore()``'s
default path or the global ``--token-file PATH`` (before the command name); ``logout``
forgets them. The commands that talk to servers read the same file and never ask anyone
(``interactive=False``): stored tokens are used and refreshed (the new ones written back), and
a server that needs a login is reported with the ``mcp-client login ...`` line to run.

Exit codes (``EXIT_*`` in ``errors.py``): 0 success (``login``: also a server that needs no login;
``logout``: also when nothing was stored); 1 the tool answered with ``isError``; 2 bad input
(usage, arguments that are not a JSON object, an unknown server, tool, prompt or skill, a
server that does not offer resources, prompts or skills at all, a skill file its manifest does
not list, a request the server refused as invalid: JSON-RPC -32602 invalid params or -32002
resource not found, a missing or empty config, an unreadable recording, a token file that is
corrupt or cannot be written, an ``--out`` file that cannot be written); 3 a server is
unavailable (it did not connect, or needs a login; for ``status``: not every server is ready);
4 the call failed (timeout, server exit, protocol error, a skill file other than its manifest
lists), or the login failed (the authorization server refused, the browser step did not
finish); 70 a bug in this command (a traceback on stderr); 130 interrupted.

This is the blocking driver's command: no event loop. Human output uses rich (a table, a
spinner while servers start, a bar while a call reports progress; the animations only when
stderr is a terminal); ``--json`` output is plain JSON on stdout. A table is as wide as the
terminal (or ``COLUMNS``, or 100 columns into a file or pipe); its descriptions wrap, names
are never cut; a tool's or prompt's arguments are listed one a line, an optional one ending
in ``?``, a tool's with its type (``b?: number``). ``status`` names the states as the library
does (``Status.state``: starting, initializing, ready, closed; never ``new``, as it starts
every server), in the table as in ``--json``.
Every error is one line on stderr; messages come from redacted specs and errors, so a
``--header`` value or a config's secret is never printed, nor is a token, code or client
secret. A library message is put in a shell user's words on its way out (``wording.py``):
the config entry, ``--url`` or the command after ``--`` where it says "the spec", an option
or a subcommand where it names a keyword argument or a method. The authorization URL is
shown to the user on stderr by ``login`` only, never logged.

``login`` has a test hook, ``MCP_CLIENT_TEST_AUTHORIZE`` (not for users: ``logins.py`` says
what it does).

The package, one module per part of the command:

- ``__init__.py``: the ``cli`` group (its global options ``-v`` and ``--token-file``) and
  ``main``, which turns what a command raises into the one line and the exit code.
- ``__main__.py``: ``python -m mcp_sync._cli``.
- ``errors.py``: the exit codes and ``CliError``.
- ``sources.py``: SOURCE's options, loading the config or the ``--url``/command server, the
  library's messages about them in shell words (``explained``), the token file and the
  ``mcp-client login`` line a server that needs a login is reported with.
- ``wording.py``: the library's phrases a shell user has no use for, and theirs.
- ``running.py``: the ``ClientGroup`` of a command: starting all servers or one, routing a
  tool or prompt name, a failed request as its one line and exit code.
- ``render.py``: the output: MCP JSON, rich tables, the spinner and the progress bar.
- ``listing.py``: ``tools``, ``resources``, ``prompts`` and ``status`` (every server).
- ``calls.py``: ``call``, ``read`` and ``prompt`` (one request to one server).
- ``skills.py``: ``skills`` (one server's Agent Skills, a skill's files, one file checked).
- ``logins.py``: ``login`` and ``logout`` (OAuth).
- ``recordings.py``: ``replay``.
- ``tasks.py``: ``task`` and ``tasks`` (tool calls a server runs as tasks; ``call --detach``
  starts one).
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Sequence

import click

from .calls import call, prompt, read
from .errors import EXIT_BUG, EXIT_INTERRUPTED, EXIT_OK, CliError
from .listing import prompts, resources, status, tools
from .logins import login, logout
from .recordings import replay_command
from .skills import skills
from .tasks import task_command, tasks_command

__all__ = ["main"]


@click.group(
    # Each command is in the module of its part (the package docstring); --help sorts them.
    commands=[
        *(tools, resources, prompts, status, call, read, prompt, skills),
        *(login, logout, replay_command),
    ],
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="\b\nExit codes: 0 ok, 1 the tool reported an error, 2 bad input (usage, JSON "
    "arguments,\nunknown server, tool, prompt or skill, a request the server refused as invalid, "
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


cli.add_command(task_command)
cli.add_command(tasks_command)


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
