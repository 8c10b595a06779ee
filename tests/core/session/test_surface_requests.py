"""The caller surface beyond tools: the lists (paged, cached, bounded by ttlMs, dropped on
list_changed), any request (its model, raw, _meta), capability checks, the log level, ping,
legacy subscriptions, RootsChanged and what Status says about the server."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_core as core
from tests.core.harness import Harness, HttpHarness

LOG_LEVEL = "io.modelcontextprotocol/logLevel"
VERSION = "io.modelcontextprotocol/protocolVersion"
ALL = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "completions": {},
    "logging": {},
}


# --- sessions with the capabilities a test needs ----------------------------------------------


def open_legacy(
    h: Harness, capabilities: dict[str, Any] = ALL, instructions: str | None = None
) -> None:
    """The process is up (again): complete initialize with ``capabilities``."""
    h.spawned()
    result: dict[str, Any] = {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "serverInfo": {"name": "fake", "version": "1"},
    }
    if instructions is not None:
        result["instructions"] = instructions
    h.answer(h.last_request("initialize")["id"], result)


def legacy(
    capabilities: dict[str, Any] = ALL,
    *,
    handlers: tuple[str, ...] = (),
    instructions: str | None = None,
    **fields: Any,
) -> Harness:
    h = Harness(era="legacy", **fields)
    h.machine = core.SessionMachine(h.spec, handlers=handlers)
    h.feed(core.Connect(now=h.now))
    open_legacy(h, capabilities, instructions)
    assert h.machine.state == "ready"
    h.take()
    return h


def modern(
    capabilities: dict[str, Any] = ALL,
    *,
    handlers: tuple[str, ...] = (),
    instructions: str | None = None,
) -> Harness:
    h = Harness()
    h.machine = core.SessionMachine(h.spec, handlers=handlers)
    h.feed(core.Connect(now=h.now))
    h.spawned()
    result: dict[str, Any] = {"supportedVersions": ["2026-07-28"], "capabilities": capabilities}
    if instructions is not None:
        result["instructions"] = instructions
    h.answer(h.last_request("server/discover")["id"], result)
    assert h.machine.status(h.now).era == "modern"
    h.take()
    return h


def crash(h: Harness) -> None:
    """The server process dies; the retry is due and a new one spawned."""
    h.exited(1)
    h.fire_due()
    assert h.of(core.Spawn)
    h.take()


def written(h: Harness) -> list[str]:
    return [m.get("method", "(response)") for m in h.messages()]


def request(h: Harness, method: str, params: dict[str, Any] | None = None, **kw: Any) -> int:
    t = h.ticket()
    h.feed(core.Request(now=h.now, ticket=t, method=method, params=params, **kw))
    return t


def list_items(h: Harness, kind: str, **kw: Any) -> int:
    t = h.ticket()
    h.feed(core.ListItems(now=h.now, ticket=t, kind=kind, **kw))
    return t


def subscribe(h: Harness, uri: str) -> int:
    t = h.ticket()
    h.feed(core.Subscribe(now=h.now, ticket=t, uri=uri))
    return t


def unsubscribe(h: Harness, uri: str) -> int:
    t = h.ticket()
    h.feed(core.Unsubscribe(now=h.now, ticket=t, uri=uri))
    return t


def notify(h: Harness, method: str, params: dict[str, Any] | None = None) -> None:
    h.stdout({"jsonrpc": "2.0", "method": method, "params": params or {}})


def logs(h: Harness, level: str) -> list[str]:
    return [log.message for log in h.of(core.Log) if log.level == level]


# --- lists -------------------------------------------------------------------------------------

# kind -> (method, result key, two wire items, the two models)
KINDS: dict[str, tuple[str, str, list[dict[str, Any]], list[object]]] = {
    "resources": (
        "resources/list",
        "resources",
        [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b", "name": "b", "size": 2}],
        [
            core.Resource(uri="file:///a", name="a"),
            core.Resource(uri="file:///b", name="b", size=2),
        ],
    ),
    "resource_templates": (
        "resources/templates/list",
        "resourceTemplates",
        [{"uriTemplate": "file:///{p}", "name": "f"}, {"uriTemplate": "db://{t}", "name": "d"}],
        [
            core.ResourceTemplate(uri_template="file:///{p}", name="f"),
            core.ResourceTemplate(uri_template="db://{t}", name="d"),
        ],
    ),
    "prompts": (
        "prompts/list",
        "prompts",
        [{"name": "review", "arguments": [{"name": "diff", "required": True}]}, {"name": "x"}],
        [
            core.Prompt(
                name="review", arguments=(core.PromptArgument(name="diff", required=True),)
            ),
            core.Prompt(name="x"),
        ],
    ),
    "tools": (
        "tools/list",
        "tools",
        [{"name": "a", "inputSchema": {}}, {"name": "b", "inputSchema": {}}],
        [core.Tool(name="a", input_schema={}), core.Tool(name="b", input_schema={})],
    ),
}


def fetch(h: Harness, kind: str, *pages: dict[str, Any], **kw: Any) -> int:
    """Ask for list ``kind`` and answer its requests with ``pages`` in turn."""
    method = KINDS[kind][0]
    t = list_items(h, kind, **kw)
    for page in pages:
        h.answer(h.last_request(method)["id"], page)
    return t


def fetches(h: Harness, kind: str, **kw: Any) -> bool:
    """Whether asking for list ``kind`` now goes to the server (else: from the cache); the
    caller is answered either way."""
    method, key, wire, models = KINDS[kind]
    h.take()
    t = list_items(h, kind, **kw)
    sent = [m for m in h.messages() if m.get("method") == method]
    if sent:
        h.answer(sent[-1]["id"], {key: wire})
    assert h.result(t) == models
    return bool(sent)


@pytest.mark.parametrize("kind", ["resources", "resource_templates", "prompts", "tools"])
def test_each_list_is_paged_then_served_from_its_cache(kind: str) -> None:
    method, key, wire, models = KINDS[kind]
    h = legacy()
    t = list_items(h, kind)
    first = h.last_request(method)
    assert first["params"] == {}
    h.take()
    h.answer(first["id"], {key: wire[:1], "nextCursor": "page-2"})
    second = h.last_request(method)
    assert second["params"] == {"cursor": "page-2"}
    assert t not in h.replies
    h.answer(second["id"], {key: wire[1:], "nextCursor": None})
    assert h.result(t) == models
    assert not fetches(h, kind)  # cached
    assert fetches(h, kind, refresh=True)
    assert not fetches(h, kind)


def test_list_items_of_tools_shares_the_tool_list_cache() -> None:
    h = legacy()
    t = h.list_tools()
    h.answer(h.last_request("tools/list")["id"], {"tools": KINDS["tools"][2]})
    assert h.result(t) == KINDS["tools"][3]
    assert not fetches(h, "tools")
    assert h.machine.status(h.now).tools == 2


def test_status_counts_tools_only() -> None:
    h = legacy()
    fetch(h, "resources", {"resources": KINDS["resources"][2]})
    assert h.machine.status(h.now).tools is None


@pytest.mark.parametrize(
    ("note", "dropped"),
    [
        # 2025-11-25 server/resources: one notification for the resources and the templates
        ("notifications/resources/list_changed", {"resources", "resource_templates"}),
        ("notifications/prompts/list_changed", {"prompts"}),
        ("notifications/tools/list_changed", {"tools"}),
    ],
)
def test_list_changed_drops_its_own_lists_only(note: str, dropped: set[str]) -> None:
    h = legacy()
    for kind in KINDS:
        assert fetches(h, kind)
    notify(h, note)
    assert {kind for kind in KINDS if fetches(h, kind)} == dropped
    assert {kind for kind in KINDS if fetches(h, kind)} == set()  # cached again


def test_a_list_fetched_across_list_changed_is_answered_but_not_cached() -> None:
    method, key, wire, models = KINDS["prompts"]
    h = legacy()
    t = list_items(h, "prompts")
    page = h.last_request(method)
    notify(h, "notifications/prompts/list_changed")
    h.answer(page["id"], {key: wire})
    assert h.result(t) == models  # what the server said, to the one who asked
    assert fetches(h, "prompts")  # but stale: not served to the next caller


@pytest.mark.parametrize(
    ("page", "problem"),
    [
        ({}, "'resources' is missing or not a list"),
        ({"resources": {"uri": "u"}}, "'resources' is missing or not a list"),
        ({"resources": [{"name": "no uri"}]}, "resource.uri must be a string, got missing"),
        ({"resources": [{"uri": "u", "size": "big"}]}, "resource 'u'.size must be an integer"),
    ],
)
def test_a_bad_page_fails_the_list_naming_the_problem(page: dict[str, Any], problem: str) -> None:
    h = legacy()
    t = fetch(h, "resources", page)
    error = h.error(t)
    assert isinstance(error, core.InvalidResponse) and "resources/list" in str(error)
    assert problem in str(error)
    assert fetches(h, "resources")  # nothing was cached


def test_a_repeated_cursor_stops_paging_with_a_warning() -> None:
    _, key, wire, models = KINDS["resource_templates"]
    h = legacy()
    t = fetch(
        h,
        "resource_templates",
        {key: wire[:1], "nextCursor": "again"},
        {key: wire[1:], "nextCursor": "again"},
    )
    assert h.result(t) == models
    assert logs(h, "WARNING") == ["resources/templates/list repeated a cursor; stopped paging"]


# --- ttlMs (2026-07-28 server/utilities/caching) ------------------------------------------------


def at(h: Harness, now: float) -> Harness:
    h.now = now
    return h


def test_a_modern_list_is_served_for_its_ttl_then_fetched_again() -> None:
    _, key, wire, _ = KINDS["resources"]
    h = modern()
    fetch(h, "resources", {key: wire, "ttlMs": 5000})
    assert not fetches(at(h, 4.99), "resources")
    assert fetches(at(h, 5.0), "resources")  # answered without ttlMs: "treat as 0"
    assert fetches(at(h, 5.0), "resources")


def test_the_shortest_ttl_of_the_pages_counts() -> None:
    _, key, wire, models = KINDS["prompts"]
    h = modern()
    t = fetch(
        h,
        "prompts",
        {key: wire[:1], "nextCursor": "2", "ttlMs": 60_000},
        {key: wire[1:], "ttlMs": 2000},
    )
    assert h.result(t) == models
    assert not fetches(at(h, 1.9), "prompts")
    assert fetches(at(h, 2.0), "prompts")


@pytest.mark.parametrize("ttl", [0, -5000, True, "5000", None])
def test_a_modern_list_without_a_usable_ttl_is_not_cached(ttl: object) -> None:
    _, key, wire, models = KINDS["tools"]
    h = modern()
    t = fetch(h, "tools", {key: wire, "ttlMs": ttl})
    assert h.result(t) == models
    assert fetches(h, "tools")  # at the same instant: absent, negative or zero means 0
    assert h.machine.status(h.now).tools == 2  # the list as last fetched is still known


def test_a_legacy_list_without_ttl_lives_until_it_changes() -> None:
    h = legacy()
    fetch(h, "prompts", {"prompts": KINDS["prompts"][2]})
    assert not fetches(at(h, 1e6), "prompts")


def test_a_legacy_server_that_gives_a_ttl_is_held_to_it() -> None:
    h = legacy()
    fetch(h, "prompts", {"prompts": KINDS["prompts"][2], "ttlMs": 1000})
    assert not fetches(at(h, 0.5), "prompts")
    assert fetches(at(h, 1.0), "prompts")


# --- Request: each method, on each era ---------------------------------------------------------

READ = {"contents": [{"uri": "file:///a", "text": "hello"}, {"uri": "file:///b", "blob": "aGk="}]}
PROMPT = {"messages": [{"role": "user", "content": {"type": "text", "text": "review"}}]}

REQUESTS: list[tuple[str, dict[str, Any], dict[str, Any], object]] = [
    (
        "resources/read",
        {"uri": "file:///a"},
        READ,
        core.ReadResourceResult(
            contents=(
                core.ResourceContents(uri="file:///a", text="hello"),
                core.ResourceContents(uri="file:///b", blob=b"hi"),
            )
        ),
    ),
    (
        "prompts/get",
        {"name": "review", "arguments": {"diff": "x"}},
        PROMPT,
        core.GetPromptResult(
            messages=(core.PromptMessage(role="user", content=core.TextContent(text="review")),)
        ),
    ),
    (
        "completion/complete",
        {"ref": core.PromptRef("review").to_wire(), "argument": {"name": "diff", "value": "a"}},
        {"completion": {"values": ["ab", "ac"], "total": 2}},
        core.Completion(values=("ab", "ac"), total=2),
    ),
    (
        "completion/complete",
        {"ref": core.ResourceRef("file:///{p}").to_wire(), "argument": {"name": "p", "value": ""}},
        {"completion": {"values": [], "hasMore": True}},
        core.Completion(values=(), has_more=True),
    ),
    ("x-vendor/stats", {"since": 3}, {"count": 7, "extra": [1]}, {"count": 7, "extra": [1]}),
]


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize(("method", "params", "result", "value"), REQUESTS)
def test_a_request_gives_its_model(
    era: str, method: str, params: dict[str, Any], result: dict[str, Any], value: object
) -> None:
    h = legacy() if era == "legacy" else modern()
    t = request(h, method, params)
    sent = h.last_request(method)
    meta = sent["params"].pop("_meta", {})
    assert sent["params"] == params
    assert (meta.get(VERSION) == "2026-07-28") == (era == "modern")
    answer = {"resultType": "complete", **result} if era == "modern" else result
    h.answer(sent["id"], answer)
    assert h.result(t) == (answer if isinstance(value, dict) else value)  # else: as received
    assert h.machine.in_flight == 0


@pytest.mark.parametrize(("method", "params", "result", "value"), REQUESTS)
def test_raw_gives_the_result_as_received(
    method: str, params: dict[str, Any], result: dict[str, Any], value: object
) -> None:
    h = legacy()
    t = request(h, method, params, raw=True)
    h.answer(h.last_request(method)["id"], result)
    assert h.result(t) == result


@pytest.mark.parametrize(
    ("method", "params", "result", "problem"),
    [
        ("resources/read", {"uri": "u"}, {"contents": [{"uri": "u"}]}, "exactly one of text"),
        ("resources/read", {"uri": "u"}, {"contents": [{"uri": "u", "blob": "!"}]}, "base64"),
        ("prompts/get", {"name": "p"}, {"messages": None}, "messages must be an array"),
        ("completion/complete", {}, {"completion": {"values": [1]}}, "strings only"),
    ],
)
def test_a_result_that_cannot_be_read_is_invalid_response(
    method: str, params: dict[str, Any], result: dict[str, Any], problem: str
) -> None:
    h = legacy()
    t = request(h, method, params)
    h.answer(h.last_request(method)["id"], result)
    error = h.error(t)
    assert isinstance(error, core.InvalidResponse) and method in str(error)
    assert problem in str(error)
    # raw=True: the same answer is the caller's to read
    t = request(h, method, params, raw=True)
    h.answer(h.last_request(method)["id"], result)
    assert h.result(t) == result


def test_a_request_error_and_timeout_name_the_method() -> None:
    h = legacy(call_timeout=2.0)
    t = request(h, "resources/read", {"uri": "file:///missing"})
    h.answer_error(h.last_request("resources/read")["id"], -32002, "Resource not found")
    error = h.error(t)
    assert isinstance(error, core.JsonRpcError) and error.code == -32002
    h.take()
    t = request(h, "prompts/get", {"name": "slow"}, timeout=0.5)
    sent = h.last_request("prompts/get")
    h.advance(0.5)
    error = h.error(t)
    assert isinstance(error, core.RequestTimeout) and "prompts/get" in str(error)
    cancel = [m for m in h.messages() if m.get("method") == "notifications/cancelled"]
    assert cancel[0]["params"]["requestId"] == sent["id"]


def test_a_modern_result_of_an_unknown_type_is_invalid() -> None:
    h = modern()
    t = request(h, "resources/read", {"uri": "u"})
    h.answer(h.last_request("resources/read")["id"], {"resultType": "task", **READ})
    assert "resultType 'task'" in str(h.error(t))


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (dict(method="tools/call"), "use CallTool"),
        (dict(method="resources/list"), "use ListItems"),
        (dict(method="resources/subscribe"), "use Subscribe"),
        (dict(method="subscriptions/listen"), "use Subscribe"),
        (dict(method="initialize"), "opens every session itself"),
        (dict(method="notifications/initialized"), "not a request method"),
        (dict(method=""), "not a request method"),
        (dict(method="ping", timeout=0), "timeout must be > 0"),
        (dict(method="logging/setLevel", params={"level": "verbose"}), "logging level must be"),
        (dict(method="logging/setLevel"), "logging level must be"),
    ],
)
def test_requests_a_caller_may_not_send(event: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        core.Request(now=0.0, ticket=1, **event)


@pytest.mark.parametrize(
    ("event", "fields", "message"),
    [
        (core.ListItems, dict(kind="files"), "ListItems.kind must be"),
        (core.ListItems, dict(kind="prompts", timeout=-1), "ListItems.timeout must be > 0"),
        (core.Subscribe, dict(uri="u", timeout=0), "Subscribe.timeout must be > 0"),
        (core.Unsubscribe, dict(uri="u", timeout=0), "Unsubscribe.timeout must be > 0"),
    ],
)
def test_other_caller_events_check_their_fields(
    event: type[Any], fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        event(now=0.0, ticket=1, **fields)


# --- _meta -------------------------------------------------------------------------------------


def test_params_meta_is_merged_under_the_event_meta_and_the_protocol_keys() -> None:
    params = {
        "uri": "file:///a",
        "_meta": {"mine": 1, "traceparent": "from-params", VERSION: "1999-01-01"},
    }
    h = modern()
    request(h, "resources/read", params, meta={"traceparent": "from-event"})
    sent = h.last_request("resources/read")
    meta = sent["params"]["_meta"]
    assert meta["mine"] == 1
    assert meta["traceparent"] == "from-event"
    assert meta[VERSION] == "2026-07-28"
    assert sent["params"]["uri"] == "file:///a"
    assert params["_meta"][VERSION] == "1999-01-01"  # the caller's mapping is left alone

    h = legacy()
    request(h, "resources/read", {"uri": "file:///a", "_meta": {"mine": 1}})
    assert h.last_request("resources/read")["params"] == {"uri": "file:///a", "_meta": {"mine": 1}}
    h.take()
    request(h, "resources/read", {"uri": "file:///a", "_meta": "not an object"})
    assert h.last_request("resources/read")["params"] == {"uri": "file:///a"}


# --- capabilities ------------------------------------------------------------------------------


def without(name: str) -> dict[str, Any]:
    return {k: v for k, v in ALL.items() if k != name}


REFUSED: list[tuple[dict[str, Any], Any, str, str]] = [
    (without("resources"), dict(method="resources/read", params={"uri": "u"}), "resources", ""),
    (without("resources"), "resources", "resources", "resources/list"),
    (without("resources"), "resource_templates", "resources", "resources/templates/list"),
    ({**ALL, "resources": True}, "resources", "resources", "resources/list"),
    (without("prompts"), dict(method="prompts/get", params={"name": "p"}), "prompts", ""),
    (without("prompts"), "prompts", "prompts", "prompts/list"),
    (without("completions"), dict(method="completion/complete", params={}), "completions", ""),
    (without("logging"), dict(method="logging/setLevel", params={"level": "info"}), "logging", ""),
    ({**ALL, "resources": {}}, "subscribe", "resources.subscribe", "resources/subscribe"),
    # SEP-2640's methods need the extension declared (SEP-2133), by its settings object.
    (ALL, dict(method="skills/list", params={}), "extensions.io.modelcontextprotocol/skills", ""),
    (
        {**ALL, "extensions": {"io.modelcontextprotocol/skills": True}},
        dict(method="skills/get", params={"uri": "skill://a/SKILL.md"}),
        "extensions.io.modelcontextprotocol/skills",
        "",
    ),
    (
        {**ALL, "resources": {"subscribe": "yes"}},
        "subscribe",
        "resources.subscribe",
        "resources/subscribe",
    ),
    # resources/directory/read: only when the extension's settings say directoryRead: true.
    *[
        (
            {**ALL, "extensions": extensions},
            dict(method="resources/directory/read", params={"uri": "skill://a"}),
            "extensions.io.modelcontextprotocol/skills.directoryRead",
            "",
        )
        for extensions in (
            {},
            {"io.modelcontextprotocol/skills": {}},
            {"io.modelcontextprotocol/skills": {"directoryRead": "true"}},
            {"com.example/other": {"directoryRead": True}},
        )
    ],
]


def ask(h: Harness, what: Any) -> int:
    if isinstance(what, dict):
        return request(h, **what)
    if what == "subscribe":
        return subscribe(h, "file:///a")
    return list_items(h, what)


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize(("capabilities", "what", "needed", "method"), REFUSED)
def test_a_method_the_server_did_not_declare_is_refused_before_sending(
    era: str, capabilities: dict[str, Any], what: Any, needed: str, method: str
) -> None:
    h = legacy(capabilities) if era == "legacy" else modern(capabilities)
    t = ask(h, what)
    error = h.error(t)
    assert isinstance(error, core.NotSupported)
    assert f"the {needed!r} capability" in str(error)
    assert error.method == (method or what["method"])
    assert h.messages() == [] and h.machine.in_flight == 0


@pytest.mark.parametrize(
    "what",
    [
        dict(method="x-vendor/anything", params={}),
        dict(method="ping"),
        "tools",  # servers that list tools without declaring them are common
    ],
)
def test_methods_that_need_no_capability_are_sent(what: Any) -> None:
    h = legacy({})
    ask(h, what)
    assert len(h.messages()) == 1
    h.take()
    unsubscribe(h, "file:///a")  # never refused: stopping needs nothing
    assert written(h) == ["resources/unsubscribe"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_declared_extension_is_kept_and_its_methods_are_sent(era: str) -> None:
    # A 2025-11-25 initialize answer has no extensions field in its schema, but servers send
    # one (SEP-2133): Status keeps it as received, and skills/* go out.
    extensions = {"io.modelcontextprotocol/skills": {}, "com.example/other": {"x": 1}}
    h = (legacy if era == "legacy" else modern)({**ALL, "extensions": extensions})
    capabilities = h.machine.status(h.now).capabilities
    assert capabilities is not None and capabilities["extensions"] == extensions
    ask(h, dict(method="skills/list", params={}))
    assert written(h) == ["skills/list"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_directory_read_goes_out_when_the_settings_say_so(era: str) -> None:
    extensions = {"io.modelcontextprotocol/skills": {"directoryRead": True}}
    h = (legacy if era == "legacy" else modern)({**ALL, "extensions": extensions})
    ask(h, dict(method="resources/directory/read", params={"uri": "skill://a"}))
    assert written(h) == ["resources/directory/read"]


def test_before_a_session_is_ready_the_caller_hears_not_ready_not_not_supported() -> None:
    h = Harness(era="legacy")
    h.feed(core.Connect(now=0.0))
    h.spawned()
    for t in (
        request(h, "resources/read", {"uri": "u"}),
        list_items(h, "prompts"),
        subscribe(h, "file:///a"),
        unsubscribe(h, "file:///a"),
    ):
        assert isinstance(h.error(t), core.NotReady)
    assert written(h) == ["initialize"]


@pytest.mark.parametrize("how", ["era=modern", "cached verdict"])
def test_capabilities_never_told_refuse_nothing(how: str) -> None:
    if how == "era=modern":
        h = Harness(era="modern")
        h.feed(core.Connect(now=0.0))
        h.spawned()
    else:  # discovered once; the reconnect skips server/discover
        h = modern({})
        crash(h)
        h.spawned()
    assert h.machine.state == "ready"
    h.take()
    # Not told: nothing is refused, and Status does not claim the server offers nothing.
    assert h.machine.status(h.now).capabilities is None
    t = request(h, "resources/read", {"uri": "file:///a"})
    assert t not in h.replies
    assert written(h) == ["resources/read"]
    list_items(h, "prompts")
    subscribe(h, "file:///a")
    assert "prompts/list" in written(h) and "subscriptions/listen" in written(h)


# --- the log level -----------------------------------------------------------------------------


def test_a_legacy_log_level_is_set_then_renewed_on_every_new_session() -> None:
    h = legacy()
    t = request(h, "logging/setLevel", {"level": "warning"})
    sent = h.last_request("logging/setLevel")
    assert sent["params"] == {"level": "warning"}
    h.answer(sent["id"], {})
    assert h.result(t) is None
    crash(h)
    open_legacy(h)
    renewal = h.last_request("logging/setLevel")
    assert renewal["params"] == {"level": "warning"}
    assert written(h) == ["initialize", "notifications/initialized", "logging/setLevel"]
    h.take()
    h.answer(renewal["id"], {})  # accepted: nobody is told
    assert h.actions == []
    crash(h)
    open_legacy(h)
    h.answer_error(h.last_request("logging/setLevel")["id"], -32603, "no logs today")
    assert logs(h, "WARNING") == [
        "the server refused logging/setLevel on a new session: no logs today"
    ]
    assert h.replies.keys() == {t}  # no caller is answered for a renewal


def test_a_refused_log_level_is_not_kept() -> None:
    h = legacy()
    t = request(h, "logging/setLevel", {"level": "debug"})
    h.answer_error(h.last_request("logging/setLevel")["id"], -32602, "bad level")
    assert isinstance(h.error(t), core.JsonRpcError)
    crash(h)
    open_legacy(h)
    assert "logging/setLevel" not in written(h)


def open_http_legacy(h: HttpHarness, session: str) -> None:
    """Answer initialize with every capability, then notifications/initialized, then the head
    of the listening GET (its stream stays open)."""
    h.result_for(
        h.request("initialize"),
        {"protocolVersion": "2025-11-25", "capabilities": ALL},
        headers=(("Mcp-Session-Id", session),),
    )
    h.respond(h.request("notifications/initialized"), 202)
    gets = [r for r in h.requests() if r.method == "GET"]
    if gets:
        h.sse(gets[-1], end=False)
    assert h.machine.state == "ready"


def test_a_renewal_lost_on_the_wire_is_only_logged() -> None:
    h = HttpHarness(era="legacy")
    h.feed(core.Connect(now=h.now))
    open_http_legacy(h, "sess-1")
    h.take()
    t = request(h, "logging/setLevel", {"level": "error"})
    h.result_for(h.request("logging/setLevel"), {})
    assert h.result(t) is None
    h.take()
    # The server forgot the session: a new one is opened in place, and the level renewed.
    call = h.call("x")
    h.respond(h.request("tools/call"), 404)
    assert isinstance(h.error(call), core.SessionRejected)
    open_http_legacy(h, "sess-2")
    renewal = h.request("logging/setLevel")
    assert h.body(renewal)["params"] == {"level": "error"}
    h.take()
    h.respond(renewal, 500)
    assert [m for m in logs(h, "DEBUG") if "logging/setLevel was lost" in m]
    assert logs(h, "WARNING") == [] and h.machine.state == "ready"


def test_a_modern_log_level_is_kept_and_rides_on_every_request() -> None:
    h = modern()
    t = request(h, "logging/setLevel", {"level": "error"})
    assert h.result(t) is None
    assert h.messages() == []  # 2026-07-28 has no logging/setLevel
    h.call("x")
    assert h.last_request("tools/call")["params"]["_meta"][LOG_LEVEL] == "error"
    list_items(h, "prompts")
    assert h.last_request("prompts/list")["params"]["_meta"][LOG_LEVEL] == "error"
    request(h, "ping")
    assert h.last_request("server/discover")["params"]["_meta"][LOG_LEVEL] == "error"
    h.take()
    request(h, "logging/setLevel", {"level": "debug"})
    h.call("y")
    assert h.last_request("tools/call")["params"]["_meta"][LOG_LEVEL] == "debug"


def test_no_log_level_no_meta_key() -> None:
    h = modern()
    h.call("x")
    assert LOG_LEVEL not in h.last_request("tools/call")["params"]["_meta"]


# --- ping --------------------------------------------------------------------------------------


def test_legacy_ping_is_a_round_trip_in_seconds() -> None:
    h = legacy()
    h.now = 10.0
    t = request(h, "ping")
    sent = h.last_request("ping")
    assert "_meta" not in sent.get("params", {})
    h.now = 10.25
    h.answer(sent["id"], {})
    assert h.result(t) == pytest.approx(0.25)


def test_modern_ping_is_a_server_discover_round_trip() -> None:
    h = modern()
    h.now = 3.0
    t = request(h, "ping")
    assert written(h) == ["server/discover"]
    sent = h.last_request("server/discover")
    assert sent["params"]["_meta"][VERSION] == "2026-07-28"
    h.now = 3.5
    h.answer(sent["id"], {"resultType": "complete", "supportedVersions": ["2026-07-28"]})
    assert h.result(t) == pytest.approx(0.5)


def test_a_raw_ping_is_a_discover_answered_as_received() -> None:
    h = modern()
    t = request(h, "ping", raw=True)
    assert written(h) == ["server/discover"]  # 2026-07-28 has no ping, raw or not
    h.answer(h.last_request("server/discover")["id"], {"resultType": "complete"})
    assert h.result(t) == {"resultType": "complete"}


# --- legacy subscriptions ----------------------------------------------------------------------


def test_legacy_subscribe_delivers_updates_for_subscribed_uris_only() -> None:
    h = legacy()
    t = subscribe(h, "file:///a")
    sent = h.last_request("resources/subscribe")
    assert sent["params"] == {"uri": "file:///a"}
    notify(h, "notifications/resources/updated", {"uri": "file:///a"})
    assert h.of(core.ResourceUpdated) == []  # not subscribed until the server accepts
    h.answer(sent["id"], {})
    assert h.result(t) is None
    h.take()
    notify(h, "notifications/resources/updated", {"uri": "file:///a"})
    notify(h, "notifications/resources/updated", {"uri": "file:///other"})
    notify(h, "notifications/resources/updated", {"uri": 7})
    notify(h, "notifications/resources/updated", {})
    assert h.of(core.ResourceUpdated) == [core.ResourceUpdated(uri="file:///a")]


def test_legacy_unsubscribe_stops_updates_at_once_and_tells_the_server() -> None:
    h = legacy()
    subscribe(h, "u:1")
    h.answer(h.last_request("resources/subscribe")["id"], {})
    h.take()
    t = unsubscribe(h, "u:1")
    sent = h.last_request("resources/unsubscribe")
    assert sent["params"] == {"uri": "u:1"}
    notify(h, "notifications/resources/updated", {"uri": "u:1"})
    assert h.of(core.ResourceUpdated) == []  # before the server answered
    h.answer(sent["id"], {})
    assert h.result(t) is None
    crash(h)
    open_legacy(h)
    assert "resources/subscribe" not in written(h)


def test_legacy_subscriptions_are_renewed_on_every_new_session() -> None:
    h = legacy()
    for uri in ("u:1", "u:2"):
        subscribe(h, uri)
        h.answer(h.last_request("resources/subscribe")["id"], {})
    h.take()
    crash(h)
    open_legacy(h)
    renewals = [m for m in h.messages() if m.get("method") == "resources/subscribe"]
    assert [m["params"] for m in renewals] == [{"uri": "u:1"}, {"uri": "u:2"}]
    h.take()
    h.answer(renewals[0]["id"], {})
    h.answer_error(renewals[1]["id"], -32002, "gone")
    assert logs(h, "WARNING") == ["the server refused resources/subscribe on a new session: gone"]
    h.take()
    notify(h, "notifications/resources/updated", {"uri": "u:2"})  # still wanted
    assert h.of(core.ResourceUpdated) == [core.ResourceUpdated(uri="u:2")]


def test_a_refused_subscription_is_not_kept() -> None:
    h = legacy()
    t = subscribe(h, "u:1")
    h.answer_error(h.last_request("resources/subscribe")["id"], -32002, "no such resource")
    assert isinstance(h.error(t), core.JsonRpcError)
    notify(h, "notifications/resources/updated", {"uri": "u:1"})
    assert h.of(core.ResourceUpdated) == []
    crash(h)
    open_legacy(h)
    assert "resources/subscribe" not in written(h)


def test_an_unsubscribe_sent_before_the_subscribe_was_answered_wins() -> None:
    h = legacy()
    ts = subscribe(h, "u:1")
    sub = h.last_request("resources/subscribe")
    tu = unsubscribe(h, "u:1")
    unsub = h.last_request("resources/unsubscribe")
    h.answer(sub["id"], {})
    h.answer(unsub["id"], {})
    assert h.result(ts) is None and h.result(tu) is None
    notify(h, "notifications/resources/updated", {"uri": "u:1"})
    assert h.of(core.ResourceUpdated) == []
    crash(h)
    open_legacy(h)
    assert "resources/subscribe" not in written(h)
    h.take()
    # Subscribing again afterwards counts.
    subscribe(h, "u:1")
    h.answer(h.last_request("resources/subscribe")["id"], {})
    notify(h, "notifications/resources/updated", {"uri": "u:1"})
    assert h.of(core.ResourceUpdated) == [core.ResourceUpdated(uri="u:1")]


def test_subscribe_after_close_is_not_ready() -> None:
    h = legacy()
    h.close()
    t = subscribe(h, "u:1")
    error = h.error(t)
    assert isinstance(error, core.NotReady) and "closed" in str(error)


# --- roots -------------------------------------------------------------------------------------


def test_roots_changed_notifies_legacy_sessions() -> None:
    h = legacy(handlers=("roots",))
    h.feed(core.RootsChanged(now=h.now))
    assert h.messages() == [
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {}}
    ]


def test_roots_listchanged_is_declared_at_initialize() -> None:
    h = Harness(era="legacy")
    h.machine = core.SessionMachine(h.spec, handlers=["roots"])
    h.feed(core.Connect(now=0.0))
    h.spawned()
    assert h.last_request("initialize")["params"]["capabilities"]["roots"] == {"listChanged": True}


@pytest.mark.parametrize(
    "session",
    [
        lambda: modern(handlers=("roots",)),  # 2026-07-28 has no such notification
        lambda: legacy(),  # no roots handler: nothing declared, nothing to say
    ],
)
def test_roots_changed_says_nothing_where_it_has_no_meaning(session: Any) -> None:
    h = session()
    assert h.feed(core.RootsChanged(now=h.now)) == []


def test_roots_changed_while_reconnecting_sends_nothing() -> None:
    h = legacy(handlers=("roots",))
    h.exited(1)
    h.take()
    assert h.feed(core.RootsChanged(now=h.now)) == []


# --- status ------------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_status_carries_the_servers_capabilities_and_instructions(era: str) -> None:
    make = legacy if era == "legacy" else modern
    h = make(ALL, instructions="Read before you write.")
    status = h.machine.status(h.now)
    assert status.capabilities == ALL
    assert status.instructions == "Read before you write."
    h.exited(1)
    status = h.machine.status(h.now)
    assert status.capabilities is None and status.instructions is None


def test_status_before_ready_and_without_instructions() -> None:
    h = Harness(era="legacy")
    assert h.machine.status(0.0).capabilities is None
    h = legacy({"tools": {}})
    assert h.machine.status(h.now).capabilities == {"tools": {}}
    assert h.machine.status(h.now).instructions is None
