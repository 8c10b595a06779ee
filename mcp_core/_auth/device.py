"""The device authorization grant (RFC 8628), pure pieces: the device authorization request
and its answer, the token endpoint's poll and what its answers mean, and ``DeviceLogin``, the
state of one device login between polls.

A device login needs no browser on this machine: the authorization server hands out a
``user_code`` and a ``verification_uri`` the user visits on any device, while the client polls
the token endpoint with the ``device_code`` until the user approved or denied, or the code
expired. The ``device_code`` is a credential (whoever holds it gets the token): no error
message or ``repr`` here shows it. The ``user_code`` is meant to be shown to the user, and
only to the user: ``repr`` hides it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._vocabulary.errors import AuthorizationFailed
from .._vocabulary.urls import REDACTED, redact_url
from .._wire.json import loads
from .clients import ClientAuth, _answer
from .metadata import AuthorizationServerMetadata, OAuthRequest, require_secure
from .oauth import _token_request

__all__ = [
    "DEFAULT_INTERVAL",
    "DEVICE_CODE_GRANT",
    "SLOW_DOWN_STEP",
    "DeviceAuthorization",
    "DeviceLogin",
    "device_authorization_request",
    "device_endpoint",
    "device_token_request",
    "parse_device_authorization",
    "poll_answer",
]

DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"  # RFC 8628 §3.4
# RFC 8628 §3.2: "If no value is provided, clients MUST use 5 as the default."
DEFAULT_INTERVAL = 5.0
# RFC 8628 §3.5 slow_down: "the interval MUST be increased by 5 seconds for this and all
# subsequent requests".
SLOW_DOWN_STEP = 5.0
# A poll that got no answer (a timeout, a connection error, HTTP 429 or 5xx): RFC 8628 §3.5,
# "clients MUST unilaterally reduce their polling frequency before retrying. The use of an
# exponential backoff algorithm ... such as doubling the polling interval ... is RECOMMENDED";
# doubled from at least this many seconds, and never beyond the code's expiry anyway.
_BACKOFF_FLOOR = 1.0
_WHAT = "the device authorization endpoint"


def device_endpoint(server: AuthorizationServerMetadata) -> str:
    """The server's ``device_authorization_endpoint`` (RFC 8628 §4), or ``AuthorizationFailed``
    saying the server offers no device login."""
    endpoint = server.device_authorization_endpoint
    if endpoint is None:
        raise AuthorizationFailed(
            "unsupported_grant_type",
            f"the authorization server {redact_url(server.issuer)!r} has no "
            "device_authorization_endpoint in its metadata (RFC 8628 §4): it offers no device "
            "login; use another oauth grant for this server",
        )
    return endpoint


def device_authorization_request(
    endpoint: str, *, auth: ClientAuth, scope: str | None, resource: str
) -> OAuthRequest:
    """RFC 8628 §3.1: ``client_id``, ``scope`` when given and the RFC 8707 ``resource`` (MCP
    sends it on every authorization request), authenticated as at the token endpoint (a
    public client sends its ``client_id`` only)."""
    fields = [("scope", scope)] if scope is not None else []
    return _token_request(endpoint, auth, [*fields, ("resource", resource)])


def device_token_request(
    token_endpoint: str, *, auth: ClientAuth, device_code: str
) -> OAuthRequest:
    """RFC 8628 §3.4: ``grant_type=urn:ietf:params:oauth:grant-type:device_code``,
    ``device_code`` and ``client_id``."""
    fields = [("grant_type", DEVICE_CODE_GRANT), ("device_code", device_code)]
    return _token_request(token_endpoint, auth, fields)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceAuthorization:
    """A device authorization answer (RFC 8628 §3.2). ``repr`` hides both codes."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: float
    interval: float

    def __repr__(self) -> str:
        return (
            f"DeviceAuthorization(device_code={REDACTED!r}, user_code={REDACTED!r}, "
            f"verification_uri={self.verification_uri!r}, "
            f"verification_uri_complete={_shown(self.verification_uri_complete)!r}, "
            f"expires_in={self.expires_in!r}, interval={self.interval!r})"
        )


def _shown(url: str | None) -> str | None:
    return None if url is None else redact_url(url)


