"""HTTP scenarios on every driver (asyncio, trio, sync) against real servers on 127.0.0.1:
the official SDK's HTTP servers, server-everything over HTTP, and our fault-injection server.
Every fault waits for its event with a deadline; none sleeps."""

from __future__ import annotations

import json

import pytest

import mcp_core as core
from tests.drivers.facade import Facade, gather
from tests.servers.http_fault_server import HttpFaultServer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


def client(driver: str, url: str, **fields: object) -> Facade:
    fields.setdefault("reconnect", 0.05)
    return Facade(driver, url=url, **fields)


# --- real servers ------------------------------------------------------------------------------


async def test_everything_streamable_http(driver: str, everything_http) -> None:
    peer = everything_http("streamableHttp")
    async with client(driver, peer.url) as c:
        status = c.status()
        assert (status.transport, status.era) == ("http", "legacy")
        assert "echo" in {t.name for t in await c.list_tools()}
        assert "hello" in (await c.call_tool("echo", {"message": "hello"})).text
        seen: list[float] = []
        await c.call_tool(
            "trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            progress=lambda p, t, m: seen.append(p),
        )
        assert seen == [1.0, 2.0, 3.0]


async def test_everything_http_sse_transport(driver: str, everything_http) -> None:
    peer = everything_http("sse")
    async with client(driver, peer.url) as c:
        assert c.status().transport == "sse"
        assert "42" in (await c.call_tool("get-sum", {"a": 40, "b": 2})).text


@pytest.mark.parametrize("mode", ["stateful", "stateless", "json"])
async def test_official_sdk_http_servers_in_the_modern_era(
    driver: str, py_http_server, mode: str
) -> None:
    peer = py_http_server(mode)
    async with client(driver, peer.url) as c:
        status = c.status()
        assert (status.era, status.concurrency) == ("modern", "stateless")
        assert (await c.call_tool("echo", {"text": "hi"})).text == "hi"
        assert (await c.call_tool("add", {"a": 2, "b": 3})).structured_content == {"result": 5}
        assert (await c.call_tool("fail")).is_error
        results = await gather(
            *[lambda i=i: c.call_tool("echo", {"text": str(i)}) for i in range(8)]
        )
        assert sorted(r.text for r in results) == [str(i) for i in range(8)]


@pytest.mark.parametrize("mode", ["stateful", "json", "stateless"])
async def test_official_sdk_http_servers_in_the_legacy_era(
    driver: str, py_http_server, mode: str
) -> None:
    peer = py_http_server(mode)
    async with client(driver, peer.url, era="legacy") as c:
        assert (c.status().era, c.status().concurrency) == ("legacy", "serialized")
        assert (await c.call_tool("echo", {"text": "legacy"})).text == "legacy"
        seen: list[float] = []
        done = await c.call_tool(
            "slow", {"seconds": 0.2, "steps": 2}, progress=lambda p, t, m: seen.append(p)
        )
        assert done.text == "done"


async def test_official_sdk_sse_server_via_fallback(driver: str, py_http_server) -> None:
    peer = py_http_server("sse")
    async with client(driver, peer.url) as c:
        assert c.status().transport == "sse"
        assert (await c.call_tool("echo", {"text": "old"})).text == "old"


# --- faults ------------------------------------------------------------------------------------


async def test_session_expiry_reinitializes_in_place(driver: str) -> None:
    with HttpFaultServer() as server:
        async with client(driver, server.url) as c:
            assert (await c.call_tool("echo", {"text": "a"})).text == "a"
            first = server.sessions[-1]
            server.set_fault("expire_session")
            with pytest.raises(core.SessionRejected):
                await c.call_tool("echo", {"text": "b"})
            assert (await c.call_tool("echo", {"text": "c"})).text == "c"
            assert server.sessions[-1] != first
            last = [r for r in server.requests if r.rpc_method == "tools/call"][-1]
            assert last.header("mcp-session-id") == server.sessions[-1]
            assert last.header("mcp-protocol-version")
        server.wait_for_request(lambda r: r.method == "DELETE", 10)


@pytest.mark.parametrize("fault", ["unauthorized", "forbidden"])
async def test_auth_refusal_at_connect_is_permanent(driver: str, fault: str) -> None:
    with HttpFaultServer() as server:
        server.set_fault(fault, times=None)
        c = client(driver, server.url, headers={"Authorization": "Bearer s3cr3t"})
        with pytest.raises(core.ConnectFailed) as info:
            async with c:
                pass
        err = info.value
        assert err.permanent and err.http_error is not None
        assert err.http_error.status == (401 if fault == "unauthorized" else 403)
        assert "s3cr3t" not in str(err) and "s3cr3t" not in repr(err)
        if fault == "unauthorized":
            assert "resource_metadata" in (err.http_error.www_authenticate or "")
        count = len(server.requests)
        assert count <= 2  # the probe and at most one initialize: nothing retried


