"""DPoP (RFC 9449; SEP-1932) on every driver, against a strict server on 127.0.0.1
(tests/servers/http_dpop_server.py) that checks every proof (PyJWT signature, unique ``jti``,
``htm``/``htu``/``iat``/``ath``, the key's RFC 7638 thumbprint against the token's ``jkt``) and
demands nonces from both its authorization server and its MCP endpoint: the token is
DPoP-bound, every request carries a fresh proof, nonces are answered without a new login, the
key is kept with the token and reused by the next run, and neither the key nor a proof reaches
a log record, a ``repr``, a ``Status`` or a recording."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import _mcp_io.oauth
import mcp_core as core
from mcp_core.driver import token_store_key
from mcp_sync import FileTokenStore
from tests.drivers.facade import Facade
from tests.drivers.test_oauth_drivers import _key_pair, authorizer, flows
from tests.servers.http_dpop_server import DpopServer
from tests.servers.http_oauth_server import OAuthServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def never(url: str) -> str:
    raise AssertionError("no login was expected")


def client(driver: str, server: OAuthServer, **fields: Any) -> Facade:
    fields.setdefault("authorize", authorizer(driver))
    return Facade(driver, url=server.url, **fields)


async def test_a_dpop_login_with_nonces_proofs_on_every_request_and_no_leak(
    driver: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    store, recording = FileTokenStore(tmp_path / "tokens.json"), tmp_path / "dpop.jsonl"
    shown: list[str] = []
    with DpopServer() as server:
        async with client(driver, server, token_store=store, record=str(recording)) as c:
            assert (await c.call_tool("echo", {"text": "one"})).text == "one"
            server.rotate_nonces()  # both sides want a new nonce: asked, answered, no login
            assert (await c.call_tool("echo", {"text": "two"})).text == "two"
            server.expire_access_tokens()  # a refresh, with a proof and the new nonce
            assert (await c.call_tool("echo", {"text": "three"})).text == "three"
            shown += [repr(c.aio or c.sync), repr(c.status()), str(c.status())]
        assert server.proof_errors == []
        # Every kind of MCP request went with a proof the server accepted: POSTs, the GET
        # stream, the DELETE that ended the session.
        proved = {r.method for r in server.requests if any(n == "dpop" for n, _ in r.headers)}
        assert proved == {"POST", "GET", "DELETE"}
        log = server.oauth_log
        assert flows(server) == [
            "register",
            "authorize",
            "nonce:as",
            "token:authorization_code",
            "nonce:rs",
            "nonce:rs",
            "nonce:as",
            "token:refresh_token",
        ]
        assert "challenge" in log
        secrets, proofs = server.secrets, server.proofs
    assert len(proofs) >= 10 and set(proofs) <= secrets
    record = store.load(token_store_key(server.url))
    assert record is not None and record.token_type == "DPoP" and record.dpop_key is not None
    key = json.loads(record.dpop_key)
    assert set(key) == {"kty", "crv", "x", "y", "d"}
    secrets |= {record.dpop_key, key["d"]}
    shown += [recording.read_text(), repr(record), repr(store)]
    for entry in caplog.records:
        shown += [entry.getMessage(), repr(entry.args), str(entry.exc_info)]
    leaks = sorted(s for s in secrets if any(s in text for text in shown))
    assert leaks == []


async def test_the_stored_key_serves_the_next_run_without_a_login(
    driver: str, tmp_path: Path
) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    with DpopServer() as server:
        async with client(driver, server, token_store=store) as c:
            assert (await c.call_tool("echo", {"text": "first"})).text == "first"
        before = flows(server)
        async with client(driver, server, token_store=store, authorize=never) as c:
            assert (await c.call_tool("echo", {"text": "again"})).text == "again"
        assert server.proof_errors == []
        # The bound token went with proofs of the stored key: no token request at all.
        assert [e for e in flows(server)[len(before) :] if e != "nonce:rs"] == []


async def test_a_bound_token_whose_key_is_gone_means_a_new_login(
    driver: str, tmp_path: Path
) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    with DpopServer(nonces=False) as server:
        async with client(driver, server, token_store=store) as c:
            await c.call_tool("echo", {"text": "first"})
        record = store.load(token_store_key(server.url))
        assert record is not None
        store.save(token_store_key(server.url), replace(record, dpop_key='{"kty": "RSA"}'))
        async with client(driver, server, token_store=store) as c:
            assert (await c.call_tool("echo", {"text": "again"})).text == "again"
        assert flows(server).count("authorize") == 2
        assert server.proof_errors == []


async def test_a_refused_proof_fails_typed_without_the_proof(
    driver: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with DpopServer(nonces=False) as server:
        server.refuse_proofs = True
        with pytest.raises(core.ConnectFailed) as info:
            async with client(driver, server, reconnect=0.05):
                pass
        proofs = server.proofs
    error = info.value
    assert error.permanent and isinstance(error.cause, core.AuthorizationFailed)
    assert "refused a fresh token" in str(error)
    shown = [str(error), repr(error), caplog.text]
    assert not [p for p in proofs if any(p in text for text in shown)]


async def test_a_bearer_answer_means_no_proofs(driver: str) -> None:
    with DpopServer(nonces=False, bind=False) as server:
        async with client(driver, server) as c:
            assert (await c.call_tool("echo", {"text": "b"})).text == "b"
        assert server.proof_errors == []  # no proof reached the MCP endpoint
        assert len(server.proofs) == 1  # the token request's


async def test_a_nonce_asked_of_a_signed_client_gets_a_new_assertion(
    driver: str, tmp_path: Path
) -> None:
    """The server spends a client assertion even when it asks for a nonce (RFC 7523 §3 lets it
    refuse a replayed one): the token request goes again with a newly signed assertion."""
    key_file, public = _key_pair("ec", tmp_path)
    oauth = {"grant": "client_credentials", "client_id": "signer", "key_file": str(key_file)}
    with DpopServer(clients={"signer": {"public_key": public}}) as server:
        async with client(driver, server, oauth=oauth) as c:
            assert (await c.call_tool("echo", {"text": "signed"})).text == "signed"
        assert server.proof_errors == []
        proved = {r.method for r in server.requests if any(n == "dpop" for n, _ in r.headers)}
        assert "POST" in proved  # the token is bound: MCP requests went with proofs
        assert flows(server)[:2] == ["nonce:as", "token:client_credentials"]


async def test_dpop_false_never_proves(driver: str) -> None:
    with DpopServer() as server:
        async with client(driver, server, oauth={"dpop": False}) as c:
            assert (await c.call_tool("echo", {"text": "b"})).text == "b"
        assert server.proofs == [] and server.proof_errors == []


async def test_dpop_true_refuses_a_server_without_it(driver: str) -> None:
    with OAuthServer() as server, pytest.raises(core.ConnectFailed) as info:
        async with client(driver, server, oauth={"dpop": True}):
            pass
    assert info.value.permanent and isinstance(info.value.cause, core.AuthorizationFailed)
    assert "dpop_signing_alg_values_supported" in str(info.value)


async def test_without_a_signer_auto_is_bearer_and_true_is_refused(
    driver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_mcp_io.oauth, "can_sign", lambda: False)
    monkeypatch.setattr("_mcp_io.dpop.can_sign", lambda: False)
    with DpopServer() as server:
        async with client(driver, server) as c:
            assert (await c.call_tool("echo", {"text": "b"})).text == "b"
        assert server.proofs == []
        with pytest.raises(core.InvalidSpec, match="pip install"):
            client(driver, server, oauth={"dpop": True})
