"""The blocking driver's lifecycle at its edges: a client used in a child made by ``os.fork()``,
and a client whose owner never stopped it (dropped, or still held at interpreter exit).

Fork tests fork this test process (an xdist worker, with the driver's threads running): the
child runs one function, reports through a pipe and always ends with ``os._exit``; the parent
waits for the report and for the child's exit by a deadline, and kills it after that. Real
peers throughout: ``tests/servers/fault_server.py`` (stdlib; exits 0 on stdin EOF unless told
not to), ``tests/servers/py_server.py`` (the official SDK) and the npm reference server.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_core import UsedAfterFork
from mcp_sync import Client, ClientGroup
from tests.conftest import (
    children_of,
    everything_argv,
    fault_server_argv,
    process_group,
    py_server_argv,
    report_and_exit,
    wait_until,
)

pytestmark = pytest.mark.timeout(90)

_DEADLINE = 30.0  # for a forked child to report and exit, and for a child interpreter


@pytest.fixture(autouse=True)
def _no_server_outlives_a_failed_test() -> Iterator[None]:
    """A test that fails (as on a driver that never stops a forgotten client) leaves no server
    running past it: the process groups of servers started during the test are killed. The
    tests themselves check that nothing is left when they pass."""
    before = children_of(os.getpid())
    yield
    _kill_groups([pid for pid in children_of(os.getpid()) if pid not in before])


def _client(argv: list[str], name: str = "peer", **fields: Any) -> Client:
    return Client(name=name, command=argv[0], args=argv[1:], **fields)


def _driver_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync")]


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _servers(before: list[int]) -> list[int]:
    """This process's children that were not there ``before``: the servers started since."""
    return [pid for pid in children_of(os.getpid()) if pid not in before]


def _stdin_pipe(pid: int) -> str:
    """What the server's stdin is: "pipe:[inode]"."""
    return os.readlink(f"/proc/{pid}/fd/0")


def _unclosed(caught: list[warnings.WarningMessage]) -> list[str]:
    """The ResourceWarnings caught, up to their colon ("unclosed client 'name'")."""
    return [str(w.message).split(":")[0] for w in caught if w.category is ResourceWarning]


def _open_files() -> list[str]:
    """What each descriptor of this process is ("pipe:[inode]", a path, ...)."""
    files: list[str] = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the one listdir itself used is closed now
            files.append(os.readlink(f"/proc/self/fd/{fd}"))
    return files


def _exit_codes(recording: Path) -> list[int]:
    """The return codes of the recording's ProcessExited events."""
    lines = [json.loads(line) for line in recording.read_text(encoding="utf-8").splitlines()]
    return [line["returncode"] for line in lines if line.get("event") == "ProcessExited"]


def _wait_for_exit(pid: int, deadline: float) -> int:
    """Reap forked child ``pid`` (its pidfd becomes readable when it exits); at ``deadline``
    kill it, reap it and fail."""
    pidfd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))
    finally:
        os.close(pidfd)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError(f"the forked child {pid} did not exit by its deadline")
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _kill_forked(pid: int) -> None:
    """Kill and reap forked child ``pid`` if it is still there (a test that failed)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


@contextlib.contextmanager
def _forked(child: Callable[[], object]) -> Iterator[Callable[[], Any]]:
    """Fork; the child runs ``child()`` and writes ``{"result": ...}`` (JSON) or
    ``{"raised": "Type: message"}`` to a pipe, then ``os._exit(0)`` whatever happened. The
    parent gets a function that waits (by ``_DEADLINE``) for the report and the child's exit
    and returns the report; the child is reaped (killed past the deadline) in any case."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        report_and_exit(child, write_end)
    os.close(write_end)
    deadline = time.monotonic() + _DEADLINE
    reaped = False

    def report() -> Any:
        nonlocal reaped
        chunks: list[bytes] = []
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([read_end], [], [], max(0.0, left))
            if not ready:
                raise AssertionError("the forked child did not report by its deadline")
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        code = _wait_for_exit(pid, deadline)
        reaped = True
        assert code == 0
        assert chunks, "the forked child ended without a report"
        return json.loads(b"".join(chunks))

    try:
        yield report
    finally:
        os.close(read_end)
        if not reaped:
            _kill_forked(pid)


