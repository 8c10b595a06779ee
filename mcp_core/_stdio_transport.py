"""The stdio transport layer: one server process per connection
(MCP 2025-11-25 basic/transports §stdio).

It turns a connection into a process and back: ``open`` asks the driver for a ``Spawn``
(with a fresh generation), messages go out as ``WriteStdin`` lines, the process's stdout is
split into messages by a size-capped ``LineDecoder``, its stderr kept in a ring for error
messages, and stopping a process walks the stop table (close stdin, SIGTERM to the group,
SIGKILL, each after ``shutdown_grace``; then the process is given up on). A broken pipe is
nearly always the server exiting: the failure waits up to ``shutdown_grace`` for
``ProcessExited`` so that it can name the exit code and the last stderr.

Every process event carries the generation of the ``Spawn`` that started its process; events
of any other generation (a process given up on, or replaced) are dropped here, and nowhere
else. What the events mean for the session (the handshake, callers' work) is the session's:
this layer reports through ``Session``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _jsonrpc as rpc
from ._actions import Action, CloseStdin, SignalProcess, Spawn, WriteStdin
from ._connection import Connection, Session
from ._errors import ServerExited, UnexpectedEvent
from ._events import (
    ProcessExited,
    ProcessSpawned,
    SpawnFailed,
    StderrReceived,
    StdoutClosed,
    StdoutReceived,
    TimerFired,
    WriteFailed,
)
from ._framing import LineDecoder, Message, NotJson, encode_message
from ._phases import Step, StopStage, stop_step
from ._spec import Spec
from ._stdio import INHERITED_ENV, StderrRing

__all__ = ["ProcessEvent", "StdioTransport"]

ProcessEvent = (
    ProcessSpawned
    | SpawnFailed
    | StdoutReceived
    | StdoutClosed
    | StderrReceived
    | ProcessExited
    | WriteFailed
)


@dataclass(slots=True, eq=False)
class _Pipe:
    """What the transport knows of one connection's current process."""

    decoder: LineDecoder
    stderr: StderrRing = field(default_factory=StderrRing)
    generation: int = 0  # the Spawn whose process events count; 0: none (given up on)
    alive: bool = False  # spawned and not exited
    stop: StopStage = StopStage.NONE
    stop_deadline: float | None = None
    broken_pipe_deadline: float | None = None  # a write failed: fail then unless it exited


