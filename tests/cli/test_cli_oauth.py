"""`mcp-client login`/`logout` and the stored logins of `tools`/`call`/`status`, run
as a user runs them: the command as a subprocess, against tests/servers/http_oauth_server.py
(in this process, on 127.0.0.1) and a token file in tmp_path.

The browser step is done headlessly in two ways: the command's test hook
(`MCP_CLIENT_TEST_AUTHORIZE=follow`: it GETs the authorization URL and takes the 302's
Location), and, for the real browser step, a `BROWSER` program that does what a user's browser
does (follows the redirect to the command's loopback listener, or brings back a refusal).
"""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from mcp_core.driver import token_store_key
from tests.cli.test_cli import run
from tests.conftest import py_server_argv
from tests.drivers import test_oauth_drivers
from tests.servers.fake_browser import browser
from tests.servers.http_fault_server import HttpFaultServer
from tests.servers.http_oauth_server import OAuthServer

pytestmark = pytest.mark.timeout(90)

server = test_oauth_drivers.server  # the fixture: a started OAuthServer
flows = test_oauth_drivers.flows

TEST_AUTHORIZE = "MCP_CLIENT_TEST_AUTHORIZE"


@pytest.fixture(name="token_file")
def _token_file(tmp_path: Path) -> Path:
    return tmp_path / "data" / "tokens.json"  # its directory does not exist yet


class McpClient:
    """`mcp-client --token-file <token_file> ARGS...`; the output of every run is kept in
    `outputs`, for the secret searches."""

    def __init__(self, token_file: Path) -> None:
        self.token_file = token_file
        self.outputs: list[str] = []

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = run("--token-file", str(self.token_file), *args)
        self.outputs += [done.stdout, done.stderr]
        return done


@pytest.fixture(name="mcp_client")
def _mcp_client(token_file: Path, monkeypatch: pytest.MonkeyPatch) -> McpClient:
    monkeypatch.delenv(TEST_AUTHORIZE, raising=False)
    monkeypatch.delenv("BROWSER", raising=False)
    return McpClient(token_file)


def headless(monkeypatch: pytest.MonkeyPatch) -> None:
    """`login` from now on does the browser step with the test hook."""
    monkeypatch.setenv(TEST_AUTHORIZE, "follow")


def record(token_file: Path, server: OAuthServer) -> dict[str, object]:
    servers = json.loads(token_file.read_text())["servers"]
    entry = servers[token_store_key(server.url)]
    assert isinstance(entry, dict)
    return entry


def hint(token_file: Path, server: OAuthServer) -> str:
    return f"run `mcp-client --token-file {token_file} login cli --url {server.url}`"


def one_line(text: str) -> str:
    assert "Traceback" not in text
    lines = text.splitlines()
    assert len(lines) == 1, text
    return lines[0]


# --- login, then the other commands use the stored login ------------------------------------


