"""HTTP/1.1 on h11 without I/O (``_mcp_io.h11wire``), shared by both drivers' executors:
request heads exactly as the machine gave them, one read turned into a head, body bytes and
an end, which connection may be reused, the pool's count and cap, and the start order every
executor writes requests in (the ``StartHttp`` contract). Bytes in, bytes and values out."""

from __future__ import annotations

import h11
import pytest

from _mcp_io.h11wire import (
    MAX_CONNECTIONS,
    Pool,
    RemoteProtocolError,
    RequestBuilder,
    StartOrder,
    UnsupportedProtocol,
    connection_cap,
    decode_headers,
    finish,
    receive,
    request_bytes,
)
from mcp_core import StartHttp

HEADERS = (
    ("Accept", "application/json, text/event-stream"),
    ("Authorization", "Bearer s3cret"),
)


def _action(
    stream: int,
    url: str,
    *,
    method: str = "GET",
    headers: tuple[tuple[str, str], ...] = (),
    body: bytes | None = None,
) -> StartHttp:
    return StartHttp(stream=stream, method=method, url=url, headers=headers, body=body)


def _sent(action: StartHttp, builder: RequestBuilder | None = None) -> bytes:
    _target, head = (builder or RequestBuilder()).build(action)
    return request_bytes(h11.Connection(h11.CLIENT), head, action.body)


# --- request heads ---------------------------------------------------------------------------


