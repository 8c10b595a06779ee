"""x-mcp-header (2026-07-28 streamable-http, "Custom Headers from Tool Parameters", SEP-2243):
which tool parameters a tools/call mirrors into ``Mcp-Param-{Name}`` headers, how their values
are written, and which tool definitions are invalid. Includes every tool and call of the
conformance suite's ``http-custom-headers`` and ``http-invalid-tool-headers`` scenarios
(0.2.0-alpha.12, see conformance/SCENARIOS.md), judged the way their mocks judge them."""

from __future__ import annotations

import base64
import enum
import math
import re
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mcp_core._transport.tool_headers import ANNOTATION, HEADER_PREFIX, mirror, param_headers

X = ANNOTATION


def prop(kind: object = "string", name: object = "Region", **more: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {X: name, **more}
    if kind is not None:
        schema["type"] = kind
    return schema


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


# --- the suite's http-custom-headers scenario ------------------------------------------------

# tools/list: test_custom_headers (every annotated property, plus float_val and query unannotated)
CUSTOM = obj(
    region=prop("string", "Region"),
    priority=prop("integer", "Priority"),
    verbose=prop("boolean", "Verbose"),
    debug=prop("boolean", "Debug"),
    empty_val=prop("string", "EmptyVal"),
    method_val=prop("string", "Method"),
    float_val={"type": "number"},
    non_ascii_val=prop("string", "NonAscii"),
    whitespace_val=prop("string", "Whitespace"),
    leading_space_val=prop("string", "LeadingSpace"),
    trailing_space_val=prop("string", "TrailingSpace"),
    internal_space_val=prop("string", "InternalSpace"),
    control_char_val=prop("string", "ControlChar"),
    crlf_val=prop("string", "CrLf"),
    tab_val=prop("string", "Tab"),
    query={"type": "string"},
)
CUSTOM_NULL = obj(
    region=prop("string", "Region"),
    priority=prop("integer", "Priority"),
    verbose=prop("boolean", "Verbose"),
    query={"type": "string"},
)
# MCP_CONFORMANCE_CONTEXT toolCalls
CUSTOM_ARGS: dict[str, Any] = {
    "region": "us-west1",
    "priority": 42,
    "verbose": False,
    "debug": True,
    "empty_val": "",
    "method_val": "test-method",
    "float_val": 3.14159,
    "non_ascii_val": "Hello, 世界",
    "whitespace_val": " padded ",
    "leading_space_val": " us-west1",
    "trailing_space_val": "us-west1 ",
    "internal_space_val": "us west 1",
    "control_char_val": "line1\nline2",
    "crlf_val": "line1\r\nline2",
    "tab_val": "\tindented",
    "query": "SELECT * FROM users",
}
CUSTOM_NULL_ARGS: dict[str, Any] = {
    "region": "us-east1",
    "priority": 1,
    "verbose": None,
    "query": "SELECT 1",
}


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def suite_accepts(header: str | None, body: object, kind: str) -> bool:
    """The mock's ``checkParamHeader``: the expected text is ``String(value)`` (booleans
    ``true``/``false``); a text with a character outside 0x20-0x7E or edge whitespace MUST come
    base64-encoded; an encoded header is decoded; integers compare as numbers."""
    if header is None:
        return False
    expected = ("true" if body else "false") if isinstance(body, bool) else str(body)
    unsafe = any(not 32 <= ord(c) <= 126 for c in expected) or expected != expected.strip()
    encoded = re.fullmatch(r"=\?base64\?(.*)\?=", header)
    if unsafe and encoded is None:
        return False
    got = base64.b64decode(encoded.group(1)).decode() if encoded else header
    if kind == "integer":
        return float(got) == float(expected)
    return got == expected


def test_the_suites_custom_headers_tool() -> None:
    assert param_headers(CUSTOM) == (
        ("Region", ("region",)),
        ("Priority", ("priority",)),
        ("Verbose", ("verbose",)),
        ("Debug", ("debug",)),
        ("EmptyVal", ("empty_val",)),
        ("Method", ("method_val",)),
        ("NonAscii", ("non_ascii_val",)),
        ("Whitespace", ("whitespace_val",)),
        ("LeadingSpace", ("leading_space_val",)),
        ("TrailingSpace", ("trailing_space_val",)),
        ("InternalSpace", ("internal_space_val",)),
        ("ControlChar", ("control_char_val",)),
        ("CrLf", ("crlf_val",)),
        ("Tab", ("tab_val",)),
    )


def test_the_suites_custom_headers_call() -> None:
    designated = param_headers(CUSTOM)
    assert not isinstance(designated, str)
    headers = mirror(CUSTOM_ARGS, designated)
    assert headers == [
        ("Mcp-Param-Region", "us-west1"),
        ("Mcp-Param-Priority", "42"),
        ("Mcp-Param-Verbose", "false"),
        ("Mcp-Param-Debug", "true"),
        ("Mcp-Param-EmptyVal", "=?base64??="),  # the mock decodes it back to ""
        ("Mcp-Param-Method", "test-method"),  # not Mcp-Method
        ("Mcp-Param-NonAscii", "=?base64?SGVsbG8sIOS4lueVjA==?="),  # the spec's own example
        ("Mcp-Param-Whitespace", "=?base64?IHBhZGRlZCA=?="),  # the spec's own example
        ("Mcp-Param-LeadingSpace", b64(" us-west1")),
        ("Mcp-Param-TrailingSpace", b64("us-west1 ")),
        ("Mcp-Param-InternalSpace", "us west 1"),  # plain: inner spaces are fine
        ("Mcp-Param-ControlChar", "=?base64?bGluZTEKbGluZTI=?="),  # the spec's own example
        ("Mcp-Param-CrLf", b64("line1\r\nline2")),
        ("Mcp-Param-Tab", b64("\tindented")),
    ]
    # Every check the mock makes: each annotated value as it expects it (the ids of
    # sep-2243-client-mirrors-designated-params, -encode-values and -base64-unsafe) ...
    sent = {name.lower(): value for name, value in headers}
    kinds = {k: v["type"] for k, v in CUSTOM["properties"].items()}
    for name, (key,) in designated:
        assert suite_accepts(sent.get(f"mcp-param-{name.lower()}"), CUSTOM_ARGS[key], kinds[key])
    # ... nothing for the unannotated number and string (ClientCustomHeaderNoMirror*) ...
    assert "mcp-param-floatval" not in sent and "mcp-param-query" not in sent
    # ... and at least one Mcp-Param-* header (sep-2243-client-supports-custom-headers).
    assert headers and all(name.startswith(HEADER_PREFIX) for name, _ in headers)


def test_the_suites_null_call_omits_the_header() -> None:
    designated = param_headers(CUSTOM_NULL)
    assert not isinstance(designated, str)
    # sep-2243-client-omit-null: no Mcp-Param-Verbose for "verbose": null
    assert mirror(CUSTOM_NULL_ARGS, designated) == [
        ("Mcp-Param-Region", "us-east1"),
        ("Mcp-Param-Priority", "1"),
    ]


# --- the suite's http-invalid-tool-headers scenario ------------------------------------------

# tool name -> (its inputSchema, the check that fails if it is called, what the reason names)
INVALID_TOOLS: dict[str, tuple[dict[str, Any], str, str]] = {
    "invalid_empty_header": (
        obj(value=prop("string", "")),
        "sep-2243-x-mcp-header-not-empty",
        "is empty",
    ),
    "invalid_object_header": (
        obj(data=prop("object", "Data")),
        "sep-2243-x-mcp-header-primitive-only",
        "of type 'object'",
    ),
    "invalid_array_header": (
        obj(items=prop("array", "Items", items={"type": "string"})),
        "sep-2243-x-mcp-header-primitive-only",
        "of type 'array'",
    ),
    "invalid_null_header": (
        obj(nil=prop("null", "Nil")),
        "sep-2243-x-mcp-header-primitive-only",
        "of type 'null'",
    ),
    "invalid_number_header": (
        obj(score=prop("number", "Score")),
        "sep-2243-x-mcp-header-primitive-only",
        "of type 'number'",
    ),
    "invalid_duplicate_same_case": (
        obj(field1=prop("string", "Region"), field2=prop("string", "Region")),
        "sep-2243-x-mcp-header-unique",
        "'Region' at '/properties/field2' repeats the one at '/properties/field1'",
    ),
    "invalid_duplicate_diff_case": (
        obj(field1=prop("string", "MyField"), field2=prop("string", "myfield")),
        "sep-2243-x-mcp-header-unique",
        "'myfield' at '/properties/field2' repeats the one at '/properties/field1'",
    ),
    "invalid_space_in_name": (
        obj(value=prop("string", "My Region")),
        "sep-2243-x-mcp-header-charset",
        "contains a space",
    ),
    "invalid_colon_in_name": (
        obj(value=prop("string", "Region:Primary")),
        "sep-2243-x-mcp-header-charset",
        "contains a colon",
    ),
    "invalid_non_ascii_name": (
        obj(value=prop("string", "Région")),
        "sep-2243-x-mcp-header-charset",
        "contains a non-ASCII character",
    ),
    "invalid_control_char_name": (
        obj(value=prop("string", "Region\t1")),
        "sep-2243-x-mcp-header-charset",
        "'Region\\t1' at '/properties/value' contains a control character",
    ),
}


@pytest.mark.parametrize("tool", sorted(INVALID_TOOLS))
def test_the_suites_invalid_tools_are_refused(tool: str) -> None:
    schema, _check, reason = INVALID_TOOLS[tool]
    problem = param_headers(schema)
    assert isinstance(problem, str) and reason in problem and problem.startswith(X)


def test_the_suites_valid_tool_is_kept() -> None:
    # sep-2243-client-reject-invalid-tool: valid_tool must stay listed (and be called).
    schema = {**obj(region=prop("string", "Region")), "required": ["region"]}
    assert param_headers(schema) == (("Region", ("region",)),)
    assert mirror({"region": "x"}, (("Region", ("region",)),)) == [("Mcp-Param-Region", "x")]


# --- what designates, and what is refused ----------------------------------------------------


def test_the_spec_example() -> None:
    execute_sql = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "description": "The region", X: "Region"},
            "query": {"type": "string", "description": "The SQL query to execute"},
        },
        "required": ["region", "query"],
    }
    designated = param_headers(execute_sql)
    assert designated == (("Region", ("region",)),)
    args = {"region": "us-west1", "query": "SELECT * FROM users"}
    assert mirror(args, designated) == [("Mcp-Param-Region", "us-west1")]


