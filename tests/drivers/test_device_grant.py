"""The device authorization grant (RFC 8628) on every driver, against a real authorization
server on 127.0.0.1 (tests/servers/device_auth_server.py: authlib's RFC 8628 grant in front of
the official SDK's MCP server). ``oauth={"grant": "device_code", "client_id": ...}``: the code
reaches ``on_device_code=`` (or stderr), the client polls until the user approves (through the
server's /test/ knobs, or after N polls) and the call goes through with the token; a denial,
an expired code, ``slow_down`` (counted by the server, never timed here) and a callback that
fails; the device code and the tokens never in a log record, a ``repr``, a ``Status`` or a
recording, and the user code nowhere but the callback."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

import mcp_asyncio
import mcp_core as core
import mcp_sync
from tests.drivers.facade import Facade
from tests.servers.http_peers import HttpPeer
from tests.servers.test_device_auth_server_smoke import CLIENT_ID, issued, origin, stats
from tests.servers.test_py_auth_server_smoke import http

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def decide(peer: HttpPeer, user_code: str, verdict: str = "approve") -> None:
    body = json.dumps({"user_code": user_code}).encode()
    response = http(
        "POST", f"{origin(peer)}/test/{verdict}", [("Content-Type", "application/json")], body
    )
    assert response.status == 200, response.content


def device(**extra: Any) -> dict[str, Any]:
    return {"grant": "device_code", "client_id": CLIENT_ID, **extra}


def recorder(driver: str, shown: list[Any]) -> Any:
    """An ``on_device_code`` that keeps what it got: async on anyio, plain on the blocking
    driver."""
    if driver == "sync":
        return shown.append

    async def keep(code: Any) -> None:
        await anyio.sleep(0)
        shown.append(code)

    return keep


async def refused(driver: str, url: str, **fields: Any) -> core.ConnectFailed:
    """The ``ConnectFailed`` a device login's client gets on entering (``fields``: the
    callback, or ``interactive``)."""
    with pytest.raises(core.ConnectFailed) as info:
        async with Facade(driver, url=url, oauth=device(), **fields):
            pass
    return info.value


async def test_approved_after_polls_and_the_call_goes_through(
    driver: str, device_auth_server: Any
) -> None:
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "3")
    shown: list[Any] = []
    c = Facade(driver, url=peer.url, oauth=device(), on_device_code=recorder(driver, shown))
    async with c:
        whoami = json.loads((await c.call_tool("whoami", {})).text)
        assert (await c.call_tool("echo", {"text": "hi"})).text == "hi"
    assert whoami == {
        "client_id": CLIENT_ID,
        "subject": "device-user",
        "scopes": ["user"],
        "resource": peer.url,  # RFC 8707: the login named the MCP server
    }
    [code] = shown
    package = mcp_sync if driver == "sync" else mcp_asyncio
    assert isinstance(code, package.DeviceCode)
    [user_code] = issued(peer)["user_codes"]
    assert code.server == "t" and code.user_code == user_code
    assert code.verification_uri == f"{origin(peer)}/device"
    assert code.verification_uri_complete == f"{origin(peer)}/device?user_code={user_code}"
    assert code.expires_in == 600
    counts = stats(peer)
    assert (counts["device_authorizations"], counts["polls"], counts["pending"]) == (1, 3, 2)
    assert (counts["tokens_issued"], counts["slow_down"]) == (1, 0)


async def test_the_user_approves_on_the_verification_page(
    driver: str, device_auth_server: Any
) -> None:
    peer = device_auth_server("--interval", "0")

    def approve(code: Any) -> None:  # as the user would, from the other device
        decide(peer, code.user_code)

    async def approve_async(code: Any) -> None:
        await anyio.to_thread.run_sync(approve, code)

    callback = approve if driver == "sync" else approve_async
    async with Facade(driver, url=peer.url, oauth=device(), on_device_code=callback) as c:
        assert (await c.call_tool("echo", {"text": "ok"})).text == "ok"
    assert stats(peer)["tokens_issued"] == 1


async def test_slow_down_grows_the_interval_for_good(driver: str, device_auth_server: Any) -> None:
    # Poll 2 is told to slow down (interval 0 -> 5 s at the server); poll 3 comes 5 s later or
    # is told again; poll 4 finds the login approved.
    peer = device_auth_server("--interval", "0", "--slow-down-at", "2", "--auto-approve-after", "4")
    c = Facade(
        driver, url=peer.url, oauth=device(), on_device_code=recorder(driver, []), init_timeout=40
    )
    async with c:
        assert (await c.call_tool("echo", {"text": "slow"})).text == "slow"
    counts = stats(peer)
    assert (counts["polls"], counts["pending"], counts["slow_down"]) == (4, 2, 1)
    assert counts["tokens_issued"] == 1


async def test_the_user_says_no(driver: str, device_auth_server: Any) -> None:
    peer = device_auth_server("--interval", "0", "--auto-deny-after", "2")
    error = await refused(driver, peer.url, on_device_code=recorder(driver, []))
    assert error.permanent and isinstance(error.cause, core.AuthorizationFailed)
    assert error.cause.error_code == "access_denied" and "denied" in str(error)
    counts = stats(peer)
    assert (counts["polls"], counts["access_denied"], counts["tokens_issued"]) == (2, 1, 0)


async def test_an_expired_code_says_to_log_in_again(driver: str, device_auth_server: Any) -> None:
    # The code lives 1 s, the first poll is due after 5: the client gives up at the expiry.
    peer = device_auth_server("--interval", "5", "--expires-in", "1")
    failed = await refused(driver, peer.url, on_device_code=recorder(driver, []))
    cause = failed.cause
    assert isinstance(cause, core.AuthorizationFailed) and cause.error_code == "expired_token"
    assert "log in again" in str(failed)
    assert (stats(peer)["device_authorizations"], stats(peer)["polls"]) == (1, 0)


async def test_a_callback_that_raises_ends_the_login(driver: str, device_auth_server: Any) -> None:
    peer = device_auth_server("--interval", "1")

    def broken(code: Any) -> None:
        raise RuntimeError(f"cannot show {code.user_code}")

    failed = await refused(driver, peer.url, on_device_code=broken)
    cause = failed.cause
    assert isinstance(cause, core.AuthorizationRequired)
    assert "on_device_code callback raised RuntimeError" in str(cause)
    [user_code] = issued(peer)["user_codes"]
    assert user_code not in str(failed)


async def test_without_a_callback_the_code_goes_to_stderr(
    driver: str, device_auth_server: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "2")
    async with Facade(driver, url=peer.url, oauth=device()) as c:
        assert (await c.call_tool("echo", {"text": "x"})).text == "x"
    [user_code] = issued(peer)["user_codes"]
    err = capfd.readouterr().err
    assert f"To log in to server 't', visit {origin(peer)}/device" in err
    assert f"enter the code {user_code} (within 10 minutes)" in err


async def test_a_client_that_asks_no_one_is_refused_before_any_code(
    driver: str, device_auth_server: Any
) -> None:
    peer = device_auth_server("--interval", "0")
    failed = await refused(driver, peer.url, interactive=False)
    assert isinstance(failed.cause, core.AuthorizationRequired)
    assert stats(peer)["device_authorizations"] == 0


async def test_a_server_without_the_device_endpoint_is_refused(
    driver: str, py_auth_server: Any
) -> None:
    peer = py_auth_server()
    with pytest.raises(core.ConnectFailed, match="no device_authorization_endpoint"):
        async with Facade(driver, url=peer.url, oauth=device(), on_device_code=print):
            pass


async def test_the_tokens_are_kept_and_a_later_client_logs_in_no_more(
    driver: str, device_auth_server: Any
) -> None:
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "1")
    store = core.InMemoryTokenStore()
    shown: list[Any] = []
    for _ in range(2):
        async with Facade(
            driver,
            url=peer.url,
            oauth=device(),
            token_store=store,
            on_device_code=recorder(driver, shown),
        ) as c:
            assert (await c.call_tool("echo", {"text": "again"})).text == "again"
    assert len(shown) == 1 and stats(peer)["device_authorizations"] == 1


async def test_no_secret_in_logs_reprs_status_or_recordings(
    driver: str, device_auth_server: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "2")
    recording = tmp_path / "device.jsonl"
    codes: list[Any] = []
    c = Facade(
        driver,
        url=peer.url,
        oauth=device(),
        record=str(recording),
        on_device_code=recorder(driver, codes),
    )
    async with c:
        assert (await c.call_tool("echo", {"text": "s"})).text == "s"
        shown = [repr(c.aio or c.sync), repr(c.status()), str(c.status()), repr(codes)]
    secrets = issued(peer)
    assert secrets["device_codes"] and secrets["access_tokens"] and secrets["user_codes"]
    shown.append(recording.read_text())
    assert "ShowDeviceCode" in shown[-1] or "HttpResponseEnded" in shown[-1]
    for record in caplog.records:
        shown += [record.getMessage(), repr(record.args), str(record.exc_info)]
    values = [v for kind in secrets.values() for v in kind]
    leaks = sorted(v for v in values if any(v in text for text in shown))
    assert leaks == []
