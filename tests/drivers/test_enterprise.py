"""Enterprise-managed authorization (SEP-990) on every driver, against a real identity
provider, authorization server and MCP server on 127.0.0.1 (tests/servers/enterprise_server.py)
that check both legs' parameters: the user's ID token (from ``id_token_file``, read afresh, or
``assertion=``) is exchanged for an ID-JAG, the ID-JAG for a token; a refusal at either leg is
final and names the leg; an expired token runs both legs again once for all waiting calls; no
ID token, ID-JAG, client secret or token reaches a log record, a ``repr``, a ``Status`` or a
recording."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

import mcp_core as core
from tests.drivers.facade import Facade
from tests.drivers.test_workload_identity import callback_of
from tests.servers.enterprise_server import (
    CLIENT_ID,
    ID_JAG_TYPE,
    ID_TOKEN_TYPE,
    IDP_CLIENT_ID,
    TOKEN_EXCHANGE,
    EnterpriseServer,
)
from tests.servers.http_oauth_server import SCOPE

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def legs(server: EnterpriseServer) -> list[str]:
    return [e for e in server.oauth_log if e not in ("metadata", "challenge")]


async def test_both_legs_from_an_id_token_file_read_afresh_and_nothing_leaks(
    driver: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    id_file, recording = tmp_path / "id-token", tmp_path / "ema.jsonl"
    with EnterpriseServer() as server:
        first = server.id_token()
        id_file.write_text(first + "\n")
        shown: list[str] = []
        oauth = server.oauth(id_token_file=str(id_file))
        async with Facade(driver, url=server.url, oauth=oauth, record=str(recording)) as c:
            assert (await c.call_tool("echo", {"text": "ema"})).text == "ema"
            second = server.id_token()
            id_file.write_text(second)  # the sign-on renewed it
            server.expire_access_tokens()
            assert (await c.call_tool("echo", {"text": "again"})).text == "again"
            shown += [repr(c.aio or c.sync), repr(c.status()), str(c.status())]
        assert legs(server) == ["token:token-exchange", "token:id-jag"] * 2
        [one, two] = server.exchanges
        assert one == {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG_TYPE,
            "audience": server.issuer,
            "resource": server.url,
            "scope": SCOPE,  # the challenge's
            "subject_token": "[masked]",
            "subject_token_type": ID_TOKEN_TYPE,
            "client_id": IDP_CLIENT_ID,
        }
        assert two == one
        secrets = server.secrets
    assert {first, second} <= secrets  # each presented
    shown.append(recording.read_text())
    for record in caplog.records:
        shown += [record.getMessage(), repr(record.args), str(record.exc_info)]
    assert len(caplog.records) > 0
    leaks = sorted(s for s in secrets if any(s in text for text in shown))
    assert leaks == []


def id_token_callback(driver: str, server: EnterpriseServer, issued: list[str]) -> Any:
    """``assertion=`` for ``driver``: the user's current ID token each call."""
    return callback_of(driver, server.id_token, issued)


async def test_the_callback_the_idp_secret_and_client_secret_post(driver: str) -> None:
    issued: list[str] = []
    with EnterpriseServer(auth_methods=("client_secret_post",), idp_client_secret="idp-s3") as s:
        callback = id_token_callback(driver, s, issued)
        async with Facade(driver, url=s.url, oauth=s.oauth(), assertion=callback) as c:
            assert (await c.call_tool("echo", {"text": "cb"})).text == "cb"
        assert legs(s) == ["token:token-exchange", "token:id-jag"]
        assert len(issued) == 1


async def test_an_expired_token_runs_both_legs_once_for_all_waiting_calls(
    driver: str, tmp_path: Path
) -> None:
    id_file = tmp_path / "id-token"
    with EnterpriseServer() as server:
        id_file.write_text(server.id_token())
        oauth = server.oauth(id_token_file=str(id_file))
        async with Facade(driver, url=server.url, oauth=oauth) as c:
            await c.call_tool("echo", {"text": "first"})
            server.expire_access_tokens()
            texts: list[str] = []

            async def call(n: int) -> None:
                texts.append((await c.call_tool("echo", {"text": f"c{n}"})).text)

            async with anyio.create_task_group() as group:
                for n in range(3):
                    group.start_soon(call, n)
            assert sorted(texts) == ["c0", "c1", "c2"]
        assert legs(server) == ["token:token-exchange", "token:id-jag"] * 2


