"""Our client as the program under test of the official MCP conformance suite.

The harness (``conformance/run.py`` starts it) runs ``client.py <server-url>`` against a mock
server that records what the client did, with this environment:

- ``MCP_CONFORMANCE_SCENARIO``: the scenario's name.
- ``MCP_CONFORMANCE_PROTOCOL_VERSION``: the wire the mock speaks. ``2026-07-28`` runs our client
  with ``era="modern"`` (no handshake, ``_meta`` on every request); a dated version up to
  ``2025-11-25`` with ``era="legacy"`` (the ``initialize`` handshake); unset (outside the
  harness) with the default ``era="auto"``.
- ``MCP_CONFORMANCE_CONTEXT`` (optional): JSON with data for the scenario, such as ``toolCalls``
  (the calls ``http-custom-headers`` wants made) or credentials for the ``auth/*`` scenarios.

It connects with ``mcp_asyncio.Client`` (as a user would, plus ``fail_fast``: a refused connect
ends the run at once instead of retrying until the harness kills us), lists the tools and then
does what the scenario asks:

- ``initialize``, ``json-schema-ref-no-deref``: list the tools only.
- ``tools_call``, ``request-metadata``: ``add_numbers(a=5, b=3)``; ``request-metadata`` also
  declares the sampling, roots and elicitation capabilities (with stub handlers).
- ``elicitation-sep1034-client-defaults``: ``test_client_elicitation_defaults``; the server asks
  ``elicitation/create`` and ``answer_elicitation`` accepts with the schema's defaults.
- ``sse-retry``: ``test_reconnection``; the server ends the call's SSE stream before answering,
  so the answer arrives only after a resumption (GET + ``Last-Event-ID``, after ``retry:`` ms).
  The mock answers a pending call on whatever GET arrives, even one without ``Last-Event-ID``
  (``sse-retry.ts``, ``handleGetSSEStream``: ``if (this.pendingToolCallId !== null)``; v0.1.16's
  mock did the same), which the spec forbids ("MUST NOT send a JSON-RPC response on the stream
  unless resuming", 2025-11-25 transports), and times the last GET it saw as the reconnect. No
  wait is needed here: the client is ready only once its standalone GET has been answered, so
  that GET always reaches the mock before the call, and the resumption is the last GET.
- ``sep-2322-client-request-state``: the four ``test_mrtr_*`` tools in the scenario's order.
- ``json-schema-2020-12-preservation``: echo ``json_schema_2020_12_tool``'s input schema back
  through ``json_schema_echo``, exactly as listed.
- ``sep-2640-client-no-prefetch`` (Skills, an extension scenario at 2025-11-25): list the
  skills (``list_skills``) and read no file: the mock fails a client that fetches any.
- ``sep-2640-client-verify-{digest,size,frontmatter}``: list the skills and read the first
  skill's ``SKILL.md`` (``read_skill``), which the mock has tampered with (other bytes of the
  same length; a line appended; the frontmatter's description changed with digest and size
  recomputed to match). Verification must fail, so the skill is not loaded and no other file
  (``references/FORMS.md``) is read; exit 1 then, which these scenarios allow. No tool list.
- ``http-custom-headers`` (or any scenario whose context has ``toolCalls``): make those calls.
- Any other scenario (``http-standard-headers``, ``http-invalid-tool-headers``, ``auth/*``, a
  scenario added later): call every listed tool once, with placeholder values for its required
  arguments.

For ``auth/*`` scenarios the spec gets an ``oauth`` mapping from the context: a pre-registered
``client_id``/``client_secret``; ``grant: client_credentials`` for ``auth/client-credentials-*``
(with ``private_key_pem`` written to a private temporary ``key_file``); ``grant: jwt_bearer``
for ``auth/wif-*`` (the context's ``valid_jwt`` written to a private ``assertion_file``);
``grant: enterprise`` for ``auth/enterprise-managed-authorization`` (the context's
``idp_id_token`` written to a private ``id_token_file``, with its ``idp_token_endpoint`` and
``idp_client_id``, and the authorization server's ``client_id``/``client_secret``; its
``idp_issuer`` is not needed, the token endpoint being given); else
a Client ID Metadata Document URL, as the official SDK's conformance client offers one. The
browser step is ``headless_authorize``: it GETs the authorization URL without following the
redirect and hands the ``Location`` (code, state, iss) back to the client (``authorize=``),
which checks it.

Exits 0 when done; 1 when the connection or a call fails (the error is logged to stderr, which
the harness keeps); 2 for a missing URL or unreadable context.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import anyio.to_thread

import mcp_asyncio
from mcp_core import LEGACY_VERSIONS, MODERN_VERSION, InMemoryTokenStore, McpError
from mcp_core.driver import token_store_key
from mcp_core.skills import SkillVerificationError

ADD = ("add_numbers", {"a": 5, "b": 3})
# scenario -> the tools to call, in order, with their arguments; () lists the tools only.
SCENARIO_CALLS: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "initialize": (),
    "json-schema-ref-no-deref": (),
    "tools_call": (ADD,),
    "request-metadata": (ADD,),
    "elicitation-sep1034-client-defaults": (("test_client_elicitation_defaults", {}),),
    "sse-retry": (("test_reconnection", {}),),
    "sep-2322-client-request-state": (
        ("test_mrtr_echo_state", {}),
        ("test_mrtr_unrelated", {}),
        ("test_mrtr_no_state", {}),
        ("test_mrtr_no_result_type", {}),
    ),
}
# The Skills scenarios (SEP-2640): list only, or list and load the first skill.
SKILLS_LIST_ONLY = "sep-2640-client-no-prefetch"
SKILLS_PREFIX = "sep-2640-client-"

# Scenarios that check the capabilities a client declares get a handler for each feature.
ALL_CAPABILITIES = frozenset({"request-metadata"})

# Well inside run.py's per-scenario limit, so a stuck client fails with its own error (logged)
# instead of being killed by the harness with nothing said.
TIMEOUT = 10.0

# Placeholder argument values by JSON Schema type, for tools called without a script.
PLACEHOLDERS: dict[str, Any] = {
    "string": "x",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "object": {},
    "array": [],
    "null": None,
}

# Offered as the client's Client ID Metadata Document URL (the official SDK's conformance
# client offers the same); the mock authorization servers never fetch it.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"

log = logging.getLogger("conformance.client")


def era_for(version: str | None) -> str:
    """The ``era`` that speaks the wire the harness names (``auto`` when it names none)."""
    if version == MODERN_VERSION:
        return "modern"
    if version in LEGACY_VERSIONS:
        return "legacy"
    if version:
        log.warning("unknown protocol version %r: letting the client negotiate", version)
    return "auto"


def answer_elicitation(params: Mapping[str, Any]) -> dict[str, Any]:
    """Answer an ``elicitation/create``: accept, with each schema property set to its default.

    ``params`` is the request's params as sent (``message``, ``requestedSchema``). A property
    without a ``default`` is left out, except a boolean, which is ``True`` (a confirmation).
    A request without a form schema (URL mode) is declined.
    """
    schema = params.get("requestedSchema")
    if not isinstance(schema, Mapping):
        log.info("elicitation without a schema: declining")
        return {"action": "decline"}
    properties = schema.get("properties") or {}
    content: dict[str, Any] = {}
    for name, prop in properties.items():
        if not isinstance(prop, Mapping):
            continue
        if "default" in prop:
            content[name] = prop["default"]
        elif prop.get("type") == "boolean":
            content[name] = True
    log.info("elicitation: accepting with %s", content)
    return {"action": "accept", "content": content}


def answer_sampling(params: Mapping[str, Any]) -> dict[str, Any]:
    """A stub ``sampling/createMessage`` answer (only declared where a scenario checks it)."""
    return {
        "role": "assistant",
        "content": {"type": "text", "text": ""},
        "model": "conformance-stub",
    }


def answer_roots(params: Mapping[str, Any]) -> dict[str, Any]:
    """A stub ``roots/list`` answer: no roots."""
    return {"roots": []}


def placeholder_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Values for a tool's required arguments, by their declared type."""
    properties = schema.get("properties") or {}
    arguments = {}
    for name in schema.get("required") or ():
        prop = properties.get(name)
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        arguments[name] = PLACEHOLDERS.get(kind, "x") if isinstance(kind, str) else "x"
    return arguments


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the redirect comes back as an HTTPError carrying its Location


