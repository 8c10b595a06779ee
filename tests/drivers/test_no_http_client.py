"""A ``url`` spec when no HTTP stack is importable raises ``NoHttpClient``. Our stack is
h11 and the socket module (imported with either driver) plus ``ssl`` for https, which a Python
built without OpenSSL lacks: simulated here by making ``import ssl`` fail. Constructors only:
nothing is started, no I/O."""

from __future__ import annotations

import sys
from typing import Any

import pytest

import mcp_asyncio
import mcp_core as core
import mcp_sync

CLIENTS = [mcp_asyncio.Client, mcp_sync.Client]
GROUPS = [mcp_asyncio.ClientGroup, mcp_sync.ClientGroup]
SECRET = "Bearer s3cr3t-token"
HTTPS = {"url": "https://user:pw@mcp.example.com/mcp?key=k", "headers": {"Authorization": SECRET}}


@pytest.fixture
def no_ssl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ssl", None)  # `import ssl` now raises ImportError


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__module__.split(".")[0])
def test_an_https_spec_without_ssl_raises_no_http_client(client: Any, no_ssl: None) -> None:
    with pytest.raises(core.NoHttpClient, match="ssl") as refused:
        client(name="remote", **HTTPS)
    for secret in ("s3cr3t", "pw", "key=k", "mcp.example.com"):
        assert secret not in str(refused.value)
    client(name="local", url="http://127.0.0.1:9/mcp")  # http:// needs no ssl
    client(name="stdio", command="server")


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: g.__module__.split(".")[0])
def test_a_group_leaves_that_server_out_and_says_why(group: Any, no_ssl: None) -> None:
    made = group({"remote": HTTPS, "local": {"command": "server"}})
    status = made.status()
    assert status["remote"].state == "closed" and "ssl" in (status["remote"].last_error or "")
    assert "s3cr3t" not in (status["remote"].last_error or "")
    assert list(made.clients) == ["local"] and status["local"].last_error is None
    assert status["local"].state == "new"  # not started yet, unlike the refused one


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: c.__module__.split(".")[0])
def test_with_ssl_an_https_spec_is_accepted(client: Any) -> None:
    client(name="remote", **HTTPS)


@pytest.mark.parametrize("module", ["mcp_asyncio", "mcp_sync"])
def test_either_driver_imports_without_ssl(module: str) -> None:
    """Only https needs ssl: the driver itself (stdio, http://) imports without it."""
    import subprocess

    code = f"import sys; sys.modules['ssl'] = sys.modules['_ssl'] = None; import {module}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
