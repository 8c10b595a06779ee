"""mcp_core: the pure, sans-IO core of the MCP client.

Everything the protocol decides is decided here; the drivers (``mcp_asyncio``, ``mcp_sync``)
only move bytes, spawn processes and keep time. Feed ``SessionMachine.handle`` events, perform
the actions it returns, and re-arm one timer to ``next_deadline()``.

This module is the protocol surface: the machine, its events and actions, ``Spec``, the wire
models, the errors, tool names, the protocol versions, the spend protocol a user implements
for priced tools and the token store that keeps OAuth logins. ``load_config`` (with
``LoadedConfig`` and ``InvalidConfig``) is here too, as well as in its own module. The rest is
in public submodules, each with its own ``__all__``:

- ``mcp_core.config``: reading ``.mcp.json`` files.
- ``mcp_core.replay``: recording a session and replaying it through a fresh machine.
- ``mcp_core.group``: what a ``ClientGroup`` decides without I/O (which servers get a client,
  tool names across servers).
- ``mcp_core.driver``: what a driver needs besides the machine (the child's environment, the
  facts of a reservation), for writing a driver for another framework.
"""

from ._actions import (
    AbortHttp,
    Action,
    CloseStdin,
    ElicitationComplete,
    HandleServerRequest,
    Log,
    ProgressUpdate,
    Reply,
    SettleReservation,
    SignalProcess,
    Spawn,
    StartHttp,
    WriteStdin,
)
from ._config import InvalidConfig, LoadedConfig, load_config
from ._eras import LATEST_LEGACY, LEGACY_VERSIONS, MODERN_VERSION
from ._errors import (
    AuthorizationFailed,
    AuthorizationRequired,
    Busy,
    ConnectFailed,
    HttpError,
    InitializationFailed,
    InvalidResponse,
    InvalidSpec,
    JsonRpcError,
    McpError,
    MessageTooLarge,
    NoHttpClient,
    NotReady,
    RequestTimeout,
    ServerExited,
    SessionRejected,
    UnexpectedEvent,
    UnknownTool,
    UnmeteredCall,
    UnsupportedVersion,
    UrlElicitationRequired,
)
from ._events import (
    AwaitReady,
    CallTool,
    CancelCall,
    Close,
    Connect,
    Event,
    HttpBodyReceived,
    HttpFailed,
    HttpResponseEnded,
    HttpResponseStarted,
    ListTools,
    ProcessExited,
    ProcessSpawned,
    ServerRequestAnswered,
    SpawnFailed,
    StderrReceived,
    StdoutClosed,
    StdoutReceived,
    TimerFired,
    WriteFailed,
)
from ._machine import HANDLED_REQUESTS, SessionMachine
from ._models import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    Status,
    TextContent,
    Tool,
    UnknownContent,
)
from ._names import normalise_server, parse_tool_name, tool_name
from ._spec import Spec
from ._spend import BudgetExhausted, InMemorySpendGate, Reservation, SpendGate
from ._tokens import InMemoryTokenStore, StoredAuthorization, TokenStore

__all__ = [
    "HANDLED_REQUESTS",
    "LATEST_LEGACY",
    "LEGACY_VERSIONS",
    "MODERN_VERSION",
    "AbortHttp",
    "Action",
    "AudioContent",
    "AuthorizationFailed",
    "AuthorizationRequired",
    "AwaitReady",
    "BudgetExhausted",
    "Busy",
    "CallTool",
    "CallToolResult",
    "CancelCall",
    "Close",
    "CloseStdin",
    "Connect",
    "ConnectFailed",
    "ElicitationComplete",
    "EmbeddedResource",
    "Event",
    "HandleServerRequest",
    "HttpBodyReceived",
    "HttpError",
    "HttpFailed",
    "HttpResponseEnded",
    "HttpResponseStarted",
    "ImageContent",
    "InMemorySpendGate",
    "InMemoryTokenStore",
    "InitializationFailed",
    "InvalidConfig",
    "InvalidResponse",
    "InvalidSpec",
    "JsonRpcError",
    "ListTools",
    "LoadedConfig",
    "Log",
    "McpError",
    "MessageTooLarge",
    "NoHttpClient",
    "NotReady",
    "ProcessExited",
    "ProcessSpawned",
    "ProgressUpdate",
    "Reply",
    "RequestTimeout",
    "Reservation",
    "ResourceLink",
    "ServerExited",
    "ServerRequestAnswered",
    "SessionMachine",
    "SessionRejected",
    "SettleReservation",
    "SignalProcess",
    "Spawn",
    "SpawnFailed",
    "Spec",
    "SpendGate",
    "StartHttp",
    "Status",
    "StderrReceived",
    "StdoutClosed",
    "StdoutReceived",
    "StoredAuthorization",
    "TextContent",
    "TimerFired",
    "TokenStore",
    "Tool",
    "UnexpectedEvent",
    "UnknownContent",
    "UnknownTool",
    "UnmeteredCall",
    "UnsupportedVersion",
    "UrlElicitationRequired",
    "WriteFailed",
    "WriteStdin",
    "load_config",
    "normalise_server",
    "parse_tool_name",
    "tool_name",
]