def _seconds(value: object) -> float | None:
    """A positive-or-zero whole or fractional number of seconds (a numeric string too)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def parse_device_authorization(status: int, body: bytes) -> DeviceAuthorization:
    """Check a device authorization answer (RFC 8628 §3.2): ``device_code``, ``user_code``,
    ``verification_uri`` (https, or http on this machine) and ``expires_in`` are required;
    ``interval`` defaults to 5 seconds. An OAuth error is ``AuthorizationFailed`` with its
    code; an answer that cannot be read, ``UnreadableAnswer`` (it may pass); one that lacks
    a required member, ``AuthorizationFailed`` naming the member (never a value)."""
    document = _answer(status, body, _WHAT)
    device_code = document.get("device_code")
    user_code = document.get("user_code")
    uri = document.get("verification_uri")
    complete = document.get("verification_uri_complete")
    for name, value in (
        ("device_code", device_code),
        ("user_code", user_code),
        ("verification_uri", uri),
    ):
        if not isinstance(value, str) or not value:
            raise AuthorizationFailed(None, f"{_WHAT}'s answer has no {name} (RFC 8628 §3.2)")
    assert isinstance(device_code, str) and isinstance(user_code, str) and isinstance(uri, str)
    expires_in = _seconds(document.get("expires_in"))
    if expires_in is None:
        raise AuthorizationFailed(
            None, f"{_WHAT}'s answer has no expires_in in seconds (RFC 8628 §3.2)"
        )
    interval = document.get("interval")
    seconds = DEFAULT_INTERVAL if interval is None else _seconds(interval)
    if seconds is None:
        raise AuthorizationFailed(None, f"{_WHAT}'s answer has an interval that is not seconds")
    require_secure(uri, "the verification_uri")
    if not isinstance(complete, str) or not complete:
        complete = None
    else:
        require_secure(complete, "the verification_uri_complete")
    return DeviceAuthorization(
        device_code=device_code,
        user_code=user_code,
        verification_uri=uri,
        verification_uri_complete=complete,
        expires_in=expires_in,
        interval=seconds,
    )


def poll_answer(status: int, body: bytes) -> str | None:
    """What a poll's answer says before it is read as a token answer (RFC 8628 §3.5): the
    error ``"authorization_pending"`` or ``"slow_down"`` (poll again), or ``None`` (anything
    else: a token answer, or what ``parse_token_response`` makes of it). ``access_denied`` and
    ``expired_token`` raise their own ``AuthorizationFailed``, saying what the user can do."""
    if status != 400:  # RFC 6749 §5.2: the token endpoint's errors are 400
        return None
    try:
        document = loads(body)
    except (ValueError, RecursionError):
        return None
    code = document.get("error") if isinstance(document, dict) else None
    if code == "access_denied":
        raise AuthorizationFailed(
            code,
            "the device login was denied at the authorization server (RFC 8628 §3.5): the "
            "user said no; a new login starts over",
        )
    if code == "expired_token":
        raise _expired()
    return code if code in ("authorization_pending", "slow_down") else None


def _expired() -> AuthorizationFailed:
    return AuthorizationFailed(
        "expired_token",
        "the device login's code expired before the login was approved (RFC 8628 §3.5): log in "
        "again (mcp-client login --device SERVER, or start the client again) and approve the "
        "new code in time",
    )


@dataclass(slots=True)
class DeviceLogin:
    """One device login under way, on the machine's clock: the ``device_code`` to poll with,
    when the next poll is ``due``, the ``interval`` between polls, and when the code
    ``expires_at``. ``repr`` hides the code."""

    device_code: str
    interval: float
    due: float
    expires_at: float

    def __repr__(self) -> str:
        return (
            f"DeviceLogin(device_code={REDACTED!r}, interval={self.interval!r}, "
            f"due={self.due!r}, expires_at={self.expires_at!r})"
        )

    @classmethod
    def begin(cls, answer: DeviceAuthorization, now: float) -> DeviceLogin:
        """The first poll waits one interval (RFC 8628 §3.4: the user needs time anyway)."""
        return cls(
            answer.device_code, answer.interval, now + answer.interval, now + answer.expires_in
        )

    def wait(self, now: float, *, slow_down: bool = False, backoff: bool = False) -> None:
        """The next poll after this one: ``interval`` from ``now``, grown by 5 seconds for
        good on ``slow_down``, doubled (from at least 1 s) after a poll that got no answer."""
        if slow_down:
            self.interval += SLOW_DOWN_STEP
        elif backoff:
            self.interval = max(self.interval, _BACKOFF_FLOOR) * 2
        self.due = now + self.interval

    def expired(self, now: float) -> AuthorizationFailed | None:
        """The refusal of a code past its ``expires_in``, else ``None``."""
        return _expired() if now >= self.expires_at else None
