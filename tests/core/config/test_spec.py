"""Spec: defaults, validation, normalisation and redaction."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from mcp_core import InvalidSpec, Spec
from mcp_core._config.spec import redact_mapping
from mcp_core._vocabulary.urls import redact_url

SECRET = "s3cr3t-token"
STDIO: dict[str, Any] = {"name": "fs", "command": "npx"}
HTTP: dict[str, Any] = {"name": "web", "url": "https://example.com/mcp"}


def test_defaults() -> None:
    spec = Spec(name="fs", command="npx")
    assert (spec.args, dict(spec.env), spec.cwd, spec.url, dict(spec.headers)) == (
        (),
        {},
        None,
        None,
        {},
    )
    assert (spec.concurrency, spec.pool_size, spec.queue_limit) == (None, 8, 1024)
    assert (spec.call_timeout, spec.max_call_timeout, spec.init_timeout) == (30.0, 300.0, 60.0)
    assert (spec.reconnect, spec.max_backoff) == (1.0, 60.0)
    assert (spec.fail_fast, spec.era) == (False, "auto")
    assert (dict(spec.prices), spec.max_message_bytes) == ({}, 8 * 1024 * 1024)
    assert (spec.probe_timeout, spec.shutdown_grace, spec.jitter_seed) == (2.0, 2.0, 0)
    assert spec.transport == "stdio"
    assert Spec(name="w", url="http://h").transport == "http"


def test_normalises_and_copies() -> None:
    env = {"A": "1"}
    spec = Spec.from_mapping({**STDIO, "args": ["-y", "pkg"], "env": env, "call_timeout": 5})
    env["A"] = "changed"
    assert spec.args == ("-y", "pkg")
    assert spec.env == {"A": "1"}  # a copy, not the caller's dict
    assert isinstance(spec.env, MappingProxyType)  # read-only
    assert spec.call_timeout == 5.0 and isinstance(spec.call_timeout, float)
    with pytest.raises(TypeError):
        spec.env["B"] = "2"  # type: ignore[index]
    assert spec == Spec(
        name="fs", command="npx", args=("-y", "pkg"), env={"A": "1"}, call_timeout=5.0
    )


def test_specs_are_hashable_values() -> None:
    first = Spec(name="fs", command="npx", env={"A": "1"}, prices={"t": 2})
    second = Spec.from_mapping(
        {"name": "fs", "command": "npx", "env": {"A": "1"}, "prices": {"t": 2}}
    )
    assert first == second and hash(first) == hash(second)
    assert len({first, second, Spec(name="fs", command="npx")}) == 2


ACCEPTED: list[dict[str, Any]] = [
    {**STDIO, "cwd": "/tmp", "env": {"PATH": "/bin"}, "args": []},
    {**HTTP, "headers": {"Authorization": "Bearer x", "X-Api-Key": "k"}},
    {**HTTP, "url": "http://[::1]:8080/mcp"},
    {**HTTP, "url": "HTTPS://user:pw@host/p?q=1#f"},
    {**HTTP, "args": [], "env": {}},  # empty stdio-only fields are harmless on a url spec
    {**STDIO, "concurrency": "pooled", "pool_size": 1, "queue_limit": 0},
    {**STDIO, "era": "modern", "fail_fast": True, "prices": {"buy": 3}},
    {**STDIO, "call_timeout": 1, "max_call_timeout": 1, "reconnect": 0.5, "max_backoff": 0.5},
    {**STDIO, "jitter_seed": -7, "max_message_bytes": 1, "probe_timeout": 0.1},
    {**HTTP, "oauth": {}},
    {**HTTP, "oauth": {"client_id": "app", "client_secret": "x", "scope": "read write"}},
    {**HTTP, "oauth": {"grant": "client_credentials", "key_file": "/k.pem", "client_id": "a"}},
    {**HTTP, "oauth": {"redirect_port": 8765, "client_metadata_url": "https://app.example/c"}},
    {**HTTP, "oauth": {"enabled": False}, "headers": {"Authorization": "Bearer x"}},
    {**HTTP, "oauth": {"client_secret": None, "key_file": None, "redirect_port": 0}},
    {**HTTP, "oauth": {"grant": "jwt_bearer", "assertion_file": "/var/run/secrets/token"}},
    {**HTTP, "oauth": {"grant": "jwt_bearer", "assertion_file": "/t", "client_id": "w"}},
    {**HTTP, "oauth": {"grant": "jwt_bearer"}},  # the client's assertion= callback gives it
]


@pytest.mark.parametrize("mapping", ACCEPTED)
def test_accepted(mapping: dict[str, Any]) -> None:
    spec = Spec.from_mapping(mapping)
    assert Spec.from_mapping(spec.redacted()).redacted() == spec.redacted()  # replayable


# (mapping, words the message must contain)
REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"name": "x"}, "neither 'command' nor 'url'"),
    ({"name": "x", "command": "c", "url": "http://h"}, "both 'command' and 'url'"),
    ({"name": "", "command": "c"}, "'name' must be a non-empty string, got an empty string"),
    ({"name": "  ", "command": "c"}, "'name' must be a non-empty string"),
    ({"name": 3, "command": "c"}, "'name' must be a non-empty string, got int"),
    ({"name": "x\0", "command": "c"}, "'name' contains a NUL"),
    ({"command": "c"}, "'name' is missing"),
    ({**STDIO, "bogus": 1}, "unknown field 'bogus'"),
    ({**STDIO, "header": {}}, "did you mean 'headers'?"),
    ({**STDIO, "zzzzzz": 1}, "known fields: name, command"),
    ({**STDIO, 7: 1}, "unknown field of type int"),
    ({**STDIO, "command": ""}, "'command' must be a non-empty string"),
    ({**STDIO, "args": "-y pkg"}, "'args' must be a list of strings, got str"),
    ({**STDIO, "args": ["a", 1]}, "args[1] must be a string, got int"),
    ({**STDIO, "args": ["a\0"]}, "args[0] contains a NUL"),
    ({**STDIO, "env": ["A=1"]}, "'env' must be a mapping of strings to strings, got list"),
    ({**STDIO, "env": {"A=B": "1"}}, "'env' name #0 is not a valid name"),
    ({**STDIO, "env": {"": "1"}}, "'env' name #0 is not a valid name"),
    ({**STDIO, "env": {"A": 1}}, "env['A'] must be a string, got int"),
    ({**STDIO, "env": {"A": "x\0"}}, "env['A'] contains a control character"),
    ({**STDIO, "cwd": ""}, "'cwd' must be a non-empty string"),
    ({**STDIO, "headers": {"A": "b"}}, "'headers' is set for a stdio server"),
    ({**HTTP, "args": ["x"]}, "'args' is set for an HTTP server"),
    ({**HTTP, "env": {"A": "b"}}, "'env' is set for an HTTP server"),
    ({**HTTP, "cwd": "/tmp"}, "'cwd' is set for an HTTP server"),
    ({**HTTP, "url": 5}, "'url' must be a string, got int"),
    ({**HTTP, "url": "ftp://h/x"}, "must start with http:// or https://"),
    ({**HTTP, "url": "localhost:8080/mcp"}, "must start with http:// or https://"),
    ({**HTTP, "url": "http:///path"}, "'url' has no host"),
    ({**HTTP, "url": "http://h:99999/"}, "not a valid URL"),
    ({**HTTP, "url": "http://[bad/"}, "not a valid URL"),
    ({**HTTP, "url": "http://h/a b"}, "whitespace or a control character"),
    ({**HTTP, "url": "http://h/\n"}, "whitespace or a control character"),
    ({**HTTP, "headers": {"Bad Name": "v"}}, "'headers' name #0 is not a valid name"),
    ({**HTTP, "headers": {"A": "v\r\nX: y"}}, "headers['A'] contains a control character"),
    ({**HTTP, "headers": {"A": None}}, "headers['A'] must be a string, got NoneType"),
    ({**STDIO, "call_timeout": 0}, "'call_timeout' must be a positive number of seconds, got 0"),
    ({**STDIO, "init_timeout": -1.5}, "'init_timeout' must be a positive number of seconds"),
    ({**STDIO, "reconnect": True}, "'reconnect' must be a positive number of seconds, got bool"),
    ({**STDIO, "probe_timeout": "2"}, "'probe_timeout' must be a positive number of seconds, got"),
    ({**STDIO, "shutdown_grace": float("nan")}, "'shutdown_grace' must be a positive number"),
    ({**STDIO, "max_backoff": float("inf")}, "'max_backoff' must be a positive number"),
    ({**STDIO, "call_timeout": 10**400}, "'call_timeout' must be a positive number"),
    ({**STDIO, "call_timeout": 600}, "'max_call_timeout' (300.0) is below"),
    ({**STDIO, "call_timeout": 60, "max_call_timeout": 30}, "raise 'max_call_timeout'"),
    ({**STDIO, "reconnect": 5, "max_backoff": 2}, "'max_backoff' (2.0) is below 'reconnect'"),
    ({**STDIO, "pool_size": 0}, "'pool_size' must be an integer >= 1, got 0"),
    ({**STDIO, "pool_size": 2.0}, "'pool_size' must be an integer >= 1, got 2.0"),
    ({**STDIO, "queue_limit": -1}, "'queue_limit' must be an integer >= 0, got -1"),
    ({**STDIO, "queue_limit": False}, "'queue_limit' must be an integer >= 0, got bool"),
    ({**STDIO, "max_message_bytes": 0}, "'max_message_bytes' must be an integer >= 1"),
    ({**STDIO, "jitter_seed": 1.5}, "'jitter_seed' must be an integer, got float"),
    ({**STDIO, "concurrency": "parallel"}, "'concurrency' must be one of stateless, pooled"),
    ({**STDIO, "era": 2026}, "'era' must be one of auto, legacy, modern, got int"),
    ({**STDIO, "era": "x" * 40}, "got str"),
    ({**STDIO, "fail_fast": "yes"}, "'fail_fast' must be true or false, got str"),
    ({**STDIO, "prices": [1]}, "'prices' must be a mapping"),
    ({**STDIO, "prices": {"": 1}}, "'prices' keys must be non-empty tool names"),
    ({**STDIO, "prices": {"t": 0}}, "prices['t'] must be a positive integer, got 0"),
    ({**STDIO, "prices": {"t": True}}, "prices['t'] must be a positive integer, got bool"),
    ({**STDIO, "prices": {"t": 1.5}}, "prices['t'] must be a positive integer, got 1.5"),
    ({**HTTP, "oauth": "client"}, "'oauth' must be a mapping, got str"),
    ({**HTTP, "oauth": {"client_secert": "x"}}, "unknown key 'client_secert' in 'oauth'"),
    ({**HTTP, "oauth": {"client_secert": "x"}}, "did you mean 'client_secret'?"),
    ({**HTTP, "oauth": {"zzzzzz": 1}}, "known keys: enabled, client_id"),
    ({**HTTP, "oauth": {3: 1}}, "unknown key of type int in 'oauth'"),
    ({**STDIO, "oauth": {"client_id": "a"}}, "'oauth' is set for a stdio server"),
    ({**HTTP, "oauth": {"enabled": "no"}}, "oauth['enabled'] must be true or false, got str"),
    (
        {**HTTP, "oauth": {"scope": "r"}, "headers": {"authorization": "Bearer x"}},
        "'headers' sends an Authorization header of its own",
    ),
    ({**HTTP, "oauth": {"client_id": ""}}, "oauth['client_id'] must be a non-empty string"),
    ({**HTTP, "oauth": {"scope": 5}}, "oauth['scope'] must be a non-empty string, got int"),
    ({**HTTP, "oauth": {"key_file": "a\0"}}, "oauth['key_file'] must be a non-empty string"),
    ({**HTTP, "oauth": {"grant": "password"}}, "oauth['grant'] must be one of"),
    (
        {**HTTP, "oauth": {"grant": ["x"]}},
        "authorization_code, client_credentials, jwt_bearer, enterprise, device_code, got list",
    ),
    ({**HTTP, "oauth": {"redirect_port": 70000}}, "oauth['redirect_port'] must be an integer"),
    ({**HTTP, "oauth": {"redirect_port": True}}, "from 0 to 65535, got bool"),
    ({**HTTP, "oauth": {"client_secret": "x"}}, "is set without oauth['client_id']"),
    ({**HTTP, "oauth": {"key_file": "/k.pem"}}, "the grant is not 'client_credentials'"),
    (
        {**HTTP, "oauth": {"client_metadata_url": "http://app.example/c"}},
        "not a Client ID Metadata Document URL",
    ),
    ({**HTTP, "oauth": {"assertion_file": "/t"}}, "the grant is not 'jwt_bearer'"),
    ({**HTTP, "oauth": {"assertion_file": ""}}, "oauth['assertion_file'] must be a non-empty"),
    (
        {
            **HTTP,
            "oauth": {
                "grant": "jwt_bearer",
                "assertion_file": "/t",
                "client_id": "w",
                "client_secret": "x",
            },
        },
        "'jwt_bearer' with a client_secret or client_metadata_url",
    ),
    (
        {
            **HTTP,
            "oauth": {
                "grant": "jwt_bearer",
                "assertion_file": "/t",
                "client_metadata_url": "https://app.example/c",
            },
        },
        "'jwt_bearer' with a client_secret or client_metadata_url",
    ),
    (
        {**HTTP, "oauth": {"grant": "jwt_bearer", "assertion_file": "/t", "key_file": "/k"}},
        "the grant is not 'client_credentials'",
    ),
]


@pytest.mark.parametrize(("mapping", "words"), REFUSED)
def test_refused(mapping: dict[str, Any], words: str) -> None:
    with pytest.raises(InvalidSpec) as info:
        Spec.from_mapping(mapping)
    message = str(info.value)
    assert message.startswith("invalid spec: ") and "; spec: {" in message
    assert words in message


def test_refused_when_not_a_mapping() -> None:
    with pytest.raises(InvalidSpec, match="a spec must be a mapping, got list"):
        Spec.from_mapping(["name", "x"])  # type: ignore[arg-type]


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(InvalidSpec, match="'pool_size' must be an integer >= 1"):
        Spec(name="x", command="c", pool_size=0)


# Every place a secret can hide, each combined with every kind of refusal above.
SECRET_PLACES: list[dict[str, Any]] = [
    {"args": ["--token", SECRET]},
    {"env": {"API_KEY": SECRET}},
    {"env": {f"API_KEY={SECRET}": "x"}},  # a value pasted into the name
    {"url": f"https://user:{SECRET}@example.com/mcp"},
    {"url": f"https://{SECRET}@example.com/mcp"},
    {"url": f"https://example.com/mcp?key={SECRET}"},
    {"url": f"https://example.com/mcp#access_token={SECRET}"},
    {"url": f"user:{SECRET}@example.com/mcp"},  # no scheme at all
    {"url": f"ftp://u:{SECRET}@h/?k={SECRET}"},
    {"headers": {"Authorization": f"Bearer {SECRET}"}},
    {"headers": {f"Authorization: Bearer {SECRET}": "x"}},
    {"headers": [f"Authorization: Bearer {SECRET}"]},
    {"env": SECRET},
    {"args": SECRET},
    {"url": {"href": SECRET}},
    {"token": SECRET},  # an unknown field
    {"header": {"Authorization": SECRET}},  # a misspelt field
    {"prices": {"t": {SECRET: 1}}},
    {"cwd": [SECRET]},
    {"oauth": {"client_id": "app", "client_secret": SECRET}},
    {"oauth": {"client_secret": SECRET}},  # refused: no client_id
    {"oauth": {"client_secert": SECRET}},  # a misspelt key
    {"oauth": {"client_id": "app", "client_secret": [SECRET]}},
    {"oauth": {"client_id": "app", "client_secret": SECRET, "grant": "password"}},
    {"oauth": {"client_metadata_url": f"https://app.example/c?k={SECRET}"}},
    {"oauth": SECRET},
]


@pytest.mark.parametrize("place", SECRET_PLACES)
@pytest.mark.parametrize(("base", "_words"), [({**STDIO, "url": None}, ""), *REFUSED])
def test_no_secret_in_any_error(place: dict[str, Any], base: dict[str, Any], _words: str) -> None:
    mapping = {**base, **place}
    try:
        spec = Spec.from_mapping(mapping)
    except InvalidSpec as error:
        assert SECRET not in str(error) and SECRET not in repr(error)
    else:
        assert SECRET not in repr(spec) and SECRET not in str(spec.redacted())
    assert SECRET not in str(redact_mapping(mapping))


def test_repr_is_redacted_and_shows_only_what_was_set() -> None:
    spec = Spec(
        name="gh",
        url=f"https://bot:{SECRET}@api.example.com:8443/mcp?key={SECRET}#{SECRET}",
        headers={"Authorization": f"Bearer {SECRET}"},
        call_timeout=5,
    )
    assert repr(spec) == (
        "Spec(name='gh', url='https://%5Bredacted%5D@api.example.com:8443/mcp?[redacted]"
        "#[redacted]', headers={'Authorization': '[redacted]'}, call_timeout=5.0)"
    )
    stdio = Spec(name="fs", command="npx", args=["-y", SECRET], env={"TOKEN": SECRET})
    assert repr(stdio) == (
        "Spec(name='fs', command='npx', args=['[redacted]', '[redacted]'], "
        "env={'TOKEN': '[redacted]'})"
    )


def test_redacted_is_complete_and_replayable() -> None:
    spec = Spec(name="gh", url=f"https://u:{SECRET}@h/p?q={SECRET}", headers={"A": SECRET})
    full = spec.redacted()
    assert set(full) == {f.name for f in Spec.__dataclass_fields__.values()}
    again = Spec.from_mapping(full)
    assert again.url == "https://%5Bredacted%5D@h/p?[redacted]"
    assert dict(again.headers) == {"A": "[redacted]"}
    assert spec.redacted(include_defaults=False) == {
        "name": "gh",
        "url": "https://%5Bredacted%5D@h/p?[redacted]",
        "headers": {"A": "[redacted]"},
    }


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("https://example.com/mcp", "https://example.com/mcp"),
        ("https://u:p@example.com:1/a/b", "https://%5Bredacted%5D@example.com:1/a/b"),
        ("https://a@b@example.com", "https://%5Bredacted%5D@example.com"),
        ("http://h/p?x=1", "http://h/p?[redacted]"),
        ("http://h/p?", "http://h/p?[redacted]"),
        ("http://h/p#frag?x=1", "http://h/p#[redacted]"),
        ("http://h/p?x#y", "http://h/p?[redacted]#[redacted]"),
        ("http://h/@notuserinfo", "http://h/@notuserinfo"),  # "@" in the path is not userinfo
        ("u:p@h/x", "%5Bredacted%5D@h/x"),
        ("", ""),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


@pytest.mark.parametrize(
    ("mapping", "redacted"),
    [
        ({"args": ("a", "b")}, {"args": ["[redacted]", "[redacted]"]}),
        ({"args": 5}, {"args": "[redacted]"}),
        (
            {"env": {"A": 1, 2: "x"}},
            {"env": {"A": "[redacted]", "[invalid name #1]": "[redacted]"}},
        ),
        ({"headers": None, "url": None}, {"headers": None, "url": None}),
        ({"prices": {"t": 2, "u": [1]}}, {"prices": {"t": 2, "u": "[redacted]"}}),
        ({"prices": 3}, {"prices": "[redacted]"}),
        ({"name": "n", "pool_size": 2, "era": "x"}, {"name": "n", "pool_size": 2, "era": "x"}),
        ({"name": ["n"], "other": "v"}, {"name": "[redacted]", "other": "[redacted]"}),
    ],
)
def test_redact_mapping(mapping: dict[str, Any], redacted: dict[str, Any]) -> None:
    assert redact_mapping(mapping) == redacted


@pytest.mark.parametrize(
    ("mapping", "era", "expected"),
    [
        (STDIO, None, "stateless"),
        (STDIO, "legacy", "stateless"),
        ({**STDIO, "concurrency": "serialized"}, None, "serialized"),
        ({**HTTP, "concurrency": "pooled"}, "modern", "pooled"),
        (HTTP, None, "serialized"),
        (HTTP, "legacy", "serialized"),
        (HTTP, "modern", "stateless"),
        ({**HTTP, "era": "modern"}, None, "stateless"),
        ({**HTTP, "era": "legacy"}, None, "serialized"),
        ({**HTTP, "era": "modern"}, "legacy", "serialized"),  # the negotiated era wins
    ],
)
def test_default_concurrency(mapping: dict[str, Any], era: str | None, expected: str) -> None:
    assert Spec.from_mapping(mapping).default_concurrency(era) == expected


def test_build_layers_fields_on_a_spec_or_a_mapping() -> None:
    base = Spec(name="a", command="srv", env={"K": "v"}, call_timeout=5)
    assert Spec.build(base) is base
    changed = Spec.build(base, call_timeout=9)
    assert (changed.call_timeout, changed.env, changed.command) == (9, {"K": "v"}, "srv")
    assert Spec.build({"name": "b"}, command="x").command == "x"
    assert Spec.build(None, name="c", command="y").name == "c"
    with pytest.raises(InvalidSpec) as info:
        Spec.build(base, url="http://h/")
    assert "both" in str(info.value) and "call_timeout" in str(info.value)
    assert "max_backoff" not in str(info.value)  # only the fields the user set are shown


def test_header_values_must_fit_in_an_http_header() -> None:
    with pytest.raises(InvalidSpec) as info:
        Spec(name="h", url="https://h/mcp", headers={"Authorization": "Bearer s3cr3t-€"})
    assert "cannot carry" in str(info.value) and "s3cr3t" not in str(info.value)
    assert Spec(name="h", url="https://h/mcp", headers={"X": "caf\u00e9"}).headers["X"] == "café"


def test_oauth_is_on_for_url_servers_without_an_authorization_header() -> None:
    assert Spec.from_mapping(HTTP).oauth_enabled
    assert Spec.from_mapping({**HTTP, "oauth": {"scope": "read"}}).oauth_enabled
    assert not Spec.from_mapping({**HTTP, "oauth": {"enabled": False}}).oauth_enabled
    assert not Spec.from_mapping({**HTTP, "headers": {"AUTHORIZATION": "Bearer x"}}).oauth_enabled
    assert not Spec.from_mapping(STDIO).oauth_enabled


def test_the_oauth_client_secret_is_redacted_and_the_rest_kept() -> None:
    oauth = {"client_id": "app", "client_secret": SECRET, "scope": "read", "redirect_port": 9}
    spec = Spec.from_mapping({**HTTP, "oauth": oauth})
    assert isinstance(spec.oauth, MappingProxyType) and spec.oauth["client_secret"] == SECRET
    shown = {**oauth, "client_secret": "[redacted]"}
    assert spec.redacted(include_defaults=False)["oauth"] == shown
    assert SECRET not in repr(spec) and "client_id': 'app'" in repr(spec)
    again = Spec.from_mapping(spec.redacted())
    assert again.oauth == shown
    assert hash(spec) == hash(Spec.from_mapping({**HTTP, "oauth": dict(oauth)}))
    assert redact_mapping({"oauth": {"key_file": ["x"], "enabled": None}}) == {
        "oauth": {"key_file": "[redacted]", "enabled": None}
    }


def test_the_keywords_type_names_every_spec_field_with_its_type() -> None:
    # Client(**fields) is typed by SpecFields: a field added to Spec and not there would be
    # refused by mypy in every program that passes it, and a stale one would be accepted.
    import dataclasses

    from mcp_core import SpecFields

    spec_fields = {field.name: field.type for field in dataclasses.fields(Spec)}
    keywords = {  # a TypedDict keeps its annotations as forward references
        name: getattr(annotation, "__forward_arg__", annotation)
        for name, annotation in SpecFields.__annotations__.items()
    }
    assert keywords == spec_fields
    assert SpecFields.__required_keys__ == frozenset()
    # A group's keywords are the same fields but the two it takes as its own.
    from mcp_core.group import GroupSpecFields

    assert set(GroupSpecFields.__annotations__) == set(spec_fields) - {"name", "fail_fast"}
    assert GroupSpecFields.__required_keys__ == frozenset()
