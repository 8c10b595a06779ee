"""docs/oauth.md, "DPoP": its blocks run against a strict DPoP server on 127.0.0.1
(tests/servers/http_dpop_server.py, nonces demanded by both sides), which checks every proof
they send; what they print is checked, and they pass ``mypy --strict``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.examples.doc_blocks import Block, blocks, mypy_strict, run_block
from tests.servers.http_dpop_server import DpopServer

PAGE = REPO_ROOT / "docs" / "oauth.md"
SECTION = "DPoP"
URL = "https://ledger.example.com/mcp"
CLIENT = {"svc": {"client_secret": "s3cret"}}

pytestmark = pytest.mark.timeout(180)


def block(name: str) -> Block:
    (found,) = [b for b in blocks(PAGE, SECTION) if b.name == name]
    return found


def test_the_dpop_blocks_are_run() -> None:
    assert [b.name for b in blocks(PAGE, SECTION)] == ["dpop-blocking", "dpop-asyncio"]


def test_the_blocking_block_binds_its_token_and_keeps_the_key(tmp_path: Path) -> None:
    store = tmp_path / "tokens.json"
    with DpopServer(clients=CLIENT) as server:
        replace = {URL: server.url, "FileTokenStore()": f"FileTokenStore({str(store)!r})"}
        assert run_block(block("dpop-blocking"), tmp_path, replace=replace) == "bound\n"
        assert server.proof_errors == []
        assert "token:client_credentials" in server.oauth_log and "nonce:rs" in server.oauth_log
        proofs = server.proofs
    [record] = json.loads(store.read_text())["servers"].values()
    assert record["token_type"] == "DPoP" and "d" in json.loads(record["dpop_key"])
    assert len(proofs) >= 4  # the token request twice (a nonce), then each MCP request


def test_the_asyncio_block_uses_dpop_where_offered(tmp_path: Path) -> None:
    with DpopServer(clients=CLIENT) as server:
        out = run_block(block("dpop-asyncio"), tmp_path, replace={URL: server.url})
        assert out == "auto\n"
        assert server.proof_errors == [] and server.proofs


def test_mypy_strict(tmp_path: Path) -> None:
    mypy_strict(blocks(PAGE, SECTION), tmp_path)
