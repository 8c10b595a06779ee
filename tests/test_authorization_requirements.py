"""The authorization requirements, row by row: the tests that show each one.

This table is the answer to "which test shows that?" for every requirement of the client's
OAuth support (MCP 2025-11-25 and 2026-07-28 basic/authorization, and the RFCs it names). The
check below keeps it honest: a test that is renamed or removed fails it, so the table cannot
point at nothing. (The tests themselves assert the behaviour; this file only names them.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ROWS: dict[str, list[str]] = {
    "a static Authorization header works everywhere (and turns OAuth off)": [
        "tests/core/transport/test_http_machine.py::test_legacy_streamable_http_handshake_and_headers",
        "tests/core/auth/test_authorization.py::test_misuse_is_refused",
        "tests/drivers/test_oauth_drivers.py::test_oauth_disabled_keeps_a_401_a_plain_connect_failure",
    ],
    "OAuth as a pure sub-machine both drivers feed (the blocking client too)": [
        "tests/drivers/test_oauth_real_server.py::test_login_then_echo_and_whoami",
        "tests/core/auth/test_authorization.py::test_the_whole_authorization_code_flow_on_a_401_to_initialize",
        "tests/drivers/test_oauth_drivers.py::test_login_with_an_authorize_callback_then_a_call",
    ],
    "discovery: on 401, WWW-Authenticate resource_metadata and scope": [
        "tests/core/auth/test_oauth.py::test_bearer_challenge_exposes_what_mcp_reads",
        "tests/core/auth/test_oauth.py::test_www_authenticate_never_fails_on_garbage",
        "tests/core/auth/test_authorization.py::test_the_whole_authorization_code_flow_on_a_401_to_initialize",
    ],
    "discovery: RFC 9728 metadata at the path-inserted well-known URL, then the root": [
        "tests/core/auth/test_oauth.py::test_protected_resource_metadata_urls",
        "tests/core/auth/test_authorization.py::test_discovery_falls_back_through_the_well_known_urls",
    ],
    "the metadata's resource must match the server or the flow stops": [
        "tests/core/auth/test_oauth.py::test_resource_covers",
        "tests/core/auth/test_oauth.py::test_protected_resource_metadata_refusals",
        "tests/core/auth/test_authorization.py::test_a_discovery_that_fails_refuses_with_a_reason",
    ],
    "authorization server metadata: RFC 8414 and OIDC in the spec's order; issuer must match": [
        "tests/core/auth/test_oauth.py::test_authorization_server_metadata_urls",
        "tests/core/auth/test_oauth.py::test_authorization_server_metadata_refusals",
        "tests/core/auth/test_authorization.py::test_discovery_falls_back_through_the_well_known_urls",
    ],
    "client identity, in order: pre-registered, CIMD, RFC 7591 (application_type), else say": [
        "tests/core/auth/test_oauth.py::test_choose_registration_follows_the_spec_priority",
        "tests/core/auth/test_oauth.py::test_registration_request_body",
        "tests/core/auth/test_authorization.py::test_client_credentials_registers_without_a_redirect_and_cimd_needs_no_registration",
        "tests/core/auth/test_authorization.py::test_the_whole_authorization_code_flow_on_a_401_to_initialize",
    ],
    "authorization code with PKCE S256, state, RFC 8707 resource everywhere, RFC 9207 iss": [
        "tests/core/auth/test_oauth.py::test_pkce_matches_rfc_7636_appendix_b",
        "tests/core/auth/test_oauth.py::test_begin_authorization_builds_the_url_and_records_the_issuer",
        "tests/core/auth/test_authorization.py::test_a_browser_step_that_fails_fails_the_handshake_for_good",
        "tests/drivers/test_oauth_drivers.py::test_a_redirect_with_a_wrong_state_is_refused",
    ],
    "client_credentials: client secret basic/post, or private_key_jwt": [
        "tests/core/auth/test_authorization.py::test_client_credentials_with_a_secret_and_with_a_signed_assertion",
        "tests/core/auth/test_oauth.py::test_client_assertion_claims",
        "tests/drivers/test_oauth_drivers.py::test_client_credentials_with_a_secret",
        "tests/drivers/test_oauth_drivers.py::test_client_credentials_with_a_signed_assertion",
    ],
    "refresh tokens are used before a new authorization": [
        "tests/drivers/test_oauth_real_server.py::test_an_expired_token_is_refreshed_once",
        "tests/core/auth/test_authorization.py::test_work_waits_for_the_token_and_a_refresh_comes_before_a_new_authorization",
        "tests/core/auth/test_authorization.py::test_a_refused_refresh_token_means_authorizing_again",
        "tests/drivers/test_oauth_drivers.py::test_an_expired_token_is_refreshed_without_the_user",
        "tests/drivers/test_oauth_drivers.py::test_a_revoked_refresh_token_means_authorizing_again",
    ],
    "the token endpoint auth method the server names": [
        "tests/core/auth/test_oauth.py::test_choose_token_endpoint_auth_method",
        "tests/core/auth/test_oauth.py::test_registration_auth_method",
    ],
    "scopes: challenge, else scopes_supported, else omitted; offline_access only if offered": [
        "tests/core/auth/test_oauth.py::test_select_scope",
        "tests/core/auth/test_authorization.py::test_the_whole_authorization_code_flow_on_a_401_to_initialize",
    ],
    "403 insufficient_scope steps up with the union of scopes, at most 3 attempts": [
        "tests/drivers/test_oauth_real_server.py::test_a_server_that_keeps_refusing_ends_the_step_ups_with_authorization_failed",
        "tests/core/auth/test_oauth.py::test_union_scopes_keeps_the_first_order",
        "tests/core/auth/test_authorization.py::test_step_up_asks_for_the_union_of_scopes_at_most_three_times",
        "tests/core/auth/test_authorization.py::test_at_most_three_authorizations_for_one_request_counting_the_first",
        "tests/core/auth/test_authorization_guarantees.py::test_the_step_up_limit_counts_the_authorizations_of_the_request_it_concerns",
    ],
    "credentials are bound to the issuer: a changed issuer means registering again": [
        "tests/core/auth/test_authorization.py::test_a_new_issuer_means_registering_again",
    ],
    "the browser step: one-shot 127.0.0.1 listener; authorize= replaces it": [
        "tests/drivers/test_redirect_listener.py::test_one_request_returns_its_parameters_echoes_nothing_and_closes_the_port",
        "tests/drivers/test_redirect_listener.py::test_it_listens_on_loopback_only_and_names_its_redirect_uri",
        "tests/drivers/test_oauth_drivers.py::test_the_default_browser_step_receives_the_redirect_on_its_listener",
        "tests/drivers/test_oauth_drivers.py::test_login_with_an_authorize_callback_then_a_call",
    ],
    "randomness (state, verifier) comes from the driver as event data": [
        "tests/core/auth/test_oauth.py::test_verifier_from_refuses_too_few_or_many_bytes",
        "tests/core/auth/test_authorization.py::test_misuse_is_refused",
    ],
    "TokenStore: in memory for the library, a 0600 file for mcp-client login": [
        "tests/core/vocabulary/test_tokens.py::test_the_in_memory_store_keeps_one_record_per_server",
        "tests/drivers/test_token_store.py::test_the_file_is_0600_its_new_directory_0700_and_so_is_the_lock",
        "tests/cli/test_cli_oauth.py::test_login_keeps_the_tokens_in_a_private_file_and_call_uses_them",
        "tests/drivers/test_oauth_drivers.py::test_a_stored_token_is_used_without_any_flow",
    ],
    "no token, code, verifier, secret or assertion in an error, log, repr, Status or recording": [
        "tests/drivers/test_oauth_real_server.py::test_no_secret_in_a_log_record_a_repr_or_a_status",
        "tests/core/auth/test_authorization.py::test_secrets_stay_out_of_recordings_and_reprs",
        "tests/core/auth/test_authorization.py::test_the_token_goes_to_the_resource_only",
        "tests/drivers/test_oauth_drivers.py::test_no_secret_reaches_a_log_record_a_repr_or_a_recording",
        "tests/cli/test_cli_oauth.py::test_no_token_code_or_secret_is_printed_even_with_debug_logs",
    ],
    "every request of the layer has its own deadline and a small size cap (aborted past either)": [
        "tests/core/auth/test_authorization_guarantees.py::test_a_metadata_url_that_never_answers_fails_the_attempt_by_the_connect_deadline",
        "tests/core/auth/test_authorization_guarantees.py::test_each_request_has_its_own_deadline_and_a_late_answer_is_dropped",
        "tests/core/auth/test_authorization_guarantees.py::test_an_answer_announcing_more_than_the_cap_is_aborted_unread",
        "tests/core/auth/test_authorization_guarantees.py::test_an_endless_answer_is_aborted_past_the_cap",
        "tests/drivers/test_auth_fault_matrix.py::test_auth_fault_matrix",
    ],
    "connection errors, timeouts, 429 and 5xx are transient (retried with backoff); only a "
    "definite answer is permanent": [
        "tests/core/auth/test_authorization_guarantees.py::test_a_failure_that_may_pass_fails_the_attempt_which_is_retried",
        "tests/core/auth/test_authorization_guarantees.py::test_a_resource_metadata_hint_that_fails_falls_back_to_the_well_known_urls",
        "tests/core/auth/test_authorization_guarantees.py::test_a_definite_refusal_is_final",
        "tests/core/auth/test_authorization_guarantees.py::test_a_refresh_that_fails_for_now_fails_the_waiting_calls_and_keeps_the_refresh_token",
        "tests/core/auth/test_authorization_guarantees.py::test_a_retry_after_is_waited_out_by_every_flow",
        "tests/drivers/test_auth_fault_matrix.py::test_auth_fault_matrix",
    ],
    "a request whose caller was answered is never sent": [
        "tests/core/auth/test_authorization_guarantees.py::test_a_held_request_whose_caller_was_answered_is_never_sent",
        "tests/core/auth/test_authorization_guarantees.py::test_a_held_request_that_timed_out_is_never_sent",
    ],
    "the loopback listener answers a wrong or missing state with 400 and keeps waiting": [
        "tests/drivers/test_redirect_listener.py::test_a_wrong_state_gets_400_echoing_nothing_and_the_right_one_still_ends_the_wait",
        "tests/drivers/test_redirect_listener.py::test_a_missing_empty_repeated_or_near_state_is_400_and_the_wait_goes_on",
        "tests/drivers/test_oauth_stray_redirect.py::test_a_stray_redirect_before_the_real_one_does_not_end_the_login",
    ],
    "no bearer token over plain http elsewhere; metadata hints over https unless loopback": [
        "tests/core/auth/test_authorization_guarantees.py::test_no_bearer_token_over_plain_http_to_a_server_elsewhere",
        "tests/core/auth/test_authorization_guarantees.py::test_hints_issuers_and_endpoints_of_a_remote_server_cannot_lead_here",
    ],
    "errors: AuthorizationRequired names the command; AuthorizationFailed keeps the OAuth code": [
        "tests/core/auth/test_oauth.py::test_the_two_errors_say_what_to_do_and_keep_the_oauth_code",
        "tests/core/auth/test_authorization.py::test_without_a_person_the_flow_asks_for_a_login",
        "tests/core/auth/test_authorization.py::test_a_failed_code_exchange_and_a_refused_initialized_post",
        "tests/cli/test_cli_oauth.py::test_status_shows_a_server_that_needs_a_login_with_the_command",
    ],
    "enterprise-managed authorization (SEP-990): ID token, ID-JAG (RFC 8693), token": [
        "tests/core/auth/test_enterprise.py::test_both_legs_then_a_bearer_token_with_no_browser_and_no_registration",
        "tests/core/auth/test_enterprise.py::test_a_refusal_at_the_identity_provider_is_final_and_says_so",
        "tests/core/auth/test_enterprise.py::test_a_refusal_at_the_authorization_server_is_final_and_says_so",
        "tests/core/auth/test_enterprise.py::test_an_expired_token_runs_both_legs_again_once_for_all_waiting_requests",
        "tests/drivers/test_enterprise.py::test_both_legs_from_an_id_token_file_read_afresh_and_nothing_leaks",
        "tests/drivers/test_enterprise.py::test_a_refusal_at_either_leg_is_final_and_names_the_leg",
    ],
    "device authorization grant (RFC 8628): the device endpoint, the code shown, the polls": [
        "tests/core/auth/test_device_grant.py::test_the_whole_device_login",
        "tests/core/auth/test_device_grant.py::test_a_server_without_a_device_endpoint_is_refused",
        "tests/drivers/test_device_grant.py::test_approved_after_polls_and_the_call_goes_through",
        "tests/cli/test_cli_device.py::test_login_device_shows_the_code_keeps_the_tokens_and_call_uses_them",
    ],
    "device grant: slow_down for good, access_denied and expired_token final, no answer: backoff": [
        "tests/core/auth/test_device_grant.py::test_an_expired_code_says_to_log_in_again",
        "tests/core/auth/test_device_grant.py::test_the_user_says_no",
        "tests/core/auth/test_device_grant.py::test_a_poll_without_a_usable_answer_polls_less_often",
        "tests/drivers/test_device_grant.py::test_slow_down_grows_the_interval_for_good",
        "tests/drivers/test_device_grant.py::test_the_user_says_no",
        "tests/drivers/test_device_grant.py::test_an_expired_code_says_to_log_in_again",
    ],
    "device grant: the connect deadline waits for the person; interactive=False refuses": [
        "tests/core/auth/test_device_grant.py::test_a_code_approved_after_the_connect_deadline_still_connects",
        "tests/core/auth/test_device_grant.py::test_a_client_that_asks_no_one_gets_authorization_required",
        "tests/drivers/test_device_grant.py::test_a_client_that_asks_no_one_is_refused_before_any_code",
    ],
    "device grant: the device code and tokens in no error, log, repr, Status or recording": [
        "tests/core/auth/test_device_grant.py::test_the_device_code_and_the_user_code_stay_out_of_recordings_reprs_and_status",
        "tests/drivers/test_device_grant.py::test_no_secret_in_logs_reprs_status_or_recordings",
    ],
    "DPoP (RFC 9449; SEP-1932): a proof on every token and MCP request, the DPoP scheme": [
        "tests/core/auth/test_dpop.py::test_token_requests_and_mcp_requests_carry_proofs_and_the_dpop_scheme",
        "tests/core/auth/test_dpop.py::test_a_bearer_answer_to_a_proof_is_an_unbound_token",
        "tests/core/auth/test_dpop.py::test_required_dpop_refuses_a_server_that_does_not_list_es256",
        "tests/drivers/test_dpop.py::test_a_dpop_login_with_nonces_proofs_on_every_request_and_no_leak",
        "tests/drivers/test_dpop.py::test_without_a_signer_auto_is_bearer_and_true_is_refused",
    ],
    "DPoP nonces: the authorization server's once, the MCP server's without a new login": [
        "tests/core/auth/test_dpop.py::test_the_authorization_servers_nonce_sends_the_token_request_again_once",
        "tests/core/auth/test_dpop.py::test_the_mcp_servers_nonce_sends_the_request_again_without_a_new_authorization",
        "tests/core/auth/test_dpop.py::test_a_second_nonce_refusal_of_the_same_request_is_a_refused_token",
    ],
    "DPoP key kept with the bound token, reused by the next run, never shown": [
        "tests/drivers/test_dpop.py::test_the_stored_key_serves_the_next_run_without_a_login",
        "tests/drivers/test_dpop.py::test_a_bound_token_whose_key_is_gone_means_a_new_login",
        "tests/core/auth/test_dpop.py::test_the_key_and_the_token_hash_stay_out_of_reprs_and_recordings",
        "tests/drivers/test_dpop.py::test_a_refused_proof_fails_typed_without_the_proof",
    ],
}


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


@pytest.mark.parametrize("row", list(ROWS))
def test_every_row_names_tests_that_exist(row: str) -> None:
    assert ROWS[row], row
    for node in ROWS[row]:
        file, _, name = node.partition("::")
        assert name in _tests_in(ROOT / file), f"{row}: {node} does not exist"
