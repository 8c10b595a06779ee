"""The fault matrix: what every caller gets when a server misbehaves, on every driver (asyncio,
trio, sync) and every transport (stdio 2025-11-25 and 2026-07-28, Streamable HTTP legacy and
2026-07-28, HTTP+SSE), from one literal table, ROWS. docs/guarantees.md shows the same table
("Faults, transport by transport"), drawn from ROWS by scripts/fault_matrix_table.py; a test
below fails when they disagree.

A row names a transport, a fault and what the callers must get:
  caller  the call the fault hits (for a connect fault: the client's `async with`, which waits
          for readiness);
  others  a call made while the fault is under way (on serialized transports it waits in the
          queue behind the faulted one; for "404, calls in flight" it is made first, and is in
          flight on the session when the server forgets it);
  then    the next call once the client says it is ready again ("-": not checked, e.g. the
          server is gone for good).
An outcome is "result" (a CallToolResult that is not an error), an error class of mcp_core
("HttpError 503": with that status, "ConnectFailed permanent": not retried, "JsonRpcError -32603":
with that code), "cancelled" (the caller was cancelled, and returned within MARGIN of it), or
alternatives joined by " | " where the order of two events is up to the network (which of two
sockets the kernel reports closed first).

The task faults (TASK_FAULTS) call a tool the server runs as a task (2025-11-25
basic/utilities/tasks: the client lists the tools, sees `execution.taskSupport: "required"` and
asks for a task; 2026-07-28 Tasks extension: the undeclared call gets -32021 and is sent again
declaring it), and the fault comes once the client follows the task (its first status reached
the call's `progress`). Where the caller's deadline or its cancellation ends the call
(CANCELS_TASK), the row also checks that the server received `tasks/cancel` for the one task it
created (and, at a deadline, that the RequestTimeout names that task and says it was cancelled
on the server): the HTTP servers record it; the stdio server says what it saw when called with
its tool `tasks_seen`. A caller that is cancelled (CALLER_CANCELS) is not run on the blocking
driver: a blocked thread cannot be cancelled.

Every row also checks, on each driver:
  - each caller is answered by its deadline plus MARGIN (waited for with that deadline: the row
    fails when it passes; no duration is asserted otherwise);
  - no process, thread or file descriptor is left behind: children of this process,
    threading.active_count() and /proc/self/fd, counted before and after, with a deadline for
    the cleanup to finish;
  - no secret of the spec (an Authorization header, a query parameter, an env value, an arg)
    is in any error's str or repr, in status(), or in any log record.

The servers: tests/servers/fault_server.py (stdio; --modern for 2026-07-28, --tasks for the task
faults), HttpFaultServer (Streamable HTTP; era "legacy" or "modern"; tasks=True for the task
faults) and HttpSseFaultServer (HTTP+SSE), all in tests/servers, each started for its row
(in-process for HTTP: starting one costs a socket and a thread) and stopped before the
counts are taken again.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from trio._core import _thread_cache as trio_thread_cache

import mcp_core as core
from tests.conftest import children_of, fault_server_argv, until, wait_until
from tests.drivers.facade import DRIVERS, Facade
from tests.servers.http_fault_server import HttpFaultServer, HttpSseFaultServer

# --- the table ---------------------------------------------------------------------------------

TRANSPORTS = {
    "stdio": "stdio",
    "stdio-modern": "stdio (2026-07-28)",
    "legacy": "Streamable HTTP (legacy)",
    "modern": "Streamable HTTP (2026-07-28)",
    "sse": "HTTP+SSE (2024-11-05)",
}

# fault -> what the server does, per transport where it differs (the docs' wording).
FAULTS = {
    "server exits mid-call": "stdio: the process exits; HTTP: the server stops, connections cut",
    "server closes stdout": (
        "the process closes its stdout mid-call and lives on (it still reads stdin); the client "
        "waits `shutdown_grace` (1 s here) for an exit, then stops and restarts it"
    ),
    "server closes stdin": (
        "the process closes its stdin mid-call and lives on, then pings the client: the answer "
        "is the write that fails (a client learns of a closed stdin only when it writes); the "
        "client waits `shutdown_grace` (1 s here) for an exit, then stops and restarts it"
    ),
    "server hangs": "never answers the call (HTTP+SSE: accepts the POST, never sends the answer)",
    "garbage": "the answer is not JSON (stdio: non-JSON lines first, then the answer)",
    "a 20 MiB line": "one 20 MiB message: a stdout line, or one SSE event",
    "deep nesting": "the answer's result is nested 100000 arrays deep",
    "invalid UTF-8": "the answer's text is not UTF-8",
    "missing executable": "the command does not exist",
    "init error": (
        "the handshake is answered with JSON-RPC error -32603 (2026-07-28 over HTTP: the "
        "`server/discover` probe, after which the client tries `initialize` and learns the era "
        "from its -32022; over stdio: `server/discover`, then `initialize` too)"
    ),
    "401": "HTTP 401 to the call (a static Authorization header: nothing to refresh)",
    "401 at connect": "HTTP 401 to every request of the handshake",
    "403": "HTTP 403 to the call",
    "404": "HTTP 404 (legacy: the server forgets the session the call carried)",
    "404, calls in flight": (
        "as 404, with concurrency='stateless' and another call in flight on the same session"
    ),
    "405": "HTTP 405 to the call",
    "429 (Retry-After: 1)": "HTTP 429 with Retry-After: 1 to the call",
    "429 at connect (Retry-After: 1)": "HTTP 429 with Retry-After: 1 to the handshake, once",
    "500": "HTTP 500 to the call",
    "502": "HTTP 502 to the call",
    "503": "HTTP 503 to the call",
    "redirect": "HTTP 307 to another server (which must see no request)",
    "empty 200": "HTTP 200 with an empty body (HTTP+SSE answers every POST so: n/a)",
    "dropped SSE stream, resumable": "the answer's SSE stream is cut after an event with an id",
    "dropped SSE stream, not resumable": (
        "the answer's SSE stream is cut with no event id (HTTP+SSE: the GET stream is cut)"
    ),
    "stalled body": "HTTP 200 and part of a body, then nothing",
    "reset connection": "the connection is reset (RST) without an answer",
    "oversized body": "a 20 MiB JSON body (Content-Length)",
    "slow-loris server": "HTTP 200, then one byte of SSE comment every 0.1 s, never an event",
    "connection refused": "nothing listens on the port",
    "task never finishes": (
        "the tool runs as a task that stays `working` (polled every 0.1 s) past the call's "
        "deadline (1.5 s here: it covers the whole task); the server must then receive "
        "`tasks/cancel` for that task"
    ),
    "server exits mid-task": (
        "the tool's task is `working` and the client polls it; stdio: the process exits at the "
        "first `tasks/get`; HTTP: the first `tasks/get` is never answered and the server stops, "
        "connections cut"
    ),
    "caller cancelled mid-task": (
        "the caller gives up (its asyncio task or trio scope is cancelled) while the task is "
        "`working`: it returns at once, and the server must receive `tasks/cancel` for that "
        "task. Not run on `mcp_sync`: a blocked thread cannot be cancelled (its deadline is the "
        "row above)"
    ),
}


@dataclass(frozen=True)
class Row:
    transport: str
    fault: str
    caller: str
    others: str = "result"
    then: str = "result"
    xfail: str | None = None


ROWS = [
    # stdio
    Row("stdio", "server exits mid-call", "ServerExited", "ServerExited"),
    Row("stdio", "server closes stdout", "ServerExited", "ServerExited"),
    Row("stdio", "server closes stdin", "ServerExited", "ServerExited"),
    Row("stdio", "server hangs", "RequestTimeout"),
    Row("stdio", "garbage", "result"),
    Row("stdio", "a 20 MiB line", "MessageTooLarge"),
    Row("stdio", "deep nesting", "InvalidResponse"),
    Row("stdio", "invalid UTF-8", "InvalidResponse"),
    Row("stdio", "missing executable", "ConnectFailed permanent", "-", "-"),
    Row("stdio", "init error", "ConnectFailed", "-", "-"),
    Row("stdio", "task never finishes", "RequestTimeout"),
    Row("stdio", "server exits mid-task", "ServerExited", "ServerExited"),
    Row("stdio", "caller cancelled mid-task", "cancelled"),
    # stdio, 2026-07-28 (the fault server with --modern)
    Row("stdio-modern", "server exits mid-call", "ServerExited", "ServerExited"),
    Row("stdio-modern", "server closes stdout", "ServerExited", "ServerExited"),
    Row("stdio-modern", "server closes stdin", "ServerExited", "ServerExited"),
    Row("stdio-modern", "server hangs", "RequestTimeout"),
    Row("stdio-modern", "garbage", "result"),
    Row("stdio-modern", "a 20 MiB line", "MessageTooLarge"),
    Row("stdio-modern", "deep nesting", "InvalidResponse"),
    Row("stdio-modern", "invalid UTF-8", "InvalidResponse"),
    Row("stdio-modern", "missing executable", "ConnectFailed permanent", "-", "-"),
    Row("stdio-modern", "init error", "ConnectFailed", "-", "-"),
    Row("stdio-modern", "task never finishes", "RequestTimeout"),
    Row("stdio-modern", "server exits mid-task", "ServerExited", "ServerExited"),
    Row("stdio-modern", "caller cancelled mid-task", "cancelled"),
    # Streamable HTTP, legacy (serialized: the other call waits behind the faulted one)
    Row("legacy", "server exits mid-call", "InvalidResponse", "InvalidResponse", "-"),
    Row("legacy", "server hangs", "RequestTimeout"),
    Row("legacy", "garbage", "InvalidResponse"),
    Row("legacy", "a 20 MiB line", "MessageTooLarge"),
    Row("legacy", "deep nesting", "InvalidResponse"),
    Row("legacy", "invalid UTF-8", "InvalidResponse"),
    Row("legacy", "init error", "ConnectFailed", "-", "-"),
    Row("legacy", "401", "HttpError 401"),
    Row("legacy", "401 at connect", "ConnectFailed permanent", "-", "-"),
    Row("legacy", "403", "HttpError 403"),
    Row("legacy", "404", "SessionRejected"),
    Row("legacy", "404, calls in flight", "SessionRejected", "SessionRejected"),
    Row("legacy", "405", "HttpError 405"),
    Row("legacy", "429 (Retry-After: 1)", "HttpError 429"),
    Row("legacy", "429 at connect (Retry-After: 1)", "result", "-"),
    Row("legacy", "500", "HttpError 500"),
    Row("legacy", "502", "HttpError 502"),
    Row("legacy", "503", "HttpError 503"),
    Row("legacy", "redirect", "HttpError 307"),
    Row("legacy", "empty 200", "InvalidResponse"),
    Row("legacy", "dropped SSE stream, resumable", "result"),
    Row("legacy", "dropped SSE stream, not resumable", "InvalidResponse"),
    Row("legacy", "stalled body", "RequestTimeout"),
    Row("legacy", "reset connection", "InvalidResponse"),
    Row("legacy", "oversized body", "MessageTooLarge"),
    Row("legacy", "slow-loris server", "RequestTimeout"),
    Row("legacy", "connection refused", "ConnectFailed", "-", "-"),
    Row("legacy", "task never finishes", "RequestTimeout"),
    Row("legacy", "server exits mid-task", "InvalidResponse", "InvalidResponse", "-"),
    Row("legacy", "caller cancelled mid-task", "cancelled"),
    # Streamable HTTP, 2026-07-28 (stateless: the other call runs beside the faulted one)
    Row("modern", "server exits mid-call", "InvalidResponse", "InvalidResponse", "-"),
    Row("modern", "server hangs", "RequestTimeout"),
    Row("modern", "garbage", "InvalidResponse"),
    Row("modern", "a 20 MiB line", "MessageTooLarge"),
    Row("modern", "deep nesting", "InvalidResponse"),
    Row("modern", "invalid UTF-8", "InvalidResponse"),
    Row("modern", "init error", "result", "-"),
    Row("modern", "401", "HttpError 401"),
    Row("modern", "401 at connect", "ConnectFailed permanent", "-", "-"),
    Row("modern", "403", "HttpError 403"),
    Row("modern", "404", "HttpError 404"),
    Row("modern", "405", "HttpError 405"),
    Row("modern", "429 (Retry-After: 1)", "HttpError 429"),
    Row("modern", "429 at connect (Retry-After: 1)", "result", "-"),
    Row("modern", "500", "HttpError 500"),
    Row("modern", "502", "HttpError 502"),
    Row("modern", "503", "HttpError 503"),
    Row("modern", "redirect", "HttpError 307"),
    Row("modern", "empty 200", "InvalidResponse"),
    Row("modern", "dropped SSE stream, resumable", "InvalidResponse"),
    Row("modern", "dropped SSE stream, not resumable", "InvalidResponse"),
    Row("modern", "stalled body", "RequestTimeout"),
    Row("modern", "reset connection", "InvalidResponse"),
    Row("modern", "oversized body", "MessageTooLarge"),
    Row("modern", "slow-loris server", "RequestTimeout"),
    Row("modern", "connection refused", "ConnectFailed", "-", "-"),
    Row("modern", "task never finishes", "RequestTimeout"),
    Row("modern", "server exits mid-task", "InvalidResponse", "InvalidResponse", "-"),
    Row("modern", "caller cancelled mid-task", "cancelled"),
    # HTTP+SSE (serialized; every answer comes on the one GET stream)
    Row(
        "sse",
        "server exits mid-call",
        "InvalidResponse | ConnectFailed",
        "InvalidResponse | ConnectFailed",
        "-",
    ),
    Row("sse", "server hangs", "RequestTimeout"),
    Row("sse", "garbage", "RequestTimeout"),
    Row(
        "sse",
        "a 20 MiB line",
        "MessageTooLarge",
        "MessageTooLarge | NotReady",  # the stream that carried every answer is gone
    ),
    Row("sse", "deep nesting", "RequestTimeout"),
    Row("sse", "invalid UTF-8", "result"),
    Row("sse", "init error", "ConnectFailed", "-", "-"),
    Row("sse", "401", "HttpError 401"),
    Row("sse", "401 at connect", "ConnectFailed permanent", "-", "-"),
    Row("sse", "403", "HttpError 403"),
    Row("sse", "404", "HttpError 404"),
    Row("sse", "405", "HttpError 405"),
    Row("sse", "429 (Retry-After: 1)", "HttpError 429"),
    Row("sse", "429 at connect (Retry-After: 1)", "result", "-"),
    Row("sse", "500", "HttpError 500"),
    Row("sse", "502", "HttpError 502"),
    Row("sse", "503", "HttpError 503"),
    Row("sse", "redirect", "HttpError 307"),
    Row("sse", "dropped SSE stream, not resumable", "ConnectFailed", "ConnectFailed | NotReady"),
    Row("sse", "stalled body", "RequestTimeout"),
    Row("sse", "reset connection", "InvalidResponse"),
    Row("sse", "slow-loris server", "RequestTimeout"),
    Row("sse", "connection refused", "ConnectFailed", "-", "-"),
]

# --- timing ------------------------------------------------------------------------------------

CALL_TIMEOUT = 0.5  # the faulted call's deadline
OTHER_TIMEOUT = 3.0  # the other call's: it may wait behind the faulted one
SLOW = 0.3  # the other call takes this long on the server, so the fault happens while it runs
READY_TIMEOUT = 5.0  # init_timeout, and the wait for readiness after a fault
MARGIN = 1.0  # an answer this late after its deadline fails the row
CLEANUP = 10.0  # processes, threads and descriptors must be gone by then
RETRY_AFTER = 1

SECRET = "fault-matrix-s3cr3t-9f27"  # in every spec; must appear nowhere
PATHS = itertools.count(1)

# Faults the client names only `shutdown_grace` after they happened (it waits that long for the
# process to exit, so that an exit is reported with its code): the faulted call's deadline
# comes later than that.
# A 20 MiB line is refused once max_message_bytes (8 MiB) of it is read: a tenth of a second on
# a quiet machine, past CALL_TIMEOUT under load (seen once in a full run beside other work).
CALL_TIMEOUTS = {
    "server closes stdout": OTHER_TIMEOUT,
    "server closes stdin": OTHER_TIMEOUT,
    "a 20 MiB line": OTHER_TIMEOUT,
}
# Faults whose other call starts first, so that it is in flight when the fault comes.
OTHERS_FIRST = {"404, calls in flight"}
# Spec fields a fault's row needs beyond the defaults.
FAULT_FIELDS: dict[str, dict[str, Any]] = {"404, calls in flight": {"concurrency": "stateless"}}

# Faults of a tool the server runs as a task: task_fault_row runs them (see the docstring).
TASK_FAULTS = {"task never finishes", "server exits mid-task", "caller cancelled mid-task"}
CANCELS_TASK = {"task never finishes", "caller cancelled mid-task"}
CALLER_CANCELS = {"caller cancelled mid-task"}
# A task call's deadline: it covers listing the tools, the call and the polls, so that a slow
# start (a loaded machine) cannot turn it into a plain call's timeout before the task exists.
TASK_TIMEOUT = 1.5
POLL_MS = 100  # the task's pollInterval
# stdio, the server exiting at the first poll (EXIT_POLL_MS after the task began): the call
# beside the task must have been sent by then, and still be in flight.
EXIT_POLL_MS = 300
EXIT_OTHER_DELAY = 1.0

CONNECT_FAULTS = {
    "missing executable",
    "init error",
    "401 at connect",
    "429 at connect (Retry-After: 1)",
    "connection refused",
}

# --- outcomes ----------------------------------------------------------------------------------


class Cancelled:
    """The answer of a caller that was cancelled (and returned in time)."""

    def __repr__(self) -> str:
        return "<the caller was cancelled>"


CANCELLED = Cancelled()


def matches(choice: str, got: object) -> bool:
    name, _, detail = choice.partition(" ")
    if name == "result":
        return isinstance(got, core.CallToolResult) and not got.is_error
    if name == "cancelled":
        return got is CANCELLED
    if type(got) is not getattr(core, name):
        return False
    if detail == "permanent":
        return bool(getattr(got, "permanent", False))
    if detail.lstrip("-").isdigit():
        number = getattr(got, "code" if name == "JsonRpcError" else "status", None)
        return number == int(detail)
    if name == "ConnectFailed":
        return not getattr(got, "permanent", True)
    return detail == ""


def check(what: str, outcome: str, got: object) -> None:
    if not any(matches(choice.strip(), got) for choice in outcome.split("|")):
        raise AssertionError(f"{what}: expected {outcome}, got {got!r}")


# --- one row -----------------------------------------------------------------------------------


@dataclass
class Run:
    """What a row saw: every answer (results and errors), and the servers it started."""

    row: Row
    driver: str
    answers: list[object] = field(default_factory=list)
    statuses: list[core.Status] = field(default_factory=list)
    servers: list[HttpFaultServer] = field(default_factory=list)

    def server(self, server: HttpFaultServer) -> HttpFaultServer:
        self.servers.append(server.start())
        return server


async def answered(what: str, deadline: float, call: Callable[[], Awaitable[Any]]) -> object:
    """The call's result or typed error; the row fails if it comes later than deadline+MARGIN."""
    try:
        with anyio.fail_after(deadline + MARGIN):
            return await call()
    except core.McpError as error:
        return error
    except TimeoutError:
        message = f"{what}: no answer by its deadline ({deadline} s) + {MARGIN} s"
        raise AssertionError(message) from None


