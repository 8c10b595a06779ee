"""The anyio driver's lifecycle at its edges, on asyncio and trio: a client whose owner never
stopped it (its run ended, or it was dropped), and ``stop()`` called from one of the client's
own handlers.

The peer is ``tests/servers/fault_server.py``: standard library, exits 0 on stdin EOF.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import sys
import warnings
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio

from mcp_asyncio import Client, ClientGroup
from mcp_core import NotReady
from tests.conftest import children_of, fault_server_argv

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


async def _until(predicate: Callable[[], bool], what: str) -> None:
    """Wait, by ``_DEADLINE``, until ``predicate()`` holds (the process table and a reaped
    process have no event of their own to wait for)."""
    with anyio.fail_after(_DEADLINE):
        while not predicate():
            await anyio.sleep(0.01)
    assert predicate(), what


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
    await _until(lambda: _gone(server), "the server was reaped")
    await _until(lambda: _exit_codes(recording) == [0], "the recording was closed")
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


# --- stop() from the client's own handler -----------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_stop_from_a_handler_of_the_client_ends_the_session(anyio_backend: str) -> None:
    holder: list[Client] = []

    async def sampling(params: object) -> dict[str, object]:
        await holder[0].stop()  # cannot wait for its own task: asks for the shutdown
        return {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}

    client = _client(sampling=sampling)
    holder.append(client)
    async with client:
        with anyio.fail_after(_DEADLINE), pytest.raises(NotReady):
            await client.call_tool("unknown_server_request")
    assert client.status().state == "closed"
    assert children_of(os.getpid()) == []
