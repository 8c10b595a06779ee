"""How a spec is shown: ``redact_mapping`` (for ``Spec.redacted()``, ``repr`` and every
message that quotes a spec), and the names of the fields that decide it.

Secret-bearing fields are redacted whatever their shape; the values of unknown fields are
redacted too; other known fields are kept when they are plain scalars.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .._vocabulary.urls import REDACTED, redact_url
from .client_info import redact_client_info
from .enterprise import ENTERPRISE_KEYS

__all__ = [
    "ENV_NAME",
    "HEADER_NAME",
    "OAUTH_KEYS",
    "OAUTH_TEXT",
    "TIMEOUT_FIELDS",
    "path_problem",
    "redact_mapping",
]

# What a spec's ``oauth`` mapping may hold (what ``.mcp.json`` can say about a
# server's OAuth client), in the order messages list them.
OAUTH_KEYS = (
    "enabled",
    "client_id",
    "client_secret",
    "scope",
    "grant",
    "redirect_port",
    "client_metadata_url",
    "key_file",
    "key_id",
    "assertion_file",
    "timeout",
    "allow_insecure_http",
    *ENTERPRISE_KEYS,
    "dpop",
)
OAUTH_TEXT = (
    "client_id",
    "client_secret",
    "scope",
    "client_metadata_url",
    "key_file",
    "key_id",
    "assertion_file",
    *ENTERPRISE_KEYS,
)

TIMEOUT_FIELDS = (
    "call_timeout",
    "max_call_timeout",
    "init_timeout",
    "reconnect",
    "max_backoff",
    "probe_timeout",
    "shutdown_grace",
)
# Fields whose values are kept by redaction (when they are plain scalars).
_PLAIN_FIELDS = frozenset(
    {
        "name",
        "command",
        "cwd",
        "concurrency",
        "era",
        "fail_fast",
        "pool_size",
        "queue_limit",
        "max_message_bytes",
        "max_list_pages",
        "jitter_seed",
        *TIMEOUT_FIELDS,
    }
)
# RFC 9110 §5.1: a field name is a token.
HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
ENV_NAME = re.compile(r"[^=\x00]+")


def redact_mapping(mapping: Mapping[str, object]) -> dict[str, object]:
    """Redact a raw spec mapping, which may be invalid (this is what error messages show).

    Secret-bearing fields are redacted whatever their shape; the values of unknown fields are
    redacted too (a misspelt ``"header"`` field may well hold a token); other known fields are
    kept when they are plain scalars. Invalid header or env names are not shown either: a
    name like ``"Authorization: Bearer ..."`` is a value pasted into the wrong place.
    """
    out: dict[str, object] = {}
    for raw_key, value in mapping.items():
        key = str(raw_key)
        if value is None:
            out[key] = None
        elif key in ("env", "headers"):
            pattern = ENV_NAME if key == "env" else HEADER_NAME
            out[key] = _redact_names(value, pattern)
        elif key == "args":
            out[key] = [REDACTED] * len(value) if isinstance(value, (list, tuple)) else REDACTED
        elif key == "url":
            out[key] = redact_url(value) if isinstance(value, str) else REDACTED
        elif key == "proxy":
            # A proxy URL may hold the proxy's user name and password.
            out[key] = redact_url(value) if isinstance(value, str) else _redact_scalar(value)
        elif key in ("verify", "cert"):
            out[key] = _redact_paths(value)
        elif key == "oauth" and isinstance(value, Mapping):
            out[key] = {str(k): _redact_oauth(k, v) for k, v in value.items()}
        elif key == "extensions" and isinstance(value, Mapping):
            # Declared to every server as they are (capabilities), so shown as they are.
            out[key] = {str(k): dict(v) if isinstance(v, Mapping) else v for k, v in value.items()}
        elif key == "client_info" and isinstance(value, Mapping):
            out[key] = redact_client_info(value)
        elif key == "prices" and isinstance(value, Mapping):
            out[key] = {str(k): v if _is_scalar(v) else REDACTED for k, v in value.items()}
        elif key in _PLAIN_FIELDS and isinstance(value, (str, int, float, bool)):
            out[key] = value
        else:
            out[key] = REDACTED
    return out


def _redact_names(value: object, pattern: re.Pattern[str]) -> object:
    if not isinstance(value, Mapping):
        return REDACTED
    return {
        (k if isinstance(k, str) and pattern.fullmatch(k) else f"[invalid name #{i}]"): REDACTED
        for i, k in enumerate(value)
    }

_SECRET_KEYS = ("client_secret", "idp_client_secret")


def _redact_oauth(key: object, value: object) -> object:
    # The secret, and whatever sits under a key this client does not know (a misspelt
    # "client_secert" holds a secret just the same), are never shown.
    if value is None:
        return None
    if key in _SECRET_KEYS or key not in OAUTH_KEYS or not _is_scalar(value):
        return REDACTED
    return redact_url(value) if key == "client_metadata_url" and isinstance(value, str) else value


def _redact_scalar(value: object) -> object:
    return value if isinstance(value, bool) else REDACTED


def _redact_paths(value: object) -> object:
    # Paths are shown (they name files, like 'command'); text that is not a path (PEM text
    # pasted in by mistake holds a private key) or values of another type are not.
    if isinstance(value, str):
        return value if path_problem(value) is None else REDACTED
    if isinstance(value, (list, tuple)):
        return [_redact_paths(item) if isinstance(item, str) else REDACTED for item in value]
    return _redact_scalar(value)


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def path_problem(path: str) -> str | None:
    """Why ``path`` is no path (messages quote a path, never what is not one), or None."""
    if not path.strip():
        return "must be a non-empty path"
    if "-----BEGIN" in path:
        return "holds PEM text, not a path: save it to a file and give the file's path"
    if any(not c.isprintable() for c in path):
        return "contains a control character"
    return None