async def test_auth_refusal_later_fails_the_call_only(driver: str) -> None:
    with HttpFaultServer() as server:
        async with client(driver, server.url, oauth={"enabled": False}) as c:
            server.set_fault("unauthorized", method="tools/call")
            with pytest.raises(core.HttpError) as info:
                await c.call_tool("echo", {"text": "x"})
            assert info.value.status == 401
            assert (await c.call_tool("echo", {"text": "ok"})).text == "ok"


async def test_a_401_without_oauth_metadata_fails_the_call_with_authorization_failed(
    driver: str,
) -> None:
    # OAuth is on by default for a url server without an Authorization header: the 401 starts
    # discovery, which finds no metadata here (tests/drivers/test_oauth_drivers.py has a
    # server that has some), then MCP 2025-03-26's default endpoints, which are not there.
    with HttpFaultServer() as server:
        async with client(driver, server.url) as c:
            server.set_fault("unauthorized", method="tools/call")
            with pytest.raises(core.AuthorizationFailed, match="publishes no OAuth metadata"):
                await c.call_tool("echo", {"text": "x"})
            registrations = [r for r in server.requests if r.path == "/register"]
            assert len(registrations) == 1  # refused for good: not asked again


@pytest.mark.parametrize("fault", ["server_error", "rate_limited", "disconnect"])
async def test_transient_failures_at_connect_are_retried(driver: str, fault: str) -> None:
    with HttpFaultServer() as server:
        server.set_fault(fault, method="initialize", retry_after="0")
        async with client(driver, server.url, era="legacy") as c:
            assert (await c.call_tool("echo", {"text": "x"})).text == "x"
        assert len([r for r in server.requests if r.rpc_method == "initialize"]) == 2


async def test_retry_after_is_honoured(driver: str) -> None:
    with HttpFaultServer() as server:
        server.set_fault("rate_limited", method="initialize", retry_after="30")
        c = client(driver, server.url, era="legacy", fail_fast=True)
        await c.start()
        try:
            # fail_fast: the wait ends when the 429 has been read, not at a guessed deadline.
            with pytest.raises(core.ConnectFailed) as failed:
                await c.await_ready(10)
            assert isinstance(failed.value.cause, core.HttpError)
            assert failed.value.cause.status == 429
            retry_in = c.status().retry_in
            assert retry_in is not None and retry_in > 25
        finally:
            await c.stop()


async def test_a_call_keeps_its_http_status(driver: str) -> None:
    with HttpFaultServer() as server:
        async with client(driver, server.url) as c:
            server.set_fault("status", method="tools/call", status=502, body="<html>oops</html>")
            with pytest.raises(core.HttpError) as info:
                await c.call_tool("echo", {"text": "x"})
            assert info.value.status == 502 and "oops" not in str(info.value)


async def test_dropped_sse_stream_is_resumed(driver: str) -> None:
    with HttpFaultServer(sse=True) as server:
        async with client(driver, server.url) as c:
            server.set_fault("drop_sse", method="tools/call", retry_ms=50)
            assert (await c.call_tool("echo", {"text": "resumed"})).text == "resumed"
            resume = server.wait_for_request(
                lambda r: r.method == "GET" and r.header("last-event-id") is not None, 10
            )
            assert resume.header("last-event-id")
            drop = [r for r in server.requests if r.rpc_method == "tools/call"][-1]
            assert resume.at - drop.at >= 0.05  # the server's retry was honoured


async def test_huge_body_fails_only_its_call(driver: str) -> None:
    with HttpFaultServer() as server:
        async with client(driver, server.url, max_message_bytes=1024 * 1024) as c:
            server.set_fault("huge", method="tools/call", mib=20)
            with pytest.raises(core.MessageTooLarge):
                await c.call_tool("echo", {"text": "big"})
            assert (await c.call_tool("echo", {"text": "small"})).text == "small"


@pytest.mark.parametrize("fault", ["stall_headers", "stall_body"])
async def test_a_stalled_server_times_the_call_out(driver: str, fault: str) -> None:
    with HttpFaultServer(sse=True) as server:
        async with client(driver, server.url) as c:
            server.set_fault(fault, method="tools/call")
            with pytest.raises(core.RequestTimeout):
                await c.call_tool("echo", {"text": "x"}, timeout=0.3)
            assert c.status().in_flight == 0
            assert (await c.call_tool("echo", {"text": "after"})).text == "after"


