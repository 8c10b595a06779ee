"""The library's messages in a shell user's words.

A library error speaks to a program: "fix the spec and create a new client", "await_ready
waits for it", "status().capabilities shows what it offers", "raise timeout=". A shell user
has none of these: they have a config file and its server entries, the command's options and
its subcommands. ``shell_words`` rewrites the phrases of the library's messages that name a
program's things into those, and leaves every other word as the library wrote it (the
library's own users keep its messages). ``Place`` says where the server's settings are, for
the advice: its entry in the config file, the ``--url``/``--header`` values, or the command
after ``--``.

Every phrase below is the library's text, matched as it is written; a test runs each
library error the command can meet through ``shell_words`` and fails when one of their
program words reaches the user (a library message reworded without this table).
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["Place", "shell_words"]


@dataclasses.dataclass(frozen=True, slots=True)
class Place:
    """Where a server's settings are. ``fix``: what to correct when they are wrong ("its entry
    in '.mcp.json'", "--url", "--url or --header", "the command after --"); ``settings``:
    where a setting such as ``max_message_bytes`` goes (the --url and -- COMMAND servers
    take none)."""

    fix: str
    settings: str


# "invalid spec: <problem>; spec: <the entry, redacted>; <hint>" (InvalidSpec): the entry is
# left out (the user has it in front of them), the hint has no braces.
_INVALID_SPEC = re.compile(r"invalid spec: (?P<problem>.*?); spec: \{.*\}; (?P<hint>[^{}]*)", re.S)

# (library phrase, the shell user's), in order; {fix} and {settings} are the Place's.
_PHRASES: tuple[tuple[str, str], ...] = (
    # ConnectFailed: a failure that will not pass, and one that may (the command waits for the
    # first attempt only: fail_fast).
    (
        "; this will not be retried: fix the spec and create a new client",
        "; fix {fix} and run the command again",
    ),
    (
        "; the client retries with backoff (await_ready waits for it)",
        "; this may pass: run the command again",
    ),
    # InvalidSpec's hint when a field has no advice of its own.
    ("fix this field and build the spec again", "fix it in {fix}"),
    # NotReady
    ("; call await_ready() before calling tools", ""),
    ("not ready; still retrying after: ", "not ready: "),
    # NotSupported
    (
        "(status().capabilities shows what it offers)",
        "(`mcp-client status --json` shows what it offers)",
    ),
    # UnknownTool, UnknownPrompt
    ("no server of this group has a ", "no server has a "),
    ("names here look like", "names look like"),
    ("list_tools() gives them", "`mcp-client tools` lists them"),
    ("list_prompts() gives them", "`mcp-client prompts` lists them"),
    # RequestTimeout of a call
    ("(raise timeout= or call_timeout if the tool is slow)", "(give it longer with --timeout)"),
    # RequestTimeout of a task: a call's (cancelled), or a wait on one (it goes on)
    ("(raise timeout= if the tool is slow)", "(give it longer with --timeout)"),
    (
        "it goes on: attach again with its id to wait longer",
        "it goes on: `mcp-client task SERVER TASK_ID --wait` waits again",
    ),
    # MessageTooLarge, ListTooLong, Busy
    ("raise max_message_bytes in the spec", "raise max_message_bytes in {settings}"),
    ("raise max_list_pages in the spec", "raise max_list_pages in {settings}"),
    ("the most this spec allows", "the most its settings allow"),
    # UnmeteredCall: the command has no spend gate to reserve with
    (
        "call it with reservation= from your spend gate",
        "mcp-client does not call priced tools ('prices' in {settings})",
    ),
    # AuthorizationRequired (the command prints the `mcp-client login` line instead, mostly)
    (" (or give the client an authorize= callback)", ""),
    # AuthorizationUnavailable
    (
        "the client tries again (the next connect attempt, or the next call)",
        "run the command again",
    ),
    # ServerExited: the command ends with the call, nothing restarts the server
    ("; the client restarts it with backoff", ""),
    # UrlElicitationRequired
    (" (see .elicitations), then retry the call", "; mcp-client does not handle URL elicitations"),
    # UnsupportedVersion
    ("upgrade the client or the server", "upgrade mcp-client or the server"),
    # InvalidConfig and skipped entries of load_config, with --expand-env
    ("load it with expand_env=False", "leave out --expand-env"),
    ("put it in the environ passed to load_config", "set it in your environment"),
)

_DISABLED = "disabled"  # load_config's reason for an entry with "disabled": true


def shell_words(text: str, place: Place) -> str:
    """``text``, a library message (an error, a ``Status.last_error``, a skipped entry's
    reason), with its program words put as a shell user's (this module's docstring)."""
    if text == _DISABLED:
        return f'it is disabled ("disabled": true in {place.fix})'
    text = _INVALID_SPEC.sub(
        lambda match: f"{place.fix} is invalid: {match['problem']}; {match['hint']}", text
    )
    for phrase, words in _PHRASES:
        if phrase in text:
            text = text.replace(phrase, words.format(fix=place.fix, settings=place.settings))
    return text
