"""A server process that closes its stdout or its stdin and lives on (MCP 2025-11-25
basic/transports §stdio: messages go to the server on its stdin and come back on its stdout,
so without either nothing more can be answered).

The end of a pipe is nearly always the server exiting: the client waits up to
``shutdown_grace`` for ``ProcessExited`` so that the error names the exit code and the last of
stderr. A process still running then is a dead connection: every call on it fails with
``ServerExited`` saying which pipe it closed (during the handshake: ``ConnectFailed`` with that
cause), the process is stopped (close stdin, SIGTERM, SIGKILL) and, once it exited, restarted
with backoff.
"""

from __future__ import annotations

import mcp_core as core
from tests.core.harness import Harness

GRACE = 2.0


def ready() -> Harness:
    h = Harness(era="legacy", shutdown_grace=GRACE, reconnect=1.0)
    h.connect_legacy()
    return h


def stdout_closed(h: Harness) -> list[core.Action]:
    return h.feed(core.StdoutClosed(now=h.now, slot=0, generation=h.gen()))


def write_failed(h: Harness) -> list[core.Action]:
    return h.feed(core.WriteFailed(now=h.now, slot=0, generation=h.gen(), reason="EPIPE"))


def stderr(h: Harness, data: bytes) -> None:
    h.feed(core.StderrReceived(now=h.now, slot=0, generation=h.gen(), data=data))


def test_stdout_closed_by_a_live_process_fails_its_calls_and_restarts_it() -> None:
    h = ready()
    pending = h.call("x")
    stderr(h, b"closing stdout, bye\n")
    stdout_closed(h)
    # Waiting for the exit: nothing answered, nothing stopped yet; the timer is the wait's end.
    assert pending not in h.replies and not h.of(core.CloseStdin)
    assert h.machine.next_deadline() == h.now + GRACE
    h.advance(1.0)
    late = h.call("y")  # still ready: admitted, and lost with the connection
    h.take()
    h.advance(1.0)
    for ticket in (pending, late):
        err = h.error(ticket)
        assert isinstance(err, core.ServerExited) and err.code is None
        assert str(err).startswith(
            "the server process closed its stdout while still running before answering; "
            "the client restarts it with backoff; last stderr:\n"
        )
        assert "closing stdout, bye" in err.stderr_tail and "code None" not in str(err)
    # The stop sequence of any failure: close stdin, then SIGTERM, SIGKILL after the grace.
    assert h.of(core.CloseStdin) == [core.CloseStdin(slot=0)]
    status = h.machine.status(h.now)
    assert status.state != "ready" and "closed its stdout" in str(status.last_error)
    h.take()
    h.advance(GRACE)
    assert h.of(core.SignalProcess) == [core.SignalProcess(slot=0, signal="SIGTERM")]
    assert not h.of(core.Spawn)  # no restart while the old process runs
    h.exited(-15)
    assert isinstance(h.error(pending), core.ServerExited)  # answered once, not again
    assert h.reply_count[pending] == h.reply_count[late] == 1
    assert h.machine.status(h.now).retry_in is not None
    h.take()
    h.fire_due()  # the backoff
    assert h.of(core.Spawn)
    h.connect_legacy()
    assert h.machine.state == "ready"
    assert "closed its stdout" in str(h.machine.status(h.now).last_error)


def test_stdout_closed_then_the_exit_keeps_the_exit_code() -> None:
    # The common case: a server exiting closes its stdout a moment before it is reaped.
    h = ready()
    pending = h.call("x")
    stdout_closed(h)
    h.advance(0.1)
    stderr(h, b"Traceback\nValueError: bad\n")
    h.exited(3)
    err = h.error(pending)
    assert isinstance(err, core.ServerExited) and err.code == 3
    assert str(err).startswith("the server process exited with code 3 before answering")
    assert "ValueError: bad" in err.stderr_tail
    assert not h.of(core.CloseStdin)  # gone already: nothing to stop
    # The wait ended with the process: the next deadline is the restart's, and when it comes
    # the new process is not failed for the old one's pipe.
    h.take()
    h.fire_due()
    assert h.of(core.Spawn)
    h.connect_legacy()
    h.advance(GRACE)
    assert h.machine.state == "ready"
    assert "code 3" in str(h.machine.status(h.now).last_error)