async def test_redirects_are_not_followed(driver: str) -> None:
    with HttpFaultServer() as server, HttpFaultServer() as elsewhere:
        async with client(driver, server.url, headers={"Authorization": "Bearer s3cr3t"}) as c:
            server.set_fault("redirect", method="tools/call", location=elsewhere.url)
            with pytest.raises(core.HttpError) as info:
                await c.call_tool("echo", {"text": "x"})
            assert info.value.status == 307
        assert elsewhere.requests == []  # no request, let alone a credential, went there


async def test_empty_200_fails_the_call_at_once(driver: str) -> None:
    with HttpFaultServer() as server:
        async with client(driver, server.url) as c:
            server.set_fault("empty_200", method="tools/call")
            with pytest.raises(core.InvalidResponse):
                await c.call_tool("echo", {"text": "x"}, timeout=60)


async def test_modern_server_and_its_error_bodies(driver: str) -> None:
    with HttpFaultServer(era="modern") as server:
        async with client(driver, server.url) as c:
            assert c.status().era == "modern"
            assert (await c.call_tool("echo", {"text": "m"})).text == "m"
            call = [r for r in server.requests if r.rpc_method == "tools/call"][-1]
            assert call.header("mcp-method") == "tools/call"
            assert call.header("mcp-name") == "echo"
            # A -32022 that lists 2026-07-28 is sent again once (basic/versioning: SHOULD retry
            # with a supported version); the second -32022 is the caller's error.
            server.set_fault("unsupported_version", method="tools/call")
            assert (await c.call_tool("echo", {"text": "y"})).text == "y"
            server.set_fault("unsupported_version", method="tools/call", times=2)
            with pytest.raises(core.JsonRpcError) as info:
                await c.call_tool("echo", {"text": "x"})
            assert info.value.code == -32022
            calls = [r for r in server.requests if r.rpc_method == "tools/call"]
            assert len(calls) == 5  # m; y twice; x twice
            server.set_fault("unsupported_version", method="tools/call", supported=["2099-01-01"])
            with pytest.raises(core.JsonRpcError):  # no version in common: not retried
                await c.call_tool("echo", {"text": "z"})
            assert len([r for r in server.requests if r.rpc_method == "tools/call"]) == 6
        assert not [r for r in server.requests if r.method in ("GET", "DELETE")]


async def test_connection_refused_is_retried_not_permanent(driver: str) -> None:
    with HttpFaultServer() as server:
        url = server.url
    c = client(driver, url, fail_fast=True)  # nothing listens there any more
    with pytest.raises(core.ConnectFailed) as info:
        async with c:
            pass
    assert not info.value.permanent


async def test_elicitation_handler_answers_the_server(driver: str, py_http_server) -> None:
    seen: list[dict] = []

    def defaults(params: dict) -> dict:
        seen.append(params)
        schema = params["requestedSchema"]["properties"]
        return {"action": "accept", "content": {k: v["default"] for k, v in schema.items()}}

    peer = py_http_server("stateful")
    async with client(driver, peer.url, era="legacy", elicitation=defaults) as c:
        answer = json.loads((await c.call_tool("ask", {"message": "prefs?"})).text)
    assert answer["action"] == "accept" and answer["content"]
    assert seen and seen[0]["message"] == "prefs?"


async def test_without_a_handler_elicitation_is_refused(driver: str, py_http_server) -> None:
    peer = py_http_server("stateful")
    async with client(driver, peer.url, era="legacy") as c:
        # the client declares no elicitation capability and answers -32601; this server
        # passes that refusal on as the call's own error
        with pytest.raises(core.JsonRpcError) as info:
            await c.call_tool("ask", {"message": "prefs?"}, timeout=20)
    assert "elicitation/create" in str(info.value)


async def test_a_stalled_stream_does_not_block_other_calls(driver: str) -> None:
    with HttpFaultServer(era="modern", sse=True) as server:
        async with client(driver, server.url) as c:
            assert c.status().concurrency == "stateless"
            server.set_fault("stall_body", method="tools/call")
            results = await gather(
                *[lambda i=i: c.call_tool("echo", {"text": str(i)}, timeout=2) for i in range(5)],
            )
    stalled = [r for r in results if isinstance(r, core.RequestTimeout)]
    answered = sorted(r.text for r in results if isinstance(r, core.CallToolResult))
    assert len(stalled) == 1 and len(answered) == 4  # whichever call the stall caught
