"""Agent Skills served by an MCP server (the ``io.modelcontextprotocol/skills`` extension,
SEP-2640): reading the listing and checking every file read against it. Pure functions and
frozen values; the drivers' ``list_skills``, ``get_skill`` and ``read_skill`` use them, and so
can a driver for another framework (see the docs page "Resources", section "Skills").

A skill is a directory of files served as resources (``skill://<path>/SKILL.md`` and the files
beside it). ``skills/list`` and ``skills/get`` describe each skill by its ``SKILL.md`` URI, the
YAML frontmatter of that file as JSON, and a manifest: every file's URI, ``sha256:`` digest and
size in bytes, or ``"dynamic"`` (no manifest). The files themselves are read with
``resources/read`` only when wanted, never on listing.

- ``skill_from_wire`` reads one entry into a ``Skill``, refusing (``ValueError``) what the SEP
  says a client refuses: ``resources`` absent or neither a list nor ``"dynamic"``, more than
  ``MAX_SKILL_RESOURCES`` files or ``MAX_SKILL_BYTES`` bytes, a file without a URI, digest or
  size. ``skills_page`` reads a ``skills/list`` result (refused entries are set aside, not
  fatal), ``skill_from_get`` a ``skills/get`` result.
- ``Skill.resource(path)`` resolves a path against the skill's root and finds it in the
  manifest: ``SkillVerificationError('unlisted')`` when it is not there, before anything is read.
- ``DirectoryListing`` gathers the pages of ``resources/directory/read`` (only for a server
  whose extension settings say ``directoryRead: true``): a directory's children, which never
  extend a skill's manifest.
- ``verify_skill_file`` checks the bytes read (``text`` as UTF-8, ``blob`` decoded): length ==
  ``size``, ``sha256:`` + lowercase hex == ``digest``, and for ``SKILL.md`` its frontmatter
  equal to the listed one field by field. Any failure is a ``SkillVerificationError`` whose
  ``reason`` is ``"size"``, ``"digest"`` or ``"frontmatter"``: the file is not to be used; ask
  the server again (``skills/get``) for a fresh manifest.

The frontmatter is read as YAML 1.2 (the core schema: ``yes`` is a string, ``012`` is twelve,
dates stay strings), as servers produce the listed JSON; PyYAML is imported only then.
"""

from __future__ import annotations

import hashlib
import importlib
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, cast

from ._session.checks import SKILLS_EXTENSION
from ._vocabulary.errors import InvalidResponse, ListTooLong, McpError
from ._vocabulary.models import ReadResourceResult, Resource, ResourceContents

__all__ = [
    "DIRECTORY_MIME_TYPE",
    "MAX_SKILL_BYTES",
    "MAX_SKILL_RESOURCES",
    "SKILLS_EXTENSION",
    "DirectoryListing",
    "Skill",
    "SkillResource",
    "SkillVerificationError",
    "SkillsListing",
    "SkillsPage",
    "parse_frontmatter",
    "read_skill_contents",
    "skill_from_get",
    "skill_from_wire",
    "skills_page",
    "verify_skill_file",
]

# SEP-2640: a client accepts up to 512 files and 16 MiB per skill, and refuses more.
MAX_SKILL_RESOURCES = 512
MAX_SKILL_BYTES = 16 * 1024 * 1024
SKILL_FILE = "SKILL.md"
# SEP-2640: a directory's children name a sub-directory by this type (its URI without a
# trailing slash).
DIRECTORY_MIME_TYPE = "inode/directory"
DIRECTORY_READ = "resources/directory/read"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")

Reason = Literal["unlisted", "size", "digest", "frontmatter"]


class SkillVerificationError(McpError):
    """A skill's file is not what its listing says, so it must not be used: ``reason`` is
    ``"unlisted"`` (not in the manifest: nothing was read), ``"size"``, ``"digest"`` or
    ``"frontmatter"`` (``SKILL.md``'s YAML differs from the listed frontmatter); ``uri`` is
    the file's. Ask the server for the skill again (``get_skill``) for a fresh manifest."""

    def __init__(self, reason: Reason, uri: str, detail: str) -> None:
        super().__init__(f"skill file {uri[:200]!r} failed verification ({reason}): {detail}")
        self.reason = reason
        self.uri = uri