async def test_the_idp_token_endpoint_found_from_its_issuer(driver: str, tmp_path: Path) -> None:
    id_file = tmp_path / "id-token"
    with EnterpriseServer() as server:
        id_file.write_text(server.id_token())
        oauth = server.oauth(id_token_file=str(id_file), idp_issuer=server.idp_issuer)
        del oauth["idp_token_endpoint"]
        async with Facade(driver, url=server.url, oauth=oauth) as c:
            assert (await c.call_tool("echo", {"text": "found"})).text == "found"
            server.expire_access_tokens()
            assert (await c.call_tool("echo", {"text": "again"})).text == "again"
        # The metadata is read once; both legs run for each token.
        assert legs(server) == ["idp-metadata"] + ["token:token-exchange", "token:id-jag"] * 2


@pytest.mark.parametrize(
    ("leg", "words"),
    [
        ("idp", "the identity provider's token endpoint refused"),
        ("as", "the authorization server refused the ID-JAG"),
    ],
)
async def test_a_refusal_at_either_leg_is_final_and_names_the_leg(
    driver: str, tmp_path: Path, leg: str, words: str
) -> None:
    id_file = tmp_path / "id-token"
    with EnterpriseServer() as server:
        if leg == "idp":
            server.refuse_exchange = "invalid_grant"
        else:
            server.refuse_grant = "invalid_grant"
        id_file.write_text(server.id_token())
        oauth = server.oauth(id_token_file=str(id_file))
        with pytest.raises(core.ConnectFailed) as info:
            async with Facade(driver, url=server.url, oauth=oauth, reconnect=0.05):
                pass
        error = info.value
        assert error.permanent
        cause = error.cause
        assert isinstance(cause, core.AuthorizationFailed) and cause.error_code == "invalid_grant"
        assert words in cause.detail
        expected = (
            ["refused:token-exchange"]
            if leg == "idp"
            else ["token:token-exchange", "refused:id-jag"]
        )
        assert legs(server) == expected  # once: no retry, no other grant
        text = str(error) + repr(error)
        assert not [s for s in server.secrets if s in text]


async def test_the_wrong_client_at_the_authorization_server_is_refused_there(driver: str) -> None:
    with EnterpriseServer() as server:
        oauth = server.oauth(client_secret="not-the-secret")
        callback = id_token_callback(driver, server, [])
        with pytest.raises(core.ConnectFailed, match="the authorization server refused") as info:
            async with Facade(driver, url=server.url, oauth=oauth, assertion=callback):
                pass
        assert isinstance(info.value.cause, core.AuthorizationFailed)
        assert info.value.cause.error_code == "invalid_client"
        assert "not-the-secret" not in str(info.value)


async def test_an_unreadable_id_token_file_abandons_before_any_exchange(
    driver: str, tmp_path: Path
) -> None:
    absent = tmp_path / "absent"
    with EnterpriseServer() as server:
        oauth = server.oauth(id_token_file=str(absent))
        with pytest.raises(core.ConnectFailed, match=f"the ID token file {absent} cannot be read"):
            async with Facade(driver, url=server.url, oauth=oauth):
                pass
        assert legs(server) == []


@pytest.mark.parametrize(
    ("extra", "with_callback", "words"),
    [
        ({}, False, "neither an oauth id_token_file nor an assertion="),
        ({"id_token_file": "/t"}, True, "both oauth id_token_file and assertion="),
    ],
)
async def test_an_enterprise_client_needs_exactly_one_source_for_the_id_token(
    driver: str, extra: dict[str, Any], with_callback: bool, words: str
) -> None:
    oauth = {
        "grant": "enterprise",
        "client_id": CLIENT_ID,
        "idp_token_endpoint": "https://idp.example.com/token",
        "idp_client_id": IDP_CLIENT_ID,
        **extra,
    }
    callback = (lambda: "a.b.c") if with_callback else None
    with pytest.raises(core.InvalidSpec, match=words):
        Facade(driver, url="http://127.0.0.1:9/mcp", oauth=oauth, assertion=callback)
