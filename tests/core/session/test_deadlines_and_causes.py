"""Deadlines that progress only ever pushes out, reservations that say they are
settled, and the typed failure inside every ``ConnectFailed``."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_core as core
from mcp_core.driver import reservation_facts
from tests.core.harness import TEXT_RESULT, Harness, HttpHarness

# --- progress pushes a deadline out, never in ---------------------------------------------------


def _progress(h: Harness, token: int, value: float) -> None:
    h.stdout(
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": value},
        }
    )


@pytest.mark.parametrize(
    ("timeout", "progress_at", "deadline"),
    [
        # call_timeout 30, max_call_timeout 300 (the defaults), admitted at 0.
        (600.0, 10.0, 600.0),  # above the cap: honoured, and progress cannot pull it in
        (600.0, 590.0, 600.0),  # nor push it past what the caller asked for
        (300.0, 10.0, 300.0),  # at the cap: the same
        (None, 10.0, 40.0),  # call_timeout: pushed to 10 + 30
        (None, 290.0, 300.0),  # pushed, but never past max_call_timeout
        (100.0, 250.0, 300.0),  # timeout= below the cap: pushed by itself, capped
    ],
)
def test_progress_never_brings_a_deadline_in(
    timeout: float | None, progress_at: float, deadline: float
) -> None:
    h = Harness()
    h.connect_legacy()
    t = h.call("slow", timeout=timeout, progress=True)
    token = h.last_request("tools/call")["params"]["_meta"]["progressToken"]
    h.now = progress_at
    _progress(h, token, 1)
    assert h.of(core.ProgressUpdate)  # the caller heard it
    assert h.machine.next_deadline() == deadline
    h.advance(deadline - h.now - 0.5)
    assert t not in h.replies
    h.advance(0.5)
    assert isinstance(h.error(t), core.RequestTimeout)


def test_a_timeout_above_the_cap_outlives_a_stream_of_progress() -> None:
    """A regression: ``timeout=600`` with ``max_call_timeout=300`` got ``RequestTimeout``
    at 300 s, the first progress notification having moved the deadline in."""
    h = Harness()
    h.connect_legacy()
    t = h.call("slow", timeout=600.0, progress=True)
    request = h.last_request("tools/call")
    for second in range(1, 600, 50):
        h.now = float(second)
        _progress(h, request["id"], second)
        h.feed(core.TimerFired(now=h.now))
        assert t not in h.replies, second
    h.answer(request["id"], TEXT_RESULT)
    assert h.result(t).text == "hi"


# --- a reservation that says it is settled --------------------------------------------------------


class _Settles:
    """A reservation whose ``settled`` says what the application knows, or raises."""

    server, tool, price = "shop", "buy", 5

    def __init__(self, settled: object) -> None:
        self._settled = settled

    @property
    def settled(self) -> object:
        if isinstance(self._settled, Exception):
            raise self._settled
        return self._settled

    def commit(self) -> None: ...

    def release(self) -> None: ...


class _Silent:
    """A reservation that does not say whether it is settled (the attribute is optional)."""

    server, tool, price = "shop", "buy", 5

    def commit(self) -> None: ...

    def release(self) -> None: ...


def _settled_reservations() -> list[object]:
    gate = core.InMemorySpendGate(budget=20)
    committed, released = gate.reserve("shop", "buy", 5), gate.reserve("shop", "buy", 5)
    committed.commit()
    released.release()
    return [committed, released, _Settles(True), _Settles(RuntimeError("store down"))]


@pytest.mark.parametrize("reservation", _settled_reservations())
def test_a_reservation_that_says_it_is_settled_is_refused_before_sending(
    reservation: object,
) -> None:
    """A regression: a reservation committed or released elsewhere (another client, the
    application) was fresh to a client that had not seen it: the paid call went out. A
    ``settled`` that raises counts as settled: money is not spent on a guess."""
    facts = reservation_facts(reservation, fresh=True)
    assert facts["fresh"] is False
    h = Harness(name="shop", prices={"buy": 5})
    h.connect_legacy()
    t = h.call("buy", None, reservation=facts)
    assert isinstance(h.error(t), core.UnmeteredCall) and "already used" in str(h.error(t))
    assert h.messages() == [] and h.of(core.SettleReservation) == []  # not ours to settle


@pytest.mark.parametrize("reservation", [_Settles(False), _Silent()])
def test_an_open_reservation_or_one_that_does_not_say_is_fresh(reservation: object) -> None:
    assert reservation_facts(reservation, fresh=True)["fresh"] is True
    assert reservation_facts(reservation, fresh=False)["fresh"] is False
    open_one = core.InMemorySpendGate(budget=5).reserve("shop", "buy", 5)
    assert open_one.settled is False
    assert reservation_facts(open_one, fresh=True)["fresh"] is True


# --- ConnectFailed.cause: the typed failure behind every failed connect ------------------------


def _initialize(h: Harness) -> int:
    """Connect (era='legacy': no probe) with a fail-fast waiter; the initialize request id."""
    h.feed(core.Connect(now=h.now))
    h.waiter = h.await_ready(fail_fast=True)  # type: ignore[attr-defined]
    h.spawned()
    return int(h.last_request("initialize")["id"])


def _refused(h: Harness) -> None:
    h.answer_error(_initialize(h), -32603, "the database is down")


def _old_version(h: Harness) -> None:
    h.answer(_initialize(h), {"protocolVersion": "1999-01-01", "capabilities": {}})


def _no_version(h: Harness) -> None:
    h.answer(_initialize(h), {"capabilities": {}})


def _died(h: Harness) -> None:
    _initialize(h)
    h.feed(core.StderrReceived(now=h.now, slot=0, generation=h.gen(), data=b"no config\n"))
    h.exited(3)


def _silent(h: Harness) -> None:
    _initialize(h)
    h.advance(h.spec.init_timeout)


def _too_long(h: Harness) -> None:
    request_id = _initialize(h)
    h.stdout(b'{"jsonrpc":"2.0","id":%d,"result":{"x":"%s"}}\n' % (request_id, b"a" * 2048))


CAUSES: list[tuple[Any, type[core.McpError], bool, Any]] = [
    (
        _refused,
        core.InitializationFailed,
        False,
        lambda c: isinstance(c.error, core.JsonRpcError)
        and (c.error.code, c.error.message) == (-32603, "the database is down")
        and "the database is down" in c.reason,
    ),
    (_old_version, core.UnsupportedVersion, True, lambda c: c.version == "1999-01-01"),
    (_no_version, core.InvalidResponse, False, lambda c: c.method == "initialize"),
    (_died, core.ServerExited, False, lambda c: (c.code, c.stderr_tail) == (3, "no config")),
    (_silent, core.RequestTimeout, False, lambda c: "init_timeout=5" in str(c)),
    (_too_long, core.MessageTooLarge, False, lambda c: c.limit == 1024),
]


@pytest.mark.parametrize(("drive", "kind", "permanent", "check"), CAUSES)
def test_connect_failed_carries_the_typed_cause(
    drive: Any, kind: type[core.McpError], permanent: bool, check: Any
) -> None:
    h = Harness(era="legacy", init_timeout=5.0, max_message_bytes=1024)
    drive(h)
    failed = h.error(h.waiter)  # type: ignore[attr-defined]
    assert isinstance(failed, core.ConnectFailed) and failed.permanent is permanent
    assert isinstance(failed.cause, kind), failed.cause
    assert check(failed.cause), failed.cause
    assert failed.http_error is None


def test_an_http_connect_failure_carries_its_cause() -> None:
    h = HttpHarness(era="legacy", fail_fast=True)
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready(fail_fast=True)
    init = h.request("initialize")
    h.feed(core.HttpFailed(now=h.now, stream=init.stream, reason="ConnectError: refused"))
    failed = h.error(waiter)
    assert isinstance(failed, core.ConnectFailed)
    assert isinstance(failed.cause, core.ServerUnreachable) and failed.cause.reason == (
        "ConnectError: refused"
    )
    assert failed.cause.url == "https://mcp.example.com/mcp"


@pytest.mark.parametrize("status", [429, 503])
def test_a_busy_server_at_the_handshake_is_the_cause(status: int) -> None:
    h = HttpHarness(era="legacy", fail_fast=True)
    h.feed(core.Connect(now=h.now))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), status, headers=(("Retry-After", "7"),))
    failed = h.error(waiter)
    assert isinstance(failed, core.ConnectFailed) and not failed.permanent
    assert isinstance(failed.cause, core.HttpError) and failed.cause.status == status
    assert failed.http_error is failed.cause


def test_an_http_error_cause_is_also_the_http_error() -> None:
    error = core.HttpError(503)
    assert core.ConnectFailed("x", cause=error).http_error is error
    assert core.ConnectFailed("x", http_error=error).cause is error
    assert core.ConnectFailed("x", cause=core.Busy("b")).http_error is None


# --- JsonRpcError.message is the server's message ------------------------------------------------


def test_a_json_rpc_error_keeps_the_servers_message() -> None:
    h = Harness()
    h.connect_legacy()
    t = h.call("b")
    h.answer_error(h.last_request("tools/call")["id"], -32602, "Unknown tool: b")
    error = h.error(t)
    assert isinstance(error, core.JsonRpcError)
    assert (error.code, error.message) == (-32602, "Unknown tool: b")
    assert str(error) == "the server answered with JSON-RPC error -32602: Unknown tool: b"
    assert repr(error) == "JsonRpcError(-32602, 'Unknown tool: b')"
    assert error == core.JsonRpcError(-32602, "Unknown tool: b")
    url = core.UrlElicitationRequired("sign in first", ({"elicitationId": "e", "url": "u"},))
    assert (url.code, url.message) == (-32042, "sign in first")
    assert "1 URL elicitation" in str(url) and "sign in first" not in str(url)
