"""The browser step's one-shot redirect listener and ``open_browser`` (RFC 8252 §7.3), against real
loopback HTTP clients: the request on the callback path with the login's ``state`` ends the
wait and closes the port, one with another ``state`` (or none) gets 400 and the wait goes on,
other paths get 404, nothing the request carried is echoed, and every way out of ``wait``
(answer, timeout, close from another thread, Ctrl-C) leaves the port unbound."""

from __future__ import annotations

import hmac
import signal
import socket
import struct
import threading
import urllib.error
import urllib.request
import webbrowser
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

import _mcp_io.redirect
from _mcp_io.redirect import (
    RedirectError,
    RedirectListener,
    RedirectTimeout,
    authorization_state,
    open_browser,
)
from mcp_core import McpError

pytestmark = pytest.mark.timeout(30)

CODE = "s3cr3t-code-value"
STATE = "s3cr3t-state-value"
ISS = "https://auth.example.com"


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


def raw(port: int, request: bytes) -> bytes:
    """Send ``request`` as it is and read the answer to the end."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(request)
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def get(port: int, target: str, host: str | None = None) -> bytes:
    host = host or f"127.0.0.1:{port}"
    return raw(port, f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def start(
    pool: ThreadPoolExecutor, listener: RedirectListener, timeout: float = 20
) -> Future[dict[str, str]]:
    """``listener.wait`` in a worker thread, for the login whose state is ``STATE``."""
    return pool.submit(listener.wait, timeout, state=STATE)


def test_it_listens_on_loopback_only_and_names_its_redirect_uri() -> None:
    with RedirectListener() as listener:
        assert listener.port > 0
        assert listener.redirect_uri == f"http://127.0.0.1:{listener.port}/callback"
        assert listener._listener.getsockname() == ("127.0.0.1", listener.port)
        assert repr(listener) == (
            f"RedirectListener(redirect_uri='{listener.redirect_uri}', closed=False)"
        )
    assert listener.closed
    assert refused(listener.port)
    with RedirectListener(path="/oauth/done") as other:
        assert other.redirect_uri == f"http://127.0.0.1:{other.port}/oauth/done"


def test_one_request_returns_its_parameters_echoes_nothing_and_closes_the_port(
    pool: ThreadPoolExecutor,
) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    url = f"{listener.redirect_uri}?code={CODE}&state={STATE}&iss=https%3A%2F%2Fauth.example.com"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = response.read()
        headers = response.headers
        assert response.status == 200
    assert waiting.result(timeout=10) == {"code": CODE, "state": STATE, "iss": ISS}
    assert b"You can close this window" in body
    everything = body + str(headers).encode()
    for value in (CODE, STATE, ISS, "auth.example.com"):
        assert value.encode() not in everything
    assert headers["Cache-Control"] == "no-store"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["Content-Security-Policy"] == "default-src 'none'"
    assert listener.closed
    assert refused(listener.port)  # a second connect is refused


def test_other_paths_get_404_and_the_wait_goes_on(pool: ThreadPoolExecutor) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    answer = get(listener.port, f"/favicon.ico?state={STATE}")
    assert answer.startswith(b"HTTP/1.1 404 ")
    assert STATE.encode() not in answer
    assert get(listener.port, "/callbackx").startswith(b"HTTP/1.1 404 ")
    assert not waiting.done()
    assert get(listener.port, f"/callback?code={CODE}&state={STATE}").startswith(b"HTTP/1.1 200 ")
    assert waiting.result(timeout=10) == {"code": CODE, "state": STATE}
    assert refused(listener.port)


def test_a_wrong_method_host_or_malformed_request_does_not_end_the_wait(
    pool: ThreadPoolExecutor,
) -> None:
    listener = RedirectListener()
    port = listener.port
    waiting = start(pool, listener)
    post = f"POST /callback?code=x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\n\r\n"
    assert raw(port, post.encode()).startswith(b"HTTP/1.1 405 ")
    # A DNS-rebinding page reaches 127.0.0.1 under another name: refused, the wait goes on.
    assert get(port, "/callback?code=x", host=f"evil.example:{port}").startswith(b"HTTP/1.1 400 ")
    assert raw(port, b"GET /callback?code=x HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert raw(port, b"NOT HTTP AT ALL\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert not waiting.done()
    answer = get(port, f"/callback?state={STATE}", host=f"LOCALHOST:{port}")
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert waiting.result(timeout=10) == {"state": STATE}


def test_idle_connections_do_not_hold_up_the_callback(pool: ThreadPoolExecutor) -> None:
    """Browsers open connections they never use; more than the listener keeps, even."""
    listener = RedirectListener()
    waiting = start(pool, listener)
    idle = [socket.create_connection(("127.0.0.1", listener.port)) for _ in range(12)]
    half = socket.create_connection(("127.0.0.1", listener.port))
    half.sendall(b"GET /callback?code=never HTTP/1.1\r\nHo")  # and never the rest
    try:
        answer = get(listener.port, f"/callback?code={CODE}&state={STATE}")
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert waiting.result(timeout=10) == {"code": CODE, "state": STATE}
    finally:
        for connection in [*idle, half]:
            connection.close()
    assert refused(listener.port)


def test_connections_closed_or_reset_without_a_request_do_not_end_the_wait(
    pool: ThreadPoolExecutor,
) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    socket.create_connection(("127.0.0.1", listener.port)).close()
    reset = socket.create_connection(("127.0.0.1", listener.port))
    reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    reset.close()  # an RST, not a FIN
    assert get(listener.port, "/favicon.ico").startswith(b"HTTP/1.1 404 ")
    assert not waiting.done()
    assert get(listener.port, f"/callback?code={CODE}&state={STATE}").startswith(b"HTTP/1.1 200 ")
    assert waiting.result(timeout=10) == {"code": CODE, "state": STATE}


def test_an_error_response_is_returned_with_a_page_that_says_so_without_echo(
    pool: ThreadPoolExecutor,
) -> None:
    """An error response with the login's state ends the wait too: the core reads the error
    (RFC 6749 §4.1.2.1: the error response carries the state unchanged)."""
    listener = RedirectListener()
    waiting = start(pool, listener)
    answer = get(
        listener.port,
        f"/callback?error=access_denied&error_description=nope+{CODE}&state={STATE}",
    )
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"not completed" in answer
    for value in ("access_denied", CODE, STATE):
        assert value.encode() not in answer
    assert waiting.result(timeout=10) == {
        "error": "access_denied",
        "error_description": f"nope {CODE}",
        "state": STATE,
    }


# --- the state: only the login's own response ends the wait -----------------------------------


def test_a_wrong_state_gets_400_echoing_nothing_and_the_right_one_still_ends_the_wait(
    pool: ThreadPoolExecutor,
) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    forged = "f0rged-code-value"
    answer = get(listener.port, f"/callback?code={forged}&state=wrong-{STATE}&iss=x")
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"not the answer to the login in progress" in answer
    for value in (forged, STATE, "wrong"):
        assert value.encode() not in answer
    assert b"no-store" in answer and b"default-src 'none'" in answer
    # The port is still served: the forged request did not end the wait.
    assert get(listener.port, f"/callback?code={CODE}&state={STATE}").startswith(b"HTTP/1.1 200 ")
    assert waiting.result(timeout=10) == {"code": CODE, "state": STATE}
    assert refused(listener.port)


@pytest.mark.parametrize(
    "query",
    [
        f"code={CODE}",  # no state at all
        f"code={CODE}&state=",  # an empty one
        "error=access_denied",  # an error response must carry the state too
        "error=access_denied&state=wrong",
        f"code={CODE}&state={STATE}&state={STATE}",  # twice, even the right one: ambiguous
        f"code={CODE}&state={STATE}&state=other",
        f"code={CODE}&state={STATE[:-1]}",  # a prefix
        f"code={CODE}&state={STATE}x",  # longer
        f"code={CODE}&STATE={STATE}",  # names are case-sensitive
        f"code={CODE}&state=%C3%A9t%C3%A9",  # not ASCII once decoded
        f"code={CODE}&state=%FF%FE",  # not even UTF-8
        "&".join(f"p{n}=v" for n in range(100)),  # too many, and no state: a stray one
    ],
)
def test_a_missing_empty_repeated_or_near_state_is_400_and_the_wait_goes_on(
    pool: ThreadPoolExecutor, query: str
) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    answer = get(listener.port, f"/callback?{query}")
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert CODE.encode() not in answer and STATE.encode() not in answer
    assert get(listener.port, f"/callback?state={STATE}&code={CODE}").startswith(b"HTTP/1.1 200 ")
    assert waiting.result(timeout=10) == {"state": STATE, "code": CODE}


def test_many_wrong_attempts_never_end_the_wait(
    pool: ThreadPoolExecutor,
) -> None:
    """Someone guessing the state (RFC 6749 §10.10) gets 400 each time until the deadline, and
    the user's own redirect still gets through."""
    listener = RedirectListener()
    waiting = start(pool, listener)
    for attempt in range(40):
        answer = get(listener.port, f"/callback?code=c{attempt}&state=guess{attempt}")
        assert answer.startswith(b"HTTP/1.1 400 "), attempt
    assert get(listener.port, f"/callback?code={CODE}&state={STATE}").startswith(b"HTTP/1.1 200 ")
    assert waiting.result(timeout=10) == {"code": CODE, "state": STATE}


