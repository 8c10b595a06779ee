"""Custom headers from tool parameters: ``x-mcp-header`` and ``Mcp-Param-{Name}`` (2026-07-28).

2026-07-28 basic/transports/streamable-http, "Custom Headers from Tool Parameters" (SEP-2243):

    MCP servers **MAY** designate specific tool parameters to be mirrored into HTTP headers
    using an ``x-mcp-header`` extension property in the parameter's schema within the tool's
    ``inputSchema``. [...] While the use of ``x-mcp-header`` is optional for servers, clients
    **MUST** support this feature. When a server's tool definition includes ``x-mcp-header``
    annotations, conforming clients **MUST** mirror the designated parameter values into HTTP
    headers.

Two pure functions, no I/O:

- ``param_headers(input_schema)``: what a listed tool's ``inputSchema`` designates, as
  ``(Name, property path)`` pairs, or why its annotations are invalid. "Clients using the
  Streamable HTTP transport **MUST** reject tool definitions where any ``x-mcp-header`` value
  violates these constraints. Rejection means the client **MUST** exclude the invalid tool
  from the result of ``tools/list``. Clients **SHOULD** log a warning when rejecting a tool
  definition, including the tool name and the reason for rejection." The reason returned here
  is that log line's reason (printable: it quotes the server's strings with ``repr``).
  "Clients using other transports (e.g., stdio) **MAY** ignore ``x-mcp-header`` annotations
  entirely."
- ``mirror(arguments, designated)``: the ``Mcp-Param-{Name}`` headers of one ``tools/call``.

The schema is never dereferenced (``$ref`` is not followed) and is walked without recursion,
so any finite JSON value is handled, however deep.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Mapping
from typing import Any

from .http_parts import encode_header_value

__all__ = ["ANNOTATION", "HEADER_PREFIX", "Designated", "mirror", "param_headers"]

ANNOTATION = "x-mcp-header"
HEADER_PREFIX = "Mcp-Param-"

# (Name, path): the header ``Mcp-Param-{Name}`` carries the argument at ``path``, the chain of
# ``properties`` keys from the schema root to the annotated property.
Designated = tuple[tuple[str, tuple[str, ...]], ...]

# RFC 9110 §5.6.2: token = 1*tchar; tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
# "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA (ASCII letters only).
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# "MUST only be applied to parameters with primitive types (integer, string, boolean).
# Parameters with type ``number`` are not permitted."
_PRIMITIVE = frozenset({"string", "integer", "boolean"})

# JSON Schema keywords whose value is a schema, or a list of schemas (``items`` in draft-07's
# tuple form too): an annotation below one of them is off the ``properties`` chain. Keywords
# holding instance data (``default``, ``const``, ``enum``, ``examples``) are not schemas and are
# not entered: an ``x-mcp-header`` key in a default value is data, not an annotation.
_SUBSCHEMAS = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "allOf",
        "anyOf",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "oneOf",
        "prefixItems",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
# Keywords whose value maps names to schemas (other than ``properties``).
_NAMED_SUBSCHEMAS = frozenset(
    {"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties"}
)
_SHOWN = 60  # characters of a server's string quoted in a reason


def _show(text: str, limit: int = _SHOWN) -> str:
    """``text`` quoted for a log line: ``repr`` (no raw control character), cut to ``limit``."""
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


# Where a schema sits, as a chain of keys from the root: ``None`` is the root, ``(parent,
# key)`` one key below ``parent``. Linked, not a string per schema: a deep schema would
# otherwise cost the square of its depth. Rendered only for a reason.
_Where = tuple["_Where", str] | None


def _place(where: _Where) -> str:
    """Where in the schema, for a reason: its JSON Pointer (RFC 6901), quoted."""
    keys: list[str] = []
    while where is not None:
        where, key = where
        keys.append(key.replace("~", "~0").replace("/", "~1"))
    if not keys:
        return "the schema root"
    return _show("/" + "/".join(reversed(keys)), 4 * _SHOWN)


def param_headers(input_schema: object) -> Designated | str:
    """The ``(Name, property path)`` pairs ``input_schema`` designates with ``x-mcp-header``
    (in the order the schema is walked, breadth first), or a string naming why an annotation
    is invalid, which makes the whole tool invalid. A schema that is not an object designates
    nothing.

    The constraints (2026-07-28 streamable-http, "Schema Extension"; server/tools,
    "x-mcp-header"): the value

    - "**MUST NOT** be empty";
    - "**MUST** match HTTP field-name token syntax (``1*tchar``, RFC 9110 Section 5.1)";
    - "**MUST NOT** contain control characters, including carriage return (CR, ``\\r``) or line
      feed (LF, ``\\n``)";
    - "**MUST** be case-insensitively unique among all ``x-mcp-header`` values in the
      ``inputSchema``";
    - "**MUST** only be applied to parameters with primitive types (integer, string, boolean).
      Parameters with type ``number`` are not permitted." The property's own ``type`` must be
      one of those three strings: ``number``, ``object``, ``array``, ``null``, a list of types
      (``["string", "null"]``) or no ``type`` at all (a bare ``$ref``, an ``enum``) are refused.
      "Integer values **MUST** be within the safe range" (-(2**53)+1 .. 2**53-1) is about the
      values a call carries, which a schema cannot settle: ``mirror`` sends what the body
      carries;
    - "**MUST** only be applied to properties that are *statically reachable* from the schema
      root: reachable via a chain consisting solely of ``properties`` keys. The chain **MUST
      NOT** pass through ``items`` (or any other array keyword), composition keywords
      (``oneOf``, ``anyOf``, ``allOf``, ``not``), conditional keywords (``if``/``then``/
      ``else``), or ``$ref``. Nested object properties are permitted as long as every step in
      the chain is a ``properties`` key. An ``x-mcp-header`` annotation anywhere else makes
      the annotation — and thus the tool definition — invalid." On the root schema itself it
      is on no property at all, so it is invalid too.
    """
    found: list[tuple[str, tuple[str, ...]]] = []
    seen: dict[str, _Where] = {}  # lower-cased Name -> where it was first given
    # (schema, its path of properties keys or None once off that chain, where it is)
    todo: deque[tuple[object, tuple[str, ...] | None, _Where]] = deque([(input_schema, (), None)])
    while todo:
        schema, path, where = todo.popleft()
        if not isinstance(schema, Mapping):
            continue  # true/false schemas, and junk, carry no annotation
        for key, value in schema.items():
            at: _Where = (where, str(key))
            if key == "properties" and isinstance(value, Mapping):
                for name, sub in value.items():
                    below = None if path is None else (*path, str(name))
                    todo.append((sub, below, (at, str(name))))
            elif key in _SUBSCHEMAS and isinstance(value, list):
                todo.extend((sub, None, (at, str(n))) for n, sub in enumerate(value))
            elif key in _SUBSCHEMAS:
                todo.append((value, None, at))
            elif key in _NAMED_SUBSCHEMAS and isinstance(value, Mapping):
                todo.extend((sub, None, (at, str(name))) for name, sub in value.items())
        if ANNOTATION not in schema:
            continue
        problem = _problem(schema, path, where)
        if problem is not None:
            return problem
        assert path  # _problem refused the root and positions off the properties chain
        name = schema[ANNOTATION]
        if name.lower() in seen:
            first = seen[name.lower()]
            return (
                f"{ANNOTATION} {_show(name)} at {_place(where)} repeats the one at "
                f"{_place(first)} (names are compared case-insensitively)"
            )
        seen[name.lower()] = where
        found.append((name, path))
    return tuple(found)


def _problem(schema: Mapping[str, Any], path: tuple[str, ...] | None, where: _Where) -> str | None:
    """Why the annotation of ``schema`` (at ``where``) is invalid, uniqueness aside."""
    name = schema[ANNOTATION]
    if not path:
        return (
            f"{ANNOTATION} at {_place(where)} is not on a property reachable from the root "
            "through 'properties' alone"
        )
    if not isinstance(name, str):
        return f"{ANNOTATION} at {_place(where)} is a {type(name).__name__}, not a string"
    if not name:
        return f"{ANNOTATION} at {_place(where)} is empty"
    if not _TOKEN.fullmatch(name):
        return f"{ANNOTATION} {_show(name)} at {_place(where)} {_why_not_token(name)}"
    kind = schema.get("type")
    if not isinstance(kind, str) or kind not in _PRIMITIVE:
        if kind is None:
            what = "with no 'type'"
        elif isinstance(kind, str):
            what = f"of type {_show(kind)}"
        else:
            what = f"whose 'type' is {kind!r:.{_SHOWN}}"
        return (
            f"{ANNOTATION} {_show(name)} at {_place(where)} is on a property {what}: only "
            "'string', 'integer' and 'boolean' may be mirrored"
        )
    return None


def _why_not_token(name: str) -> str:
    """What keeps a non-empty ``name`` from being an RFC 9110 token."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "contains a control character"
    if not name.isascii():
        return "contains a non-ASCII character"
    if " " in name:
        return "contains a space"
    if ":" in name:
        return "contains a colon"
    return "contains a character not allowed in an HTTP header name"