def stdio_fields(*flags: str) -> dict[str, Any]:
    argv = fault_server_argv(*flags, "--matrix-token", SECRET)
    return {"command": argv[0], "args": argv[1:], "env": {"MATRIX_TOKEN": SECRET}}


def http_fields(server: HttpFaultServer) -> dict[str, Any]:
    return {"url": f"{server.url}?token={SECRET}", "headers": {"Authorization": f"Bearer {SECRET}"}}


def new_server(transport: str = "legacy", *, tasks: bool = False) -> HttpFaultServer:
    """A server on a path no other row used: the client caches the era it found per origin and
    path, and the OS hands out ports again, so a row must not inherit another row's verdict."""
    path = f"/mcp-{next(PATHS)}"
    if transport == "sse":
        return HttpSseFaultServer(path=path)
    return HttpFaultServer(era=transport, path=path, tasks=tasks)


# What the server does to the faulted call: stdio (tool, arguments); HTTP (kind, options).
STDIO_CALL_FAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "server exits mid-call": ("exit_later", {"delay": 0.1, "code": 3, "stderr": "dying\n"}),
    "server closes stdout": ("close_stdout", {"delay": 0.1}),
    "server closes stdin": ("close_stdin", {"delay": 0.1}),
    "server hangs": ("hang", {}),
    "garbage": ("garbage", {}),
    "a 20 MiB line": ("huge", {"mib": 20}),
    "deep nesting": ("deep_nesting", {}),
    "invalid UTF-8": ("invalid_utf8", {}),
}