def test_login_keeps_the_tokens_in_a_private_file_and_call_uses_them(
    server: OAuthServer,
    mcp_client: McpClient,
    token_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headless(monkeypatch)
    done = mcp_client("login", "cli", "--url", server.url)
    assert done.returncode == 0, done.stderr
    assert one_line(done.stdout) == (
        f"logged in to 'cli' (issuer {server.issuer}); tokens in {token_file}"
    )
    assert done.stderr == ""  # the hook prints no URL
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    stored = record(token_file, server)
    assert stored["issuer"] == server.issuer and stored["refresh_token"] in server.secrets
    assert flows(server) == ["register", "authorize", "token:authorization_code"]

    monkeypatch.delenv(TEST_AUTHORIZE)  # no browser step from here on, and none is needed
    done = mcp_client("call", "echo", '{"text": "stored"}', "--url", server.url)
    assert (done.returncode, done.stdout) == (0, "stored\n"), done.stderr
    assert mcp_client("tools", "--url", server.url).stdout.count("mcp__cli__echo") == 1
    assert mcp_client("status", "--url", server.url).returncode == 0
    assert flows(server) == ["register", "authorize", "token:authorization_code"]


def test_call_refreshes_an_expired_token_and_writes_the_new_one_back(
    server: OAuthServer,
    mcp_client: McpClient,
    token_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headless(monkeypatch)
    assert mcp_client("login", "cli", "--url", server.url).returncode == 0
    monkeypatch.delenv(TEST_AUTHORIZE)
    before = record(token_file, server)
    server.expire_access_tokens()
    done = mcp_client("call", "echo", '{"text": "fresh"}', "--url", server.url)
    assert (done.returncode, done.stdout) == (0, "fresh\n"), done.stderr
    after = record(token_file, server)
    assert flows(server)[-1] == "token:refresh_token"
    assert after["access_token"] != before["access_token"]
    assert after["refresh_token"] != before["refresh_token"]  # rotated, and the new one kept
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    # The next run uses the refreshed token as it is.
    server.revoke_refresh_tokens()
    done = mcp_client("call", "echo", '{"text": "again"}', "--url", server.url)
    assert (done.returncode, done.stdout) == (0, "again\n"), done.stderr


def test_logout_forgets_the_login_and_call_then_asks_for_one(
    server: OAuthServer,
    mcp_client: McpClient,
    token_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headless(monkeypatch)
    assert mcp_client("login", "cli", "--url", server.url).returncode == 0
    monkeypatch.delenv(TEST_AUTHORIZE)
    done = mcp_client("logout", "cli", "--url", server.url)
    assert done.returncode == 0, done.stderr
    assert one_line(done.stdout) == (
        f"logged out of 'cli' (issuer {server.issuer}): its stored tokens are forgotten"
    )
    assert json.loads(token_file.read_text())["servers"] == {}

    done = mcp_client("call", "echo", '{"text": "x"}', "--url", server.url)
    assert done.returncode == 3 and done.stdout == ""
    assert (
        one_line(done.stderr)
        == f"mcp-client: server 'cli' needs a login: {hint(token_file, server)}"
    )
    assert "authorize" not in flows(server)[3:]  # nobody was asked

    done = mcp_client("logout", "cli", "--url", server.url)
    assert (done.returncode, done.stdout) == (
        0,
        "no login is stored for server 'cli'; nothing to forget\n",
    )


def test_status_shows_a_server_that_needs_a_login_with_the_command(
    server: OAuthServer,
    mcp_client: McpClient,
    token_file: Path,
) -> None:
    done = mcp_client("status", "--url", server.url)
    assert done.returncode == 3
    row = done.stdout.splitlines()[1]
    assert row.split()[:2] == ["cli", "closed"]  # the state --json says
    assert f"cli: needs a login: {hint(token_file, server)}" in done.stdout

    done = mcp_client("status", "--json", "--url", server.url)
    assert done.returncode == 3
    status = json.loads(done.stdout)["cli"]
    assert status["login_required"] is True and status["ready"] is False
    assert status["login_command"] == hint(token_file, server)[len("run `") : -1]
    assert not token_file.exists()  # reading an absent file creates nothing

    done = mcp_client("tools", "--url", server.url)
    assert done.returncode == 3
    assert f"server 'cli' needs a login: {hint(token_file, server)}" in done.stderr


def test_the_login_hint_names_the_config_it_came_from(
    server: OAuthServer,
    mcp_client: McpClient,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"notes": {"url": server.url}}}))
    done = mcp_client("call", "mcp__notes__echo", "{}", "--config", str(config))
    assert done.returncode == 3
    assert f"login notes --config {config}`" in done.stderr
    headless(monkeypatch)
    done = mcp_client("login", "notes", "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("logged in to 'notes'")
    done = mcp_client("status", "--json", "--config", str(config))
    assert json.loads(done.stdout)["notes"]["login_command"] is None


# --- servers without a login, and mistakes --------------------------------------------------


def test_login_to_a_server_that_needs_none_says_so(
    mcp_client: McpClient,
    http_fault_server: HttpFaultServer,
    token_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headless(monkeypatch)
    done = mcp_client("login", "cli", "--url", http_fault_server.url)
    assert (done.returncode, done.stdout) == (
        0,
        "server 'cli' needs no login: it answered without one\n",
    ), done.stderr
    done = mcp_client("login", "cli", "--", *py_server_argv())
    assert (done.returncode, done.stdout) == (
        0,
        "server 'cli' needs no login: it runs as a local command (stdio)\n",
    ), done.stderr
    done = mcp_client(
        "login", "cli", "--url", "https://example.com/mcp", "--header", "Authorization: x"
    )
    assert done.returncode == 0
    assert "needs no login: its config sends an Authorization header of its own" in done.stdout
    assert not token_file.exists()


def test_login_to_an_unknown_server_exits_2(mcp_client: McpClient, server: OAuthServer) -> None:
    done = mcp_client("login", "notes", "--url", server.url)
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        "mcp-client: unknown server 'notes' in '<command line>' (its servers: 'cli')"
    )


def test_login_to_a_server_that_is_not_there_exits_3(
    mcp_client: McpClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headless(monkeypatch)
    with OAuthServer() as gone:
        url = gone.url
    done = mcp_client("login", "cli", "--url", url)
    assert done.returncode == 3
    assert one_line(done.stderr).startswith("mcp-client: server 'cli' is not available:")


def test_an_unknown_test_hook_value_exits_2(
    server: OAuthServer,
    mcp_client: McpClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TEST_AUTHORIZE, "yes")
    done = mcp_client("login", "cli", "--url", server.url)
    assert done.returncode == 2
    assert "MCP_CLIENT_TEST_AUTHORIZE" in one_line(done.stderr)


@pytest.mark.parametrize("command", ["call", "status", "tools", "login", "logout"])
def test_a_corrupt_token_file_is_one_clear_line(
    command: str,
    server: OAuthServer,
    mcp_client: McpClient,
    token_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headless(monkeypatch)
    token_file.parent.mkdir()
    token_file.write_text("{not json")
    args = {"call": ["call", "echo", "{}"], "login": ["login", "cli"], "logout": ["logout", "cli"]}
    done = mcp_client(*args.get(command, [command]), "--url", server.url)
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        f"mcp-client: token file {token_file}: is not valid JSON; delete it and log in again "
        "(`mcp-client login SERVER`)"
    )
    assert token_file.read_text() == "{not json"  # left as it was
    assert flows(server) == []


def test_a_stdio_server_never_reads_the_token_file(mcp_client: McpClient, token_file: Path) -> None:
    token_file.parent.mkdir()
    token_file.write_text("{not json")
    done = mcp_client("tools", "--", *py_server_argv())
    assert done.returncode == 0, done.stderr


# --- no secret anywhere ---------------------------------------------------------------------


def test_no_token_code_or_secret_is_printed_even_with_debug_logs(
    server: OAuthServer,
    mcp_client: McpClient,
    token_file: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headless(monkeypatch)
    assert mcp_client("-vv", "login", "cli", "--url", server.url).returncode == 0
    monkeypatch.delenv(TEST_AUTHORIZE)
    server.expire_access_tokens()
    assert mcp_client("-vv", "call", "echo", '{"text": "1"}', "--url", server.url).returncode == 0
    assert mcp_client("-vv", "status", "--json", "--url", server.url).returncode == 0
    assert mcp_client("-vv", "logout", "cli", "--url", server.url).returncode == 0
    assert mcp_client("-vv", "status", "--url", server.url).returncode == 3
    secrets = server.secrets
    assert len(secrets) >= 6  # a code, a state, a verifier, two rounds of tokens
    shown = mcp_client.outputs
    assert sorted(s for s in secrets if any(s in text for text in shown)) == []
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600


# --- the real browser step ------------------------------------------------------------------

def test_the_browser_step_prints_the_url_and_takes_the_redirect_on_its_listener(
    server: OAuthServer,
    mcp_client: McpClient,
    token_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BROWSER", browser(tmp_path, "follow"))
    done = mcp_client("login", "cli", "--url", server.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("logged in to 'cli'")
    notice, url = done.stderr.splitlines()
    assert notice.startswith("mcp-client: log in in the browser window that opens")
    assert url.startswith(f"{server.issuer}/authorize?")
    query = dict(parse_qsl(urlsplit(url).query))
    assert query["redirect_uri"].startswith("http://127.0.0.1:")
    assert record(token_file, server)["issuer"] == server.issuer
    # The URL is the user's to see (its state is in it); nothing else secret is printed.
    shown = done.stdout + done.stderr.replace(query["state"], "")
    assert sorted(s for s in server.secrets if s in shown) == []


def test_a_refused_login_exits_4_and_keeps_the_stored_one(
    server: OAuthServer,
    mcp_client: McpClient,
    token_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headless(monkeypatch)
    assert mcp_client("login", "cli", "--url", server.url).returncode == 0
    kept = record(token_file, server)
    monkeypatch.delenv(TEST_AUTHORIZE)
    monkeypatch.setenv("BROWSER", browser(tmp_path, "deny"))
    done = mcp_client("login", "cli", "--url", server.url)
    assert done.returncode == 4, done.stderr
    assert done.stdout == ""
    last = done.stderr.splitlines()[-1]
    assert last.startswith("mcp-client: could not log in to 'cli': ") and "access_denied" in last
    assert record(token_file, server) == kept
