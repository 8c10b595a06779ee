"""Opening a connection: the handshake its era needs.

Once a transport is up, a connection is opened one of three ways:

- era 'legacy' (2024-11-05 .. 2025-11-25): ``initialize``, then
  ``notifications/initialized`` (over HTTP the session waits for that POST's answer);
- era 'modern' (2026-07-28): no handshake at all, every request carries its ``_meta``;
- era 'auto' without a cached verdict: ``server/discover`` first; a usable answer means
  modern, anything else (an error, a timeout, a lost request) means legacy. Over HTTP a
  modern-only server may also refuse ``initialize`` with an error naming 2026-07-28.

The verdict is written to the process-wide era cache, keyed by the server's command line or
its URL without query and fragment, so that every later client of the same server skips the
probe. HTTP+SSE (2024-11-05) is the HTTP transport's fallback and is cached as 'sse'.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol

from .._config.spec import Spec
from .._transport.connection import (
    DISCOVER,
    INITIALIZE,
    Connection,
    Requests,
    SseTransport,
    Transport,
)
from .._transport.eras import (
    MODERN_VERSION,
    Handshake,
    discover_params,
    initialize_params,
    parse_discover_result,
    parse_initialize_result,
)
from .._vocabulary.errors import (
    ConnectFailed,
    InitializationFailed,
    InvalidResponse,
    McpError,
    UnsupportedVersion,
)
from .._vocabulary.phases import Phase, Step
from .._wire import jsonrpc as rpc
from .results import names_our_modern_version, rpc_error

if TYPE_CHECKING:
    pass

__all__ = ["Opener", "Opening"]

# era="modern" (or a cached verdict) skips server/discover: what the server offers is unknown.
_MODERN = Handshake("modern", MODERN_VERSION, None, {}, known=False)


class Opener(Requests, Protocol):
    """What opening a connection needs of the session."""

    def fail(self, connection: Connection, error: McpError, *, permanent: bool = False) -> None:
        """The connection failed."""

    def ready(self, connection: Connection, handshake: Handshake) -> None:
        """The connection is open: work may go out on it."""


class Opening:
    """The handshakes of one session's connections; see the module docstring."""

    __slots__ = (
        "_capabilities", "_era_cache", "_era_key", "_http", "_known_era", "_late", "_session",
        "_spec", "_transport", "known_era",
    )  # fmt: skip

    def __init__(
        self,
        spec: Spec,
        transport: Transport,
        http: SseTransport | None,
        capabilities: Mapping[str, Any],
        session: Opener,
        *,
        era_cache: MutableMapping[str, str] | None,
        known_era: str | None,
    ) -> None:
        self._spec = spec
        self._transport = transport
        self._http = http  # None on stdio
        self._capabilities = capabilities
        self._session = session
        self._era_cache: MutableMapping[str, str] = {} if era_cache is None else era_cache
        # The verdict is cached per server: its command line, or its origin + path.
        self._era_key = json.dumps(
            ["http", (spec.url or "").split("?")[0].split("#")[0]]
            if http is not None
            else [spec.command, *spec.args]
        )
        # Read once: another client of the process writing the shared cache mid-session must
        # not change what this machine does (replay would then differ from the session).
        # ``known_era`` given (a replay) wins over the cache.
        self._known_era = known_era if known_era is not None else self._era_cache.get(self._era_key)
        self.known_era: str | None = self._known_era  # the verdict this machine started from
        # stdio: a modern answer to a probe that came after its deadline, by slot, kept while
        # the fallback initialize is in flight (see ``probe_expired``).
        self._late: dict[int, Handshake] = {}

    def start(self, connection: Connection) -> None:
        """The transport is up (process running, or an HTTP endpoint to talk to): start the
        handshake the era needs."""
        self._late.pop(connection.index, None)
        era = self._spec.era if self._spec.era != "auto" else self._known_era
        if era == "sse" and self._http is not None:
            self._http.open_sse(connection)
        elif era == "modern":
            self._session.ready(connection, _MODERN)
        elif era == "legacy":
            self.send_initialize(connection)
        else:
            # 2026-07-28 transports/stdio §Backward Compatibility: a dual-era client "SHOULD
            # probe with server/discover" before any other request; no answer within a short
            # timeout means a legacy server. Over HTTP the answer's status and body decide
            # (streamable-http §Backward Compatibility).
            connection.move(Step.PROBE)
            # Over HTTP an answer always comes (its status decides), so the probe may take half
            # the connect budget; on stdio a silent legacy server is the reason for the timeout.
            probe_wait = (
                max(self._spec.probe_timeout, self._spec.init_timeout / 2)
                if self._http is not None
                else self._spec.probe_timeout
            )
            connection.probe_deadline = self._session.now + probe_wait
            params = discover_params(self._capabilities, self._spec.client_info)
            self._session.request(connection, DISCOVER, params, DISCOVER)

    def probe_expired(self, connection: Connection) -> None:
        """No answer to ``server/discover`` in time: a legacy server, so ``initialize``.

        Over HTTP the probe is forgotten (its stream closed). On stdio its answer may still
        come, from a server that was merely slow to start (an interpreter importing, ``npx``
        fetching a package): a modern answer is kept, and if the server then refuses
        ``initialize`` naming the modern version, the session is the one that answer
        describes, with its capabilities and server info (``_initialize_answered``)."""
        connection.probe_deadline = None
        if self._http is not None:
            for request_id in [k for k, v in connection.requests.items() if v == DISCOVER]:
                del connection.requests[request_id]
                self._transport.forget(connection, request_id)
        self._session.log("DEBUG", "no answer to server/discover: treating the server as legacy")
        self.send_initialize(connection)

    def send_initialize(self, connection: Connection) -> None:
        connection.move(Step.INITIALIZE)
        params = initialize_params(self._capabilities, self._spec.client_info)
        self._session.request(connection, INITIALIZE, params, INITIALIZE)

    def answered(self, connection: Connection, owner: str, response: rpc.Response) -> None:
        """The server answered ``server/discover`` or ``initialize`` (``owner``)."""
        if owner == DISCOVER:
            self._discover_answered(connection, response)
        else:
            self._initialize_answered(connection, response)

    def _learn(self, era: str) -> None:
        self._known_era = era
        if self._spec.era == "auto":  # cache what a probe found, not what was pinned
            self._era_cache[self._era_key] = era

    def _discover_answered(self, connection: Connection, response: rpc.Response) -> None:
        connection.probe_deadline = None
        handshake = parse_discover_result(response.result) if response.result else None
        if handshake is None and names_our_modern_version(response.error):
            handshake = _MODERN
        if connection.phase is not Phase.PROBING:
            # After its deadline, with initialize in flight: kept for a refusal of initialize.
            if handshake is not None:
                self._late[connection.index] = handshake
            return
        if handshake is None:
            # "Fallback MUST NOT be keyed to one error code": anything else means legacy.
            self.send_initialize(connection)
        else:
            self._learn("modern")
            self._session.ready(connection, handshake)

    def _initialize_answered(self, connection: Connection, response: rpc.Response) -> None:
        if names_our_modern_version(response.error) and self._spec.era == "auto":
            # A modern-only server refusing initialize (the probe got no usable answer in
            # time): "a recognized modern JSON-RPC error ... do not fall back" (2026-07-28).
            # The probe's late answer, when it came, says what the server is.
            self._learn("modern")
            self._session.ready(connection, self._late.pop(connection.index, _MODERN))
            return
        if response.error is not None:
            error = rpc_error(response.error)
            failure = InitializationFailed(str(error), error)
            self._session.fail(connection, ConnectFailed(str(failure), cause=failure))
            return
        assert response.result is not None
        try:
            handshake = parse_initialize_result(response.result)
        except UnsupportedVersion as exc:
            failed = ConnectFailed(str(exc), permanent=True, cause=exc)
            self._session.fail(connection, failed, permanent=True)
            return
        except InvalidResponse as exc:
            self._session.fail(connection, ConnectFailed(str(exc), cause=exc))
            return
        self._learn("sse" if self._transport.speaks_sse(connection) else "legacy")
        connection.handshake = handshake  # so the notification carries MCP-Protocol-Version
        if self._transport.acknowledge(connection, rpc.notification("notifications/initialized")):
            connection.move(Step.CONFIRM)  # HTTP: ready once the server answered that POST
        else:
            self._session.ready(connection, handshake)