@dataclass(frozen=True, slots=True)
class SkillResource:
    """One file of a skill's manifest: its URI, ``sha256:<64 lowercase hex>`` digest, and
    size in bytes."""

    uri: str
    digest: str
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    """One skill as listed: ``uri`` is its ``SKILL.md``, ``frontmatter`` that file's YAML
    frontmatter as the server sent it (JSON), ``resources`` its manifest, or ``"dynamic"``
    when the server gives none (then no file can be checked but ``SKILL.md``'s frontmatter).
    Skills are not unique by name: identify one by its server and ``uri``."""

    uri: str
    frontmatter: Mapping[str, Any]
    resources: tuple[SkillResource, ...] | Literal["dynamic"]
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def name(self) -> str:
        """``frontmatter['name']``, else the last segment of the skill's path."""
        name = self.frontmatter.get("name")
        return name if isinstance(name, str) else posixpath.basename(self.root.rstrip("/"))

    @property
    def description(self) -> str | None:
        """``frontmatter['description']`` when it is a string."""
        description = self.frontmatter.get("description")
        return description if isinstance(description, str) else None

    @property
    def root(self) -> str:
        """The URI the skill's relative paths resolve against (``uri`` up to its last ``/``)."""
        return self.uri.rpartition("/")[0] + "/"

    @property
    def directory(self) -> str:
        """The skill's directory as ``resources/directory/read`` names it (``root`` without
        its trailing slash)."""
        return self.root.removesuffix("/")

    def resource(self, path: str = SKILL_FILE) -> SkillResource:
        """The manifest entry of ``path`` (relative to ``root``, or a full URI);
        ``SkillVerificationError('unlisted')`` when it is not listed. For a ``"dynamic"``
        skill, any path inside the skill is allowed, with ``digest`` ``""`` and ``size``
        ``-1`` (nothing to check them against)."""
        uri = self.resolve(path)
        if self.resources == "dynamic":
            if not uri.startswith(self.root):
                raise SkillVerificationError("unlisted", uri, "outside the skill")
            return SkillResource(uri, "", -1)
        for resource in self.resources:
            if resource.uri == uri:
                return resource
        raise SkillVerificationError("unlisted", uri, "not in the skill's manifest; not read")

    def resolve(self, path: str) -> str:
        """``path`` as a URI: a full URI (``scheme://...``) as it is, else resolved against
        ``root`` (``./`` and ``..`` segments folded)."""
        if "://" in path:
            return path
        scheme, sep, rest = self.root.partition("://")
        if not sep:  # not hierarchical: all of it is the path
            scheme, rest = "", self.root
        joined = posixpath.normpath(posixpath.join("/" + rest, path))
        return f"{scheme}{sep}{joined[1:]}"


@dataclass(frozen=True, slots=True)
class SkillsPage:
    """One ``skills/list`` page: the skills read, the entries refused (each as a line saying
    which and why), and the cursor of the next page (None on the last)."""

    skills: tuple[Skill, ...]
    refused: tuple[str, ...]
    next_cursor: str | None