@pytest.mark.parametrize(
    "schema",
    [
        None,
        [],
        "object",
        True,
        {},
        {"type": "object"},
        {"type": "object", "properties": []},  # not a map: nothing below it
        {"properties": {"a": True, "b": False, "c": None}},  # boolean and junk subschemas
        {"$defs": ["not", "a", "map"], "items": True, "allOf": [True, 3]},
        {"properties": {"a": {"type": "string"}}},
        # an "x-mcp-header" key in instance data is no annotation
        {"properties": {"a": {"type": "object", "default": {X: "A"}, "const": {X: "A"}}}},
        {"properties": {"a": {"enum": [{X: "A"}], "examples": [{X: "A"}]}}},
        {"x-unknown-keyword": {X: "A"}},
        # nor is a property named "x-mcp-header"
        {"properties": {X: {"type": "string"}}},
        {"dependencies": {"a": ["b", "c"]}},  # draft-07 property dependencies: not schemas
    ],
)
def test_schemas_that_designate_nothing(schema: object) -> None:
    assert param_headers(schema) == ()


def test_nested_properties_and_every_primitive_type() -> None:
    schema = obj(
        a=prop("integer", "A"),
        nested=obj(b=prop("boolean", "B"), deeper=obj(c=prop("string", "C"))),
        other=obj(),
    )
    assert param_headers(schema) == (
        ("A", ("a",)),
        ("B", ("nested", "b")),
        ("C", ("nested", "deeper", "c")),
    )


