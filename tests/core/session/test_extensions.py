"""Extension negotiation (SEP-2133): what the client declares, on initialize and on every
2026-07-28 request, what the server declared (Status.extensions), and -32021 naming the
extension a request needs."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core

from ..harness import Harness, HttpHarness

TASKS = "io.modelcontextprotocol/tasks"
MINE = {TASKS: {}, "com.example/my-ext": {"level": 2, "modes": ["a", "b"]}}


@pytest.mark.parametrize(
    ("extensions", "problem"),
    [
        ({"tasks": {}}, "is not 'vendor-prefix/name'"),
        ({"1st.example/x": {}}, "is not 'vendor-prefix/name'"),
        ({"example-/x": {}}, "is not 'vendor-prefix/name'"),
        ({"com.example/-x": {}}, "is not 'vendor-prefix/name'"),
        ({3: {}}, "is not 'vendor-prefix/name'"),
        ({"com.example/x": 3}, "must be a JSON object of settings"),
        ({"com.example/x": {"n": float("nan")}}, "must be a JSON object of settings"),
        ({"com.example/x": {"o": object()}}, "must be a JSON object of settings"),
        (["com.example/x"], "must be a mapping of extension identifiers"),
    ],
)
def test_declared_extensions_are_checked(extensions: Any, problem: str) -> None:
    with pytest.raises(core.InvalidSpec, match=problem):
        core.Spec(name="s", command="x", extensions=extensions)


def test_a_spec_with_extensions_is_shown_and_hashed_as_it_is() -> None:
    one = core.Spec(name="s", command="x", extensions=MINE)
    other = core.Spec(name="s", command="x", extensions=dict(reversed(MINE.items())))
    assert one == other and hash(one) == hash(other)
    shown = one.redacted()["extensions"]
    assert json.loads(json.dumps(shown)) == MINE  # declared to every server: not a secret
    assert core.Spec.from_mapping(one.redacted()) == one
    assert "com.example/my-ext" in repr(one)
    assert core.Spec(name="s", command="x").extensions == {}


def test_legacy_initialize_declares_them_and_status_reads_the_servers() -> None:
    h = Harness(era="legacy", extensions=MINE)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    h.spawned()
    init = h.last_request("initialize")
    assert init["params"]["capabilities"]["extensions"] == MINE
    assert h.machine.status(h.now).extensions is None  # nothing declared yet
    declared = {TASKS: {"poll": True}, "bad-entry": 3, "com.example/other": {}}
    h.answer(
        init["id"],
        {"protocolVersion": "2025-11-25", "capabilities": {"extensions": declared}},
    )
    status = h.result(waiter)
    assert status.extensions == {TASKS: {"poll": True}, "com.example/other": {}}


def test_every_modern_request_carries_them_and_discover_says_the_servers() -> None:
    h = HttpHarness(era="auto", extensions={TASKS: {}})
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready()
    probe = h.request("server/discover")
    meta = h.body(probe)["params"]["_meta"]
    assert meta["io.modelcontextprotocol/clientCapabilities"]["extensions"] == {TASKS: {}}
    h.result_for(
        probe,
        {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"extensions": {"io.modelcontextprotocol/skills": {}}},
        },
    )
    assert h.result(waiter).extensions == {"io.modelcontextprotocol/skills": {}}
    h.take()
    h.call("echo", {})
    body = h.body(h.request("tools/call"))
    caps = body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert caps["extensions"] == {TASKS: {}}


def test_nothing_declared_means_no_extensions_key_and_unknown_stays_none() -> None:
    h = Harness(era="legacy")
    h.connect_legacy()
    assert "extensions" not in json.dumps(h.machine.status(h.now).capabilities)
    assert h.machine.status(h.now).extensions == {}
    modern = Harness(era="modern", extensions={TASKS: {}})
    modern.feed(core.Connect(now=0.0))
    waiter = modern.await_ready()
    modern.spawned()
    assert modern.result(waiter).extensions is None  # the server was not asked


def test_a_missing_required_capability_names_the_extension() -> None:
    h = HttpHarness(era="auto")
    h.connect_http_modern()
    ticket = h.call("research", {})
    post = h.request("tools/call")
    data = {
        "requiredCapabilities": {
            "extensions": {"com.example/my-ext": {}},
            "roots": {},
            "sampling": {"tools": {}, "context": {}},
        }
    }
    h.respond(
        post,
        400,
        {
            "jsonrpc": "2.0",
            "id": h.body(post)["id"],
            "error": {
                "code": -32021,
                "message": "Missing required client capability",
                "data": data,
            },
        },
    )
    error = h.error(ticket)
    assert isinstance(error, core.MissingClientCapability)
    assert isinstance(error, core.JsonRpcError) and error.code == -32021
    assert error.extensions == ("com.example/my-ext",)
    assert error.capabilities == ("roots", "sampling.tools", "sampling.context")
    assert error.message == "Missing required client capability"
    assert str(error) == (
        "the server requires what this client did not declare (extension "
        "com.example/my-ext, roots, sampling.tools, sampling.context); declare an "
        "extension the client supports "
        "with extensions={identifier: settings}"
    )


@pytest.mark.parametrize(
    "data", [None, {"requiredCapabilities": "x"}, {"requiredCapabilities": {}}]
)
def test_a_missing_capability_without_details_still_reads_well(data: object) -> None:
    error = core.MissingClientCapability("no", data)
    assert error.extensions == () and error.capabilities == ()
    assert str(error) == (
        "the server requires what this client did not declare (capabilities it did not name)"
    )