def skill_from_wire(entry: object) -> Skill:
    """One skill entry (of ``skills/list`` or ``skills/get``) as a ``Skill``; ``ValueError``
    saying why when it is to be refused."""
    if not isinstance(entry, Mapping):
        raise ValueError("a skill entry is not an object")
    uri = entry.get("uri")
    if not isinstance(uri, str) or not uri:
        raise ValueError("a skill entry has no uri")
    what = f"skill {uri[:200]!r}"
    frontmatter = entry.get("frontmatter")
    if not isinstance(frontmatter, Mapping):
        raise ValueError(f"{what}: frontmatter is not an object")
    listed = entry.get("resources")
    if listed == "dynamic":
        return Skill(uri=uri, frontmatter=frontmatter, resources="dynamic", raw=entry)
    if not isinstance(listed, list):
        raise ValueError(f"{what}: resources is neither a list nor 'dynamic'")
    if len(listed) > MAX_SKILL_RESOURCES:
        raise ValueError(f"{what}: {len(listed)} files, more than {MAX_SKILL_RESOURCES}")
    resources = tuple(_resource(item, what) for item in listed)
    total = sum(r.size for r in resources)
    if total > MAX_SKILL_BYTES:
        raise ValueError(f"{what}: {total} bytes, more than {MAX_SKILL_BYTES}")
    return Skill(uri=uri, frontmatter=frontmatter, resources=resources, raw=entry)


def _resource(item: object, what: str) -> SkillResource:
    if not isinstance(item, Mapping):
        raise ValueError(f"{what}: a manifest entry is not an object")
    uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
    if not isinstance(uri, str) or not uri:
        raise ValueError(f"{what}: a manifest entry has no uri")
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise ValueError(f"{what}: {uri[:200]!r} has no sha256 digest in lowercase hex")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"{what}: {uri[:200]!r} has no size")
    return SkillResource(uri, digest, size)


def skills_page(result: Mapping[str, Any]) -> SkillsPage:
    """A ``skills/list`` result read; ``ValueError`` when it has no ``skills`` list or its
    ``nextCursor`` is not a string. Entries to refuse are left out and named in ``refused``."""
    listed = result.get("skills")
    if not isinstance(listed, list):
        raise ValueError("skills is not a list")
    cursor = result.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        raise ValueError("nextCursor is not a string")
    skills: list[Skill] = []
    refused: list[str] = []
    for entry in listed:
        try:
            skills.append(skill_from_wire(entry))
        except ValueError as error:
            refused.append(str(error))
    return SkillsPage(tuple(skills), tuple(refused), cursor)


class _Paging:
    """The cursor bookkeeping of a paged listing: ``params()`` names the next request (None
    when done), ``_turn`` reads a page's ``nextCursor``. A cursor that comes back is a server
    going round in circles (``InvalidResponse``); more than ``max_pages`` pages is
    ``ListTooLong``, since a partial listing would look complete."""

    def __init__(self, method: str, first: dict[str, Any], max_pages: int) -> None:
        self._method = method
        self._first = first
        self._params: dict[str, Any] | None = dict(first)
        self._cursors: set[str] = set()
        self._pages = 0
        self._max_pages = max_pages

    def params(self) -> dict[str, Any] | None:
        """The next request's params (the first page's, then with ``"cursor"``), or None when
        done."""
        return None if self._params is None else dict(self._params)

    def _turn(self, cursor: str | None, items: int) -> None:
        self._pages += 1
        if cursor is not None and cursor in self._cursors:
            raise InvalidResponse(self._method, f"nextCursor {cursor[:80]!r} came back again")
        if cursor is not None and self._pages >= self._max_pages:
            raise ListTooLong(self._method, self._pages, items)
        if cursor is not None:
            self._cursors.add(cursor)
        self._params = None if cursor is None else {**self._first, "cursor": cursor}


class SkillsListing(_Paging):
    """Every page of ``skills/list`` gathered, without I/O: while ``params()`` is not None,
    send ``skills/list`` with those params and ``add()`` its result. ``skills`` grows page by
    page; ``refused`` says which entries were left out and why. ``add`` raises
    ``InvalidResponse`` for a result that is no skills page, or a ``nextCursor`` already
    followed (a server going round in circles), and ``ListTooLong`` past ``max_pages``
    pages."""

    def __init__(self, max_pages: int = 1000) -> None:
        super().__init__("skills/list", {}, max_pages)
        self.skills: list[Skill] = []
        self.refused: list[str] = []

    def add(self, result: object) -> None:
        """Read one page (the result of the request ``params()`` named)."""
        try:
            if not isinstance(result, Mapping):
                raise ValueError("not an object")
            page = skills_page(result)
        except ValueError as error:
            raise InvalidResponse("skills/list", str(error)) from None
        self.skills += page.skills
        self.refused += page.refused
        self._turn(page.next_cursor, len(self.skills))


