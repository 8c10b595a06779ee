"""Resource subscriptions in the 2026-07-28 era: the ``subscriptions/listen`` stream.

2026-07-28 basic/patterns/subscriptions: "subscriptions/listen" replaces the GET stream and
``resources/subscribe``. The client sends ``subscriptions/listen {notifications:
{resourceSubscriptions: [uri, ...]}}`` and keeps the request open; the server's first message
"MUST be" ``notifications/subscriptions/acknowledged`` naming the subset it honours, and every
notification of the stream carries ``_meta["io.modelcontextprotocol/subscriptionId"]``, the
listen request's id. The stream ends when the client cancels it, when the server answers the
request (a graceful close), or with the transport ("the client MAY reconnect by re-sending").

One listen per ready modern connection, asking for every subscribed URI. A change of the set
cancels the old listen and sends a new one (the protocol has no way to amend one). A listen
that ends while URIs are still wanted is sent again after a doubling delay (1 s to 60 s),
reset by the next acknowledgement; a listen the server refuses with an error is not.

List changes travel on the same stream in this era, and only to a listen that asked for them
(``toolsListChanged``, ``promptsListChanged``, ``resourcesListChanged``: 2026-07-28
server/tools, server/prompts §List Changed Notification). A session built with
``list_changed=True`` (the application gave a callback) asks for each list the server declared
``listChanged`` for (all three when it was not asked: era='modern' skips ``server/discover``),
and keeps its listen open for them with no URI subscribed; without it, a listen is sent only
for URIs, so a session that subscribes to nothing opens no stream.

The legacy era needs none of this: ``resources/subscribe`` is an ordinary request
(``_session/calls.py``), renewed on every new session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._transport.connection import Connection
from .._transport.eras import SUBSCRIPTION_META, modern_meta
from .._vocabulary.phases import Phase
from .._wire import jsonrpc as rpc
from .calls import Calls, Requester

__all__ = ["LISTEN", "Subscriptions"]

LISTEN = "subscriptions/listen"  # the owner of a listen request in ``Connection.requests``

_FIRST_DELAY = 1.0
_MAX_DELAY = 60.0
# The lists whose changes a listen may ask for: the server capability that declares each.
_LISTS = ("tools", "prompts", "resources")


class Subscriptions:
    """The listen streams of one session's modern connections."""

    __slots__ = (
        "_again_at", "_calls", "_capabilities", "_connections", "_delay", "_list_changed",
        "_listening", "_session",
    )  # fmt: skip

    def __init__(
        self,
        connections: Sequence[Connection],
        calls: Calls,
        capabilities: Mapping[str, Any],
        session: Requester,
        list_changed: bool = False,
    ) -> None:
        self._connections = connections
        self._calls = calls
        self._capabilities = capabilities
        self._session = session
        self._list_changed = list_changed
        # Per slot: the listen request in flight and the URIs it asked for.
        self._listening: dict[int, tuple[int, tuple[str, ...]]] = {}
        self._again_at: dict[int, float] = {}
        self._delay: dict[int, float] = {}

    def sync(self) -> None:
        """The subscribed set changed: bring every ready modern connection's listen to it."""
        for connection in self._connections:
            if connection.phase is Phase.READY and connection.modern:
                self._sync(connection)

    def connection_ready(self, connection: Connection) -> None:
        self._listening.pop(connection.index, None)  # the old session's listen is gone
        self._again_at.pop(connection.index, None)
        if connection.modern:
            self._sync(connection)

    def _sync(self, connection: Connection) -> None:
        wanted = tuple(self._calls.subscriptions)
        current = self._listening.get(connection.index)
        if current is not None and current[1] == wanted:
            return
        if current is not None:
            self._stop(connection, current[0])
        self._again_at.pop(connection.index, None)
        notifications: dict[str, Any] = {f"{k}ListChanged": True for k in self._lists(connection)}
        if wanted:
            notifications["resourceSubscriptions"] = list(wanted)
        if not notifications:
            return
        request_id = self._session.request(
            connection, LISTEN, {"notifications": notifications}, LISTEN, self._meta()
        )
        self._listening[connection.index] = (request_id, wanted)

    def _lists(self, connection: Connection) -> tuple[str, ...]:
        """The lists whose changes this connection's listen asks for (see the module
        docstring); they stay the same while it is ready."""
        handshake = connection.handshake
        if not self._list_changed or handshake is None:
            return ()
        if not handshake.known:
            return _LISTS
        declared = handshake.capabilities
        return tuple(
            kind
            for kind in _LISTS
            if isinstance(offer := declared.get(kind), Mapping) and offer.get("listChanged") is True
        )

    def _meta(self) -> dict[str, Any]:
        # The level covers the stream's notifications/message too.
        return modern_meta(self._capabilities, self._calls.client_info, self._calls.log_level)

    def _stop(self, connection: Connection, request_id: int) -> None:
        # A slot's listen and its request go together while the connection is ready: an
        # answer or a loss ends both (``ended``), a failure clears the requests of a connection
        # no longer ready, and a new session starts with none.
        del self._listening[connection.index]
        del connection.requests[request_id]
        if self._session.cancel(connection, request_id):
            self._session.send(
                connection,
                rpc.notification(
                    "notifications/cancelled",
                    {"requestId": request_id, "reason": "the subscriptions changed"},
                ),
            )

    def acknowledged(self, connection: Connection, params: Mapping[str, Any]) -> None:
        """``notifications/subscriptions/acknowledged``: the server honours what it names.
        Its ``subscriptionId`` (when given) says which listen: on stdio the acknowledgement of
        a listen just cancelled for a new set may still arrive, and speaks for that old set."""
        current = self._listening.get(connection.index)
        meta = params.get("_meta")
        listen_id = meta.get(SUBSCRIPTION_META) if isinstance(meta, dict) else None
        if current is None or listen_id not in (None, current[0]):
            return
        self._delay.pop(connection.index, None)
        honoured = params.get("notifications")
        if not isinstance(honoured, dict):
            honoured = {}
        lists = self._lists(connection)
        unheard = [kind for kind in lists if honoured.get(f"{kind}ListChanged") is not True]
        if unheard:  # to "handle any unsupported types gracefully": no callback for those
            named = ", ".join(unheard)
            self._session.log("DEBUG", f"the server will not say when its {named} change")
        listed = honoured.get("resourceSubscriptions")
        refused = [uri for uri in current[1] if not isinstance(listed, list) or uri not in listed]
        if refused:
            self._session.log(
                "WARNING",
                f"the server does not send updates for {len(refused)} subscribed resource(s), "
                f"e.g. {refused[0][:120]!r}",
            )

    def ended(self, connection: Connection, request_id: int, error: object) -> None:
        """The listen request was answered (a graceful close, or a refusal) or lost
        (``error`` is then the ``McpError``, and the answer None)."""
        # The listen on the wire is always the slot's current one (see ``_stop``).
        listening = self._listening.pop(connection.index)
        assert listening[0] == request_id
        if isinstance(error, Mapping):  # the server refused to listen: asking again won't help
            self._session.log(
                "WARNING",
                f"the server refused subscriptions/listen: {str(error.get('message'))[:200]}",
            )
            return
        delay = self._delay.get(connection.index, _FIRST_DELAY)
        self._delay[connection.index] = min(delay * 2, _MAX_DELAY)
        self._again_at[connection.index] = self._session.now + delay

    def next_deadline(self) -> float | None:
        return min(self._again_at.values(), default=None)

    def expire(self, now: float) -> None:
        for slot, at in sorted(self._again_at.items()):
            if at <= now:
                del self._again_at[slot]
                connection = self._connections[slot]
                if connection.phase is Phase.READY and connection.modern:
                    self._sync(connection)