def test_request_heads_carry_exactly_the_given_headers() -> None:
    url = "https://example.com/mcp?x=1#f"
    post = _action(1, url, method="POST", headers=HEADERS, body=b"{}")
    assert _sent(post) == (
        b"POST /mcp?x=1 HTTP/1.1\r\nHost: example.com\r\n"
        b"Accept: application/json, text/event-stream\r\nAuthorization: Bearer s3cret\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    get = _action(2, "http://user:pw@[::1]:8080", headers=(("host", "given"),))
    assert _sent(get) == b"GET / HTTP/1.1\r\nhost: given\r\n\r\n"
    assert _sent(_action(3, "http://[::1]:8080/")).startswith(
        b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n"
    )
    # The scheme's default port is not named; the framing header given is not doubled.
    given = _action(4, "HTTP://h:80/p", method="DELETE", headers=(("Content-Length", "0"),))
    assert _sent(given) == b"DELETE /p HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
    empty = _action(5, "https://h:8443", method="POST", body=b"")
    assert _sent(empty) == b"POST / HTTP/1.1\r\nHost: h:8443\r\nContent-Length: 0\r\n\r\n"


def test_the_target_is_the_pool_key() -> None:
    target, _head = RequestBuilder().build(_action(1, "https://Example.com/a"))
    assert target.origin == ("https", "example.com", 443)
    assert (target.host, target.path) == (b"example.com", b"/a")


def test_a_request_head_is_validated_every_time() -> None:
    # The builder reuses what it validated; a bad header is refused on every request.
    builder = RequestBuilder()
    bad = _action(1, "http://h/", headers=(("X-Key", "a\r\nX: y"),))
    for _ in range(2):
        with pytest.raises(h11.LocalProtocolError):
            builder.build(bad)
    with pytest.raises(UnsupportedProtocol, match="scheme"):
        builder.build(_action(2, "ftp://h/"))
    with pytest.raises(UnsupportedProtocol, match="no host"):
        builder.build(_action(3, "http:///no-host"))
    with pytest.raises(ValueError):
        builder.build(_action(4, "http://h:99999/"))
    with pytest.raises(UnicodeEncodeError):
        builder.build(_action(5, "http://h/", headers=(("X-Key", "\u20ac"),)))


def test_the_builder_keeps_a_bounded_number_of_heads() -> None:
    # Each distinct URL is prepared once; past the bound the cache starts over, and every
    # head it builds is still exactly right.
    builder = RequestBuilder()
    again = _action(1, "http://h/x", headers=HEADERS)
    assert _sent(again, builder) == _sent(again, builder)  # the second from the cache
    for round_ in range(2):
        for n in range(70):
            sent = _sent(_action(n, f"http://h/{n}", method="POST", body=b"x"), builder)
            assert sent == (
                f"POST /{n} HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx".encode()
            ), round_


# --- responses -------------------------------------------------------------------------------


def _client_sent_request() -> h11.Connection:
    connection = h11.Connection(h11.CLIENT)
    _target, head = RequestBuilder().build(_action(1, "http://h/"))
    request_bytes(connection, head, None)
    return connection


def test_one_read_is_one_body_event() -> None:
    connection = _client_sent_request()
    chunked = (
        b"HTTP/1.1 100 Continue\r\n\r\n"  # skipped
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Trace: a\r\n\r\n"
        b"4\r\none \r\n4\r\ntwo \r\n5\r\nthree\r\n"
    )
    head, body, ended = receive(connection, chunked)
    assert head is not None and head.status_code == 200
    assert decode_headers(head) == (("Transfer-Encoding", "chunked"), ("X-Trace", "a"))
    assert (body, ended) == (b"one two three", False)
    assert receive(connection, b"0\r\n\r\n") == (None, b"", True)
    assert finish(connection)  # ready for the next request
    assert connection.our_state is h11.IDLE


def test_header_values_decode_whatever_the_server_sends() -> None:
    connection = _client_sent_request()
    head, _body, _ended = receive(connection, b"HTTP/1.1 204 No\r\nX-Name: caf\xe9\r\n\r\n")
    assert head is not None and decode_headers(head) == (("X-Name", "caf\u00e9"),)


def test_a_connection_with_bytes_after_the_response_is_not_reused() -> None:
    connection = _client_sent_request()
    _head, body, ended = receive(
        connection, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n"
    )
    assert (body, ended) == (b"ok", True)
    assert not finish(connection)


def test_a_connection_the_server_closes_is_not_reused() -> None:
    connection = _client_sent_request()
    closing = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
    assert receive(connection, closing)[1:] == (b"ok", True)
    assert not finish(connection)
    # Anything after such an answer is the connection closing, never another response.
    with pytest.raises(RemoteProtocolError, match="closed or switched"):
        receive(connection, b"")


def test_bytes_after_an_ended_response_are_refused_not_looped_on() -> None:
    connection = _client_sent_request()
    assert receive(connection, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")[2]
    with pytest.raises(RemoteProtocolError, match="closed or switched"):
        receive(connection, b"HTTP/1.1 200 OK\r\n")  # h11 pauses: nobody asked


def test_eof_before_the_answer_and_mid_body() -> None:
    with pytest.raises(RemoteProtocolError, match="before answering"):
        receive(_client_sent_request(), b"")
    connection = _client_sent_request()
    receive(connection, b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc")
    with pytest.raises(h11.RemoteProtocolError, match="peer closed connection"):
        receive(connection, b"")


# --- the pool --------------------------------------------------------------------------------


def test_the_pool_keeps_its_count_and_its_cap() -> None:
    pool: Pool[str] = Pool(2)
    a, b = ("http", "a", 80), ("http", "b", 80)
    assert pool.take(a) is None
    assert pool.reserve() is None  # opening one: 1 open
    pool.put(a, "a1")
    assert pool.reserve() is None  # 2 open
    pool.put(b, "b1")
    assert pool.reserve() == "a1"  # a third would go over the cap: an idle one is handed over
    assert pool.open == 2
    pool.put(b, "b2")
    assert pool.take(b) == "b2"  # the most recently used first
    pool.put(b, "b2")
    assert pool.reserve() == "b1"  # the oldest of the origin pooled first; b2 stays
    assert pool.take(b) == "b2"
    pool.put(b, "b2")
    pool.put(b, "b3")
    assert pool.drain() == ["b2", "b3"]
    assert pool.open == 0
    assert pool.reserve() is None
    pool.discard()  # it failed to open
    assert pool.open == 0
    with pytest.raises(ValueError):
        Pool(0)


def test_over_the_cap_with_nothing_idle_the_count_goes_over() -> None:
    # The executor admits at most the cap, so this only happens while one is being closed.
    pool: Pool[str] = Pool(1)
    assert pool.reserve() is None
    assert pool.reserve() is None
    assert pool.open == 2


def test_the_connection_cap() -> None:
    assert connection_cap() == MAX_CONNECTIONS == 32
    assert connection_cap(pool_size=8) == 32
    assert connection_cap(pool_size=256) == 514  # every call, a GET stream per session, 2
    assert connection_cap(pool_size=256, max_connections=1) == 1


# --- the start order ---------------------------------------------------------------------------


def test_requests_are_written_in_start_order() -> None:
    order: StartOrder[str] = StartOrder()
    assert order.head() is None
    for request in ("initialized", "call-1", "call-2", "call-3"):
        order.started(request)
    # call-2 got a connection first: not its turn; ending it unwritten moves nobody.
    assert order.head() == "initialized"
    assert order.written("call-2") is None
    assert order.written("call-2") is None  # idempotent
    # The head written: the next one waiting is named, to be woken.
    assert order.written("initialized") == "call-1"
    assert order.written("call-1") == "call-3"  # call-2 ended meanwhile: skipped
    assert order.written("call-3") is None  # nobody left
    assert order.head() is None
    order.started("late")
    order.clear()
    assert order.head() is None
    assert order.written("late") is None
