"""Workload identity (SEP-1933) on every driver, against a real authorization server on
127.0.0.1 (tests/servers/http_oauth_server.py with ``workload_key``) that verifies the
platform's JWT: ``oauth={"grant": "jwt_bearer", "assertion_file": ...}`` exchanges it for a
token, reads the file afresh for each exchange (platforms rotate it), stops at the first
refusal, and never shows the JWT in a log record, a ``repr``, a ``Status`` or a recording."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

import mcp_core as core
from tests.drivers.facade import Facade
from tests.servers.http_oauth_server import OAuthServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

PLATFORM_KEY = rsa.generate_private_key(65537, 2048)  # the platform that issues workload JWTs
PUBLIC_PEM = PLATFORM_KEY.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
)


def workload_jwt(
    audience: str, subject: str = "system:serviceaccount:ns:agent", **claims: Any
) -> str:
    now = int(time.time())
    body = {"iss": "https://platform.example", "sub": subject, "aud": audience}
    body |= {"iat": now, "exp": now + 600, **claims}
    return jwt.encode(body, PLATFORM_KEY, algorithm="RS256")


def flows(server: OAuthServer) -> list[str]:
    return [e for e in server.oauth_log if e not in ("metadata", "challenge")]


def oauth(path: Path) -> dict[str, Any]:
    return {"grant": "jwt_bearer", "assertion_file": str(path)}


async def test_the_platform_jwt_is_exchanged_and_read_afresh_after_rotation(
    driver: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token_file, recording = tmp_path / "token", tmp_path / "wif.jsonl"
    with OAuthServer(workload_key=PUBLIC_PEM) as server:
        first = workload_jwt(server.issuer)
        token_file.write_text(first + "\n")  # as a platform writes it
        shown: list[str] = []
        c = Facade(driver, url=server.url, oauth=oauth(token_file), record=str(recording))
        async with c:
            assert (await c.call_tool("echo", {"text": "wif"})).text == "wif"
            rotated = workload_jwt(server.issuer, jti="second")
            token_file.write_text(rotated)  # the platform rotates it
            server.expire_access_tokens()  # the server's side of an expiry
            assert (await c.call_tool("echo", {"text": "again"})).text == "again"
            shown += [repr(c.aio or c.sync), repr(c.status()), str(c.status())]
        assert flows(server) == ["token:jwt-bearer", "token:jwt-bearer"]
        secrets = server.secrets
    assert {first, rotated} <= secrets  # both presented, each once
    shown.append(recording.read_text())
    assert "AssertionSigned" in shown[-1]
    for record in caplog.records:
        shown += [record.getMessage(), repr(record.args), str(record.exc_info)]
    assert len(caplog.records) > 0
    leaks = sorted(s for s in secrets if any(s in text for text in shown))
    assert leaks == []


@pytest.mark.parametrize("problem", ["wrong audience", "expired"])
async def test_a_refused_jwt_is_final_one_request_no_retry(
    driver: str, tmp_path: Path, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token_file = tmp_path / "token"
    with OAuthServer(workload_key=PUBLIC_PEM) as server:
        if problem == "wrong audience":
            token_file.write_text(workload_jwt("https://other.example.com"))
        else:
            token_file.write_text(workload_jwt(server.issuer, exp=int(time.time()) - 60))
        with pytest.raises(core.ConnectFailed) as info:
            async with Facade(driver, url=server.url, oauth=oauth(token_file), reconnect=0.05):
                pass
        assert flows(server) == ["refused:jwt-bearer"]  # no retry, no other grant
    error = info.value
    assert error.permanent and isinstance(error.cause, core.AuthorizationFailed)
    assert error.cause.error_code == "invalid_grant"
    assert "could not connect" in caplog.text  # the refusal was logged, without the JWT
    shown = [str(error), repr(error), repr(error.cause), caplog.text]
    shown += [repr(r.args) + str(r.exc_info) for r in caplog.records]
    assert not [text for text in shown if token_file.read_text() in text]


@pytest.mark.parametrize(
    ("content", "words"),
    [(None, "cannot be read"), ("", "is empty"), (b"\xff\xfe", "does not hold a JWT")],
)
async def test_an_assertion_file_without_a_jwt_abandons_the_flow(
    driver: str, tmp_path: Path, content: str | bytes | None, words: str
) -> None:
    token_file = tmp_path / "token"
    if isinstance(content, bytes):
        token_file.write_bytes(content)
    elif content is not None:
        token_file.write_text(content)
    with OAuthServer(workload_key=PUBLIC_PEM) as server:
        with pytest.raises(core.ConnectFailed, match=f"assertion file {token_file} {words}"):
            async with Facade(driver, url=server.url, oauth=oauth(token_file)):
                pass
        assert flows(server) == []  # nothing was sent to the token endpoint


async def test_a_server_without_the_grant_is_refused_before_the_file_is_read(
    driver: str, tmp_path: Path
) -> None:
    with OAuthServer() as server:  # no workload_key: jwt-bearer is not listed
        with pytest.raises(core.ConnectFailed, match="does not list the jwt-bearer grant"):
            async with Facade(driver, url=server.url, oauth=oauth(tmp_path / "absent")):
                pass
        assert flows(server) == []


def callback_of(driver: str, make: Callable[[], str], issued: list[str]) -> Any:
    """An ``assertion=`` callback for ``driver``, async on mcp_asyncio and plain on mcp_sync,
    answering ``make()`` each call and keeping what it gave in ``issued``."""

    def blocking() -> str:
        issued.append(make())
        return issued[-1]

    if driver == "sync":
        return blocking

    async def awaited() -> str:
        return blocking()

    return awaited


def assertion_callback(driver: str, issued: list[str], audience: str) -> Any:
    """An ``assertion=`` callback for ``driver``: a fresh workload JWT each call."""
    return callback_of(driver, lambda: workload_jwt(audience, jti=f"n{len(issued)}"), issued)


async def test_the_assertion_callback_supplies_a_fresh_jwt_for_each_exchange(driver: str) -> None:
    issued: list[str] = []
    with OAuthServer(workload_key=PUBLIC_PEM) as server:
        callback = assertion_callback(driver, issued, server.issuer)
        spec = {"url": server.url, "oauth": {"grant": "jwt_bearer", "client_id": "agent"}}
        async with Facade(driver, **spec, assertion=callback) as c:
            assert (await c.call_tool("echo", {"text": "cb"})).text == "cb"
            server.expire_access_tokens()
            assert (await c.call_tool("echo", {"text": "again"})).text == "again"
        assert flows(server) == ["token:jwt-bearer", "token:jwt-bearer"]
        assert len(issued) == 2 and set(issued) <= server.secrets


@pytest.mark.parametrize("outcome", ["raises", "not a string"])
async def test_an_assertion_callback_that_fails_ends_the_flow_naming_its_class(
    driver: str, outcome: str
) -> None:
    def failing() -> Any:
        if outcome == "raises":
            raise LookupError("secret-looking detail")
        return 42

    words = "raised LookupError" if outcome == "raises" else "returned int, not a JWT"
    with OAuthServer(workload_key=PUBLIC_PEM) as server:
        oauth = {"grant": "jwt_bearer"}
        with pytest.raises(core.ConnectFailed, match=words) as info:
            async with Facade(driver, url=server.url, oauth=oauth, assertion=failing):
                pass
        assert "secret-looking detail" not in str(info.value)
        assert flows(server) == []


NEITHER = "grant is neither 'jwt_bearer' nor 'enterprise'"


@pytest.mark.parametrize(
    ("oauth", "with_callback", "words"),
    [
        ({"grant": "jwt_bearer"}, False, "neither an oauth assertion_file nor an assertion="),
        ({"grant": "jwt_bearer", "assertion_file": "/t"}, True, "both oauth assertion_file"),
        ({"grant": "client_credentials", "client_id": "c"}, True, NEITHER),
        ({"enabled": False}, True, NEITHER),
    ],
)
async def test_a_jwt_bearer_client_needs_exactly_one_source_for_the_jwt(
    driver: str, oauth: dict[str, Any], with_callback: bool, words: str
) -> None:
    callback = (lambda: "a.b.c") if with_callback else None
    with pytest.raises(core.InvalidSpec, match=words):
        Facade(driver, url="http://127.0.0.1:9/mcp", oauth=oauth, assertion=callback)
