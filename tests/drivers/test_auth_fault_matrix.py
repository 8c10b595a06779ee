"""The authorization fault matrix: what the client does when its authorization server misbehaves
at one step of the OAuth flow, on every driver (asyncio, trio, sync), from one
literal table, ROWS. The twin of the server fault matrix (test_fault_matrix.py). docs/guarantees.md
shows the same table ("Authorization faults, step by step"), drawn from ROWS by
scripts/auth_fault_matrix_table.py; a test below fails when they disagree.

The server is AuthFaultServer (tests/servers/auth_fault_server.py): OAuthServer, an MCP server
behind OAuth 2.1 with its authorization server on the same origin, with a fault armed at one
step (every request there, until cleared). The client is built with small timeouts so rows are
quick: ``oauth={"timeout": AUTH_TIMEOUT}`` (each authorization request's own deadline),
``init_timeout=INIT_TIMEOUT``, ``reconnect=0.05``, ``fail_fast=True``, a token store of its
own; for the authorization code steps an ``authorize=`` callback that GETs the authorization
URL without following the redirect and returns its Location (a headless browser), for the
client_credentials step a pre-registered client with a secret, for the jwt_bearer step a
workload JWT (signed by the platform key the server trusts) in an ``assertion_file``.

A row names a step, a fault and what the callers get:
  caller  steps reached while connecting (every one but refresh): the fault is armed before
          the client starts; the caller is the readiness wait of ``async with`` (start(), then
          await_ready(init_timeout) with the spec's fail_fast: what ``__aenter__`` does, except
          that a failure does not stop the client, so the same client can be seen to recover).
          refresh (mid-session): the client logs in, a call succeeds, the server then refuses
          every access token and the fault is armed at the refresh grant; the caller is the
          next call (timeout CALL_TIMEOUT, well above AUTH_TIMEOUT);
  by      "at once" or "by timeout": the caller is answered by then + MARGIN. "by timeout" is
          AUTH_TIMEOUT for each URL the step may try (URLS: MCP basic/authorization has the
          client try the metadata URLs in order, and one that does not answer is left for
          the next);
  others  refresh only: a call made while the fault is under way;
  then    once the fault is cleared: "result" (the same client becomes ready by itself, and a
          tool call returns a result; refresh: the next call returns a result with no new
          login, the refresh token was kept), or "-" (a definite refusal: nothing retried).
Outcomes: "result" (a CallToolResult that is not an error); "AuthorizationUnavailable" (whose
``step`` is the step's name in the core, STEP_NAMES, and ``origin`` the authorization server's
origin); "ConnectFailed / X" (not permanent, its ``cause`` X as above); "ConnectFailed
permanent / AuthorizationFailed".

Every row also checks, on each driver:
  - each caller is answered by its deadline plus MARGIN (waited for with that deadline: the
    row fails when it passes; no duration is asserted otherwise);
  - the fault was reached (a request at the step got it);
  - 429 (Retry-After: 1): the step was asked again, and not before RETRY_AFTER s (less
    TOLERANCE) had passed since the 429, at any of its URLs (a metadata step does not go on to
    its next URL after a 429); at refresh, calls made meanwhile fail at once with the 429's
    error and ask nothing;
  - wrong issuer: nothing is retried (one request at the step; at the token exchange, the one
    authorization response that named the wrong issuer and no token request at all), and no
    connect attempt is scheduled;
  - a redirect: the server it points to saw no request;
  - never-ending body: no answer had more than AUTH_MAX_BYTES + ENDLESS_SLACK bytes sent (the
    server sends its next 16 KiB only once the client has read all it sent before, through a
    small SO_SNDBUF, so what it sent is what the client read plus at most ENDLESS_SLACK);
  - nothing left behind: no task of the run (asyncio or trio, counted in the loop before and
    after), and no process, thread or file descriptor (test_fault_matrix.counts(), before the
    server started and after it stopped, with a deadline for the cleanup);
  - no secret (every token, code, state, verifier and client secret the server issued or
    received, and the spec's client secret) in any error's str, repr or cause, any log
    record, any status(), or the session recording (``record=``).

test_every_step_is_reached_without_a_fault runs each step's scenario with no fault armed, with
the same checks: a row that fails there is the harness's fault, not the client's.
"""

from __future__ import annotations

import asyncio
import http.client
import itertools
import json
import logging
import re
import socket
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
import sniffio

import mcp_core as core
from tests.conftest import wait_until
from tests.drivers.facade import DRIVERS, Facade
from tests.drivers.test_fault_matrix import Records, counts, record_text, until
from tests.drivers.test_workload_identity import PUBLIC_PEM as WORKLOAD_PUBLIC_PEM
from tests.drivers.test_workload_identity import workload_jwt
from tests.servers.auth_fault_server import (
    AUTHORIZATION,
    ENDLESS_SLACK,
    WRONG_ISSUER,
    AuthFaultServer,
)

