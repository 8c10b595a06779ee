"""A server that cannot start: each failed attempt logged, counted, and the readiness wait
ending with one ConnectFailed that says how many attempts failed and why the last did.

Two attempts in a row that fail the same way end every wait at once (a missing module, a
URL with no MCP server); what may pass by itself (a refused connection, a timeout, a 5xx)
is waited through until the wait's deadline.
"""

from __future__ import annotations

import json

import pytest

import mcp_core as core

from ..harness import Harness, HttpHarness


def _crash(h: Harness, stderr: bytes = b"ModuleNotFoundError: No module named 'x'\n") -> None:
    """The attempt's process writes ``stderr`` and exits with 1 before the handshake."""
    h.spawned()
    h.feed(core.StderrReceived(now=h.now, slot=0, generation=h.gen(), data=stderr))
    h.exited(1)


def _logs(h: Harness) -> list[core.Log]:
    return [a for a in h.actions if isinstance(a, core.Log) and "could not connect" in a.message]


def test_the_same_exit_twice_ends_the_wait_with_the_count_and_the_cause() -> None:
    h = Harness(era="legacy", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(timeout=60)
    _crash(h)
    assert waiter not in h.replies  # one failure may be chance: the client retries
    h.fire_due()
    _crash(h)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.gave_up and not err.permanent
    assert err.attempts == 2
    assert isinstance(err.cause, core.ServerExited) and err.cause.code == 1
    assert h.now < 2  # at the second attempt, not at the deadline 60 s away
    message = str(err)
    assert message.startswith(
        f"could not connect (2 attempts in {h.now:.1f} s, the last two failing the same way): "
        "the server exited with code 1 during the handshake; last stderr:\n"
    )
    assert message.endswith("No module named 'x'")
    assert "retries with backoff" not in message  # the wait is over; no promise of a retry
    # The client still retries: only the wait gave up.
    assert h.machine.next_deadline() is not None and h.machine.state == "closed"


def test_a_later_wait_between_attempts_is_answered_at_once_and_one_during_an_attempt_waits() -> (
    None
):
    h = Harness(era="legacy", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    _crash(h)
    h.fire_due()
    _crash(h)
    at_once = h.await_ready(timeout=60)
    err = h.error(at_once)
    assert isinstance(err, core.ConnectFailed) and err.gave_up and err.attempts == 2
    h.fire_due()  # the next attempt starts
    during = h.await_ready(timeout=60)
    assert during not in h.replies
    h.spawned()
    h.answer(h.last_request("initialize")["id"], {"protocolVersion": "2025-11-25"})
    assert h.result(during).state == "ready"


def test_exits_that_differ_are_waited_through_until_the_deadline() -> None:
    h = Harness(era="legacy", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(timeout=10)
    _crash(h, b"error: port 1 busy\n")
    h.fire_due()
    _crash(h, b"error: port 2 busy\n")
    assert waiter not in h.replies
    h.advance(10 - h.now)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.gave_up and err.attempts == 2
    assert str(err).startswith("could not connect (2 attempts in 10.0 s): the server exited")
    assert str(err).endswith("port 2 busy")


def test_the_first_failure_is_a_warning_a_repeat_is_info_a_new_cause_a_warning() -> None:
    h = Harness(era="legacy", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    _crash(h)
    first = _logs(h)
    assert [(r.level, r.logger) for r in first] == [("WARNING", "mcp_client.t")]
    assert first[0].message.startswith("could not connect (attempt 1): the server exited with")
    assert first[0].message.endswith("No module named 'x'; retrying with backoff")
    h.take()
    h.fire_due()
    _crash(h)
    assert [r.level for r in _logs(h)] == ["INFO"]
    h.take()
    h.fire_due()
    _crash(h, b"Killed\n")
    assert [r.level for r in _logs(h)] == ["WARNING"]


def test_a_permanent_failure_is_logged_as_not_retried() -> None:
    h = Harness(command="no-such-server")
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.feed(core.SpawnFailed(now=h.now, slot=0, generation=h.gen(), reason="no file", missing=True))
    (record,) = _logs(h)
    assert record.level == "WARNING" and record.message.endswith("it will not be retried")
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.permanent and err.attempts == 1


def test_a_handshake_past_init_timeout_is_the_waits_cause_not_not_ready() -> None:
    h = Harness(era="legacy", init_timeout=5)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(timeout=5)  # the `with` block's wait: as long as init_timeout
    h.spawned()
    h.advance(5)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.attempts == 1
    assert isinstance(err.cause, core.RequestTimeout)
    assert str(err).startswith("could not connect (1 attempt in 5.0 s): the server did not")


def test_a_wait_that_ends_before_any_attempt_failed_is_not_ready() -> None:
    h = Harness(era="legacy")
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(timeout=1)
    h.spawned()
    h.advance(1)
    err = h.error(waiter)
    assert isinstance(err, core.NotReady) and err.state == "initializing"


def test_the_count_starts_again_after_the_session_was_ready() -> None:
    h = Harness(era="legacy", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    _crash(h)
    h.fire_due()
    h.connect_legacy()
    h.exited(1)  # the ready server dies: a new run of attempts
    h.fire_due()
    waiter = h.await_ready(timeout=60)
    _crash(h)
    assert waiter not in h.replies  # one failure of the new run, not a repeat of the old
    h.fire_due()
    _crash(h)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.attempts == 2


def test_the_same_initialize_error_twice_ends_the_wait() -> None:
    h = Harness(era="legacy", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    for _ in range(2):
        h.spawned()
        h.answer_error(h.last_request("initialize")["id"], -32602, "unsupported capability")
        h.exited(1)
        if waiter not in h.replies:
            h.fire_due()
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.attempts == 2
    assert isinstance(err.cause, core.InitializationFailed)


# --- HTTP ------------------------------------------------------------------------------------


def _not_found_twice(h: HttpHarness) -> None:
    """The initialize POST and the HTTP+SSE GET both answer 404."""
    h.respond(h.request("initialize"), 404)
    h.respond(h.request(http="GET"), 404)


@pytest.mark.parametrize(
    ("url", "hint"),
    [
        (
            "http://user:pw@127.0.0.1:8080/api/wrong?key=secret",
            "most servers serve MCP at /mcp (http://%5Bredacted%5D@127.0.0.1:8080/mcp)",
        ),
        ("http://127.0.0.1:8080/mcp", "check the path in the server's documentation"),
        ("http://127.0.0.1:8080/sse/", "check the path in the server's documentation"),
    ],
)
def test_404_everywhere_names_the_url_suggests_mcp_and_gives_up_on_the_repeat(
    url: str, hint: str
) -> None:
    h = HttpHarness(url=url, era="legacy", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    _not_found_twice(h)
    assert waiter not in h.replies
    first = _logs(h)[0]
    h.take()
    h.fire_due()
    _not_found_twice(h)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.attempts == 2
    assert isinstance(err.http_error, core.HttpError) and err.http_error.status == 404
    shown = url.replace("user:pw@", "%5Bredacted%5D@").replace("?key=secret", "?[redacted]")
    expected = (
        f"{shown} answered HTTP 404 to the initialize POST and HTTP 404 to the HTTP+SSE GET: "
        f"no MCP server there; {hint}"
    )
    assert str(err).endswith(expected)
    assert first.level == "WARNING" and expected in first.message
    assert "secret" not in str(err) and "pw" not in str(err)


def _sse_known(url: str = "https://mcp.example.com/mcp") -> HttpHarness:
    """A client of a server an earlier probe found to speak HTTP+SSE: it only GETs."""
    return HttpHarness(url=url, era_cache={json.dumps(["http", url]): "sse"})


def test_an_sse_only_client_names_the_get_alone() -> None:
    h = _sse_known("http://127.0.0.1:8080/events")
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request(http="GET"), 404)
    assert str(h.error(waiter)).startswith(
        "could not connect: http://127.0.0.1:8080/events answered the HTTP+SSE GET with HTTP "
        "404: no MCP server there; most servers serve MCP at /mcp (http://127.0.0.1:8080/mcp)"
    )


def test_a_get_refused_otherwise_after_a_404_post_has_no_hint() -> None:
    h = HttpHarness(era="legacy")
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 405)
    h.respond(h.request(http="GET"), 404)
    assert str(h.error(waiter)).endswith(
        "answered HTTP 405 to the initialize POST and HTTP 404 to the HTTP+SSE GET; "
        "the client retries with backoff (await_ready waits for it)"
    )


def test_nothing_answering_says_so_and_is_waited_through() -> None:
    h = HttpHarness(url="http://127.0.0.1:1/mcp?token=secret", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(timeout=10)
    refused = "ConnectError: [Errno 111] Connection refused"
    for _ in range(2):
        # era auto: the probe's failure still falls back to initialize.
        for method in ("server/discover", "initialize"):
            stream = h.request(method).stream
            h.feed(core.HttpFailed(now=h.now, stream=stream, reason=refused))
        h.take()
        h.fire_due()
    assert waiter not in h.replies  # a server may still be starting
    h.advance(10 - h.now)
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and err.attempts == 2
    assert isinstance(err.cause, core.ServerUnreachable)
    assert isinstance(err.cause, ConnectionError)
    assert str(err) == (
        "could not connect (2 attempts in 10.0 s): nothing answered at "
        "http://127.0.0.1:1/mcp?[redacted] (ConnectError: [Errno 111] Connection refused): "
        "is the server running, and is the address right?"
    )


def test_an_sse_get_that_gets_no_status_is_unreachable() -> None:
    h = _sse_known()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.feed(core.HttpFailed(now=h.now, stream=h.request(http="GET").stream, reason="TLS error"))
    err = h.error(waiter)
    assert isinstance(err, core.ConnectFailed) and isinstance(err.cause, core.ServerUnreachable)


def test_a_busy_server_twice_is_not_the_same_failure() -> None:
    h = HttpHarness(era="legacy", reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(timeout=30)
    for _ in range(2):
        h.respond(h.request("initialize"), 503)
        h.take()
        h.fire_due()
    assert waiter not in h.replies
