"""Protocol versions, the legacy handshake and the modern per-request metadata (MCP
2025-11-25 basic/lifecycle, 2026-07-28 basic/versioning).

Legacy versions (2024-11-05 .. 2025-11-25) open with ``initialize`` then
``notifications/initialized``. The modern version 2026-07-28 has no handshake: "every client
request" carries ``_meta`` with ``io.modelcontextprotocol/protocolVersion`` and
``io.modelcontextprotocol/clientCapabilities`` (2026-07-28 basic/index §_meta).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._vocabulary.errors import InvalidResponse, UnsupportedVersion
from .._vocabulary.status import SessionEra

__all__ = [
    "CLIENT_INFO",
    "LATEST_LEGACY",
    "LEGACY_VERSIONS",
    "LOG_LEVEL_META",
    "MODERN_VERSION",
    "SUBSCRIPTION_META",
    "Handshake",
    "client_capabilities",
    "discover_params",
    "initialize_params",
    "modern_meta",
    "parse_discover_result",
    "parse_initialize_result",
    "server_extensions",
]

LEGACY_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# "the client SHOULD send the latest version it supports" (2025-11-25 basic/lifecycle).
LATEST_LEGACY = LEGACY_VERSIONS[-1]
MODERN_VERSION = "2026-07-28"
CLIENT_INFO: Mapping[str, str] = {"name": "mcp-sansio-client", "version": "0.1.0"}

_META = "io.modelcontextprotocol/"
# 2026-07-28 basic/index §_meta: a request opts in to notifications/message at this level.
LOG_LEVEL_META = _META + "logLevel"
# 2026-07-28 basic/patterns/subscriptions: every notification of a listen stream carries it.
SUBSCRIPTION_META = _META + "subscriptionId"


@dataclass(frozen=True, slots=True)
class Handshake:
    """What the server told us about itself when the session became ready."""

    era: SessionEra
    protocol_version: str
    server_info: Mapping[str, Any] | None
    capabilities: Mapping[str, Any]
    instructions: str | None = None
    # False when the server was not asked (era='modern' goes straight to work, no
    # server/discover): then ``capabilities`` is empty and nothing is refused for its sake.
    known: bool = True


def client_capabilities(
    handlers: Iterable[str],
    elicitation_modes: Iterable[str] = ("form",),
    sampling_tools: bool = False,
    extensions: Mapping[str, Mapping[str, Any]] | None = None,
    accept_tasks: bool = False,
) -> dict[str, Any]:
    """Declare exactly the features the application gave a handler for: a capability we
    declare is one the server may use (2025-06-18 basic/lifecycle: "only use negotiated
    capabilities"). ``elicitation: {}`` means form mode only (2025-11-25 client/elicitation:
    "an empty capabilities object is equivalent to declaring support for form mode only"), so
    it is what a form-only handler declares, the shape every legacy version understands; any
    other set of modes is named, e.g. ``{"form": {}, "url": {}}``. ``sampling_tools``:
    ``sampling: {"tools": {}}`` (2025-11-25 client/sampling §Capabilities).

    ``extensions`` (the spec's) are declared as ``capabilities.extensions``, identifier ->
    settings (SEP-2133, 2026-07-28 basic/index §Extensions): on ``initialize`` (the 2025-11-25
    schema has no such field, yet servers read it there) and, being part of the
    capabilities, on every 2026-07-28 request's ``_meta``, as that era requires ("a server
    MUST NOT use an extension for a request that lacks it").

    ``accept_tasks``: ``tasks`` (2025-11-25 basic/utilities/tasks §Client Capabilities) with
    ``list``, ``cancel`` and a ``requests`` entry for each of the sampling and elicitation
    handlers given (none given: nothing is declared). The legacy era only: 2026-07-28 has no
    such capability, so ``modern_meta`` leaves it out."""
    capabilities: dict[str, Any] = {name: {} for name in sorted(handlers)}
    modes = sorted(set(elicitation_modes))
    if "elicitation" in capabilities and modes != ["form"]:
        capabilities["elicitation"] = {mode: {} for mode in modes}
    if sampling_tools and "sampling" in capabilities:
        capabilities["sampling"] = {"tools": {}}
    requests: dict[str, Any] = {
        name: {method: {}}
        for name, method in (("elicitation", "create"), ("sampling", "createMessage"))
        if accept_tasks and name in capabilities
    }
    if requests:
        capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": requests}
    if extensions:
        capabilities["extensions"] = {key: dict(value) for key, value in extensions.items()}
    return capabilities


def server_extensions(handshake: Handshake) -> Mapping[str, Mapping[str, Any]]:
    """The extensions the server declared (``capabilities.extensions``: identifier ->
    settings), its malformed entries left out; read in either era, since servers declare
    them on ``initialize`` too."""
    declared = handshake.capabilities.get("extensions")
    if not isinstance(declared, Mapping):
        return {}
    return {
        key: value
        for key, value in declared.items()
        if isinstance(key, str) and isinstance(value, Mapping)
    }


def initialize_params(
    capabilities: Mapping[str, Any], client_info: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``client_info``: the spec's (``CLIENT_INFO`` when empty or None). A roots handler
    also declares ``listChanged``: the client sends ``notifications/roots/list_changed``
    when told its roots changed (``RootsChanged``). The
    2026-07-28 ``roots`` capability has no such flag (and no such notification)."""
    declared = dict(capabilities)
    if "roots" in declared:
        declared["roots"] = {"listChanged": True}
    return {
        "protocolVersion": LATEST_LEGACY,
        "capabilities": declared,
        "clientInfo": dict(client_info or CLIENT_INFO),
    }


def modern_meta(
    capabilities: Mapping[str, Any],
    client_info: Mapping[str, str] | None = None,
    log_level: str | None = None,
) -> dict[str, Any]:
    """The ``_meta`` keys 2026-07-28 requires on every request (clientInfo is a SHOULD;
    ``client_info`` as for ``initialize_params``), and the log level the caller set, if any
    (2026-07-28 has no logging/setLevel: the level rides on every request). Without the legacy
    ``tasks`` capability: 2026-07-28 has none (its tasks are the extension's, SEP-2663)."""
    declared = dict(capabilities)
    declared.pop("tasks", None)
    meta = {
        _META + "protocolVersion": MODERN_VERSION,
        _META + "clientCapabilities": declared,
        _META + "clientInfo": dict(client_info or CLIENT_INFO),
    }
    if log_level is not None:
        meta[LOG_LEVEL_META] = log_level
    return meta


def discover_params(
    capabilities: Mapping[str, Any], client_info: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {"_meta": modern_meta(capabilities, client_info)}


def parse_initialize_result(result: Mapping[str, Any]) -> Handshake:
    """Raises ``UnsupportedVersion`` for a version we do not speak: the 2025-11-25 schema says
    the client "MUST disconnect" then: a version we do not speak is never accepted silently."""
    version = result.get("protocolVersion")
    if not isinstance(version, str):
        raise InvalidResponse("initialize", "protocolVersion is missing or not a string")
    if version not in LEGACY_VERSIONS:
        raise UnsupportedVersion(version, LEGACY_VERSIONS)
    capabilities = result.get("capabilities")
    info = result.get("serverInfo")
    instructions = result.get("instructions")
    return Handshake(
        era="legacy",
        protocol_version=version,
        server_info=info if isinstance(info, dict) else None,
        capabilities=capabilities if isinstance(capabilities, dict) else {},
        instructions=instructions if isinstance(instructions, str) else None,
    )


def parse_discover_result(result: Mapping[str, Any]) -> Handshake | None:
    """A ``DiscoverResult`` naming our modern version makes the server modern; anything else
    (not a DiscoverResult, or no common version) is ``None``: fall back to ``initialize``
    (2026-07-28 transports/stdio §Backward Compatibility)."""
    versions = result.get("supportedVersions")
    if not isinstance(versions, list) or MODERN_VERSION not in versions:
        return None
    meta = result.get("_meta")
    info = meta.get(_META + "serverInfo") if isinstance(meta, dict) else None
    capabilities = result.get("capabilities")
    instructions = result.get("instructions")
    return Handshake(
        era="modern",
        protocol_version=MODERN_VERSION,
        server_info=info if isinstance(info, dict) else None,
        capabilities=capabilities if isinstance(capabilities, dict) else {},
        instructions=instructions if isinstance(instructions, str) else None,
    )
