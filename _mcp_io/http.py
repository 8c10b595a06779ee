"""The socket side of both drivers' HTTP executors: what needs an OS but no event loop.

The pure side (request heads, response parsing, the pool's bookkeeping, the start order) is
``mcp_core._h11wire``. Wording: a failure reason never quotes a URL or a header value (they
may hold a secret): OS errors are worded from their number, and an h11 error whose message
quotes something (h11 quotes an offending header with repr()) keeps only its class name.
"""

from __future__ import annotations

import os
import select
import socket
from typing import TYPE_CHECKING

import h11

from mcp_core._h11wire import FAILURES, HttpError

if TYPE_CHECKING:
    import ssl

__all__ = ["READ_SIZE", "TlsContext", "is_readable", "os_message", "reason"]

# Bytes asked of the socket per read: one read's h11 events become at most one body event.
READ_SIZE = 65536
_REASON_LENGTH = 200


def is_readable(sock: socket.socket) -> bool:
    """Whether a read would not block: on an idle pooled connection, the server closed it (or
    sent something unasked), so it must not be used. A closed socket counts as readable."""
    if sock.fileno() < 0:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def os_message(exc: OSError) -> str:
    """``"[Errno 111] Connection refused"``: an OS error worded from its number (asyncio adds
    the address to a failed connect's message), a TLS or DNS error as its own message."""
    errno = exc.errno
    if isinstance(errno, int) and errno > 0 and type(exc).__module__ != "ssl":
        return f"[Errno {errno}] {os.strerror(errno)}"
    return str(exc) or type(exc).__name__


def reason(exc: BaseException) -> str:
    """``"ConnectError: [Errno 111] Connection refused"``: the class name, and the message
    when it cannot hold a header value or URL."""
    name = type(exc).__name__
    if not isinstance(exc, FAILURES):
        return name  # e.g. UnicodeEncodeError or ValueError: their messages quote the value
    message = str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, HttpError):
        message = os_message(exc)
    if not message or (isinstance(exc, h11.ProtocolError) and ("'" in message or '"' in message)):
        return name
    return f"{name}: {message}"[:_REASON_LENGTH]


class TlsContext:
    """The default, verifying TLS context of one executor, made on the first https request:
    loading the CA store costs milliseconds a stdio client should not pay. One per executor,
    not per process: it reads the CA store (``SSL_CERT_FILE`` included) when it is made.
    Safe from many threads: the first context stored is the one every caller gets."""

    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made: dict[str, ssl.SSLContext] = {}

    def get(self) -> ssl.SSLContext:
        context = self._made.get("default")
        if context is None:
            import ssl  # here: a stdio client never pays for it

            # setdefault is atomic: two threads that both made one agree on the first.
            context = self._made.setdefault("default", ssl.create_default_context())
        return context