def test_stdout_closed_during_the_handshake_is_a_failed_connect() -> None:
    h = Harness(era="legacy", shutdown_grace=GRACE, fail_fast=True, init_timeout=30.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.spawned()
    assert h.last_request("initialize")
    stdout_closed(h)
    h.advance(GRACE)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and not err.permanent
    assert isinstance(err.cause, core.ServerExited) and err.cause.code is None
    assert "closed its stdout while still running" in str(err)
    assert h.of(core.CloseStdin)
    h.exited(0)
    h.take()
    h.fire_due()
    assert h.of(core.Spawn)


def test_stdin_closed_by_a_live_process_says_so() -> None:
    h = ready()
    pending = h.call("x")
    write_failed(h)
    h.advance(GRACE)
    err = h.error(pending)
    assert isinstance(err, core.ServerExited) and err.code is None
    assert "closed its stdin while still running" in str(err)
    assert "code None" not in str(err)
    assert h.of(core.CloseStdin)
    h.exited(None)
    assert h.machine.status(h.now).retry_in is not None


def test_both_pipes_closed_are_both_named_and_waited_for_once() -> None:
    h = ready()
    pending = h.call("x")
    stdout_closed(h)
    h.advance(1.0)
    write_failed(h)
    write_failed(h)
    assert h.machine.next_deadline() == GRACE  # the first end's wait, not a second one
    h.advance(1.0)
    err = h.error(pending)
    assert "closed its stdout and its stdin while still running" in str(err)


def test_a_pipe_that_ends_while_the_process_is_stopped_changes_nothing() -> None:
    # Close: the stop sequence closes stdin, and the server's answer is to close its stdout.
    h = ready()
    stop = h.close()
    stdout_closed(h)
    assert h.machine.next_deadline() == h.now + GRACE  # the stop's SIGTERM, nothing sooner
    h.advance(GRACE)  # SIGTERM, as for any process that does not leave when stdin closes
    assert h.of(core.SignalProcess) == [core.SignalProcess(slot=0, signal="SIGTERM")]
    assert h.machine.status(h.now).last_error is None
    h.exited(0)
    assert h.result(stop) is None
    # After a failure: the process is being stopped already, its pipe ends are no news.
    h = ready()
    pending = h.call("x")
    write_failed(h)
    h.advance(GRACE)
    first = h.error(pending)
    stdout_closed(h)
    write_failed(h)
    assert h.machine.next_deadline() == h.now + GRACE  # the stop's SIGTERM
    h.take()
    h.advance(GRACE)
    assert h.of(core.SignalProcess) == [core.SignalProcess(slot=0, signal="SIGTERM")]
    assert h.reply_count[pending] == 1 and h.error(pending) is first
    assert "closed its stdin while" in str(h.machine.status(h.now).last_error)


def test_the_wait_of_a_closing_session_ends_with_the_stop() -> None:
    # The wait started, then Close: the stop sequence decides, and no failure is reported.
    h = ready()
    stdout_closed(h)
    stop = h.close()
    h.advance(GRACE)
    assert h.machine.status(h.now).last_error is None
    h.exited(0)
    assert h.result(stop) is None and h.machine.next_deadline() is None


def test_a_failure_during_the_wait_is_the_one_reported() -> None:
    # The handshake times out while the client waits for the exit: that failure stands.
    h = Harness(era="legacy", shutdown_grace=GRACE, init_timeout=1.0, fail_fast=True)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.spawned()
    stdout_closed(h)
    h.advance(1.0)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and isinstance(err.cause, core.RequestTimeout)
    h.advance(1.0)  # the wait's end has gone with the stop
    assert "did not complete the handshake" in str(h.machine.status(h.now).last_error)