# --- the table ---------------------------------------------------------------------------------

# step -> where the client meets it (the docs' wording).
STEPS = {
    "protected resource metadata": (
        "GET of the RFC 9728 document, at every URL the client may try (the 401 challenge's "
        "`resource_metadata`, the path form, the root)"
    ),
    "authorization server metadata": (
        "GET of the RFC 8414 document, at every URL the client may try (RFC 8414, then OpenID "
        "Connect Discovery)"
    ),
    "registration": "POST of the RFC 7591 dynamic client registration",
    "token exchange": (
        "POST to the token endpoint redeeming the authorization code (PKCE); for wrong issuer, "
        "the authorization response before it"
    ),
    "refresh": "POST to the token endpoint with the refresh token, mid-session",
    "client_credentials": (
        "POST to the token endpoint with `grant_type=client_credentials` (a pre-registered "
        "client with a secret)"
    ),
    "jwt_bearer": (
        "POST to the token endpoint with `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` "
        "and the workload's JWT (workload identity, read from an `assertion_file`)"
    ),
}
# The step's name in AuthorizationUnavailable.step.
STEP_NAMES = {
    "protected resource metadata": "protected resource metadata",
    "authorization server metadata": "authorization server metadata",
    "registration": "registration",
    "token exchange": "token",
    "refresh": "refresh",
    "client_credentials": "token",
    "jwt_bearer": "token",
}
CONNECT_STEPS = {step for step in STEPS if step != "refresh"}
# How many URLs the client may try at a step, each with its own timeout: the protected resource
# metadata at the challenge's resource_metadata URL (the path form, here) and at the root; the
# authorization server's (an issuer without a path) at RFC 8414's URL and at OIDC's.
URLS = {"protected resource metadata": 2, "authorization server metadata": 2}

# fault -> what the authorization server does (the docs' wording).
FAULTS = {
    "hangs": "reads the request and never answers",
    "never-ending body": "200 application/json, then body bytes forever (no Content-Length)",
    "garbage JSON": "200 application/json whose body is not JSON",
    "connection reset": "the connection is reset (RST) without an answer",
    "500": "HTTP 500",
    "429 (Retry-After: 1)": "HTTP 429 with Retry-After: 1",
    "a redirect": "302 to another server on 127.0.0.1 (which must see no request)",
    "wrong issuer": (
        "the metadata names another `issuer` than the one it was fetched for (RFC 8414 §3.3); "
        "at the token exchange, the authorization response's `iss` names another issuer "
        "(RFC 9207)"
    ),
    "slow-loris": "an answer head, one byte every 0.1 s, never finished",
}
# The matrix's fault -> AuthFaultServer's fault and its options.
SERVER_FAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "hangs": ("hangs", {}),
    "never-ending body": ("never-ending body", {"framing": "chunked"}),
    "garbage JSON": ("garbage JSON", {}),
    "connection reset": ("connection reset", {}),
    "500": ("500", {}),
    "429 (Retry-After: 1)": ("429", {"retry_after": "1"}),
    "a redirect": ("a redirect", {}),
    "wrong issuer": ("wrong issuer", {"issuer": WRONG_ISSUER}),
    "slow-loris": ("slow-loris", {"interval": 0.1}),
}

AT_ONCE = "at once"
BY_TIMEOUT = "by timeout"


@dataclass(frozen=True)
class Row:
    step: str
    fault: str
    caller: str
    by: str = AT_ONCE
    others: str = "-"
    then: str = "result"
    xfail: str | None = None


U = "ConnectFailed / AuthorizationUnavailable"  # transient, at connect: retried with backoff
R = "AuthorizationUnavailable"  # transient, mid-session: the next call tries again
F = "ConnectFailed permanent / AuthorizationFailed"  # a definite refusal: not retried

