"""`mcp-client resources|read|prompts|prompt`, run as a user runs them (tests/cli/test_cli.py's
way: a subprocess, real servers, exit codes), against server-everything and the SDK's
py_server (tests/servers/SURFACE.md says what each serves), next to the fault server, which
offers neither resources nor prompts, and servers that are down.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_cli import SECRET, everything, read_table, run
from tests.conftest import fault_server_argv, node_bin, py_server_argv

pytestmark = pytest.mark.timeout(60)

BLOB = b"\x00\x01binary\xff"  # test://static/blob of py_server


@pytest.fixture(name="surface_config")
def _surface_config(tmp_path: Path) -> Path:
    """server-everything, py_server, the fault server, a server whose executable does not
    exist and an entry with a typo; written as tmp_path/.mcp.json."""
    py = py_server_argv()
    fault = fault_server_argv()
    config = {
        "mcpServers": {
            "everything": {"command": node_bin("mcp-server-everything"), "args": ["stdio"]},
            "py-sdk": {"command": py[0], "args": py[1:]},
            "fault": {"command": fault[0], "args": fault[1:]},
            "broken": {"command": str(tmp_path / "no-such-server")},
            "typo": {"command": "true", "argz": ["x"]},
        }
    }
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps(config))
    return path


def rows(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines() if line.strip()]


# --- resources ---------------------------------------------------------------------------------


def test_resources_of_a_group_with_servers_that_have_none(surface_config: Path) -> None:
    done = run("resources", cwd=surface_config.parent)  # ./.mcp.json is the default config
    assert done.returncode == 0, done.stderr
    table = rows(done.stdout)
    assert table[0] == ["server", "uri", "name", "mime"]
    assert ["py-sdk", "test://static/hello", "hello", "text/plain"] in table
    assert ["py-sdk", "test://static/blob", "blob", "application/octet-stream"] in table
    uri = "demo://resource/static/document/features.md"
    assert ["everything", uri, "features.md", "text/markdown"] in table
    assert sum(row[0] == "py-sdk" for row in table) == 10 + 1  # every page, and one template
    assert ["server", "uri", "template", "name", "mime"] in table  # the templates follow
    assert ["py-sdk", "test://items/{item_id}", "item", "text/plain"] in table
    assert "server 'fault' offers no resources" in done.stderr
    assert "server 'broken' is down" in done.stderr
    assert "server 'typo' is down" in done.stderr


def test_resources_json(surface_config: Path) -> None:
    done = run("resources", "--json", "--config", str(surface_config))
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    hello = next(r for r in listed["resources"] if r["uri"] == "test://static/hello")
    assert hello == {
        "server": "py-sdk",
        "uri": "test://static/hello",
        "name": "hello",
        "mimeType": "text/plain",
        "description": "",
        # The server's icons for it, as it sent them (tests/servers/py_server.py's ICONS).
        "icons": [
            {"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]},
            {"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml"}
            | {"theme": "dark"},
        ],
    }
    assert {r["server"] for r in listed["resources"]} == {"everything", "py-sdk"}
    templates = {(t["server"], t["uriTemplate"]) for t in listed["templates"]}
    assert ("py-sdk", "test://items/{item_id}") in templates
    assert ("everything", "demo://resource/dynamic/text/{resourceId}") in templates


def test_resources_when_no_server_starts(tmp_path: Path) -> None:
    done = run("resources", "--", str(tmp_path / "no-such-server"))
    assert done.returncode == 3
    assert "no server is available" in done.stderr and done.stdout == ""


# --- read --------------------------------------------------------------------------------------


def test_read_prints_text_as_it_is(surface_config: Path) -> None:
    done = run("read", "py-sdk", "test://static/hello", "--config", str(surface_config))
    assert (done.returncode, done.stdout) == (0, "hello world\n"), done.stderr
    # A template filled in reads like any resource.
    done = run("read", "py-sdk", "test://items/42", "--config", str(surface_config))
    assert (done.returncode, done.stdout) == (0, "item 42\n"), done.stderr


def test_read_of_a_blob_says_what_it_is_and_writes_its_bytes(tmp_path: Path) -> None:
    done = run("read", "cli", "test://static/blob", "--", *py_server_argv())
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[blob application/octet-stream, 9 bytes: --out FILE writes it]\n"

    out = tmp_path / "blob.bin"
    done = run("read", "cli", "test://static/blob", "--out", str(out), "--", *py_server_argv())
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert out.read_bytes() == BLOB
    assert f"wrote 9 bytes (application/octet-stream) to {out}" in done.stderr

    done = run("read", "cli", "test://static/blob", "--json", "--", *py_server_argv())
    assert done.returncode == 0, done.stderr
    (content,) = json.loads(done.stdout)["contents"]
    assert base64.b64decode(content["blob"]) == BLOB
    assert content["uri"] == "test://static/blob"

    # A text resource written with --out: its UTF-8 bytes.
    text = tmp_path / "hello.txt"
    done = run("read", "cli", "test://static/hello", "--out", str(text), "--", *py_server_argv())
    assert done.returncode == 0, done.stderr
    assert text.read_bytes() == b"hello world"


def test_read_from_server_everything(surface_config: Path) -> None:
    uri = "demo://resource/static/document/features.md"
    done = run("read", "everything", uri, "--json", "--config", str(surface_config))
    assert done.returncode == 0, done.stderr
    (content,) = json.loads(done.stdout)["contents"]
    assert content["uri"] == uri and "Everything Server" in content["text"]


@pytest.mark.parametrize(
    ("server", "uri", "code", "message"),
    [
        ("nosuch", "test://static/hello", 2, "unknown server 'nosuch'"),
        ("typo", "test://static/hello", 2, "server 'typo' was not loaded"),
        ("broken", "test://static/hello", 3, "server 'broken' is not available"),
        ("fault", "test://static/hello", 2, "does not declare the 'resources' capability"),
        ("py-sdk", "test://nope", 2, "JSON-RPC error -32602: Unknown resource: test://nope"),
        ("everything", "test://static/hello", 2, "JSON-RPC error -32602"),
    ],
)
def test_reads_that_cannot_succeed(
    surface_config: Path, server: str, uri: str, code: int, message: str
) -> None:
    done = run("read", server, uri, "--config", str(surface_config))
    assert done.returncode == code, done.stderr
    assert message in done.stderr and done.stdout == ""


def test_read_out_file_that_cannot_be_written(tmp_path: Path) -> None:
    out = tmp_path / "no-such-directory" / "blob.bin"
    done = run("read", "cli", "test://static/blob", "--out", str(out), "--", *py_server_argv())
    assert done.returncode == 2
    assert f"cannot write {str(out)!r}" in done.stderr


# --- prompts -----------------------------------------------------------------------------------


def test_prompts_of_a_group_are_namespaced(surface_config: Path) -> None:
    done = run("prompts", "--config", str(surface_config))
    assert done.returncode == 0, done.stderr
    columns = ["server", "prompt", "arguments", "description"]
    table = {row["prompt"][0]: row for row in read_table(done.stdout, columns)}
    greeting = table["mcp__py_sdk__greeting"]
    assert (greeting["server"], greeting["arguments"]) == (["py-sdk"], ["name", "style?"])
    args_prompt = table["mcp__everything__args-prompt"]
    assert (args_prompt["server"], args_prompt["arguments"]) == (["everything"], ["city", "state?"])
    assert table["mcp__everything__simple-prompt"]["arguments"] == ["-"]
    assert "mcp__py_sdk__simple" in table
    assert "server 'fault' offers no prompts" in done.stderr
    assert "server 'broken' is down" in done.stderr


def test_prompts_json(surface_config: Path) -> None:
    done = run("prompts", "--json", "--config", str(surface_config))
    assert done.returncode == 0, done.stderr
    listed = {p["name"]: p for p in json.loads(done.stdout)}
    greeting = listed["mcp__py_sdk__greeting"]
    assert (greeting["server"], greeting["prompt"]) == ("py-sdk", "greeting")
    assert [(a["name"], a["required"]) for a in greeting["arguments"]] == [
        ("name", True),
        ("style", False),
    ]
    assert listed["mcp__everything__args-prompt"]["server"] == "everything"


def test_prompt_prints_its_messages(surface_config: Path) -> None:
    args = ("--arg", "name=Ada", "--arg", "style=formal")
    done = run("prompt", "mcp__py_sdk__greeting", *args, "--config", str(surface_config))
    assert (done.returncode, done.stdout) == (0, "user: Good day, Ada.\n"), done.stderr
    # A bare name with one server; an argument's value may hold '='.
    done = run("prompt", "greeting", "--arg", "name=a=b", "--", *py_server_argv())
    assert (done.returncode, done.stdout) == (0, "user: Hey a=b!\n"), done.stderr


def test_prompt_with_an_embedded_resource(surface_config: Path) -> None:
    args = ("--arg", "resourceType=Text", "--arg", "resourceId=1")
    name = "mcp__everything__resource-prompt"
    done = run("prompt", name, *args, "--config", str(surface_config))
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("user: ") and second.startswith("user: Resource 1:")
    done = run("prompt", name, *args, "--json", "--config", str(surface_config))
    assert done.returncode == 0, done.stderr
    messages = json.loads(done.stdout)["messages"]
    assert [m["content"]["type"] for m in messages] == ["text", "resource"]
    assert messages[1]["content"]["resource"]["uri"] == "demo://resource/dynamic/text/1"


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["mcp__py_sdk__greting"], 2, "did you mean 'mcp__py_sdk__greeting'"),
        (["mcp__nosuch__greeting"], 2, "no server is named 'nosuch'"),
        (["greeting"], 2, "name prompts mcp__<server>__<prompt>"),
        (["mcp__typo__x"], 2, "server 'typo' was not loaded"),
        (["mcp__broken__x"], 3, "server 'broken' is not available"),
        (["mcp__fault__x"], 2, "does not declare the 'prompts' capability"),
        (["mcp__py_sdk__greeting", "--arg", "name=A", "--arg", "style=rude"], 2, "-32602"),
        (["mcp__everything__args-prompt"], 2, "-32602"),
        (["mcp__py_sdk__greeting", "--arg", "name"], 2, "is not KEY=VALUE"),
        (["mcp__py_sdk__greeting", "--arg", "a=1", "--arg", "a=2"], 2, "'a' is given twice"),
    ],
)
def test_prompts_that_cannot_be_got(
    surface_config: Path, argv: list[str], code: int, message: str
) -> None:
    done = run("prompt", *argv, "--config", str(surface_config))
    assert done.returncode == code, done.stderr
    assert message in done.stderr and done.stdout == ""


# --- HTTP, and secrets -------------------------------------------------------------------------


def test_over_http_with_a_header_that_is_never_printed(
    everything_http: Callable[..., object],
) -> None:
    peer = everything_http("streamableHttp")
    url = str(getattr(peer, "url"))  # noqa: B009 (HttpPeer is not typed for tests)
    source = ("--url", url, "--header", f"Authorization: Bearer {SECRET}")
    uri = "demo://resource/dynamic/text/3"
    done = run("-vv", "read", "cli", uri, *source)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Resource 3:")
    done = run("-vv", "prompt", "args-prompt", "--arg", "city=Oslo", *source)
    assert (done.returncode, done.stdout) == (0, "user: What's weather in Oslo?\n"), done.stderr
    done = run("-vv", "resources", *source)
    assert done.returncode == 0 and "features.md" in done.stdout, done.stderr
    for done in (run("-vv", "prompts", *source), run("-vv", "resources", "--json", *source)):
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr


def test_secrets_stay_out_of_errors() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    source = ("--url", f"http://127.0.0.1:{port}/mcp?key={SECRET}", "--header", f"X-Key: {SECRET}")
    cases = [
        ("resources", *source),
        ("prompts", *source),
        ("read", "cli", "test://x", *source),
        ("prompt", "p", *source),
        ("call", "echo", "{}", *source),  # one server started: its first failure ends the wait
    ]
    for args in cases:
        done = run(*args)
        assert done.returncode == 3, (args, done.stderr)
        assert SECRET not in done.stdout + done.stderr, args


def test_tools_json_shows_the_servers_own_fields_once() -> None:
    done = run("tools", "--json", "--", *everything())
    assert done.returncode == 0, done.stderr
    echo = next(tool for tool in json.loads(done.stdout) if tool["tool"] == "echo")
    assert "raw" not in echo and echo["name"] == "mcp__cli__echo"