def http_call_fault(transport: str, fault: str, run: Run) -> tuple[str, dict[str, Any]]:
    sse = transport == "sse"
    if fault.split(" ")[0].isdigit():
        status = int(fault.split(" ")[0])
        if status == 404 and transport == "legacy":
            return "expire_session", {}  # and "404, calls in flight" too
        if status == 429:
            return "rate_limited", {"retry_after": str(RETRY_AFTER)}
        return "status", {"status": status}
    if fault == "404, calls in flight":
        return "expire_session", {}
    if fault == "redirect":
        elsewhere = run.server(new_server())
        return "redirect", {"location": elsewhere.url}
    return {
        "server exits mid-call": ("stall_headers", {}),
        "server hangs": ("no_answer" if sse else "stall_headers", {}),
        "garbage": ("garbage", {}),
        "a 20 MiB line": ("huge", {"mib": 20, "sse": True}),
        "deep nesting": ("deep_nesting", {}),
        "invalid UTF-8": ("invalid_utf8", {}),
        "empty 200": ("empty_200", {}),
        "dropped SSE stream, resumable": ("drop_sse", {"retry_ms": 20}),
        "dropped SSE stream, not resumable": ("drop_stream" if sse else "drop_sse_unresumable", {}),
        "stalled body": ("stall_body", {}),
        "reset connection": ("reset", {}),
        "oversized body": ("huge", {"mib": 20, "sse": False}),
        "slow-loris server": ("slow_loris", {"where": "body"}),
    }[fault]


