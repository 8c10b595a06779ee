"""Our client as the program under test of the official MCP conformance suite.

The harness (``conformance/run.py`` starts it) runs ``client.py <server-url>`` with
``MCP_CONFORMANCE_SCENARIO`` set, against a mock server that records what the client did. This
program connects with ``mcp_asyncio.Client`` (default options, as a user would), lists the tools
and, for the scenarios that need it, calls the scenario's tool:

- ``initialize``: the handshake and ``tools/list`` only.
- ``tools_call``: ``add_numbers(a=5, b=3)``.
- ``elicitation-sep1034-client-defaults``: ``test_client_elicitation_defaults``; during the call the
  server asks ``elicitation/create`` and ``accept_defaults`` answers with the schema's defaults.
- ``sse-retry``: ``test_reconnection``; the server ends the call's SSE stream before answering, so
  the answer arrives only after a resumption (GET + ``Last-Event-ID``, after ``retry:`` ms).

Exits 0 when done; 1 when a call fails (the error is logged to stderr, which the harness keeps);
2 for a missing URL or an unknown scenario (auth scenarios are not supported yet).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

import anyio

import mcp_asyncio
from mcp_core import McpError

# scenario -> (tool to call, its arguments); None: connect and list tools only.
SCENARIO_TOOLS: dict[str, tuple[str, dict[str, Any]] | None] = {
    "initialize": None,
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}

# Well inside the harness's 30 s per scenario, so a stuck client fails with its own error
# (logged) instead of being killed by the harness with nothing said.
TIMEOUT = 10.0

log = logging.getLogger("conformance.client")


def accept_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    """Answer an ``elicitation/create``: accept, with each schema property set to its default.

    ``params`` is the request's params as sent (``message``, ``requestedSchema``). Properties
    without a ``default`` are left out. A request without a form schema (URL mode) is declined.
    """
    schema = params.get("requestedSchema")
    if not isinstance(schema, Mapping):
        log.info("elicitation without a schema: declining")
        return {"action": "decline"}
    properties = schema.get("properties") or {}
    content = {
        name: prop["default"]
        for name, prop in properties.items()
        if isinstance(prop, Mapping) and "default" in prop
    }
    log.info("elicitation: accepting with defaults %s", content)
    return {"action": "accept", "content": content}


async def run(url: str, scenario: str) -> int:
    if scenario not in SCENARIO_TOOLS:
        log.error("unknown scenario %r (known: %s)", scenario, ", ".join(SCENARIO_TOOLS))
        return 2
    try:
        async with mcp_asyncio.Client(
            name="conformance", url=url, elicitation=accept_defaults, init_timeout=TIMEOUT
        ) as client:
            tools = await client.list_tools(timeout=TIMEOUT)
            log.info("tools: %s", [tool.name for tool in tools])
            call = SCENARIO_TOOLS[scenario]
            if call is not None:
                name, arguments = call
                result = await client.call_tool(name, arguments, timeout=TIMEOUT)
                log.info("%s -> is_error=%s %r", name, result.is_error, result.text)
                if result.is_error:
                    return 1
            log.info("status: %s", client.status())
    except McpError as error:
        log.error("scenario %s failed: %r", scenario, error)
        return 1
    return 0


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    # Our packages' debug log shows each request and event; run.py prints its tail on failure.
    for name in ("mcp_core", "mcp_asyncio"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    if len(sys.argv) < 2:
        print("usage: client.py <server-url>  (MCP_CONFORMANCE_SCENARIO set)", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    return anyio.run(run, sys.argv[-1], scenario)


if __name__ == "__main__":
    sys.exit(main())