def test_only_wrong_states_until_the_deadline_is_a_timeout(pool: ThreadPoolExecutor) -> None:
    listener = RedirectListener()
    waiting = pool.submit(listener.wait, 2.0, state=STATE)
    assert get(listener.port, "/callback?code=x&state=wrong").startswith(b"HTTP/1.1 400 ")
    with pytest.raises(RedirectTimeout):
        waiting.result(timeout=10)
    assert refused(listener.port)


def test_the_state_is_compared_in_constant_time(
    pool: ThreadPoolExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def compare_digest(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    assert _mcp_io.redirect.hmac is hmac  # type: ignore[attr-defined]
    monkeypatch.setattr(hmac, "compare_digest", compare_digest)
    listener = RedirectListener()
    waiting = start(pool, listener)
    assert get(listener.port, "/callback?state=wrong").startswith(b"HTTP/1.1 400 ")
    assert get(listener.port, f"/callback?state={STATE}").startswith(b"HTTP/1.1 200 ")
    assert waiting.result(timeout=10) == {"state": STATE}
    assert compared == [(b"wrong", STATE.encode()), (STATE.encode(), STATE.encode())]


@pytest.mark.parametrize("state", ["", None, b"bytes"])
def test_a_wait_without_a_state_is_refused_and_the_listener_still_usable(state: object) -> None:
    with RedirectListener() as listener:
        with pytest.raises(ValueError, match="state"):
            listener.wait(1, state=state)  # type: ignore[arg-type]
        assert not listener.closed


def test_the_state_of_an_authorization_url() -> None:
    url = f"https://auth.example.com/authorize?response_type=code&state={STATE}&x=1"
    assert authorization_state(url) == STATE
    for bad in (
        "https://auth.example.com/authorize?response_type=code",
        f"https://auth.example.com/authorize?state={STATE}&state={STATE}",
        "https://auth.example.com/authorize?state=",
    ):
        with pytest.raises(RedirectError, match="does not carry one state") as caught:
            authorization_state(bad)
        assert STATE not in str(caught.value) and "auth.example.com" not in str(caught.value)


def test_a_repeated_parameter_is_refused_without_its_value(pool: ThreadPoolExecutor) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    answer = get(listener.port, f"/callback?code={CODE}&state={STATE}&code=other")
    assert answer.startswith(b"HTTP/1.1 200 ") and b"not completed" in answer
    with pytest.raises(RedirectError, match="repeats 'code'") as caught:
        waiting.result(timeout=10)
    assert STATE not in str(caught.value) and CODE not in str(caught.value)
    assert refused(listener.port)


def test_a_repeated_unknown_parameter_is_not_named(pool: ThreadPoolExecutor) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    get(listener.port, f"/callback?state={STATE}&{CODE}&{CODE}")
    with pytest.raises(RedirectError, match="repeats a parameter") as caught:
        waiting.result(timeout=10)
    assert STATE not in str(caught.value) and CODE not in str(caught.value)


def test_too_many_parameters_are_refused(pool: ThreadPoolExecutor) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    query = "&".join(f"p{n}=v" for n in range(100))
    answer = get(listener.port, f"/callback?{query}&state={STATE}")
    assert answer.startswith(b"HTTP/1.1 200 ") and b"not completed" in answer
    with pytest.raises(RedirectError, match="more than 64 parameters"):
        waiting.result(timeout=10)
    assert refused(listener.port)


def test_a_timeout_is_a_typed_error_and_closes_the_port() -> None:
    listener = RedirectListener()
    with pytest.raises(RedirectTimeout) as caught:
        listener.wait(0.2, state=STATE)
    assert isinstance(caught.value, TimeoutError)
    assert isinstance(caught.value, McpError)
    assert "no authorization redirect arrived within 0.2 seconds" in str(caught.value)
    assert listener.closed
    assert refused(listener.port)


def test_close_from_another_thread_ends_the_wait_and_frees_the_port(
    pool: ThreadPoolExecutor,
) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    assert get(listener.port, "/favicon.ico").startswith(b"HTTP/1.1 404 ")  # it is waiting
    listener.close()
    with pytest.raises(RedirectError, match="closed while waiting"):
        waiting.result(timeout=10)
    assert refused(listener.port)


def test_ctrl_c_during_wait_leaves_the_port_unbound(pool: ThreadPoolExecutor) -> None:
    listener = RedirectListener()
    main = threading.get_ident()

    def interrupt() -> None:
        assert get(listener.port, "/favicon.ico").startswith(b"HTTP/1.1 404 ")  # it is waiting
        signal.pthread_kill(main, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        sender = pool.submit(interrupt)
        with pytest.raises(KeyboardInterrupt):
            listener.wait(20, state=STATE)
        sender.result(timeout=10)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert listener.closed
    assert refused(listener.port)


def test_a_listener_serves_one_wait_only() -> None:
    with RedirectListener() as listener:
        pass
    with pytest.raises(RedirectError, match="already used or closed"):
        listener.wait(1, state=STATE)
    listener.close()  # idempotent
    used = RedirectListener()
    with pytest.raises(RedirectTimeout):
        used.wait(0.05, state=STATE)
    with pytest.raises(RedirectError, match="already used or closed"):
        used.wait(1, state=STATE)


def test_a_fixed_port_can_be_bound_again_right_after_a_login(pool: ThreadPoolExecutor) -> None:
    first = RedirectListener()
    port = first.port
    waiting = start(pool, first)
    assert get(port, f"/callback?code=1&state={STATE}").startswith(b"HTTP/1.1 200 ")
    waiting.result(timeout=10)
    with RedirectListener(port=port) as again:  # its closed connections are in TIME_WAIT
        assert again.port == port


def test_a_taken_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RedirectError) as caught:
            RedirectListener(port=port)
    message = str(caught.value)
    assert f"cannot listen on 127.0.0.1:{port}" in message
    assert "[Errno 98] Address already in use" in message
    assert "choose another redirect port" in message


@pytest.mark.parametrize("port", [-1, 65536, True, 1.5])
def test_a_bad_port_is_refused(port: object) -> None:
    with pytest.raises(ValueError, match="redirect port"):
        RedirectListener(port=port)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["callback", "/cb?x=1", "/cb#f", "/a b", "/%41", "/\n"])
def test_a_bad_path_is_refused(path: str) -> None:
    with pytest.raises(ValueError, match="callback path"):
        RedirectListener(path=path)


@pytest.mark.parametrize("timeout", [0, -1, float("nan")])
def test_a_bad_timeout_is_refused_and_the_listener_still_usable(timeout: float) -> None:
    with RedirectListener() as listener:
        with pytest.raises(ValueError, match="timeout"):
            listener.wait(timeout, state=STATE)
        assert not listener.closed


def test_open_browser_says_whether_a_browser_opened_and_never_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened: list[str] = []

    def works(url: str, new: int = 0) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr(webbrowser, "open", works)
    assert open_browser("https://auth.example.com/authorize?state=x") is True
    assert opened == ["https://auth.example.com/authorize?state=x"]
    monkeypatch.setattr(webbrowser, "open", lambda url, new=0: False)
    assert open_browser("https://auth.example.com/authorize") is False

    def broken(url: str, new: int = 0) -> bool:
        raise webbrowser.Error("could not locate runnable browser")

    monkeypatch.setattr(webbrowser, "open", broken)
    assert open_browser("https://auth.example.com/authorize") is False


def test_urllib_sees_a_404_for_the_favicon(pool: ThreadPoolExecutor) -> None:
    listener = RedirectListener()
    waiting = start(pool, listener)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"http://127.0.0.1:{listener.port}/favicon.ico", timeout=10)
    assert caught.value.code == 404
    caught.value.close()
    listener.close()
    with pytest.raises(RedirectError):
        waiting.result(timeout=10)
