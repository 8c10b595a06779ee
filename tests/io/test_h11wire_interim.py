"""Interim (1xx) answers in ``_mcp_io.h11wire.receive``: a client "MUST be able to parse one
or more 1xx responses" (RFC 9110 §15.2), and h11 bounds the size of each, not how many come.
On the executors' ``ClientConnection`` a response takes at most ``MAX_INTERIM`` of them, so a
peer sending ``100 Continue`` forever cannot keep a client reading (on the listening GET no
deadline would end it). Bytes in, values out; tests/drivers/test_http_abort_stages.py runs the
same against a real peer."""

from __future__ import annotations

import h11
import pytest

from _mcp_io.h11wire import (
    MAX_INTERIM,
    ClientConnection,
    RemoteProtocolError,
    RequestBuilder,
    finish,
    receive,
    request_bytes,
)
from mcp_core import StartHttp

INTERIM = b"HTTP/1.1 100 Continue\r\n\r\n"
EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def _sent(connection: h11.Connection) -> None:
    _target, head = RequestBuilder().build(
        StartHttp(stream=1, method="GET", url="http://h/", headers=())
    )
    request_bytes(connection, head, None)


def test_up_to_the_limit_of_interim_answers_then_the_response() -> None:
    connection = ClientConnection()
    _sent(connection)
    # Split anywhere: the count is the connection's, across reads.
    stream = INTERIM * (MAX_INTERIM - 1) + EARLY_HINTS + OK
    results = [receive(connection, stream[i : i + 7]) for i in range(0, len(stream), 7)]
    heads = [head for head, _body, _ended in results if head is not None]
    assert [head.status_code for head in heads] == [200]
    assert b"".join(body for _head, body, _ended in results) == b"ok"
    assert results[-1][2] is True
    # The next request on the connection may take as many again.
    assert finish(connection)
    assert connection.interim == 0
    _sent(connection)
    assert receive(connection, INTERIM * MAX_INTERIM + OK)[2] is True


def test_one_interim_answer_too_many_fails_the_response() -> None:
    connection = ClientConnection()
    _sent(connection)
    assert receive(connection, INTERIM * MAX_INTERIM) == (None, b"", False)
    with pytest.raises(RemoteProtocolError, match=f"more than {MAX_INTERIM} interim"):
        receive(connection, INTERIM)


def test_a_plain_h11_connection_is_not_counted() -> None:
    # Only the executors' ClientConnection counts: h11 itself takes any number.
    connection = h11.Connection(h11.CLIENT)
    _sent(connection)
    assert receive(connection, INTERIM * (MAX_INTERIM + 1) + OK)[2] is True
