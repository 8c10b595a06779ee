"""What a caller's request is checked for before it is admitted: the server capability its
method needs (``REQUIRED_CAPABILITY``), and whether JSON can carry its params and ``_meta``
without overriding a key of the protocol's. Pure functions; ``calls.py`` answers the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._vocabulary.errors import InvalidArguments
from .._wire.json import unsendable

__all__ = [
    "PROTOCOL_META",
    "REQUIRED_CAPABILITY",
    "SKILLS_EXTENSION",
    "missing_capability",
    "unsendable_request",
]

# The Skills extension (SEP-2640): its methods are sent only to a server that declared it in
# ``capabilities.extensions`` (SEP-2133: "only after the server declared them").
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"

# The server capability each method needs (2025-11-25 schema, ServerCapabilities). tools/* is
# not checked: servers that list tools without declaring them are common, and harmless.
# ``extensions.<vendor>/<name>``: the extension's settings object under
# ``capabilities.extensions``; ``extensions.<vendor>/<name>.<setting>``: a setting in it, true.
REQUIRED_CAPABILITY = {
    "skills/list": f"extensions.{SKILLS_EXTENSION}",
    "skills/get": f"extensions.{SKILLS_EXTENSION}",
    "resources/directory/read": f"extensions.{SKILLS_EXTENSION}.directoryRead",  # SEP-2640
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "resources/subscribe": "resources.subscribe",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "completion/complete": "completions",
    "logging/setLevel": "logging",
}


def missing_capability(capabilities: Mapping[str, Any], method: str) -> str | None:
    """The capability ``method`` needs that ``capabilities`` lack, or None."""
    needed = REQUIRED_CAPABILITY.get(method)
    if needed is None:
        return None
    name, _, flag = needed.partition(".")
    declared = capabilities.get(name)
    if name == "extensions":  # an extension is declared by its settings object ({} for none)
        vendor, _, rest = flag.partition("/")
        extension, _, setting = rest.partition(".")
        settings = declared.get(f"{vendor}/{extension}") if isinstance(declared, dict) else None
        if not isinstance(settings, dict) or (setting and settings.get(setting) is not True):
            return needed
    elif not isinstance(declared, dict) or (flag and declared.get(flag) is not True):
        return needed
    return None


# The ``_meta`` keys the machine sets itself (2025-11-25 basic/utilities/progress; 2026-07-28
# basic/index §_meta): a caller's entry would be overwritten, so it is refused instead.
PROTOCOL_META = ("progressToken", "io.modelcontextprotocol/")


def unsendable_request(
    method: str, root: str, value: object, meta: object
) -> InvalidArguments | None:
    """Refuse a request whose ``value`` (arguments or params) or ``_meta`` JSON cannot carry,
    or whose ``_meta`` names a key of the protocol's, before it is admitted: encoded later,
    when a slot frees, it would fail in the middle of another caller's answer, with a slot
    already taken."""
    if meta is not None and not isinstance(meta, Mapping):
        return InvalidArguments(method, "_meta", "must be a mapping with str keys")
    for name, part in ((root, value), ("_meta", meta)):
        found = None if part is None else unsendable(part)
        if found is not None:
            return InvalidArguments(method, name + found[0], found[1])
    for key in meta or ():
        if key == PROTOCOL_META[0] or key.startswith(PROTOCOL_META[1]):
            return InvalidArguments(
                method,
                f"_meta[{key[:80]!r}]",
                "is a key the client sets itself",
                "leave progressToken and io.modelcontextprotocol/ keys to the client: "
                "progress= asks for progress",
            )
    return None