ROWS = [
    Row("protected resource metadata", "hangs", U, BY_TIMEOUT),
    Row("protected resource metadata", "never-ending body", U),
    Row("protected resource metadata", "garbage JSON", U),
    Row("protected resource metadata", "connection reset", U),
    Row("protected resource metadata", "500", U),
    Row("protected resource metadata", "429 (Retry-After: 1)", U),
    Row("protected resource metadata", "a redirect", U),
    Row("protected resource metadata", "slow-loris", U, BY_TIMEOUT),
    Row("authorization server metadata", "hangs", U, BY_TIMEOUT),
    Row("authorization server metadata", "never-ending body", U),
    Row("authorization server metadata", "garbage JSON", U),
    Row("authorization server metadata", "connection reset", U),
    Row("authorization server metadata", "500", U),
    Row("authorization server metadata", "429 (Retry-After: 1)", U),
    Row("authorization server metadata", "a redirect", U),
    Row("authorization server metadata", "wrong issuer", F, then="-"),
    Row("authorization server metadata", "slow-loris", U, BY_TIMEOUT),
    Row("registration", "hangs", U, BY_TIMEOUT),
    Row("registration", "never-ending body", U),
    Row("registration", "garbage JSON", U),
    Row("registration", "connection reset", U),
    Row("registration", "500", U),
    Row("registration", "429 (Retry-After: 1)", U),
    Row("registration", "a redirect", U),
    Row("registration", "slow-loris", U, BY_TIMEOUT),
    Row("token exchange", "hangs", U, BY_TIMEOUT),
    Row("token exchange", "never-ending body", U),
    Row("token exchange", "garbage JSON", U),
    Row("token exchange", "connection reset", U),
    Row("token exchange", "500", U),
    Row("token exchange", "429 (Retry-After: 1)", U),
    Row("token exchange", "a redirect", U),
    Row("token exchange", "wrong issuer", F, then="-"),
    Row("token exchange", "slow-loris", U, BY_TIMEOUT),
    Row("refresh", "hangs", R, BY_TIMEOUT, others=R),
    Row("refresh", "never-ending body", R, others=R),
    Row("refresh", "garbage JSON", R, others=R),
    Row("refresh", "connection reset", R, others=R),
    Row("refresh", "500", R, others=R),
    Row("refresh", "429 (Retry-After: 1)", R, others=R),
    Row("refresh", "a redirect", R, others=R),
    Row("refresh", "slow-loris", R, BY_TIMEOUT, others=R),
    Row("client_credentials", "hangs", U, BY_TIMEOUT),
    Row("client_credentials", "never-ending body", U),
    Row("client_credentials", "garbage JSON", U),
    Row("client_credentials", "connection reset", U),
    Row("client_credentials", "500", U),
    Row("client_credentials", "429 (Retry-After: 1)", U),
    Row("client_credentials", "a redirect", U),
    Row("client_credentials", "slow-loris", U, BY_TIMEOUT),
    Row("jwt_bearer", "hangs", U, BY_TIMEOUT),
    Row("jwt_bearer", "never-ending body", U),
    Row("jwt_bearer", "garbage JSON", U),
    Row("jwt_bearer", "connection reset", U),
    Row("jwt_bearer", "500", U),
    Row("jwt_bearer", "429 (Retry-After: 1)", U),
    Row("jwt_bearer", "a redirect", U),
    Row("jwt_bearer", "slow-loris", U, BY_TIMEOUT),
]

# --- timing ------------------------------------------------------------------------------------

AUTH_TIMEOUT = 0.5  # oauth["timeout"]: each authorization request's own deadline
INIT_TIMEOUT = 3.0  # init_timeout, and the readiness wait of `async with`
CALL_TIMEOUT = 3.0  # a call's deadline: well above AUTH_TIMEOUT
READY_TIMEOUT = 5.0  # the wait for readiness once the fault has ended
MARGIN = 1.0  # an answer this late after its deadline fails the row
CLEANUP = 10.0  # processes, threads and descriptors must be gone by then
RETRY_AFTER = 1.0
TOLERANCE = 0.05  # clocks: the 429's request and the next are stamped by the server

NO_FAULT = "no fault"
CLIENT_ID = "matrix-service"
CLIENT_SECRET = "auth-matrix-client-s3cr3t-51c7"  # the spec's; must appear nowhere
PATHS = itertools.count(1)

# --- outcomes ----------------------------------------------------------------------------------


def problem(outcome: str, got: object, step: str, origin: str) -> str | None:
    """Why ``got`` is not ``outcome`` (None when it is). ``step`` and ``origin`` are what an
    AuthorizationUnavailable must name."""
    outer, _, inner = outcome.partition(" / ")
    name, _, detail = outer.partition(" ")
    if name == "result":
        if isinstance(got, core.CallToolResult) and not got.is_error:
            return None
        return "not a result"
    if type(got) is not getattr(core, name):
        return f"not {name}"
    if name == "ConnectFailed":
        assert isinstance(got, core.ConnectFailed)
        if got.permanent != (detail == "permanent"):
            return "permanent" if got.permanent else "not permanent"
        return problem(inner, got.cause, step, origin) if inner else None
    if isinstance(got, core.AuthorizationUnavailable):
        if got.step != step:
            return f"its step is {got.step!r}, not {step!r}"
        if got.origin != origin:
            return f"its origin is {got.origin!r}, not {origin!r}"
    return None


def check(what: str, outcome: str, got: object, step: str, origin: str) -> None:
    wrong = problem(outcome, got, step, origin)
    if wrong is not None:
        cause = getattr(got, "cause", None)
        shown = f"{got!r}" + (f" (cause {cause!r})" if cause is not None else "")
        raise AssertionError(f"{what}: expected {outcome}, got {shown}: {wrong}")


# --- one row -----------------------------------------------------------------------------------


