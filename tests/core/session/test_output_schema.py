"""structuredContent checked against the listed tool's outputSchema (2025-06-18 server/tools
§Output Schema: clients "SHOULD validate"), and what is let through with a warning instead:
an unknown dialect, an invalid schema, a network ``$ref`` (never fetched)."""

from __future__ import annotations

import socket
import urllib.request
from typing import Any

import pytest

import mcp_core as core
from tests.core.harness import TEXT_RESULT, Harness

POINT = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
    "required": ["x", "y"],
}


def listed(h: Harness, *tools: dict[str, Any]) -> None:
    """Have the machine list ``tools`` (a fresh tool list)."""
    t = h.list_tools(refresh=True)
    h.answer(h.last_request("tools/list")["id"], {"tools": list(tools)})
    assert len(h.result(t)) == len(tools)
    h.take()


def tool(name: str, output_schema: object = None) -> dict[str, Any]:
    wire: dict[str, Any] = {"name": name, "inputSchema": {"type": "object"}}
    if output_schema is not None:
        wire["outputSchema"] = output_schema
    return wire


def call(h: Harness, name: str, structured: object, **result: Any) -> core.Reply:
    t = h.call(name, {})
    h.answer(
        h.last_request("tools/call")["id"],
        {**TEXT_RESULT, "structuredContent": structured, **result},
    )
    return h.replies[t]


def warnings(h: Harness) -> list[str]:
    return [log.message for log in h.of(core.Log) if log.level == "WARNING"]


@pytest.fixture
def h() -> Harness:
    h = Harness(era="legacy")
    h.connect_legacy()
    return h


def test_a_matching_result_is_returned(h: Harness) -> None:
    listed(h, tool("point", POINT))
    reply = call(h, "point", {"x": 1, "y": 2})
    assert reply.error is None and reply.value.structured_content == {"x": 1, "y": 2}
    assert warnings(h) == []


@pytest.mark.parametrize(
    ("structured", "path", "problem"),
    [
        ({"x": 1, "y": "2"}, "$.y", "'2' is not of type 'integer'"),
        ({"x": 1}, "$", "'y' is a required property"),
        ([1, 2], "$", "is not of type 'object'"),
    ],
)
def test_a_mismatch_is_an_output_validation_error_naming_the_path(
    h: Harness, structured: object, path: str, problem: str
) -> None:
    listed(h, tool("point", POINT))
    reply = call(h, "point", structured)
    assert reply.value is None
    error = reply.error
    assert isinstance(error, core.OutputValidationError)
    assert (error.tool, error.path) == ("point", path)
    assert problem in error.problem
    assert f"at {path}: " in str(error) and "'point'" in str(error)
    assert h.machine.in_flight == 0  # answered and gone: the call is over


def test_a_tool_error_result_is_not_checked(h: Harness) -> None:
    listed(h, tool("point", POINT))
    reply = call(h, "point", {"wrong": True}, isError=True)
    assert reply.error is None and reply.value.is_error


def test_nothing_is_checked_without_a_listed_schema(h: Harness) -> None:
    reply = call(h, "point", {"x": "not listed yet"})
    assert reply.error is None  # the tool list was never fetched
    listed(h, tool("point"))  # listed, but without an outputSchema
    reply = call(h, "point", {"x": "no schema"})
    assert reply.error is None and warnings(h) == []


def test_a_schema_is_compiled_once_per_tool_list(h: Harness, monkeypatch) -> None:
    import jsonschema

    checks: list[object] = []
    real = jsonschema.Draft202012Validator.check_schema

    def counting(schema: Any, *args: Any, **kwargs: Any) -> None:
        checks.append(schema)
        real(schema, *args, **kwargs)

    monkeypatch.setattr(jsonschema.Draft202012Validator, "check_schema", counting)
    listed(h, tool("point", POINT))
    for n in range(3):
        assert call(h, "point", {"x": n, "y": n}).error is None
    assert len(checks) == 1


