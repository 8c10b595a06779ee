"""The anyio driver's lifecycle at its edges, on asyncio and trio: a client used in a child made
by ``os.fork()``, a client whose owner never stopped it (its run ended, or it was dropped), a
client used from another asyncio event loop, and ``stop()`` called from one of the client's
own handlers.

Fork tests fork this test process from a thread of its own (the child then runs in a thread
that is in no event loop, so it may start one), run one function there, report through a pipe
and always end with ``os._exit``; the parent waits for the report and for the child's exit by
a deadline (kills it after that). The peer is ``tests/servers/fault_server.py``: standard
library, exits 0 on stdin EOF, records the ids of the ``notifications/cancelled`` it gets.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import signal
import sys
import threading
import warnings
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio

from mcp_asyncio import Client, ClientGroup
from mcp_core import NotReady, UsedAfterFork, WrongEventLoop
from tests.conftest import children_of, fault_server_argv, report_and_exit, until

pytestmark = pytest.mark.timeout(90)

_DEADLINE = 30.0  # for a forked child, a server's exit, a shutdown


def _client(name: str = "peer", record: Path | None = None, **fields: Any) -> Client:
    argv = fault_server_argv()
    return Client(name=name, command=argv[0], args=argv[1:], record=record, **fields)


def _unclosed(caught: list[warnings.WarningMessage]) -> list[str]:
    """The ResourceWarnings caught, up to their colon ("unclosed client 'name'")."""
    return [str(w.message).split(":")[0] for w in caught if w.category is ResourceWarning]


def _exit_codes(recording: Path) -> list[int]:
    """The return codes of the recording's ProcessExited events."""
    lines = [json.loads(line) for line in recording.read_text(encoding="utf-8").splitlines()]
    return [line["returncode"] for line in lines if line.get("event") == "ProcessExited"]


def _server_pid(client: Client) -> int:
    (pid,) = children_of(os.getpid())
    return pid


