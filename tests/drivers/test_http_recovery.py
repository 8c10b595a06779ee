"""Legacy Streamable HTTP recovery on every driver (asyncio, trio, sync) against our fault
server on 127.0.0.1: a session the server forgets while several calls are in flight, and a
listening GET stream the server (or a proxy) closes. Every wait is for an event, with a
deadline; nothing sleeps and nothing measures time."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest

import mcp_core as core
from tests.drivers.facade import Facade
from tests.servers.http_fault_server import HttpFaultServer, RecordedRequest

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]

# Far below every call_timeout here: a caller answered within it was answered at once, not at
# its deadline.
ANSWER_WITHIN = 15.0


def client(driver: str, url: str, **fields: object) -> Facade:
    fields.setdefault("reconnect", 0.05)
    return Facade(driver, url=url, **fields)


async def wait_for_request(
    server: HttpFaultServer, predicate: Callable[[RecordedRequest], bool]
) -> RecordedRequest:
    """The server's blocking wait, off the event loop the client runs on."""
    wait = functools.partial(server.wait_for_request, predicate, ANSWER_WITHIN)
    found: RecordedRequest = await anyio.to_thread.run_sync(wait)
    return found


def text_of(request: RecordedRequest) -> Any:
    message = request.json
    if not isinstance(message, dict):
        return None
    return ((message.get("params") or {}).get("arguments") or {}).get("text")


async def test_a_forgotten_session_answers_every_call_in_flight_on_it_at_once(
    driver: str,
) -> None:
    with HttpFaultServer() as server:
        fields = {"concurrency": "stateless", "pool_size": 4, "call_timeout": 60.0}
        async with client(driver, server.url, **fields) as c:
            first_session = server.sessions[-1]
            server.set_fault("stall_headers", method="tools/call", times=3)  # in flight for good
            answers: list[object] = []
            all_answered = anyio.Event()

            async def call(text: str) -> None:
                try:
                    answers.append(await c.call_tool("echo", {"text": text}))
                except core.McpError as exc:
                    answers.append(exc)
                if len(answers) == 3:
                    all_answered.set()

            async with anyio.create_task_group() as tg:
                for i in range(3):
                    tg.start_soon(call, f"stalled-{i}")
                for i in range(3):
                    stalled = f"stalled-{i}"
                    await wait_for_request(
                        server, lambda r, t=stalled: r.fault == "stall_headers" and text_of(r) == t
                    )
                server.set_fault("expire_session", method="tools/call")
                with pytest.raises(core.SessionRejected):
                    await c.call_tool("echo", {"text": "forgotten"})
                with anyio.move_on_after(ANSWER_WITHIN):
                    await all_answered.wait()
                assert len(answers) == 3, f"{3 - len(answers)} of 3 calls still unanswered"
            assert all(isinstance(a, core.SessionRejected) for a in answers), answers
            # The new session works, and nothing of the old one was cancelled on it.
            assert (await c.call_tool("echo", {"text": "after"})).text == "after"
            assert server.sessions[-1] != first_session
            cancels = [r for r in server.requests if r.rpc_method == "notifications/cancelled"]
            assert cancels == []
            assert c.status().in_flight == 0


@pytest.mark.parametrize("abrupt", [True, False], ids=["cut", "ended"])
async def test_the_listening_get_is_reopened_and_resumed(driver: str, abrupt: bool) -> None:
    with HttpFaultServer(get_stream=True) as server:
        async with client(driver, server.url) as c:
            session = server.sessions[-1]
            await anyio.to_thread.run_sync(server.wait_for_get_streams, 1)
            assert server.end_get_streams(abrupt=abrupt) == 1
            # Sent while no GET carries the stream: only a GET that resumes it delivers this.
            server.push({"jsonrpc": "2.0", "id": "while-closed", "method": "ping"})
            reopened = await wait_for_request(
                server, lambda r: r.method == "GET" and r.header("last-event-id") is not None
            )
            assert reopened.header("mcp-session-id") == session
            pong = await wait_for_request(
                server, lambda r: isinstance(r.json, dict) and r.json.get("id") == "while-closed"
            )
            assert pong.json["result"] == {}
            # Live again: what is pushed now arrives on the reopened stream.
            await anyio.to_thread.run_sync(server.wait_for_get_streams, 1)
            assert server.push({"jsonrpc": "2.0", "id": "live", "method": "ping"}) == 1
            await wait_for_request(
                server, lambda r: isinstance(r.json, dict) and r.json.get("id") == "live"
            )
            assert c.status().state == "ready"
            assert (await c.call_tool("echo", {"text": "still"})).text == "still"
            assert server.sessions == [session]  # the same session all along