@pytest.mark.parametrize(
    "name",
    ["x", "X-Tenant_ID.v2", "!#$%&'*+-.^_`|~", "0", "a" * 300],
)
def test_names_that_are_tokens(name: str) -> None:
    assert param_headers(obj(v=prop("string", name))) == ((name, ("v",)),)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "is empty"),
        ("Region\r", "contains a control character"),
        ("Re\ngion", "contains a control character"),
        ("Region\x00", "contains a control character"),
        ("Region\x7f", "contains a control character"),
        ("Région", "contains a non-ASCII character"),
        ("Region\x85", "contains a non-ASCII character"),
        ("地域", "contains a non-ASCII character"),
        (" Region", "contains a space"),
        ("Region:", "contains a colon"),
        ("a/b", "contains a character not allowed in an HTTP header name"),
        ("(x)", "contains a character not allowed in an HTTP header name"),
        ("a@b", "contains a character not allowed in an HTTP header name"),
        ('a"b', "contains a character not allowed in an HTTP header name"),
        ("a,b", "contains a character not allowed in an HTTP header name"),
        ("a=b", "contains a character not allowed in an HTTP header name"),
    ],
)
def test_names_that_are_refused(name: str, reason: str) -> None:
    problem = param_headers(obj(v=prop("string", name)))
    assert isinstance(problem, str) and problem.endswith(reason)


