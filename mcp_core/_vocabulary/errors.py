"""The error classes every caller can see.

Each error says what happened in plain words and what to do about it. None carries a secret:
messages are built from redacted specs, exit codes, short excerpts and status numbers only.

Errors are values inside the machine: it puts them in ``Reply`` actions and the drivers raise
them in the caller's task or thread. Two errors compare equal when they are of the same class
and carry the same message, so recorded sessions replay to identical actions. ``str(error)``
is always the full sentence; ``error.message`` is the same sentence, except for a
``JsonRpcError``, whose ``message`` is the server's own (its ``str`` adds the code).
"""

from __future__ import annotations

__all__ = [
    "AuthorizationFailed",
    "AuthorizationRequired",
    "AuthorizationUnavailable",
    "Busy",
    "ConnectFailed",
    "HttpError",
    "InitializationFailed",
    "InvalidArguments",
    "InvalidResponse",
    "InvalidSpec",
    "JsonRpcError",
    "ListTooLong",
    "McpError",
    "MessageTooLarge",
    "MissingClientCapability",
    "NoHttpClient",
    "NotReady",
    "NotSupported",
    "OutputValidationError",
    "RequestTimeout",
    "ServerExited",
    "ServerUnreachable",
    "SessionRejected",
    "TaskCancelled",
    "UnexpectedEvent",
    "UnknownPrompt",
    "UnknownTool",
    "UnmeteredCall",
    "UnsupportedVersion",
    "UrlElicitationRequired",
    "UsedAfterFork",
    "WrongEventLoop",
]