def _every_call(client: Client) -> dict[str, Callable[[], object]]:
    """Every public method of a client that talks to its session, called as an app would."""
    return {
        "start": client.start,
        "await_ready": lambda: client.await_ready(5),
        "call_tool": lambda: client.call_tool("echo", {"text": "from the child"}, timeout=5),
        "list_tools": lambda: client.list_tools(timeout=5),
        "list_resources": lambda: client.list_resources(timeout=5),
        "list_resource_templates": lambda: client.list_resource_templates(timeout=5),
        "list_prompts": lambda: client.list_prompts(timeout=5),
        "read_resource": lambda: client.read_resource("test://static/hello", timeout=5),
        "get_prompt": lambda: client.get_prompt("simple", timeout=5),
        "complete": lambda: client.complete(
            {"type": "ref/prompt", "name": "greeting"}, "style", "f", timeout=5
        ),
        "set_logging_level": lambda: client.set_logging_level("info", timeout=5),
        "ping": lambda: client.ping(timeout=5),
        "request": lambda: client.request("x/custom", {}, timeout=5),
        "subscribe": lambda: client.subscribe("test://counter", print, timeout=5),
        "unsubscribe": lambda: client.unsubscribe("test://counter", timeout=5),
        "notify_roots_changed": client.notify_roots_changed,
        "status": client.status,
    }


def _outcomes(calls: dict[str, Callable[[], object]]) -> dict[str, str]:
    """What each call raised ("UsedAfterFork/RuntimeError" when it should), or "returned"."""
    out: dict[str, str] = {}
    for name, call in calls.items():
        try:
            call()
        except UsedAfterFork as exc:
            out[name] = "UsedAfterFork/RuntimeError" if isinstance(exc, RuntimeError) else "?"
        except BaseException as exc:
            out[name] = type(exc).__name__
        else:
            out[name] = "returned"
    return out


