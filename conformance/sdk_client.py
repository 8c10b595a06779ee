"""Reference client for the conformance harness, built on the official ``mcp`` SDK (not ours).

It does per scenario exactly what ``client.py`` does with our client, so ``run.py --client
"python conformance/sdk_client.py"`` shows that the harness and the expected check counts are
right independently of our client. The SDK is a dev dependency only (pyproject ``[dev]``).

Usage (by the harness): ``sdk_client.py <server-url>`` with ``MCP_CONFORMANCE_SCENARIO`` set.
Exits 0 when the scenario's work is done, 1 when a call fails, 2 for an unknown scenario.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.session import ClientRequestContext

# scenario -> (tool to call, its arguments); None: connect and list tools only.
SCENARIO_TOOLS: dict[str, tuple[str, dict[str, Any]] | None] = {
    "initialize": None,
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}

log = logging.getLogger("sdk_client")


async def accept_defaults(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    """Accept the elicitation, answering each property of the requested schema with its default."""
    schema: dict[str, Any] = getattr(params, "requested_schema", None) or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    content = {
        key: prop["default"]
        for key, prop in properties.items()
        if isinstance(prop, dict) and "default" in prop
    }
    log.info("elicitation: accepting with defaults %s", content)
    return types.ElicitResult(action="accept", content=content)


async def run(url: str, scenario: str) -> int:
    if scenario not in SCENARIO_TOOLS:
        log.error("unknown scenario %r (known: %s)", scenario, ", ".join(SCENARIO_TOOLS))
        return 2
    # mode="legacy": the initialize handshake, which every one of these mock servers speaks.
    async with Client(url, mode="legacy", elicitation_callback=accept_defaults) as client:
        tools = await client.list_tools()
        log.info("tools: %s", [tool.name for tool in tools.tools])
        call = SCENARIO_TOOLS[scenario]
        if call is not None:
            name, arguments = call
            result = await client.call_tool(name, arguments)
            log.info("%s -> is_error=%s %s", name, result.is_error, result.content)
            if result.is_error:
                return 1
    return 0


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    if len(sys.argv) < 2:
        print("usage: sdk_client.py <server-url>  (MCP_CONFORMANCE_SCENARIO set)", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    return anyio.run(run, sys.argv[-1], scenario)


if __name__ == "__main__":
    sys.exit(main())
