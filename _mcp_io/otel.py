"""Optional OpenTelemetry for ``call_tool``: a client span per call and W3C trace context in
the request's ``params._meta`` (the ``otel`` extra: ``opentelemetry-api``).

Both drivers use this one file, from the neutral package ``_mcp_io`` (neither driver imports
the other). Both functions are plain and never block, so each driver calls them in its
caller's task or thread, where the caller's current span is the parent.

Cost. Whether ``opentelemetry`` can be imported is checked once, at the first call, and
remembered: without the package every later call pays one global lookup. With the API but no
tracer provider configured (the API's proxy or no-op provider), a call pays a provider lookup
and nothing else: no span, no ``_meta`` entry. When no provider was set in code and
``OTEL_PYTHON_TRACER_PROVIDER`` was not in the environment at the first call, that lookup reads
the API's global directly instead of ``os.environ`` (0.1 us instead of 1 us per call); a
provider set later with ``set_tracer_provider`` is still seen at once. Only with a real
provider (e.g. the SDK's) is a span started and the context injected.

What a span holds (OpenTelemetry semantic conventions for MCP, development status): name
``tools/call <tool>``, kind CLIENT, ``mcp.method.name``, ``gen_ai.operation.name``
(``execute_tool``), ``gen_ai.tool.name``, ``network.transport`` (``pipe`` for stdio, ``tcp``
for HTTP), our ``mcp_client.server.name`` (the spec's name) and ``mcp_client.outcome`` (``ok``,
``tool_error`` or the error's class name, also in ``error.type`` with an ERROR status). Never
an argument value, a result, a header, a URL or an error message: spans leave the process.

Only ``traceparent`` and ``tracestate`` go into ``_meta`` (the W3C trace-context propagator,
not the global one): baggage is application data a server has no business seeing.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

__all__ = ["end_call_span", "start_call_span"]

_TRACER_NAME = "mcp_sansio_client"
_TRACER_VERSION = "0.1.0"

# None: not checked yet; False: not importable; else the API pieces used below.
_api: Any = None
# The tracer of the provider it came from: a provider's get_tracer builds a new object.
_tracer_of: tuple[object, Any] | None = None
# Whether the environment named a tracer provider when the API was loaded.
_provider_from_env = False


def _load() -> Any:
    global _api, _provider_from_env
    if _api is None:
        try:
            trace = importlib.import_module("opentelemetry.trace")
            tracecontext = importlib.import_module("opentelemetry.trace.propagation.tracecontext")
        except ImportError:
            _api = False
        else:
            _api = (trace, tracecontext.TraceContextTextMapPropagator())
            _provider_from_env = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
    return _api


def start_call_span(server: str, tool: str, transport: str) -> tuple[dict[str, str] | None, Any]:
    """Start the client span of a ``tools/call`` of ``tool`` on ``server``: returns the
    ``_meta`` entries to send (None when there is nothing to send) and the span to hand to
    ``end_call_span`` (None when no span was started)."""
    global _tracer_of
    api = _api if _api is not None else _load()
    if api is False:
        return None, None
    trace, propagator = api
    if trace.__dict__.get("_TRACER_PROVIDER", trace) is None and not _provider_from_env:
        # Nothing set in code and, when first checked, nothing named in the environment:
        # the API's get_tracer_provider() would look in os.environ on every call to find
        # that out (about 1 us). The global is private, so its absence means "ask the API".
        return None, None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None, None  # nobody records: skip the work
    if _tracer_of is None or _tracer_of[0] is not provider:
        _tracer_of = (provider, provider.get_tracer(_TRACER_NAME, _TRACER_VERSION))
    span = _tracer_of[1].start_span(
        f"tools/call {tool}",
        kind=trace.SpanKind.CLIENT,
        attributes={
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "network.transport": "pipe" if transport == "stdio" else "tcp",
            "mcp_client.server.name": server,
        },
    )
    carrier: dict[str, str] = {}
    propagator.inject(carrier, context=trace.set_span_in_context(span))
    return carrier or None, span


def end_call_span(span: Any, result: Any = None, error: BaseException | None = None) -> None:
    """End ``span`` with the call's outcome: ``result`` (a ``CallToolResult``) or ``error``."""
    if error is not None:
        outcome = type(error).__name__
    elif getattr(result, "is_error", False):
        outcome = "tool_error"
    else:
        outcome = "ok"
    span.set_attribute("mcp_client.outcome", outcome)
    if outcome != "ok":
        trace = _api[0]
        span.set_attribute("error.type", outcome)
        span.set_status(trace.Status(trace.StatusCode.ERROR))
    span.end()
