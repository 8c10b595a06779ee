"""A caller's ``meta`` goes in the request's ``params._meta`` on calls, lists and other
requests, beside the keys the machine sets (``progressToken``, the 2026-07-28
``io.modelcontextprotocol/`` keys), which a caller may not name: that is refused with
``InvalidArguments`` before anything is sent."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_core as core
from tests.core.harness import Harness

MINE = {"com.example/user": "ann", "n": [1, 2]}


def legacy(**fields: Any) -> Harness:
    h = Harness(**fields)
    h.connect_legacy()
    h.take()
    return h


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_meta_rides_on_calls_lists_and_requests(era: str) -> None:
    h = Harness()
    h.connect_legacy() if era == "legacy" else h.connect_modern()
    h.take()
    h.call("echo", {"text": "hi"}, meta=MINE, progress=True)
    call = h.last_request("tools/call")["params"]["_meta"]
    assert call["com.example/user"] == "ann" and call["n"] == [1, 2]
    assert call["progressToken"] == h.last_request("tools/call")["id"]
    assert ("io.modelcontextprotocol/protocolVersion" in call) == (era == "modern")
    t = h.ticket()
    h.feed(core.ListItems(now=h.now, ticket=t, kind="tools", meta=MINE))
    assert h.last_request("tools/list")["params"]["_meta"]["com.example/user"] == "ann"
    h.take()
    h.list_tools(meta=MINE)
    assert h.last_request("tools/list")["params"]["_meta"]["n"] == [1, 2]
    t = h.ticket()
    h.feed(
        core.Request(now=h.now, ticket=t, method="x/custom", params={"a": 1}, raw=True, meta=MINE)
    )
    assert h.last_request("x/custom")["params"] == {"a": 1, "_meta": {**MINE, **_era_meta(h)}}


def _era_meta(h: Harness) -> dict[str, Any]:
    meta = h.last_request("x/custom")["params"]["_meta"]
    return {k: v for k, v in meta.items() if k.startswith("io.modelcontextprotocol/")}


@pytest.mark.parametrize(
    "meta",
    [
        {"progressToken": 1},
        {"io.modelcontextprotocol/clientInfo": {"name": "me"}},
        {"ok": 1, "io.modelcontextprotocol/logLevel": "debug"},
    ],
)
def test_a_key_the_client_sets_is_refused_before_sending(meta: dict[str, Any]) -> None:
    h = legacy()
    for feed in (
        lambda t: core.CallTool(now=h.now, ticket=t, name="echo", meta=meta),
        lambda t: core.ListTools(now=h.now, ticket=t, meta=meta),
        lambda t: core.ListItems(now=h.now, ticket=t, kind="resources", meta=meta),
        lambda t: core.Request(now=h.now, ticket=t, method="ping", meta=meta),
    ):
        t = h.ticket()
        h.feed(feed(t))
        error = h.error(t)
        assert isinstance(error, core.InvalidArguments)
        assert error.path.startswith("_meta[") and "a key the client sets itself" in str(error)
        assert "io.modelcontextprotocol/ keys to the client" in str(error)
    assert h.messages() == [] and h.machine.in_flight == 0


def test_a_cached_list_is_refused_too_and_values_must_be_json() -> None:
    h = legacy()
    t = h.list_tools()
    h.answer(h.last_request("tools/list")["id"], {"tools": []})
    assert h.result(t) == []
    t = h.list_tools(meta={"progressToken": "x"})  # the cache would answer: still refused
    assert isinstance(h.error(t), core.InvalidArguments)
    t = h.list_tools(meta={"when": {1, 2}})
    error = h.error(t)
    assert isinstance(error, core.InvalidArguments) and error.path == "_meta.when"
    t = h.ticket()
    h.feed(core.CallTool(now=h.now, ticket=t, name="echo", meta=["not", "a", "mapping"]))  # type: ignore[arg-type]
    error = h.error(t)
    assert isinstance(error, core.InvalidArguments) and error.problem.startswith(
        "must be a mapping"
    )
