"""The authorization layer keeps the session's guarantees: every request of its own
has a deadline and a size cap, a failure that may pass is retried while a definite answer is
final, a held request whose caller was answered is never sent, the step-up limit belongs to
the request it concerns, and no token or request leaves for where it must not go. A scripted
authorization server, a fake clock, no socket."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_core as core
from mcp_core._auth.layer import MAX_AUTHORIZATIONS
from mcp_core._auth.oauth import may_fetch, protected_resource_metadata_urls
from mcp_core.replay import encode_action
from mcp_core.states import AuthPhase
from tests.core.auth.test_authorization import (
    AS_METADATA,
    AS_URL,
    CHALLENGE,
    ISSUER,
    PRM,
    PRM_URL,
    SERVER,
    TOKEN,
    AuthHarness,
)
from tests.core.harness import TEXT_RESULT

ROOT_PRM = "https://mcp.example.com/.well-known/oauth-protected-resource"
OIDC_URL = f"{ISSUER}/.well-known/openid-configuration"
TOKEN_URL = f"{ISSUER}/token"
HINT = "https://mcp.example.com/prm-document"
HINTED = (("WWW-Authenticate", f'Bearer resource_metadata="{HINT}", scope="read"'),)
SCOPE_CHALLENGE = (("WWW-Authenticate", 'Bearer error="insufficient_scope", scope="write"'),)
INIT_RESULT = {"protocolVersion": "2025-11-25", "capabilities": {}}


def fails(h: AuthHarness, request: core.StartHttp, failure: str) -> None:
    """Answer one of the layer's requests with a failure that may pass."""
    if failure == "connection reset":
        h.feed(core.HttpFailed(now=h.now, stream=request.stream, reason="ConnectionResetError"))
    elif failure == "503":
        h.respond(request, 503, b"unavailable")
    elif failure == "429":
        h.respond(request, 429, b"slow down", headers=(("Retry-After", "7"),))
    elif failure == "garbage":
        h.respond(request, 200, b"<html>not json</html>")
    elif failure == "redirect":
        h.respond(request, 302, headers=(("Location", "https://elsewhere.example.com/x"),))
    elif failure == "400 without an OAuth error":
        h.respond(request, 400, b"<html>bad gateway config</html>")
    elif failure == "hangs":
        h.take()
        h.fire_due()
        assert core.AbortHttp(stream=request.stream) in h.actions
    else:
        raise AssertionError(failure)


def transient(error: core.McpError, step: str) -> core.AuthorizationUnavailable:
    assert isinstance(error, core.ConnectFailed), error
    assert not error.permanent, error
    cause = error.cause
    assert isinstance(cause, core.AuthorizationUnavailable), cause
    assert cause.step == step and cause.origin in ("https://auth.example.com", SERVER[:23])
    assert "retries with backoff" in str(error)
    return cause


def sent(h: AuthHarness) -> list[core.StartHttp]:
    """Every request since the last take(), to any URL."""
    return [a for a in h.actions if isinstance(a, core.StartHttp)]


def tool_calls(h: AuthHarness, name: str) -> list[core.StartHttp]:
    return [
        r
        for r in h.requests()
        if r.body
        and h.body(r).get("method") == "tools/call"
        and h.body(r)["params"]["name"] == name
    ]


# --- 1. deadlines --------------------------------------------------------------------------------


