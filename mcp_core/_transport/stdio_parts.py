"""Pure pieces of the stdio transport: the inherited environment and the stderr ring.

The child's environment is *not* the parent's: an agent's environment holds API keys for
every service it talks to, and a tool server should see only what it needs. Like the official
SDKs, the child inherits a short list of harmless variables and gets the spec's ``env`` on top.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["INHERITED_ENV", "StderrRing", "inherit_environment"]

# The official SDKs' list (python-sdk mcp/client/stdio.py DEFAULT_INHERITED_ENV_VARS, "inspired
# by the default env inheritance of sudo" in the TypeScript SDK), plus the locale and temp
# directory, which servers need to print non-ASCII text and to create temporary files. The
# POSIX and Windows names are one list so that the same spec spawns the same way on every
# platform and recordings replay everywhere; a name that is not set is simply not passed.
INHERITED_ENV: tuple[str, ...] = (
    # POSIX (the SDKs' list)
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    # locale and temporary files
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    # Windows (the SDKs' list; TMP as well as TEMP)
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMFILES",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
)


def inherit_environment(
    source: Mapping[str, str], names: Iterable[str] = INHERITED_ENV
) -> dict[str, str]:
    """The variables of ``source`` (the driver's ``os.environ``) named in ``names``.

    A value starting with ``"()"`` is an exported shell function (the Shellshock vector); it
    is skipped, as the official SDKs do. Drivers call this for ``Spawn.inherit`` and put
    ``Spawn.env`` on top.
    """
    return {
        name: source[name] for name in names if name in source and not source[name].startswith("()")
    }


class StderrRing:
    """The last ``limit`` bytes a server wrote to stderr, for error messages.

    Memory stays bounded whatever the server writes; ``tail`` decodes leniently (a server may
    write anything to stderr) and starts at a line boundary when it had to cut.
    """

    __slots__ = ("_buffer", "_cut", "limit")

    def __init__(self, limit: int = 64 * 1024) -> None:
        if limit < 1:
            raise ValueError("limit must be >= 1")
        self.limit = limit
        self._buffer = bytearray()
        self._cut = False  # True once bytes were dropped from the front

    @property
    def size(self) -> int:
        """Bytes currently held (at most ``limit``)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> None:
        """Append ``data``, dropping the oldest bytes beyond ``limit``."""
        self._buffer += data[-self.limit :]
        excess = len(self._buffer) - self.limit
        if excess > 0 or len(data) > self.limit:
            self._cut = True
        if excess > 0:
            del self._buffer[:excess]  # CPython makes deleting a bytearray's front cheap

    def clear(self) -> None:
        """Forget everything (a new process was started)."""
        self._buffer.clear()
        self._cut = False

    def tail(self, max_chars: int = 2000) -> str:
        """The last ``max_chars`` characters or fewer, without trailing whitespace.

        When the text had to be cut (here or by the ring) and a newline follows the cut, the
        partial first line is dropped so the tail starts at the beginning of a line.
        """
        if max_chars <= 0:
            return ""
        # A character is at most 4 UTF-8 bytes; a bad byte becomes one U+FFFD.
        window = bytes(self._buffer[-4 * max_chars :])
        text = window.decode("utf-8", errors="replace").rstrip()
        start = max(0, len(text) - max_chars)
        cut = start > 0 or self._cut or len(window) < len(self._buffer)
        if cut and (start == 0 or text[start - 1] != "\n"):
            newline = text.find("\n", start)
            if newline >= 0:
                start = newline + 1
        return text[start:]
