"""Optional OpenTelemetry (docs/tracing.md): a client span per
call_tool and W3C trace context in params._meta when a tracer provider is configured; nothing
at all without one, and nothing breaks (or is imported again) without the package.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import _mcp_io.otel as shared_otel
import mcp_core as core
from mcp_core.replay import replay
from tests.conftest import REPO_ROOT, fault_server_argv
from tests.drivers.facade import Facade

trace = pytest.importorskip("opentelemetry.trace")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
export = pytest.importorskip("opentelemetry.sdk.trace.export")

pytestmark = [pytest.mark.timeout(90)]

SECRET_ARGUMENT = "s3cr3t-argument-value"


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[object, object]]:
    """An SDK tracer provider with an in-memory exporter, global for this test only (the API
    allows setting the global provider once per process; the test sets its module global and
    monkeypatch puts the old value back)."""
    exporter = in_memory.InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider()
    tracer_provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", tracer_provider)
    yield tracer_provider, exporter
    tracer_provider.shutdown()


def test_no_provider_no_span_no_meta() -> None:
    otel: object = shared_otel  # the one file both drivers use
    # The API is installed (the official SDK needs it) but nobody configured a provider.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert otel.start_call_span("s", "t", "stdio") == (None, None)  # type: ignore[attr-defined]


@pytest.mark.anyio
async def test_each_call_is_a_client_span_with_its_context_in_meta(
    driver: str, provider: tuple, tmp_path: Path
) -> None:
    tracer_provider, exporter = provider
    argv = fault_server_argv()
    recording = tmp_path / "session.jsonl"
    tracer = tracer_provider.get_tracer("test")
    # era="legacy": no probe, so the recording replays the same with or without the era
    # verdict an earlier test left in the driver's cache (the cache is not recorded).
    fields = {"command": argv[0], "args": argv[1:], "era": "legacy", "record": str(recording)}
    with tracer.start_as_current_span("agent step") as parent:
        async with Facade(driver, name="fault", **fields) as c:
            assert (await c.call_tool("echo", {"text": SECRET_ARGUMENT})).text == SECRET_ARGUMENT
            with pytest.raises(core.RequestTimeout):
                await c.call_tool("hang", timeout=0.2)
            with pytest.raises(core.JsonRpcError):
                await c.call_tool("no_such_tool")
            await c.list_tools()  # not a tools/call: no span
    spans = [s for s in exporter.get_finished_spans() if s.name != "agent step"]
    assert [s.name for s in spans] == [
        "tools/call echo",
        "tools/call hang",
        "tools/call no_such_tool",
    ]
    parent_context = parent.get_span_context()
    for span in spans:
        assert span.kind == trace.SpanKind.CLIENT
        assert span.parent is not None and span.parent.span_id == parent_context.span_id
        assert span.context.trace_id == parent_context.trace_id
        attributes = dict(span.attributes or {})
        assert attributes["mcp.method.name"] == "tools/call"
        assert attributes["mcp_client.server.name"] == "fault"
        assert attributes["network.transport"] == "pipe"
        assert SECRET_ARGUMENT not in json.dumps(attributes)
    outcomes = [(s.attributes["mcp_client.outcome"], s.status.status_code.name) for s in spans]
    assert outcomes == [("ok", "UNSET"), ("RequestTimeout", "ERROR"), ("JsonRpcError", "ERROR")]
    assert spans[1].attributes["error.type"] == "RequestTimeout"

    # On the wire (the recording replays to the bytes written): each request carries its own
    # span's context as a W3C traceparent.
    written = [
        json.loads(action.data)
        for action in replay(str(recording))
        if isinstance(action, core.WriteStdin) and b'"tools/call"' in action.data
    ]
    assert len(written) == 3
    for message, span in zip(written, spans, strict=True):
        traceparent = message["params"]["_meta"]["traceparent"]
        context = span.context
        assert traceparent == (
            f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
        )


def test_without_the_package_calls_work_and_the_import_is_tried_once(tmp_path: Path) -> None:
    argv = fault_server_argv()
    script = textwrap.dedent(
        f"""
        import sys

        class NotInstalled:
            attempts = 0

            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "opentelemetry":
                    NotInstalled.attempts += 1
                    raise ModuleNotFoundError(f"No module named {{name!r}}")
                return None

        sys.meta_path.insert(0, NotInstalled())
        import anyio, mcp_asyncio, mcp_sync

        spec = dict(name="fault", command={argv[0]!r}, args={argv[1:]!r})
        with mcp_sync.Client(**spec) as c:
            texts = [c.call_tool("echo", {{"text": str(i)}}).text for i in range(3)]

        async def main():
            async with mcp_asyncio.Client(**spec) as c:
                return [(await c.call_tool("echo", {{"text": str(i)}})).text for i in range(3)]

        texts += anyio.run(main)
        print(texts, NotInstalled.attempts, "opentelemetry" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # One attempt for the process (both drivers share one cached check), none per call.
    assert done.stdout.split("]")[1].split() == ["1", "False"], done.stdout
    assert done.stdout.startswith("['0', '1', '2', '0', '1', '2']")
