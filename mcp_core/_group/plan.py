"""Reading a group's specs (for ``ClientGroup``): which servers get a client, with which
spec and options, and why the others do not. Pure: no I/O, no client is built here.

Both drivers' ``ClientGroup`` start from ``plan_group`` and build their own ``Client`` for each
accepted spec with ``GroupPlan.build``, so the two groups refuse exactly the same entries with
exactly the same words.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import Any, Protocol, TypeVar

from .._config.spec import Spec
from .._vocabulary.errors import ConnectFailed, McpError
from .._vocabulary.status import Status, TransportName
from .names import ToolTable

__all__ = ["GroupPlan", "GroupSpecs", "LoadedConfigLike", "down_error", "plan_group"]


class LoadedConfigLike(Protocol):
    """What ``mcp_core.load_config`` returns: the servers that loaded, and why others did not."""

    @property
    def servers(self) -> Mapping[str, Spec]: ...

    @property
    def skipped(self) -> Mapping[str, str]: ...


GroupSpecs = Mapping[str, Spec | Mapping[str, Any]] | LoadedConfigLike
"""What a ``ClientGroup`` is given: server name -> ``Spec`` or mapping, or a loaded config."""

C = TypeVar("C")

# A group keyword that is never passed on to a client: one file for many clients would mix
# their sessions, and a group names each server by its key.
_FILES = frozenset({"record", "replay"})  # one file per client: the group names each
_NOT_FOR_CLIENTS = frozenset({"wait"}) | _FILES


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GroupPlan:
    """What a group holds once its specs were read.

    ``order``: every server, in the order given (accepted ones first, then skipped config
    entries); ``specs``: the validated spec of each server that gets a client;
    ``client_options``: the Client keywords every client gets; ``down``: the ``closed`` Status
    of each refused server, ``last_error`` saying why; ``table``: the group's tool names;
    ``init_timeout``: the longest accepted ``init_timeout`` (the group's shared deadline).
    """

    order: tuple[str, ...]
    specs: Mapping[str, Spec]
    client_options: Mapping[str, Any]
    down: Mapping[str, Status]
    table: ToolTable
    init_timeout: float

    def build(self, factory: Callable[[str, Spec], C]) -> tuple[dict[str, C], dict[str, Status]]:
        """``factory(name, spec)`` for each accepted server (``name`` is its key in the group,
        which its spec's own ``name`` may differ from): the clients built, and ``down`` plus
        every server whose client could not be built (its ``McpError`` is the reason). Any
        other exception from ``factory`` is a bug and propagates."""
        clients: dict[str, C] = {}
        down = dict(self.down)
        for name, spec in self.specs.items():
            try:
                clients[name] = factory(name, spec)
            except McpError as exc:
                down[name] = refused_status(name, str(exc), spec)
        return clients, down


def plan_group(
    specs: GroupSpecs, options: Mapping[str, Any], *, client_keywords: Collection[str]
) -> GroupPlan:
    """Read ``specs`` and the group's ``options`` into a ``GroupPlan``.

    ``client_keywords`` are the keyword-only parameters of the driver's ``Client``. An option
    naming one of them goes to every client as it is; an option naming a spec field is laid
    over each server's spec. A server whose spec is refused (``InvalidSpec``), a config entry
    that was skipped, an entry that is neither a Spec nor a mapping, and a server whose name
    cannot be namespaced become a ``closed`` Status whose ``last_error`` says why (never a
    secret: ``InvalidSpec`` messages are redacted). Raises ``TypeError`` only for the caller's
    own mistakes: an unknown option, a ``name``, ``wait``, ``record`` or ``replay`` option,
    ``specs`` of the wrong type, or a server name that is not a string.
    """
    files = sorted(_FILES & set(options))
    if files:
        key = files[0]
        raise TypeError(
            f"a group's {key}= is not a client option: every client would use the same file; "
            f"ClientGroup({key}=DIRECTORY) uses one file per server there"
        )
    keywords = frozenset(client_keywords) - _NOT_FOR_CLIENTS
    fields = frozenset(f.name for f in dataclasses.fields(Spec)) - {"name"}
    unknown = sorted(set(options) - keywords - fields)
    if unknown:
        raise TypeError(
            f"ClientGroup() got unknown option(s) {', '.join(unknown)}: give keywords of "
            f"Client ({', '.join(sorted(keywords))}) or spec fields; each server is named by "
            f"its key"
        )
    spec_options = {k: v for k, v in options.items() if k in fields}
    entries, skipped = _entries(specs)
    order = (*entries, *(name for name in skipped if name not in entries))
    table = ToolTable(order)
    accepted: dict[str, Spec] = {}
    down: dict[str, Status] = {
        name: refused_status(name, reason, None)
        for name, reason in skipped.items()
        if name not in entries
    }
    for name, entry in entries.items():
        try:
            if name in table.unnamed:
                raise _Refused(table.unnamed[name])
            if isinstance(entry, Spec):
                accepted[name] = Spec.build(entry, **spec_options)
            elif isinstance(entry, Mapping):
                accepted[name] = Spec.build({"name": name, **entry}, **spec_options)
            else:
                raise _Refused(
                    f"a server entry must be a Spec or a mapping, got {type(entry).__name__}"
                )
        except (McpError, _Refused) as exc:
            down[name] = refused_status(name, str(exc), entry)
    return GroupPlan(
        order=order,
        specs=accepted,
        client_options={k: v for k, v in options.items() if k in keywords},
        down=down,
        table=table,
        init_timeout=max((spec.init_timeout for spec in accepted.values()), default=0.0),
    )


class _Refused(Exception):
    """A server entry the group itself cannot use (not a spec-level problem)."""


def _entries(specs: GroupSpecs) -> tuple[dict[str, object], dict[str, str]]:
    if isinstance(specs, Mapping):
        entries: dict[str, object] = dict(specs)
        skipped: dict[str, str] = {}
    elif hasattr(specs, "servers") and hasattr(specs, "skipped"):
        entries = dict(specs.servers)
        skipped = dict(specs.skipped)
    else:
        raise TypeError(
            f"ClientGroup() needs a mapping of server name to spec or a loaded config, "
            f"got {type(specs).__name__}"
        )
    for name in (*entries, *skipped):
        if not isinstance(name, str):
            raise TypeError(f"server names must be strings, got {name!r}")
    return entries, skipped


def refused_status(name: str, reason: str, entry: object) -> Status:
    """The ``closed`` Status of a server the group did not start, ``last_error`` = why. Its
    transport is the one its entry names (``url``: http, ``command``: stdio), else
    ``'unknown'``: an entry ``load_config`` skipped comes as its reason only (``entry`` None)."""
    transport: TransportName = "unknown"
    concurrency = "unknown"
    if isinstance(entry, Spec):
        transport, concurrency = entry.transport, entry.default_concurrency(None)
    elif isinstance(entry, Mapping):
        transport = "http" if "url" in entry else "stdio" if "command" in entry else "unknown"
    return Status(
        name=name, state="closed", transport=transport, concurrency=concurrency, last_error=reason
    )


def down_error(status: Status) -> ConnectFailed:
    """The error a call to a server refused at construction raises: it will never connect."""
    return ConnectFailed(status.last_error or "the server was not started", permanent=True)
