"""Reading the server's answers to caller work: call results, tool list pages, JSON-RPC errors,
and the ``input_required`` results of the 2026-07-28 era. Pure functions: the session machine
decides what happens next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._transport.eras import MODERN_VERSION
from .._vocabulary.errors import (
    InvalidResponse,
    JsonRpcError,
    ListTooLong,
    McpError,
    MissingClientCapability,
    UrlElicitationRequired,
)
from .._vocabulary.models import (
    CallToolResult,
    Completion,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)
from .._vocabulary.tasks import TaskStatus
from .._wire import jsonrpc as rpc
from .server_requests import MAX_ELICITATIONS

__all__ = [
    "LISTS",
    "MAX_INPUT_ROUNDS",
    "call_result",
    "input_requests",
    "list_page",
    "names_our_modern_version",
    "request_result",
    "rpc_error",
]

# 2026-07-28 basic/patterns/mrtr: the server may answer input_required again and again; a
# client that gives up needs no error answer. We give up after this many rounds.
MAX_INPUT_ROUNDS = 8


def call_result(result: Mapping[str, Any]) -> tuple[CallToolResult | None, McpError | None]:
    """A ``tools/call`` result, or the error that says why it is not one."""
    try:
        return CallToolResult.from_wire(result), None
    except ValueError as exc:
        return None, InvalidResponse("tools/call", str(exc))


# The paged lists (kind -> method, the result's key, how to read an entry). A kind is also the
# name of the list's cache and of the ``ListItems`` event that asks for it.
LISTS: dict[str, tuple[str, str, Callable[[object], object]]] = {
    "tools": ("tools/list", "tools", Tool.from_wire),
    "resources": ("resources/list", "resources", Resource.from_wire),
    "resource_templates": (
        "resources/templates/list",
        "resourceTemplates",
        ResourceTemplate.from_wire,
    ),
    "prompts": ("prompts/list", "prompts", Prompt.from_wire),
    # 2025-11-25 basic/utilities/tasks: where the tasks of this requestor stand (never cached).
    "tasks": ("tasks/list", "tasks", TaskStatus.from_wire),
}


def list_page(
    kind: str, result: Mapping[str, Any], items: list[Any], cursors: set[str], max_pages: int
) -> tuple[str | None, McpError | None, str | None]:
    """Add a page of list ``kind`` to ``items``. Returns (the cursor of the next page to ask
    for, or None when the list is complete; an error that fails the list; a warning).

    ``cursors`` holds the cursors already asked for (one per page after the first): a list
    that would need more than ``max_pages`` pages fails with ``ListTooLong`` rather than
    coming back cut short, since a partial tool list looks complete to its reader."""
    method, key, parse = LISTS[kind]
    raw = result.get(key)
    try:
        if not isinstance(raw, list):
            raise ValueError(f"{key!r} is missing or not a list")
        items.extend(parse(item) for item in raw)
    except ValueError as exc:
        return None, InvalidResponse(method, str(exc)), None
    cursor = result.get("nextCursor")
    # 2026-07-28 pagination: only an absent or null nextCursor ends the list.
    if isinstance(cursor, str) and cursor not in cursors:
        pages = len(cursors) + 1
        if pages < max_pages:
            return cursor, None, None
        return None, ListTooLong(method, pages, len(items)), None
    if isinstance(cursor, str):
        return None, None, f"{method} repeated a cursor; stopped paging"
    return None, None, None


def _cancelled(result: object) -> TaskStatus | None:
    """2025-11-25 answers ``tasks/cancel`` with the task; the 2026-07-28 extension with an
    empty acknowledgement (None)."""
    return TaskStatus.from_wire(result) if isinstance(result, dict) and "taskId" in result else None


# The results a caller gets as objects rather than the result as received.
_READERS: dict[str, Callable[[object], object]] = {
    "resources/read": ReadResourceResult.from_wire,
    "prompts/get": GetPromptResult.from_wire,
    "completion/complete": Completion.from_wire,
    "tasks/get": TaskStatus.from_wire,
    "tasks/cancel": _cancelled,
}


# Results that are empty by definition: the caller gets None.
_NOTHING_BACK = frozenset({"logging/setLevel", "resources/subscribe", "resources/unsubscribe"})


def request_result(method: str, result: Mapping[str, Any]) -> tuple[object, McpError | None]:
    """The value a caller of ``method`` gets: its model (``ReadResourceResult``,
    ``GetPromptResult``, ``Completion``), None for ``logging/setLevel`` and (un)subscribing,
    else the result as
    received; or the error that says why it cannot be read."""
    reader = _READERS.get(method)
    if reader is None:
        return (None if method in _NOTHING_BACK else result), None
    try:
        return reader(result), None
    except ValueError as exc:
        return None, InvalidResponse(method, str(exc))


def input_requests(
    result: Mapping[str, Any], rounds: int
) -> tuple[Mapping[str, Any], str | None, str | None]:
    """The ``inputRequests`` and ``requestState`` of an ``input_required`` result (round
    ``rounds``), and what is wrong with them, if anything (2026-07-28 basic/patterns/mrtr)."""
    requests = result.get("inputRequests") or {}
    state = result.get("requestState")
    if rounds > MAX_INPUT_ROUNDS:
        return {}, None, f"the server asked for input {MAX_INPUT_ROUNDS} times; gave up"
    if not isinstance(requests, dict) or not (state is None or isinstance(state, str)):
        return {}, None, "inputRequests or requestState has the wrong shape"
    return requests, state, None


def names_our_modern_version(error: Mapping[str, Any] | None) -> bool:
    """An UnsupportedProtocolVersion error (-32022) that lists 2026-07-28 as supported."""
    if error is None or error.get("code") != rpc.UNSUPPORTED_PROTOCOL_VERSION:
        return False
    data = error.get("data")
    supported = data.get("supported") if isinstance(data, dict) else None
    return isinstance(supported, list) and MODERN_VERSION in supported


def rpc_error(error: Mapping[str, Any]) -> JsonRpcError:
    """The caller's error for a JSON-RPC error answer (message cut to 500 characters)."""
    code = error.get("code")
    message = error.get("message")
    text = str(message)[:500] if message is not None else ""
    data = error.get("data")
    if code == UrlElicitationRequired.CODE:
        return UrlElicitationRequired(text, _url_elicitations(data), data)
    if code == MissingClientCapability.CODE:
        return MissingClientCapability(text, data)
    return JsonRpcError(code if isinstance(code, int) else 0, text, data)


def _url_elicitations(data: object) -> tuple[dict[str, str], ...]:
    """The well-formed URL elicitations of a -32042 error's ``data.elicitations`` (each "MUST
    be" URL mode with an ``elicitationId``: 2025-11-25 client/elicitation); others are
    dropped, and at most ``MAX_ELICITATIONS`` are kept."""
    listed = data.get("elicitations") if isinstance(data, dict) else None
    found: list[dict[str, str]] = []
    for item in listed if isinstance(listed, list) else ():
        if not isinstance(item, dict) or item.get("mode", "url") != "url":
            continue
        elicitation_id, url = item.get("elicitationId"), item.get("url")
        message = item.get("message")
        if isinstance(elicitation_id, str) and isinstance(url, str):
            found.append(
                {
                    "mode": "url",
                    "elicitationId": elicitation_id,
                    "url": url,
                    "message": message if isinstance(message, str) else "",
                }
            )
    return tuple(found[:MAX_ELICITATIONS])
