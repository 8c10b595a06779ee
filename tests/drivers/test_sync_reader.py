"""The blocking driver's stdio fast path against real servers: a caller that waits alone writes
its request and reads the server's stdout itself (mcp_sync/_process.py), and the I/O thread
takes the turn back when nobody waits. These pin down what that hand-over must keep: output
read while idle, a server dying under a reading caller, Ctrl-C, stop(), many threads, a request
larger than the pipe, one reader at a time in byte order, and a turn that cannot get stuck when
a caller leaves without its clean-up. No test sleeps to wait: each waits for its event, with a
deadline."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pytest

import mcp_core as core
from mcp_sync import Client
from mcp_sync._process import ProcessSlot
from mcp_sync._session import Session
from tests.conftest import (
    CTRL_C_RAISES,
    children_of,
    fault_server_argv,
    interrupt_child,
    wait_until,
)

pytestmark = pytest.mark.timeout(90)


def _client(**fields: object) -> Client:
    argv = fault_server_argv()
    return Client(name="reader", command=argv[0], args=argv[1:], **fields)


def _driver_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync")]


@pytest.fixture(autouse=True)
def nothing_left() -> Iterator[None]:
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")
    assert _driver_threads() == []


class _LateAnswers(logging.Handler):
    """Notes the thread that fed a late answer (the machine logs it at DEBUG and drops it)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen = threading.Event()
        self.thread = ""

    def emit(self, record: logging.LogRecord) -> None:
        if "unknown request id" in record.getMessage():
            self.thread = threading.current_thread().name
            self.seen.set()


@pytest.fixture
def late() -> Iterator[_LateAnswers]:
    """Watches the client's logger for late answers."""
    handler = _LateAnswers()
    logger = logging.getLogger("mcp_client.reader")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def test_a_lone_caller_reads_its_answer_and_the_io_thread_reads_when_nobody_waits(
    late: _LateAnswers,
) -> None:
    threads: list[str] = []
    with _client() as client:
        # Alone, the caller reads the progress notifications itself, in its own thread.
        result = client.call_tool(
            "slow_progress",
            {"steps": 2, "delay": 0.01},
            progress=lambda *_: threads.append(threading.current_thread().name),
        )
        assert result.text == "done"
        assert threads == [threading.current_thread().name] * 2
        # The timer answers the reading caller (waking it out of its poll); the server's
        # answer comes after it, when nobody waits: the I/O thread must read it.
        with pytest.raises(core.RequestTimeout):
            client.call_tool("slow_progress", {"steps": 1, "delay": 1.0}, timeout=0.2)
        assert late.seen.wait(30), "the late answer was never read"
        assert late.thread == "mcp-sync-io"
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_the_server_dies_while_a_lone_caller_reads() -> None:
    with _client(reconnect=0.05) as client:
        with pytest.raises(core.ServerExited) as info:
            client.call_tool("exit", {"code": 3, "stderr": "dying now\n"})
        assert info.value.code == 3 and "dying now" in info.value.stderr_tail
        assert client.await_ready(30).state == "ready"
        assert client.call_tool("echo", {"text": "next process"}).text == "next process"
        assert client.status().in_flight == 0


def test_stop_answers_a_caller_that_is_reading_in_another_thread() -> None:
    outcome: list[BaseException] = []
    client = _client()
    client.start()
    client.await_ready(30)
    progressed = threading.Event()

    def call() -> None:
        try:  # alone: this thread reads stdout until stop() answers it
            client.call_tool(
                "slow_progress", {"steps": 600, "delay": 0.1}, progress=lambda *_: progressed.set()
            )
        except BaseException as exc:  # checked below
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert progressed.wait(30)
    client.stop()
    caller.join(30)
    assert not caller.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], core.NotReady)


