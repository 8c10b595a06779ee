"""Pure pieces of the HTTP transports: request headers, what a status means, response bodies.

The machine (``_session/machine.py``) decides when to send what; this module says how each request
looks on the wire and how to read each answer, per era:

- Streamable HTTP, legacy (2025-03-26 .. 2025-11-25 basic/transports): one POST per message
  with ``Accept: application/json, text/event-stream``; the answer is JSON or an SSE stream;
  ``Mcp-Session-Id`` echoed once the server assigned one; ``MCP-Protocol-Version`` = the
  negotiated version on every request after initialize (2025-06-18: "MUST").
- Streamable HTTP, modern (2026-07-28 basic/transports/streamable-http): POST only, with
  ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers; values that are not plain
  visible ASCII use the ``=?base64?...?=`` form.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._vocabulary.errors import HttpError
from .._vocabulary.urls import redact_url
from .._wire.json import loads

__all__ = [
    "content_type",
    "encode_header_value",
    "endpoint_hint",
    "find_header",
    "http_error",
    "parse_retry_after",
    "refused_get",
    "request_headers",
]

ACCEPT_BOTH = "application/json, text/event-stream"
_PLAIN = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")
_SENTINEL = re.compile(r"^=\?base64\?.*\?=$")
_NAMED = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # The Tasks extension (SEP-2663): Mcp-Name carries the task's id.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def encode_header_value(value: str) -> str:
    """2026-07-28 streamable-http §Header value encoding: anything but plain visible ASCII
    (or with edge whitespace, or looking like the encoded form) is sent as
    ``=?base64?<base64 of the UTF-8 bytes>?=``."""
    if _PLAIN.fullmatch(value) and not _SENTINEL.fullmatch(value):
        return value
    # A lone surrogate (JSON can carry one) has no UTF-8 form: it goes as U+FFFD.
    raw = value.encode("utf-8", "replace")
    return "=?base64?" + base64.b64encode(raw).decode("ascii") + "?="


def request_headers(
    *,
    user_headers: Mapping[str, str],
    method: str,
    body: Mapping[str, Any] | None,
    session_id: str | None,
    protocol_version: str | None,
    modern: bool,
) -> tuple[tuple[str, str], ...]:
    """The headers of one request. ``user_headers`` (the spec's, e.g. Authorization) go on
    every request: the spec says a client "MUST send" its token on every HTTP request."""
    headers: list[tuple[str, str]] = list(user_headers.items())
    if method == "POST":
        headers.append(("Accept", ACCEPT_BOTH))
        headers.append(("Content-Type", "application/json"))
    elif method == "GET":
        headers.append(("Accept", "text/event-stream"))
    if session_id is not None:
        headers.append(("Mcp-Session-Id", session_id))
    if protocol_version is not None:
        headers.append(("MCP-Protocol-Version", protocol_version))
    if modern and body is not None and "method" in body:
        headers.append(("Mcp-Method", encode_header_value(str(body["method"]))))
        # Mcp-Name: params.name of tools/call and prompts/get, params.uri of resources/read,
        # params.taskId of the Tasks extension's requests.
        key = _NAMED.get(str(body["method"]))
        params = body.get("params")
        name = params.get(key) if key is not None and isinstance(params, dict) else None
        if isinstance(name, str):
            headers.append(("Mcp-Name", encode_header_value(name)))
    return tuple(headers)


def find_header(headers: Iterable[tuple[str, str]], name: str) -> str | None:
    """The first value of header ``name``, compared case-insensitively (2025-11-25 spells
    ``MCP-Session-Id``, earlier versions ``Mcp-Session-Id``)."""
    lowered = name.lower()
    for key, value in headers:
        if key.lower() == lowered:
            return value
    return None


def content_type(headers: Iterable[tuple[str, str]]) -> str:
    """The media type without parameters, lower-cased ('' when absent)."""
    value = find_header(headers, "content-type") or ""
    return value.split(";", 1)[0].strip().lower()


# A Retry-After beyond this is read as this: a day is long enough to mean "not now".
MAX_RETRY_AFTER = 86400.0
_DELAY_SECONDS = re.compile(r"[0-9]{1,12}")  # RFC 9110 delay-seconds = 1*DIGIT (ASCII)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header given in seconds (at most ``MAX_RETRY_AFTER``);
    ``None`` for anything else: an HTTP date (it would need a clock, which the core does not
    read), digits that are not ASCII (``str.isdigit`` takes "²"), or no number at all."""
    if value is None or not _DELAY_SECONDS.fullmatch(value.strip()):
        return None
    return min(float(value.strip()), MAX_RETRY_AFTER)


def http_error(status: int, headers: Iterable[tuple[str, str]]) -> HttpError:
    headers = tuple(headers)
    error = HttpError(status, find_header(headers, "www-authenticate"))
    return error


def parse_json_body(body: bytes) -> object:
    """A JSON body, or ``None`` when it is not JSON (the caller reports what it expected)."""
    try:
        return loads(body)
    except (ValueError, RecursionError):
        return None


def refused_get(url: str, refused_post: int | None, status: int) -> str:
    """Why the HTTP+SSE GET failed a connect attempt: the URL, the status of the initialize
    POST that sent the client to HTTP+SSE (None: era 'sse', the GET was the only try) and
    the GET's, and for a 404 where MCP servers usually are."""
    if refused_post is None:
        what = f"{redact_url(url)} answered the HTTP+SSE GET with HTTP {status}"
    else:
        what = (
            f"{redact_url(url)} answered HTTP {refused_post} to the initialize POST "
            f"and HTTP {status} to the HTTP+SSE GET"
        )
    if status == 404 and refused_post in (None, 404):
        what += f": no MCP server there; {endpoint_hint(url)}"
    return what


def endpoint_hint(url: str) -> str:
    """Where to look when ``url`` answered 404 to everything: most servers serve Streamable
    HTTP at ``/mcp`` (the official SDKs' default) and HTTP+SSE at ``/sse``."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if path.endswith(("/mcp", "/sse")):
        return "check the path in the server's documentation"
    suggested = urlunsplit((parts.scheme, parts.netloc, "/mcp", "", ""))
    return f"most servers serve MCP at /mcp ({redact_url(suggested)})"