@pytest.mark.parametrize(
    ("value", "kind"), [(5, "int"), (None, "NoneType"), (True, "bool"), (["A"], "list")]
)
def test_an_annotation_that_is_not_a_string(value: object, kind: str) -> None:
    assert param_headers(obj(v=prop("string", value))) == (
        f"{X} at '/properties/v' is a {kind}, not a string"
    )


@pytest.mark.parametrize(
    ("property_schema", "reason"),
    [
        ({X: "V"}, "with no 'type'"),
        ({X: "V", "$ref": "#/$defs/region"}, "with no 'type'"),
        ({X: "V", "enum": ["a", "b"]}, "with no 'type'"),
        ({X: "V", "type": "number"}, "of type 'number'"),
        ({X: "V", "type": "String"}, "of type 'String'"),
        ({X: "V", "type": ["string", "null"]}, "whose 'type' is ['string', 'null']"),
        ({X: "V", "type": ["integer"]}, "whose 'type' is ['integer']"),
        ({X: "V", "type": {"x": 1}}, "whose 'type' is {'x': 1}"),
        ({X: "V", "type": 7}, "whose 'type' is 7"),
    ],
)
def test_types_that_are_refused(property_schema: dict[str, Any], reason: str) -> None:
    problem = param_headers(obj(v=property_schema))
    assert problem == (
        f"{X} 'V' at '/properties/v' is on a property {reason}: only 'string', 'integer' "
        "and 'boolean' may be mirrored"
    )


OFF_THE_CHAIN = "is not on a property reachable from the root through 'properties' alone"


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({X: "Root", "type": "string"}, "the schema root"),
        ({"type": "array", "items": prop()}, "'/items'"),
        ({"items": [{"type": "string"}, prop()]}, "'/items/1'"),  # draft-07 tuple form
        ({"prefixItems": [prop()]}, "'/prefixItems/0'"),
        ({"additionalItems": prop()}, "'/additionalItems'"),
        ({"contains": prop()}, "'/contains'"),
        ({"unevaluatedItems": prop()}, "'/unevaluatedItems'"),
        ({"additionalProperties": prop()}, "'/additionalProperties'"),
        ({"unevaluatedProperties": prop()}, "'/unevaluatedProperties'"),
        ({"propertyNames": prop()}, "'/propertyNames'"),
        ({"contentSchema": prop()}, "'/contentSchema'"),
        ({"not": prop()}, "'/not'"),
        ({"anyOf": [{"type": "object"}, prop()]}, "'/anyOf/1'"),
        ({"oneOf": [prop()]}, "'/oneOf/0'"),
        ({"allOf": [obj(a=prop())]}, "'/allOf/0/properties/a'"),
        ({"if": prop()}, "'/if'"),
        ({"then": obj(a=prop())}, "'/then/properties/a'"),
        ({"else": prop()}, "'/else'"),
        ({"$defs": {"region": prop()}}, "'/$defs/region'"),
        ({"definitions": {"region": prop()}}, "'/definitions/region'"),
        ({"patternProperties": {"^r": prop()}}, "'/patternProperties/^r'"),
        ({"dependentSchemas": {"a": obj(b=prop())}}, "'/dependentSchemas/a/properties/b'"),
        ({"dependencies": {"a": obj(b=prop())}}, "'/dependencies/a/properties/b'"),
        # a properties chain that passed through an array keyword stays off the chain
        (
            obj(list={"type": "array", "items": obj(a=prop())}),
            "'/properties/list/items/properties/a'",
        ),
        # JSON Pointer escaping of the keys (RFC 6901)
        (obj(**{"a/b~c": {"items": prop()}}), "'/properties/a~1b~0c/items'"),
    ],
)
def test_an_annotation_off_the_properties_chain(schema: dict[str, Any], where: str) -> None:
    assert param_headers(schema) == f"{X} at {where} {OFF_THE_CHAIN}"


def test_the_whole_tool_is_invalid_when_one_annotation_is() -> None:
    schema = {**obj(region=prop("string", "Region")), "$defs": {"x": prop("string", "Other")}}
    assert param_headers(schema) == f"{X} at '/$defs/x' {OFF_THE_CHAIN}"


def test_names_are_unique_across_nesting_levels() -> None:
    schema = obj(region=prop("string", "Region"), nested=obj(region=prop("string", "REGION")))
    assert param_headers(schema) == (
        f"{X} 'REGION' at '/properties/nested/properties/region' repeats the one at "
        "'/properties/region' (names are compared case-insensitively)"
    )