class _Caller:
    """A thread of the parent calling echo again and again, each call checked, until stopped."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> _Caller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(_DEADLINE)

    def _run(self) -> None:
        while not self._stop.is_set():
            text = f"parent {self.calls}"
            try:
                result = self.client.call_tool("echo", {"text": text}, timeout=10)
                assert result.text == text, result.text
            except BaseException as exc:
                self.errors.append(exc)
                return
            self.calls += 1


# --- os.fork() --------------------------------------------------------------------------------


def test_every_call_in_a_forked_child_raises_and_the_parent_goes_on() -> None:
    before = children_of(os.getpid())
    with _client(py_server_argv()) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        (server,) = _servers(before)

        def child() -> object:
            calls = _outcomes(_every_call(client))
            stops = _outcomes(
                {
                    "stop": client.stop,
                    "stop again": client.stop,
                    "__exit__": lambda: client.__exit__(None, None, None),
                }
            )
            return {"calls": calls, "stops": stops, "repr": repr(client)}

        with _Caller(client) as caller, _forked(child) as report:
            got = report()
        assert "raised" not in got, got
        assert got["result"]["calls"] == dict.fromkeys(
            _every_call(client), "UsedAfterFork/RuntimeError"
        )
        assert got["result"]["stops"] == {
            "stop": "returned",
            "stop again": "returned",
            "__exit__": "returned",
        }
        assert "peer" in got["result"]["repr"]
        assert caller.errors == []
        assert caller.calls > 0
        # The same server, untouched: no restart, no signal, no closed pipe.
        assert _servers(before) == [server]
        assert client.call_tool("echo", {"text": "after"}).text == "after"
        assert client.status().state == "ready"
    assert children_of(os.getpid()) == before


def test_a_fork_during_a_call_in_flight_leaves_that_call_alone() -> None:
    # A thread of the parent is inside call_tool (reading its own answer: it holds the
    # driver's locks in turn) when another thread forks; the child must neither wait for
    # those locks (their copies may be held for ever) nor touch the pipes.
    in_flight = threading.Event()
    results: list[object] = []
    with _client(fault_server_argv()) as client:

        def slow() -> None:
            try:
                results.append(
                    client.call_tool(
                        "slow_progress",
                        {"steps": 10, "delay": 0.05},
                        progress=lambda *_: in_flight.set(),
                    ).text
                )
            except BaseException as exc:
                results.append(exc)

        caller = threading.Thread(target=slow)
        caller.start()
        try:
            assert in_flight.wait(_DEADLINE)

            def child() -> object:
                return _outcomes(
                    {
                        "call_tool": lambda: client.call_tool("echo", {"text": "x"}, timeout=5),
                        "status": client.status,
                        "stop": client.stop,
                    }
                )

            with _forked(child) as report:
                got = report()
        finally:
            caller.join(_DEADLINE)
        assert got == {
            "result": {
                "call_tool": "UsedAfterFork/RuntimeError",
                "status": "UsedAfterFork/RuntimeError",
                "stop": "returned",
            }
        }
        assert results == ["done"]
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_a_with_block_unwinds_in_a_forked_child() -> None:
    # The child leaves the parent's `with` block by an exception: __exit__ (stop()) returns
    # at once without raising, so the exception is the one that arrives.
    class ChildLeaves(Exception):
        pass

    read_end, write_end = os.pipe()
    pid = -1
    code: int | None = None
    before = children_of(os.getpid())
    try:
        with _client(fault_server_argv()) as client:
            (server,) = _servers(before)
            pid = os.fork()
            if pid == 0:
                raise ChildLeaves
            os.close(write_end)
            ready, _, _ = select.select([read_end], [], [], _DEADLINE)
            assert ready, "the forked child did not leave its with block by the deadline"
            assert os.read(read_end, 100) == b"left"
            code = _wait_for_exit(pid, time.monotonic() + _DEADLINE)
            assert code == 0
            assert _servers(before) == [server]
            assert client.call_tool("echo", {"text": "after"}).text == "after"
    except ChildLeaves:
        os.write(write_end, b"left")  # only the child gets here
        os._exit(0)
    finally:
        if pid == 0:
            os._exit(1)  # the child, whatever else happened
        os.close(read_end)
        if pid > 0 and code is None:  # the parent, failing: the child must not outlive it
            _kill_forked(pid)
    assert children_of(os.getpid()) == before


def test_a_new_client_in_a_forked_child_works() -> None:
    # The parent's client has the shared I/O and timer threads running when it forks: the
    # child has none of them and must start its own for a client of its own.
    with _client(fault_server_argv()) as client:
        assert client.call_tool("echo", {"text": "parent"}).text == "parent"
        assert _driver_threads()

        def child() -> object:
            fds = _fds()
            with _client(fault_server_argv(), name="child") as own:
                text = own.call_tool("echo", {"text": "child"}).text
                threads = sorted(set(_driver_threads()))
            return {
                "text": text,
                "threads while running": threads,
                "threads after": _driver_threads(),
                "children after": children_of(os.getpid()),
                "fds": [fds, _fds()],
            }

        with _Caller(client) as caller, _forked(child) as report:
            got = report()
        assert "raised" not in got, got
        result = got["result"]
        assert result["text"] == "child"
        assert result["threads while running"] == ["mcp-sync-io", "mcp-sync-timer"]
        assert result["threads after"] == []
        assert result["children after"] == []
        assert result["fds"][1] == result["fds"][0]
        assert caller.errors == []
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_a_forked_child_holds_no_copy_of_the_servers_stdin(tmp_path: Path) -> None:
    # Closing stdin is how stop() asks a stdio server to exit (MCP 2025-11-25
    # basic/lifecycle §Shutdown). A child that kept a copy of its write end would keep the
    # server from ever seeing EOF: the parent's stop() would have to SIGTERM it.
    before = children_of(os.getpid())
    recording = tmp_path / "session.jsonl"
    release_r, release_w = os.pipe()
    client = _client(fault_server_argv(), record=recording, shutdown_grace=5.0)
    with client:
        (server,) = _servers(before)
        stdin = _stdin_pipe(server)

        def child() -> object:
            os.close(release_w)
            held = stdin in _open_files()
            # Stay alive (holding whatever was inherited) until the parent has stopped.
            select.select([release_r], [], [], _DEADLINE)
            return {"holds the server's stdin": held}

        with _forked(child) as report:
            client.stop()  # while the child is alive
            os.close(release_w)
            got = report()
    os.close(release_r)
    assert got == {"result": {"holds the server's stdin": False}}
    assert _exit_codes(recording) == [0]  # it exited on EOF: no SIGTERM (-15) was needed
    assert children_of(os.getpid()) == before


# --- a client nobody stopped ------------------------------------------------------------------


def test_a_forgotten_client_is_collected_and_its_server_stopped() -> None:
    before, fds = children_of(os.getpid()), _fds()
    client = _client(py_server_argv())
    client.start()
    client.await_ready(30)
    (server,) = _servers(before)
    collected = weakref.ref(client)
    with pytest.warns(ResourceWarning, match="unclosed client 'peer'"):
        del client
        gc.collect()
    assert collected() is None
    wait_until(lambda: children_of(os.getpid()) == before, _DEADLINE, message="server reaped")
    assert process_group(server) == []
    wait_until(lambda: _driver_threads() == [], _DEADLINE, message="driver threads ended")
    wait_until(lambda: _fds() == fds, _DEADLINE, message="fds back to before")


def test_a_forgotten_client_whose_server_ignores_eof_and_sigterm_gets_sigkill() -> None:
    before = children_of(os.getpid())
    client = _client(
        fault_server_argv("--ignore-stdin-eof", "--ignore-sigterm"), shutdown_grace=0.2
    )
    client.start()
    client.await_ready(30)
    (server,) = _servers(before)
    collected = weakref.ref(client)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del client
        gc.collect()
    assert collected() is None
    assert _unclosed(caught) == ["unclosed client 'peer'"]
    wait_until(lambda: children_of(os.getpid()) == before, _DEADLINE, message="server reaped")
    assert process_group(server) == []
    wait_until(lambda: _driver_threads() == [], _DEADLINE, message="driver threads ended")


def test_a_forgotten_client_with_a_subscription_is_collected() -> None:
    # A subscription starts the client's updates thread, which must not hold the client.
    before = children_of(os.getpid())
    updates: list[str] = []
    client = _client(py_server_argv())
    client.start()
    client.await_ready(30)
    client.subscribe("test://counter", updates.append)
    client.call_tool("bump")
    wait_until(lambda: updates, _DEADLINE, message="an update")
    collected = weakref.ref(client)
    with pytest.warns(ResourceWarning, match="unclosed client 'peer'"):
        del client
        gc.collect()
    assert collected() is None
    wait_until(lambda: children_of(os.getpid()) == before, _DEADLINE, message="server reaped")
    wait_until(
        lambda: not [t for t in threading.enumerate() if t.name.startswith(("mcp-sync", "mcp-p"))],
        _DEADLINE,
        message="driver and updates threads ended",
    )


def test_a_forgotten_http_client_is_collected_and_its_connections_closed(
    py_http_server: Callable[[str], Any],
) -> None:
    # Its HTTP workers (one holds the listening GET stream open) must not hold it either.
    peer = py_http_server("stateful")
    fds = _fds()
    client = Client(name="remote", url=peer.url)
    client.start()
    client.await_ready(30)
    assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    assert any(name.startswith("mcp-sync-http") for name in _driver_threads())
    collected = weakref.ref(client)
    with pytest.warns(ResourceWarning, match="unclosed client 'remote'"):
        del client
        gc.collect()
    assert collected() is None
    wait_until(lambda: _driver_threads() == [], _DEADLINE, message="driver threads ended")
    wait_until(lambda: _fds() == fds, _DEADLINE, message="connections closed")


def test_a_forgotten_group_stops_every_server() -> None:
    before = children_of(os.getpid())
    group = ClientGroup(
        {
            "py": {"command": py_server_argv()[0], "args": py_server_argv()[1:]},
            "everything": {"command": everything_argv()[0], "args": everything_argv()[1:]},
        }
    )
    group.start()
    assert {s.state for s in group.await_ready(60).values()} == {"ready"}
    assert len(_servers(before)) == 2
    servers = _servers(before)
    collected = weakref.ref(group)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del group
        gc.collect()
    assert collected() is None
    assert sorted(_unclosed(caught)) == [
        "unclosed client 'everything'",
        "unclosed client 'py'",
    ]
    wait_until(lambda: children_of(os.getpid()) == before, _DEADLINE, message="servers reaped")
    assert [process_group(pid) for pid in servers] == [[], []]
    wait_until(lambda: _driver_threads() == [], _DEADLINE, message="driver threads ended")


def test_a_stopped_or_never_started_client_is_collected_without_a_warning() -> None:
    stopped = _client(fault_server_argv())
    with stopped:
        pass
    never = _client(fault_server_argv())
    refs = [weakref.ref(stopped), weakref.ref(never)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del stopped, never
        gc.collect()
    assert [ref() for ref in refs] == [None, None]
    assert [w for w in caught if w.category is ResourceWarning] == []


def test_a_second_stop_waits_until_the_first_has_torn_everything_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two threads stop one client: the one that came second returns only once the first has
    finished (its server reaped), and a stop after both returns at once."""
    import mcp_sync._session as session_module

    before = children_of(os.getpid())
    client = _client(fault_server_argv())
    client.start()
    client.await_ready(30)
    (server,) = _servers(before)
    tearing, go_on = threading.Event(), threading.Event()
    teardown = session_module.Session._teardown

    def held_teardown(self: Any) -> None:
        tearing.set()
        go_on.wait(_DEADLINE)
        teardown(self)

    monkeypatch.setattr(session_module.Session, "_teardown", held_teardown)
    first = threading.Thread(target=client.stop)
    first.start()
    assert tearing.wait(_DEADLINE)
    second_done: list[list[int]] = []
    second = threading.Thread(target=lambda: (client.stop(), second_done.append(_servers(before))))
    second.start()
    session = client._session  # type: ignore[attr-defined]
    wait_until(lambda: session._stopped is not None, _DEADLINE, message="second stop waiting")
    assert second_done == [] and second.is_alive()
    go_on.set()
    first.join(_DEADLINE)
    second.join(_DEADLINE)
    assert second_done == [[]]  # by the time it returned, the server was gone
    assert server not in children_of(os.getpid())
    client.stop()  # torn down: at once


