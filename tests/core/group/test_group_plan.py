"""plan_group (for ClientGroup): specs in, clients to build and refusals out; no I/O."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import mcp_core as core
from mcp_core.group import GroupPlan, down_error, plan_group

KEYWORDS = ("wait", "record", "replay", "elicitation", "sampling")


def plan(specs: Any, **options: Any) -> GroupPlan:
    return plan_group(specs, options, client_keywords=KEYWORDS)


def test_every_kind_of_entry_is_accepted_or_refused_with_its_reason() -> None:
    handler = object()
    p = plan(
        {
            "spec": core.Spec(name="spec", url="http://127.0.0.1:1/mcp", init_timeout=9.0),
            "plain": {"command": "x", "init_timeout": 3.0},  # named by its key
            "own-name": {"name": "other", "command": "x", "init_timeout": 2.0},  # its own name
            "not-a-spec": ["x"],
            "--": {"command": "x"},
            "invalid": {"command": "x", "url": "http://h/", "headers": {"A": "s3cr3t"}},
            "bad-url": {"url": "http://h/", "pool_size": 0},
            "nothing": {"pool_size": 0},
        },
        concurrency="serialized",
        elicitation=handler,
    )
    assert p.order == (
        "spec",
        "plain",
        "own-name",
        "not-a-spec",
        "--",
        "invalid",
        "bad-url",
        "nothing",
    )
    assert list(p.specs) == ["spec", "plain", "own-name"]
    assert p.specs["plain"].name == "plain" and p.specs["own-name"].name == "other"
    assert {s.concurrency for s in p.specs.values()} == {"serialized"}  # a spec field on top
    assert p.client_options == {"elicitation": handler}  # a Client keyword as it is
    assert p.init_timeout == 9.0  # the longest of the accepted ones
    down = p.down
    assert set(down) == {"not-a-spec", "--", "invalid", "bad-url", "nothing"}
    assert all(s.state == "closed" for s in down.values())
    assert "mapping" in (down["not-a-spec"].last_error or "")
    assert down["not-a-spec"].transport == "unknown"
    assert "no letter or digit" in (down["--"].last_error or "")
    assert down["--"].transport == "stdio"
    invalid = down["invalid"].last_error or ""
    assert "'command' and 'url'" in invalid and "s3cr3t" not in invalid
    assert down["bad-url"].transport == "http" and down["nothing"].transport == "unknown"
    assert p.table.parts["own-name"] == "own_name"  # the key names the server in tool names


def test_a_loaded_config_keeps_its_skipped_entries_in_order() -> None:
    config = SimpleNamespace(
        servers={"fs": core.Spec(name="fs", command="x")},
        skipped={"broken": "'command' must be a string, got a number", "fs": "shadowed"},
    )
    p = plan(config)
    assert p.order == ("fs", "broken")
    assert list(p.specs) == ["fs"] and list(p.down) == ["broken"]
    assert p.down["broken"].last_error == "'command' must be a string, got a number"
    assert p.down["broken"].transport == "unknown"


def test_nothing_accepted_means_no_deadline() -> None:
    p = plan({})
    assert (p.order, dict(p.specs), dict(p.down), p.init_timeout) == ((), {}, {}, 0.0)


@pytest.mark.parametrize(
    ("specs", "options", "match"),
    [
        ({"a": {"command": "x"}}, {"call_timeot": 3}, "unknown option.*call_timeot"),
        ({"a": {"command": "x"}}, {"name": "b"}, "unknown option.*name"),
        ({"a": {"command": "x"}}, {"wait": False}, "unknown option.*wait"),
        ({"a": {"command": "x"}}, {"record": "s.jsonl"}, "record= is not a client option"),
        ({"a": {"command": "x"}}, {"replay": "s.jsonl"}, "one file per server"),
        ([("a", {"command": "x"})], {}, "mapping of server name"),
        ({1: {"command": "x"}}, {}, "server names must be strings"),
        (SimpleNamespace(servers={}, skipped={2: "why"}), {}, "server names must be strings"),
    ],
)
def test_caller_mistakes_raise_type_error(specs: Any, options: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        plan(specs, **options)


def test_build_keeps_what_the_factory_built_and_refuses_what_it_could_not() -> None:
    p = plan({"ok": {"command": "x"}, "no-http": {"url": "http://h/"}, "bad": 3})

    def factory(name: str, spec: core.Spec) -> str:
        if spec.url is not None:
            raise core.NoHttpClient("no HTTP stack")
        return f"client of {name} ({spec.name})"

    clients, down = p.build(factory)
    assert clients == {"ok": "client of ok (ok)"}
    assert list(down) == ["bad", "no-http"]
    assert down["no-http"].transport == "http" and "HTTP" in (down["no-http"].last_error or "")
    assert "no-http" not in p.down  # the plan itself is not changed

    def broken(name: str, spec: core.Spec) -> str:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError):
        p.build(broken)


def test_down_error_is_permanent_and_says_why() -> None:
    p = plan({"bad": 3})
    err = down_error(p.down["bad"])
    assert err.permanent and "mapping" in str(err)
    bare = core.Status(name="x", state="closed", transport="stdio", concurrency="stateless")
    assert "not started" in str(down_error(bare))