def _fetch_redirect(url: str) -> str:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=TIMEOUT) as response:
            status, location = response.status, response.headers.get("Location")
    except urllib.error.HTTPError as error:
        status, location = error.code, error.headers.get("Location")
    if status not in (301, 302, 303, 307, 308) or not location:
        raise RuntimeError(f"the authorization endpoint answered {status} without a redirect")
    return str(location)


async def headless_authorize(url: str) -> str:
    """The browser step without a browser: the mock authorization server answers the
    authorization URL at once with a redirect, whose URL is the answer. The URLs hold the state
    and code, so they are not logged (and the audit looks for them)."""
    log.info("authorizing headless")
    location = await anyio.to_thread.run_sync(_fetch_redirect, url)
    for name in ("code", "state"):
        AUDIT.secrets.update(v for k, v in parse_qsl(urlsplit(location).query) if k == name)
    AUDIT.secrets.update(v for k, v in parse_qsl(urlsplit(url).query) if k == "state")
    return location


class SecretAudit(logging.Handler):
    """No secret in a log line, ``repr`` or ``Status`` during the suite's flows: every log
    record of our packages (DEBUG and up) is kept, and at the end searched, with the client's
    ``repr`` and ``status()``, for every secret the flow handled: tokens and the client secret
    (from the token store), codes and states (from the redirects), the context's client secret,
    private key, workload JWT and ID token (and an IdP client secret), the DPoP key and proofs.
    A hit prints ``LEAK_MARK`` on stderr, which ``run.py`` fails the scenario for (even one
    whose client may exit with an error)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.secrets: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())

    def collect(self, store: InMemoryTokenStore, url: str, context: Mapping[str, Any]) -> None:
        record = store.load(token_store_key(url))
        if record is not None:
            for value in (record.access_token, record.refresh_token, record.client_secret):
                if value:
                    self.secrets.add(value)
            if record.dpop_key:  # the DPoP private key (RFC 9449), and any proof signed with it
                private = json.loads(record.dpop_key)["d"]
                self.secrets.update((record.dpop_key, private, DPOP_PROOF))
        for name in (
            "client_secret",
            "private_key_pem",
            "valid_jwt",
            "idp_id_token",
            "idp_client_secret",
        ):
            if isinstance(context.get(name), str):
                self.secrets.add(context[name])

    def leaks(self, *extra: str) -> list[str]:
        text = "\n".join([*self.texts, *extra])
        return sorted({f"{len(s)} characters" for s in self.secrets if len(s) >= 6 and s in text})


AUDIT = SecretAudit()
# How every DPoP proof of ours begins: its header {"alg":"ES256","jwk":..., base64url.
DPOP_PROOF = "eyJhbGciOiJFUzI1NiIsImp3ayI6"
LEAK_MARK = "SECRET LEAK"


def oauth_fields(scenario: str, context: Mapping[str, Any], key_dir: Path) -> dict[str, Any]:
    """The spec's ``oauth`` mapping for an ``auth/*`` scenario ({} for the others)."""
    if not scenario.startswith("auth/"):
        return {}
    oauth: dict[str, Any] = {}
    if scenario.startswith("auth/client-credentials"):
        oauth["grant"] = "client_credentials"
    jwt = context.get("valid_jwt")
    if scenario.startswith("auth/wif") and isinstance(jwt, str):
        # Workload identity (SEP-1933): the platform's JWT, kept in a file as a platform does.
        assertion_file = key_dir / "workload-token"
        assertion_file.touch(mode=0o600)
        assertion_file.write_text(jwt)
        oauth["grant"] = "jwt_bearer"
        oauth["assertion_file"] = str(assertion_file)
    id_token = context.get("idp_id_token")
    if scenario == "auth/enterprise-managed-authorization" and isinstance(id_token, str):
        # Enterprise-managed authorization (SEP-990): the user's ID token from the enterprise
        # sign-on, kept in a private file; the IdP's token endpoint and client from the context.
        id_token_file = key_dir / "id-token"
        id_token_file.touch(mode=0o600)
        id_token_file.write_text(id_token)
        oauth["grant"] = "enterprise"
        oauth["id_token_file"] = str(id_token_file)
        for name in ("idp_token_endpoint", "idp_client_id", "idp_client_secret"):
            if isinstance(context.get(name), str):
                oauth[name] = context[name]
    for name in ("client_id", "client_secret"):
        if isinstance(context.get(name), str):
            oauth[name] = context[name]
    pem = context.get("private_key_pem")
    if isinstance(pem, str):
        key_file = key_dir / "client-key.pem"
        key_file.touch(mode=0o600)
        key_file.write_text(pem)
        oauth["key_file"] = str(key_file)
    if "client_id" not in oauth and "grant" not in oauth:
        oauth["client_metadata_url"] = CLIENT_METADATA_URL
    return oauth


