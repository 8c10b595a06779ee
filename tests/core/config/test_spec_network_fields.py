"""The spec's network fields: ``verify``, ``cert`` and ``proxy``, checked in the
core (types, paths that are paths, an http:// proxy URL), redacted where a spec is shown (the
proxy's user name and password; PEM text pasted where a path belongs), and read from
``.mcp.json`` like every other field, ``${VAR}`` included. Loading the files, reading the
proxy variables and the warning for ``verify=False`` are the drivers' (tests/drivers/
test_networks.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_core import InvalidSpec, Spec, load_config
from mcp_core._config.spec import proxy_url_problem, redact_mapping

HTTP: dict[str, Any] = {"name": "web", "url": "https://example.com/mcp"}
STDIO: dict[str, Any] = {"name": "fs", "command": "npx"}
PASSWORD = "pr0xy-s3cret"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"


def test_defaults_follow_the_system_and_the_environment() -> None:
    spec = Spec.from_mapping(HTTP)
    assert (spec.verify, spec.cert, spec.proxy) == (True, None, None)
    assert "verify" not in spec.redacted(include_defaults=False)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"verify": False}, (False, None, None)),
        ({"verify": "/etc/corp/ca.pem"}, ("/etc/corp/ca.pem", None, None)),
        ({"cert": "client.pem"}, (True, "client.pem", None)),
        ({"cert": ["client.crt", "client.key"]}, (True, ("client.crt", "client.key"), None)),
        ({"cert": ("c", "k"), "verify": "ca"}, ("ca", ("c", "k"), None)),
        ({"proxy": False}, (True, None, False)),
        ({"proxy": "http://proxy.corp:3128"}, (True, None, "http://proxy.corp:3128")),
        ({"proxy": "HTTP://proxy.corp/"}, (True, None, "HTTP://proxy.corp/")),
        (
            {"proxy": f"http://me:{PASSWORD}@[::1]:8080"},
            (True, None, f"http://me:{PASSWORD}@[::1]:8080"),
        ),
    ],
)
def test_accepted_values(fields: dict[str, Any], expected: tuple[Any, Any, Any]) -> None:
    spec = Spec.from_mapping({**HTTP, **fields})
    assert (spec.verify, spec.cert, spec.proxy) == expected
    assert Spec.from_mapping(spec.redacted()).cert == spec.cert  # the replay header rebuilds
    hash(spec)  # a cert pair is stored as a tuple: specs stay hashable


def test_an_http_server_may_set_them_too() -> None:
    # Its authorization server may well be https, and a proxy applies to plain http.
    spec = Spec(name="w", url="http://127.0.0.1:1/mcp", verify="ca.pem", proxy="http://p:1")
    assert spec.verify == "ca.pem"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({**STDIO, "verify": False}, "'verify' is set for a stdio server"),
        ({**STDIO, "cert": "c.pem"}, "'cert' is set for a stdio server"),
        ({**STDIO, "proxy": "http://p:1"}, "'proxy' is set for a stdio server"),
        ({**STDIO, "proxy": False}, "'proxy' is set for a stdio server"),
        ({**HTTP, "verify": 1}, "'verify' must be true, false or the path of a CA bundle, got int"),
        ({**HTTP, "verify": ""}, "'verify' must be a non-empty path"),
        ({**HTTP, "verify": PEM}, "'verify' holds PEM text, not a path"),
        ({**HTTP, "verify": "ca\x00.pem"}, "'verify' contains a control character"),
        (
            {**HTTP, "cert": 7},
            "'cert' must be a path or a [certificate, key] pair of paths, got int",
        ),
        ({**HTTP, "cert": ["a", "b", "c"]}, "a [certificate, key] pair of paths, got list"),
        ({**HTTP, "cert": ["a", 2]}, "a [certificate, key] pair of paths, got list"),
        ({**HTTP, "cert": [PEM, "k"]}, "'cert[0] (the certificate)' holds PEM text"),
        ({**HTTP, "cert": ["c", " "]}, "'cert[1] (the key)' must be a non-empty path"),
        ({**HTTP, "cert": PEM}, "'cert' holds PEM text, not a path"),
        ({**HTTP, "proxy": True}, "'proxy' is true"),
        ({**HTTP, "proxy": 3128}, "'proxy' must be a URL, false or null, got int"),
        ({**HTTP, "proxy": f"https://me:{PASSWORD}@p:1"}, "only http:// proxies are supported"),
        ({**HTTP, "proxy": f"socks5://me:{PASSWORD}@p:1"}, "SOCKS and other kinds of proxy"),
        ({**HTTP, "proxy": f"http://me:{PASSWORD}@"}, "'proxy' has no host"),
        ({**HTTP, "proxy": "http://p:1/path"}, "'proxy' has a path, query or fragment"),
        ({**HTTP, "proxy": f"http://p:1/?token={PASSWORD}"}, "has a path, query or fragment"),
        ({**HTTP, "proxy": f"http://me:{PASSWORD}@p:99999"}, "not a valid URL (bad host or port)"),
        ({**HTTP, "proxy": f"http://me:{PASSWORD}@p :1"}, "whitespace or a control character"),
    ],
)
def test_refused_values_never_quote_a_secret(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidSpec) as caught:
        Spec.from_mapping(fields)
    assert message in caught.value.message
    assert PASSWORD not in caught.value.message
    assert "MIIEvQ" not in caught.value.message


def test_a_proxy_true_says_what_to_write_instead() -> None:
    with pytest.raises(InvalidSpec, match="leave 'proxy' out"):
        Spec(name="w", url="https://h/mcp", proxy=True)


def test_redaction_hides_the_proxy_credentials_and_keeps_paths() -> None:
    spec = Spec.from_mapping(
        {
            **HTTP,
            "verify": "/etc/ca.pem",
            "cert": ["c.crt", "c.key"],
            "proxy": f"http://me:{PASSWORD}@p:3128",
        }
    )
    shown = spec.redacted(include_defaults=False)
    assert shown["proxy"] == "http://%5Bredacted%5D@p:3128"
    assert (shown["verify"], shown["cert"]) == ("/etc/ca.pem", ["c.crt", "c.key"])
    assert PASSWORD not in repr(spec)
    assert json.loads(json.dumps(shown)) == shown  # a replay header is JSON
    assert Spec.from_mapping({**spec.redacted(), "name": "web"}).proxy == shown["proxy"]


@pytest.mark.parametrize(
    ("mapping", "shown"),
    [
        # What error messages show of a raw (maybe invalid) spec: never PEM text or a password.
        ({"verify": PEM}, {"verify": "[redacted]"}),
        ({"verify": False, "proxy": False}, {"verify": False, "proxy": False}),
        ({"verify": 3}, {"verify": "[redacted]"}),
        ({"cert": [PEM, 5, "k.pem"]}, {"cert": ["[redacted]", "[redacted]", "k.pem"]}),
        ({"cert": ("c.pem", "k.pem")}, {"cert": ["c.pem", "k.pem"]}),
        ({"proxy": f"http://me:{PASSWORD}@p"}, {"proxy": "http://%5Bredacted%5D@p"}),
        ({"proxy": {"url": PASSWORD}}, {"proxy": "[redacted]"}),
        ({"proxy": None, "cert": None}, {"proxy": None, "cert": None}),
    ],
)
def test_redacting_raw_values(mapping: dict[str, Any], shown: dict[str, Any]) -> None:
    assert redact_mapping(mapping) == shown


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://proxy:3128", None),
        ("http://u:p@proxy", None),
        ("http://[::1]:1/", None),
        ("https://proxy:3128", "is an https:// proxy"),
        ("socks5h://proxy:1080", "must start with http://"),
        ("proxy:3128", "must start with http://"),
        ("http://proxy:x", "is not a valid URL"),
        ("http://proxy\t:1", "contains whitespace"),
        ("http:///", "has no host"),
        ("http://proxy#f", "has a path, query or fragment"),
    ],
)
def test_proxy_url_problem(url: str, problem: str | None) -> None:
    found = proxy_url_problem(url)
    assert found == problem if problem is None else problem in str(found)


def test_config_files_carry_the_network_fields() -> None:
    text = json.dumps(
        {
            "mcpServers": {
                "corp": {
                    "url": "https://mcp.corp/mcp",
                    "verify": "/etc/corp-ca.pem",
                    "cert": ["me.crt", "me.key"],
                    "proxy": "http://proxy.corp:3128",
                },
                "direct": {"type": "http", "url": "https://mcp.example.com", "proxy": False},
            }
        }
    )
    config = load_config(text)
    assert config.skipped == {}
    corp = config.servers["corp"]
    assert (corp.verify, corp.cert, corp.proxy) == (
        "/etc/corp-ca.pem",
        ("me.crt", "me.key"),
        "http://proxy.corp:3128",
    )
    assert config.servers["direct"].proxy is False


def test_config_expands_the_network_fields_when_asked() -> None:
    text = json.dumps(
        {
            "mcpServers": {
                "corp": {
                    "url": "https://mcp.corp/mcp",
                    "verify": "${HOME}/ca.pem",
                    "cert": ["${HOME}/me.crt", "${HOME}/me.key"],
                    "proxy": "http://me:${PROXY_PASSWORD}@proxy.corp:3128",
                },
                "one_file": {"url": "https://h/mcp", "cert": "${HOME}/both.pem"},
                "odd": {"url": "https://h/mcp", "cert": ["${HOME}/me.crt", 3]},
            }
        }
    )
    environ = {"HOME": "/home/me", "PROXY_PASSWORD": PASSWORD}
    config = load_config(text, expand_env=True, environ=environ)
    corp = config.servers["corp"]
    assert corp.verify == "/home/me/ca.pem"
    assert corp.cert == ("/home/me/me.crt", "/home/me/me.key")
    assert corp.proxy == f"http://me:{PASSWORD}@proxy.corp:3128"
    assert config.servers["one_file"].cert == "/home/me/both.pem"
    assert "a [certificate, key] pair of paths" in config.skipped["odd"]  # left for Spec
    assert PASSWORD not in repr(config)
    # Not asked: the reference stays literal text (and is a valid proxy URL all the same).
    assert "${PROXY_PASSWORD}" in str(load_config(text).servers["corp"].proxy)
