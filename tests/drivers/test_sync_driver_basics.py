"""Direct tests of the blocking driver against real servers (the shared scenario table covers
both drivers; these pin down what only mcp_sync has: threads, blocking calls, interrupts)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import threading

import pytest

from mcp_core import InvalidSpec, NotReady, Spec
from mcp_sync import Client
from tests.conftest import (
    children_of,
    everything_argv,
    fault_server_argv,
    interrupt_child,
    py_server_argv,
)

pytestmark = pytest.mark.timeout(60)


def _client(argv: list[str], **fields: object) -> Client:
    return Client(name="peer", command=argv[0], args=argv[1:], **fields)


def _driver_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync")]


def test_start_and_stop_leave_nothing_behind() -> None:
    client = _client(everything_argv())
    assert client.status().state == "new" and repr(client).endswith(" new>")
    with pytest.raises(NotReady, match="not started") as refused:
        client.list_tools()  # before start(): nothing is fed, nothing runs
    assert refused.value.state == "new"
    client.start()
    status = client.await_ready(30)
    assert status.state == "ready"
    assert client.status().state == "ready"
    assert children_of(os.getpid())
    client.stop()
    assert client.status().state == "closed"
    assert children_of(os.getpid()) == []
    assert _driver_threads() == []
    with pytest.raises(NotReady):
        client.call_tool("echo", {"message": "late"})
    client.stop()  # idempotent


def test_a_client_stopped_before_it_started_never_starts() -> None:
    # As on the anyio driver: a client runs once, and stop() ends its one run even when it
    # comes first.
    client = _client(everything_argv())
    client.stop()
    assert client.status().state == "closed" and repr(client).endswith(" closed>")
    with pytest.raises(NotReady, match="closed"):
        client.start()
    with pytest.raises(NotReady, match="closed"):
        client.list_tools()
    client.stop()  # idempotent
    assert children_of(os.getpid()) == []
    assert _driver_threads() == []


def test_with_block_lists_tools_and_calls_echo() -> None:
    with _client(everything_argv()) as client:
        assert client.name == "peer"
        names = {tool.name for tool in client.list_tools()}
        assert "echo" in names
        result = client.call_tool("echo", {"message": "hello"})
        assert not result.is_error
        assert "hello" in result.text
    assert children_of(os.getpid()) == []


def test_eight_threads_call_at_once() -> None:
    results: dict[int, str] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def call(index: int, client: Client) -> None:
        try:
            barrier.wait(10)
            results[index] = client.call_tool("echo", {"message": f"thread {index}"}).text
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    with _client(everything_argv()) as client:
        threads = [threading.Thread(target=call, args=(i, client)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert errors == []
    assert all(f"thread {i}" in results[i] for i in range(8))


def test_spec_object_and_fields_and_invalid_spec() -> None:
    argv = py_server_argv()
    spec = Spec(name="py", command=argv[0], args=tuple(argv[1:]))
    with Client(spec, call_timeout=10) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        updates: list[tuple[float, float | None, str | None]] = []
        result = client.call_tool(
            "slow",
            {"seconds": 0.2, "steps": 2},
            progress=lambda *update: updates.append(update),
        )
        assert result.text == "done"
        assert updates == [(1, 2, "step 1/2"), (2, 2, "step 2/2")]
    with pytest.raises(InvalidSpec):
        Client(spec, no_such_field=1)
    assert _driver_threads() == []


def test_keyboard_interrupt_cancels_the_call_and_tells_the_server() -> None:
    # SIGINT goes to a child interpreter whose main thread waits in call_tool; the first
    # progress update (from a driver thread) says the request is in flight.
    argv = fault_server_argv()
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path[:0] = {sys.path!r}
        from tests.conftest import children_of
        from mcp_sync import Client
        client = Client(name="fault", command={argv[0]!r}, args={argv[1:]!r})
        client.start()
        client.await_ready(30)
        try:
            client.call_tool(
                "slow_progress", {{"steps": 600, "delay": 0.1}},
                progress=lambda *_: print("in flight", flush=True),
            )
        except KeyboardInterrupt:
            print("interrupted", client.status().in_flight, flush=True)
            print("cancelled", client.call_tool("cancelled_ids").text, flush=True)
        finally:
            client.stop()
        print("stopped", children_of(os.getpid()), flush=True)
        """
    )
    lines, returncode = interrupt_child(script, "in flight")
    assert lines[0] == "interrupted 0"
    assert len(json.loads(lines[1].removeprefix("cancelled "))) == 1  # notifications/cancelled
    assert lines[2:] == ["stopped []"]
    assert returncode == 0