def read_context() -> dict[str, Any]:
    """``MCP_CONFORMANCE_CONTEXT`` as a dict ({} when unset); ``ValueError`` when it is not a
    JSON object."""
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if not raw:
        return {}
    context = json.loads(raw)
    if not isinstance(context, dict):
        raise ValueError("MCP_CONFORMANCE_CONTEXT is not a JSON object")
    # Only the keys: the values may be credentials.
    log.info("context keys: %s", sorted(context))
    return context


async def run(url: str, scenario: str, version: str | None, context: Mapping[str, Any]) -> int:
    era = era_for(version)
    handlers: dict[str, Any] = {"elicitation": answer_elicitation}
    if scenario in ALL_CAPABILITIES:
        handlers.update(sampling=answer_sampling, roots=answer_roots)
    log.info("scenario %r at protocol version %s: era=%s", scenario, version, era)
    options: dict[str, Any] = dict(handlers)
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-client-") as key_dir:
        oauth = oauth_fields(scenario, context, Path(key_dir))
        store = InMemoryTokenStore()
        if oauth:
            options["oauth"] = oauth
            options["authorize"] = headless_authorize
            options["token_store"] = store
            log.info("oauth: %s", sorted(oauth))
        shown: list[str] = []
        result = await session(url, scenario, era, context, options, shown)
        AUDIT.collect(store, url, context)
        leaks = AUDIT.leaks(*shown)
        if leaks:
            print(
                f"{LEAK_MARK}: secrets of {leaks} reached a log record or a repr", file=sys.stderr
            )
            return 1
        return result