def test_a_forked_child_that_drops_the_parents_client_stops_nothing() -> None:
    # The child's copy of the client is collected there: its finalizer must neither warn nor
    # touch the parent's server.
    before = children_of(os.getpid())
    holder = [_client(fault_server_argv())]
    holder[0].start()
    holder[0].await_ready(30)
    (server,) = _servers(before)

    def child() -> object:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            collected = weakref.ref(holder[0])
            holder.clear()
            gc.collect()
        return {"collected": collected() is None, "warnings": [str(w.message) for w in caught]}

    try:
        with _forked(child) as report:
            got = report()
        assert got == {"result": {"collected": True, "warnings": []}}
        assert _servers(before) == [server]
        assert holder[0].call_tool("echo", {"text": "after"}).text == "after"
    finally:
        holder[0].stop()
    assert children_of(os.getpid()) == before


# --- interpreter exit -------------------------------------------------------------------------


def _run_script(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", script],
        capture_output=True,
        text=True,
        timeout=_DEADLINE,
        check=False,
    )


def _kill_groups(pids: list[int]) -> None:
    """Clean up after a failed test: servers left running are killed."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def test_at_exit_servers_of_clients_never_stopped_are_stopped() -> None:
    # Neither server exits when its stdin closes, as the interpreter's exit would do: one
    # still held at exit is stopped as stop() does (SIGTERM after shutdown_grace), one dropped
    # just before exit is stopped by its finalizer's reaper (SIGKILL: it ignores SIGTERM).
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path[:0] = {sys.path!r}
        from mcp_sync import Client
        from tests.conftest import children_of
        argv = {fault_server_argv("--ignore-stdin-eof")!r}
        stubborn = {fault_server_argv("--ignore-stdin-eof", "--ignore-sigterm")!r}
        kept = Client(name="kept", command=argv[0], args=argv[1:], shutdown_grace=0.2)
        dropped = Client(name="dropped", command=stubborn[0], args=stubborn[1:],
                         shutdown_grace=0.2)
        for client in (kept, dropped):
            client.start()
            client.await_ready(30)
        print(*children_of(os.getpid()), flush=True)
        del client, dropped  # the last reference: collected here
        """
    )
    done = _run_script(script)
    pids = [int(pid) for pid in done.stdout.split()]
    try:
        assert done.returncode == 0, done.stderr
        assert len(pids) == 2
        assert [process_group(pid) for pid in pids] == [[], []]
        assert "unclosed client 'dropped': it was never stopped and it was garbage-" in done.stderr
        assert "unclosed client 'kept': it was never stopped and the interpreter is" in done.stderr
    finally:
        _kill_groups(pids)