def test_a_new_tool_list_resets_the_compiled_schemas(h: Harness) -> None:
    listed(h, tool("point", POINT))
    assert call(h, "point", {"x": 1, "y": 2}).error is None
    # The server changed the tool: same name, another schema. The new list is what counts.
    listed(h, tool("point", {"type": "object", "required": ["z"]}))
    error = call(h, "point", {"x": 1, "y": 2}).error
    assert isinstance(error, core.OutputValidationError) and "'z'" in error.problem
    listed(h, tool("point"))  # and now it has none
    assert call(h, "point", {"x": 1, "y": 2}).error is None


def test_a_stale_tool_list_still_gives_the_schema(h: Harness) -> None:
    listed(h, tool("point", POINT))
    h.stdout({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    assert isinstance(call(h, "point", {"x": "1"}).error, core.OutputValidationError)


@pytest.mark.parametrize(
    "dialect",
    ["https://example.com/my-own-dialect", "urn:not-json-schema", 7],
)
def test_an_unknown_dialect_is_let_through_with_a_warning(h: Harness, dialect: object) -> None:
    # 2025-11-25 basic/index §JSON Schema Usage: "MUST handle unsupported dialects gracefully".
    listed(h, tool("point", {**POINT, "$schema": dialect}))
    reply = call(h, "point", {"x": "not checked"})
    assert reply.error is None
    [warning] = warnings(h)
    assert "'point'" in warning and "dialect" in warning and "not checked" in warning
    h.take()
    assert call(h, "point", {"x": "still not checked"}).error is None
    assert warnings(h) == []  # said once per tool list


def test_a_known_older_dialect_is_checked_by_its_own_rules(h: Harness) -> None:
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "exclusiveMaximum": 10}},
    }
    listed(h, tool("n", draft7))
    assert call(h, "n", {"n": 9}).error is None
    error = call(h, "n", {"n": 10}).error
    assert isinstance(error, core.OutputValidationError) and error.path == "$.n"
    assert warnings(h) == []


def test_an_invalid_schema_is_let_through_with_a_warning(h: Harness) -> None:
    listed(h, tool("point", {"type": "objekt"}))
    assert call(h, "point", {"x": 1}).error is None
    [warning] = warnings(h)
    assert "'point' has an invalid output schema" in warning and "not checked" in warning


@pytest.fixture
def no_network(monkeypatch) -> list[str]:
    """Any attempt to reach the network is recorded and fails loudly."""
    attempts: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(repr(args)[:200])
        raise AssertionError("the output schema check touched the network")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def test_a_remote_ref_is_never_fetched_and_let_through(h: Harness, no_network) -> None:
    # 2026-07-28 (SEP-2106): implementations "MUST NOT automatically dereference" a network $ref.
    remote = {
        "type": "object",
        "properties": {"p": {"$ref": "https://schemas.example.com/point.json"}},
    }
    listed(h, tool("remote", remote))
    reply = call(h, "remote", {"p": {"x": 1}})
    assert reply.error is None and reply.value.structured_content == {"p": {"x": 1}}
    assert no_network == []
    [warning] = warnings(h)
    assert "could not check the output of tool 'remote'" in warning
    assert "schemas.example.com" in warning
    # A value the $ref is never reached for is still checked by the rest of the schema.
    error = call(h, "remote", [1]).error
    assert isinstance(error, core.OutputValidationError) and no_network == []


def test_a_local_ref_is_resolved(h: Harness, no_network) -> None:
    schema = {
        "$defs": {"n": {"type": "integer"}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/n"}},
    }
    listed(h, tool("local", schema))
    assert call(h, "local", {"a": 1}).error is None
    error = call(h, "local", {"a": "one"}).error
    assert isinstance(error, core.OutputValidationError) and error.path == "$.a"
    assert no_network == [] and warnings(h) == []