async def call_fault_row(run: Run) -> None:
    """The faulted call, a second call while the fault is under way, then the next call."""
    row, transport = run.row, run.row.transport
    server: HttpFaultServer | None = None
    if transport.startswith("stdio"):
        fields = stdio_fields(*(["--modern"] if transport == "stdio-modern" else []))
        tool, arguments = STDIO_CALL_FAULTS[row.fault]
    else:
        server = run.server(new_server(transport))
        fields = http_fields(server)
        tool, arguments = "echo", {"text": "faulted"}
    client = Facade(
        run.driver,
        **fields,
        **FAULT_FIELDS.get(row.fault, {}),
        reconnect=0.05,
        init_timeout=READY_TIMEOUT,
        shutdown_grace=1.0,
    )
    others_first = row.fault in OTHERS_FIRST
    async with client:
        run.statuses.append(client.status())
        kind, options = "", {}
        if server is not None:
            kind, options = http_call_fault(transport, row.fault, run)
            if not others_first:
                server.set_fault(kind, method="tools/call", **options)
        answers: dict[str, object] = {}

        async def faulted() -> None:
            timeout = CALL_TIMEOUTS.get(row.fault, CALL_TIMEOUT)
            answers["caller"] = await answered(
                "the faulted call",
                timeout,
                lambda: client.call_tool(tool, arguments, timeout=timeout),
            )

        async def other() -> None:
            if server is None:
                call = client.call_tool("slow_progress", {"steps": 1, "delay": SLOW}, timeout=3)
            else:
                server.set_fault("delay", method="tools/call", seconds=SLOW)
                call = client.call_tool("echo", {"text": "other"}, timeout=OTHER_TIMEOUT)
            answers["others"] = await answered("the other call", OTHER_TIMEOUT, lambda: call)

        async with anyio.create_task_group() as tasks:
            if others_first and server is not None:
                # The other call is in flight on the server when the fault hits the session.
                tasks.start_soon(other)
                await until(lambda: any(r.fault == "delay" for r in server.requests), "other")
                server.set_fault(kind, method="tools/call", **options)
                tasks.start_soon(faulted)
            else:
                # The other call starts once the fault is under way.
                tasks.start_soon(faulted)
                if server is None:
                    in_flight = client.status
                    await until(lambda: "caller" in answers or in_flight().in_flight >= 1, "call")
                else:
                    await until(lambda: any(r.fault == kind for r in server.requests), "fault")
                tasks.start_soon(other)
            if row.fault == "server exits mid-call" and server is not None:
                # Stop the server with both calls admitted; beside the faulted one (stateless),
                # the other call has reached the server first.
                status = client.status
                await until(lambda: status().in_flight + status().queued >= 2, "both admitted")
                if status().concurrency == "stateless":
                    await until(lambda: any(r.fault == "delay" for r in server.requests), "other")
                await anyio.to_thread.run_sync(server.stop)
        run.answers += [answers["caller"], answers["others"]]
        check("the faulted call", row.caller, answers["caller"])
        check("the other call", row.others, answers["others"])
        if row.fault == "redirect":
            assert run.servers[-1].requests == [], "a request followed the redirect"
        await next_call(run, client)
        run.statuses.append(client.status())


