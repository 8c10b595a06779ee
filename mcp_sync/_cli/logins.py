"""``login`` and ``logout``: the OAuth flow for one HTTP server, its tokens kept in the token
file (``_LoginStore``), and its browser step (``_LoginStep``: the authorization URL on
stderr, the browser, a one-shot listener on 127.0.0.1 for the redirect), or with ``--device``
(or a server whose oauth grant is ``device_code``) the device login (``_DeviceStep``: the
verification URI and the user code on stderr, with a QR code on a terminal; RFC 8628).

Test hook (not for users): ``MCP_CLIENT_TEST_AUTHORIZE=follow`` makes ``login`` do the browser
step headlessly (``_FollowStep``): instead of a browser and a listener, it GETs the
authorization URL without following redirects and takes the 302's ``Location`` as the
redirect. No other command reads it; any other value is refused (exit 2).
"""

from __future__ import annotations

import http.client
import os
import sys
import threading
from urllib.parse import urlsplit

import click

from _mcp_io.device import instructions
from _mcp_io.oauth import BROWSER_TIMEOUT, CALLBACK_PATH
from _mcp_io.redirect import RedirectError, RedirectListener, authorization_state, open_browser
from _mcp_io.tokens import FileTokenStore, TokenStoreError
from mcp_core import (
    AuthorizationFailed,
    ConnectFailed,
    InvalidSpec,
    McpError,
    NotReady,
    Spec,
    StoredAuthorization,
)
from mcp_core.driver import token_store_key

from .. import DeviceCode
from .._client import Client
from .errors import EXIT_BAD_INPUT, EXIT_CALL_FAILED, EXIT_OK, EXIT_UNAVAILABLE, CliError
from .sources import (
    Source,
    current_source,
    explained,
    load_source,
    named_server,
    needs_login,
    server_options,
    stored_authorization,
    token_store,
)

__all__ = ["TEST_AUTHORIZE", "login", "logout"]

TEST_AUTHORIZE = "MCP_CLIENT_TEST_AUTHORIZE"  # the test hook of `login` (this module's docstring)
# How long `login --device` waits for the user at most: the device code's own expires_in
# (RFC 8628 §3.2; often 10 or 15 minutes) ends the login sooner.
DEVICE_TIMEOUT = 1800.0
_FOLLOW_TIMEOUT = 30.0  # the test hook's GET


