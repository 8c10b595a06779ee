"""``Spec``: what one server is and how to talk to it.

A spec is validated once, when it is built, and is immutable afterwards: a refused spec raises
``InvalidSpec`` and nothing is started. Every message that shows a spec shows it *redacted*:
header values, env values, every arg, URL userinfo, query and fragment become ``[redacted]``
(no secret reaches an exception, a ``repr``, a ``Status``, a log line or a replay file).
Names (header names, env names, field names) and the command, scheme, host and path are kept,
because they are what a user needs to find the mistake.

The redacted form is also *replayable*: ``Spec.from_mapping(spec.redacted())`` builds a spec
again (args keep their count, URLs still parse), which is what the replay format stores.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal, TypedDict, get_args
from urllib.parse import urlsplit

from .._vocabulary.errors import InvalidSpec
from .._vocabulary.status import SessionEra
from .._vocabulary.urls import is_client_id_metadata_url
from .client_info import client_info_problem
from .enterprise import enterprise_problem
from .extensions import check_extensions
from .redaction import (
    ENV_NAME,
    HEADER_NAME,
    OAUTH_KEYS,
    OAUTH_TEXT,
    TIMEOUT_FIELDS,
    path_problem,
    redact_mapping,
)

__all__ = [
    "OAUTH_KEYS",
    "Concurrency",
    "Era",
    "GroupSpecFields",
    "OAuthGrant",
    "Spec",
    "SpecFields",
    "proxy_url_problem",
    "redact_mapping",
]

Concurrency = Literal["stateless", "pooled", "serialized"]
Era = Literal["auto", SessionEra]  # "auto": probe, then the era the server speaks
OAuthGrant = Literal[
    "authorization_code", "client_credentials", "jwt_bearer", "enterprise", "device_code"
]


class GroupSpecFields(TypedDict, total=False):
    """The fields of a ``Spec`` a ``ClientGroup`` takes as keywords and lays over every
    server's own (``ClientGroup(specs, call_timeout=5)``): all but ``name`` (each server is
    named by its key) and ``fail_fast`` (the group's keyword of that name is its own, about
    its waits). ``SpecFields`` adds those two."""

    command: str | None
    args: Sequence[str]
    env: Mapping[str, str]
    cwd: str | None
    url: str | None
    headers: Mapping[str, str]
    concurrency: Concurrency | None
    pool_size: int
    queue_limit: int
    call_timeout: float
    max_call_timeout: float
    init_timeout: float
    reconnect: float
    max_backoff: float
    era: Era
    prices: Mapping[str, int]
    max_message_bytes: int
    max_list_pages: int
    probe_timeout: float
    shutdown_grace: float
    jitter_seed: int
    oauth: Mapping[str, Any]
    verify: bool | str
    cert: str | tuple[str, str] | None
    proxy: str | bool | None
    extensions: Mapping[str, Mapping[str, Any]]
    client_info: Mapping[str, str]


class SpecFields(GroupSpecFields, total=False):
    """The fields of a ``Spec`` as keywords (``Client(name=..., command=..., call_timeout=...)``),
    so that a type checker refuses a misspelled one. Each is as ``Spec`` documents it; a test
    keeps the two the same."""

    name: str
    fail_fast: bool


_GENERIC_HINT = "fix this field and build the spec again"


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Spec:
    """One MCP server: either a ``command`` to spawn (stdio) or a ``url`` (HTTP).

    ``pool_size`` requests are in flight at once (``stateless``; ``pooled`` runs that many
    processes or sessions, one request each; ``serialized`` has one), and up to
    ``queue_limit`` more wait, first in first out: a queued call holds only its event (about
    half a KiB in the core). A call beyond both is refused at once with ``Busy``, nothing sent.

    ``oauth`` (HTTP only) configures the OAuth client: ``client_id`` and
    ``client_secret`` of a pre-registered client, ``scope`` to ask for instead of the one the
    server suggests, ``grant`` (``authorization_code``, a person in a browser, or
    ``client_credentials``, a machine; ``jwt_bearer``, a workload; ``enterprise``, a user of
    an enterprise identity provider; ``device_code``, a person approving on another device,
    RFC 8628), ``redirect_port`` of the loopback redirect listener
    (0, the default: any free port), ``client_metadata_url`` (a Client ID Metadata Document),
    ``key_file`` (a PEM private key that signs ``private_key_jwt`` assertions, for
    ``client_credentials``; ``key_id``, the ``kid`` its assertions name, defaults to the key's
    RFC 7638 thumbprint), ``assertion_file`` (for ``grant: jwt_bearer``, workload identity,
    SEP-1933: the file the platform keeps its JWT for this workload in, read afresh for each
    token request, RFC 7523 §2.1), the keys of ``grant: enterprise`` (enterprise-managed
    authorization, SEP-990: ``id_token_file``, the user's ID token from the enterprise
    single sign-on, read afresh for each exchange; ``idp_token_endpoint`` or ``idp_issuer``,
    ``idp_client_id`` and ``idp_client_secret`` at the identity provider; ``client_id`` and
    ``client_secret`` at the MCP authorization server; see ``_config/enterprise.py``),
    ``timeout`` (seconds each request of the authorization layer may take, 10 by default,
    never past the connect attempt's ``init_timeout``), ``allow_insecure_http`` (send a
    bearer token to a plain ``http://`` server that is not on this machine: refused unless
    true, RFC 6750 §5.3), ``dpop`` (``"auto"``, the default: bind tokens to a key of the
    client's, RFC 9449 DPoP, where the authorization server supports it and the driver can
    sign; true: require it; false: never) and ``enabled``: OAuth runs for every
    URL server without an ``Authorization`` header unless ``enabled`` is false, in which case
    a 401 is a permanent connect failure. ``client_secret`` is redacted wherever a spec is
    shown.

    The network (HTTP only; the driver does the I/O): ``verify`` is True (certificates
    checked against the system's CAs), False (not checked: the driver logs a warning) or the
    path of a PEM CA bundle (or a directory of hashed certificates) trusted in addition to
    the system's; ``cert`` is a client certificate for mutual TLS: the path of one PEM file
    holding the certificate and its key, or a ``(certificate, key)`` pair of paths; ``proxy``
    is None (the driver follows ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``), False (no
    proxy, whatever the environment says) or ``http://[user:password@]host[:port]`` (every
    request goes through it). Paths are shown in messages (a path is not a secret, like
    ``command``); the proxy's user name and password are redacted like URL userinfo.

    ``extensions`` are the extensions the client declares to the server (SEP-2133):
    ``{"io.modelcontextprotocol/tasks": {}}``, each identifier ``vendor-prefix/name`` with its
    settings (a JSON object, ``{}`` for none). None is declared unless given. They go in
    ``capabilities.extensions`` on ``initialize`` and on every 2026-07-28 request; a server's
    own are in ``Status.extensions``. Settings are sent to the server as they are and shown
    unredacted: they are no place for a secret.

    Construction validates every field and raises ``InvalidSpec`` (with the spec redacted in
    the message) on the first problem found. ``args`` may be given as a list and is stored as
    a tuple; ``env``, ``headers``, ``prices``, ``extensions`` and ``client_info`` are stored
    as read-only copies, so a spec never changes after it was checked.

    ``client_info`` names the client to the server (``initialize``'s ``clientInfo``, and every
    2026-07-28 request's ``_meta``): ``{"name": ..., "version": ..., "title": ...}``, name and
    version required, title optional (MCP 2025-11-25 basic/lifecycle); empty, the default,
    sends this client's own name and version.
    """

    name: str
    command: str | None = None
    args: Sequence[str] = ()  # stored as a tuple
    env: Mapping[str, str] = field(default_factory=_empty)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=_empty)
    concurrency: Concurrency | None = None
    pool_size: int = 8
    queue_limit: int = 1024
    call_timeout: float = 30.0
    max_call_timeout: float = 300.0
    init_timeout: float = 60.0
    reconnect: float = 1.0
    max_backoff: float = 60.0
    fail_fast: bool = False
    era: Era = "auto"
    prices: Mapping[str, int] = field(default_factory=_empty)
    max_message_bytes: int = 8 * 1024 * 1024
    max_list_pages: int = 1000
    probe_timeout: float = 2.0
    shutdown_grace: float = 2.0
    jitter_seed: int = 0
    oauth: Mapping[str, Any] = field(default_factory=_empty)
    verify: bool | str = True
    cert: str | tuple[str, str] | None = None
    proxy: str | bool | None = None
    extensions: Mapping[str, Mapping[str, Any]] = field(default_factory=_empty)
    client_info: Mapping[str, str] = field(default_factory=_empty)

    def __post_init__(self) -> None:
        try:
            self._validate()
        except _Problem as problem:
            raise _invalid(str(problem), self._user_fields(), problem.hint) from None

    def _validate(self) -> None:
        _check_str(self.name, "name")
        if self.command is None and self.url is None:
            raise _Problem(
                "neither 'command' nor 'url' is set",
                "give 'command' (a local stdio server) or 'url' (an HTTP server)",
            )
        if self.command is not None and self.url is not None:
            raise _Problem(
                "both 'command' and 'url' are set",
                "keep 'command' for a local stdio server or 'url' for an HTTP server, not both",
            )
        self._set("args", _check_args(self.args))
        self._set("env", _check_names(self.env, "env", ENV_NAME))
        self._set("headers", _check_names(self.headers, "headers", HEADER_NAME))
        if self.command is not None:
            _check_str(self.command, "command")
            if self.cwd is not None:
                _check_str(self.cwd, "cwd")
            if self.headers:
                raise _Problem(
                    "'headers' is set for a stdio server",
                    "headers only apply to 'url' servers; pass secrets to a stdio server in 'env'",
                )
        else:
            for name in ("args", "env", "cwd"):
                if getattr(self, name) not in ((), {}, None):
                    raise _Problem(
                        f"{name!r} is set for an HTTP server",
                        f"{name!r} only applies to 'command' servers; remove it",
                    )
            _check_url(self.url)
        self._check_network()
        self._set("oauth", _check_oauth(self.oauth, self.url is not None, self.headers))
        self._check_numbers()
        _check_choice(self.concurrency, "concurrency", Concurrency, allow_none=True)
        _check_choice(self.era, "era", Era)
        if type(self.fail_fast) is not bool:
            raise _Problem(f"'fail_fast' must be true or false, got {_kind(self.fail_fast)}")
        self._set("prices", _check_prices(self.prices))
        try:
            self._set("extensions", check_extensions(self.extensions))
        except ValueError as exc:  # its message, then its hint when it has one
            raise _Problem(*exc.args) from None
        problem = client_info_problem(self.client_info)
        if problem is not None:
            raise _Problem(*problem)
        info = {key: text for key, text in self.client_info.items() if text is not None}
        self._set("client_info", MappingProxyType(info))

    def _check_network(self) -> None:
        """``verify``, ``cert`` and ``proxy``: HTTP only, paths that are paths, an http://
        proxy URL (its user name and password are never quoted)."""
        if self.command is not None:
            for name, default in (("verify", True), ("cert", None), ("proxy", None)):
                if getattr(self, name) is not default:
                    raise _Problem(
                        f"{name!r} is set for a stdio server",
                        f"{name!r} only applies to 'url' servers; remove it",
                    )
            return
        if type(self.verify) is not bool:
            if not isinstance(self.verify, str):
                raise _Problem(
                    "'verify' must be true, false or the path of a CA bundle, "
                    f"got {_kind(self.verify)}"
                )
            _check_path(self.verify, "verify")
        if self.cert is not None:
            self._set("cert", _check_cert(self.cert))
        proxy = self.proxy
        if proxy is True:
            raise _Problem(
                "'proxy' is true",
                "leave 'proxy' out (or null) to follow HTTPS_PROXY, HTTP_PROXY and NO_PROXY; "
                "false for no proxy; or give the proxy's URL",
            )
        if proxy is not None and proxy is not False:
            if not isinstance(proxy, str):
                raise _Problem(f"'proxy' must be a URL, false or null, got {_kind(proxy)}")
            problem = proxy_url_problem(proxy)
            if problem is not None:
                raise _Problem(f"'proxy' {problem}", _PROXY_HINT)

    def _check_numbers(self) -> None:
        for name in TIMEOUT_FIELDS:
            value = getattr(self, name)
            seconds = _positive_seconds(value)
            if seconds is None:
                raise _Problem(
                    f"{name!r} must be a positive number of seconds, got {_show_number(value)}"
                )
            self._set(name, seconds)
        for name, minimum in (
            ("pool_size", 1),
            ("queue_limit", 0),
            ("max_message_bytes", 1),
            ("max_list_pages", 1),
        ):
            value = getattr(self, name)
            if not _is_int(value) or value < minimum:
                got = _show_number(value)
                raise _Problem(f"{name!r} must be an integer >= {minimum}, got {got}")
        if not _is_int(self.jitter_seed):
            raise _Problem(f"'jitter_seed' must be an integer, got {_kind(self.jitter_seed)}")
        for low, high in (("call_timeout", "max_call_timeout"), ("reconnect", "max_backoff")):
            if getattr(self, high) < getattr(self, low):
                raise _Problem(
                    f"{high!r} ({getattr(self, high)}) is below {low!r} ({getattr(self, low)})",
                    f"raise {high!r} or lower {low!r}",
                )

    def _set(self, name: str, value: object) -> None:
        # Normalising copies in a frozen dataclass (args list -> tuple, dict -> read-only copy).
        object.__setattr__(self, name, value)

    def _user_fields(self) -> dict[str, object]:
        """The fields that differ from their defaults: what the user actually wrote."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            default = f.default_factory() if callable(f.default_factory) else f.default
            if f.name == "name" or value != default:
                out[f.name] = value
        return out

    # --- public surface ---------------------------------------------------------------------

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, object]) -> Spec:
        """Build a spec from a plain mapping (a config file entry, a replay header).

        Raises ``InvalidSpec`` for an unknown field (naming it), a missing ``name``, a wrong
        type or any other problem ``Spec(...)`` refuses.
        """
        if not isinstance(mapping, Mapping):
            raise _invalid(f"a spec must be a mapping, got {_kind(mapping)}", {}, _GENERIC_HINT)
        known = [f.name for f in fields(cls)]
        for key in mapping:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = (
                    f"did you mean {close[0]!r}?" if close else f"known fields: {', '.join(known)}"
                )
                raise _invalid(f"unknown field {_show_key(key)}", mapping, hint)
        if "name" not in mapping:
            raise _invalid(
                "the required field 'name' is missing", mapping, "give the server a name"
            )
        kwargs: dict[str, Any] = dict(mapping)
        return cls(**kwargs)

    @classmethod
    def build(cls, spec: Spec | Mapping[str, object] | None = None, /, **more: object) -> Spec:
        """``more`` fields on top of ``spec`` (a ``Spec``, a mapping, or nothing): what
        ``Client(spec, **fields)`` accepts. Raises ``InvalidSpec`` like ``from_mapping``."""
        if isinstance(spec, Spec):
            if not more:
                return spec
            spec = spec._user_fields()
        return cls.from_mapping({**(spec or {}), **more})

    @property
    def oauth_enabled(self) -> bool:
        """Whether a driver runs OAuth for this server: a ``url`` spec without an
        ``Authorization`` header whose ``oauth`` does not say ``enabled: false``."""
        return (
            self.url is not None
            and not _has_authorization(self.headers)
            and self.oauth.get("enabled", True) is True
        )

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """``'stdio'`` for a ``command`` spec, ``'http'`` for a ``url`` spec."""
        return "stdio" if self.command is not None else "http"

    def default_concurrency(self, era: str | None) -> Concurrency:
        """The in-flight policy to use once the era is known.

        An explicit ``concurrency`` wins. Otherwise stdio and modern HTTP are ``'stateless'``
        and legacy HTTP is ``'serialized'``. ``era`` is the era the session negotiated; when it
        is ``None`` (not known yet) the spec's own ``era`` is used unless it is ``'auto'``.
        """
        if self.concurrency is not None:
            return self.concurrency
        if self.transport == "stdio":
            return "stateless"
        known = era if era is not None else (None if self.era == "auto" else self.era)
        return "stateless" if known == "modern" else "serialized"

    def redacted(self, *, include_defaults: bool = True) -> dict[str, object]:
        """The spec as a plain dict with every secret replaced by ``[redacted]``.

        The result is JSON-serialisable and ``Spec.from_mapping`` accepts it, so it is what a
        replay file stores. With ``include_defaults=False`` only non-default fields are shown.
        """
        source = {f.name: getattr(self, f.name) for f in fields(self)}
        return redact_mapping(source if include_defaults else self._user_fields())

    def __hash__(self) -> int:
        # The generated hash would fail on the read-only mappings; hash their items instead,
        # so specs can key a dict (an era cache, a group's table).
        return hash(tuple(_frozen(getattr(self, f.name)) for f in fields(self)))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.redacted(include_defaults=False).items())
        return f"Spec({shown})"


