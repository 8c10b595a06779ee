"""One SSE line that never ends, on every driver (asyncio, trio, sync), against our fault server
on 127.0.0.1: the listening GET of a legacy Streamable HTTP session (2025-11-25 transports
§Listening for Messages from the Server) answers with ``data: xxxx...`` forever and no line
end. The client must cut that stream once the line is over ``max_message_bytes`` (the server
counts what it managed to send before the connection ended), reopen the GET, and keep working.
Every wait is for an event, with a deadline; nothing sleeps and nothing measures time
(tests/core/transport/test_http_endless_sse.py pins the same with a fake clock)."""

from __future__ import annotations

import functools
import os

import anyio
import anyio.to_thread
import pytest

from tests.conftest import wait_until
from tests.drivers.facade import DRIVERS, Facade
from tests.drivers.test_fault_matrix import counts
from tests.servers.http_fault_server import HttpFaultServer, RecordedRequest

pytestmark = pytest.mark.timeout(90)

LIMIT = 256 * 1024  # the client's max_message_bytes
# What the server may have sent beyond the limit by the time the client closed the stream:
# what sat in the sockets' buffers (the server's is kept at 16 KiB asked, the client's receive
# buffer is the kernel's, which grows while a reader keeps up) and the read the client was
# handling. Measured: 28 to 62 KiB on every driver. Without the cut, the server sends until
# its own limit of 256 MiB, far above this.
SLACK = 4 * 1024 * 1024
WAIT = 30.0


def _gets(server: HttpFaultServer, count: int) -> list[RecordedRequest]:
    server.wait_for_request(
        lambda _: len([r for r in server.requests if r.method == "GET"]) >= count, WAIT
    )
    return [r for r in server.requests if r.method == "GET"]


async def _scenario(driver: str, server: HttpFaultServer) -> int:
    fields = {"reconnect": 0.05, "max_message_bytes": LIMIT, "call_timeout": WAIT}
    async with Facade(driver, url=server.url, **fields) as c:
        [sent] = await anyio.to_thread.run_sync(
            functools.partial(server.wait_for_endless_streams, 1, WAIT)
        )
        # Reopened (after its backoff), without a Last-Event-ID: the line carried no id.
        first, again = await anyio.to_thread.run_sync(_gets, server, 2)
        assert first.fault == "endless_sse_line" and again.fault is None
        assert again.header("last-event-id") is None
        await anyio.to_thread.run_sync(server.wait_for_get_streams, 1)
        assert (await c.call_tool("echo", {"text": "after"})).text == "after"
        assert c.status().state == "ready"
        assert len(server.sessions) == 1  # the same session all along
    return sent


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts fds in /proc/self/fd")
@pytest.mark.parametrize("line", ["data: ", ": "], ids=["data", "comment"])
@pytest.mark.parametrize("driver", DRIVERS)
def test_an_endless_line_on_the_listening_get_is_cut_and_the_client_goes_on(
    driver: str, line: str
) -> None:
    before = counts()
    with HttpFaultServer(get_stream=True) as server:
        server.set_fault("endless_sse_line", http_method="GET", line=line)
        sent = anyio.run(
            _scenario, driver, server, backend="trio" if driver == "trio" else "asyncio"
        )
    # The connection ended because the client cut it, after about the limit.
    assert LIMIT < sent <= LIMIT + SLACK, sent

    # Nothing left behind: sockets, the sync driver's threads, the server's.
    def clean() -> bool:
        _, threads, fds = counts()  # threads, as the fault matrix counts them, and fds
        return threads <= before[1] and fds <= before[2]

    wait_until(clean, WAIT, message=f"nothing left behind (before: {before}, now: {counts()})")
