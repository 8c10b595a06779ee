"""``skills``: the Agent Skills one server serves (the ``io.modelcontextprotocol/skills``
extension, SEP-2640), starting only that server.

- ``skills SERVER``: a table of its listed skills (name, ``SKILL.md`` URI, number of files,
  description); nothing is read.
- ``skills SERVER SKILL``: that skill's files as its manifest lists them (URI, size, digest).
  SKILL is a name from the listing, or a ``skill://`` URI (its ``SKILL.md``, or its directory),
  asked for with ``skills/get``, listed or not.
- ``skills SERVER SKILL --read [PATH]``: one file (``SKILL.md`` when PATH is left out; else
  relative to the skill's directory, or a full URI), printed only once it is checked against
  the manifest (size, digest, and for ``SKILL.md`` its frontmatter).

A server that does not declare the extension is told as such (exit 2), as is a path the
manifest does not list (nothing is read). A file that fails the check is not printed (exit 4):
what the server sent is not what it listed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click

from mcp_core import JsonRpcError, NotSupported
from mcp_core.skills import SKILLS_EXTENSION, Skill, SkillVerificationError

from .._client import Client
from .calls import timeout_option
from .errors import EXIT_BAD_INPUT, EXIT_CALL_FAILED, EXIT_OK, CliError
from .render import animated, first_line, print_json, print_table, wire_dict, wire_json
from .running import loaded_server, reported, server_group, start_one
from .sources import load_servers, named_server, source_options

__all__ = ["skills"]

_SKILL_FILE = "SKILL.md"
_METHOD_NOT_FOUND = -32601  # JSON-RPC 2.0: a server that has no skills/list at all


@click.command()
@click.argument("server")
@click.argument("skill", required=False)
@click.option(
    "--read",
    "path",
    is_flag=False,
    flag_value=_SKILL_FILE,
    metavar="[PATH]",
    help="Print one file of SKILL, checked against its manifest: PATH relative to the skill's "
    "directory, or a full URI (default: SKILL.md).",
)
@timeout_option
@source_options
def skills(
    server: str,
    skill: str | None,
    path: str | None,
    timeout: float | None,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    as_json: bool,
) -> int:
    """List the Agent Skills of SERVER, or the files of one SKILL.

    SERVER is a config's server name ("cli" for --url or a command). Without SKILL: name,
    URI, number of files and description of each listed skill; nothing is read. SKILL is a
    listed name or a skill:// URI: its files (URI, size, digest), or with --read one file,
    printed only when its size and digest match the manifest. With --json the skills or the
    skill as the server sent them, or the file as {uri, size, digest, text|blob}. Only SERVER
    is started.
    """
    if path is not None and skill is None:
        raise click.UsageError("--read needs SKILL: mcp-client skills SERVER SKILL --read PATH")
    source, loaded = load_servers(config_path, url, headers, expand_env)
    named_server(loaded, server, source)
    with server_group(loaded, source) as group:
        loaded_server(group, loaded, source, server)
        start_one(group, loaded, server, source, start_timeout, fancy=animated(as_json))
        client = group.clients[server]
        label = f"skills of {server!r}" if skill is None else f"skill {skill!r} of {server!r}"
        with reported(label, server, source), _checked(server, skill):
            if skill is None:
                with _extension(server):
                    listed = client.list_skills(timeout=timeout)
                _print_skills(listed, as_json)
                return EXIT_OK
            found = _find(client, server, skill, timeout)
            if path is None:
                _print_files(found, as_json)
            else:
                _print_file(found, path, client.read_skill(found, path, timeout=timeout), as_json)
    return EXIT_OK


@contextlib.contextmanager
def _extension(server: str) -> Iterator[None]:
    """Around ``skills/list`` and ``skills/get``: a server that did not declare the extension
    (refused before sending), or that has no such method (its capabilities were not told),
    offers no skills (exit 2)."""
    try:
        yield
    except NotSupported:
        raise CliError(_no_skills(server), EXIT_BAD_INPUT) from None
    except JsonRpcError as exc:
        if exc.code != _METHOD_NOT_FOUND:
            raise
        raise CliError(_no_skills(server), EXIT_BAD_INPUT) from None


@contextlib.contextmanager
def _checked(server: str, skill: str | None) -> Iterator[None]:
    """A path the manifest does not list (nothing was read: exit 2), a file that failed its
    check (not printed: exit 4)."""
    try:
        yield
    except SkillVerificationError as exc:
        if exc.reason == "unlisted":
            raise CliError(
                f"{exc.message} (`mcp-client skills {server} {skill}` lists its files)",
                EXIT_BAD_INPUT,
            ) from None
        raise CliError(
            f"{exc.message}; not printed: the server sent a file other than its manifest lists",
            EXIT_CALL_FAILED,
        ) from None


def _no_skills(server: str) -> str:
    return (
        f"server {server!r} offers no skills: it does not declare the {SKILLS_EXTENSION} "
        "extension (SEP-2640); serve skills from it, or see what it offers with "
        "`mcp-client status --json` and `mcp-client resources`"
    )


def _find(client: Client, server: str, skill: str, timeout: float | None) -> Skill:
    """The skill ``skill`` names: a URI is asked for (``skills/get``: a skill the listing
    leaves out is found too), a name is looked up in the listing."""
    if "://" in skill:
        uri = skill if skill.endswith("/" + _SKILL_FILE) else f"{skill.rstrip('/')}/{_SKILL_FILE}"
        with _extension(server):
            return client.get_skill(uri, timeout=timeout)
    with _extension(server):
        listed = client.list_skills(timeout=timeout)
    named = [s for s in listed if s.name == skill]
    if len(named) == 1:
        return named[0]
    if named:
        uris = ", ".join(s.uri for s in named)
        raise CliError(
            f"{len(named)} skills of {server!r} are named {skill!r}: give one's URI ({uris})",
            EXIT_BAD_INPUT,
        )
    raise CliError(
        f"server {server!r} lists no skill named {skill!r} (`mcp-client skills {server}` "
        "lists them; one it does not list can be asked for by its skill:// URI)",
        EXIT_BAD_INPUT,
    )


def _files(skill: Skill) -> str:
    return "dynamic" if skill.resources == "dynamic" else str(len(skill.resources))


def _print_skills(listed: list[Skill], as_json: bool) -> None:
    if as_json:
        print_json([wire_json(skill) for skill in listed])
        return
    print_table(
        ["name", "uri", "files", "description"],
        [[s.name, s.uri, _files(s), first_line(s.description)] for s in listed],
        wrap={3},
    )


def _print_files(skill: Skill, as_json: bool) -> None:
    if as_json:
        print_json(wire_json(skill))
    elif skill.resources == "dynamic":
        click.echo(
            f"mcp-client: skill {skill.name!r} lists no files (its resources are "
            '"dynamic"): read one by its path with --read PATH',
            err=True,
        )
    else:
        print_table(
            ["uri", "size", "digest"],
            [[r.uri, str(r.size), r.digest] for r in skill.resources],
        )


def _print_file(skill: Skill, path: str, contents: str | bytes, as_json: bool) -> None:
    """The file as it was checked: text as it is, a binary file described (its bytes in
    base64 with --json)."""
    resource = skill.resource(path)
    if as_json:
        listed = {} if skill.resources == "dynamic" else wire_dict(resource)
        kind = "blob" if isinstance(contents, bytes) else "text"
        print_json({**listed, "uri": resource.uri, kind: wire_json(contents)})
    elif isinstance(contents, bytes):
        click.echo(f"[binary file, {len(contents)} bytes: --json gives it in base64]")
    else:
        click.echo(contents, nl=not contents.endswith("\n"))
