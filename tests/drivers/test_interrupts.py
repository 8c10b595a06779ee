"""Ctrl-C in an asyncio or trio program leaves no server process behind (the blocking
driver's twin is in test_sync_driver_basics.py). Each case runs in a child interpreter that
receives a real SIGINT while a call is in flight."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import fault_server_argv

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_keyboard_interrupt_stops_the_server(backend: str) -> None:
    argv = fault_server_argv()
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path[:0] = {sys.path!r}
        import anyio
        from tests.conftest import children_of
        from mcp_asyncio import Client

        async def main():
            async with Client(name="fault", command={argv[0]!r}, args={argv[1:]!r}) as c:
                print("children", len(children_of(os.getpid())), flush=True)
                await c.call_tool(
                    "slow_progress", {{"steps": 600, "delay": 0.1}},
                    progress=lambda *_: print("in flight", flush=True),
                )

        try:
            anyio.run(main, backend={backend!r})
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        print("left", children_of(os.getpid()), flush=True)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "children 1\n"
        assert child.stdout.readline() == "in flight\n"
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait()
    lines = [line for line in out.splitlines() if line != "in flight"]
    assert lines == ["interrupted", "left []"]
    assert child.returncode == 0