class DirectoryListing(_Paging):
    """Every page of ``resources/directory/read`` of one directory gathered, without I/O:
    while ``params()`` is not None, send the request with those params and ``add()`` its
    result. ``resources`` are the directory's direct children as sent; a sub-directory's
    ``mime_type`` is ``DIRECTORY_MIME_TYPE``. The method is only for a server whose extension
    settings say ``directoryRead: true``, and what it answers is only what the server says is
    there: it never extends a skill's manifest (``Skill.resource`` still refuses what the
    manifest does not list). ``add`` raises ``InvalidResponse`` for a result that is no page,
    or a ``nextCursor`` already followed, and ``ListTooLong`` when the directory needs more
    than ``max_pages`` pages (a partial listing would look complete)."""

    def __init__(self, directory: Skill | str, max_pages: int = 1000) -> None:
        uri = directory.directory if isinstance(directory, Skill) else directory
        super().__init__(DIRECTORY_READ, {"uri": uri}, max_pages)
        self.resources: list[Resource] = []

    def add(self, result: object) -> None:
        """Read one page (the result of the request ``params()`` named)."""
        try:
            if not isinstance(result, Mapping):
                raise ValueError("not an object")
            listed, cursor = result.get("resources"), result.get("nextCursor")
            if not isinstance(listed, list):
                raise ValueError("resources is not a list")
            if cursor is not None and not isinstance(cursor, str):
                raise ValueError("nextCursor is not a string")
            self.resources += [Resource.from_wire(item) for item in listed]
        except ValueError as error:
            raise InvalidResponse(DIRECTORY_READ, str(error)) from None
        self._turn(cursor, len(self.resources))


def skill_from_get(result: object) -> Skill:
    """A ``skills/get`` result's skill; ``InvalidResponse`` when it is missing or to be
    refused."""
    try:
        if not isinstance(result, Mapping):
            raise ValueError("not an object")
        return skill_from_wire(result.get("skill"))
    except ValueError as error:
        raise InvalidResponse("skills/get", str(error)) from None


def read_skill_contents(skill: Skill, path: str, result: ReadResourceResult) -> str | bytes:
    """The verified file ``path`` of ``skill`` out of its ``resources/read`` result: its text,
    or its bytes for a ``blob``. ``SkillVerificationError`` as ``verify_skill_file`` says;
    ``InvalidResponse`` when the result holds no contents for that URI."""
    uri = skill.resource(path).uri
    contents = next((c for c in result.contents if c.uri == uri), None)
    if contents is None:
        raise InvalidResponse("resources/read", f"no contents for {uri[:200]!r}")
    verify_skill_file(skill, uri, contents)
    return contents.blob if contents.blob is not None else contents.text or ""


def verify_skill_file(skill: Skill, path: str, contents: ResourceContents | bytes | str) -> bytes:
    """Check what was read of ``path`` (relative to the skill's root, or a full URI) against
    ``skill``'s listing and return its bytes; ``SkillVerificationError`` when it is unlisted,
    of another size, of another digest, or (``SKILL.md``) of another frontmatter. ``text`` is
    hashed as UTF-8, a ``blob`` as its decoded bytes."""
    resource = skill.resource(path)
    if isinstance(contents, ResourceContents):
        contents = contents.blob if contents.blob is not None else contents.text or ""
    data = contents.encode("utf-8") if isinstance(contents, str) else contents
    if skill.resources != "dynamic":
        if len(data) != resource.size:
            raise SkillVerificationError(
                "size", resource.uri, f"{len(data)} bytes, listed as {resource.size}"
            )
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if digest != resource.digest:
            raise SkillVerificationError(
                "digest", resource.uri, f"{digest}, listed as {resource.digest}"
            )
    if resource.uri == skill.uri:
        _check_frontmatter(skill, data)
    return data


