"""URL-mode elicitation (2025-11-25 client/elicitation; 2026-07-28 input requests): what the
client declares, which requests reach the handler, completion notifications and -32042."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core
from mcp_core._session.server_requests import MAX_ELICITATIONS
from mcp_core.replay import Recorder, encode_action, replay_lines
from tests.core.harness import TEXT_RESULT, Harness

URL_ASK = {
    "mode": "url",
    "elicitationId": "e-1",
    "url": "https://auth.example.com/connect?state=abc",
    "message": "Connect your account",
}


def legacy(*modes: str, handlers: tuple[str, ...] = ("elicitation",)) -> Harness:
    h = Harness(era="legacy")
    h.machine = core.SessionMachine(h.spec, handlers=handlers, elicitation_modes=modes)
    h.connect_legacy()
    return h


def server_request(h: Harness, request_id: str, params: dict[str, Any]) -> None:
    h.stdout({"jsonrpc": "2.0", "id": request_id, "method": "elicitation/create", "params": params})


def complete(h: Harness, elicitation_id: object) -> list[core.ElicitationComplete]:
    h.take()
    h.stdout(
        {
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": elicitation_id},
        }
    )
    return h.of(core.ElicitationComplete)


@pytest.mark.parametrize(
    ("modes", "declared"),
    [
        (("form",), {}),  # "{} is equivalent to form only": the shape every version knows
        (("form", "url"), {"form": {}, "url": {}}),
        (("url", "form", "url"), {"form": {}, "url": {}}),
        (("url",), {"url": {}}),
    ],
)
def test_the_capability_names_the_modes_in_both_eras(modes: tuple, declared: dict) -> None:
    h = Harness(era="legacy")
    h.machine = core.SessionMachine(h.spec, handlers=["elicitation"], elicitation_modes=modes)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    assert h.last_request("initialize")["params"]["capabilities"] == {"elicitation": declared}
    assert h.machine.elicitation_modes == frozenset(modes)
    m = Harness()
    m.machine = core.SessionMachine(m.spec, handlers=["elicitation"], elicitation_modes=modes)
    m.feed(core.Connect(now=0.0))
    m.spawned()
    meta = m.last_request("server/discover")["params"]["_meta"]
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {"elicitation": declared}


@pytest.mark.parametrize(
    ("handlers", "modes", "match"),
    [
        (["elicitation"], (), "must be 'form', 'url' or both"),
        (["elicitation"], ("form", "telepathy"), "must be 'form', 'url' or both"),
        (["sampling"], ("form", "url"), "needs an elicitation handler"),
    ],
)
def test_impossible_modes_are_refused(handlers: list, modes: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        core.SessionMachine(
            core.Spec(name="x", command="x"), handlers=handlers, elicitation_modes=modes
        )


def test_a_url_request_reaches_the_handler_and_its_completion_the_application() -> None:
    h = legacy("form", "url")
    server_request(h, "r1", URL_ASK)
    [ask] = h.of(core.HandleServerRequest)
    assert (ask.method, ask.params) == ("elicitation/create", URL_ASK)
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result={"action": "accept"}))
    assert h.messages()[-1] == {"jsonrpc": "2.0", "id": "r1", "result": {"action": "accept"}}
    assert complete(h, "e-1") == [core.ElicitationComplete(elicitation_id="e-1")]
    # Already completed, unknown, or not a string: ignored (the spec's "MUST ignore").
    for ignored in ("e-1", "never-asked", 7):
        assert complete(h, ignored) == []
        assert [a.level for a in h.of(core.Log)] == ["DEBUG"]
    # A form request still works next to URL mode.
    h.take()
    server_request(h, "r2", {"message": "name?", "requestedSchema": {"type": "object"}})
    assert len(h.of(core.HandleServerRequest)) == 1


@pytest.mark.parametrize(
    ("modes", "params"),
    [
        (("form",), URL_ASK),  # URL mode not declared
        (("url",), {"message": "name?"}),  # no mode means form: not declared here
        (("form", "url"), {"mode": ["url"], "message": "?"}),  # a mode that is no string
    ],
)
def test_a_request_in_an_undeclared_mode_gets_invalid_params(modes: tuple, params: dict) -> None:
    h = legacy(*modes)
    server_request(h, "r1", params)
    [answer] = h.messages()
    assert answer["id"] == "r1" and answer["error"]["code"] == -32602
    assert "declared" in answer["error"]["message"]
    assert h.of(core.HandleServerRequest) == []
    assert complete(h, "e-1") == []  # a refused request is not waited for


def test_without_any_handler_url_mode_is_still_invalid_params() -> None:
    h = legacy("form", handlers=())
    server_request(h, "r1", URL_ASK)
    assert h.messages()[0]["error"]["code"] == -32602


def test_url_elicitation_required_is_a_typed_error_the_caller_can_act_on() -> None:
    h = legacy("form", "url")
    t = h.call("read_files")
    request = h.last_request("tools/call")
    listed = [
        URL_ASK,
        {"elicitationId": "e-2", "url": "https://b.example/x", "message": 5},  # mode defaults
        {"mode": "form", "elicitationId": "e-3", "url": "https://c.example/"},  # not URL mode
        {"mode": "url", "url": "https://d.example/"},  # no id
        "junk",
    ]
    h.stdout(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -32042, "message": "needs auth", "data": {"elicitations": listed}},
        }
    )
    err = h.error(t)
    assert isinstance(err, core.UrlElicitationRequired) and isinstance(err, core.JsonRpcError)
    assert (err.code, err.message) == (-32042, "needs auth")
    assert err.elicitations == (
        {**URL_ASK},
        {"mode": "url", "elicitationId": "e-2", "url": "https://b.example/x", "message": ""},
    )
    assert "2 URL elicitations" in str(err) and "https://" not in str(err)
    assert complete(h, "e-2") == [core.ElicitationComplete(elicitation_id="e-2")]
    # The session goes on; a -32042 whose data is not usable still names the code.
    t2 = h.call("x")
    h.answer_error(h.last_request("tools/call")["id"], -32042, "needs auth")
    err2 = h.error(t2)
    assert isinstance(err2, core.UrlElicitationRequired) and err2.elicitations == ()
    assert "1 URL elicitation first" not in str(err2) and "0 URL elicitations" in str(err2)


def test_only_the_newest_elicitations_are_remembered() -> None:
    h = legacy("form", "url")
    for n in range(MAX_ELICITATIONS + 1):
        server_request(h, f"r{n}", {**URL_ASK, "elicitationId": f"e{n}"})
    server_request(h, "again", {**URL_ASK, "elicitationId": "e1"})  # asked again: kept newest
    assert complete(h, "e0") == []  # the oldest was forgotten
    assert complete(h, "e1") == [core.ElicitationComplete(elicitation_id="e1")]
    assert complete(h, "e2") == [core.ElicitationComplete(elicitation_id="e2")]


def _modern(*modes: str) -> Harness:
    h = Harness(era="modern")
    h.machine = core.SessionMachine(h.spec, handlers=["elicitation"], elicitation_modes=modes)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    h.take()
    return h


def _ask_input(h: Harness, params: object) -> int:
    t = h.call("connect")
    h.answer(
        h.last_request("tools/call")["id"],
        {
            "resultType": "input_required",
            "inputRequests": {"k": {"method": "elicitation/create", "params": params}},
        },
    )
    return t


def test_modern_input_requests_in_url_mode_use_the_same_handler() -> None:
    h = _modern("form", "url")
    ask = {"mode": "url", "url": "https://auth.example.com/", "message": "connect"}
    t = _ask_input(h, ask)
    [handle] = h.of(core.HandleServerRequest)
    assert handle.params == ask
    h.feed(core.ServerRequestAnswered(now=0.0, handle=handle.handle, result={"action": "accept"}))
    retry = h.last_request("tools/call")
    assert retry["params"]["inputResponses"] == {"k": {"action": "accept"}}
    h.answer(retry["id"], {"resultType": "complete", **TEXT_RESULT})
    assert h.result(t).text == "hi"


@pytest.mark.parametrize(
    ("modes", "params"),
    [(("form",), {"mode": "url", "url": "https://x/"}), (("url",), None)],
)
def test_modern_input_requests_in_an_undeclared_mode_fail_the_call(
    modes: tuple, params: object
) -> None:
    h = _modern(*modes)
    t = _ask_input(h, params)
    err = h.error(t)
    assert isinstance(err, core.InvalidResponse) and "elicitation, not declared" in str(err)
    assert h.of(core.HandleServerRequest) == []


def test_elicitation_modes_are_part_of_a_recording(tmp_path) -> None:
    spec = core.Spec(name="r", command="srv", era="legacy")
    lines: list[str] = []
    modes = ("form", "url")
    recorder = Recorder(spec, lines.append, handlers=["elicitation"], elicitation_modes=modes)
    machine = core.SessionMachine(spec, handlers=["elicitation"], elicitation_modes=modes)
    ask = json.dumps(
        {"jsonrpc": "2.0", "id": "e", "method": "elicitation/create", "params": URL_ASK}
    )
    events = [
        core.Connect(now=0.0),
        core.ProcessSpawned(now=0.0, slot=0, generation=1, pid=1),
        core.StdoutReceived(
            now=0.1,
            slot=0,
            generation=1,
            data=b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}\n'
            + ask.encode()
            + b"\n",
        ),
    ]
    live = []
    for event in events:
        recorder.record(event)
        live.extend(machine.handle(event))
    assert any(isinstance(a, core.HandleServerRequest) for a in live)
    assert json.loads(lines[0])["elicitation_modes"] == ["form", "url"]
    replayed = replay_lines(lines)
    assert [encode_action(a) for a in replayed] == [encode_action(a) for a in live]
    # The default is not written, so recordings made before modes existed read the same.
    plain: list[str] = []
    Recorder(spec, plain.append, handlers=["elicitation"])
    assert "elicitation_modes" not in json.loads(plain[0])
    header = json.loads(lines[0])
    header["elicitation_modes"] = "url"
    with pytest.raises(ValueError, match="elicitation_modes"):
        replay_lines([json.dumps(header)])
