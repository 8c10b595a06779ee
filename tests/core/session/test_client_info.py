"""The spec's ``client_info`` names the client to the server (MCP 2025-11-25 basic/lifecycle,
``Implementation``): in ``initialize``'s ``clientInfo``, and in the ``_meta`` of every
2026-07-28 request (the probe, calls, lists, listen streams); the default is unchanged."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_core as core
from mcp_core.config import load_config
from mcp_core.replay import Recorder, read_recording
from tests.core.harness import Harness
from tests.core.session.test_subscriptions_modern import listens, modern, subscribe

INFO = {"name": "my-app", "version": "1.2.0", "title": "My App"}
META = "io.modelcontextprotocol/clientInfo"


def test_initialize_names_the_client_as_the_spec_says() -> None:
    h = Harness(era="legacy", client_info=INFO)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    assert h.last_request("initialize")["params"]["clientInfo"] == INFO


def test_the_default_is_this_clients_own_name() -> None:
    h = Harness(era="legacy")
    h.feed(core.Connect(now=0.0))
    h.spawned()
    assert h.last_request("initialize")["params"]["clientInfo"] == {
        "name": "mcp-sansio-client",
        "version": "0.1.0",
    }


def test_every_modern_request_names_the_client() -> None:
    h = Harness(client_info={"name": "my-app", "version": "2"})
    h.feed(core.Connect(now=0.0))
    h.spawned()
    assert h.last_request("server/discover")["params"]["_meta"][META] == {
        "name": "my-app",
        "version": "2",
    }
    h = modern(client_info=INFO)
    h.call("echo", {"text": "hi"})
    assert h.last_request("tools/call")["params"]["_meta"][META] == INFO
    subscribe(h, "file:///a")
    [listen] = listens(h)
    assert listen["params"]["_meta"][META] == INFO


@pytest.mark.parametrize(
    ("client_info", "message"),
    [
        ({"name": "a"}, r"client_info\['version'\] must be a non-empty string, got missing"),
        ({"version": "1"}, r"client_info\['name'\] must be a non-empty string, got missing"),
        ({"name": "a", "version": 1}, r"client_info\['version'\] must be .* got int 1"),
        ({"name": " ", "version": "1"}, r"client_info\['name'\] must be"),
        ({"name": "a", "version": "1", "title": 3}, r"client_info\['title'\] must be"),
        ({"name": "a", "version": "1", "titel": "A"}, r"unknown key 'titel'.*did you mean 'title'"),
        ({"name": "a", "version": "1", "icons": []}, r"unknown key 'icons'.*known keys: name"),
        ({"name": "a", "version": "1", 7: "x"}, r"unknown key of another type"),
        (["my-app"], r"'client_info' must be a mapping, got list"),
    ],
)
def test_a_bad_client_info_is_refused(client_info: Any, message: str) -> None:
    with pytest.raises(core.InvalidSpec, match=message):
        core.Spec(name="s", command="srv", client_info=client_info)


def test_client_info_is_shown_recorded_and_read_from_config(tmp_path: Any) -> None:
    spec = core.Spec(name="s", command="srv", client_info={**INFO, "title": None})
    assert spec.client_info == {"name": "my-app", "version": "1.2.0"}  # no title: left out
    assert "client_info={'name': 'my-app'" in repr(spec)
    assert core.Spec.from_mapping(spec.redacted()) == spec
    lines: list[str] = []
    Recorder(spec, lines.append)
    recorded, _ = read_recording(lines)
    assert recorded.client_info == spec.client_info
    shown = core.Spec.build(spec, pool_size=2).client_info
    assert shown == spec.client_info
    config = tmp_path / ".mcp.json"
    config.write_text(
        '{"mcpServers": {"s": {"command": "srv", "client_info": {"name": "a", "version": "1"}}}}'
    )
    loaded = load_config(config)
    assert loaded.servers["s"].client_info == {"name": "a", "version": "1"}


def test_redaction_hides_only_what_it_does_not_know() -> None:
    with pytest.raises(core.InvalidSpec) as raised:
        core.Spec(name="s", command="srv", client_info={"name": "a", "version": "1", "secret": "x"})
    assert "'secret': '[redacted]'" in str(raised.value) and "'name': 'a'" in str(raised.value)
