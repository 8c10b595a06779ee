"""The file token store: OAuth logins kept between runs of ``mcp-client``.

One JSON file holds every server's record, keyed by the server's canonical URL (the issuer is
inside the record)::

    {"version": 1, "servers": {"https://mcp.example.com/mcp": {"issuer": ..., ...}}}

How it keeps the tokens safe and the file whole:

- **Private.** The file is written with mode 0600 and a directory it creates with 0700 (an
  existing directory is left as it is: the file's own mode is what protects the tokens, and a
  directory the user chose is theirs). A file found with a looser mode is tightened to 0600 on
  the spot, with a warning, rather than refused: refusing would lock the user out of every
  server until they ran ``chmod`` by hand, while tightening closes the exposure at once; the
  warning says to log in again where the file may have been read. Only a regular file this
  user owns is ever tightened (through the descriptor it was read from); one that belongs to
  another user, or cannot be tightened, is refused. (Windows has no such modes; the checks are
  POSIX.)
- **No links followed.** The token file and its lock file are opened with ``O_NOFOLLOW`` (or,
  where there is none, after an ``lstat``): a symbolic link in their place is refused with a
  ``TokenStoreError`` naming it, and its target is neither read, created, locked nor chmod-ed.
  A link planted there (in a shared directory, say) could otherwise have the store loosen or
  overwrite another file's mode, read tokens from a file someone else controls, or create a
  file wherever the link points. (Links in the directories above are followed as usual: only
  the last component is checked.)
- **Whole.** Every write goes to a temporary file in the same directory, is flushed to disk and
  then ``os.replace``-d over the old one, so a reader (or a crash) sees the old file or the new
  one, never half of either.
- **Shared.** Nothing is cached: every call reads the file, so two stores (two processes, or
  two clients in one) on one file see each other's records. A change is a read-modify-write
  under an exclusive ``flock`` on a ``.lock`` file next to it (and a thread lock), so two
  writers saving different servers never lose one another's record (a lost refresh token means
  logging in again when the server rotates them).
- **Clear failures.** A file that is not JSON, or not a token file, raises ``TokenStoreError``
  naming the path and what to do (delete it); a bad record raises it naming the server (run
  ``mcp-client logout`` for it) and the bad field, never its value, and records of other
  servers still load. No message carries a traceback from ``json`` or a secret.

``TokenStoreError`` is defined here rather than in ``mcp_core._vocabulary.errors``: the core
never touches a file, so only a driver-side store can raise it; it subclasses ``McpError`` like
every error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp_core import McpError, StoredAuthorization
from mcp_core.driver import redact_url

from .http import os_message

if sys.platform != "win32":
    import fcntl

__all__ = ["FileTokenStore", "TokenStoreError", "default_token_path"]

APP_NAME = "mcp-sansio-client"
FILE_NAME = "tokens.json"
_FORMAT = 1
_PRIVATE_FILE = 0o600
_PRIVATE_DIRECTORY = 0o700
# Open flags: never follow a symbolic link in the last component (0 where the platform has no
# such flag: an lstat checks first), and never leak the descriptor to a child process.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

_log = logging.getLogger("mcp_client.tokens")


class TokenStoreError(McpError):
    """The token file cannot be used: unreadable, not JSON, not a token file, a bad record, or
    not writable. ``path`` is the file. Nothing was changed on disk by the failing call. The
    message says what to do and never holds a token or a secret."""

    def __init__(self, path: Path, problem: str, advice: str) -> None:
        super().__init__(f"token file {path}: {problem}; {advice}")
        self.path = path


def default_token_path() -> Path:
    """``tokens.json`` in the user's data directory (``platformdirs.user_data_dir``, e.g.
    ``~/.local/share/mcp-sansio-client`` on Linux). Nothing is created."""
    import platformdirs  # only for the default path: loaded when a store needs one

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / FILE_NAME


class FileTokenStore:
    """A ``TokenStore`` in one private JSON file (see the module docstring). ``path`` defaults
    to ``default_token_path()``; the constructor touches nothing on disk. Safe to share between
    threads and, on POSIX, between processes."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._path = default_token_path() if path is None else Path(os.fspath(path))
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"FileTokenStore(path={str(self._path)!r})"

    def load(self, server: str) -> StoredAuthorization | None:
        """``server``'s record, or ``None`` (also when there is no file yet).
        ``TokenStoreError`` when the file or this server's record is bad."""
        raw = self._read().get(server)
        if raw is None:
            return None
        try:
            return StoredAuthorization.from_json(raw)
        except ValueError as exc:
            raise TokenStoreError(
                self._path,
                f"the record for server {redact_url(server)} is not valid ({exc})",
                "run `mcp-client logout SERVER` for that server and log in again, or delete the "
                "file to forget every server",
            ) from None

    def save(self, server: str, authorization: StoredAuthorization) -> None:
        """Write ``authorization`` as ``server``'s record; other servers' records are kept as
        they are. ``TokenStoreError`` (file unchanged) when the file is bad or unwritable."""
        if not isinstance(authorization, StoredAuthorization):
            raise TypeError("save() takes a StoredAuthorization")
        record = authorization.to_json()
        with self._exclusive():
            servers = self._read()
            servers[server] = record
            self._write(servers)

    def forget(self, server: str) -> None:
        """Drop ``server``'s record, valid or not (this is how a bad record is cleared). No file,
        or no record, is not an error and writes nothing."""
        with self._exclusive():
            servers = self._read()
            if server not in servers:
                return
            del servers[server]
            self._write(servers)

    # --- the file ---

    def _error(self, problem: str, advice: str | None = None) -> TokenStoreError:
        if advice is None:
            advice = "delete it and log in again (`mcp-client login SERVER`)"
        return TokenStoreError(self._path, problem, advice)

    def _read(self) -> dict[str, Any]:
        """The ``servers`` mapping as stored (records unchecked), ``{}`` when there is no file."""
        try:
            # Non-blocking, so a FIFO in the file's place is refused rather than waited on.
            fd = self._open(self._path, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as file:
                self._make_private(file.fileno())
                data = file.read()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise self._error(
                f"cannot be read ({os_message(exc)})",
                "check that it is a file you can read, or delete it",
            ) from None
        try:
            document = json.loads(data)
        except ValueError:  # JSONDecodeError, UnicodeDecodeError: never shown, they quote
            raise self._error("is not valid JSON") from None
        if not isinstance(document, dict):
            raise self._error("is not a token file (not a JSON object)")
        version = document.get("version")
        if type(version) is int and version > _FORMAT:
            raise self._error(
                f"was written by a newer mcp-client (format {version}, this one reads {_FORMAT})",
                "use the newer mcp-client, or delete it and log in again",
            )
        servers = document.get("servers")
        if type(version) is not int or version != _FORMAT or not isinstance(servers, dict):
            raise self._error("is not a token file (no version 1 or no servers object)")
        return servers

    def _open(self, path: Path, flags: int, mode: int = _PRIVATE_FILE) -> int:
        """``os.open`` that refuses a symbolic link at ``path`` (``TokenStoreError``; its
        target is not touched). ``FileNotFoundError`` and other ``OSError`` propagate."""
        if not _NOFOLLOW and _is_link(path):  # pragma: no cover - Windows: no O_NOFOLLOW
            raise self._link_error(path)
        try:
            return os.open(path, flags | _NOFOLLOW | _CLOEXEC, mode)
        except FileNotFoundError:
            raise
        except OSError:
            # O_NOFOLLOW on a link fails with ELOOP on Linux and macOS, EMLINK on FreeBSD,
            # EFTYPE on NetBSD: ask the file system what is there rather than the errno.
            if _is_link(path):
                raise self._link_error(path) from None
            raise

    def _link_error(self, path: Path) -> TokenStoreError:
        """``path`` (the token file or its lock file) is a symbolic link."""
        never = "which the token store never follows (it could point at a file not the store's)"
        if path == self._path:
            return self._error(
                f"is a symbolic link, {never}",
                "give the store the real file's path, or remove the link and log in again",
            )
        return self._error(
            f"has a lock file {path} that is a symbolic link, {never}",
            "remove the link (the store makes a new lock file), or choose another path",
        )

    def _make_private(self, fd: int) -> None:
        if sys.platform == "win32":  # pragma: no cover - POSIX modes only
            return
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):  # and never chmod a device such as /dev/null
            raise self._error("is not a regular file", "remove it or choose another path")
        loose = stat.S_IMODE(status.st_mode)
        if not loose & 0o077:
            return
        if status.st_uid != os.geteuid():
            # Another user's file (root could chmod it anyway): not the store's to change.
            raise self._error(
                f"is readable or writable by other users (mode {loose:04o}) and belongs to "
                f"another user (uid {status.st_uid}), so it is left as it is",
                "ask its owner to make it private, or choose another path",
            )
        try:
            os.fchmod(fd, _PRIVATE_FILE)
        except OSError as exc:
            raise self._error(
                f"is readable or writable by other users (mode {loose:04o}) and cannot be made "
                f"private ({os_message(exc)})",
                f"make it private with `chmod 600 {self._path}`, or delete it",
            ) from None
        _log.warning(
            "token file %s had mode %04o (other users could read it); it is now 0600: log in "
            "again to servers whose tokens may have been read",
            self._path,
            loose,
        )

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """One writer at a time: this store's threads by a lock, other stores and processes by
        an ``flock`` on ``<file>.lock`` (POSIX; a lock file that stays, empty)."""
        with self._lock:
            directory = self._path.parent
            lock = self._path.with_name(self._path.name + ".lock")
            try:
                if not directory.is_dir():
                    _make_directory(directory)
                lock_fd = self._open(lock, os.O_RDWR | os.O_CREAT)
            except OSError as exc:
                raise self._error(
                    f"cannot be written ({os_message(exc)})",
                    "check that its directory exists or can be created and is writable, or "
                    "choose another path",
                ) from None
            try:
                if not stat.S_ISREG(os.fstat(lock_fd).st_mode):
                    raise self._error(
                        f"has a lock file {lock} that is not a regular file",
                        "remove it (the store recreates it), or choose another path",
                    )
                if sys.platform != "win32":
                    fcntl.flock(lock_fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(lock_fd)  # releases the flock

    def _write(self, servers: dict[str, Any]) -> None:
        text = json.dumps({"version": _FORMAT, "servers": servers}, indent=2, sort_keys=True)
        directory = self._path.parent
        try:
            fd, temporary = tempfile.mkstemp(
                dir=directory, prefix=f".{self._path.name}.", suffix=".tmp"
            )  # mkstemp creates it 0600
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(text.encode("utf-8") + b"\n")
                    file.flush()
                    os.fsync(file.fileno())
                os.replace(temporary, self._path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
            _sync_directory(directory)
        except OSError as exc:
            raise self._error(
                f"cannot be written ({os_message(exc)})",
                "check that its directory is writable and the disk is not full",
            ) from None


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _make_directory(directory: Path) -> None:
    """Create ``directory`` (and its parents) private: 0700 for the one it names, through a
    descriptor of the directory this call created, so a link swapped in meanwhile is not
    followed; one that appeared meanwhile (another store's) is left as it is."""
    os.makedirs(directory.parent, exist_ok=True)
    try:
        os.mkdir(directory, _PRIVATE_DIRECTORY)
    except FileExistsError:
        return
    if sys.platform == "win32":  # pragma: no cover - POSIX modes only
        return
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC)
    try:
        os.fchmod(fd, _PRIVATE_DIRECTORY)  # mkdir's mode obeys the umask
    finally:
        os.close(fd)


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX); a failure here loses nothing already written."""
    if sys.platform == "win32":  # pragma: no cover - directories cannot be opened there
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
