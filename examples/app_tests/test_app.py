"""The application's tests: each session with the server is recorded the first time and
replayed after, so they run without Node, npx or the server (``pytest.ini`` opts in to the
``mcp_pytest`` plugin)."""

from __future__ import annotations

import pytest
from app import EVERYTHING, shout, sums_on_each, total

import mcp_core
from mcp_pytest import Recordings


def test_total_adds_every_number(mcp_recordings: Recordings) -> None:
    with mcp_recordings.client(EVERYTHING) as client:
        assert total(client, [1, 2, 3, 4]) == 10


def test_a_call_the_recording_lacks_says_so(mcp_recordings: Recordings) -> None:
    with mcp_recordings.client(EVERYTHING) as client:
        assert total(client, [5]) == 5
        if mcp_recordings.replaying("everything"):
            with pytest.raises(mcp_core.JsonRpcError, match="the recording holds no tools/call"):
                total(client, [6])


def test_a_group_records_one_file_per_server(mcp_recordings: Recordings) -> None:
    with mcp_recordings.group({"left": EVERYTHING, "right": EVERYTHING}) as group:
        assert sums_on_each(group, 2, 3) == {
            "left": "The sum of 2 and 3 is 5.",
            "right": "The sum of 2 and 3 is 5.",
        }


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # or "trio": mcp_asyncio runs on both


@pytest.mark.anyio
async def test_shout(mcp_recordings: Recordings) -> None:
    async with mcp_recordings.async_client(EVERYTHING) as client:
        assert await shout(client, "quiet please") == "QUIET PLEASE"
