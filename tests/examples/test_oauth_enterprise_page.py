"""docs/oauth.md, "Enterprise-managed authorization": its blocks run against a local identity
provider, authorization server and MCP server (tests/servers/enterprise_server.py, which checks
both legs), what they print is checked, and they pass ``mypy --strict``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.examples.doc_blocks import Block, blocks, mypy_strict, run_block
from tests.servers.enterprise_server import (
    CLIENT_ID,
    CLIENT_SECRET,
    IDP_CLIENT_ID,
    EnterpriseServer,
)

PAGE = REPO_ROOT / "docs" / "oauth.md"
SECTION = "Enterprise-managed authorization"

pytestmark = pytest.mark.timeout(180)


def block(name: str) -> Block:
    (found,) = [b for b in blocks(PAGE, SECTION) if b.name == name]
    return found


def local(server: EnterpriseServer) -> dict[str, str]:
    """The page's example values, as the local servers know them."""
    return {
        "https://notes.example.com/mcp": server.url,
        "https://idp.example.com/oauth2/token": server.idp_token_endpoint,
        '"idp_client_id": "notes-agent"': f'"idp_client_id": "{IDP_CLIENT_ID}"',
        '"client_id": "notes-agent", "client_secret": "..."': (
            f'"client_id": "{CLIENT_ID}", "client_secret": "{CLIENT_SECRET}"'
        ),
    }


def legs(server: EnterpriseServer) -> list[str]:
    return [e for e in server.oauth_log if e not in ("metadata", "challenge")]


def test_every_block_is_run() -> None:
    names = [b.name for b in blocks(PAGE, SECTION)]
    assert names == ["enterprise-blocking", "enterprise-asyncio"]


def test_the_blocking_block_reads_the_id_token_file(tmp_path: Path) -> None:
    id_file = tmp_path / "id-token"
    with EnterpriseServer() as server:
        id_file.write_text(server.id_token())
        replace = local(server) | {"/run/user/1000/sso/id-token": str(id_file)}
        out = run_block(block("enterprise-blocking"), tmp_path, replace=replace)
        assert legs(server) == ["token:token-exchange", "token:id-jag"]
    assert out.splitlines() == ["signed in by the IdP"]


def test_the_asyncio_block_gets_the_id_token_from_its_callback(tmp_path: Path) -> None:
    with EnterpriseServer() as server:
        replace = local(server) | {"eyJhbGciOiJFUzI1NiJ9...": server.id_token()}
        out = run_block(block("enterprise-asyncio"), tmp_path, replace=replace)
        assert legs(server) == ["token:token-exchange", "token:id-jag"]
    assert out.splitlines() == ["signed in by the IdP"]


def test_mypy_strict(tmp_path: Path) -> None:
    mypy_strict(blocks(PAGE, SECTION), tmp_path)
