"""`mcp-client login --device` (RFC 8628), run as a user runs it: the command as a subprocess,
against tests/servers/device_auth_server.py (authlib's device authorization grant in front of
the official SDK's MCP server) and a token file in tmp_path. The server approves or denies
after N polls (--auto-approve-after, --auto-deny-after), as the user would on their phone.

What the command shows (the verification URI and the user code on stderr, a QR code on a
terminal), the tokens kept as `login` keeps them and used by a later `call` without a new
login, its exit codes, and no device code or token in anything it prints."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from mcp_core.driver import token_store_key
from tests.cli.test_cli import on_a_terminal, run
from tests.servers.http_peers import HttpPeer
from tests.servers.test_device_auth_server_smoke import CLIENT_ID, issued, origin, stats

pytestmark = pytest.mark.timeout(90)


def config(tmp_path: Path, peer: HttpPeer, **oauth: Any) -> Path:
    path = tmp_path / ".mcp.json"
    entry = {"url": peer.url, "oauth": {"client_id": CLIENT_ID, **oauth}}
    path.write_text(json.dumps({"mcpServers": {"dev": entry}}))
    return path


def test_login_device_shows_the_code_keeps_the_tokens_and_call_uses_them(
    device_auth_server: Any, tmp_path: Path
) -> None:
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "2")
    token_file = tmp_path / "tokens.json"
    common = ("--token-file", str(token_file))
    mcp_json = str(config(tmp_path, peer))
    done = run(*common, "login", "--device", "dev", "--config", mcp_json)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"logged in to 'dev' (issuer {origin(peer)}); tokens in {token_file}\n"
    [user_code] = issued(peer)["user_codes"]
    assert f"visit {origin(peer)}/device\n" in done.stderr
    assert f"enter the code {user_code} (within 10 minutes)" in done.stderr
    assert f"Or open {origin(peer)}/device?user_code={user_code}" in done.stderr
    assert "▄" not in done.stderr and "█" not in done.stderr  # no QR code into a pipe
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    stored = json.loads(token_file.read_text())["servers"][token_store_key(peer.url)]
    assert stored["client_id"] == CLIENT_ID and stored["issuer"] == origin(peer)

    called = run(*common, "call", "echo", '{"text": "kept"}', "--config", mcp_json)
    assert (called.returncode, called.stdout) == (0, "kept\n"), called.stderr
    assert called.stderr == ""  # no second login
    counts = stats(peer)
    assert (counts["device_authorizations"], counts["tokens_issued"]) == (1, 1)

    secrets = issued(peer)
    printed = [done.stdout, done.stderr, called.stdout, called.stderr]
    for value in secrets["device_codes"] + secrets["access_tokens"] + secrets["refresh_tokens"]:
        assert not [text for text in printed if value in text]
    assert user_code not in done.stdout + called.stdout + called.stderr  # stderr of login only


def test_a_server_whose_grant_is_device_code_needs_no_flag(
    device_auth_server: Any, tmp_path: Path
) -> None:
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "1")
    mcp_json = str(config(tmp_path, peer, grant="device_code"))
    token_file = str(tmp_path / "tokens.json")
    done = run("--token-file", token_file, "login", "dev", "--config", mcp_json)
    assert done.returncode == 0, done.stderr
    assert "enter the code" in done.stderr


def test_on_a_terminal_a_qr_code_is_drawn(device_auth_server: Any, tmp_path: Path) -> None:
    peer = device_auth_server("--interval", "0", "--auto-approve-after", "1")
    mcp_json = str(config(tmp_path, peer))
    token_file = str(tmp_path / "tokens.json")
    done, shown = on_a_terminal(
        "--token-file", token_file, "login", "--device", "dev", "--config", mcp_json
    )
    assert done.returncode == 0, shown
    text = shown.decode()
    assert "enter the code" in text
    assert "█" in text and "▄" in text  # segno's compact terminal drawing


def test_a_denied_login_exits_4(device_auth_server: Any, tmp_path: Path) -> None:
    peer = device_auth_server("--interval", "0", "--auto-deny-after", "1")
    mcp_json = str(config(tmp_path, peer))
    token_file = tmp_path / "tokens.json"
    done = run("--token-file", str(token_file), "login", "--device", "dev", "--config", mcp_json)
    assert done.returncode == 4, done.stderr
    assert "could not log in to 'dev'" in done.stderr and "denied" in done.stderr
    assert not token_file.exists() or token_store_key(peer.url) not in token_file.read_text()


def test_device_with_another_grants_key_file_exits_2(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    oauth = {"client_id": "c", "grant": "client_credentials", "key_file": str(tmp_path / "k")}
    entry = {"url": "https://mcp.example.com/mcp", "oauth": oauth}
    path.write_text(json.dumps({"mcpServers": {"dev": entry}}))
    done = run(
        "--token-file", str(tmp_path / "t.json"), "login", "--device", "dev", "--config", str(path)
    )
    assert done.returncode == 2
    assert "cannot log in with --device" in done.stderr and "key_file" in done.stderr
