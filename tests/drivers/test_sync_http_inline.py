"""The blocking driver's HTTP fast path: a caller runs the request its own call started, in its
own thread (mcp_sync/_http.py, "callers run their own requests"), and workers run the rest.
These pin down what that must keep: callbacks in the caller's thread, many callers at once, a
timeout and stop() while the caller waits for data, an SSE stream that outlives the answer
(read on by a worker, closed at stop()), a connection cut mid-answer, Ctrl-C in the main
thread, and, on the executor alone, the hand-overs between a caller and the workers (the cap,
start order, interrupts before, during and after sending). Against a small MCP server on
127.0.0.1 (h11, one thread per connection). No test sleeps to wait: each waits for its event,
with a deadline."""

from __future__ import annotations

import json
import logging
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import h11
import pytest

import mcp_core as core
from mcp_core import HttpBodyReceived, HttpFailed, HttpResponseEnded, HttpResponseStarted
from mcp_sync import Client
from mcp_sync._http import HttpEvent, HttpExecutor
from tests.conftest import CTRL_C_RAISES
from tests.drivers import test_http_executors as executor_tests

pytestmark = pytest.mark.timeout(90)

WAIT = 10.0  # the deadline of every wait for an event
REPO = Path(__file__).resolve().parents[2]
SESSION_HEADER = ("Mcp-Session-Id", "inline-session")


# --- the server ------------------------------------------------------------------------------