class MatrixClient(Facade):
    """The facade, with await_ready's fail_fast."""

    async def await_ready(
        self, timeout: float = 60.0, *, fail_fast: bool | None = None
    ) -> core.Status:
        result: core.Status = await self._run("await_ready", timeout, fail_fast=fail_fast)
        return result


@dataclass
class Run:
    """What a row saw: every answer (results and errors) and status."""

    row: Row
    driver: str
    record: Path
    server: AuthFaultServer
    answers: list[object] = field(default_factory=list)
    statuses: list[core.Status] = field(default_factory=list)


def follow(url: str) -> str:
    """The ``authorize=`` callback: what a user's browser does at the authorization URL (GET,
    redirect not followed); returns the Location the authorization server redirects to."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        response.read()
        location = response.getheader("location")
    finally:
        connection.close()
    assert response.status == 302 and location is not None, response.status
    return location


def new_client(run: Run) -> MatrixClient:
    server = run.server
    oauth: dict[str, Any] = {"timeout": AUTH_TIMEOUT}
    fields: dict[str, Any] = {}
    if run.row.step == "client_credentials":
        oauth |= {"grant": "client_credentials", "client_id": CLIENT_ID}
        oauth["client_secret"] = CLIENT_SECRET
    elif run.row.step == "jwt_bearer":
        assertion = run.record.parent / "workload.jwt"
        assertion.write_text(workload_jwt(server.issuer), encoding="utf-8")
        oauth |= {"grant": "jwt_bearer", "assertion_file": str(assertion)}
    else:
        fields["authorize"] = follow
    return MatrixClient(
        run.driver,
        url=server.url,
        oauth=oauth,
        init_timeout=INIT_TIMEOUT,
        reconnect=0.05,
        shutdown_grace=1.0,
        fail_fast=True,
        record=str(run.record),
        **fields,
    )


async def answered(what: str, deadline: float, call: Callable[[], Awaitable[Any]]) -> object:
    """The call's value or typed error; the row fails if it comes later than deadline+MARGIN."""
    try:
        with anyio.fail_after(deadline + MARGIN):
            return await call()
    except core.McpError as error:
        return error
    except TimeoutError:
        message = f"{what}: no answer by its deadline ({deadline} s) + {MARGIN} s"
        raise AssertionError(message) from None


def deadline_of(row: Row) -> float:
    return AUTH_TIMEOUT * URLS.get(row.step, 1) if row.by == BY_TIMEOUT else 0.0


def arm(run: Run) -> None:
    fault, options = SERVER_FAULTS[run.row.fault]
    run.server.arm(run.row.step, fault, **options)


def faulted_attempts(run: Run) -> list[Any]:
    """The requests that got the row's fault (wrong issuer at the token exchange: the
    authorization response)."""
    row = run.row
    step = (
        AUTHORIZATION if row.fault == "wrong issuer" and row.step == "token exchange" else row.step
    )
    fault = SERVER_FAULTS[row.fault][0]
    return [a for a in run.server.attempts(step) if a.fault == fault]


def check_fault_effects(run: Run) -> None:
    """What every faulted row checks once its caller was answered."""
    row, server = run.row, run.server
    hit = faulted_attempts(run)
    assert hit, f"the fault was never reached: requests at the step {server.attempts(row.step)}"
    if row.fault == "never-ending body":
        cap = core.AUTH_MAX_BYTES + ENDLESS_SLACK
        sent = [a.sent for a in hit]
        assert max(sent) <= cap, f"read past the cap: {sent} bytes sent, cap {cap}"
    if row.fault == "a redirect":
        assert server.elsewhere.requests == [], "a request followed the redirect"


async def connect_row(run: Run, client: MatrixClient) -> None:
    """A fault at a step of connecting: the readiness wait, then recovery once it ends."""
    row, server = run.row, run.server
    step = STEP_NAMES[row.step]
    if row.fault != NO_FAULT:
        arm(run)
    await client.start()
    deadline = INIT_TIMEOUT if row.fault == NO_FAULT else deadline_of(row)
    got = await answered("connect", deadline, lambda: client.await_ready(INIT_TIMEOUT))
    run.answers.append(got)
    run.statuses.append(client.status())
    if row.fault == NO_FAULT:
        assert isinstance(got, core.Status) and got.ready, f"connect: not ready: {got!r}"
        assert server.attempts(row.step), f"the step {row.step!r} was not reached"
    else:
        check_fault_effects(run)
        check("connect", row.caller, got, step, server.origin)
    if row.then == "-":
        # A definite refusal: nothing retried, no attempt scheduled.
        if row.step == "token exchange":
            assert server.attempts("token exchange") == [], "a token request after the refusal"
        assert len(faulted_attempts(run)) == 1, f"retried: {server.attempts()}"
        assert client.status().retry_in is None, f"a retry is scheduled: {client.status()!r}"
        return
    server.clear()
    ready = await answered(
        "await_ready once the fault ended",
        READY_TIMEOUT,
        lambda: client.await_ready(READY_TIMEOUT, fail_fast=False),
    )
    run.answers.append(ready)
    assert isinstance(ready, core.Status) and ready.ready, f"not ready again: {ready!r}"
    then = await answered(
        "the next call",
        CALL_TIMEOUT,
        lambda: client.call_tool("echo", {"text": "then"}, timeout=CALL_TIMEOUT),
    )
    run.answers.append(then)
    run.statuses.append(client.status())
    check("the next call", row.then, then, step, server.origin)
    if row.fault.startswith("429"):
        check_retry_after(server.attempts(row.step))