def mirror(arguments: Mapping[str, Any] | None, designated: Designated) -> list[tuple[str, str]]:
    """The ``Mcp-Param-{Name}`` headers of a ``tools/call`` with ``arguments``, for the pairs
    ``param_headers`` returned for its tool, in their order.

    2026-07-28 streamable-http, "Client Behavior": "Inspect the tool's ``inputSchema`` for
    properties marked with ``x-mcp-header`` and extract the value at each annotated property's
    exact property path, omitting the header when no value is present"; "Encode the values
    according to the Value Encoding rules"; "Append a ``Mcp-Param-{Name}: {Value}`` header
    to the request".

    "Value Encoding": "``string``: Use the value as-is; ``integer``: Convert to decimal string
    representation (e.g., ``42``, ``-7``); ``boolean``: Convert to lowercase ``"true"`` or
    ``"false"``", then anything that is not plain visible ASCII is sent as
    ``=?base64?...?=`` (``http_parts.encode_header_value``). "Parameter value is ``null``: Client
    MUST omit the header"; "Parameter not in arguments: Client MUST omit the header".

    A number with an integral value (``5.0``, an integer to JSON Schema) goes as its decimal
    integer. A value no header can carry (an object, an array, a fractional or non-finite
    number, an integer too long for ``str``) is left out: such arguments do not fit a
    string, integer or boolean parameter, and the server refuses the call either way.
    """
    headers: list[tuple[str, str]] = []
    for name, path in designated:
        text = _text(_value_at(arguments, path))
        if text is not None:
            headers.append((HEADER_PREFIX + name, encode_header_value(text)))
    return headers


def _value_at(arguments: Mapping[str, Any] | None, path: tuple[str, ...]) -> object:
    """The argument at ``path`` ("the exact property path"), or None when there is none."""
    value: object = arguments
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _text(value: object) -> str | None:
    """The header text of one argument value, or None when no header is sent for it."""
    if isinstance(value, bool):  # before int: True is an int to Python
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        try:
            return str(int(value))  # int(): an IntEnum's str() is not always its digits
        except ValueError:  # beyond sys.get_int_max_str_digits(): the body cannot carry it
            return None
    return None