def test_many_threads_and_lone_callers_take_turns() -> None:
    errors: list[BaseException] = []

    def calls(tag: str, count: int, client: Client) -> None:
        try:
            for i in range(count):
                text = f"{tag}-{i}"
                assert client.call_tool("echo", {"text": text}).text == text
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    def crowd(client: Client, width: int, count: int) -> None:
        threads = [
            threading.Thread(target=calls, args=(f"t{n}", count, client)) for n in range(width)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

    with _client(pool_size=64, queue_limit=64) as client:
        calls("alone", 50, client)  # the caller reads and writes itself
        crowd(client, 32, 20)  # the shared I/O thread does, batching
        calls("alone-again", 50, client)  # and back (the first of them is handed its answer)
        threads: list[str] = []
        client.call_tool(
            "slow_progress",
            {"steps": 2, "delay": 0.01},
            progress=lambda *_: threads.append(threading.current_thread().name),
        )
        assert threads == [threading.current_thread().name] * 2  # it reads for itself again
        # One thread calling in a loop while crowds come and go around it.
        steady = threading.Thread(target=calls, args=("steady", 300, client))
        steady.start()
        for _ in range(3):
            crowd(client, 8, 10)
        steady.join(60)
        assert client.status().in_flight == 0
    assert errors == []


def test_a_request_larger_than_the_pipe_from_a_lone_caller() -> None:
    # The pipe takes 64 KiB at once: the rest of a lone caller's write goes to the writer
    # thread, and whatever follows must wait behind it.
    big = "x" * (3 * 1024 * 1024)
    with _client() as client:
        assert client.call_tool("echo", {"text": big}).text == big
        assert client.call_tool("echo", {"text": "small"}).text == "small"


def test_ctrl_c_while_the_caller_reads() -> None:
    # The main thread waits alone, so it is the one polling the server's stdout when SIGINT
    # comes; afterwards the stream must still work and stop() must leave nothing behind.
    argv = fault_server_argv()
    script = textwrap.dedent(
        f"""
        import os, sys, threading
        sys.path[:0] = {sys.path!r}
        from tests.conftest import children_of
        from mcp_sync import Client
        client = Client(name="fault", command={argv[0]!r}, args={argv[1:]!r})
        client.start()
        client.await_ready(30)
        main = threading.current_thread()
        try:
            client.call_tool(
                "slow_progress", {{"steps": 600, "delay": 0.1}},
                progress=lambda *_: print("in flight", threading.current_thread() is main,
                                          flush=True),
            )
        except KeyboardInterrupt:
            print("interrupted", client.status().in_flight, flush=True)
            print("echo", client.call_tool("echo", {{"text": "still here"}}).text, flush=True)
        finally:
            client.stop()
        left = [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync")]
        print("stopped", children_of(os.getpid()), left, flush=True)
        """
    )
    lines, returncode = interrupt_child(script, "in flight True")
    assert lines == ["interrupted 0", "echo still here", "stopped [] []"]
    assert returncode == 0


class _Abandoned(BaseException):
    """Stands for an interrupt that unwinds a reading caller (KeyboardInterrupt reaches only
    the main thread, and pytest must not see a real one)."""


def test_a_caller_that_leaves_without_its_clean_up_cannot_stick_the_turn(
    late: _LateAnswers, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every clean-up is skipped (as if a second Ctrl-C landed in it) and one caller is unwound
    # in the middle of its reading: whoever's lease is left behind runs out by itself, and the
    # I/O thread reads what comes while nobody waits.
    step = ProcessSlot._step
    progressed = threading.Event()
    skipped: list[str] = []
    outcome: list[BaseException] = []

    def step_then_unwind(slot: ProcessSlot, timeout_ms: int) -> bool:
        going_on = step(slot, timeout_ms)
        if threading.current_thread().name == "abandoner" and progressed.is_set():
            raise _Abandoned
        return going_on

    def skip_clean_up(slot: ProcessSlot, me: int, **how: bool) -> None:
        skipped.append(threading.current_thread().name)

    def abandon(client: Client) -> None:
        try:
            client.call_tool(
                "slow_progress", {"steps": 3, "delay": 0.1}, progress=lambda *_: progressed.set()
            )
        except BaseException as exc:  # checked below
            outcome.append(exc)

    with _client() as client:
        monkeypatch.setattr(ProcessSlot, "_give_back", skip_clean_up)
        monkeypatch.setattr(ProcessSlot, "_step", step_then_unwind)
        caller = threading.Thread(target=abandon, args=(client,), name="abandoner")
        caller.start()
        caller.join(30)
        assert len(outcome) == 1 and isinstance(outcome[0], _Abandoned)
        assert skipped == ["abandoner"]  # it read, was unwound, and left its lease behind
        assert client.status().in_flight == 0
        # The rest of the cancelled call (two progress notifications, then the answer) comes
        # while nobody waits: the I/O thread reads it once the lease has run out.
        assert late.seen.wait(30), "the late answer was never read"
        assert late.thread == "mcp-sync-io"
        # A call from another thread is read (by that thread, which renews the lease) ...
        answers: list[str] = []
        other = threading.Thread(
            target=lambda: answers.append(client.call_tool("echo", {"text": "next"}).text)
        )
        other.start()
        other.join(30)
        assert answers == ["next"]
        # ... and after it, also left behind, a late reply is again the I/O thread's.
        late.seen.clear()
        with pytest.raises(core.RequestTimeout):
            client.call_tool("slow_progress", {"steps": 1, "delay": 0.5}, timeout=0.1)
        assert late.seen.wait(30), "the second late answer was never read"
        assert late.thread == "mcp-sync-io"
        assert len(skipped) == 3


def test_a_second_ctrl_c_in_the_clean_up_cannot_stick_the_turn() -> None:
    # In a child interpreter, the main thread reads alone; a real SIGINT unwinds it in the
    # middle of a step, and a second one lands in its clean-up (_give_back). The server's late
    # output must still be read, by the I/O thread; calls go on; stop() leaves nothing.
    argv = fault_server_argv()
    script = textwrap.dedent(
        f"""
        import logging, os, signal, sys, threading
        sys.path[:0] = {sys.path!r}
        from tests.conftest import children_of
        from mcp_sync import Client
        from mcp_sync._process import ProcessSlot

        step, give_back = ProcessSlot._step, ProcessSlot._give_back
        progressed, interrupts = threading.Event(), []

        def step_then_ctrl_c(slot, timeout_ms):
            going_on = step(slot, timeout_ms)
            if progressed.is_set() and not interrupts:
                interrupts.append("step")
                signal.raise_signal(signal.SIGINT)
            return going_on

        def ctrl_c_again(slot, me, **how):
            if interrupts == ["step"]:
                interrupts.append("clean-up")
                signal.raise_signal(signal.SIGINT)
            give_back(slot, me, **how)

        ProcessSlot._step, ProcessSlot._give_back = step_then_ctrl_c, ctrl_c_again

        class Late(logging.Handler):
            def __init__(self):
                super().__init__(logging.DEBUG)
                self.seen, self.thread = threading.Event(), ""
            def emit(self, record):
                if "unknown request id" in record.getMessage():
                    self.thread = threading.current_thread().name
                    self.seen.set()

        late = Late()
        logger = logging.getLogger("mcp_client.fault")
        logger.addHandler(late)
        logger.setLevel(logging.DEBUG)
        client = Client(name="fault", command={argv[0]!r}, args={argv[1:]!r})
        client.start()
        client.await_ready(30)
        try:
            client.call_tool(
                "slow_progress", {{"steps": 3, "delay": 0.1}},
                progress=lambda *_: progressed.set(),
            )
        except KeyboardInterrupt:
            print("interrupted", interrupts, client.status().in_flight, flush=True)
            print("late answer read", late.seen.wait(30), late.thread, flush=True)
            answers = []
            other = threading.Thread(
                target=lambda: answers.append(client.call_tool("echo", {{"text": "next"}}).text)
            )
            other.start()
            other.join(30)
            print("other thread", answers, flush=True)
            print("main", client.call_tool("echo", {{"text": "again"}}).text, flush=True)
        finally:
            client.stop()
        left = [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync")]
        print("stopped", children_of(os.getpid()), left, flush=True)
        """
    )
    child = subprocess.run(
        [sys.executable, "-c", CTRL_C_RAISES + script], capture_output=True, text=True, timeout=60
    )
    assert child.stdout.splitlines() == [
        "interrupted ['step', 'clean-up'] 0",
        "late answer read True mcp-sync-io",
        "other thread ['next']",
        "main again",
        "stopped [] []",
    ], child.stderr
    assert child.returncode == 0


def test_one_reader_at_a_time_and_bytes_fed_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # Lone callers, crowds, progress and replies of many chunks, all at once: no two threads
    # are ever inside a read-and-feed, and what was fed, joined up, is whole JSON lines.
    read = ProcessSlot._read
    inside: list[str] = []
    most = [0]
    readers: set[str] = set()
    guard = threading.Lock()

    def counted_read(slot: ProcessSlot) -> bool:
        with guard:
            inside.append(threading.current_thread().name)
            most[0] = max(most[0], len(inside))
            readers.add(threading.current_thread().name)
        try:
            return read(slot)
        finally:
            with guard:
                inside.remove(threading.current_thread().name)

    fed: list[bytes] = []
    feed = Session.feed

    def recorded_feed(session: Session, event: core.Event) -> None:
        if isinstance(event, core.StdoutReceived):
            fed.append(event.data)
        feed(session, event)

    monkeypatch.setattr(ProcessSlot, "_read", counted_read)
    monkeypatch.setattr(Session, "feed", recorded_feed)
    errors: list[BaseException] = []
    big = "y" * 300_000  # several reads per answer

    def calls(tag: str, count: int, client: Client) -> None:
        try:
            for i in range(count):
                text = f"{tag}-{i}" + (big if i % 5 == 0 else "")
                assert client.call_tool("echo", {"text": text}).text == text
                if i % 7 == 0:
                    client.call_tool(
                        "slow_progress", {"steps": 3, "delay": 0.0}, progress=lambda *_: None
                    )
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    with _client(pool_size=64, queue_limit=64) as client:
        calls("alone", 30, client)
        for _ in range(3):
            crowd = [threading.Thread(target=calls, args=(f"t{n}", 10, client)) for n in range(8)]
            for thread in crowd:
                thread.start()
            calls("between", 10, client)
            for thread in crowd:
                thread.join(60)
        calls("alone-again", 30, client)
    assert errors == []
    assert most[0] == 1
    assert "mcp-sync-io" in readers and threading.current_thread().name in readers
    lines = b"".join(fed).split(b"\n")
    assert lines[-1] == b""
    for line in lines[:-1]:
        json.loads(line)


class _BlockOnce(logging.Handler):
    """Holds the I/O thread inside its step (it runs the Log action of a late answer there,
    under the reading lock) until ``release`` is set. ``handle`` is overridden so that the
    handler's own lock is not held meanwhile: other threads keep logging."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.blocked = threading.Event()
        self.release = threading.Event()

    def handle(self, record: logging.LogRecord) -> bool:
        if (
            "unknown request id" in record.getMessage()
            and threading.current_thread().name == "mcp-sync-io"
            and not self.blocked.is_set()
        ):
            self.blocked.set()
            self.release.wait(60)
        return True


def test_a_lone_caller_waits_out_a_step_in_progress_and_still_sees_its_timeout() -> None:
    block = _BlockOnce()
    logger = logging.getLogger("mcp_client.reader")
    logger.addHandler(block)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    outcome: list[object] = []
    try:
        with _client() as client:

            def call(timeout: float | None) -> None:
                try:
                    outcome.append(client.call_tool("echo", {"text": "hi"}, timeout=timeout).text)
                except BaseException as exc:  # checked below
                    outcome.append(exc)

            try:
                with pytest.raises(core.RequestTimeout):
                    client.call_tool("slow_progress", {"steps": 1, "delay": 0.3}, timeout=0.1)
                assert block.blocked.wait(30)  # the I/O thread is held inside its step
                # A lone caller waits for that step to end; its timeout still reaches it there.
                waiting = threading.Thread(target=call, args=(0.2,), daemon=True)
                waiting.start()
                waiting.join(30)
                assert not waiting.is_alive() and not block.release.is_set()
                assert len(outcome) == 1 and isinstance(outcome[0], core.RequestTimeout)
                # The next lone caller waits too; once the step ends, it reads its own answer.
                outcome.clear()
                reader = threading.Thread(target=call, args=(None,), daemon=True)
                reader.start()
                block.release.set()
                reader.join(30)
                assert outcome == ["hi"]
            finally:
                block.release.set()
    finally:
        logger.removeHandler(block)
        logger.setLevel(old_level)