def check_retry_after(tries: list[Any]) -> None:
    """After a 429, nothing is asked at the step (at any of its URLs: a metadata step does not
    go on to its next URL, which is on the same server) within Retry-After, and the step is
    asked again once it has passed."""
    spaced = 0
    for index, first in enumerate(tries):
        if first.fault != "429":
            continue
        again = next(iter(tries[index + 1 :]), None)
        if again is not None:
            waited = again.at - first.at
            assert waited >= RETRY_AFTER - TOLERANCE, (
                f"Retry-After not honoured: {again.path} asked {waited:.3f} s after a 429"
            )
            spaced += 1
    assert spaced, f"the step was not asked again after its 429: {tries}"


async def refresh_row(run: Run, client: MatrixClient) -> None:
    """Mid-session: a login, a call, then every access token refused and the refresh faulted."""
    row, server = run.row, run.server
    step = STEP_NAMES[row.step]
    await client.start()
    got = await answered("connect", INIT_TIMEOUT, lambda: client.await_ready(INIT_TIMEOUT))
    run.answers.append(got)
    assert isinstance(got, core.Status) and got.ready, f"the login failed: {got!r}"
    before = await answered(
        "the call before the fault",
        CALL_TIMEOUT,
        lambda: client.call_tool("echo", {"text": "before"}, timeout=CALL_TIMEOUT),
    )
    run.answers.append(before)
    check("the call before the fault", "result", before, step, server.origin)
    server.expire_access_tokens()
    if row.fault != NO_FAULT:
        arm(run)
    deadline = CALL_TIMEOUT if row.fault == NO_FAULT else deadline_of(row)
    answers: dict[str, object] = {}

    async def call(key: str, what: str) -> None:
        answers[key] = await answered(
            what,
            deadline,
            lambda: client.call_tool("echo", {"text": key}, timeout=CALL_TIMEOUT),
        )

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(call, "caller", "the faulted call")
        # The other call starts once the refresh (faulted or not) has reached the server.
        await until(lambda: bool(server.attempts("refresh")) or "caller" in answers, "refresh")
        tasks.start_soon(call, "others", "the other call")
    run.answers += [answers["caller"], answers["others"]]
    run.statuses.append(client.status())
    if row.fault == NO_FAULT:
        assert server.attempts("refresh"), "the refresh step was not reached"
        check("the call", "result", answers["caller"], step, server.origin)
        check("the other call", "result", answers["others"], step, server.origin)
    else:
        check_fault_effects(run)
        check("the faulted call", row.caller, answers["caller"], step, server.origin)
        check("the other call", row.others, answers["others"], step, server.origin)
    server.clear()
    if row.fault.startswith("429"):
        await waited_out(run, client)
    then = await answered(
        "the next call",
        CALL_TIMEOUT,
        lambda: client.call_tool("echo", {"text": "then"}, timeout=CALL_TIMEOUT),
    )
    run.answers.append(then)
    run.statuses.append(client.status())
    check("the next call", row.then, then, step, server.origin)
    if row.fault.startswith("429"):
        [refused] = faulted_attempts(run)
        later = [a.at for a in server.attempts("refresh") if a.at > refused.at]
        assert later and min(later) - refused.at >= RETRY_AFTER - TOLERANCE, (
            f"a refresh {min(later) - refused.at:.3f} s after the 429 (Retry-After: {RETRY_AFTER})"
        )
    logins = server.oauth_log.count("authorize")
    assert logins == 1, f"{logins} logins: the refresh token was not kept"
    assert "token:refresh_token" in server.oauth_log, "no refresh succeeded"


async def waited_out(run: Run, client: MatrixClient) -> None:
    """After a 429 with Retry-After at the refresh: calls made meanwhile fail at once with
    the 429's error, without asking the authorization server again, until Retry-After has
    passed (polled with a deadline: the end of a wait is no event of its own)."""
    step, origin = STEP_NAMES[run.row.step], run.server.origin
    deadline = anyio.current_time() + RETRY_AFTER + MARGIN
    while anyio.current_time() < deadline:
        early = await answered(
            "a call within Retry-After",
            CALL_TIMEOUT,
            lambda: client.call_tool("echo", {"text": "early"}, timeout=CALL_TIMEOUT),
        )
        run.answers.append(early)
        if not isinstance(early, core.AuthorizationUnavailable):
            check("a call after Retry-After", "result", early, step, origin)
            return
        check("a call within Retry-After", "AuthorizationUnavailable", early, step, origin)
        assert early.retry_after is not None and 0 < early.retry_after <= RETRY_AFTER, early
        await anyio.sleep(0.05)
    raise AssertionError(f"calls still refused {RETRY_AFTER} s + {MARGIN} s after the 429")


