"""Fixtures every driver test gets (``fresh_era_verdicts``) or may ask for (``driver``, with
``anyio_backend`` to match: a test module that sets its own backend keeps it)."""

from __future__ import annotations

import pytest

from mcp_asyncio import _session as async_session
from mcp_sync import _session as sync_session
from tests.drivers.facade import DRIVERS


@pytest.fixture(autouse=True)
def fresh_era_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no era verdict. Each driver keeps one per server (command line,
    or URL) for the life of the process, and the test servers bind port 0: the OS may give a
    test's server the port of an earlier test's server, whose verdict would then decide this
    one's era without a probe ("modern": ready without any request, so no handshake, no login
    at connect, no session with a legacy server), whatever the test does."""
    monkeypatch.setattr(async_session, "_ERA_CACHE", {})
    monkeypatch.setattr(sync_session, "_ERA_CACHE", {})


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    """Each driver in turn: "asyncio", "trio" (both mcp_asyncio) and "sync" (mcp_sync)."""
    return str(request.param)


@pytest.fixture
def anyio_backend(driver: str) -> str:
    return "trio" if driver == "trio" else "asyncio"
