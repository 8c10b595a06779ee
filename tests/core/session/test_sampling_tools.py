"""Sampling with tools (MCP 2025-11-25 client/sampling §Tools in Sampling): the capability is
declared only when asked for, a request with tools reaches the handler only then and only
well formed, and the handler's answer is checked before the server gets it, in both eras."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core
from mcp_core.replay import Recorder, replay
from tests.core.harness import Harness

WEATHER = {
    "name": "get_weather",
    "description": "Weather of a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
ASK = {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}}
USE = {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}}
RESULT = {"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "18C"}]}
TOOLED = {"messages": [ASK], "maxTokens": 100, "tools": [WEATHER], "toolChoice": {"mode": "auto"}}
TOOL_ANSWER = {"role": "assistant", "content": [USE], "model": "m", "stopReason": "toolUse"}
META = "io.modelcontextprotocol/clientCapabilities"


def _legacy(tools: bool = True) -> Harness:
    h = Harness(era="legacy")
    h.machine = core.SessionMachine(h.spec, handlers=["sampling"], sampling_tools=tools)
    h.connect_legacy()
    return h


def _ask(h: Harness, params: dict[str, Any], request_id: str = "s1") -> list[core.Action]:
    h.take()
    message = {"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage"}
    h.stdout({**message, "params": params})
    return h.of(core.HandleServerRequest)


def test_the_capability_is_declared_only_when_asked_for() -> None:
    for era, tools, declared in (
        ("legacy", True, {"tools": {}}),
        ("legacy", False, {}),
        ("auto", True, {"tools": {}}),
    ):
        h = Harness(era=era)
        h.machine = core.SessionMachine(h.spec, handlers=["sampling"], sampling_tools=tools)
        h.feed(core.Connect(now=0.0))
        h.spawned()
        if era == "legacy":
            caps = h.last_request("initialize")["params"]["capabilities"]
        else:
            caps = h.last_request("server/discover")["params"]["_meta"][META]
        assert caps == {"sampling": declared}
    with pytest.raises(ValueError, match="sampling_tools needs a sampling handler"):
        core.SessionMachine(h.spec, handlers=["roots"], sampling_tools=True)


def test_a_request_with_tools_reaches_the_handler_and_the_answer_the_server() -> None:
    h = _legacy()
    [ask] = _ask(h, TOOLED)
    request = core.CreateMessageRequest.from_params(ask.params)
    assert [t.name for t in request.tools] == ["get_weather"] and request.tool_choice == "auto"
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=TOOL_ANSWER))
    assert h.messages() == [{"jsonrpc": "2.0", "id": "s1", "result": TOOL_ANSWER}]
    # the follow-up round: the tool's result, then a final text answer
    follow = {**TOOLED, "messages": [ASK, {"role": "assistant", "content": [USE]},
                                     {"role": "user", "content": [RESULT]}]}
    [ask] = _ask(h, follow, "s2")
    request = core.CreateMessageRequest.from_params(ask.params)
    [block] = request.messages[2].content
    assert isinstance(block, core.ToolResultContent) and block.tool_use_id == "c1"
    final = {"role": "assistant", "content": {"type": "text", "text": "18C"}, "model": "m"}
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=final))
    assert h.messages()[-1]["result"] == final


@pytest.mark.parametrize(
    ("tools", "params", "match"),
    [
        (False, TOOLED, "did not declare sampling.tools"),
        (False, {"messages": [], "maxTokens": 1, "toolChoice": {}}, "did not declare"),
        (True, {**TOOLED, "tools": [{"name": "x"}]}, "inputSchema"),
        (True, {**TOOLED, "toolChoice": {"mode": "sometimes"}}, "toolChoice.mode"),
        (True, {**TOOLED, "messages": [ASK, {"role": "assistant", "content": [USE]}]},
         "Tool result missing"),
        (True, {**TOOLED, "messages": [ASK, {"role": "assistant", "content": [USE]},
                                       {"role": "user", "content": [RESULT, ASK["content"]]}]},
         "mixed"),
        (True, {**TOOLED, "messages": [{"role": "user", "content": [RESULT]}]},
         "answer no tool_use"),
        (True, {**TOOLED, "messages": [{"role": "user", "content": [USE]}, {
            "role": "user", "content": [RESULT]}]}, "not the assistant's"),
        # tool blocks in a request without tools are checked too
        (False, {"messages": [{"role": "user", "content": [RESULT]}], "maxTokens": 1},
         "answer no tool_use"),
    ],
)
def test_a_request_the_client_cannot_take_gets_invalid_params(
    tools: bool, params: dict[str, Any], match: str
) -> None:
    h = _legacy(tools)
    assert _ask(h, params) == []
    [message] = h.messages()
    assert message["error"]["code"] == -32602 and match in message["error"]["message"]


def test_a_request_without_tools_is_not_checked() -> None:
    h = _legacy(tools=False)
    [ask] = _ask(h, {})
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result={"x": 1}))
    assert h.messages() == [{"jsonrpc": "2.0", "id": "s1", "result": {"x": 1}}]


BAD_ANSWERS = [
    ({**TOOL_ANSWER, "content": [{"type": "tool_use", "name": "get_weather", "input": {}}]}, "id"),
    ({**TOOL_ANSWER, "content": "text"}, "content must be"),
    ({**TOOL_ANSWER, "model": None}, "model"),
    ({**TOOL_ANSWER, "stopReason": 3}, "stopReason"),
    ({**TOOL_ANSWER, "content": [RESULT]}, "come from the server"),
    ({**TOOL_ANSWER, "role": "user"}, "not 'assistant'"),
    ({**TOOL_ANSWER, "content": {"type": "text", "text": "x"}}, "without a tool_use"),
    ({**TOOL_ANSWER, "content": [{**USE, "name": "get_time"}]}, "'get_time', a tool the server"),
]


@pytest.mark.parametrize(("answer", "match"), BAD_ANSWERS)
def test_a_malformed_answer_is_an_error_for_the_server_and_a_warning(
    answer: dict[str, Any], match: str
) -> None:
    h = _legacy()
    [ask] = _ask(h, TOOLED)
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=answer))
    [message] = h.messages()
    assert message["error"]["code"] == -32603 and match in message["error"]["message"]
    [log] = [a for a in h.of(core.Log) if a.level == "WARNING"]
    assert "sampling handler's answer was refused" in log.message


def test_tool_use_is_refused_when_the_server_said_none_or_offered_no_tools() -> None:
    h = _legacy()
    [ask] = _ask(h, {**TOOLED, "toolChoice": {"mode": "none"}})
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=TOOL_ANSWER))
    assert "'none'" in h.messages()[0]["error"]["message"]
    [ask] = _ask(h, {**TOOLED, "toolChoice": {"mode": "required"}}, "s0")
    text = {"role": "assistant", "content": {"type": "text", "text": "no"}, "model": "m"}
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=text))
    assert "'required'" in h.messages()[0]["error"]["message"]
    [ask] = _ask(h, {"messages": [ASK], "maxTokens": 5}, "s2")
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=TOOL_ANSWER))
    assert "offered no tools" in h.messages()[0]["error"]["message"]
    # a handler that failed is answered as before, and a late answer is dropped
    [ask] = _ask(h, TOOLED, "s3")
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, failed="KeyError"))
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=TOOL_ANSWER))
    assert [m["error"]["code"] for m in h.messages()] == [-32603]


def _modern(tools: bool) -> Harness:
    h = Harness(era="modern")
    h.machine = core.SessionMachine(h.spec, handlers=["sampling"], sampling_tools=tools)
    h.feed(core.Connect(now=0.0))
    h.spawned()
    h.take()
    return h


def _input_required(h: Harness, params: dict[str, Any]) -> int:
    t = h.call("ask_model")
    ask = {"method": "sampling/createMessage", "params": params}
    result = {"resultType": "input_required", "inputRequests": {"llm": ask}}
    h.answer(h.last_request("tools/call")["id"], result)
    return t


def test_an_input_round_carries_the_same_checks() -> None:
    h = _modern(tools=True)
    t = _input_required(h, TOOLED)
    assert h.last_request("tools/call")["params"]["_meta"][META] == {"sampling": {"tools": {}}}
    [ask] = h.of(core.HandleServerRequest)
    assert core.CreateMessageRequest.from_params(ask.params).tools[0].name == "get_weather"
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=TOOL_ANSWER))
    retry = h.last_request("tools/call")
    assert retry["params"]["inputResponses"] == {"llm": TOOL_ANSWER}
    h.answer(retry["id"], {"content": [{"type": "text", "text": "ok"}]})
    assert h.result(t).text == "ok"
    # a malformed answer fails the call as a handler that raised does
    h.take()
    t = _input_required(h, TOOLED)
    [ask] = h.of(core.HandleServerRequest)
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result=BAD_ANSWERS[0][0]))
    err = h.error(t)
    assert isinstance(err, core.JsonRpcError) and err.code == -32603


def test_an_input_round_with_tools_not_declared_fails_the_call() -> None:
    h = _modern(tools=False)
    t = _input_required(h, TOOLED)
    assert h.of(core.HandleServerRequest) == []
    err = h.error(t)
    assert isinstance(err, core.InvalidResponse) and "sampling.tools" in str(err)
    t = _input_required(h, {"messages": "x"})  # no tools: the handler gets it unchecked
    assert len(h.of(core.HandleServerRequest)) == 1


def test_a_recording_keeps_the_declaration(tmp_path) -> None:
    spec = core.Spec(name="r", command="srv", era="legacy")
    lines: list[str] = []
    recorder = Recorder(spec, lines.append, handlers=["sampling"], sampling_tools=True)
    machine = core.SessionMachine(spec, handlers=["sampling"], sampling_tools=True)
    request = {"jsonrpc": "2.0", "id": "s", "method": "sampling/createMessage", "params": TOOLED}
    events = [
        core.Connect(now=0.0),
        core.ProcessSpawned(now=0.0, slot=0, generation=1, pid=1),
        core.StdoutReceived(
            now=0.1,
            slot=0,
            generation=1,
            data=b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}\n'
            + json.dumps(request).encode()
            + b"\n",
        ),
        core.ServerRequestAnswered(now=0.2, handle=1, result=TOOL_ANSWER),
    ]
    live = []
    for event in events:
        recorder.record(event)
        live.extend(machine.handle(event))
    assert json.loads(lines[0])["sampling_tools"] is True
    path = tmp_path / "r.jsonl"
    path.write_text("".join(lines))
    assert [type(a) for a in replay(str(path))] == [type(a) for a in live]
    header = json.loads(lines[0])
    header["sampling_tools"] = "yes"
    path.write_text(json.dumps(header) + "\n")
    with pytest.raises(ValueError, match="sampling_tools"):
        replay(str(path))