def live_tasks() -> int:
    if sniffio.current_async_library() == "trio":
        import trio

        count, stack = 0, [trio.lowlevel.current_root_task()]
        while stack:
            task = stack.pop()
            count += 1
            stack += [child for nursery in task.child_nurseries for child in nursery.child_tasks]
        return count
    return len(asyncio.all_tasks())


async def scenario(run: Run) -> None:
    tasks_before = live_tasks()
    client = new_client(run)
    try:
        if run.row.step in CONNECT_STEPS:
            await connect_row(run, client)
        else:
            await refresh_row(run, client)
    finally:
        await client.stop()  # from the task that started it (mcp_asyncio.Client.start)
        run.statuses.append(client.status())
    await until(lambda: live_tasks() <= tasks_before, f"tasks to end (before: {tasks_before})")


# --- leaks and secrets -------------------------------------------------------------------------


def texts_of(run: Run, records: list[logging.LogRecord]) -> Iterator[tuple[str, str]]:
    for answer in run.answers:
        if isinstance(answer, BaseException):
            yield f"error {type(answer).__name__}", f"{answer} {answer!r}"
            for cause in (getattr(answer, "cause", None), answer.__cause__, answer.__context__):
                if cause is not None:
                    yield f"cause of {type(answer).__name__}", f"{cause} {cause!r}"
                    inner = getattr(cause, "cause", None)
                    if inner is not None:
                        yield f"cause of {type(cause).__name__}", f"{inner} {inner!r}"
    for status in run.statuses:
        yield "status()", repr(status)
    for record in records:
        yield f"log record {record.name}", record_text(record)
    if run.record.exists():
        yield "the session recording", run.record.read_text(encoding="utf-8", errors="replace")


def run_case(row: Row, driver: str, tmp_path: Path) -> None:
    before = counts()
    records = Records()
    root = logging.getLogger()
    level = root.level
    root.addHandler(records)
    root.setLevel(logging.DEBUG)
    server = AuthFaultServer(
        path=f"/mcp-{next(PATHS)}",
        clients={CLIENT_ID: {"client_secret": CLIENT_SECRET}},
        workload_key=WORKLOAD_PUBLIC_PEM,
    )
    server.start()
    run = Run(row, driver, tmp_path / "session.jsonl", server)
    try:
        anyio.run(scenario, run, backend="trio" if driver == "trio" else "asyncio")
    finally:
        root.removeHandler(records)
        root.setLevel(level)
        server.stop()

    def clean() -> bool:
        children, threads, fds = counts()
        return children == before[0] and threads <= before[1] and fds <= before[2]

    wait_until(clean, CLEANUP, message=f"nothing left behind (before: {before}, now: {counts()})")
    secrets = {s for s in server.secrets | {CLIENT_SECRET} if s}
    for where, text in texts_of(run, records.records):
        for secret in secrets:
            assert secret not in text, f"a secret is in {where}: {text[:300]}"


# --- the tests ---------------------------------------------------------------------------------


def row_id(row: Row) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", f"{row.step}-{row.fault}").strip("_")


def params() -> list[Any]:
    cases = []
    for row in ROWS:
        marks = [pytest.mark.xfail(strict=True, reason=row.xfail)] if row.xfail else []
        for driver in DRIVERS:
            cases.append(pytest.param(row, driver, id=f"{row_id(row)}-{driver}", marks=marks))
    return cases


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("row", "driver"), params())
def test_auth_fault_matrix(row: Row, driver: str, tmp_path: Path) -> None:
    run_case(row, driver, tmp_path)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("step", list(STEPS))
def test_every_step_is_reached_without_a_fault(step: str, driver: str, tmp_path: Path) -> None:
    """The harness, with no fault: each step's scenario succeeds on every driver."""
    others = "result" if step == "refresh" else "-"
    run_case(Row(step, NO_FAULT, "result", others=others), driver, tmp_path)


# --- the table's own checks --------------------------------------------------------------------