def _frozen(value: object) -> object:
    """``value`` hashable: a mapping as the frozenset of its items, a list as a tuple, all the
    way down (equal mappings hash alike whatever their order)."""
    if isinstance(value, Mapping):
        return frozenset((key, _frozen(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


# --- validation helpers ----------------------------------------------------------------------


class _Problem(Exception):
    """One validation failure: a problem (never containing a secret) and a hint."""

    def __init__(self, problem: str, hint: str = _GENERIC_HINT) -> None:
        super().__init__(problem)
        self.hint = hint


def _invalid(problem: str, mapping: Mapping[str, object], hint: str) -> InvalidSpec:
    return InvalidSpec(f"invalid spec: {problem}; spec: {redact_mapping(mapping)!r}; {hint}")


def _kind(value: object) -> str:
    return type(value).__name__


def _show_key(key: object) -> str:
    return repr(key) if isinstance(key, str) and len(key) <= 64 else f"of type {_kind(key)}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive_seconds(value: object) -> float | None:
    """``value`` as float seconds, or None if it is not a positive finite real (bools refused)."""
    if not _is_number(value):
        return None
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except OverflowError:  # an int too large for a float
        return None
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def _show_number(value: object) -> str:
    # Numbers are never secrets; anything else is described by its type only.
    return repr(value) if _is_number(value) else _kind(value)


def _check_str(value: object, name: str) -> None:
    if not isinstance(value, str) or not value.strip():
        got = "an empty string" if isinstance(value, str) else _kind(value)
        raise _Problem(f"{name!r} must be a non-empty string, got {got}")
    if "\x00" in value:
        raise _Problem(f"{name!r} contains a NUL character")


def _check_args(value: object) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise _Problem(
            f"'args' must be a list of strings, got {_kind(value)}",
            'write args as a list, one element per argument: ["-y", "server"]',
        )
    for i, arg in enumerate(value):
        if not isinstance(arg, str):
            raise _Problem(f"args[{i}] must be a string, got {_kind(arg)}")
        if "\x00" in arg:
            raise _Problem(f"args[{i}] contains a NUL character")
    return tuple(value)


def _check_names(value: object, name: str, pattern: re.Pattern[str]) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise _Problem(f"{name!r} must be a mapping of strings to strings, got {_kind(value)}")
    for i, (key, item) in enumerate(value.items()):
        if not isinstance(key, str) or not pattern.fullmatch(key):
            raise _Problem(f"{name!r} name #{i} is not a valid name")
        if not isinstance(item, str):
            raise _Problem(f"{name}[{key!r}] must be a string, got {_kind(item)}")
        # A CR or LF in a header value would inject a header; NUL breaks the environment.
        if "\x00" in item or (name == "headers" and ("\r" in item or "\n" in item)):
            raise _Problem(f"{name}[{key!r}] contains a control character (NUL, CR or LF)")
        if name == "headers" and not _latin1(item):
            # HTTP/1.1 field values are bytes; a character beyond Latin-1 cannot be sent.
            raise _Problem(
                f"headers[{key!r}] has a character that HTTP headers cannot carry",
                "use ASCII in header values (encode anything else first, e.g. base64)",
            )
    return MappingProxyType(dict(value))


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _check_url(url: object) -> None:
    if not isinstance(url, str):
        raise _Problem(f"'url' must be a string, got {_kind(url)}")
    example = "write the full address, e.g. https://example.com/mcp"
    # urlsplit silently drops tabs and newlines (WHATWG), so look for them first.
    if any(c.isspace() or not c.isprintable() for c in url):
        raise _Problem("'url' contains whitespace or a control character", example)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port raises ValueError when it is invalid
    except ValueError:
        raise _Problem("'url' is not a valid URL (bad host or port)", example) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise _Problem("'url' must start with http:// or https://", example)
    if not parts.hostname:
        raise _Problem("'url' has no host", example)


_PROXY_HINT = "write it as http://[user:password@]host[:port], or false for no proxy"


def proxy_url_problem(url: str) -> str | None:
    """What makes ``url`` unusable as a proxy URL, worded to follow the name of where it came
    from (``'proxy' ...``, ``HTTPS_PROXY ...``), never quoting it; None if it is usable.

    Only ``http://`` proxies are supported: the client speaks to the proxy in clear and asks
    it for a tunnel (CONNECT), inside which an https server still gets TLS end to end.
    """
    if any(c.isspace() or not c.isprintable() for c in url):
        return "contains whitespace or a control character"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port raises ValueError when it is invalid
    except ValueError:
        return "is not a valid URL (bad host or port)"
    scheme = parts.scheme.lower()
    if scheme == "https":
        return (
            "is an https:// proxy: only http:// proxies are supported (the tunnel through "
            "one still carries TLS to an https server)"
        )
    if scheme != "http":
        return "must start with http:// (SOCKS and other kinds of proxy are not supported)"
    if not parts.hostname:
        return "has no host"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return "has a path, query or fragment; a proxy URL has none"
    return None


def _check_path(path: str, name: str) -> None:
    problem = path_problem(path)
    if problem is not None:
        raise _Problem(f"{name!r} {problem}")


def _check_cert(value: object) -> str | tuple[str, str]:
    if isinstance(value, str):
        _check_path(value, "cert")
        return value
    if (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(item, str) for item in value)
    ):
        _check_path(value[0], "cert[0] (the certificate)")
        _check_path(value[1], "cert[1] (the key)")
        return (value[0], value[1])
    raise _Problem(
        f"'cert' must be a path or a [certificate, key] pair of paths, got {_kind(value)}",
        "give the PEM file holding the certificate and its key, or the two files",
    )


def _check_choice(value: object, name: str, choices: object, *, allow_none: bool = False) -> None:
    allowed: tuple[str, ...] = get_args(choices)
    if (value is None and allow_none) or value in allowed:
        return
    shown = repr(value) if isinstance(value, str) and len(value) <= 32 else _kind(value)
    raise _Problem(f"{name!r} must be one of {', '.join(allowed)}, got {shown}")


def _check_prices(value: object) -> Mapping[str, int]:
    if not isinstance(value, Mapping):
        raise _Problem(f"'prices' must be a mapping of tool names to prices, got {_kind(value)}")
    for tool, price in value.items():
        if not isinstance(tool, str) or not tool:
            raise _Problem("'prices' keys must be non-empty tool names")
        if not _is_int(price) or price <= 0:
            got = _show_number(price)
            raise _Problem(f"prices[{tool!r}] must be a positive integer, got {got}")
    return MappingProxyType(dict(value))


def _has_authorization(headers: Mapping[str, str]) -> bool:
    return any(name.lower() == "authorization" for name in headers)


def _check_oauth(value: object, http: bool, headers: Mapping[str, str]) -> Mapping[str, Any]:
    """The ``oauth`` mapping, checked; the secret is never quoted."""
    if not isinstance(value, Mapping):
        raise _Problem(f"'oauth' must be a mapping, got {_kind(value)}")
    for key in value:
        if key not in OAUTH_KEYS:
            close = difflib.get_close_matches(key, OAUTH_KEYS, n=1) if isinstance(key, str) else []
            hint = (
                f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(OAUTH_KEYS)}"
            )
            raise _Problem(f"unknown key {_show_key(key)} in 'oauth'", hint)
    if not value:
        return MappingProxyType({})
    if not http:
        raise _Problem(
            "'oauth' is set for a stdio server",
            "OAuth only applies to 'url' servers; remove it",
        )
    for flag in ("enabled", "allow_insecure_http"):
        if flag in value and type(value[flag]) is not bool:
            raise _Problem(f"oauth[{flag!r}] must be true or false, got {_kind(value[flag])}")
    enabled = value.get("enabled", True)
    if "timeout" in value and _positive_seconds(value["timeout"]) is None:
        raise _Problem(
            "oauth['timeout'] must be a positive number of seconds, got "
            f"{_show_number(value['timeout'])}",
            "it bounds each request to the authorization server (10 s by default)",
        )
    if enabled and _has_authorization(headers):
        raise _Problem(
            "'oauth' is set but 'headers' sends an Authorization header of its own",
            "keep the header (a static token) or 'oauth', not both; or set oauth['enabled'] "
            "to false",
        )
    for name in OAUTH_TEXT:
        text = value.get(name)
        if text is not None and (not isinstance(text, str) or not text.strip() or "\x00" in text):
            got = _kind(text) if not isinstance(text, str) else "an empty string or a NUL"
            raise _Problem(f"oauth[{name!r}] must be a non-empty string, got {got}")
    grant = value.get("grant", "authorization_code")
    if grant not in get_args(OAuthGrant):
        shown = repr(grant) if isinstance(grant, str) and len(grant) <= 32 else _kind(grant)
        raise _Problem(
            f"oauth['grant'] must be one of {', '.join(get_args(OAuthGrant))}, got {shown}"
        )
    port = value.get("redirect_port", 0)
    if not _is_int(port) or not 0 <= port <= 65535:
        raise _Problem(
            f"oauth['redirect_port'] must be an integer from 0 to 65535, got {_show_number(port)}",
            "0 (the default) lets the listener take any free port",
        )
    if value.get("client_secret") is not None and value.get("client_id") is None:
        raise _Problem(
            "oauth['client_secret'] is set without oauth['client_id']",
            "give the client_id the authorization server issued with the secret",
        )
    if value.get("key_file") is not None and grant != "client_credentials":
        raise _Problem(
            "oauth['key_file'] is set but the grant is not 'client_credentials'",
            "private_key_jwt signs client_credentials requests: set oauth['grant'] to "
            "'client_credentials', or remove 'key_file'",
        )
    if value.get("key_id") is not None and value.get("key_file") is None:
        raise _Problem(
            "oauth['key_id'] is set without oauth['key_file']",
            "key_id names the key of key_file in the assertions it signs",
        )
    _check_jwt_bearer(value, grant)
    problem = enterprise_problem(value, grant)
    if problem is not None:
        raise _Problem(*problem)
    dpop = value.get("dpop", "auto")
    if dpop != "auto" and type(dpop) is not bool:
        raise _Problem(
            f"oauth['dpop'] must be \"auto\", true or false, got {_kind(dpop)}",
            "auto (the default) binds tokens to a key (DPoP, RFC 9449) where the authorization "
            "server supports it",
        )
    metadata_url = value.get("client_metadata_url")
    if metadata_url is not None and not is_client_id_metadata_url(metadata_url):
        raise _Problem(
            "oauth['client_metadata_url'] is not a Client ID Metadata Document URL",
            "it must be https with a path, no fragment and no user name or password",
        )
    return MappingProxyType(dict(value))


def _check_jwt_bearer(value: Mapping[str, Any], grant: object) -> None:
    """Workload identity (SEP-1933): the platform's JWT is the only credential."""
    has_file = value.get("assertion_file") is not None
    if has_file and grant != "jwt_bearer":
        raise _Problem(
            "oauth['assertion_file'] is set but the grant is not 'jwt_bearer'",
            "the platform's JWT is presented with grant 'jwt_bearer' (RFC 7523): set "
            "oauth['grant'] to 'jwt_bearer', or remove 'assertion_file'",
        )
    if grant != "jwt_bearer":
        return
    # Without a file, the client's assertion= callback supplies the JWT (checked there).
    if value.get("client_secret") is not None or value.get("client_metadata_url") is not None:
        raise _Problem(
            "oauth['grant'] is 'jwt_bearer' with a client_secret or client_metadata_url",
            "the platform's JWT is the workload's only credential: remove them (client_id "
            "may stay)",
        )
