"""A server that cannot start, on each driver and transport: the `with` block raises one
ConnectFailed, with the typed cause and the number of attempts, and the first failed attempt
is a WARNING record at once.

The times asserted are bounds far from what they guard against: a failure that repeats ends
the block at the second attempt (about 1 s of backoff), not at ``init_timeout`` (60 s here);
one that may pass by itself (nothing listening) waits for its ``init_timeout``.
"""

from __future__ import annotations

import logging
import socket
import sys
import time

import anyio
import pytest

import mcp_core as core
from tests.drivers.facade import Facade
from tests.servers.http_fault_server import HttpFaultServer

pytestmark = pytest.mark.anyio

INIT_TIMEOUT = 60.0


def _warnings(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == f"mcp_client.{name}"
        and r.levelno == logging.WARNING
        and "could not connect (attempt 1)" in r.getMessage()
    ]


async def _start_fails(c: Facade) -> tuple[core.ConnectFailed, float]:
    """Enter the client's `with` block, which must raise ConnectFailed; with the time taken."""
    began = time.monotonic()
    with anyio.fail_after(INIT_TIMEOUT + 30), pytest.raises(core.ConnectFailed) as raised:
        async with c:
            pass
    return raised.value, time.monotonic() - began


async def test_a_server_that_exits_at_start_fails_at_the_second_attempt(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    c = Facade(
        driver,
        name="broken",
        command=sys.executable,
        args=["-c", "import no_such_module_for_this_test"],
        init_timeout=INIT_TIMEOUT,
    )
    error, took = await _start_fails(c)
    assert took < INIT_TIMEOUT / 2, took
    assert error.attempts == 2 and error.gave_up and not error.permanent
    assert isinstance(error.cause, core.ServerExited) and error.cause.code == 1
    message = str(error)
    assert message.startswith("could not connect (2 attempts in ")
    assert "the last two failing the same way): the server exited with code 1" in message
    assert message.endswith("No module named 'no_such_module_for_this_test'")
    (warning,) = _warnings(caplog, "broken")
    assert "No module named 'no_such_module_for_this_test'" in warning.getMessage()
    assert c.status().state == "closed"


async def test_a_url_with_no_mcp_server_names_it_and_suggests_mcp(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with HttpFaultServer() as server:
        wrong = server.url.removesuffix("/mcp") + "/api"
        c = Facade(driver, name="wrong-path", url=wrong, init_timeout=INIT_TIMEOUT)
        error, took = await _start_fails(c)
    assert took < INIT_TIMEOUT / 2, took
    assert error.attempts == 2 and error.gave_up
    assert isinstance(error.cause, core.HttpError) and error.cause.status == 404
    expected = (
        f"{wrong} answered HTTP 404 to the initialize POST and HTTP 404 to the HTTP+SSE GET: "
        f"no MCP server there; most servers serve MCP at /mcp ({server.url})"
    )
    assert str(error).endswith(expected)
    (warning,) = _warnings(caplog, "wrong-path")
    assert expected in warning.getMessage()


async def test_nothing_listening_says_refused_and_waits_for_init_timeout(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with socket.socket() as probe:  # a port nothing listens on once this is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    c = Facade(driver, name="down", url=url, init_timeout=3, reconnect=0.2)
    error, took = await _start_fails(c)
    assert took >= 3  # a server may still be starting: waited for, up to init_timeout
    assert error.attempts >= 2 and error.gave_up
    assert isinstance(error.cause, core.ServerUnreachable) and error.cause.url == url
    assert "refused" in error.cause.reason.lower()
    assert str(error).startswith(f"could not connect ({error.attempts} attempts in 3.")
    assert f"nothing answered at {url} (" in str(error)
    assert _warnings(caplog, "down")