async def next_call(run: Run, client: Facade) -> None:
    """Unless the row says the server is gone: once the client is ready again, the next call."""
    if run.row.then == "-":
        return
    await answered("await_ready", READY_TIMEOUT, lambda: client.await_ready(READY_TIMEOUT))
    then = await answered(
        "the next call",
        OTHER_TIMEOUT,
        lambda: client.call_tool("echo", {"text": "then"}, timeout=OTHER_TIMEOUT),
    )
    run.answers.append(then)
    check("the next call", run.row.then, then)


async def task_fault_row(run: Run) -> None:
    """A call of a tool the server runs as a task, faulted once the client follows the task;
    a second call beside it, then the next call (see the module docstring)."""
    row, transport = run.row, run.row.transport
    server: HttpFaultServer | None = None
    if transport.startswith("stdio"):
        fields = stdio_fields("--tasks", *(["--modern"] if transport == "stdio-modern" else []))
    else:
        server = run.server(new_server(transport, tasks=True))
        fields = http_fields(server)
    exits = row.fault == "server exits mid-task"
    tool, arguments = "task_forever", {"pollMs": POLL_MS}
    if exits and server is None:
        tool, arguments = "task_exit", {"pollMs": EXIT_POLL_MS, "code": 3, "stderr": "dying\n"}
    client = Facade(
        run.driver, **fields, reconnect=0.05, init_timeout=READY_TIMEOUT, shutdown_grace=1.0
    )
    following = threading.Event()  # set by the call's progress: from any driver's thread
    async with client:
        run.statuses.append(client.status())
        if exits and server is not None:
            server.set_fault("stall_headers", method="tasks/get")  # the poll the stop cuts
        answers: dict[str, object] = {}
        caller = anyio.CancelScope()

        async def faulted() -> None:
            with caller:
                answers["caller"] = await answered(
                    "the faulted call",
                    TASK_TIMEOUT,
                    lambda: client.call_tool(
                        tool, arguments, timeout=TASK_TIMEOUT, progress=lambda *_: following.set()
                    ),
                )
                return
            answers["caller"] = CANCELLED

        async def other() -> None:
            if server is None:
                delay = EXIT_OTHER_DELAY if exits else SLOW
                call = client.call_tool(
                    "slow_progress", {"steps": 1, "delay": delay}, timeout=OTHER_TIMEOUT
                )
            else:
                server.set_fault("delay", method="tools/call", seconds=SLOW)
                call = client.call_tool("echo", {"text": "other"}, timeout=OTHER_TIMEOUT)
            answers["others"] = await answered("the other call", OTHER_TIMEOUT, lambda: call)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(faulted)
            await until(
                lambda: following.is_set() or "caller" in answers, "the task", READY_TIMEOUT
            )
            tasks.start_soon(other)
            if row.fault in CALLER_CANCELS:
                caller.cancel()
                await until(lambda: "caller" in answers, "the cancelled caller", MARGIN)
            elif exits and server is not None:
                # Stop the server with both calls admitted and the task's poll held; beside
                # the task (stateless), the other call has reached the server first.
                status = client.status
                await until(lambda: status().in_flight + status().queued >= 2, "both admitted")
                if status().concurrency == "stateless":
                    await until(lambda: any(r.fault == "delay" for r in server.requests), "other")
                await until(
                    lambda: any(r.fault == "stall_headers" for r in server.requests), "poll"
                )
                await anyio.to_thread.run_sync(server.stop)
        run.answers += [answers["caller"], answers["others"]]
        check("the faulted call", row.caller, answers["caller"])
        check("the other call", row.others, answers["others"])
        if row.fault in CANCELS_TASK:
            await cancelled_on_the_server(client, server, answers["caller"])
        await next_call(run, client)
        run.statuses.append(client.status())


