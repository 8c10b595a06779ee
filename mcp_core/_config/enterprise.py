"""The ``oauth`` keys of enterprise-managed authorization (SEP-990, the MCP authorization
extension ``io.modelcontextprotocol/enterprise-managed-authorization``), checked for
``Spec.oauth``: ``grant: enterprise`` with the enterprise identity provider's token endpoint
(or its issuer, to find the endpoint in its metadata) and client, the MCP authorization
server's client, and the user's ID token (a file here, or the client's ``assertion=``
callback, which the driver checks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "ENTERPRISE_GRANT",
    "ENTERPRISE_KEYS",
    "EXTENSION",
    "declared_extensions",
    "enterprise_problem",
]

ENTERPRISE_GRANT = "enterprise"
EXTENSION = "io.modelcontextprotocol/enterprise-managed-authorization"
# The keys only this grant takes, in the order messages list them.
ENTERPRISE_KEYS = (
    "id_token_file",
    "idp_token_endpoint",
    "idp_issuer",
    "idp_client_id",
    "idp_client_secret",
)


def enterprise_problem(value: Mapping[str, Any], grant: object) -> tuple[str, str] | None:
    """What is missing or contradictory in an ``oauth`` mapping for ``grant: enterprise``, as
    (problem, what to do), or ``None``. The values are already known to be non-empty strings
    where given; no message quotes one but the endpoint's scheme."""
    given = [key for key in ENTERPRISE_KEYS if value.get(key) is not None]
    if grant != ENTERPRISE_GRANT:
        if not given:
            return None
        return (
            f"oauth[{given[0]!r}] is set but the grant is not 'enterprise'",
            "enterprise-managed authorization (SEP-990) takes grant 'enterprise': set "
            f"oauth['grant'] to 'enterprise', or remove {', '.join(map(repr, given))}",
        )
    endpoint, issuer = value.get("idp_token_endpoint"), value.get("idp_issuer")
    if (endpoint is None) == (issuer is None):
        return (
            "oauth['grant'] is 'enterprise' with "
            + ("both" if endpoint is not None else "neither")
            + " oauth['idp_token_endpoint'] and oauth['idp_issuer']",
            "give the token endpoint of your enterprise identity provider, or its issuer to "
            "find the endpoint in its metadata (RFC 8414, OpenID Connect Discovery): one of them",
        )
    for key, what in (
        ("idp_client_id", "the client_id this client has at your enterprise identity provider"),
        ("client_id", "the client_id this client has at the MCP server's authorization server"),
    ):
        if value.get(key) is None:
            return (f"oauth['grant'] is 'enterprise' but oauth[{key!r}] is not set", f"give {what}")
    key = "idp_token_endpoint" if endpoint is not None else "idp_issuer"
    try:
        parts = urlsplit(value[key])
        usable = parts.scheme.lower() in ("https", "http") and bool(parts.hostname)
    except ValueError:  # an unbalanced [ in the host, a bad port
        usable = False
    if not usable:
        return (
            f"oauth[{key!r}] is not an http(s) URL with a host",
            "give the identity provider's URL, https://...",
        )
    if value.get("client_metadata_url") is not None:
        return (
            "oauth['grant'] is 'enterprise' with a client_metadata_url",
            "the MCP authorization server knows this client by its pre-registered client_id "
            "(and client_secret): remove client_metadata_url",
        )
    return None


def declared_extensions(
    extensions: Mapping[str, Mapping[str, Any]], oauth: Mapping[str, Any], enabled: bool
) -> Mapping[str, Mapping[str, Any]]:
    """The extensions the client declares (``capabilities.extensions``, SEP-2133): the spec's,
    and with ``grant: enterprise`` (OAuth ``enabled``) this one too, unless the spec already
    declares it with settings of its own."""
    if not enabled or oauth.get("grant") != ENTERPRISE_GRANT or EXTENSION in extensions:
        return extensions
    return {**extensions, EXTENSION: {}}
