"""URLs as the client names and compares them: redacted for messages, split and checked as
http(s), their origin, the canonical URI of a server (RFC 8707), loopback hosts, and the shape of
a Client ID Metadata Document URL.

Below every other module of the core but the errors: a spec's redaction, an action's repr and the
authorization layer's checks all use one definition.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import SplitResult, urlsplit

from .errors import AuthorizationFailed

__all__ = [
    "REDACTED",
    "canonical_resource",
    "is_client_id_metadata_url",
    "is_loopback",
    "origin_of",
    "redact_url",
    "split_http",
    "url_origin",
]

REDACTED = "[redacted]"
# Userinfo sits in the URL authority, where "[" and "]" mean an IPv6 literal: urllib refuses
# "http://[redacted]@host". The percent-encoded form decodes to "[redacted]" and still parses.
_REDACTED_USERINFO = "%5Bredacted%5D"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def redact_url(url: str) -> str:
    """Replace the userinfo, query and fragment of ``url``; keep scheme, host, port and path.

    Works on any string, also one that is not a valid URL: whatever precedes the last ``@`` of
    the authority is treated as userinfo.
    """
    rest, hash_sign, _fragment = url.partition("#")
    rest, question, _query = rest.partition("?")
    slashes = rest.find("//")
    start = slashes + 2 if slashes >= 0 else 0
    end = rest.find("/", start)
    end = len(rest) if end < 0 else end
    authority = rest[start:end]
    if "@" in authority:
        authority = f"{_REDACTED_USERINFO}@{authority.rpartition('@')[2]}"
    return (
        rest[:start]
        + authority
        + rest[end:]
        + (f"?{REDACTED}" if question else "")
        + (f"#{REDACTED}" if hash_sign else "")
    )


def split_http(url: str, what: str) -> SplitResult:
    """``url`` split, or ``AuthorizationFailed`` when it is not an absolute http(s) URL."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise AuthorizationFailed(None, f"{what} {redact_url(url)!r} is not an http(s) URL")
    return parts


def url_origin(parts: SplitResult) -> str:
    """``scheme://host[:port]`` lowercased, without userinfo, the default port elided."""
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    return (
        f"{scheme}://{host}"
        if port in (None, _DEFAULT_PORTS[scheme])
        else f"{scheme}://{host}:{port}"
    )


def canonical_resource(server_url: str) -> str:
    """The canonical URI of an MCP server, for the RFC 8707 ``resource`` parameter.

    RFC 8707 §2 (an absolute URI, no fragment) as MCP 2025-11-25 ``basic/authorization``
    "Canonical Server URI" (and 2026-07-28 ``basic/authorization`` "Canonical Server URI")
    narrows it: lowercase scheme and host, no trailing slash for the root ("implementations
    SHOULD consistently use the form without the trailing slash"). The default port is elided
    (RFC 3986 §6.2.3) and userinfo dropped, so credentials in a configured URL never travel
    to an authorization server. A query is kept (RFC 8707 §2: "SHOULD NOT", but allowed when
    it identifies the resource). ``AuthorizationFailed`` for a URL that is not http(s)."""
    parts = split_http(server_url, "the server URL")
    path = "" if parts.path == "/" else parts.path
    return url_origin(parts) + path + (f"?{parts.query}" if parts.query else "")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's host, brackets allowed) is this machine: ``localhost``, an
    address in 127.0.0.0/8 or ``::1`` (RFC 8252 §8.3 and OAuth 2.1 §1.5 allow plain http
    there, the traffic never leaving the machine)."""
    host = host.lower().removeprefix("[").removesuffix("]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of an http(s) ``url`` (no userinfo, path or query): how an
    error names where a request went. ``AuthorizationFailed`` for a URL that is not http(s)."""
    return url_origin(split_http(url, "the URL"))


def is_client_id_metadata_url(url: str) -> bool:
    """Whether ``url`` can be a Client ID Metadata Document ``client_id``
    (draft-ietf-oauth-client-id-metadata-document-00 §3, required by MCP 2025-11-25
    ``basic/authorization`` "Client ID Metadata Documents"): https, a path other than ``/``,
    no ``.``/``..`` segment, no fragment, no username or password."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    segments = parts.path.split("/")
    return (
        parts.scheme == "https"
        and bool(parts.hostname)
        and parts.path not in ("", "/")
        and "." not in segments
        and ".." not in segments
        and not parts.fragment
        and "@" not in parts.netloc
    )
