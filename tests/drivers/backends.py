"""The anyio backends alone, for a module of mcp_asyncio tests (no blocking twin to compare):
``from tests.drivers.backends import anyio_backends  # noqa: F401`` runs each of its anyio
tests on asyncio and on trio, instead of once per driver as ``conftest.anyio_backend`` does."""

from __future__ import annotations

import pytest

ANYIO_BACKENDS = ("asyncio", "trio")


@pytest.fixture(params=ANYIO_BACKENDS, name="anyio_backend")
def anyio_backends(request: pytest.FixtureRequest) -> str:
    return str(request.param)
