"""What an OAuth login leaves behind, and where it is kept.

``StoredAuthorization`` is one server's record: the client identity the authorization server
issued or accepted (bound to that server's ``issuer``: a changed issuer means registering
again, so the authorization layer discards a record whose issuer no longer matches) and the
tokens it granted. ``TokenStore`` is where records live between sessions, keyed by the
server's canonical URL; ``InMemoryTokenStore`` is the library's default and the reference
implementation, ``_mcp_io.tokens.FileTokenStore`` the command's (a 0600 file).

Records cross the store as JSON-ready mappings (``to_json`` / ``from_json``). Reading is
strict, because a store is a file a person can edit: a field of the wrong type is a
``ValueError`` that names the field and never quotes the value (it may be a token). Unknown
fields are ignored, so a record written by a newer version still loads.

Nothing here holds a secret in a ``repr``: the client secret and both tokens show as
``[redacted]``, and so does a DPoP key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

from .urls import REDACTED

__all__ = ["InMemoryTokenStore", "StoredAuthorization", "TokenStore"]

# Fields that must be a non-empty string, and fields that may also be None.
_REQUIRED_TEXT = ("issuer", "client_id", "token_type")
_OPTIONAL_TEXT = ("client_secret", "access_token", "refresh_token", "scope", "dpop_key")


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredAuthorization:
    """One server's authorization: who the client is at ``issuer`` and what it was granted.

    ``expires_at`` is when the access token stops working, in UNIX wall-clock seconds (the
    driver's clock, not a monotonic one: the record outlives the process), ``None`` when the
    token answer gave no ``expires_in``. ``scope`` is the space-separated scope granted.
    A record without tokens is a registration kept for the next login. ``ValueError`` at
    construction for a field of the wrong type or an empty ``issuer``/``client_id``/
    ``token_type``; the message names the field only.
    """

    issuer: str
    client_id: str
    client_secret: str | None = None
    access_token: str | None = None
    refresh_token: str | None = None
    expires_at: float | None = None
    scope: str | None = None
    token_type: str = "Bearer"
    # ``token_type`` "DPoP": the tokens are bound to this key (RFC 9449), the driver's private
    # JWK as JSON. The driver puts it in and takes it out: the core never holds it.
    dpop_key: str | None = None

    def __post_init__(self) -> None:
        for name in _REQUIRED_TEXT:
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{_field(name)} must be a non-empty string")
        for name in _OPTIONAL_TEXT:
            if not isinstance(getattr(self, name), str | None):
                raise ValueError(f"{_field(name)} must be a string or null")
        expires_at = self.expires_at
        if expires_at is not None:
            # bool is an int, and a NaN or an infinity compares wrongly with every clock.
            if isinstance(expires_at, bool) or not isinstance(expires_at, int | float):
                raise ValueError(f"{_field('expires_at')} must be a number of seconds or null")
            if not math.isfinite(expires_at):
                raise ValueError(f"{_field('expires_at')} must be a finite number")
            object.__setattr__(self, "expires_at", float(expires_at))

    def __repr__(self) -> str:
        def hidden(value: str | None) -> str | None:
            return None if value is None else REDACTED

        return (
            f"StoredAuthorization(issuer={self.issuer!r}, client_id={self.client_id!r}, "
            f"client_secret={hidden(self.client_secret)!r}, "
            f"access_token={hidden(self.access_token)!r}, "
            f"refresh_token={hidden(self.refresh_token)!r}, expires_at={self.expires_at!r}, "
            f"scope={self.scope!r}, token_type={self.token_type!r}, "
            f"dpop_key={hidden(self.dpop_key)!r})"
        )

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object (every field, ``None`` as null; ``dpop_key`` only when
        there is one)."""
        record = {item.name: getattr(self, item.name) for item in fields(self)}
        if record["dpop_key"] is None:
            del record["dpop_key"]
        return record

    @classmethod
    def from_json(cls, document: object) -> StoredAuthorization:
        """Read a record that ``to_json`` wrote. ``ValueError`` naming the field (never its
        value) when the document is not an object, lacks ``issuer`` or ``client_id``, or has a
        field of the wrong type; unknown fields are ignored."""
        if not isinstance(document, Mapping):
            raise ValueError("a stored authorization must be a JSON object")
        for name in ("issuer", "client_id"):
            if name not in document:
                raise ValueError(f"{_field(name)} is missing")
        known = {item.name for item in fields(cls)}
        values = {key: value for key, value in document.items() if key in known}
        return cls(**values)


def _field(name: str) -> str:
    return f"the stored authorization's {name!r}"


@runtime_checkable
class TokenStore(Protocol):
    """Where authorizations are kept between sessions, one per server.

    ``server`` is the server's canonical URL (what ``canonical_resource`` gives); the issuer is
    inside the record. Implementations raise their own ``McpError`` subclass when the storage
    itself is unreadable, never with a token in the message.
    """

    def load(self, server: str) -> StoredAuthorization | None:
        """The record for ``server``, or ``None`` when there is none."""

    def save(self, server: str, authorization: StoredAuthorization) -> None:
        """Keep ``authorization`` for ``server``, replacing any record it had."""

    def forget(self, server: str) -> None:
        """Drop ``server``'s record; nothing happens when there is none."""


class InMemoryTokenStore:
    """The default store: a dict, gone with the process.

    Not thread-safe by itself (the core starts no thread and takes no lock): a driver that
    calls it from more than one thread does so under its own lock. ``repr`` shows how many
    servers have a record, not which (a URL may carry a secret) and never a token.
    """

    __slots__ = ("_records",)

    def __init__(self) -> None:
        self._records: dict[str, StoredAuthorization] = {}

    def __repr__(self) -> str:
        return f"InMemoryTokenStore(servers={len(self._records)})"

    def load(self, server: str) -> StoredAuthorization | None:
        return self._records.get(server)

    def save(self, server: str, authorization: StoredAuthorization) -> None:
        if not isinstance(authorization, StoredAuthorization):
            raise TypeError("save() takes a StoredAuthorization")
        self._records[server] = authorization

    def forget(self, server: str) -> None:
        self._records.pop(server, None)
