"""Ctrl-C in an asyncio or trio program leaves no server process behind (the blocking
driver's twin is in test_sync_driver_basics.py). Each case runs in a child interpreter that
receives a real SIGINT while a call is in flight."""

from __future__ import annotations

import sys
import textwrap

import pytest

from tests.conftest import fault_server_argv, interrupt_child

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
    lines, returncode = interrupt_child(script, "children 1", "in flight")
    assert lines == ["interrupted", "left []"]
    assert returncode == 0