def _sse(message: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(message).encode() + b"\n\n"


def _log(text: str) -> dict[str, Any]:
    params = {"level": "info", "data": text}
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": params}


class McpServer(executor_tests.Server):
    """A legacy-era Streamable HTTP server (POST /mcp) and three plain routes, on 127.0.0.1.

    Tools: echo(text) answers JSON. progress(text) answers SSE: a progress notification (if the
    call asked for progress) and a log record "before", then the answer. linger(text) answers
    SSE: the answer, then the stream stays open until `linger` is set, then carries the log
    record "after" and stays open until the client closes it. stall never answers (it reads
    until the client closes). cut sends a head and half a JSON body, then closes. tools/list
    comes in two pages. GET is 405, DELETE 200. notifications/cancelled is noted in `calls`.
    Plain routes, for the executor alone: /json; /linger (one SSE event, a second once
    `linger` is set, the end once `finish` is set); /stall (one SSE event, then it reads until
    the client closes).
    `calls` lists what each request asked for ("echo:<text>", "tools/list:<cursor>",
    "cancelled:<request id>", "/json?1", ...) and `open` counts connections the client has
    not closed (the server reads EOF). Connections (accept, keep-alive, counts, close) are
    handled as in the executor tests' `Server`, which this one only gives other routes.
    """

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.linger = threading.Event()
        self.finish = threading.Event()
        super().__init__()
        self.origin = self.url
        self.url = self.origin + "/mcp"

    def saw(self, predicate: Callable[[], bool], what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, WAIT), f"the server never saw {what}"

    def close(self) -> None:
        self.linger.set()
        self.finish.set()
        super().close()

    def _note(self, call: str) -> None:
        with self.changed:
            self.calls.append(call)
            self.changed.notify_all()

    def _respond(
        self, peer: h11.Connection, connection: socket.socket, request: h11.Request, body: bytes
    ) -> bool:
        def send(*events: h11.Event) -> None:
            connection.sendall(b"".join(peer.send(event) or b"" for event in events))

        def answer(
            status: int, message: dict[str, Any] | None = None, *extra: tuple[str, str]
        ) -> None:
            data = json.dumps(message).encode() if message is not None else b""
            fields = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
            fields += extra
            send(h11.Response(status_code=status, headers=fields), h11.Data(data=data))
            send(h11.EndOfMessage())

        sse_head = h11.Response(status_code=200, headers=[("Content-Type", "text/event-stream")])
        target, method = request.target.decode(), request.method.decode()
        if target.startswith("/json"):  # a query tells requests apart in `calls`
            self._note(target)
            answer(200, {"ok": True})
        elif target == "/linger":
            send(sse_head, h11.Data(data=b"data: one\n\n"))
            self.linger.wait(WAIT)
            send(h11.Data(data=b"data: two\n\n"))
            self.finish.wait(WAIT)
            send(h11.EndOfMessage())
        elif target == "/stall":
            send(sse_head, h11.Data(data=b"data: one\n\n"))
            executor_tests._read_until_eof(connection)
            return False
        elif method == "GET":
            answer(405, None, ("Allow", "POST, DELETE"))
        elif method == "DELETE":
            self._note("DELETE")
            answer(200)
        else:
            return self._post(send, answer, sse_head, connection, json.loads(body))
        return True

    def _post(
        self,
        send: Callable[..., None],
        answer: Callable[..., None],
        sse_head: h11.Response,
        connection: socket.socket,
        message: dict[str, Any],
    ) -> bool:
        method, params = message.get("method"), message.get("params") or {}
        request_id = message.get("id")
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion"),
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "inline", "version": "1"},
            }
            answer(200, {"jsonrpc": "2.0", "id": request_id, "result": result}, SESSION_HEADER)
            return True
        if request_id is None or method is None:
            if method == "notifications/cancelled":
                self._note(f"cancelled:{params.get('requestId')}")
            answer(202)  # a notification
            return True
        if method == "tools/list":
            cursor = params.get("cursor")
            self._note(f"tools/list:{cursor}")
            page: dict[str, Any] = {"tools": [_tool("echo")]}
            if cursor is None:
                page["nextCursor"] = "2"
            else:
                page["tools"] = [_tool(name) for name in ("progress", "linger", "stall", "cut")]
            answer(200, {"jsonrpc": "2.0", "id": request_id, "result": page})
            return True
        name = params.get("name")
        text = str((params.get("arguments") or {}).get("text", ""))
        self._note(f"{name}:{text}")
        result = {"jsonrpc": "2.0", "id": request_id, "result": _text(text)}
        if name == "echo":
            answer(200, result)
        elif name == "progress":
            send(sse_head)
            token = (params.get("_meta") or {}).get("progressToken")
            if token is not None:
                note = {"progressToken": token, "progress": 1, "total": 2, "message": text}
                message = {"jsonrpc": "2.0", "method": "notifications/progress", "params": note}
                send(h11.Data(data=_sse(message)))
            send(h11.Data(data=_sse(_log("before"))))
            send(h11.Data(data=_sse(result)), h11.EndOfMessage())
        elif name == "linger":
            send(sse_head, h11.Data(data=_sse(result)))
            self.linger.wait(WAIT)
            send(h11.Data(data=_sse(_log("after"))))
            executor_tests._read_until_eof(connection)
            return False
        elif name == "stall":
            executor_tests._read_until_eof(connection)
            return False
        elif name == "cut":
            data = json.dumps(result).encode()
            head = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
            send(h11.Response(status_code=200, headers=head), h11.Data(data=data[: len(data) // 2]))
            return False
        return True


def _tool(name: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return {"name": name, "inputSchema": schema}


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


@pytest.fixture
def server() -> Iterator[McpServer]:
    peer = McpServer()
    try:
        yield peer
    finally:
        peer.close()


def _driver_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp-sync")]


@pytest.fixture(autouse=True)
def nothing_left() -> Iterator[None]:
    yield
    assert _driver_threads() == []


def _client(server: McpServer, **fields: Any) -> Client:
    fields.setdefault("concurrency", "stateless")
    fields.setdefault("pool_size", 64)
    return Client(name="inline", url=server.url, era="legacy", reconnect=0.05, **fields)


class _Records(logging.Handler):
    """The server's log records (logger mcp.server.inline): message -> the thread that fed it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.threads: dict[str, str] = {}
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.changed:
            self.threads[record.getMessage()] = record.threadName or ""
            self.changed.notify_all()

    def wait_for(self, message: str) -> str:
        with self.changed:
            assert self.changed.wait_for(lambda: message in self.threads, WAIT), self.threads
            return self.threads[message]


@pytest.fixture
def records() -> Iterator[_Records]:
    handler = _Records()
    logger = logging.getLogger("mcp.server.inline")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)


# --- the client ------------------------------------------------------------------------------


def test_the_request_runs_in_the_callers_thread(server: McpServer, records: _Records) -> None:
    # The progress callback and the log record of the answer's stream come from the caller's
    # own thread: it read the answer itself, no worker handed it over.
    seen: list[int] = []
    with _client(server) as client:
        result = client.call_tool(
            "progress", {"text": "p"}, progress=lambda *_: seen.append(threading.get_ident())
        )
        assert result.text == "p"
        assert seen == [threading.get_ident()]
        assert records.wait_for("before") == threading.current_thread().name
        assert client.call_tool("echo", {"text": "again"}).text == "again"


def test_many_threads_each_get_their_own_answer(server: McpServer) -> None:
    # 24 threads, 10 calls each, all at once; with pool_size=8 the machine holds some calls
    # back, and those are started by other threads' feeds: workers run them. Both paths mix.
    errors: list[BaseException] = []
    answers: dict[str, str] = {}
    barrier = threading.Barrier(24)

    def caller(index: int, client: Client) -> None:
        try:
            barrier.wait(WAIT)
            for round_ in range(10):
                text = f"t{index}-{round_}"
                answers[text] = client.call_tool("echo", {"text": text}).text
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    for pool_size in (64, 8):
        answers.clear()
        with _client(server, pool_size=pool_size, queue_limit=100) as client:
            threads = [threading.Thread(target=caller, args=(i, client)) for i in range(24)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
        assert errors == []
        assert len(answers) == 240
        assert all(text == answer for text, answer in answers.items())


def test_a_timeout_while_the_caller_waits_for_data(server: McpServer) -> None:
    with _client(server) as client:
        with pytest.raises(core.RequestTimeout):
            client.call_tool("stall", {}, timeout=0.3)
        # The abort woke the caller and closed the connection (the server reads EOF).
        server.saw(lambda: server.open <= 1, "the stalled connection closed")
        assert client.call_tool("echo", {"text": "later"}).text == "later"


def test_an_sse_answer_whose_stream_stays_open(server: McpServer, records: _Records) -> None:
    # The caller returns with its answer while the stream goes on; a worker reads on: the log
    # record sent after the answer arrives, fed by a worker. stop() closes the stream.
    with _client(server) as client:
        assert client.call_tool("linger", {"text": "now"}).text == "now"
        server.linger.set()
        assert records.wait_for("after").startswith("mcp-sync-http-")
        assert client.call_tool("echo", {"text": "meanwhile"}).text == "meanwhile"
    server.saw(lambda: server.open == 0, "every connection closed")


def test_a_connection_cut_in_the_middle_of_the_answer(server: McpServer) -> None:
    with _client(server) as client:
        with pytest.raises(core.McpError) as raised:
            client.call_tool("cut", {"text": "half"})
        assert not isinstance(raised.value, core.RequestTimeout)
        assert client.call_tool("echo", {"text": "whole"}).text == "whole"


def test_stop_while_a_caller_waits_for_data(server: McpServer) -> None:
    client = _client(server)
    client.start()
    client.await_ready(WAIT)
    raised: list[BaseException] = []

    def caller() -> None:
        try:
            client.call_tool("stall", {})
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=caller)
    thread.start()
    server.saw(lambda: "stall:" in server.calls, "the stalled call")
    client.stop()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], core.NotReady), raised
    assert _driver_threads() == []
    server.saw(lambda: server.open == 0, "every connection closed")


def test_a_paginated_list_the_pages_after_the_first_go_to_workers(server: McpServer) -> None:
    # Page 2 is started by the feed of page 1's end, not by the caller's own feed: a worker
    # runs it while the caller waits for its reply.
    with _client(server) as client:
        names = [tool.name for tool in client.list_tools()]
    assert names == ["echo", "progress", "linger", "stall", "cut"]
    assert server.calls[:2] == ["tools/list:None", "tools/list:2"]


CTRL_C_CHILD = """
import sys, threading
from mcp_sync import Client

with Client(name="inline", url=sys.argv[1], era="legacy", concurrency="stateless") as client:
    print("ready", flush=True)
    try:
        client.call_tool("stall", {})
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    print(client.call_tool("echo", {"text": "after"}).text, flush=True)
print([t.name for t in threading.enumerate() if t.name.startswith("mcp-sync")], flush=True)
"""


def test_ctrl_c_while_the_main_thread_runs_its_request(server: McpServer) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_RAISES + textwrap.dedent(CTRL_C_CHILD), server.url],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        server.saw(lambda: "stall:" in server.calls, "the stalled call")
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    assert out.split("\n") == ["interrupted", "after", "[]", ""], (out, err)
    # The interrupted call was cancelled: the server was told, and the child closed every
    # connection before it exited.
    assert any(call.startswith("cancelled:") for call in server.calls), server.calls
    server.saw(lambda: server.open == 0, "every connection closed")


# --- the executor alone ----------------------------------------------------------------------


class Harness:
    """An executor feeding a list, standing in for the machine: an event of a stream aborted
    meanwhile is dropped, as the machine drops it (checked under the lock abort() runs under,
    as the client feeds the machine under the lock it performs AbortHttp under). Notes which
    thread fed each event."""

    def __init__(self, max_connections: int = 4) -> None:
        self.events: list[HttpEvent] = []
        self.threads: list[tuple[int, str]] = []  # (stream, thread name) per event
        self.changed = threading.Condition()
        self.executor = HttpExecutor(self._feed, time.monotonic, max_connections=max_connections)

    def _feed(self, event: HttpEvent) -> None:
        with self.changed:
            if self.executor.is_live(event.stream):
                self.events.append(event)
                self.threads.append((event.stream, threading.current_thread().name))
                self.changed.notify_all()

    def start(self, stream: int, url: str, *, inline: bool = False) -> Any:
        action = core.StartHttp(stream=stream, method="GET", url=url, headers=())
        with self.changed:
            return self.executor.start(action, inline=inline)

    def abort(self, stream: int) -> None:
        with self.changed:
            self.executor.abort(stream)

    def of(self, stream: int) -> list[HttpEvent]:
        with self.changed:
            return [event for event in self.events if event.stream == stream]

    def wait_for(self, predicate: Callable[[], bool]) -> None:
        with self.changed:
            assert self.changed.wait_for(predicate, WAIT), self.events

    def ended(self, stream: int) -> bool:
        return any(isinstance(e, HttpResponseEnded | HttpFailed) for e in self.of(stream))

    def fed_by(self, stream: int) -> set[str]:
        with self.changed:
            return {name for fed, name in self.threads if fed == stream}

    def close(self) -> None:
        self.executor.close(time.monotonic() + WAIT)
        assert self.executor.in_flight == 0


@pytest.fixture
def harness() -> Iterator[Harness]:
    made = Harness()
    try:
        yield made
    finally:
        made.close()


def _ok(events: list[HttpEvent]) -> bytes:
    assert isinstance(events[0], HttpResponseStarted) and events[0].status == 200, events
    assert isinstance(events[-1], HttpResponseEnded), events
    return b"".join(e.data for e in events if isinstance(e, HttpBodyReceived))


def test_run_performs_the_request_in_the_callers_thread(
    harness: Harness, server: McpServer
) -> None:
    for stream in (1, 2):
        request = harness.start(stream, server.origin + "/json", inline=True)
        assert request is not None
        harness.executor.run(request, threading.Event())
        assert json.loads(_ok(harness.of(stream))) == {"ok": True}
        assert harness.fed_by(stream) == {threading.current_thread().name}
    assert server.accepted == 1  # kept alive between the two
    assert harness.executor.in_flight == 0
    assert _driver_threads() == []  # no worker was ever needed


def test_an_answer_before_the_end_hands_the_stream_to_a_worker(
    harness: Harness, server: McpServer
) -> None:
    # `done` is set (as the caller's Reply would be) once the first event was fed: run()
    # returns with the stream still open, and a worker reads on, in order.
    done = threading.Event()
    request = harness.start(1, server.origin + "/linger", inline=True)
    feed = harness.executor._feed

    def feed_then_done(event: HttpEvent) -> None:
        feed(event)
        if isinstance(event, HttpBodyReceived):
            done.set()

    harness.executor._feed = feed_then_done
    harness.executor.run(request, done)
    assert not harness.ended(1)
    caller = threading.current_thread().name
    assert harness.fed_by(1) == {caller}
    server.linger.set()
    server.finish.set()
    harness.wait_for(lambda: harness.ended(1))
    assert _ok(harness.of(1)) == b"data: one\n\ndata: two\n\n"
    workers = harness.fed_by(1) - {caller}
    assert len(workers) == 1 and workers.pop().startswith("mcp-sync-http-")


def test_at_the_cap_a_callers_request_goes_to_a_worker(server: McpServer) -> None:
    made = Harness(max_connections=1)
    try:
        made.start(1, server.origin + "/linger")  # a worker holds the only connection
        made.wait_for(lambda: len(made.of(1)) >= 2)
        assert made.start(2, server.origin + "/json", inline=True) is None  # queued instead
        made.abort(1)
        made.wait_for(lambda: made.ended(2))
        assert json.loads(_ok(made.of(2))) == {"ok": True}
        assert all(name.startswith("mcp-sync-http-") for name in made.fed_by(2))
    finally:
        made.close()


def test_a_request_released_unrun_goes_first_to_a_worker(server: McpServer) -> None:
    # One connection: request 1 is the caller's, request 2 (started after it) is queued with no
    # worker, since the caller holds the only place. The caller gives 1 up before running it:
    # a worker runs 1, then 2, in start order; nothing is stranded.
    made = Harness(max_connections=1)
    try:
        first = made.start(1, server.origin + "/json?1", inline=True)
        assert first is not None
        made.start(2, server.origin + "/json?2")
        assert _driver_threads() == []
        made.executor.release(first)
        made.executor.release(first)  # idempotent
        made.wait_for(lambda: made.ended(1) and made.ended(2))
        _ok(made.of(1))
        _ok(made.of(2))
        assert server.calls == ["/json?1", "/json?2"]
        assert all(name.startswith("mcp-sync-http-") for name in made.fed_by(1) | made.fed_by(2))
    finally:
        made.close()


def test_a_caller_that_lets_go_starts_a_worker_for_what_waited(server: McpServer) -> None:
    made = Harness(max_connections=1)
    try:
        first = made.start(1, server.origin + "/json", inline=True)
        made.start(2, server.origin + "/json")  # queued: the caller holds the only place
        made.executor.run(first, threading.Event())
        made.wait_for(lambda: made.ended(2))
        assert made.fed_by(1) == {threading.current_thread().name}
        assert all(name.startswith("mcp-sync-http-") for name in made.fed_by(2))
    finally:
        made.close()


class _Interrupting:
    """A `done` whose is_set() raises KeyboardInterrupt once `when()` holds: an interrupt that
    lands while the caller waits for data."""

    def __init__(self, when: Callable[[], bool]) -> None:
        self.when = when
        self.raised = False

    def is_set(self) -> bool:
        if not self.raised and self.when():
            self.raised = True
            raise KeyboardInterrupt
        return False


def test_an_interrupt_while_reading_closes_the_connection(
    harness: Harness, server: McpServer
) -> None:
    # Interrupted between two reads: the connection is closed (bytes read may have been lost
    # with an interrupt), and the stream stays live until the call's cancel aborts it; only
    # then does release() fail it, if the cancel did not.
    request = harness.start(1, server.origin + "/stall", inline=True)
    with pytest.raises(KeyboardInterrupt):
        harness.executor.run(request, _Interrupting(lambda: len(harness.of(1)) == 2))  # type: ignore[arg-type]
    assert len(harness.of(1)) == 2  # head and first event, fed by the caller
    server.saw(lambda: server.open == 0, "the connection closed")
    assert harness.executor.in_flight == 0
    assert harness.executor.is_live(1)
    harness.executor.release(request)
    events = harness.of(1)
    assert isinstance(events[-1], HttpFailed) and "interrupted" in events[-1].reason, events
    harness.executor.release(request)  # idempotent
    assert len(harness.of(1)) == 3


def test_an_interrupted_request_the_cancel_aborted_is_not_failed(
    harness: Harness, server: McpServer
) -> None:
    request = harness.start(1, server.origin + "/stall", inline=True)
    with pytest.raises(KeyboardInterrupt):
        harness.executor.run(request, _Interrupting(lambda: len(harness.of(1)) == 2))  # type: ignore[arg-type]
    harness.abort(1)  # the call's cancel
    harness.executor.release(request)
    assert len(harness.of(1)) == 2
    assert not harness.executor.is_live(1)


def test_an_interrupt_before_sending_puts_the_request_back(
    harness: Harness, server: McpServer
) -> None:
    waiting = harness.executor._wait_turn

    def interrupted(request: Any) -> None:
        harness.executor._wait_turn = waiting  # type: ignore[method-assign]
        raise KeyboardInterrupt

    harness.executor._wait_turn = interrupted  # type: ignore[method-assign]
    request = harness.start(1, server.origin + "/json", inline=True)
    with pytest.raises(KeyboardInterrupt):
        harness.executor.run(request, threading.Event())
    harness.wait_for(lambda: harness.ended(1))
    _ok(harness.of(1))
    assert all(name.startswith("mcp-sync-http-") for name in harness.fed_by(1))


def test_an_interrupt_while_sending_fails_the_request_once(
    harness: Harness, server: McpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sent, then interrupted before it was noted as written: never sent again, failed.
    from mcp_sync import _http

    send = _http._Connection.send

    def sent_then_interrupted(self: Any, data: bytes) -> None:
        send(self, data)
        raise KeyboardInterrupt

    monkeypatch.setattr(_http._Connection, "send", sent_then_interrupted)
    request = harness.start(1, server.origin + "/json", inline=True)
    with pytest.raises(KeyboardInterrupt):
        harness.executor.run(request, threading.Event())
    monkeypatch.undo()
    assert harness.of(1) == []
    harness.executor.release(request)  # the call's cancel did not abort it: failed
    events = harness.of(1)
    assert len(events) == 1 and isinstance(events[0], HttpFailed), events
    assert "interrupted" in events[0].reason
    server.saw(lambda: server.open == 0, "the connection closed")
    assert harness.executor.in_flight == 0


def test_abort_wakes_a_caller_waiting_for_data(harness: Harness, server: McpServer) -> None:
    request = harness.start(1, server.origin + "/stall", inline=True)
    aborter = threading.Thread(
        target=lambda: (harness.wait_for(lambda: len(harness.of(1)) >= 2), harness.abort(1))
    )
    aborter.start()
    harness.executor.run(request, threading.Event())  # returns once aborted
    aborter.join(WAIT)
    assert len(harness.of(1)) == 2  # nothing fed after the abort
    server.saw(lambda: server.open == 0, "the connection closed")
    assert harness.executor.in_flight == 0


def test_close_ends_a_handed_over_stream(harness: Harness, server: McpServer) -> None:
    done = threading.Event()
    done.set()  # the caller's answer came with the first event
    request = harness.start(1, server.origin + "/stall", inline=True)
    harness.executor.run(request, done)  # handed over at its first wait for data
    assert not harness.ended(1)
    harness.close()
    server.saw(lambda: server.open == 0, "the connection closed")
    assert not harness.ended(1)  # an aborted stream gets no more events


# The TLS server and its test CA of the executor tests (fixtures, used by name).
tls_files = executor_tests.tls_files
tls_server = executor_tests.tls_server
trust_test_ca = executor_tests.trust_test_ca


@pytest.mark.usefixtures("trust_test_ca")
def test_run_over_tls_reads_what_tls_holds_back(
    harness: Harness, tls_server: executor_tests.Server
) -> None:
    # Over TLS a poll of the socket misses bytes already decrypted: the caller asks the TLS
    # layer first. Two requests on one kept-alive connection, then an SSE answer handed over.
    for stream in (1, 2):
        request = harness.start(stream, tls_server.url + "/json", inline=True)
        harness.executor.run(request, threading.Event())
        assert json.loads(_ok(harness.of(stream))) == {"ok": True}
    assert tls_server.accepted == 1
    done = threading.Event()
    done.set()
    request = harness.start(3, tls_server.url + "/sse", inline=True)
    harness.executor.run(request, done)
    tls_server.release.set()
    harness.wait_for(lambda: harness.ended(3))
    assert _ok(harness.of(3)) == b"data: one\n\ndata: two\n\ndata: three\n\n"
