"""A stray request to the loopback redirect listener cannot end a login (RFC 6749
§10.12): on mcp_asyncio (asyncio and trio), on mcp_sync, and in ``mcp-client login``'s own
browser step, requests to the callback path with a wrong or missing ``state`` reach the
listener before the real redirect; each is answered 400, the wait goes on, and the login
completes with the real redirect. The authorization server is tests/servers/http_oauth_server.py
on 127.0.0.1; the browser is headless (tests/drivers/test_oauth_drivers.py's ``follow``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

import _mcp_io.redirect
import mcp_core as core
import mcp_sync._cli.logins
from tests.drivers.facade import Facade
from tests.drivers.test_oauth_drivers import follow, get
from tests.servers.http_oauth_server import OAuthServer

pytestmark = pytest.mark.timeout(60)

FORGED_CODE = "f0rged-code-value"


@pytest.fixture
def server() -> Iterator[OAuthServer]:
    started = OAuthServer()
    with started:
        yield started


def strays(redirect_uri: str) -> list[str]:
    """What a local process or a web page that found the port might send first: a forged code
    with a wrong state, an error with a wrong state, and a forged code with no state."""
    return [
        f"{redirect_uri}?{urlencode(query)}"
        for query in (
            {"code": FORGED_CODE, "state": "wrong"},
            {"error": "access_denied", "state": "wrong"},
            {"code": FORGED_CODE},
        )
    ]


class StrayThenBrowser:
    """``open_browser``, headless: from a thread of its own (as a browser would), the strays
    hit the listener named by the URL's ``redirect_uri`` first, then the real redirect goes
    there (the authorization server's 302, or ``real``). ``statuses`` is what the listener
    answered, strays first; ``done`` is set once the last answer came, or a request failed
    (``failure``: a listener that ended its wait on a stray refuses the next connection)."""

    def __init__(self, real: str | None = None) -> None:
        self.real = real
        self.opened: list[str] = []
        self.statuses: list[int] = []
        self.failure: BaseException | None = None
        self.done = threading.Event()

    def __call__(self, url: str) -> bool:
        self.opened.append(url)
        threading.Thread(target=self._visit, args=(url,), daemon=True).start()
        return True

    def _visit(self, url: str) -> None:
        try:
            redirect_uri = dict(parse_qsl(urlsplit(url).query))["redirect_uri"]
            for stray in strays(redirect_uri):
                self.statuses.append(get(stray)[0])
            self.statuses.append(get(self.real or follow(url))[0])
        except BaseException as exc:
            self.failure = exc
        finally:
            self.done.set()


@pytest.mark.anyio
async def test_a_stray_redirect_before_the_real_one_does_not_end_the_login(
    driver: str, server: OAuthServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = StrayThenBrowser()
    monkeypatch.setattr(_mcp_io.redirect, "open_browser", browser)
    store = core.InMemoryTokenStore()
    async with Facade(driver, url=server.url, token_store=store) as c:
        assert (await c.call_tool("echo", {"text": "still mine"})).text == "still mine"
    assert browser.done.wait(10)
    assert browser.failure is None
    assert browser.statuses == [400, 400, 400, 200]
    assert len(browser.opened) == 1  # one login, not a second attempt after a refusal
    flows = [e for e in server.oauth_log if e not in ("metadata", "challenge")]
    assert flows == ["register", "authorize", "token:authorization_code"]
    assert FORGED_CODE not in server.secrets  # the forged code never reached the server


def test_the_login_command_s_listener_waits_past_a_stray_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``mcp-client login`` runs its own listener (an ``authorize=`` callback, which gets the
    URL only): it waits for the state that URL sends."""
    step = mcp_sync._cli.logins._LoginStep(0)
    state = "the-state-of-this-login"
    url = f"https://auth.example.com/authorize?{urlencode({'state': state, 'x': '1'})}"
    browser = StrayThenBrowser(real=f"{step.redirect_uri}?code=real&state={state}")
    monkeypatch.setattr(mcp_sync._cli.logins, "open_browser", browser)
    try:
        params = step(f"{url}&{urlencode({'redirect_uri': step.redirect_uri})}")
    finally:
        step.close()
    assert params == {"code": "real", "state": state}
    assert browser.done.wait(10)
    assert browser.failure is None
    assert browser.statuses == [400, 400, 400, 200]
    assert step.error is None