class StdioTransport:
    """Processes for ``connections``; see the module docstring."""

    def __init__(
        self, spec: Spec, connections: Sequence[Connection], session: Session, out: list[Action]
    ) -> None:
        self._spec = spec
        self._connections = connections
        self._session = session
        self._out = out
        self._state = [_Pipe(LineDecoder(spec.max_message_bytes)) for _ in connections]
        self._generations = 0  # Spawn actions so far: the last one's generation

    # --- what the session asks ---------------------------------------------------------------

    def open(self, connection: Connection) -> bool:
        """Spawn a new process for ``connection``; False: it is not up yet (wait for it)."""
        pipe = self._state[connection.index]
        pipe.broken_pipe_deadline = None
        pipe.decoder = LineDecoder(self._spec.max_message_bytes)
        pipe.stderr.clear()
        self._generations += 1
        pipe.generation = self._generations
        connection.move(Step.SPAWN)
        assert self._spec.command is not None
        self._out.append(
            Spawn(
                slot=connection.index,
                generation=pipe.generation,
                argv=(self._spec.command, *self._spec.args),
                inherit=INHERITED_ENV,
                env=dict(self._spec.env),
                cwd=self._spec.cwd,
            )
        )
        return False

    def send(
        self, connection: Connection, message: Mapping[str, Any], request_id: int | None
    ) -> None:
        """One message as one line on stdin."""
        self._out.append(WriteStdin(slot=connection.index, data=encode_message(message)))

    def acknowledge(self, connection: Connection, message: Mapping[str, Any]) -> bool:
        """Send ``notifications/initialized``; False: nothing to wait for, lines keep order."""
        self.send(connection, message, None)
        return False

    def cancel(self, connection: Connection, request_id: int) -> bool:
        """A caller gave up ``request_id``: True, the server must be told with
        ``notifications/cancelled`` (stdio has no other way)."""
        return True

    def forget(self, connection: Connection, request_id: int) -> None:
        """The machine stopped waiting for ``request_id``: nothing to close on stdio."""

    def fail(self, connection: Connection) -> bool:
        """Stop a failed connection's process; True while there is one to wait for."""
        return self.close(connection)

    def close(self, connection: Connection) -> bool:
        """Start stopping the process (again, from the top, if it was being stopped): every
        phase but IDLE and SPAWNING has one. True: wait for its exit."""
        pipe = self._state[connection.index]
        # Legacy basic/lifecycle §Shutdown (stdio): close stdin, wait, SIGTERM, wait, SIGKILL.
        pipe.stop = stop_step(pipe.stop, Step.SHUT_DOWN)
        pipe.stop_deadline = self._session.now + self._spec.shutdown_grace
        self._out.append(CloseStdin(slot=connection.index))
        return True

    @property
    def sse(self) -> bool:
        return False

    def speaks_sse(self, connection: Connection) -> bool:
        return False

    # --- time --------------------------------------------------------------------------------

    def next_deadline(self, best: float | None) -> float | None:
        """The earlier of ``best`` and this layer's own deadlines."""
        for pipe in self._state:
            for t in (pipe.stop_deadline, pipe.broken_pipe_deadline):
                if t is not None and (best is None or t < best):
                    best = t
        return best

    def expire(self, connection: Connection, now: float) -> None:
        """The next stop stage, or the end of waiting for an exit after a broken pipe."""
        pipe = self._state[connection.index]
        if pipe.stop_deadline is not None and pipe.stop_deadline <= now:
            self._escalate(connection, pipe)
        if pipe.broken_pipe_deadline is not None and pipe.broken_pipe_deadline <= now:
            pipe.broken_pipe_deadline = None
            if pipe.alive and connection.failure is None and not self._session.closing:
                self._session.fail(connection, ServerExited(None, pipe.stderr.tail()))

    def resume_due(self, connection: Connection, now: float) -> None:
        """Nothing to resume on stdio."""

    def _escalate(self, connection: Connection, pipe: _Pipe) -> None:
        pipe.stop = stop_step(pipe.stop, TimerFired)
        pipe.stop_deadline = self._session.now + self._spec.shutdown_grace
        if pipe.stop is StopStage.TERMINATED:
            self._out.append(SignalProcess(slot=connection.index, signal="SIGTERM"))
        elif pipe.stop is StopStage.KILLED:
            self._out.append(SignalProcess(slot=connection.index, signal="SIGKILL"))
        else:
            # SIGKILL cannot be ignored; a process still not reported gone is the driver's to
            # reap. Stop waiting so that nothing hangs on it.
            self._session.log(
                "ERROR", f"slot {connection.index}: process not reported gone after SIGKILL"
            )
            pipe.generation = 0  # whatever that process still sends is dropped
            self._exited(connection, pipe, None)

    # --- events ------------------------------------------------------------------------------

    def handle(self, event: ProcessEvent) -> None:
        """Feed one process event (the session has checked its phase allows it)."""
        connection = self._connections[event.slot]
        pipe = self._state[event.slot]
        if event.generation != pipe.generation:
            if not 0 < event.generation <= self._generations:
                raise UnexpectedEvent(
                    connection.phase.name,
                    type(event).__name__,
                    f" (slot {event.slot}, generation {event.generation} was never spawned)",
                )
            return  # a process the connection no longer runs
        if isinstance(event, StdoutReceived):
            self._on_stdout(connection, pipe, event.data)
        elif isinstance(event, StderrReceived):
            pipe.stderr.feed(event.data)
        elif isinstance(event, ProcessSpawned):
            connection.move(ProcessSpawned)
            pipe.alive = True
            self._session.transport_up(connection)
        elif isinstance(event, SpawnFailed):
            connection.move(SpawnFailed)
            self._session.spawn_failed(connection, event.reason, event.missing)
        elif isinstance(event, ProcessExited):
            self._exited(connection, pipe, event.returncode)
        elif isinstance(event, WriteFailed):
            self._on_write_failed(connection, pipe, event.reason)
        else:
            self._session.log("DEBUG", f"slot {event.slot}: stdout closed")

    def _on_stdout(self, connection: Connection, pipe: _Pipe, data: bytes) -> None:
        for frame in pipe.decoder.feed(data):
            if isinstance(frame, Message):
                # 2025-03-26 basic/index: implementations "MUST support receiving" batches.
                items = frame.payload if isinstance(frame.payload, list) else [frame.payload]
                for item in items:
                    self._session.received(connection, rpc.classify(item))
            elif isinstance(frame, NotJson) and frame.request_id is not None:
                # Shaped like the answer to a request, but unreadable (invalid UTF-8, nesting
                # beyond what the reader takes): that request fails now, not at its deadline.
                self._session.unreadable(connection, frame.request_id, frame.excerpt)
            elif isinstance(frame, NotJson):
                # Servers "MUST NOT write non-MCP output to stdout", yet many print banners.
                self._session.log("WARNING", f"skipped a non-JSON line on stdout: {frame.excerpt}")
            else:
                self._session.oversized(connection, frame.request_id, frame.size)

    def _exited(self, connection: Connection, pipe: _Pipe, returncode: int | None) -> None:
        was = connection.phase
        connection.move(ProcessExited)
        pipe.alive = False
        pipe.broken_pipe_deadline = None
        pipe.stop = stop_step(pipe.stop, ProcessExited)
        pipe.stop_deadline = None
        self._session.exited(connection, was, returncode, pipe.stderr.tail())

    def _on_write_failed(self, connection: Connection, pipe: _Pipe, reason: str) -> None:
        # A broken pipe is nearly always the server exiting: its exit status and stderr say
        # more than "broken pipe", so the failure waits up to shutdown_grace for
        # ProcessExited; a server that closed its stdin and lives on is failed then.
        if (
            pipe.alive
            and connection.failure is None
            and not self._session.closing
            and pipe.broken_pipe_deadline is None
        ):
            pipe.broken_pipe_deadline = self._session.now + self._spec.shutdown_grace
            self._session.log("DEBUG", f"slot {connection.index}: {reason}; waiting for the exit")
