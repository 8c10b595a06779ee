"""A request of the authorization layer's own (metadata, registration, token) and what its
answer has shown so far.

Every answer is read up to ``AUTH_MAX_BYTES``: a ``Content-Length`` that announces more is
refused before a byte of the body is read, and a body that grows past it is cut there. The
answers of the registration and token endpoints hold credentials (``secret``): a recording
does not keep them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._config.oauth_settings import AUTH_MAX_BYTES
from .._transport.http_parts import find_header
from .._vocabulary.events import HttpBodyReceived, HttpResponseStarted
from .._vocabulary.phases import AuthPhase

__all__ = ["Fetch"]

_CAP = f"the {AUTH_MAX_BYTES // 1024} KiB an answer may have"
# What each request of the layer is called in an error (``AuthorizationUnavailable.step``).
_STEPS = {
    AuthPhase.DISCOVERING_RESOURCE: "protected resource metadata",
    AuthPhase.DISCOVERING_SERVER: "authorization server metadata",
    AuthPhase.REGISTERING: "registration",
    AuthPhase.EXCHANGING: "token",
    AuthPhase.REFRESHING: "refresh",
    AuthPhase.EXCHANGING_IDENTITY: "identity provider token exchange",
    AuthPhase.DISCOVERING_IDENTITY_PROVIDER: "identity provider metadata",
    AuthPhase.DEVICE_AUTHORIZING: "device authorization",  # RFC 8628 §3.1
    AuthPhase.POLLING: "token",  # RFC 8628 §3.4
}

# The requests whose answers hold credentials (a client secret, a token, a device code; the
# token exchange's request holds the ID token, its answer the ID-JAG).
_SECRET = (
    AuthPhase.REGISTERING,
    AuthPhase.EXCHANGING,
    AuthPhase.REFRESHING,
    AuthPhase.EXCHANGING_IDENTITY,
    AuthPhase.DEVICE_AUTHORIZING,
    AuthPhase.POLLING,
)


@dataclass(slots=True, eq=False)
class Fetch:
    """A request of the layer's own (made in ``phase``) and what its answer has shown."""

    phase: AuthPhase
    url: str
    timeout: float  # seconds it was given
    deadline: float
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    body: bytearray = field(default_factory=bytearray)

    @property
    def step(self) -> str:
        """What the request is called in an error."""
        return _STEPS[self.phase]

    @property
    def secret(self) -> bool:
        return self.phase in _SECRET

    def read(self, event: HttpResponseStarted | HttpBodyReceived) -> str | None:
        """Take the answer's head or a part of its body; what is wrong when it is too large."""
        if isinstance(event, HttpResponseStarted):
            self.status, self.headers = event.status, event.headers
            # Refused before a byte of the body is read when its length says it is too large.
            length = (find_header(event.headers, "content-length") or "").strip()
            return f"announced {_size(length)}, over {_CAP}" if _too_large(length) else None
        self.body += event.data
        return f"sent more than {_CAP}" if len(self.body) > AUTH_MAX_BYTES else None


def _too_large(length: str) -> bool:
    """Whether a ``Content-Length`` value announces more than ``AUTH_MAX_BYTES``."""
    if not (length.isascii() and length.isdigit()):
        return False  # absent or malformed: the bytes themselves are counted
    return len(length) > 15 or int(length) > AUTH_MAX_BYTES


def _size(digits: str) -> str:
    """A ``Content-Length`` for a message: "an answer of N bytes", or of more than 10^15."""
    return f"an answer of {int(digits) if len(digits) <= 15 else 'more than 10^15'} bytes"
