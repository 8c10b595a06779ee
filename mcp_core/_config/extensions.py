"""The extensions a client declares (SEP-2133, 2026-07-28 basic/index §Extensions): their
identifiers and settings, checked for ``Spec.extensions``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["check_extensions"]

# SEP-2133 (2026-07-28 extensions): "vendor-prefix/name", the prefix dot-separated labels
# (a letter first, a letter or digit last, hyphens inside), the name alphanumeric at both
# ends with ".", "_" or "-" inside.
_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_EXTENSION_ID = re.compile(rf"{_LABEL}(?:\.{_LABEL})*/[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def check_extensions(value: object) -> Mapping[str, Mapping[str, Any]]:
    """The extensions the client declares: identifier -> settings (a JSON object, ``{}`` for
    none), stored read-only."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f"'extensions' must be a mapping of extension identifiers to settings, "
            f"got {type(value).__name__}"
        )
    checked: dict[str, Mapping[str, Any]] = {}
    for identifier, settings in value.items():
        if not isinstance(identifier, str) or not _EXTENSION_ID.fullmatch(identifier):
            raise ValueError(
                f"extension identifier {str(identifier)[:80]!r} is not 'vendor-prefix/name'",
                "name an extension as its documentation does, e.g. "
                "'io.modelcontextprotocol/tasks' or 'com.example/my-extension'",
            )
        if not isinstance(settings, Mapping) or not _json_ready(settings):
            raise ValueError(
                f"extensions[{identifier!r}] must be a JSON object of settings ({{}} for none), "
                f"got {type(settings).__name__}"
            )
        checked[identifier] = MappingProxyType(dict(settings))
    return MappingProxyType(checked)


def _json_ready(value: object) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True
