"""Knowing that this process is a fork of the one that started a client.

After ``os.fork()`` the child holds copies of every client object, with the parent's pipes,
sockets and next request id. Used there, a client would write into the parent's session and
read the parent's answers (or the parent would read the child's). Both drivers therefore
remember, when a client starts, the process it started in (``Origin``), and refuse any use
from another process with ``UsedAfterFork``, touching nothing: no write, no signal, no
close of a shared descriptor. The parent's session goes on unaffected.

``os.register_at_fork`` bumps a counter in the child, so the check on every call is one
integer comparison (no ``getpid`` system call on the hot path).
"""

from __future__ import annotations

import dataclasses
import os

from mcp_core import UsedAfterFork

__all__ = ["Origin"]

_forks = 0  # forks this process is removed from the one that imported this module


def _in_child() -> None:
    global _forks
    _forks += 1


os.register_at_fork(after_in_child=_in_child)


@dataclasses.dataclass(frozen=True, slots=True)
class Origin:
    """The process a client was started in."""

    pid: int = dataclasses.field(default_factory=os.getpid)
    forks: int = dataclasses.field(default_factory=lambda: _forks)

    def here(self) -> bool:
        """True in the process the client was started in, False in a forked child."""
        return self.forks == _forks

    def check(self, name: str) -> None:
        """Raise ``UsedAfterFork`` unless this is the process the client started in."""
        if self.forks != _forks:
            raise UsedAfterFork(name, self.pid, os.getpid())
