"""A small threaded TCP server on 127.0.0.1 for tests that drive the HTTP executors directly:
one thread per connection, running a subclass's ``_serve``; it counts accepted and open
connections under ``changed`` (a ``_serve`` decrements ``open`` when its connection ends), so
a test can wait for "the client closed it" as an event."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

HOST = "127.0.0.1"


class LoopbackServer:
    """See the module docstring. ``wait`` waits for a predicate on the counts (``changed`` held)
    with a deadline; ``close`` stops accepting (calling ``_closing`` first, for a subclass to
    end what its connections wait on), shuts every connection down and joins the threads."""

    def __init__(self, wait: float) -> None:
        self._wait = wait
        self._listener = socket.create_server((HOST, 0))
        self.port: int = self._listener.getsockname()[1]
        self.changed = threading.Condition()
        self.accepted = 0
        self.open = 0
        self._connections: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def wait(self, predicate: Callable[[], bool], timeout: float | None = None) -> None:
        with self.changed:
            seen = self.changed.wait_for(predicate, timeout or self._wait)
            assert seen, f"{self!r} never saw that"

    def close(self) -> None:
        self._closing()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
        self._listener.close()
        with self.changed:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(self._wait)

    def _closing(self) -> None:
        """Called first by ``close``."""

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with self.changed:
                self.accepted += 1
                self.open += 1
                self._connections.append(connection)
                self.changed.notify_all()
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket) -> None:
        raise NotImplementedError