def test_a_metadata_url_that_never_answers_fails_the_attempt_by_the_connect_deadline() -> None:
    h = AuthHarness(init_timeout=2.0, reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(12.0, fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    prm = h.fetch(PRM_URL)
    # Its own deadline (10 s) is bounded by what is left of the connect attempt (2 s).
    assert h.machine.next_deadline() == 2.0
    h.take()
    h.fire_due()
    assert h.now == 2.0 and core.AbortHttp(stream=prm.stream) in h.actions
    assert not [r for r in h.requests() if r.url == ROOT_PRM]  # no time left to try another
    cause = transient(h.error(waiter), "protected resource metadata")
    assert cause.origin == "https://mcp.example.com"
    assert cause.detail == "got no complete answer within 2 s"
    status = h.machine.status(h.now)
    assert status.state == "closed" and status.retry_in is not None
    assert status.last_error is not None and "protected resource metadata" in status.last_error
    assert h.auth_phase is AuthPhase.UNAUTHORIZED
    # The attempt is retried with backoff; this time the metadata answers and the flow goes on.
    h.take()
    h.fire_due()
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover()
    assert h.of(core.PrepareAuthorization)


def test_each_request_has_its_own_deadline_and_a_late_answer_is_dropped() -> None:
    h = AuthHarness()  # init_timeout 60: the request's own 10 s decide
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    first = h.fetch(PRM_URL)
    h.take()
    h.fire_due()
    assert h.now == core.AUTH_REQUEST_TIMEOUT
    assert core.AbortHttp(stream=first.stream) in h.actions
    root = h.fetch(ROOT_PRM)  # the next well-known URL, with a deadline of its own
    assert h.machine.next_deadline() == h.now + core.AUTH_REQUEST_TIMEOUT
    # What the driver still had of the aborted request is dropped.
    h.respond(first, 200, PRM)
    assert h.auth_phase is AuthPhase.DISCOVERING_RESOURCE
    h.respond(root, 200, PRM)
    assert h.auth_phase is AuthPhase.DISCOVERING_SERVER


def test_the_request_timeout_comes_from_the_spec() -> None:
    spec = core.Spec(name="s", url=SERVER, oauth={"timeout": 3, "allow_insecure_http": True})
    settings = core.OAuthSettings.from_spec(spec)
    assert settings is not None
    assert settings.request_timeout == 3.0 and settings.allow_insecure_http
    h = AuthHarness(oauth=settings)
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    assert h.machine.next_deadline() == 3.0
    with pytest.raises(ValueError):
        core.OAuthSettings(request_timeout=0)
    for oauth, problem in [
        ({"timeout": 0}, "oauth['timeout'] must be a positive number of seconds, got 0"),
        ({"timeout": "5"}, "oauth['timeout'] must be a positive number of seconds, got str"),
        ({"allow_insecure_http": "yes"}, "oauth['allow_insecure_http'] must be true or false"),
        ({"key_id": "k1"}, "oauth['key_id'] is set without oauth['key_file']"),
    ]:
        with pytest.raises(core.InvalidSpec, match=problem.replace("[", r"\[")):
            core.Spec(name="s", url=SERVER, oauth=oauth)


# --- 2. bounded reads ----------------------------------------------------------------------------


def test_an_answer_announcing_more_than_the_cap_is_aborted_unread() -> None:
    h = AuthHarness(init_timeout=30.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    for url in (PRM_URL, ROOT_PRM):
        request = h.fetch(url)
        ten_gb = (("Content-Length", str(10 * 1024**3)),)
        h.feed(core.HttpResponseStarted(now=0.0, stream=request.stream, status=200, headers=ten_gb))
        assert core.AbortHttp(stream=request.stream) in h.actions
    cause = transient(h.error(waiter), "protected resource metadata")
    assert (
        cause.detail
        == "announced an answer of 10737418240 bytes, over the 256 KiB an answer may have"
    )


def test_an_endless_answer_is_aborted_past_the_cap() -> None:
    h = AuthHarness(init_timeout=30.0)
    h.login()
    t = h.call("echo")
    h.respond(h.request("tools/call"), 401, headers=CHALLENGE)
    refresh = h.fetch(TOKEN_URL)
    h.take()
    h.feed(core.HttpResponseStarted(now=h.now, stream=refresh.stream, status=200))
    chunk, fed = b"x" * 65536, 0
    while core.AbortHttp(stream=refresh.stream) not in h.actions:
        h.feed(core.HttpBodyReceived(now=h.now, stream=refresh.stream, data=chunk))
        fed += len(chunk)
        assert fed <= core.AUTH_MAX_BYTES + len(chunk), "read past the cap"
    assert fed > core.AUTH_MAX_BYTES
    error = h.error(t)
    assert isinstance(error, core.AuthorizationUnavailable) and error.step == "refresh"
    assert error.detail == "sent more than the 256 KiB an answer may have"
    # More of it from the driver is late: dropped.
    h.feed(core.HttpBodyReceived(now=h.now, stream=refresh.stream, data=chunk))
    assert h.auth_phase is AuthPhase.AUTHORIZED


@pytest.mark.parametrize("length", ["12abc", "²", "1" * 40])
def test_a_content_length_that_is_no_number_is_not_trusted(length: str) -> None:
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    request = h.fetch(PRM_URL)
    headers = (("Content-Length", length),)
    h.feed(core.HttpResponseStarted(now=0.0, stream=request.stream, status=200, headers=headers))
    aborted = core.AbortHttp(stream=request.stream) in h.actions
    assert aborted is (length == "1" * 40)  # a number of 40 digits is larger than any cap


# --- 3. transient and permanent ------------------------------------------------------------------

FAILURES = ["connection reset", "503", "429", "garbage", "redirect", "hangs"]


@pytest.mark.parametrize("failure", [*FAILURES, "400 without an OAuth error"])
@pytest.mark.parametrize("step", ["registration", "token", "client_credentials"])
def test_a_failure_that_may_pass_fails_the_attempt_which_is_retried(
    step: str, failure: str
) -> None:
    credentials = step == "client_credentials"
    oauth = core.OAuthSettings(grant="client_credentials") if credentials else None
    h = AuthHarness(oauth=oauth, init_timeout=30.0, reconnect=1.0)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover()
    if step == "registration":
        if credentials:
            raise AssertionError("not a combination")
        h.prepared()
        request = h.fetch(f"{ISSUER}/register")
    elif step == "token":
        h.registered()
        h.redirected()
        request = h.fetch(TOKEN_URL)
    else:
        h.respond(h.fetch(f"{ISSUER}/register"), 201, {"client_id": "m", "client_secret": "s"})
        request = h.fetch(TOKEN_URL)
    failed_at = h.now
    fails(h, request, failure)
    cause = transient(h.error(waiter), "registration" if step == "registration" else "token")
    assert cause.origin == ISSUER
    assert h.auth_phase is AuthPhase.UNAUTHORIZED  # not refused: the next attempt starts over
    assert cause.retry_after == (7.0 if failure == "429" else None)
    # The connect attempt is retried with backoff, at least Retry-After later.
    h.take()
    h.fire_due()
    assert h.now - failed_at >= (7.0 if failure == "429" else 1.0)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover()
    if credentials:
        h.token()  # the registration is kept: only the token is asked for again
    else:
        h.registered() if step == "registration" else h.prepared()
        h.redirected()
        h.token()
    h.result_for(h.request("initialize"), INIT_RESULT)
    h.respond(h.request("notifications/initialized"), 202)
    assert h.machine.state == "ready"


def test_a_resource_metadata_hint_that_fails_falls_back_to_the_well_known_urls() -> None:
    # (A 429 asks the client to wait instead: test_a_retry_after_is_waited_out_by_every_flow.)
    for failure in [*(f for f in FAILURES if f != "429"), "404"]:
        h = AuthHarness()
        h.feed(core.Connect(now=0.0))
        h.respond(h.request("initialize"), 401, headers=HINTED)
        hint = h.fetch(HINT)
        if failure == "404":
            h.respond(hint, 404)
        else:
            fails(h, hint, failure)
        h.respond(h.fetch(PRM_URL), 200, PRM)  # RFC 9728's well-known URL, next in order
        h.respond(h.fetch(AS_URL), 200, AS_METADATA)
        assert h.of(core.PrepareAuthorization), failure


def test_metadata_urls_that_fail_in_different_ways_report_the_one_that_may_pass() -> None:
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.respond(h.fetch(PRM_URL), 503)
    h.respond(h.fetch(ROOT_PRM), 404)
    cause = transient(h.error(waiter), "protected resource metadata")
    assert cause.detail == "answered HTTP 503"
    # The authorization server's metadata: RFC 8414's URL fails, OIDC's is not JSON.
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.respond(h.fetch(PRM_URL), 200, PRM)
    h.feed(core.HttpFailed(now=0.0, stream=h.fetch(AS_URL).stream, reason="ConnectError"))
    h.respond(h.fetch(OIDC_URL), 200, b"{not json")
    cause = transient(h.error(waiter), "authorization server metadata")
    assert cause.detail == "failed (ConnectError)"


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ((400, {"error": "invalid_client"}), "invalid_client"),
        ((401, {"error": "unauthorized_client", "error_description": "no"}), "unauthorized_client"),
        ((200, {"error": "invalid_grant"}), "invalid_grant"),
    ],
)
def test_a_definite_refusal_is_final(answer: tuple[int, dict[str, Any]], code: str) -> None:
    h = AuthHarness(oauth=core.OAuthSettings(grant="client_credentials", client_id="m"))
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover()
    status, body = answer
    h.respond(h.fetch(TOKEN_URL), status, body)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert isinstance(error.cause, core.AuthorizationFailed) and error.cause.error_code == code
    assert h.auth_phase is AuthPhase.REFUSED and h.machine.next_deadline() is None


@pytest.mark.parametrize("code", ["temporarily_unavailable", "server_error"])
def test_an_oauth_error_that_says_try_later_may_pass(code: str) -> None:
    h = AuthHarness(oauth=core.OAuthSettings(grant="client_credentials", client_id="m"))
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover()
    h.respond(h.fetch(TOKEN_URL), 400, {"error": code})
    assert code in transient(h.error(waiter), "token").detail


def test_a_refresh_that_fails_for_now_fails_the_waiting_calls_and_keeps_the_refresh_token() -> None:
    h = AuthHarness(concurrency="stateless")
    h.login()
    first, second = h.call("a"), h.call("b")
    h.take()
    h.now = 5000.0  # the token expired: refreshed before the next use
    third = h.call("c")
    refresh = h.fetch(TOKEN_URL)
    assert h.form(refresh)["refresh_token"] == "r-1"
    h.respond(refresh, 503, b"down")
    error = h.error(third)
    assert isinstance(error, core.AuthorizationUnavailable) and error.step == "refresh"
    # The calls sent before with the token still in hand are not the flow's business.
    assert first not in h.replies and second not in h.replies
    assert not h.of(core.SaveAuthorization)  # nothing thrown away
    assert h.auth_phase is AuthPhase.AUTHORIZED
    h.take()
    fourth = h.call("d")  # the next call tries again, with the same refresh token
    again = h.fetch(TOKEN_URL)
    assert h.form(again)["refresh_token"] == "r-1"
    h.respond(again, 200, {**TOKEN, "access_token": "tok-2"})
    [call] = tool_calls(h, "d")
    assert h.header(call, "Authorization") == "Bearer tok-2"
    h.result_for(call, TEXT_RESULT)
    assert h.result(fourth).text == "hi"


def test_a_refused_refresh_removes_the_dead_tokens_from_the_store() -> None:
    h = AuthHarness()
    h.login()
    h.call("echo")
    h.respond(h.request("tools/call"), 401, headers=CHALLENGE)
    refresh = h.fetch(TOKEN_URL)
    h.take()
    h.respond(refresh, 400, {"error": "invalid_grant"})
    [save] = h.of(core.SaveAuthorization)
    kept = save.authorization
    assert (kept.access_token, kept.refresh_token, kept.expires_at) == (None, None, None)
    assert kept.client_id == "client-1" and kept.issuer == ISSUER  # the registration stays
    assert h.of(core.PrepareAuthorization)  # and a new login starts


# --- 4. held requests ----------------------------------------------------------------------------


def test_a_held_request_whose_caller_was_answered_is_never_sent() -> None:
    """Calls A and B in flight; A gets 401 (held while the token refreshes), B gets 404 (the
    session is forgotten): both callers are answered, and once the token comes, only the new
    session's initialize goes out: not A, not its cancel, nothing of the old session."""
    h = AuthHarness(concurrency="stateless")
    h.login(session="s1")
    a, b, c = h.call("a"), h.call("b"), h.call("c")
    [call_a], [call_b], [call_c] = tool_calls(h, "a"), tool_calls(h, "b"), tool_calls(h, "c")
    h.take()
    h.respond(call_a, 401, headers=CHALLENGE)  # held; the refresh starts
    refresh = h.fetch(TOKEN_URL)
    h.feed(core.CancelCall(now=h.now, ticket=c))  # its cancel waits for the token, held
    h.respond(call_b, 404)  # the server forgot the session
    assert isinstance(h.error(a), core.SessionRejected)
    assert isinstance(h.error(b), core.SessionRejected)
    assert core.AbortHttp(stream=call_c.stream) in h.actions
    h.take()
    h.respond(refresh, 200, {**TOKEN, "access_token": "tok-2"})
    sent = [h.body(r).get("method") for r in h.requests() if r.url == SERVER]
    assert sent == ["initialize"], sent
    init = h.request("initialize")
    assert h.header(init, "Mcp-Session-Id") is None
    assert h.header(init, "Authorization") == "Bearer tok-2"
    h.result_for(init, INIT_RESULT, headers=(("Mcp-Session-Id", "s2"),))
    h.respond(h.request("notifications/initialized"), 202)
    h.sse(h.request(http="GET"), end=False)
    assert h.machine.state == "ready"
    assert not tool_calls(h, "a") and not [
        r for r in h.requests() if r.body and b"notifications/cancelled" in r.body
    ]
    d = h.call("d")
    [call_d] = tool_calls(h, "d")
    assert h.header(call_d, "Mcp-Session-Id") == "s2"
    h.result_for(call_d, TEXT_RESULT)
    assert h.result(d).text == "hi"


def test_a_flow_that_fails_after_the_session_was_renewed_answers_each_caller_once() -> None:
    h = AuthHarness(concurrency="stateless", reconnect=1.0)
    h.login(session="s1")
    a, b = h.call("a"), h.call("b")
    [call_a], [call_b] = tool_calls(h, "a"), tool_calls(h, "b")
    h.take()
    h.respond(call_a, 401, headers=CHALLENGE)
    refresh = h.fetch(TOKEN_URL)
    h.respond(call_b, 404)  # both answered SessionRejected; the new initialize is held
    h.respond(refresh, 503, b"down")  # the new session's attempt fails, and is retried
    assert h.reply_count[a] == h.reply_count[b] == 1
    assert h.machine.status(h.now).retry_in is not None
    h.take()
    h.fire_due()
    assert h.request("initialize")


def test_a_held_request_that_timed_out_is_never_sent() -> None:
    h = AuthHarness()
    h.login()
    t = h.call("slow", timeout=5.0)
    h.respond(h.request("tools/call"), 401, headers=CHALLENGE)
    refresh = h.fetch(TOKEN_URL)
    h.take()
    h.advance(5.0)
    assert isinstance(h.error(t), core.RequestTimeout)
    h.respond(refresh, 200, TOKEN)
    assert not tool_calls(h, "slow")


# --- 5. the step-up limit ------------------------------------------------------------------------


def test_the_step_up_limit_counts_the_authorizations_of_the_request_it_concerns() -> None:
    """Tool x is refused for scope forever while tool y keeps succeeding: x gets at most
    MAX_AUTHORIZATIONS authorizations, however often y is answered in between."""
    h = AuthHarness(concurrency="stateless")
    h.login()
    logins = len([a for a in h.history if isinstance(a, core.Authorize)])
    x = h.call("x")
    [request] = tool_calls(h, "x")
    for _ in range(MAX_AUTHORIZATIONS):
        h.take()
        h.respond(request, 403, headers=SCOPE_CHALLENGE)
        h.prepared()  # a step-up authorization for x
        h.redirected()
        h.token()
        [request] = tool_calls(h, "x")
        y = h.call("y")
        [other] = tool_calls(h, "y")
        h.result_for(other, TEXT_RESULT)  # another tool succeeds meanwhile
        assert h.result(y).text == "hi"
    h.take()
    h.respond(request, 403, headers=SCOPE_CHALLENGE)
    error = h.error(x)
    assert isinstance(error, core.AuthorizationFailed) and error.error_code == "insufficient_scope"
    assert not h.of(core.PrepareAuthorization) and not h.of(core.Authorize)
    authorizations = [a for a in h.history if isinstance(a, core.Authorize)]
    assert len(authorizations) == logins + MAX_AUTHORIZATIONS
    # The token in hand still serves the rest.
    z = h.call("z")
    h.result_for(tool_calls(h, "z")[0], TEXT_RESULT)
    assert h.result(z).text == "hi" and h.auth_phase is AuthPhase.AUTHORIZED


# --- 7. where tokens and requests may go ---------------------------------------------------------


def test_no_bearer_token_over_plain_http_to_a_server_elsewhere() -> None:
    url = "http://mcp.example.com/mcp"
    h = AuthHarness(url=url)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(sent(h)[-1], 401, headers=CHALLENGE)
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert isinstance(error.cause, core.AuthorizationFailed)
    assert "allow_insecure_http" in str(error) and "RFC 6750" in str(error)
    assert not [r for r in sent(h) if r.url != url]  # no metadata, no token request
    # Allowed by the spec: the flow runs.
    allowed = AuthHarness(url=url, oauth=core.OAuthSettings(allow_insecure_http=True))
    allowed.feed(core.Connect(now=0.0))
    allowed.respond(sent(allowed)[-1], 401, headers=CHALLENGE)
    assert sent(allowed)[-1].url == PRM_URL  # the challenge's https hint
    # A stored token is not sent there either.
    stored = core.StoredAuthorization(issuer=ISSUER, client_id="c", access_token="tok")
    kept = AuthHarness(url=url, stored=stored)
    kept.feed(core.Connect(now=0.0))
    assert kept.header(sent(kept)[-1], "Authorization") is None
    # On this machine plain http is fine (OAuth 2.1 §1.5).
    local = AuthHarness(url="http://127.0.0.1:8000/mcp")
    local.feed(core.Connect(now=0.0))
    local.respond(sent(local)[-1], 401)
    assert sent(local)[-1].url == "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"


def test_hints_issuers_and_endpoints_of_a_remote_server_cannot_lead_here() -> None:
    remote, local = SERVER, "http://127.0.0.1:8000/mcp"
    assert may_fetch("https://auth.example.com/x", remote)
    assert not may_fetch("http://auth.example.com/x", remote)  # plain http elsewhere
    assert not may_fetch("https://127.0.0.1/x", remote) and not may_fetch("http://[::1]/", remote)
    assert not may_fetch("https://localhost:9/x", remote)
    assert may_fetch("http://127.0.0.1:9/x", local) and may_fetch("https://a.example.com", local)
    assert not may_fetch("ftp://a.example.com", remote) and not may_fetch("x", "y")
    for hint in ("http://mcp.example.com/prm", "https://127.0.0.1/prm", "http://169.254.169.254/"):
        assert protected_resource_metadata_urls(remote, hint) == (PRM_URL, ROOT_PRM), hint
    # An issuer on this machine, named by a server that is not: refused before any request.
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    prm = h.fetch(PRM_URL)
    h.take()
    h.respond(prm, 200, {**PRM, "authorization_servers": ["http://127.0.0.1:9000"]})
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert "127.0.0.1" in str(error) and not [r for r in sent(h) if "127.0.0.1" in r.url]
    # An endpoint on this machine in a remote issuer's metadata: refused too.
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover(server={**AS_METADATA, "token_endpoint": "http://localhost:6379/token"})
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert "token_endpoint" in str(error) and "on this machine" in str(error)


def test_reprs_of_requests_and_the_browser_step_hide_credentials() -> None:
    request = core.StartHttp(
        stream=1,
        method="POST",
        url="https://user:pw@auth.example.com/token?code=c0de",
        headers=(("Authorization", "Basic czNjcjN0"), ("Mcp-Session-Id", "s"), ("Accept", "x")),
        body=b"grant_type=refresh_token&refresh_token=r3fr3sh",
        secret=True,
    )
    shown = repr(request)
    for secret in ("czNjcjN0", "r3fr3sh", "c0de", "pw", "'s'"):
        assert secret not in shown, secret
    assert "Accept" in shown and "<46 bytes>" in shown
    authorize = core.Authorize(url="https://auth.example.com/authorize?state=st4te", state="st4te")
    assert "st4te" not in repr(authorize)


# --- close, signing ------------------------------------------------------------------------------


def test_close_aborts_the_requests_of_the_flow_and_a_restart_starts_over() -> None:
    h = AuthHarness()
    h.feed(core.Connect(now=0.0))
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    prm = h.fetch(PRM_URL)
    h.take()
    h.close()
    assert core.AbortHttp(stream=prm.stream) in h.actions
    assert h.auth_phase is AuthPhase.UNAUTHORIZED and h.machine.state == "closed"
    h.respond(prm, 200, PRM)  # late: dropped
    h.take()
    h.feed(core.Connect(now=h.now))
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover()
    assert h.of(core.PrepareAuthorization)
    # A refused layer starts over too when the client is started again.
    h.feed(core.AuthorizationAbandoned(now=h.now, reason="no browser"))
    assert h.auth_phase is AuthPhase.REFUSED
    h.close()
    assert h.auth_phase is AuthPhase.UNAUTHORIZED


def test_the_signing_step_names_the_algorithms_and_a_key_that_cannot_sign_is_a_refusal() -> None:
    settings = core.OAuthSettings(grant="client_credentials", client_id="m", private_key=True)
    h = AuthHarness(oauth=settings)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.discover(
        server={**AS_METADATA, "token_endpoint_auth_signing_alg_values_supported": ["ES256"]}
    )
    [sign] = h.of(core.SignAssertion)
    assert sign.algorithms == ("ES256",) and sign.audience == ISSUER
    h.feed(core.AuthorizationAbandoned(now=h.now, reason="the key is RSA; the server takes ES256"))
    error = h.error(waiter)
    assert isinstance(error, core.ConnectFailed) and error.permanent
    assert isinstance(error.cause, core.AuthorizationFailed)
    assert "could not be signed" in str(error) and "mcp-client login" not in str(error)


def test_a_recording_keeps_no_state_and_no_answer_of_the_token_endpoint() -> None:
    h = AuthHarness()
    h.login()
    [authorize] = [a for a in h.history if isinstance(a, core.Authorize)]
    encoded = json.dumps(encode_action(authorize))
    assert authorize.state not in encoded


def test_a_retry_after_is_waited_out_by_every_flow() -> None:
    # At a metadata URL: no other URL is asked meanwhile, the attempt waits it out.
    h = AuthHarness(reconnect=0.5)
    h.feed(core.Connect(now=0.0))
    waiter = h.await_ready(fail_fast=True)
    h.respond(h.request("initialize"), 401, headers=CHALLENGE)
    h.respond(h.fetch(PRM_URL), 429, b"", headers=(("Retry-After", "30"),))
    assert not [r for r in sent(h) if r.url == ROOT_PRM]
    assert transient(h.error(waiter), "protected resource metadata").retry_after == 30.0
    h.take()
    h.fire_due()
    assert h.now == 30.0 and h.request("initialize")
    # Mid-session: a refresh answered 429 keeps every other call from asking again too soon.
    h = AuthHarness(concurrency="stateless")
    h.login()
    first = h.call("a")
    h.respond(tool_calls(h, "a")[0], 401, headers=CHALLENGE)
    h.respond(h.fetch(TOKEN_URL), 429, b"", headers=(("Retry-After", "20"),))
    assert h.error(first).retry_after == 20.0  # type: ignore[attr-defined]
    h.take()
    h.now += 10
    second = h.call("b")
    h.respond(tool_calls(h, "b")[0], 401, headers=CHALLENGE)
    error = h.error(second)
    assert isinstance(error, core.AuthorizationUnavailable) and error.retry_after == 10.0  # left
    assert not [r for r in sent(h) if r.url == TOKEN_URL]
    h.take()
    h.now += 10  # waited out: the next call refreshes
    third = h.call("c")
    h.respond(tool_calls(h, "c")[0], 401, headers=CHALLENGE)
    h.respond(h.fetch(TOKEN_URL), 200, {**TOKEN, "access_token": "tok-2"})
    h.result_for(tool_calls(h, "c")[-1], TEXT_RESULT)
    assert h.result(third).text == "hi"
    # An expired token waits it out too, before any refresh.
    h.take()
    h.now += 4000
    fourth = h.call("d")
    h.respond(h.fetch(TOKEN_URL), 503, b"", headers=(("Retry-After", "60"),))
    assert isinstance(h.error(fourth), core.AuthorizationUnavailable)
    h.take()
    fifth = h.call("e")
    assert isinstance(h.error(fifth), core.AuthorizationUnavailable)
    assert not [r for r in sent(h) if r.url == TOKEN_URL]
