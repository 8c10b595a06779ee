"""No secret of the spec reaches a log record, even at DEBUG and while everything
fails: header values, env values, args, a URL's userinfo and query. Every record of every
logger (ours, the server's, any library's) is captured and searched, tracebacks included.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import mcp_core as core
from tests.conftest import children_of, fault_server_argv, wait_until
from tests.drivers.facade import Facade
from tests.servers.http_fault_server import HttpFaultServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

SECRETS = (
    "s3cr3t-header-token",
    "s3cr3t-userinfo-pass",
    "s3cr3t-query-token",
    "s3cr3t-env-value",
    "s3cr3t-arg-value",
)


@pytest.fixture(autouse=True)
def no_children_left() -> Iterator[None]:
    yield
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")


def assert_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    records = caplog.records
    # Not vacuous: records were captured, and every logger of ours was open at DEBUG.
    assert records
    for name in ("mcp_client.t", "mcp.server.t", "mcp_sync._client", "mcp_asyncio._client"):
        assert logging.getLogger(name).isEnabledFor(logging.DEBUG)
    texts = [caplog.text, *(r.getMessage() for r in records), *(str(r.args) for r in records)]
    for secret in SECRETS:
        leaks = [text for text in texts if secret in text]
        assert not leaks, f"{secret} leaked into: {leaks[0][:300]}"


def http_url(server: HttpFaultServer) -> str:
    # userinfo and a query: both count as secrets
    return (
        server.url.replace("http://", "http://user:s3cr3t-userinfo-pass@")
        + "?token=s3cr3t-query-token"
    )


async def exercise(c: Facade, *calls: str) -> None:
    """Wait fail-fast and call, swallowing the client's errors (their text is checked too,
    through the log); always stop."""
    try:
        try:
            await c.start()
            await c._run("await_ready", 10, fail_fast=True)
        except core.McpError as exc:
            logging.getLogger("test").warning("await_ready: %s", exc)
        for tool in calls:
            try:
                await c.call_tool(tool, {"text": "x"}, timeout=5)
            except core.McpError as exc:
                logging.getLogger("test").warning("call: %r %s", exc, exc)
    finally:
        await c.stop()


async def test_a_failing_http_session_logs_no_secret(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    headers = {"Authorization": "Bearer s3cr3t-header-token", "X-Api-Key": "s3cr3t-header-token"}
    with anyio.fail_after(60), HttpFaultServer() as server:
        # 1. refused at connect: 401
        server.set_fault("unauthorized", times=None)
        await exercise(Facade(driver, url=http_url(server), headers=headers), "echo")
        # 2. a session whose calls fail: 500, 401, a redirect, a dropped connection
        server.clear_faults()
        server.set_fault("server_error", method="tools/call")
        server.set_fault("unauthorized", method="tools/call")
        server.set_fault("redirect", method="tools/call", location="http://elsewhere.example/")
        c = Facade(driver, url=http_url(server), headers=headers, era="legacy")
        await exercise(c, "echo", "echo", "echo", "echo")
        port_url = http_url(server)
    # 3. nothing listens any more: connection refused, retried with backoff
    c = Facade(driver, url=port_url, headers=headers, reconnect=0.05)
    with anyio.fail_after(30):
        await exercise(c, "echo")
    assert_no_secret(caplog)


async def test_a_failing_stdio_spawn_logs_no_secret(
    driver: str, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.DEBUG)
    env = {"API_KEY": "s3cr3t-env-value"}
    secret_arg = "--token=s3cr3t-arg-value"
    with anyio.fail_after(60):
        # 1. the executable is missing
        missing = str(tmp_path / "no-such-server")
        await exercise(Facade(driver, command=missing, args=[secret_arg], env=env), "echo")
        # 2. the server dies at start, again and again
        argv = fault_server_argv("--exit-on-start", "3")
        crashing = Facade(
            driver, command=argv[0], args=[*argv[1:], secret_arg], env=env, reconnect=0.05
        )
        await exercise(crashing, "echo")
        # 3. the server starts and dies mid-call
        argv = fault_server_argv()
        dying = Facade(driver, command=argv[0], args=[*argv[1:], secret_arg], env=env)
        try:
            await dying.start()
            await dying.await_ready(10)
            with pytest.raises(core.ServerExited):
                await dying.call_tool("exit", {"code": 9, "stderr": "bye\n"})
        finally:
            await dying.stop()
    assert_no_secret(caplog)