class McpError(Exception):
    """Base class of every error this client raises."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.args == self.args

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.args))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class InvalidSpec(McpError):
    """The spec was refused; nothing was started. The message shows the spec redacted."""


class UnexpectedEvent(McpError):
    """A driver fed an event the machine's transition table does not allow in its phase (say,
    ``ProcessSpawned`` for a slot that asked for no process). Raised by ``handle()`` at once,
    before anything changes: it is a bug in the driver, not something a server can cause.
    ``phase`` and ``event`` name the two."""

    def __init__(self, phase: str, event: str, where: str = "") -> None:
        super().__init__(
            f"{event} is not allowed in phase {phase}{where}: the driver fed an event the "
            "machine did not ask for (see the transition table in mcp_core/_vocabulary/phases.py)"
        )
        self.phase = phase
        self.event = event


class NoHttpClient(McpError):
    """A ``url`` spec was given but this Python cannot speak to it: an ``https://`` URL needs
    the ``ssl`` module, which a Python built without OpenSSL lacks. Raised by the ``Client``
    constructor (a ``ClientGroup`` leaves that server out, saying why); nothing was started.
    (The rest of the HTTP stack, h11 and the socket module, is imported with the drivers.)"""


class Busy(McpError):
    """The in-flight window and the queue are both full; nothing was sent. Retry later."""


class RequestTimeout(McpError, TimeoutError):
    """The request passed its deadline; the server was told to cancel it. Also the ``cause``
    of a ``ConnectFailed`` for a handshake that did not finish within ``init_timeout``.
    Also a ``TimeoutError``, so ``except TimeoutError`` (as around ``asyncio.wait_for``) catches
    it; its ``errno`` is None."""


class NotReady(McpError):
    """The session is not ready (state given in ``state``); wait with ``await_ready``."""

    def __init__(self, state: str, message: str | None = None) -> None:
        super().__init__(
            message or f"the session is {state}, not ready; call await_ready() before calling tools"
        )
        self.state = state


class ConnectFailed(McpError):
    """The last connect or handshake failed; ``reason`` says why. ``cause`` is the typed
    failure: ``InitializationFailed`` (initialize answered with an error),
    ``UnsupportedVersion``, ``InvalidResponse`` (an answer of the wrong shape, or an HTTP
    request that failed), ``ServerUnreachable`` (nothing answered at the URL),
    ``ServerExited`` (the process died during the handshake), ``RequestTimeout`` (no
    handshake within ``init_timeout``), ``MessageTooLarge``, ``HttpError`` (also in
    ``http_error``), ``AuthorizationRequired``, ``AuthorizationFailed``, ...; ``None`` when
    there is no typed failure to give (a process that could not be spawned: the reason names
    the file).

    ``attempts`` is how many connect attempts had failed in a row when this was raised.
    ``await_ready`` (and so a ``with`` block) raises one that ``gave_up`` waiting: its
    deadline passed, or two attempts in a row failed the same way (docs/client.md, "When a
    server cannot start"); the client itself goes on retrying until it is stopped."""

    def __init__(
        self,
        reason: str,
        *,
        permanent: bool = False,
        http_error: HttpError | None = None,
        cause: McpError | None = None,
        attempts: int = 1,
        gave_up: str | None = None,
    ) -> None:
        if gave_up is not None:
            # One sentence: how the wait ended, then the last failure (its stderr tail last).
            message = f"could not connect ({gave_up}): {reason}"
        elif permanent:
            message = (
                f"could not connect: {reason}; this will not be retried: "
                f"fix the spec and create a new client"
            )
        else:
            message = (
                f"could not connect: {reason}; the client retries with backoff "
                f"(await_ready waits for it)"
            )
        super().__init__(message)
        self.reason = reason
        self.permanent = permanent
        if http_error is None and isinstance(cause, HttpError):
            http_error = cause
        self.http_error = http_error  # the HTTP answer that refused the connect, if any
        self.cause = cause if cause is not None else http_error
        self.attempts = attempts
        self.gave_up = gave_up is not None


class ServerUnreachable(McpError, ConnectionError):
    """Nothing answered at the server's URL: the connection was refused, the name did not
    resolve, TLS failed or the connection dropped before any HTTP status came. ``url`` is the
    URL (userinfo, query and fragment redacted), ``reason`` what the network said. Reported
    as a ``ConnectFailed``'s ``cause``; the client retries with backoff (a server may still
    be starting). Also a ``ConnectionError``; its ``errno`` is None."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(
            f"nothing answered at {url} ({reason}): is the server running, and is the "
            f"address right?"
        )
        self.url = url
        self.reason = reason


class InitializationFailed(McpError):
    """The server answered ``initialize`` with a JSON-RPC error, kept in ``error`` (its
    ``code``, the server's ``message`` and ``data``). Reported as a ``ConnectFailed``'s
    ``cause``; the client retries with backoff."""

    def __init__(self, reason: str, error: JsonRpcError | None = None) -> None:
        super().__init__(f"the initialize handshake failed: {reason}")
        self.reason = reason
        self.error = error


class UnsupportedVersion(McpError):
    """The server picked a protocol version this client does not speak."""

    def __init__(self, version: str, supported: tuple[str, ...]) -> None:
        super().__init__(
            f"the server chose protocol version {version!r}, which this client does not "
            f"support (supported: {', '.join(supported)}); upgrade the client or the server"
        )
        self.version = version
        self.supported = supported


class ServerExited(McpError):
    """The server process exited while the request was pending or queued, or its connection
    died with it still running (it closed its stdout or its stdin): ``code`` is its exit code,
    None while it is not known; ``what`` says what happened when it is not an exit."""

    def __init__(self, code: int | None, stderr_tail: str, what: str | None = None) -> None:
        tail = f"; last stderr:\n{stderr_tail}" if stderr_tail else "; it wrote nothing to stderr"
        super().__init__(
            f"the server process {what or f'exited with code {code}'} before answering; "
            f"the client restarts it with backoff{tail}"
        )
        self.code = code
        self.stderr_tail = stderr_tail


class MessageTooLarge(McpError):
    """A message from the server exceeded ``max_message_bytes`` and was discarded."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"the server sent a message of at least {size} bytes, over the limit of {limit}; "
            f"it was discarded (raise max_message_bytes in the spec if this is expected)"
        )
        self.size = size
        self.limit = limit


class SessionRejected(McpError):
    """The server rejected the session (HTTP 404); the client re-initializes by itself."""


class HttpError(McpError):
    """An HTTP answer with a non-success status."""

    def __init__(self, status: int, www_authenticate: str | None = None) -> None:
        super().__init__(f"the server answered HTTP {status}")
        self.status = status
        self.www_authenticate = www_authenticate


class JsonRpcError(McpError):
    """The server answered the request with a JSON-RPC error: ``code``, ``message`` (the
    server's own words, cut to 500 characters) and ``data``. ``str(error)`` is the sentence
    "the server answered with JSON-RPC error <code>: <message>"."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(f"the server answered with JSON-RPC error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class UrlElicitationRequired(JsonRpcError):
    """The server answered -32042 (URLElicitationRequiredError, 2025-11-25 client/elicitation):
    the request can succeed only after the user completed the URL-mode elicitations in
    ``elicitations``, each a dict with ``elicitationId``, ``url`` and ``message`` (and ``mode``
    ``"url"``). Show the user each URL's host and message, open it only with their consent,
    then retry the call; the client's ``elicitation_complete=`` callback hears when the server
    reports one done. ``str(error)`` names only how many are needed, never a URL; ``message``
    is the server's own."""

    CODE = -32042

    def __init__(
        self, message: str, elicitations: tuple[dict[str, str], ...], data: object = None
    ) -> None:
        count = len(elicitations)
        McpError.__init__(
            self,
            f"the server needs the user to complete {count} URL elicitation"
            f"{'' if count == 1 else 's'} first (see .elicitations), then retry the call",
        )
        self.code = self.CODE
        self.message = message
        self.data = data
        self.elicitations = elicitations


class MissingClientCapability(JsonRpcError):
    """The server answered -32021 (MissingRequiredClientCapability, 2026-07-28 basic/index
    §Error Codes): the request needs client capabilities this client did not declare.
    ``extensions`` names the extensions among them (``data.requiredCapabilities.extensions``,
    SEP-2133) and ``capabilities`` the other capabilities (``"sampling.tools"`` for
    ``{"sampling": {"tools": {}}}``); ``str(error)`` names both and says
    how to declare an extension. ``message`` is the server's own."""

    CODE = -32021

    def __init__(self, message: str, data: object = None) -> None:
        required = data.get("requiredCapabilities") if isinstance(data, dict) else None
        required = required if isinstance(required, dict) else {}
        listed = required.get("extensions")
        self.extensions = tuple(str(k)[:100] for k in listed) if isinstance(listed, dict) else ()
        # One level down where the server names one: {"sampling": {"tools": {}}} is
        # "sampling.tools", what the client must declare.
        self.capabilities = tuple(
            f"{str(key)[:100]}.{str(sub)[:100]}"
            if isinstance(inner, dict) and inner
            else str(key)[:100]
            for key, inner in required.items()
            if key != "extensions"
            for sub in (inner if isinstance(inner, dict) and inner else (None,))
        )
        named = [*(f"extension {e}" for e in self.extensions), *self.capabilities]
        what = ", ".join(named) if named else "capabilities it did not name"
        advice = (
            "; declare an extension the client supports with extensions={identifier: settings}"
            if self.extensions
            else ""
        )
        McpError.__init__(
            self,
            f"the server requires what this client did not declare ({what}){advice}",
        )
        self.code = self.CODE
        self.message = message
        self.data = data


class AuthorizationRequired(McpError):
    """The server needs an OAuth login before it answers: no usable token is stored
    and none can be obtained without the user. ``server`` names the server as configured;
    ``reason`` says in plain words why a login is needed (never a token or a code)."""

    def __init__(self, server: str, reason: str = "it answered HTTP 401") -> None:
        super().__init__(
            f"server {server!r} needs authorization ({reason}): run `mcp-client login {server}` "
            "(or give the client an authorize= callback) and try again"
        )
        self.server = server
        self.reason = reason


class AuthorizationFailed(McpError):
    """The authorization server or the flow refused: a metadata document that does
    not match, an authorization response whose ``state`` or ``iss`` is wrong, a token endpoint
    error. ``error_code`` keeps the OAuth ``error`` code (RFC 6749 §5.2, e.g. ``invalid_grant``)
    when the server sent one, else ``None``. The message never holds a token, code, verifier,
    state, client secret or assertion; a server's ``error_description`` appears only as a
    short excerpt."""

    def __init__(self, error_code: str | None, detail: str) -> None:
        code = f" (OAuth error {error_code!r})" if error_code else ""
        super().__init__(f"authorization failed: {detail}{code}")
        self.error_code = error_code
        self.detail = detail


class AuthorizationUnavailable(McpError):
    """Authorization could not be had for now: a request of the authorization
    layer (a metadata document, registration, the token endpoint) failed in a way that may pass
    by itself: no answer within its deadline, a connection error, an answer over the size cap,
    HTTP 429 or 5xx, a redirect, or an answer that cannot be read. Nothing is refused for good:
    a handshake that waited for the token fails its connect attempt (this error is the
    ``ConnectFailed``'s ``cause``) and the client retries with backoff; a call that waited for
    it fails with this error, and the next request tries again.

    ``origin`` is the scheme, host and port the request went to (never a path, query or
    userinfo); ``step`` names the request (``"protected resource metadata"``,
    ``"authorization server metadata"``, ``"registration"``, ``"token"``, ``"refresh"``);
    ``detail`` says what happened; ``retry_after`` is the server's ``Retry-After`` in seconds,
    if it sent one (the next connect attempt waits at least that long)."""

    def __init__(
        self, origin: str, step: str, detail: str, retry_after: float | None = None
    ) -> None:
        super().__init__(
            f"authorization is unavailable for now: the {step} request to {origin} {detail}; "
            "this may pass: the client tries again (the next connect attempt, or the next call)"
        )
        self.origin = origin
        self.step = step
        self.detail = detail
        self.retry_after = retry_after


class InvalidArguments(McpError, TypeError, ValueError):
    """The arguments (or params, or ``meta=``) of a request hold a value JSON cannot carry: a
    ``set``, ``bytes``, a ``datetime``, an arbitrary object, NaN or an infinity, a cycle, or
    nesting deeper than the client sends; or ``meta=`` names a key the client sets itself
    (``progressToken``, an ``io.modelcontextprotocol/`` key, ``traceparent``, ``tracestate``).
    Refused before the request is admitted: nothing was sent,
    no slot or queue place was taken, and no other caller is touched. Also a ``TypeError`` and
    a ``ValueError``, so code that caught the plain ones keeps working. ``path`` points at the
    value (``arguments.items[2]``, ``_meta['progressToken']``), ``problem`` says what is wrong
    with it, and ``hint`` what to do instead."""

    def __init__(self, method: str, path: str, problem: str, hint: str | None = None) -> None:
        super().__init__(
            f"{method}: {path} {problem}; nothing was sent ("
            + (
                hint
                or "pass only JSON values: dict with str keys, list, str, int, finite float, "
                "bool, None"
            )
            + ")"
        )
        self.method = method
        self.path = path
        self.problem = problem


class ListTooLong(McpError):
    """A list (``tools/list``, ``resources/list``, ...) took more pages than the spec's
    ``max_list_pages`` allows; nothing of it is returned or cached (a partial list would
    hide tools without saying so). Raise ``max_list_pages`` if the server is that large."""

    def __init__(self, method: str, pages: int, items: int) -> None:
        super().__init__(
            f"{method} was still paging after {pages} pages ({items} items so far): the list "
            "was not returned, as a partial one would look complete (raise max_list_pages in "
            "the spec if the server really lists that much)"
        )
        self.method = method
        self.pages = pages
        self.items = items


class UsedAfterFork(McpError, RuntimeError):
    """The client was started in another process and this one is its ``os.fork()`` child:
    the pipes, sockets and request ids belong to the parent's session, which goes on
    unaffected. Nothing was sent. Create a new client in the child."""

    def __init__(self, name: str, parent: int, child: int) -> None:
        super().__init__(
            f"client {name!r} was started in process {parent} and cannot be used in its forked "
            f"child {child}: its pipes and sockets belong to the parent's session; create a "
            "new client in the child (after the fork)"
        )
        self.parent = parent
        self.child = child


class WrongEventLoop(McpError, RuntimeError):
    """An asyncio client was used from an event loop other than the one it was started on.
    A client belongs to its loop (its pipes, sockets and timers are that loop's): create one
    client per loop, or use ``mcp_sync`` from threads."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"client {name!r} was started on another event loop: a client belongs to the loop "
            "it was started on (create one client per event loop, or use mcp_sync's blocking "
            "client from threads)"
        )


class InvalidResponse(McpError):
    """The server's answer to ``method`` does not have the shape the protocol requires."""

    def __init__(self, method: str, detail: str) -> None:
        super().__init__(f"the server's answer to {method} is invalid: {detail}")
        self.method = method
        self.detail = detail


class UnmeteredCall(McpError):
    """A priced tool was called without a valid reservation; nothing was sent."""

    def __init__(self, tool: str, detail: str = "") -> None:
        super().__init__(
            f"tool {tool!r} is priced; call it with reservation= from your spend gate"
            + (f" ({detail})" if detail else "")
        )
        self.tool = tool


class UnknownTool(McpError, LookupError):
    """A group's ``call_tool`` was given a name that no server of the group lists; nothing was
    sent. ``name`` is the name as given. The group and every client are unchanged. Also a
    ``LookupError``, as a missing key is."""

    def __init__(self, name: str, hint: str) -> None:
        super().__init__(f"no server of this group has a tool named {name!r}: {hint}")
        self.name = name


class NotSupported(McpError):
    """The server did not declare what ``method`` needs (its capabilities, from the
    handshake), so nothing was sent: 2025-11-25 basic/lifecycle, both parties "SHOULD" use only
    capabilities that were negotiated."""

    def __init__(self, method: str, capability: str) -> None:
        super().__init__(
            f"{method} was not sent: the server does not declare the {capability!r} "
            "capability (status().capabilities shows what it offers)"
        )
        self.method = method


class TaskCancelled(McpError):
    """The task a call was following ended ``cancelled`` without this client asking (the
    server, or another client holding the task id, cancelled it). ``task_id`` names it and
    ``message`` the server's last status message, if any."""

    def __init__(self, task_id: str, message: str | None = None) -> None:
        said = f": {message[:300]}" if message else ""
        super().__init__(f"task {task_id[:100]!r} was cancelled on the server{said}")
        self.task_id = task_id


class OutputValidationError(McpError):
    """A tool's ``structuredContent`` does not match its ``outputSchema`` (or, with
    ``output_type=``, that type). ``path`` is where in the structured content (``$`` is the
    whole of it); ``problem`` is the checker's finding, cut to 200 characters."""

    def __init__(self, tool: str, path: str, problem: str) -> None:
        super().__init__(
            f"the result of tool {tool!r} does not match its output schema at {path}: "
            f"{problem[:200]} (the server broke its own schema: report it to the server's "
            "authors; the result was not used)"
        )
        self.tool = tool
        self.path = path
        self.problem = problem[:200]


class UnknownPrompt(McpError, LookupError):
    """A group's ``get_prompt`` was given a name that no server of the group lists; nothing was
    sent. ``name`` is the name as given. The group and every client are unchanged. The prompt
    twin of ``UnknownTool`` (a name is a tool's or a prompt's, never both, so each kind has
    its own error and ``except UnknownTool`` keeps meaning tools); also a ``LookupError``."""

    def __init__(self, name: str, hint: str) -> None:
        super().__init__(f"no server of this group has a prompt named {name!r}: {hint}")
        self.name = name
