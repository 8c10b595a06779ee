"""A slow loris on every driver (asyncio, trio, sync), against our fault server on 127.0.0.1:
the answer to a call is a head sent one byte every 0.1 s that never ends. h11 would give up
only after 16 KiB of it (its limit on an incomplete event: about 27 minutes at that pace);
the call's deadline comes first: the caller gets ``RequestTimeout`` by its deadline, the
machine's ``AbortHttp`` closes the connection (the server reads its end, having sent a few
bytes), and the next call is answered. Every wait is for an event with a deadline; no
duration is asserted (tests/drivers/test_http_abort_stages.py drives the executors alone).
"""

from __future__ import annotations

import functools
import os

import anyio
import anyio.to_thread
import pytest

import mcp_core as core
from tests.conftest import wait_until
from tests.drivers.facade import DRIVERS, Facade
from tests.drivers.test_fault_matrix import counts
from tests.servers.http_fault_server import HttpFaultServer

pytestmark = pytest.mark.timeout(90)

CALL_TIMEOUT = 1.0
H11_LIMIT = 16 * 1024  # h11's default max_incomplete_event_size
WAIT = 30.0


async def _scenario(driver: str, server: HttpFaultServer) -> int:
    fields = {"call_timeout": CALL_TIMEOUT}
    async with Facade(driver, url=server.url, **fields) as c:
        with anyio.fail_after(CALL_TIMEOUT + WAIT):  # answered by its deadline (and a margin)
            with pytest.raises(core.RequestTimeout):
                await c.call_tool("echo", {"text": "loris"})
        # The server reads the end of that connection: the client closed it.
        [sent] = await anyio.to_thread.run_sync(
            functools.partial(server.wait_for_endless_streams, 1, WAIT)
        )
        assert (await c.call_tool("echo", {"text": "after"})).text == "after"
        assert c.status().state == "ready"
    return sent


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts fds in /proc/self/fd")
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_head_trickled_forever_ends_at_the_calls_deadline(driver: str) -> None:
    before = counts()
    with HttpFaultServer() as server:
        server.set_fault("endless_head", method="tools/call")
        backend = "trio" if driver == "trio" else "asyncio"
        sent = anyio.run(_scenario, driver, server, backend=backend)
    # Some of the head went out, far less than h11 would have taken: the deadline ended it.
    assert 0 < sent < H11_LIMIT, sent

    def clean() -> bool:
        _, threads, fds = counts()  # threads, as the fault matrix counts them, and fds
        return threads <= before[1] and fds <= before[2]

    wait_until(clean, WAIT, message=f"nothing left behind (before: {before}, now: {counts()})")
