"""The driver's side of a device login (RFC 8628), the same for both drivers: the core's
``ShowDeviceCode`` action as the ``DeviceCode`` the ``on_device_code=`` callback gets, the
default way of showing it (a few lines on stderr, as a login prompt would), and what a
callback that failed becomes (``AuthorizationAbandoned``: the login ends, naming the
exception's class only).

The user code is for the user's eyes: it reaches the callback (or stderr), never a log record
or a ``repr``. The device code never leaves the core.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from mcp_core import AuthorizationAbandoned, ShowDeviceCode
from mcp_core.driver import redact_url

__all__ = [
    "DeviceCode",
    "device_code_failed",
    "device_code_of",
    "instructions",
    "show_device_code",
    "show_on_stderr",
]

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class DeviceCode:
    """What to show the user for a device login (RFC 8628 §3.3): visit ``verification_uri``
    on any device (a phone, another computer) and enter ``user_code``; or open
    ``verification_uri_complete`` (the same URI with the code in it; ``None`` when the
    authorization server gave none), a good target for a QR code. The code is good for
    ``expires_in`` seconds; the client polls meanwhile and goes on by itself once the user
    approved. ``server`` is the name of the MCP server the login is for. ``repr`` hides the
    user code (keep it out of logs: it is only for the user)."""

    server: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: float

    def __repr__(self) -> str:
        complete = self.verification_uri_complete
        return (
            f"DeviceCode(server={self.server!r}, user_code='[redacted]', "
            f"verification_uri={redact_url(self.verification_uri)!r}, "
            f"verification_uri_complete={None if complete is None else redact_url(complete)!r}, "
            f"expires_in={self.expires_in!r})"
        )


def device_code_of(action: ShowDeviceCode, server: str) -> DeviceCode:
    return DeviceCode(
        server=server,
        user_code=action.user_code,
        verification_uri=action.verification_uri,
        verification_uri_complete=action.verification_uri_complete,
        expires_in=action.expires_in,
    )


def _duration(seconds: float) -> str:
    if seconds >= 120:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} seconds"


def instructions(code: DeviceCode) -> str:
    """The lines that tell the user what to do, without a trailing newline."""
    lines = [
        f"To log in to server {code.server!r}, visit {code.verification_uri}",
        f"and enter the code {code.user_code} (within {_duration(code.expires_in)}).",
    ]
    if code.verification_uri_complete is not None:
        lines.append(f"Or open {code.verification_uri_complete}")
    return "\n".join(lines)


def show_on_stderr(code: DeviceCode, stream: TextIO | None = None) -> None:
    """The default ``on_device_code``: the instructions on stderr (``stream``)."""
    out = sys.stderr if stream is None else stream
    out.write(instructions(code) + "\n")
    out.flush()


def device_code_failed(exc: BaseException, clock: Clock) -> AuthorizationAbandoned:
    """The callback raised: the login ends, naming the exception's class only (its message
    might quote the code)."""
    reason = f"the on_device_code callback raised {type(exc).__name__}"
    return AuthorizationAbandoned(now=clock(), reason=reason)


def show_device_code(
    action: ShowDeviceCode,
    callback: Callable[[DeviceCode], object] | None,
    server: str,
    clock: Clock,
) -> AuthorizationAbandoned | None:
    """``ShowDeviceCode`` in the blocking driver: ``callback`` (a plain function; an async one
    given to the blocking driver is never awaited: its coroutine is closed) or
    ``show_on_stderr``; the event to feed when it failed, else ``None``."""
    code = device_code_of(action, server)
    try:
        if callback is None:
            show_on_stderr(code)
            return None
        answer = callback(code)
    except Exception as exc:
        return device_code_failed(exc, clock)
    if inspect.iscoroutine(answer):
        answer.close()
    return None
