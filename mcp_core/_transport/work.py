"""Caller work: one record per request a caller waits on, from admission to its single reply.
The kind of work is its class, so a field is read only on the kind that has it.

- ``Work``: what every kind has: the caller's ticket, the method, its deadline, where it
  sits (a place in a connection's window, the id of its request on the wire), a reservation
  not yet settled, the caller's ``_meta``, when it was last sent (``ping``'s round trip),
  and what that send added to the params (a cursor, input responses), so that a retry after
  an UnsupportedProtocolVersion naming ours (2026-07-28 basic/versioning) sends the same
  round again.
- ``CallWork``: a ``tools/call``: the tool's name and arguments, whether the caller follows
  its progress, the ``Mcp-Param-*`` headers of its arguments (2026-07-28 streamable-http
  §Custom Headers), its input rounds, whether it asks for a task, and the task it follows.
- ``Following``: a call the server made a task (2025-11-25 basic/utilities/tasks, the
  2026-07-28 Tasks extension): the task's id, when it is polled next, what the server last
  said, and the input requests its handlers answer.
- ``InputRounds``: the round of a call a server answered with ``input_required`` (2026-07-28
  basic/patterns/mrtr): the inputs the handlers still owe, their answers, the
  ``requestState`` to echo, and how many rounds there were. A call holds one only from its
  first such answer: an ordinary call allocates nothing for it.
- ``ListWork``: a list (``kind`` as in ``_session/results.LISTS``) fetched page by page
  through ``nextCursor``: the items and cursors so far, the cache generation it was asked
  under, and the smallest ``ttlMs`` of its pages (2026-07-28 server/utilities/caching).
- ``RequestWork``: any other request: its params, and whether the caller wants the result
  as received (``raw``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CallWork", "Following", "InputRounds", "ListWork", "RequestWork", "Work"]


@dataclass(slots=True, eq=False, kw_only=True)
class Work:
    """What every kind of caller work has; see the module docstring."""

    ticket: int
    method: str
    admitted_at: float
    timeout: float
    deadline: float
    meta: Mapping[str, Any] | None = None  # the caller's own _meta entries (trace context)
    reserved: bool = False  # holds a reservation not yet settled
    slot: int | None = None  # set while it holds a place in a connection's window
    request_id: int | None = None
    sent_extra: Mapping[str, Any] | None = None  # what the last send added (cursor, inputs)
    version_retried: bool = False  # sent again once after a -32022 naming our version
    sent_at: float = 0.0  # when it was last sent (ping's round trip)


@dataclass(slots=True, eq=False)
class InputRounds:
    """A call's current input round; the next one replaces it."""

    rounds: int  # input_required answers so far, this one included
    awaiting: set[str]  # input keys the handlers still owe
    responses: dict[str, Any]  # inputResponses, by key
    request_state: str | None


@dataclass(slots=True, eq=False, kw_only=True)
class CallWork(Work):
    """A ``tools/call``."""

    name: str
    arguments: Mapping[str, Any] | None
    progress: bool = False
    headers: list[tuple[str, str]] | None = None  # 2026-07-28 HTTP: Mcp-Param-* (x-mcp-header)
    inputs: InputRounds | None = None  # made at the first input_required answer
    task: bool | None = None  # the caller's ask: None lets the tool (2025-11-25) or server decide
    detach: bool = False  # answer with the task's status once it exists, do not follow it
    declares_tasks: bool = False  # 2026-07-28: the request declares the Tasks extension
    following: Following | None = None  # set once the server answered with a task


@dataclass(slots=True, eq=False)
class Following:
    """The task a call follows until it ends."""

    task_id: str
    poll_interval: float  # seconds; the server's, or the client's default
    poll_at: float | None = None  # next tasks/get; None while a request or an input is out
    owned: bool = True  # the call created it: a timeout or a cancel cancels the task too
    status: str = "unknown"  # until the server says: its first word is news, reported too
    message: str | None = None
    changes: int = 0  # status changes reported as progress
    answered: set[str] = field(default_factory=set)  # input keys answered: never asked again
    awaiting: set[str] = field(default_factory=set)  # input keys the handlers still owe
    responses: dict[str, Any] = field(default_factory=dict)  # inputResponses to send


@dataclass(slots=True, eq=False, kw_only=True)
class ListWork(Work):
    """A list, page by page."""

    kind: str
    items: list[Any]
    cursors: set[str]
    generation: int  # of the list it was asked under
    ttl: float | None = None  # the smallest ttlMs of its pages, in seconds (2026-07-28)


@dataclass(slots=True, eq=False, kw_only=True)
class RequestWork(Work):
    """Any other request."""

    params: Mapping[str, Any] | None = None
    raw: bool = False  # the result as received, not its model