async def cancelled_on_the_server(
    client: Facade, server: HttpFaultServer | None, caller: object
) -> None:
    """The server received `tasks/cancel` for the one task the call created (2026-07-28 HTTP:
    naming it in Mcp-Name too), and no `notifications/cancelled` for the call that created it
    (both versions forbid it for a task); a caller whose deadline passed was told so, naming
    the task."""
    if server is None:  # stdio: the server says what it saw
        seen: dict[str, list[Any]] = {"created": [], "cancelled": []}
        with anyio.move_on_after(READY_TIMEOUT):
            while not seen["cancelled"]:
                said = await client.call_tool("tasks_seen", timeout=OTHER_TIMEOUT)
                seen = json.loads(said.text)
                if not seen["cancelled"]:
                    await anyio.sleep(0.02)  # asking the server again, under the deadline
        created, cancelled = seen["created"], seen["cancelled"]
        calls, notified = seen.get("created_by", []), seen.get("notified", [])
        named = None
    else:
        wait = partial(server.wait_for_request, lambda r: r.rpc_method == "tasks/cancel")
        request = await anyio.to_thread.run_sync(wait, READY_TIMEOUT)
        created, cancelled = list(server.tasks), server.cancelled_tasks
        named = request.header("mcp-name") if server.era == "modern" else None
        calls = [r.json["id"] for r in server.requests if r.rpc_method == "tools/call"]
        notified = [
            r.json["params"].get("requestId")
            for r in server.requests
            if r.rpc_method == "notifications/cancelled"
        ]
    message = f"the server created {created} and was sent tasks/cancel for {cancelled}"
    assert len(created) == 1 and cancelled == created, message
    assert calls and not set(calls) & set(notified), f"notifications/cancelled for {notified}"
    if server is not None:
        assert server.tasks[created[0]]["status"] == "cancelled", server.tasks
        assert server.era != "modern" or named == created[0], f"Mcp-Name: {named}"
    if isinstance(caller, core.RequestTimeout):
        assert f"task {created[0]!r}" in str(caller), caller
        assert "it was cancelled on the server" in str(caller), caller