def test_rows_are_well_formed() -> None:
    seen = set()
    outcomes = {U, R, F, "result", "-"}
    for row in ROWS:
        assert row.step in STEPS and row.fault in FAULTS and row.fault in SERVER_FAULTS, row
        assert (row.step, row.fault) not in seen, f"two rows for {row}"
        seen.add((row.step, row.fault))
        assert {row.caller, row.others, row.then} <= outcomes, row
        assert row.by in (AT_ONCE, BY_TIMEOUT), row
        assert (row.others != "-") == (row.step == "refresh"), row
        assert (row.then == "-") == (row.caller == F), row
        assert (row.caller == R) == (row.step == "refresh"), row
    assert set(STEP_NAMES) == set(STEPS)


def test_outcomes_are_matched_exactly() -> None:
    origin = "http://127.0.0.1:1"
    unavailable = core.AuthorizationUnavailable(origin, "token", "did not answer")
    check("x", R, unavailable, "token", origin)
    check("x", U, core.ConnectFailed("later", cause=unavailable), "token", origin)
    refused = core.AuthorizationFailed(None, "wrong issuer")
    check("x", F, core.ConnectFailed("no", permanent=True, cause=refused), "token", origin)
    check("x", "result", core.CallToolResult(), "token", origin)
    for outcome, got, step in [
        (R, unavailable, "refresh"),  # another step
        (R, core.AuthorizationUnavailable("http://127.0.0.1:2", "token", "x"), "token"),
        (U, core.ConnectFailed("later", permanent=True, cause=unavailable), "token"),
        (U, core.ConnectFailed("later", cause=refused), "token"),
        (U, core.ConnectFailed("later"), "token"),
        (F, core.ConnectFailed("no", cause=refused), "token"),
        (F, core.ConnectFailed("no", permanent=True, cause=unavailable), "token"),
        (R, core.ConnectFailed("later", cause=unavailable), "token"),
        ("result", core.CallToolResult(is_error=True), "token"),
    ]:
        with pytest.raises(AssertionError):
            check("x", outcome, got, step, origin)


def test_the_row_checks_see_a_secret(tmp_path: Path) -> None:
    secret = "at-0123456789abcdef"
    server = AuthFaultServer()  # never started: only a place for the run to name
    row = ROWS[0]
    for leak in ("error", "cause", "log", "recording"):
        run = Run(row, "sync", tmp_path / f"{leak}.jsonl", server)
        records = []
        if leak == "error":
            run.answers.append(core.InvalidResponse("tools/call", f"echo {secret}"))
        elif leak == "cause":
            cause = core.AuthorizationUnavailable("http://x", "token", f"said {secret}")
            run.answers.append(core.ConnectFailed("later", cause=cause))
        elif leak == "log":
            args = (secret,)
            records.append(logging.LogRecord("mcp_client.t", 10, __file__, 1, "%s", args, None))
        else:
            run.record.write_text(f'{{"data": "{secret}"}}\n')
        assert any(secret in text for _, text in texts_of(run, records)), leak


def test_docs_show_the_rows() -> None:
    # Run `python scripts/auth_fault_matrix_table.py --write` after changing ROWS.
    from scripts.doc_section import shown_and_drawn

    shown, drawn = shown_and_drawn("auth_fault_matrix_table")
    assert shown == drawn, (
        "docs/guarantees.md's authorization fault matrix is not drawn from ROWS: run "
        "`python scripts/auth_fault_matrix_table.py --write`"
    )


# --- the server's faults, with no client code ----------------------------------------------------