def _gone(pid: int) -> bool:
    """``pid`` exited and was reaped: not even a zombie is left."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@contextlib.contextmanager
def _unraisable() -> Iterator[list[str]]:
    """What reached ``sys.unraisablehook`` meanwhile ("Exception ignored in ...": a
    coroutine or a trio nursery collected unfinished)."""
    seen: list[str] = []
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        seen.append(f"{unraisable.exc_type.__name__} in {unraisable.object!r}")

    sys.unraisablehook = hook
    try:
        yield seen
    finally:
        sys.unraisablehook = previous


# --- fork -----------------------------------------------------------------------------------


def _first_step(coroutine: Coroutine[Any, Any, Any]) -> str:
    """Run ``coroutine`` up to its first wait, without any event loop: what it did then. A
    refusal raises at once, a ``stop()`` with nothing to do returns at once; "waited" means it
    got as far as waiting for an answer (and has written its request already)."""
    try:
        coroutine.send(None)
    except StopIteration:
        return "returned"
    except BaseException as exc:
        return type(exc).__name__
    coroutine.close()
    return "waited"


def _fork(child: Callable[[], object]) -> Callable[[], Awaitable[Any]]:
    """Fork from a new thread; the child runs ``child()`` in that thread and writes
    ``{"result": ...}`` or ``{"raised": "Type: message"}`` to a pipe, then ``os._exit(0)``.
    Returns an async function that waits (by ``_DEADLINE``) for the report and the child's
    exit, returns the report, and kills the child past the deadline."""
    read_end, write_end = os.pipe()
    forked: list[int] = []

    def fork() -> None:
        pid = os.fork()
        if pid:
            forked.append(pid)
            return
        report_and_exit(child, write_end)  # the child: never returns

    thread = threading.Thread(target=fork)
    thread.start()
    thread.join()
    os.close(write_end)
    (pid,) = forked

    async def report() -> Any:
        chunks: list[bytes] = []
        pidfd = os.pidfd_open(pid)
        try:
            with anyio.fail_after(_DEADLINE):
                while chunk := (await _read(read_end)):
                    chunks.append(chunk)
                await anyio.wait_readable(pidfd)  # it exited
        except BaseException:
            os.kill(pid, signal.SIGKILL)
            raise
        finally:
            os.close(pidfd)
            os.close(read_end)
            _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert chunks, "the forked child ended without a report"
        return json.loads(b"".join(chunks))

    return report


async def _read(fd: int) -> bytes:
    await anyio.wait_readable(fd)
    return os.read(fd, 65536)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_forked_child_cannot_use_the_parents_client(anyio_backend: str) -> None:
    async with _client() as client:
        assert (await client.call_tool("echo", {"text": "before"})).text == "before"
        server = _server_pid(client)

        def child() -> dict[str, str]:
            steps = {
                "call_tool": lambda: client.call_tool("echo", {"text": "child"}),
                "list_tools": lambda: client.list_tools(refresh=True),
                "ping": client.ping,
                "start": client.start,
                "stop": client.stop,
                "__aexit__": lambda: client.__aexit__(None, None, None),
            }
            seen = {name: _first_step(step()) for name, step in steps.items()}
            for name, call in (("status", client.status), ("roots", client.notify_roots_changed)):
                try:
                    call()
                    seen[name] = "returned"
                except BaseException as exc:
                    seen[name] = type(exc).__name__
            return seen

        report = await _fork(child)()
        refused = dict.fromkeys(("call_tool", "list_tools", "ping", "start", "status", "roots"))
        assert report == {
            "result": {
                **{name: UsedAfterFork.__name__ for name in refused},
                "stop": "returned",
                "__aexit__": "returned",
            }
        }
        # The parent's session is as it was: nothing was written, signalled or closed.
        assert children_of(os.getpid()) == [server]
        for n in range(5):
            assert (await client.call_tool("echo", {"text": f"parent {n}"})).text == f"parent {n}"
        cancelled = await client.call_tool("cancelled_ids")
        assert json.loads(cancelled.text) == []
        assert client.status().state == "ready"
    assert children_of(os.getpid()) == []


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_forked_child_runs_a_client_of_its_own(anyio_backend: str) -> None:
    async with _client() as client:
        server = _server_pid(client)

        async def in_child() -> str:
            await client.stop()  # the parent's: returns, touching nothing
            async with _client("child") as own:
                return (await own.call_tool("echo", {"text": "own"})).text

        report = await _fork(lambda: anyio.run(in_child, backend=anyio_backend))()
        assert report == {"result": "own"}
        assert children_of(os.getpid()) == [server]
        assert (await client.call_tool("echo", {"text": "parent"})).text == "parent"
    assert children_of(os.getpid()) == []


# --- forgotten clients ------------------------------------------------------------------------


async def _start_and_forget(recording: Path) -> tuple[Client, int]:
    client = _client("forgotten", record=recording)
    await client.start()
    await client.await_ready(_DEADLINE)
    assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
    return client, _server_pid(client)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_client_never_stopped_is_stopped_when_its_run_ends(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # trio: the run used to end in TrioInternalError with the server left running, and a call
    # in a later run hung. Now both runs end cleanly and the server is stopped and reaped.
    recording = tmp_path / "session.jsonl"
    caplog.set_level(logging.ERROR, logger="asyncio")
    with warnings.catch_warnings(record=True) as caught, _unraisable() as unraisable:
        warnings.simplefilter("always")
        client, server = anyio.run(_start_and_forget, recording, backend=backend)
        gc.collect()
    assert _unclosed(caught) == ["unclosed client 'forgotten'"]
    assert unraisable == []
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
    assert _gone(server)
    assert children_of(os.getpid()) == []
    assert client.status().state == "closed"
    if backend == "trio":
        # The shutdown had the run's last steps: stdin closed, and the server exited on it.
        assert _exit_codes(recording) == [0]

    async def later() -> None:
        with anyio.fail_after(_DEADLINE):
            await client.call_tool("echo", {"text": "again"})

    with pytest.raises(NotReady):
        anyio.run(later, backend=backend)


def test_a_group_never_stopped_is_stopped_when_its_trio_run_ends() -> None:
    argv = fault_server_argv()
    spec = {"command": argv[0], "args": argv[1:]}

    async def main() -> ClientGroup:
        group = ClientGroup({"a": spec, "b": spec})
        await group.start()
        await group.await_ready(_DEADLINE)
        assert len(children_of(os.getpid())) == 2
        return group

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trio.run(main)
    assert sorted(_unclosed(caught)) == ["unclosed client 'a'", "unclosed client 'b'"]
    assert children_of(os.getpid()) == []


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_client_dropped_while_its_loop_runs_is_stopped(
    anyio_backend: str, tmp_path: Path
) -> None:
    recording = tmp_path / "session.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client, server = await _start_and_forget(recording)
        dropped = weakref.ref(client)
        del client
        gc.collect()
        assert dropped() is None
        assert _unclosed(caught) == ["unclosed client 'forgotten'"]
    # Stopped as stop() would: stdin closed, and the server exited on it (code 0), reaped.
    await until(lambda: _gone(server), "the server was reaped", _DEADLINE)
    await until(lambda: _exit_codes(recording) == [0], "the recording was closed", _DEADLINE)
    assert children_of(os.getpid()) == []


def test_a_client_dropped_when_its_loop_no_longer_runs_has_its_server_killed() -> None:
    with asyncio.Runner() as runner:
        client, server = runner.run(_start_and_forget(Path(os.devnull)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del client
            gc.collect()
        assert _unclosed(caught) == ["unclosed client 'forgotten'"]
        assert _gone(server)  # killed and reaped at once: no loop runs to do it later
    assert children_of(os.getpid()) == []


# --- another event loop -----------------------------------------------------------------------


def test_an_asyncio_client_refuses_another_loop_and_stays_usable_on_its_own() -> None:
    with asyncio.Runner() as home, asyncio.Runner() as other:

        async def started() -> Client:
            client = _client()
            await client.__aenter__()
            return client

        client = home.run(started())

        async def elsewhere() -> dict[str, str]:
            seen: dict[str, str] = {}
            calls: dict[str, Callable[[], Awaitable[object]]] = {
                "call_tool": lambda: client.call_tool("echo", {"text": "elsewhere"}),
                "ping": client.ping,
                "subscribe": lambda: client.subscribe("test://x", lambda uri: None),
                "start": client.start,
                "stop": client.stop,
            }
            for name, call in calls.items():
                try:
                    await call()
                    seen[name] = "returned"
                except WrongEventLoop as exc:
                    assert "belongs to the loop it was started on" in str(exc)
                    assert isinstance(exc, RuntimeError)
                    seen[name] = "WrongEventLoop"
            for name, plain in (("status", client.status), ("roots", client.notify_roots_changed)):
                try:
                    plain()
                    seen[name] = "returned"
                except WrongEventLoop:
                    seen[name] = "WrongEventLoop"
            return seen

        seen = other.run(elsewhere())
        assert seen == dict.fromkeys(
            ("call_tool", "ping", "subscribe", "start", "stop", "status", "roots"),
            "WrongEventLoop",
        )

        async def at_home() -> str:
            text = (await client.call_tool("echo", {"text": "home"})).text
            await client.stop()
            return text

        assert home.run(at_home()) == "home"
        assert other.run(client.stop()) is None  # stopped: nothing left to refuse
    assert children_of(os.getpid()) == []


# --- stop() from the client's own handler -----------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_stop_from_a_handler_of_the_client_ends_the_session(anyio_backend: str) -> None:
    holder: list[Client] = []
    seen: list[str] = []

    async def sampling(params: object) -> dict[str, object]:
        await holder[0].stop()  # cannot wait for its own task: asks for the shutdown
        # ... and the session closes before the handler goes on, so that the server cannot
        # answer the call in between, whichever task the loop runs next.
        seen.append(holder[0].status().state)
        return {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}

    client = _client(sampling=sampling)
    holder.append(client)
    async with client:
        with anyio.fail_after(_DEADLINE), pytest.raises(NotReady):
            await client.call_tool("unknown_server_request")
    assert seen == ["closed"]  # closing: no call is taken any more
    assert client.status().state == "closed"
    assert children_of(os.getpid()) == []


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_forked_child_cannot_use_the_parents_group(anyio_backend: str) -> None:
    # The group's fan-out reads a client's McpError as that server being down: in a forked
    # child it must raise UsedAfterFork, never answer an empty list as if no server were up.
    argv = fault_server_argv()
    spec = {"command": argv[0], "args": argv[1:]}
    async with ClientGroup({"a": spec, "b": spec}) as group:
        await group.await_ready(60)
        tools = await group.list_tools()

        def child() -> dict[str, str]:
            steps = {
                "list_tools": lambda: group.list_tools(refresh=True),
                "await_ready": lambda: group.await_ready(5),
                "call_tool": lambda: group.call_tool("mcp__a__echo", {"text": "x"}),
                "stop": group.stop,
            }
            seen = {name: _first_step(step()) for name, step in steps.items()}
            try:
                group.status()
                seen["status"] = "returned"
            except BaseException as exc:
                seen["status"] = type(exc).__name__
            return seen

        report = await _fork(child)()
        refused = ("list_tools", "await_ready", "call_tool", "status")
        assert report == {
            "result": {**dict.fromkeys(refused, UsedAfterFork.__name__), "stop": "returned"}
        }
        assert await group.list_tools(refresh=True) == tools
        assert (await group.call_tool("mcp__b__echo", {"text": "after"})).text == "after"
