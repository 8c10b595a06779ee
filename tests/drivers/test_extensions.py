"""Extension negotiation against the official SDK's server (tests/servers/py_ext_server.py),
on each driver and in both eras: what the client declares reaches the server, and what the
server declares is in status().extensions."""

from __future__ import annotations

import json
import sys

import anyio
import pytest

from tests.conftest import SERVERS_DIR
from tests.drivers.facade import Facade

pytestmark = pytest.mark.anyio

DECLARED = {"io.modelcontextprotocol/tasks": {}, "com.example/mine": {"level": 1, "on": True}}


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_declared_extensions_reach_the_server_and_its_own_are_read(
    driver: str, era: str
) -> None:
    server = [sys.executable, str(SERVERS_DIR / "py_ext_server.py")]
    c = Facade(
        driver,
        command=server[0],
        args=server[1:],
        era="auto" if era == "modern" else era,
        extensions=DECLARED,
    )
    with anyio.fail_after(30):
        async with c:
            status = c.status()
            assert status.era == era
            seen = json.loads((await c.call_tool("client_extensions")).text)
    assert seen == DECLARED
    # The SDK declares its extensions in server/discover; on initialize it leaves them out.
    expected = {"com.example/echo-ext": {"level": 2}} if era == "modern" else {}
    assert status.extensions == expected


async def test_no_extensions_declared_means_none_reach_the_server(driver: str) -> None:
    server = [sys.executable, str(SERVERS_DIR / "py_ext_server.py")]
    with anyio.fail_after(30):
        async with Facade(driver, command=server[0], args=server[1:]) as c:
            assert json.loads((await c.call_tool("client_extensions")).text) == {}