def raw_request(server: AuthFaultServer, head: str, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(
        head.encode()
        + b"\r\nhost: x\r\nconnection: close\r\ncontent-length: %d\r\n\r\n" % len(body)
        + body
    )
    return sock


def read_all(sock: socket.socket) -> bytes:
    data = b""
    with sock:
        while chunk := sock.recv(65536):
            data += chunk
    return data


TOKEN = "POST /token HTTP/1.1\r\ncontent-type: application/x-www-form-urlencoded"


@pytest.fixture
def fault_server() -> Iterator[AuthFaultServer]:
    before = counts()
    with AuthFaultServer(clients={CLIENT_ID: {"client_secret": CLIENT_SECRET}}) as server:
        yield server
    wait_until(lambda: gone(before), CLEANUP, message=f"no thread or socket left: {before}")


def gone(before: tuple[list[int], int, int]) -> bool:
    """Whether the threads and descriptors are back to ``before`` (sockets are descriptors)."""
    _, threads, fds = counts()
    return threads <= before[1] and fds <= before[2]


def test_the_server_classifies_each_step(fault_server: AuthFaultServer) -> None:
    server = fault_server
    for step in STEPS:
        server.arm(step, "500")
    for head, body in [
        ("GET /.well-known/oauth-protected-resource/mcp HTTP/1.1", b""),
        ("GET /.well-known/oauth-protected-resource HTTP/1.1", b""),
        ("GET /.well-known/oauth-authorization-server HTTP/1.1", b""),
        ("GET /.well-known/openid-configuration HTTP/1.1", b""),
        ("POST /register HTTP/1.1", b"{}"),
        (TOKEN, b"grant_type=authorization_code&code=c1&code_verifier=v1"),
        (TOKEN, b"grant_type=refresh_token&refresh_token=rt-1"),
        (TOKEN, b"grant_type=client_credentials"),
        (TOKEN, b"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a1"),
    ]:
        answer = read_all(raw_request(server, head, body))
        assert answer.startswith(b"HTTP/1.1 500 "), (head, answer[:80])
    assert [len(server.attempts(step)) for step in STEPS] == [2, 2, 1, 1, 1, 1, 1]
    assert {"c1", "v1", "rt-1", "a1"} <= server.secrets  # carried by faulted requests
    server.clear()
    answer = read_all(raw_request(server, "GET /.well-known/oauth-authorization-server HTTP/1.1"))
    assert b'"issuer":"' + server.issuer.encode() in answer.partition(b"\r\n\r\n")[2]


def test_the_server_hangs_until_cleared(fault_server: AuthFaultServer) -> None:
    fault_server.arm("registration", "hangs")
    sock = raw_request(fault_server, "POST /register HTTP/1.1", b"{}")
    sock.settimeout(0.2)
    with pytest.raises(TimeoutError):
        sock.recv(1)
    sock.settimeout(5)
    fault_server.clear()
    assert read_all(sock) == b""  # cut, never answered
    [attempt] = fault_server.attempts("registration")
    assert attempt.fault == "hangs" and attempt.sent == 0


def test_the_never_ending_body_waits_for_the_reader(fault_server: AuthFaultServer) -> None:
    fault_server.arm("refresh", "never-ending body")
    sock = raw_request(fault_server, TOKEN, b"grant_type=refresh_token&refresh_token=x")
    read = 0
    while read < 300 * 1024:
        read += len(sock.recv(65536))
    sock.close()
    wait_until(lambda: fault_server.attempts("refresh")[0].done, CLEANUP, message="its end")
    [attempt] = fault_server.attempts("refresh")
    assert read <= attempt.sent <= read + ENDLESS_SLACK, (read, attempt.sent)


@pytest.mark.parametrize(
    ("fault", "status", "header"),
    [
        ("garbage JSON", 200, b"content-type: application/json"),
        ("500", 500, b""),
        ("429", 429, b"retry-after: 1"),
        ("a redirect", 302, b"location: http://127.0.0.1:"),
    ],
)
def test_the_server_answers_a_fault(
    fault_server: AuthFaultServer, fault: str, status: int, header: bytes
) -> None:
    fault_server.arm("client_credentials", fault)
    sock = raw_request(fault_server, TOKEN, b"grant_type=client_credentials")
    head, _, body = read_all(sock).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status) and header in head, head
    if fault == "garbage JSON":
        with pytest.raises(ValueError):
            json.loads(body)
    if fault == "a redirect":
        assert f"{fault_server.elsewhere.origin}/token".encode() in head
        assert fault_server.elsewhere.requests == []


def test_the_server_resets(fault_server: AuthFaultServer) -> None:
    fault_server.arm("token exchange", "connection reset")
    sock = raw_request(fault_server, TOKEN, b"grant_type=authorization_code")
    with pytest.raises(ConnectionResetError):
        read_all(sock)


def test_the_server_names_a_wrong_issuer(fault_server: AuthFaultServer) -> None:
    server = fault_server
    server.arm("authorization server metadata", "wrong issuer")
    answer = read_all(raw_request(server, "GET /.well-known/openid-configuration HTTP/1.1"))
    assert f'"issuer":"{WRONG_ISSUER}"'.encode() in answer
    server.arm("token exchange", "wrong issuer", times=1)
    query = (
        f"client_id=preset&redirect_uri=http://127.0.0.1:9/cb&response_type=code&state=s"
        f"&code_challenge=x&code_challenge_method=S256&resource={server.url}"
    )
    location = follow(f"{server.issuer}/authorize?{query}")
    assert "iss=https%3A%2F%2Fissuer.invalid" in location and "code=" in location
    assert [a.fault for a in server.attempts(AUTHORIZATION)] == ["wrong issuer"]
    assert "iss=http%3A%2F%2F127.0.0.1" in follow(f"{server.issuer}/authorize?{query}")  # once


def test_the_slow_loris_trickles_until_stopped() -> None:
    before = counts()
    server = AuthFaultServer().start()
    server.arm("protected resource metadata", "slow-loris", interval=0.02)
    sock = raw_request(server, "GET /.well-known/oauth-protected-resource HTTP/1.1")
    got = b""
    while len(got) < 5:
        got += sock.recv(1)
    assert got == b"HTTP/"
    server.stop()
    rest = read_all(sock)  # the rest of what it sent, then the end (a 5 s socket timeout)
    assert b"1.1 200 OK\r\n".startswith(rest[:10]), rest
    wait_until(lambda: gone(before), CLEANUP, message=f"no thread or socket left: {before}")