def test_reasons_are_printable_and_short() -> None:
    name = "\r\nInjected: yes" + "x" * 500
    problem = param_headers(obj(**{"k\n" * 200: prop("string", name)}))
    assert isinstance(problem, str)
    assert "\r" not in problem and "\n" not in problem  # the names come quoted with repr
    assert problem.endswith("contains a control character")
    assert len(problem) < 600 and "..." in problem


def test_a_very_deep_schema_needs_no_recursion() -> None:
    depth = 5000
    schema: dict[str, Any] = prop("string", "Deep")
    for _ in range(depth):
        schema = obj(p=schema)
    assert param_headers(schema) == (("Deep", ("p",) * depth),)
    off: dict[str, Any] = prop("string", "Deep")
    for _ in range(depth):
        off = {"items": off}
    problem = param_headers(off)
    assert isinstance(problem, str) and problem.endswith(OFF_THE_CHAIN)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["properties", "items", "anyOf", "$defs", "type", X, "not", "a", "Region"]
            )
            | st.text(max_size=3),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@given(JSON)
def test_any_json_gets_an_answer(schema: object) -> None:
    answer = param_headers(schema)
    if isinstance(answer, str):
        assert answer.startswith(X)
        return
    names = [name for name, _ in answer]
    assert len({n.lower() for n in names}) == len(names)
    assert all(re.fullmatch(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", n) for n in names)
    assert all(path for _, path in answer)


# --- the values a tools/call mirrors ---------------------------------------------------------


class Level(enum.IntEnum):
    HIGH = 3


REGION = (("Region", ("region",)),)
NESTED = (("Tenant", ("scope", "tenant")),)


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("us-west1", "us-west1"),
        ("", "=?base64??="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),  # the spec's example
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),  # the spec's example
        (True, "true"),
        (False, "false"),
        (42, "42"),
        (-7, "-7"),
        (0, "0"),
        (2**53 - 1, "9007199254740991"),
        (2**64, "18446744073709551616"),  # beyond the safe range: still what the body says
        (Level.HIGH, "3"),
        (5.0, "5"),  # an integer to JSON Schema
        (-0.0, "0"),
    ],
)
def test_values(value: object, header: str) -> None:
    assert mirror({"region": value}, REGION) == [("Mcp-Param-Region", header)]


@pytest.mark.parametrize(
    "arguments",
    [
        None,
        {},
        {"region": None},  # "Parameter value is null: Client MUST omit the header"
        {"other": "x"},  # "Parameter not in arguments: Client MUST omit the header"
        {"region": 3.5},
        {"region": math.inf},
        {"region": math.nan},
        {"region": ["a"]},
        {"region": {"a": 1}},
        {"region": 10**5000},  # longer than Python writes an int
    ],
)
def test_values_without_a_header(arguments: dict[str, Any] | None) -> None:
    assert mirror(arguments, REGION) == []


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        ({"scope": {"tenant": "acme"}}, [("Mcp-Param-Tenant", "acme")]),
        ({"scope": {"tenant": None}}, []),
        ({"scope": {}}, []),
        ({"scope": "acme"}, []),  # the path meets a non-object: no value there
        ({"scope": ["acme"]}, []),
        ({"tenant": "acme"}, []),  # only the exact path counts
    ],
)
def test_values_at_a_nested_path(arguments: dict[str, Any], headers: list[Any]) -> None:
    assert mirror(arguments, NESTED) == headers


def test_headers_keep_the_designated_order_and_names() -> None:
    designated = (("b", ("b",)), ("A", ("a",)), ("Method", ("m",)))
    assert mirror({"a": 1, "b": True, "m": "x"}, designated) == [
        ("Mcp-Param-b", "true"),
        ("Mcp-Param-A", "1"),
        ("Mcp-Param-Method", "x"),
    ]


@given(st.text())
def test_any_string_reaches_the_server_intact(value: str) -> None:
    assume(not value.endswith("\n"))  # see test_a_value_ending_in_a_line_feed_is_encoded
    [(name, header)] = mirror({"region": value}, REGION)
    assert name == "Mcp-Param-Region"
    assert re.fullmatch(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?|", header)
    encoded = re.fullmatch(r"=\?base64\?(.*)\?=", header)
    assert (base64.b64decode(encoded.group(1)).decode() if encoded else header) == value
    assert suite_accepts(header, value, "string")


def test_a_value_ending_in_a_line_feed_is_encoded() -> None:
    assert mirror({"region": "us-west1\n"}, REGION) == [("Mcp-Param-Region", b64("us-west1\n"))]


def test_a_value_with_a_lone_surrogate_does_not_raise() -> None:
    [(_, header)] = mirror({"region": "x\udc80"}, REGION)
    assert header.startswith("=?base64?")