async def connect_fault_row(run: Run) -> None:
    """A fault during connect: the client's `async with` (which waits for readiness)."""
    row, transport = run.row, run.row.transport
    server: HttpFaultServer | None = None
    fields: dict[str, Any]
    if transport.startswith("stdio"):
        era = ["--modern"] if transport == "stdio-modern" else []
        if row.fault == "missing executable":
            fields = stdio_fields(*era)
            fields["command"] = str(Path("/nonexistent") / "fault-matrix-server")
        else:
            fields = stdio_fields("--init-error", *era)
    elif row.fault == "connection refused":
        gone = new_server().start()
        gone.stop()  # its port is free again: nothing listens there
        fields = http_fields(gone)
    else:
        server = run.server(new_server(transport))
        fields = http_fields(server)
        handshake = "server/discover" if transport == "modern" else "initialize"
        if row.fault == "init error":
            server.set_fault("rpc_error", method=handshake, times=None)
        elif row.fault == "401 at connect":
            server.set_fault("unauthorized", times=None)
        else:  # 429 at connect, once
            server.set_fault("rate_limited", method=handshake, retry_after=str(RETRY_AFTER))
    recovering = row.caller == "result"
    client = Facade(
        run.driver,
        **fields,
        reconnect=0.05,
        init_timeout=READY_TIMEOUT,
        shutdown_grace=1.0,
        fail_fast=not recovering,
    )

    async def connect() -> object:
        async with client:
            run.statuses.append(client.status())
            return await client.call_tool("echo", {"text": "connected"}, timeout=OTHER_TIMEOUT)

    got = await answered("connect", READY_TIMEOUT + (OTHER_TIMEOUT if recovering else 0), connect)
    run.answers.append(got)
    run.statuses.append(client.status())
    check("connect", row.caller, got)
    if row.fault.startswith("429") and server is not None:
        tries = [r for r in server.requests if r.rpc_method == handshake]
        if transport == "sse":  # not the first POST, which tried Streamable HTTP and got 405
            tries = [r for r in tries if "session=" in r.path]
        assert len(tries) == 2 and tries[0].fault == "rate_limited", tries
        assert tries[1].at - tries[0].at >= RETRY_AFTER - 0.05, "Retry-After was not honoured"


# --- leaks and secrets -------------------------------------------------------------------------


def idle_trio_workers() -> int:
    """Trio keeps an idle worker thread for 10 s after a job (trio runs subprocess.Popen in
    one): that thread holds nothing of the client, so it is not counted. A busy one (a job
    that never ended) is."""
    cache = getattr(getattr(trio_thread_cache, "THREAD_CACHE", None), "_idle_workers", {})
    return sum(1 for worker in list(cache) if worker._thread.is_alive())


def counts() -> tuple[list[int], int, int]:
    threads = threading.active_count() - idle_trio_workers()
    return children_of(os.getpid()), threads, len(os.listdir("/proc/self/fd"))


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def record_text(record: logging.LogRecord) -> str:
    try:
        message = record.getMessage()
    except (TypeError, ValueError):
        message = f"{record.msg!r} % {record.args!r}"
    return f"{record.name} {message} {record.args!r} {record.exc_text or ''}"


def texts_of(run: Run, records: list[logging.LogRecord]) -> Iterator[tuple[str, str]]:
    for answer in run.answers:
        if isinstance(answer, BaseException):
            yield f"error {answer!r}", str(answer)
            yield f"error {answer!r}", repr(answer)
            cause = getattr(answer, "cause", None)
            if cause is not None:
                yield f"cause of {answer!r}", f"{cause} {cause!r}"
    for status in run.statuses:
        yield "status()", repr(status)
    for record in records:
        yield f"log record {record.name}", record_text(record)


