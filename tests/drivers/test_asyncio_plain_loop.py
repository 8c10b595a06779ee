"""The anyio driver under a plain ``asyncio.run`` (not anyio's runner, which sets sniffio's
context variable): the pipes and the timer are event-loop callbacks, outside any task, and
what their feeds start (a respawn, a server request's handler) must still start."""

from __future__ import annotations

import asyncio
import os

import pytest

import mcp_asyncio
import mcp_core as core
from tests.conftest import children_of, fault_server_argv, wait_until

pytestmark = pytest.mark.timeout(60)


def test_a_respawn_the_timer_starts_and_a_handler_a_reader_starts() -> None:
    argv = fault_server_argv()
    asked: list[str] = []

    def sample(params: object) -> dict[str, object]:
        asked.append("asked")
        return {"role": "assistant", "content": {"type": "text", "text": "yes"}, "model": "m"}

    async def main() -> None:
        async with mcp_asyncio.Client(
            name="plain", command=argv[0], args=argv[1:], reconnect=0.05, sampling=sample
        ) as client:
            with pytest.raises(core.ServerExited):
                await client.call_tool("exit", {"code": 3})
            # The respawn after the backoff is started by the timer callback.
            assert (await client.await_ready(30)).state == "ready"
            assert (await client.call_tool("echo", {"text": "again"})).text == "again"
            # The server's request is read by the stdout callback, which starts the handler.
            answer = await client.call_tool("unknown_server_request")
            assert asked == ["asked"] and '"model":"m"' in answer.text

    asyncio.run(main())
    wait_until(lambda: children_of(os.getpid()) == [], 10, message="no child process left")
