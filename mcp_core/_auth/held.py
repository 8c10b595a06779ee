"""The requests the authorization layer holds until there is a token.

A request is held when the server refused it for want of a token (a 401, or a 403 asking for
more scope), or when the session sends it while a token is on its way. Once a token comes,
each held request still wanted is sent again, once; one whose caller was answered meanwhile
(a timeout, a cancel, a session the server forgot: each takes the request out of
``connection.requests``) is never sent, nor a notification meant for an earlier session. A
request sent again is remembered by its stream, so that a second refusal counts against the
same record (a second 401 for the same request fails it; step-up counts its authorizations).

A handshake waiting here keeps its connect deadline running, except while the user is at the
browser: ``suspend_connect_deadlines`` stops it, ``rearm_connect_deadlines`` gives it
``init_timeout`` again from the browser step's end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._transport.connection import DISCOVER, INITIALIZE, Connection, Session
from .._transport.http import HttpTransport
from .._vocabulary.errors import AuthorizationUnavailable, ConnectFailed, McpError
from .._vocabulary.phases import Phase

__all__ = ["Held", "HeldRequests"]

_GONE = (Phase.IDLE, Phase.STOPPING)


@dataclass(slots=True, eq=False)
class Held:
    """A request the server refused for want of a token, or sent while one was being got."""

    connection: Connection
    message: Mapping[str, Any]
    request_id: int | None
    epoch: int  # the connection's session when it was held (a notification belongs to it)
    confirming: bool = False  # the initialized POST the handshake waits for
    refused: int = 0  # how often the server refused it for want of a token (401)
    authorizations: int = 0  # authorizations it waited for (the step-up limit)
    nonced: bool = False  # sent again with the MCP server's DPoP nonce (RFC 9449 §9)

    @property
    def handshake(self) -> bool:
        """Whether the connection's handshake waits for it (not caller work)."""
        request_id = self.request_id
        owner = self.connection.requests.get(request_id) if request_id is not None else None
        return self.confirming or owner in (DISCOVER, INITIALIZE)


class HeldRequests:
    """The held requests of one session's authorization layer; see the module docstring."""

    __slots__ = ("_init_timeout", "_inner", "_session", "entries", "resent")

    def __init__(self, inner: HttpTransport, session: Session, init_timeout: float) -> None:
        self._inner = inner
        self._session = session
        self._init_timeout = init_timeout
        self.entries: list[Held] = []
        # The stream of a request sent again -> its record (read on every response head while
        # non-empty: the layer looks it up itself).
        self.resent: dict[int, Held] = {}

    def add(self, held: Held) -> None:
        self.entries.append(held)

    def remove(self, held: Held) -> None:
        self.entries.remove(held)

    def take_all(self) -> list[Held]:
        """Every held request, no longer held."""
        held, self.entries = self.entries, []
        return held

    def clear(self) -> None:
        self.entries.clear()

    def drop(self, connection: Connection, request_id: int) -> bool:
        """Forget the held request ``request_id`` of ``connection``; whether there was one."""
        for entry in self.entries:
            if entry.connection is connection and entry.request_id == request_id:
                self.entries.remove(entry)
                return True
        return False

    def drop_connection(self, connection: Connection) -> None:
        """Forget what ``connection`` had held: it failed or is closing."""
        self.entries = [h for h in self.entries if h.connection is not connection]

    def wanted(self, entry: Held) -> bool:
        """Whether a held request is still to be sent: its caller was not answered meanwhile,
        and a notification's session is still the one it was for."""
        connection = entry.connection
        if entry.request_id is not None:
            return entry.request_id in connection.requests
        return entry.epoch == connection.epoch and connection.phase not in _GONE

    def send_all(self) -> None:
        """There is a token: send every held request still wanted, once."""
        held, self.entries = self.entries, []
        self.resent = {s: e for s, e in self.resent.items() if self.wanted(e)}
        for entry in held:
            if not self.wanted(entry):
                continue
            connection = entry.connection
            self._rearm(connection)
            if entry.confirming:
                self._inner.acknowledge(connection, entry.message)
            else:
                self._inner.send(connection, entry.message, entry.request_id)
            if entry.refused or entry.authorizations or entry.nonced:
                self.resent[self._inner.last_stream] = entry

    def fail(self, entry: Held, error: McpError, *, permanent: bool = True) -> None:
        """Answer one held request with ``error``: caller work loses it, the handshake fails
        the connection (for good when ``permanent``). A request already answered, or on a
        connection that failed meanwhile, is left alone."""
        connection = entry.connection
        if not self.wanted(entry):
            return
        if entry.handshake:
            if isinstance(error, AuthorizationUnavailable):
                connection.retry_after = error.retry_after
                reason = f"authorization is unavailable: the {error.step} request to "
                reason += f"{error.origin} {error.detail}"
            else:
                reason = error.message
            failed = ConnectFailed(reason, permanent=permanent, cause=error)
            self._session.fail(connection, failed, permanent=permanent)
            return
        if entry.request_id is not None:  # a notification (a cancel, an answer) is dropped
            owner = connection.requests.pop(entry.request_id)
            self._session.lose(connection, owner, error, entry.request_id)

    def count_authorization(self) -> None:
        """An authorization is made: every request waiting for it counts one more."""
        for entry in self.entries:
            entry.authorizations += 1

    def connect_bound(self) -> float:
        """The earliest connect deadline of a handshake waiting here (inf: none)."""
        deadlines = [e.connection.connect_deadline for e in self.entries]
        return min((d for d in deadlines if d is not None), default=float("inf"))

    def suspend_connect_deadlines(self) -> None:
        """The user may take minutes at the browser: a handshake waiting for the token stops
        its connect deadline until the browser step ends."""
        for entry in self.entries:
            entry.connection.connect_deadline = None

    def rearm_connect_deadlines(self) -> None:
        for entry in self.entries:
            self._rearm(entry.connection)

    def _rearm(self, connection: Connection) -> None:
        """A handshake waiting for a token has ``init_timeout`` again from now on: its
        deadline was suspended while the user was at the browser."""
        if connection.handshake is None and connection.connect_deadline is None:
            connection.connect_deadline = self._session.now + self._init_timeout
