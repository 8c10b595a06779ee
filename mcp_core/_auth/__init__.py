"""Authorization: OAuth 2.1 as MCP uses it, wrapped around the HTTP transport (``layer``), and
its pure building blocks (discovery ``metadata``, client identity ``clients``, ``oauth``).

The authorization layer keeps the session's guarantees:

- every request of this layer has a deadline: ``OAuthSettings.request_timeout``, never past
  the connect deadline of a handshake waiting for it (that deadline keeps running through
  discovery, registration and the token requests; it is suspended only while the user is at
  the browser, and starts again when the browser step ends). An answer is read up to
  ``AUTH_MAX_BYTES``. Past either, the request is aborted (``AbortHttp``);
- failures are of two kinds. A definite answer refuses for good (``AuthorizationFailed``, or
  ``AuthorizationRequired`` when only the user can help): a refused client or grant, a
  metadata document for another resource or issuer, a refused step-up, a browser step that
  ended without a usable redirect. The layer is then ``REFUSED``: every held and later
  request fails with that error, a handshake fails its connection permanently. Anything else
  may pass (``AuthorizationUnavailable``): no answer in time, a connection error, an answer
  over the cap, HTTP 429 or 5xx, a redirect, an answer that cannot be read. Then every held
  request is answered now (a handshake fails its connect attempt, which the session retries
  with backoff, honouring a ``Retry-After``; caller work gets the error) and the layer goes
  back to where it started: the next request that needs a token tries again. A metadata URL
  that fails this way is skipped for the next one (RFC 9728: the challenge's URL falls back
  to the well-known ones);
- no bearer token goes over plain http to a server that is not on this machine (RFC 6750
  §5.3) unless ``allow_insecure_http``; no metadata, issuer or endpoint of a remote server
  leads to this machine (``metadata.may_fetch``);
- ``Close`` aborts the layer's requests in flight.
"""
