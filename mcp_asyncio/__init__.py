"""The anyio driver of the MCP client: the same API as ``mcp_sync``, awaited.

Runs on asyncio and on trio. ``async with Client(spec) as client:`` starts the server,
waits until it is ready, and stops it (no process left behind) when the block ends.
"""

from __future__ import annotations

from _mcp_io.device import DeviceCode
from _mcp_io.tokens import FileTokenStore, TokenStoreError

from ._client import (
    AssertionCallback,
    AuthorizeCallback,
    Client,
    CompletionCallback,
    DeviceCodeCallback,
    Handler,
    ListChangedCallback,
    ProgressCallback,
    Task,
    UpdateCallback,
)
from ._group import ClientGroup, ClientOptions

__all__ = [
    "AssertionCallback",
    "AuthorizeCallback",
    "Client",
    "ClientGroup",
    "ClientOptions",
    "CompletionCallback",
    "DeviceCode",
    "DeviceCodeCallback",
    "FileTokenStore",
    "Handler",
    "ListChangedCallback",
    "ProgressCallback",
    "Task",
    "TokenStoreError",
    "UpdateCallback",
]