async def session(
    url: str,
    scenario: str,
    era: str,
    context: Mapping[str, Any],
    options: dict[str, Any],
    shown: list[str],
) -> int:
    failed = False
    try:
        async with mcp_asyncio.Client(
            name="conformance",
            url=url,
            era=era,
            fail_fast=True,
            init_timeout=TIMEOUT,
            **options,
        ) as client:
            if scenario.startswith(SKILLS_PREFIX):
                shown += [repr(client), repr(client.status())]
                return await skills(client, scenario)
            tools = await client.list_tools(timeout=TIMEOUT)
            log.info("tools: %s", [tool.name for tool in tools])
            scripted = scenario in SCENARIO_CALLS
            if scripted:
                calls = list(SCENARIO_CALLS[scenario])
            elif scenario == "json-schema-2020-12-preservation":
                focal = next((t for t in tools if t.name == "json_schema_2020_12_tool"), None)
                if focal is None:
                    log.error("json_schema_2020_12_tool was not listed")
                    return 1
                calls = [("json_schema_echo", {"schema": dict(focal.input_schema)})]
                scripted = True
            elif isinstance(context.get("toolCalls"), list):
                calls = [(c["name"], c.get("arguments") or {}) for c in context["toolCalls"]]
                scripted = True
            else:
                calls = [(t.name, placeholder_arguments(t.input_schema)) for t in tools]
            for name, arguments in calls:
                try:
                    result = await client.call_tool(name, arguments, timeout=TIMEOUT)
                except McpError as error:
                    log.error("%s failed: %r", name, error)
                    failed = True
                    continue
                log.info("%s -> is_error=%s %r", name, result.is_error, result.text)
                # A tool's own error fails a scripted call; unscripted calls only explore.
                failed = failed or (scripted and result.is_error)
            log.info("status: %s", client.status())
            shown += [repr(client), repr(client.status())]
    except McpError as error:
        log.error("scenario %s failed: %r", scenario, error)
        shown.append(str(error))
        return 1
    return 1 if failed else 0


async def skills(client: mcp_asyncio.Client, scenario: str) -> int:
    """List the skills; unless the scenario checks listing alone, load the first skill's
    ``SKILL.md``. 1 when its verification fails (the file is not used: nothing else is read)."""
    listed = await client.list_skills(timeout=TIMEOUT)
    log.info("skills: %s", [(skill.name, skill.uri) for skill in listed])
    if scenario == SKILLS_LIST_ONLY or not listed:
        return 0
    try:
        text = await client.read_skill(listed[0], timeout=TIMEOUT)
    except SkillVerificationError as error:
        log.error("%s: not loaded: %s", listed[0].uri, error)
        return 1
    log.info("%s: loaded, %d characters", listed[0].uri, len(text))
    return 0


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    # Our packages' debug log shows each request and event; run.py prints its tail on failure.
    for name in ("mcp_core", "mcp_asyncio", "mcp_client", "_mcp_io", "mcp.server"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    logging.getLogger().addHandler(AUDIT)
    if len(sys.argv) < 2:
        print("usage: client.py <server-url>  (MCP_CONFORMANCE_SCENARIO set)", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    try:
        context = read_context()
    except ValueError as error:
        log.error("unreadable MCP_CONFORMANCE_CONTEXT: %s", error)
        return 2
    return anyio.run(run, sys.argv[-1], scenario, version, context)


if __name__ == "__main__":
    sys.exit(main())
