"""A third driver for ``mcp_core``: one thread, ``subprocess`` and ``selectors``, stdio only.

Feed the machine an event with the time, perform the actions it returns in order, wait in
``select`` until a pipe has something or ``machine.next_deadline()`` comes (``TimerFired``):
nothing about the protocol is decided here (docs/driver.md walks through it). As a script:

    python examples/selectors_driver.py [--call NAME [--args JSON]] COMMAND [ARG...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, Any, cast

import mcp_core as core
from mcp_core.driver import inherit_environment

STDIO_ONLY = "this example drives stdio servers only (it has no HTTP executor): give a command"
_now = time.monotonic


class _Process:
    """The process of one ``Spawn``: its pipes (non-blocking), what waits to go to stdin."""

    def __init__(self, spawn: core.Spawn, popen: subprocess.Popen[bytes]) -> None:
        assert popen.stdin and popen.stdout and popen.stderr
        self.slot, self.generation, self.popen = spawn.slot, spawn.generation, popen
        self.stdin, self.stdout, self.stderr = popen.stdin, popen.stdout, popen.stderr
        for pipe in (self.stdin, self.stdout, self.stderr):
            os.set_blocking(pipe.fileno(), False)
        self.backlog = bytearray()  # for stdin once it has room, in order
        self.closing = False  # CloseStdin came: close stdin once the backlog is written

    def event(self, kind: Callable[..., core.Event], **fields: Any) -> core.Event:
        return kind(now=_now(), slot=self.slot, generation=self.generation, **fields)


class SelectorsClient:
    """``with SelectorsClient(spec) as c: c.list_tools(); c.call_tool(name, args)``."""

    def __init__(self, spec: core.Spec | Mapping[str, Any]) -> None:
        self.spec = core.Spec.build(spec)
        if self.spec.transport != "stdio":
            raise ValueError(STDIO_ONLY)
        self.machine = core.SessionMachine(self.spec)
        self.processes: list[_Process] = []  # every process spawned; close() reaps them all
        self._current: dict[int, _Process] = {}  # slot -> its latest process
        self._exiting: list[_Process] = []  # stdout ended, not reaped yet
        self._selector = selectors.DefaultSelector()
        self._inbox: list[core.Event] = []  # [0] is being handled; the rest wait for it
        self._replies: dict[int, core.Reply] = {}
        self._tickets = 0

    def __enter__(self) -> SelectorsClient:
        # The time of day, for the tasks a server may ask a client to run (docs/driver.md).
        self._feed(core.Connect(now=_now(), wall_offset=time.time() - _now()))
        try:
            self.await_ready(self.spec.init_timeout)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def await_ready(self, timeout: float) -> core.Status:
        status = self._call(lambda t: core.AwaitReady(now=_now(), ticket=t, timeout=timeout))
        return cast(core.Status, status)

    def list_tools(self) -> list[core.Tool]:
        return cast(list[core.Tool], self._call(lambda t: core.ListTools(now=_now(), ticket=t)))

    def call_tool(self, name: str, args: Mapping[str, Any] | None = None) -> core.CallToolResult:
        call = self._call(lambda t: core.CallTool(now=_now(), ticket=t, name=name, arguments=args))
        return cast(core.CallToolResult, call)

    def close(self) -> None:
        """Stop the session as the machine asks (close stdin, SIGTERM, SIGKILL, each after
        ``shutdown_grace``), then kill and reap what is left: no process outlives this."""
        try:
            self._call(lambda t: core.Close(now=_now(), ticket=t))
        finally:
            self._selector.close()
            for p in self.processes:
                if p.popen.returncode is None:  # the safety net: the machine leaves none
                    _killpg(p.popen.pid, signal.SIGKILL)
                    p.popen.wait()
                for pipe in (p.stdin, p.stdout, p.stderr):
                    pipe.close()

    # --- the loop ---------------------------------------------------------------------------

    def _call(self, make: Callable[[int], core.Event]) -> object:
        """Feed a caller's event, then run the loop until the ``Reply`` to its ticket."""
        self._tickets += 1
        ticket = self._tickets
        self._feed(make(ticket))
        try:
            while ticket not in self._replies:
                self._step()
        except BaseException:  # Ctrl-C: the machine drops the work (and tells the server)
            if self._replies.pop(ticket, None) is None:
                self._feed(core.CancelCall(now=_now(), ticket=ticket))
            raise
        reply = self._replies.pop(ticket)
        if reply.error is not None:
            raise reply.error
        return reply.value

    def _step(self) -> None:
        """Wait for a pipe or the machine's next deadline, whichever comes first."""
        deadline = self.machine.next_deadline()
        timeout = None if deadline is None else max(0.0, deadline - _now())
        if self._exiting:  # no pipe says that a process exited: look every 10 ms
            timeout = 0.01 if timeout is None else min(timeout, 0.01)
        for key, _ in self._selector.select(timeout):
            key.data()  # the callback registered with the file descriptor
        for p in [p for p in self._exiting if p.popen.poll() is not None]:
            self._exiting.remove(p)
            self._reap(p)
        deadline = self.machine.next_deadline()
        if deadline is not None and _now() >= deadline:
            self._feed(core.TimerFired(now=_now()))

    def _feed(self, event: core.Event) -> None:
        """Feed ``event`` and perform its actions in order; an event that performing one
        brings (``ProcessSpawned``, ``WriteFailed``) is fed after them."""
        self._inbox.append(event)
        if len(self._inbox) > 1:
            return  # an action of an earlier event is being performed
        try:
            while self._inbox:
                for action in self.machine.handle(self._inbox[0]):
                    self._perform(action)
                del self._inbox[0]
        finally:
            self._inbox.clear()  # empty already, unless an exception cut the feed short

    def _perform(self, action: core.Action) -> None:
        p = self._current.get(getattr(action, "slot", -1))
        match action:
            case core.Spawn():
                self._spawn(action)
            case core.WriteStdin() if p is not None:
                self._write(p, action.data)
            case core.CloseStdin() if p is not None:
                p.closing = True
                self._write(p)
            case core.SignalProcess() if p is not None and p.popen.returncode is None:
                _killpg(p.popen.pid, signal.Signals[action.signal])  # never a reaped pid
            case core.WriteStdin() | core.CloseStdin() | core.SignalProcess():
                pass  # its process failed to spawn, or was reaped
            case core.Reply():
                self._replies[action.ticket] = action
            case core.Log():
                level = logging.getLevelNamesMapping().get(action.level, logging.WARNING)
                logging.getLogger(action.logger).log(level, "%s", action.message)
            case core.StartHttp() | core.AbortHttp() | core.PrepareAuthorization():
                raise RuntimeError(f"{type(action).__name__}: {STDIO_ONLY}")
            case _:  # progress, subscriptions, server requests: nothing this client asks for
                raise TypeError(f"not performed by this example: {action!r}")

    # --- one process ------------------------------------------------------------------------

    def _spawn(self, spawn: core.Spawn) -> None:
        self._current.pop(spawn.slot, None)
        env = inherit_environment(os.environ, spawn.inherit) | dict(spawn.env)
        try:
            popen = subprocess.Popen(
                spawn.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                bufsize=0, env=env, cwd=spawn.cwd, start_new_session=True,  # its own group
            )
        except OSError as exc:  # missing, not executable, a bad cwd: a retry cannot help
            missing = isinstance(exc, FileNotFoundError | PermissionError | NotADirectoryError)
            reason = f"{exc.strerror or type(exc).__name__}: {exc.filename}"
            ids = {"slot": spawn.slot, "generation": spawn.generation}
            self._feed(core.SpawnFailed(now=_now(), **ids, reason=reason, missing=missing))
            return
        p = self._current[spawn.slot] = _Process(spawn, popen)
        self.processes.append(p)
        self._selector.register(p.stdout, selectors.EVENT_READ, lambda: self._read(p, p.stdout))
        self._selector.register(p.stderr, selectors.EVENT_READ, lambda: self._read(p, p.stderr))
        self._feed(p.event(core.ProcessSpawned, pid=popen.pid))

    def _write(self, p: _Process, data: bytes = b"") -> None:
        """Write what stdin takes now, the rest in order once it has room (EVENT_WRITE), and
        close it once empty after CloseStdin. A failed write is fed as ``WriteFailed``."""
        if p.stdin.closed:
            return  # the process is gone: dropped
        p.backlog += data
        failed = None
        try:
            del p.backlog[: os.write(p.stdin.fileno(), p.backlog)]
        except BlockingIOError:
            pass
        except OSError as exc:  # EPIPE: the server closed its stdin or exited
            failed = exc.strerror or type(exc).__name__
        waiting = p.stdin in self._selector.get_map()
        if waiting and (failed or not p.backlog):
            self._selector.unregister(p.stdin)
        if failed or (p.closing and not p.backlog):
            p.stdin.close()
        elif p.backlog and not waiting:
            self._selector.register(p.stdin, selectors.EVENT_WRITE, lambda: self._write(p))
        if failed:
            self._feed(p.event(core.WriteFailed, reason=failed))

    def _read(self, p: _Process, pipe: IO[bytes]) -> bool:
        """Read stdout or stderr once and feed what came; False when it had nothing more."""
        if pipe.closed:
            return False
        try:
            data = os.read(pipe.fileno(), 65536)
        except BlockingIOError:
            return False
        except OSError:
            data = b""  # a broken pipe ends it as EOF does
        if data:
            kind = core.StdoutReceived if pipe is p.stdout else core.StderrReceived
            self._feed(p.event(kind, data=data))
            return True
        self._selector.unregister(pipe)
        pipe.close()
        if pipe is p.stdout:  # it is exiting (or closed stdout and lives on): watch for it
            self._exiting.append(p)
            self._feed(p.event(core.StdoutClosed))
        return False

    def _reap(self, p: _Process) -> None:
        """The process exited: read what it left in stderr (the error message's tail), close
        its pipes, then feed ``ProcessExited``."""
        while self._read(p, p.stderr):
            pass
        for pipe in (p.stdin, p.stderr):  # stderr may be held open by a grandchild
            if not pipe.closed and pipe in self._selector.get_map():
                self._selector.unregister(pipe)
            pipe.close()
        self._feed(p.event(core.ProcessExited, returncode=p.popen.returncode))


def _killpg(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # gone (macOS: EPERM)
        os.killpg(pid, signum)  # start_new_session: the group's id is the server's pid


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="List a stdio MCP server's tools, or call one.")
    parser.add_argument("--call", metavar="NAME", help="call this tool and print its text")
    parser.add_argument("--args", metavar="JSON", default="{}", help="its arguments (an object)")
    parser.add_argument("command", help="the server's executable")
    parser.add_argument("arg", nargs=argparse.REMAINDER, help="the server's arguments")
    options = parser.parse_args(argv)
    spec = {"name": os.path.basename(options.command), "command": options.command}
    try:
        with SelectorsClient({**spec, "args": options.arg}) as client:
            if options.call is None:
                for tool in client.list_tools():
                    print(f"{tool.name}: {(tool.description or '').partition(chr(10))[0]}")
                return 0
            result = client.call_tool(options.call, json.loads(options.args))
    except core.McpError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(result.text)
    return 1 if result.is_error else 0


if __name__ == "__main__":
    sys.exit(main())