def test_at_exit_of_a_forked_child_the_parents_clients_are_left_alone() -> None:
    # The child exits the ordinary way (atexit hooks run), holding a copy of the parent's
    # client: the parent's session must go on.
    script = textwrap.dedent(
        f"""
        import gc, os, sys
        sys.path[:0] = {sys.path!r}
        from mcp_sync import Client
        argv = {fault_server_argv()!r}
        client = Client(name="parent", command=argv[0], args=argv[1:])
        client.start()
        client.await_ready(30)
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # atexit runs here, in the child
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), flush=True)
        print(client.call_tool("echo", {{"text": "still here"}}).text, flush=True)
        client.stop()
        print("stopped", flush=True)
        """
    )
    done = _run_script(script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["child 0", "still here", "stopped"]
    assert "ResourceWarning" not in done.stderr


def test_a_forked_child_cannot_use_the_parents_group() -> None:
    # The group's fan-out reads a client's McpError as that server being down: in a forked
    # child it must raise UsedAfterFork, never answer an empty list as if no server were up.
    argv = fault_server_argv()
    spec = {"command": argv[0], "args": argv[1:]}
    with ClientGroup({"a": spec, "b": spec}) as group:
        assert {s.state for s in group.await_ready(60).values()} == {"ready"}
        tools = group.list_tools()

        def child() -> object:
            return _outcomes(
                {
                    "list_tools": lambda: group.list_tools(refresh=True),
                    "await_ready": lambda: group.await_ready(5),
                    "call_tool": lambda: group.call_tool("mcp__a__echo", {"text": "x"}),
                    "status": group.status,
                    "stop": group.stop,
                }
            )

        with _forked(child) as report:
            got = report()
        assert got == {
            "result": {
                **dict.fromkeys(
                    ("list_tools", "await_ready", "call_tool", "status"),
                    "UsedAfterFork/RuntimeError",
                ),
                "stop": "returned",
            }
        }
        assert group.list_tools(refresh=True) == tools
        assert group.call_tool("mcp__b__echo", {"text": "after"}).text == "after"
