"""The I/O-side code both drivers share, private to this distribution.

``mcp_asyncio`` and ``mcp_sync`` are twins that never import each other: importing
the anyio driver must not load the blocking one, nor the reverse. What both need lives here, in one
neutral package that belongs to neither driver: it imports no event loop (no anyio, no
asyncio) and starts no thread, so either driver may import it without loading the other's
machinery.

- ``_mcp_io.h11wire``: HTTP/1.1 on h11 without I/O (request heads, response parsing, the
  pool's bookkeeping, the start order); pure, but no core module sends HTTP itself.
- ``_mcp_io.http``: the socket side of the HTTP executors (is an idle pooled socket still
  usable, how an OS error or a failure is worded, the TLS context).
- ``_mcp_io.otel``: the optional OpenTelemetry span of a ``call_tool``.
- ``_mcp_io.client``: what both ``Client`` and ``ClientGroup`` implementations run the same
  way around the application's code (reservations, progress callbacks, the spawn failure's
  wording, the group's keywords and log).
- ``_mcp_io.oauth``: the driver's side of OAuth (the browser step, signing a client
  assertion, the token store on the wall clock); ``_mcp_io.redirect`` and ``_mcp_io.tokens``
  are its loopback redirect listener and the command's token file, ``_mcp_io.dpop`` its DPoP
  key and proofs (RFC 9449).
- ``_mcp_io.fork``: knowing that a client is used in a forked child of the process that
  started it (``UsedAfterFork``).

Named for what it holds (I/O for MCP), with a leading underscore: nothing here is public API.
"""