@click.command()
@click.argument("server")
@server_options(
    click.option(
        "--start-timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="How long to wait for the server and your login (default: its init_timeout "
        f"plus {BROWSER_TIMEOUT:g} s for the browser, or {DEVICE_TIMEOUT:g} s with --device).",
    ),
    click.option(
        "--device",
        is_flag=True,
        help="Log in on another device (RFC 8628 device authorization grant): visit the URI "
        "shown and enter the code, or scan the QR code. Needs the server's oauth client_id.",
    ),
)
def login(
    server: str,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
    start_timeout: float | None,
    device: bool,
) -> int:
    """Log in to SERVER with OAuth and keep its tokens in the token file.

    Your browser opens at the authorization server (the URL is printed on stderr too) and the
    redirect comes back to a one-shot listener on 127.0.0.1. With --device (or a server whose
    oauth grant is device_code) no browser opens here: visit the URI printed on stderr on any
    device and enter the code (a terminal shows a QR code of it too). A login replaces the
    server's stored one only once it succeeds. Exit code 3 when the server cannot be reached,
    4 when the login fails.
    """
    source = current_source(config_path, url, headers, expand_env)
    spec = named_server(load_source(source), server, source)
    if not spec.oauth_enabled:
        click.echo(f"server {server!r} needs no login: {_why_no_oauth(spec)}")
        return EXIT_OK
    if device:
        spec = _device_spec(spec)
    store = token_store(source)
    # A token file that cannot be used: said before anyone is asked.
    stored_authorization(store, spec)
    keeper = _LoginStore(store)
    step: _LoginStep | _FollowStep | _DeviceStep
    if spec.oauth.get("grant") == "device_code":
        step = _DeviceStep()
        client = Client(spec, wait=False, token_store=keeper, on_device_code=step, interactive=True)
        extra = DEVICE_TIMEOUT
    else:
        step = _login_step(spec)
        client = Client(spec, wait=False, token_store=keeper, authorize=step, interactive=True)
        extra = BROWSER_TIMEOUT
    timeout = start_timeout if start_timeout is not None else spec.init_timeout + extra
    failure: McpError | None = None
    try:
        client.start()
        client.await_ready(timeout, fail_fast=True)
    except (ConnectFailed, NotReady) as exc:
        failure = exc
    finally:
        client.stop()  # joins the driver's threads: the tokens are saved by then
        step.close()
    if keeper.error is not None:  # the tokens were got but could not be kept
        raise CliError(keeper.error.message, EXIT_BAD_INPUT)
    if failure is not None:
        raise _login_failure(server, source, failure, step)
    if keeper.saved is None:
        click.echo(f"server {server!r} needs no login: it answered without one")
        return EXIT_OK
    click.echo(f"logged in to {server!r} (issuer {keeper.saved.issuer}); tokens in {store.path}")
    return EXIT_OK


@click.command()
@click.argument("server")
@server_options()
def logout(
    server: str,
    config_path: str | None,
    url: str | None,
    headers: tuple[str, ...],
    expand_env: bool,
) -> int:
    """Forget SERVER's stored login (its tokens in the token file). Nothing stored is not an
    error. The authorization server is not told: its tokens expire on their own."""
    source = current_source(config_path, url, headers, expand_env)
    spec = named_server(load_source(source), server, source)
    if spec.url is None:
        click.echo(f"server {server!r} needs no login: {_why_no_oauth(spec)}; nothing to forget")
        return EXIT_OK
    store = token_store(source)
    key = token_store_key(spec.url)
    try:
        stored = store.load(key)
    except TokenStoreError:  # a bad record, which forget() clears, or a bad file: it says so
        stored = None
        found = True
    else:
        found = stored is not None
    if not found:
        click.echo(f"no login is stored for server {server!r}; nothing to forget")
        return EXIT_OK
    try:
        store.forget(key)
    except TokenStoreError as exc:
        raise CliError(exc.message, EXIT_BAD_INPUT) from None
    issuer = f" (issuer {stored.issuer})" if stored is not None else ""
    click.echo(f"logged out of {server!r}{issuer}: its stored tokens are forgotten")
    return EXIT_OK


def _why_no_oauth(spec: Spec) -> str:
    if spec.url is None:
        return "it runs as a local command (stdio)"
    if spec.oauth.get("enabled", True) is not True:
        return "OAuth is disabled for it (oauth: {enabled: false})"
    return "its config sends an Authorization header of its own"


class _LoginStore:
    """The token store of ``login``'s client: it loads nothing, so the login is a new one even
    over a stored login that still works (and that one is kept until the new one is saved);
    it saves to the token file and remembers the last record saved, or the store's error
    (which the driver only logs). Saves come from driver threads."""

    def __init__(self, store: FileTokenStore) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._saved: StoredAuthorization | None = None
        self._error: TokenStoreError | None = None

    @property
    def saved(self) -> StoredAuthorization | None:
        with self._lock:
            return self._saved

    @property
    def error(self) -> TokenStoreError | None:
        with self._lock:
            return self._error

    def load(self, server: str) -> StoredAuthorization | None:
        return None

    def save(self, server: str, authorization: StoredAuthorization) -> None:
        try:
            self._store.save(server, authorization)
        except TokenStoreError as exc:
            with self._lock:
                self._error = exc
            raise
        if authorization.access_token is not None:
            with self._lock:
                self._saved = authorization

    def forget(self, server: str) -> None:
        self._store.forget(server)


class _LoginStep:
    """``login``'s browser step, an ``authorize=`` callback with a listener of its own: it
    prints the authorization URL on stderr (never to a log), opens the browser and waits on
    a one-shot listener on 127.0.0.1 (the spec's ``oauth.redirect_port``, else any port) for
    the redirect that carries the URL's ``state``: any other request there is answered 400
    and the wait goes on, so a stray one cannot end the login.
    ``error`` keeps why a step failed, for the one line ``login`` prints; ``asked`` whether a
    step began."""

    def __init__(self, port: int) -> None:
        self._lock = threading.Lock()
        try:
            self._listener = RedirectListener(port, CALLBACK_PATH)
        except RedirectError as exc:  # the port is taken: its message says what to do
            raise CliError(f"cannot log in: {exc.message}", EXIT_BAD_INPUT) from None
        self._port = self._listener.port  # a second step listens on the same port
        self.redirect_uri = self._listener.redirect_uri
        self.asked = False
        self.error: McpError | None = None

    def __call__(self, url: str) -> dict[str, str]:
        with self._lock:
            self.asked = True
            listener = self._listener
        try:
            state = authorization_state(url)
            if listener.closed:
                listener = RedirectListener(self._port, CALLBACK_PATH)
                with self._lock:
                    self._listener = listener
            click.echo(
                "mcp-client: log in in the browser window that opens; if none does, open this "
                f"URL on this machine:\n{url}",
                err=True,
            )
            if not open_browser(url):
                click.echo("mcp-client: no browser could be opened: open the URL above", err=True)
            return listener.wait(BROWSER_TIMEOUT, state=state)
        except RedirectError as exc:  # never quotes a parameter
            with self._lock:
                self.error = exc
            raise

    def close(self) -> None:
        with self._lock:
            listener = self._listener
        listener.close()


class _FollowStep:
    """The test hook's browser step (``MCP_CLIENT_TEST_AUTHORIZE=follow``): GET the
    authorization URL without following redirects; the 302's ``Location`` is the redirect.
    Prints nothing."""

    def __init__(self) -> None:
        self.asked = False
        self.error: McpError | None = None

    def __call__(self, url: str) -> str:
        self.asked = True
        parts = urlsplit(url)
        connection_type = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_type(parts.hostname or "", parts.port, timeout=_FOLLOW_TIMEOUT)
        try:
            connection.request("GET", f"{parts.path}?{parts.query}")
            response = connection.getresponse()
            response.read()
            status, location = response.status, response.getheader("location")
        except (OSError, http.client.HTTPException) as exc:  # named by class: never the URL
            self.error = McpError(f"the test hook's GET failed ({type(exc).__name__})")
            raise self.error from None
        finally:
            connection.close()
        if status not in (301, 302, 303, 307, 308) or location is None:
            self.error = McpError(f"the test hook's GET got HTTP {status}, not a redirect")
            raise self.error
        return location

    def close(self) -> None:
        pass


def _login_step(spec: Spec) -> _LoginStep | _FollowStep:
    hook = os.environ.get(TEST_AUTHORIZE)
    if hook is None:
        return _LoginStep(spec.oauth.get("redirect_port", 0))
    if hook != "follow":
        raise CliError(f"{TEST_AUTHORIZE} (a test hook) must be 'follow' or unset", EXIT_BAD_INPUT)
    return _FollowStep()


def _device_spec(spec: Spec) -> Spec:
    """``spec`` with the device authorization grant: the user approves on another device."""
    oauth = dict(spec.oauth)
    oauth["grant"] = "device_code"
    try:
        return Spec.build(spec, oauth=oauth)
    except InvalidSpec as exc:  # a key_file, an assertion_file: another grant's
        raise CliError(f"cannot log in with --device: {exc.message}", EXIT_BAD_INPUT) from None


class _DeviceStep:
    """``login``'s device login, an ``on_device_code=`` callback: the verification URI and
    the user code on stderr (never to a log), and on a terminal a QR code (``segno``, the cli
    extra) of the URI with the code in it, to scan with a phone."""

    def __init__(self) -> None:
        self.asked = False
        self.error: McpError | None = None

    def __call__(self, code: DeviceCode) -> None:
        self.asked = True
        click.echo(f"mcp-client: {instructions(code)}", err=True)
        if sys.stderr.isatty():
            target = code.verification_uri_complete or code.verification_uri
            click.echo(_qr(target), err=True, nl=False)
        click.echo("mcp-client: waiting for the login to be approved...", err=True)

    def close(self) -> None:
        pass


def _qr(text: str) -> str:
    """``text`` as a QR code drawn in Unicode half blocks, as a terminal shows it."""
    import io

    import segno

    drawn = io.StringIO()
    segno.make(text, error="l", micro=False).terminal(out=drawn, compact=True)
    return drawn.getvalue()


def _login_failure(
    server: str, source: Source, failure: McpError, step: _LoginStep | _FollowStep | _DeviceStep
) -> CliError:
    """The one line for a login that did not end with tokens: exit 4 when the flow began and
    failed (refused, or the browser step did not finish), 3 when the server was not reached."""
    reason = failure.reason if isinstance(failure, ConnectFailed) else failure.message
    if step.error is not None:
        return CliError(f"could not log in to {server!r}: {step.error.message}", EXIT_CALL_FAILED)
    if isinstance(failure, NotReady) and step.asked:
        return CliError(
            f"could not log in to {server!r}: the login did not finish in time (--start-timeout)",
            EXIT_CALL_FAILED,
        )
    refused = AuthorizationFailed(None, "").message.rstrip(": ")  # "authorization failed"
    if refused in reason or needs_login(server, reason):
        why = explained(reason, source)
        return CliError(f"could not log in to {server!r}: {why}", EXIT_CALL_FAILED)
    why = explained(str(failure), source)
    return CliError(f"server {server!r} is not available: {why}", EXIT_UNAVAILABLE)
