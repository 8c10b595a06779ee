"""The stdio transport layer: one server process per connection
(MCP 2025-11-25 basic/transports §stdio).

It turns a connection into a process and back: ``open`` asks the driver for a ``Spawn``
(with a fresh generation), messages go out as ``WriteStdin`` lines, the process's stdout is
split into messages by a size-capped ``LineDecoder``, its stderr kept in a ring for error
messages, and stopping a process walks the stop table (close stdin, SIGTERM to the group,
SIGKILL, each after ``shutdown_grace``; then the process is given up on).

A pipe that ends is a dead connection: without stdout nothing more is answered, without
stdin nothing more is asked (basic/transports §stdio: the server reads messages from its
stdin and sends messages to its stdout; there is no other way in or out). The end of stdout
(``StdoutClosed``) and a write that fails (``WriteFailed``: the server closed its stdin)
nearly always mean the server is exiting, and ``ProcessExited`` follows at once. So the
failure waits up to ``shutdown_grace`` for it: an exit is then reported as one, with its code
and the last of stderr, exactly as an exit without the pipe event before it. A process still
running by then closed the pipe and lives on: its calls fail with ``ServerExited`` saying so
("closed its stdout while still running"), and it is stopped like any failed connection and
restarted once it exited.

Why wait, and why ``shutdown_grace``: the exit code and the whole stderr tail (a traceback)
are what a user needs, and only ``ProcessExited`` carries the one and comes after the other
(the drivers of this package give stderr up to 1 s after the exit to drain). Failing at once
would lose both in the common case to serve the rare one. ``shutdown_grace`` is already how
long the client gives a process to leave by itself (after closing its stdin, after SIGTERM),
it is longer than that drain by default (2 s), and a user who wants a dead pipe noticed
sooner lowers it. The cost: a call made or due during the wait ends up to ``shutdown_grace``
later than it could have (or at its own deadline, if that comes first).

Every process event carries the generation of the ``Spawn`` that started its process; events
of any other generation (a process given up on, or replaced) are dropped here, and nowhere
else. What the events mean for the session (the handshake, callers' work) is the session's:
this layer reports through ``Session``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._config.spec import Spec
from .._vocabulary.actions import Action, CloseStdin, SignalProcess, Spawn, WriteStdin
from .._vocabulary.errors import ServerExited, UnexpectedEvent
from .._vocabulary.events import (
    PROCESS_EVENTS,
    ProcessExited,
    ProcessSpawned,
    SpawnFailed,
    StderrReceived,
    StdoutClosed,
    StdoutReceived,
    TimerFired,
    WriteFailed,
)
from .._vocabulary.phases import Step, StopStage, stop_step
from .._wire.framing import LineDecoder, Message, NotJson, encode_message
from .connection import Connection, Session
from .stdio_parts import INHERITED_ENV, StderrRing

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
    # A pipe ended while the process runs: the connection fails then unless it exited.
    exit_deadline: float | None = None
    ended: list[str] = field(default_factory=list)  # which pipes ended: "stdout", "stdin"


class StdioTransport:
    """Processes for ``connections`` (a ``Transport``); see the module docstring."""

    __slots__ = ("_connections", "_generations", "_out", "_session", "_spec", "_state")

    events = PROCESS_EVENTS

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
        pipe.exit_deadline = None
        pipe.ended.clear()
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
        pipe.exit_deadline = None  # a pipe that ended: the stop sequence waits for the exit now
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
            for t in (pipe.stop_deadline, pipe.exit_deadline):
                if t is not None and (best is None or t < best):
                    best = t
        return best

    def expire(self, connection: Connection, now: float) -> None:
        """The next stop stage, or the end of waiting for an exit after a pipe ended: the
        process lives on without it, a dead connection (during the handshake the session
        makes it a ``ConnectFailed`` with this cause)."""
        pipe = self._state[connection.index]
        if pipe.stop_deadline is not None and pipe.stop_deadline <= now:
            self._escalate(connection, pipe)
        if pipe.exit_deadline is not None and pipe.exit_deadline <= now:
            # Any failure, and Close, stop the process (``close``), which ends the wait: so
            # here the connection has not failed yet.
            pipe.exit_deadline = None
            what = f"closed its {' and its '.join(pipe.ended)} while still running"
            self._session.fail(connection, ServerExited(None, pipe.stderr.tail(), what))

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
            if self._pipe_ended(pipe, "stdin"):
                self._session.log(
                    "DEBUG", f"slot {connection.index}: {event.reason}; waiting for the exit"
                )
        else:
            self._session.log("DEBUG", f"slot {event.slot}: stdout closed")
            self._pipe_ended(pipe, "stdout")

    def _on_stdout(self, connection: Connection, pipe: _Pipe, data: bytes) -> None:
        for frame in pipe.decoder.feed(data):
            if isinstance(frame, Message):
                # 2025-03-26 basic/index: implementations "MUST support receiving" batches.
                items = frame.payload if isinstance(frame.payload, list) else [frame.payload]
                for item in items:
                    self._session.decoded(connection, item)
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
        pipe.exit_deadline = None
        pipe.stop = stop_step(pipe.stop, ProcessExited)
        pipe.stop_deadline = None
        self._session.exited(connection, was, returncode, pipe.stderr.tail())

    def _pipe_ended(self, pipe: _Pipe, which: str) -> bool:
        """``which`` pipe of the process ended: unless the process is gone or being stopped
        already, wait up to ``shutdown_grace`` for its exit (see the module docstring). True
        when this starts the wait."""
        if not pipe.alive or pipe.stop is not StopStage.NONE:
            return False
        if which not in pipe.ended:
            pipe.ended.append(which)
        if pipe.exit_deadline is not None:
            return False  # one wait, from the first end
        pipe.exit_deadline = self._session.now + self._spec.shutdown_grace
        return True
