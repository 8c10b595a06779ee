"""CallTool.meta: entries a driver adds to the request's params._meta (W3C trace context)."""

from __future__ import annotations

import mcp_core as core
from mcp_core.replay import decode_event, encode_event
from tests.core.harness import TEXT_RESULT, Harness

TRACE = {
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "tracestate": "vendor=opaque",
}


def test_meta_goes_out_with_the_call_beside_the_protocol_keys() -> None:
    h = Harness(era="legacy")
    h.connect_legacy()
    refused = h.call("x", meta={**TRACE, "progressToken": "mine"}, progress=True)
    assert isinstance(h.error(refused), core.InvalidArguments)  # never overwritten: refused
    t = h.call("x", meta=TRACE, progress=True)
    sent = h.last_request("tools/call")
    assert sent["params"]["_meta"] == {**TRACE, "progressToken": sent["id"]}
    h.answer(sent["id"], TEXT_RESULT)
    assert h.result(t).text == "hi"
    h.take()
    h.call("y")  # no meta, no progress: no _meta at all
    assert "_meta" not in h.last_request("tools/call")["params"]


def test_every_modern_round_carries_the_same_trace_context() -> None:
    h = Harness(era="modern")
    h.machine = core.SessionMachine(h.spec, handlers=["roots"])
    h.feed(core.Connect(now=0.0))
    h.spawned()
    h.take()
    t = h.call("x", meta=TRACE)
    first = h.last_request("tools/call")
    assert {k: first["params"]["_meta"][k] for k in TRACE} == TRACE
    assert "io.modelcontextprotocol/protocolVersion" in first["params"]["_meta"]
    h.answer(
        first["id"],
        {"resultType": "input_required", "inputRequests": {"k": {"method": "roots/list"}}},
    )
    [ask] = h.of(core.HandleServerRequest)
    h.feed(core.ServerRequestAnswered(now=0.0, handle=ask.handle, result={"roots": []}))
    retry = h.last_request("tools/call")
    assert retry["id"] != first["id"]
    assert {k: retry["params"]["_meta"][k] for k in TRACE} == TRACE
    h.answer(retry["id"], {"resultType": "complete", **TEXT_RESULT})
    assert h.result(t).text == "hi"


def test_meta_is_recorded_and_replayed() -> None:
    event = core.CallTool(now=1.0, ticket=3, name="x", meta=TRACE)
    assert decode_event(encode_event(event)) == event