def _check_frontmatter(skill: Skill, data: bytes) -> None:
    try:
        found = parse_frontmatter(data)
    except ValueError as error:
        raise SkillVerificationError("frontmatter", skill.uri, str(error)) from None
    listed = skill.frontmatter
    for key in sorted(set(listed) | set(found)):
        if key not in found or key not in listed:
            side = "the file" if key not in found else "the listing"
            raise SkillVerificationError("frontmatter", skill.uri, f"{key!r} missing in {side}")
        if not _same(listed[key], found[key]):
            raise SkillVerificationError(
                "frontmatter", skill.uri, f"{key!r} differs from the listing"
            )


def parse_frontmatter(data: bytes | str) -> dict[str, Any]:
    """The YAML frontmatter of a ``SKILL.md`` (between a first line ``---`` and the next line
    ``---``), read as YAML 1.2 core schema, keys as strings; ``ValueError`` when there is none
    or it is not a YAML mapping. A byte order mark and CRLF line ends are ignored."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("SKILL.md is not UTF-8") from None
    text = data.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        raise ValueError("SKILL.md does not start with a --- line")
    end = next((n for n in range(1, len(lines)) if lines[n].rstrip() == "---"), None)
    if end is None:
        raise ValueError("SKILL.md's frontmatter has no closing --- line")
    value = _load_yaml("\n".join(lines[1:end]))
    if not isinstance(value, dict):
        raise ValueError("SKILL.md's frontmatter is not a YAML mapping")
    return cast(dict[str, Any], _json_keys(value))


def _json_keys(value: object) -> object:
    """``value`` with every mapping key as JSON names it (YAML allows any scalar as a key)."""
    if isinstance(value, dict):
        return {_key(k): _json_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_keys(v) for v in value]
    return value


def _key(key: object) -> str:
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _same(a: object, b: object) -> bool:
    """JSON equality: ``True`` is not ``1``, ``1`` is ``1.0``, mappings by key, lists in order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_LOADER: Any = None


def _load_yaml(text: str) -> object:
    # Imported here, the first time a SKILL.md is checked, never by ``import mcp_core``.
    yaml: Any = importlib.import_module("yaml")
    global _LOADER
    if _LOADER is None:
        _LOADER = _core_schema_loader(yaml)
    try:
        return yaml.load(text, Loader=_LOADER)  # a SafeLoader: builds plain data only
    except yaml.YAMLError as error:
        raise ValueError(f"SKILL.md's frontmatter is not YAML: {str(error)[:200]}") from None


def _core_schema_loader(yaml: Any) -> Any:
    """PyYAML's safe loader with YAML 1.2's core schema in place of YAML 1.1's implicit types:
    booleans only ``true``/``false`` (any case form the schema names), no ``yes``/``on``, no
    timestamps, no ``<<`` merge, no sexagesimal numbers; ``0o`` octal and ``0x`` hex ints."""

    class CoreSchemaLoader(yaml.SafeLoader):  # type: ignore[misc]
        # Its own table, empty: the 1.1 resolvers PyYAML's loaders share are not inherited.
        yaml_implicit_resolvers: ClassVar[dict[str, list[Any]]] = {}

    def construct_int(loader: Any, node: Any) -> int:
        value = loader.construct_scalar(node)
        sign, digits = (-1, value[1:]) if value[0] == "-" else (1, value.lstrip("+"))
        base = {"0o": 8, "0x": 16}.get(digits[:2], 10)
        return sign * int(digits[2:] if base != 10 else digits, base)

    resolve = CoreSchemaLoader.add_implicit_resolver
    resolve("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
    resolve(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    resolve(
        "tag:yaml.org,2002:int",
        re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
        list("-+0123456789"),
    )
    resolve(
        "tag:yaml.org,2002:float",
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        list("-+0123456789."),
    )
    CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    return CoreSchemaLoader