# --- the test ----------------------------------------------------------------------------------


def row_id(row: Row) -> str:
    return f"{row.transport}-{re.sub(r'[^A-Za-z0-9]+', '_', row.fault).strip('_')}"


def params() -> list[Any]:
    cases = []
    for row in ROWS:
        marks = [pytest.mark.xfail(strict=True, reason=row.xfail)] if row.xfail else []
        for driver in DRIVERS:
            skip = []
            if row.fault in CALLER_CANCELS and driver == "sync":
                skip = [pytest.mark.skip(reason="a blocked thread cannot be cancelled")]
            cases.append(
                pytest.param(row, driver, id=f"{row_id(row)}-{driver}", marks=marks + skip)
            )
    return cases


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("row", "driver"), params())
def test_fault_matrix(row: Row, driver: str) -> None:
    before = counts()
    records = Records()
    root = logging.getLogger()
    level = root.level
    root.addHandler(records)
    root.setLevel(logging.DEBUG)
    run = Run(row, driver)
    scenario = call_fault_row
    if row.fault in CONNECT_FAULTS:
        scenario = connect_fault_row
    elif row.fault in TASK_FAULTS:
        scenario = task_fault_row
    try:
        anyio.run(scenario, run, backend="trio" if driver == "trio" else "asyncio")
    finally:
        root.removeHandler(records)
        root.setLevel(level)
        for server in run.servers:
            server.stop()

    def clean() -> bool:
        children, threads, fds = counts()
        return children == before[0] and threads <= before[1] and fds <= before[2]

    wait_until(clean, CLEANUP, message=f"nothing left behind (before: {before}, now: {counts()})")
    for answer in run.answers:  # an error says what happened, not what is not known
        if isinstance(answer, core.ServerExited) and answer.code is None:
            assert "code None" not in str(answer), answer
    for where, text in texts_of(run, records.records):
        assert SECRET not in text, f"the secret is in {where}: {text[:300]}"


# --- the docs' table --------------------------------------------------------------------------


def test_rows_are_well_formed() -> None:
    seen = set()
    for row in ROWS:
        assert row.transport in TRANSPORTS and row.fault in FAULTS, row
        assert (row.transport, row.fault) not in seen, f"two rows for {row}"
        seen.add((row.transport, row.fault))
        for outcome in (row.caller, row.others, row.then):
            for choice in outcome.split("|"):
                name = choice.strip().partition(" ")[0]
                assert name in ("result", "-", "cancelled") or issubclass(
                    getattr(core, name), core.McpError
                )


def test_outcomes_are_matched_exactly() -> None:
    check("x", "HttpError 503", core.HttpError(503))
    check("x", "result", core.CallToolResult())
    check("x", "ConnectFailed permanent", core.ConnectFailed("gone", permanent=True))
    check("x", "ConnectFailed", core.ConnectFailed("later"))
    check("x", "JsonRpcError -32603", core.JsonRpcError(-32603, "boom"))
    check("x", "InvalidResponse | ConnectFailed", core.ConnectFailed("later"))
    check("x", "cancelled", CANCELLED)
    for outcome, got in [
        ("HttpError 503", core.HttpError(502)),
        ("ConnectFailed", core.ConnectFailed("gone", permanent=True)),
        ("ConnectFailed permanent", core.ConnectFailed("later")),
        ("JsonRpcError", core.UrlElicitationRequired("m", ())),  # the class itself, no subclass
        ("result", core.CallToolResult(is_error=True)),
        ("RequestTimeout", core.HttpError(504)),
        ("cancelled", core.RequestTimeout("late")),
        ("RequestTimeout", CANCELLED),
    ]:
        with pytest.raises(AssertionError):
            check("x", outcome, got)


def test_the_row_checks_see_a_secret_and_a_leak() -> None:
    run = Run(ROWS[0], "sync")
    run.answers.append(core.InvalidResponse("tools/call", f"an echo of {SECRET}"))
    assert any(SECRET in text for _, text in texts_of(run, []))
    record = logging.LogRecord("mcp_client.t", logging.DEBUG, __file__, 1, "%s", (SECRET,), None)
    assert any(SECRET in text for _, text in texts_of(Run(ROWS[0], "sync"), [record]))
    before = counts()
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    read_end, write_end = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=read_end)
    try:
        children, threads, fds = counts()
        assert child.pid in children and child.pid not in before[0]
        assert threads == before[1] + 1 and fds >= before[2] + 2
    finally:
        release.set()
        thread.join()
        os.close(write_end)  # the child reads EOF and exits
        child.wait(timeout=30)
        os.close(read_end)
    assert counts() == before


def test_docs_show_the_rows() -> None:
    # Run `python scripts/fault_matrix_table.py --write` after changing ROWS.
    from scripts.doc_section import shown_and_drawn

    shown, drawn = shown_and_drawn("fault_matrix_table")
    assert shown == drawn, (
        "docs/guarantees.md's fault matrix is not drawn from ROWS: run "
        "`python scripts/fault_matrix_table.py --write`"
    )
