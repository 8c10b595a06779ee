"""Stored authorizations and the in-memory token store: records round-trip through
JSON, reading is strict and names the field without its value, and no secret reaches a repr."""

from __future__ import annotations

import math
from typing import Any

import pytest

import mcp_core as core
from mcp_core import InMemoryTokenStore, StoredAuthorization, TokenStore

SECRET = "s3cr3t-client-secret"
ACCESS = "s3cr3t-access-token"
REFRESH = "s3cr3t-refresh-token"
SERVER = "https://mcp.example.com/mcp"


def full() -> StoredAuthorization:
    return StoredAuthorization(
        issuer="https://auth.example.com",
        client_id="client-1",
        client_secret=SECRET,
        access_token=ACCESS,
        refresh_token=REFRESH,
        expires_at=1_900_000_000.5,
        scope="mcp:read offline_access",
    )


def test_defaults_are_a_registration_without_tokens() -> None:
    record = StoredAuthorization(issuer="https://auth.example.com", client_id="c")
    assert record.client_secret is None
    assert record.access_token is None
    assert record.refresh_token is None
    assert record.expires_at is None
    assert record.scope is None
    assert record.token_type == "Bearer"


def test_it_is_frozen_slotted_and_keyword_only() -> None:
    record = full()
    with pytest.raises(AttributeError):
        record.access_token = "other"  # type: ignore[misc]
    assert not hasattr(record, "__dict__")
    with pytest.raises(TypeError):
        StoredAuthorization("https://auth.example.com", "c")  # type: ignore[misc]


def test_repr_hides_the_secret_and_both_tokens() -> None:
    text = repr(full())
    for secret in (SECRET, ACCESS, REFRESH):
        assert secret not in text
    assert text == (
        "StoredAuthorization(issuer='https://auth.example.com', client_id='client-1', "
        "client_secret='[redacted]', access_token='[redacted]', refresh_token='[redacted]', "
        "expires_at=1900000000.5, scope='mcp:read offline_access', token_type='Bearer', "
        "dpop_key=None)"
    )
    bare = StoredAuthorization(issuer="https://a", client_id="c")
    assert "client_secret=None, access_token=None, refresh_token=None" in repr(bare)
    assert str(full()) == text


def test_json_round_trip() -> None:
    record = full()
    document = record.to_json()
    assert document == {
        "issuer": "https://auth.example.com",
        "client_id": "client-1",
        "client_secret": SECRET,
        "access_token": ACCESS,
        "refresh_token": REFRESH,
        "expires_at": 1_900_000_000.5,
        "scope": "mcp:read offline_access",
        "token_type": "Bearer",
    }
    assert StoredAuthorization.from_json(document) == record
    bare = StoredAuthorization(issuer="https://a", client_id="c")
    assert StoredAuthorization.from_json(bare.to_json()) == bare


def test_from_json_fills_defaults_ignores_unknown_fields_and_reads_whole_seconds() -> None:
    record = StoredAuthorization.from_json(
        {"issuer": "https://a", "client_id": "c", "expires_at": 17, "written_by": "v9"}
    )
    assert record == StoredAuthorization(issuer="https://a", client_id="c", expires_at=17.0)
    assert type(record.expires_at) is float


BAD_DOCUMENTS: list[tuple[Any, str]] = [
    ([], "a stored authorization must be a JSON object"),
    ("text", "a stored authorization must be a JSON object"),
    ({"client_id": "c"}, "'issuer' is missing"),
    ({"issuer": "https://a"}, "'client_id' is missing"),
    ({"issuer": "", "client_id": "c"}, "'issuer' must be a non-empty string"),
    ({"issuer": 1, "client_id": "c"}, "'issuer' must be a non-empty string"),
    ({"issuer": "https://a", "client_id": None}, "'client_id' must be a non-empty string"),
    (
        {"issuer": "https://a", "client_id": "c", "token_type": None},
        "'token_type' must be a non-empty string",
    ),
    (
        {"issuer": "https://a", "client_id": "c", "access_token": 12345},
        "'access_token' must be a string or null",
    ),
    (
        {"issuer": "https://a", "client_id": "c", "refresh_token": ["x"]},
        "'refresh_token' must be a string or null",
    ),
    (
        {"issuer": "https://a", "client_id": "c", "client_secret": {"v": 1}},
        "'client_secret' must be a string or null",
    ),
    (
        {"issuer": "https://a", "client_id": "c", "scope": 3},
        "'scope' must be a string or null",
    ),
    (
        {"issuer": "https://a", "client_id": "c", "expires_at": "1900000000"},
        "'expires_at' must be a number of seconds or null",
    ),
    (
        {"issuer": "https://a", "client_id": "c", "expires_at": True},
        "'expires_at' must be a number of seconds or null",
    ),
    (
        {"issuer": "https://a", "client_id": "c", "expires_at": math.nan},
        "'expires_at' must be a finite number",
    ),
    (
        {"issuer": "https://a", "client_id": "c", "expires_at": -math.inf},
        "'expires_at' must be a finite number",
    ),
]


@pytest.mark.parametrize(("document", "message"), BAD_DOCUMENTS)
def test_from_json_is_strict_and_names_the_field_only(document: Any, message: str) -> None:
    with pytest.raises(ValueError, match=r"^(a stored|the stored authorization's)") as caught:
        StoredAuthorization.from_json(document)
    assert message in str(caught.value)


def test_a_wrong_value_is_never_quoted() -> None:
    for field in ("access_token", "refresh_token", "client_secret", "scope"):
        with pytest.raises(ValueError) as caught:
            StoredAuthorization.from_json(
                {"issuer": "https://a", "client_id": "c", field: [SECRET]}
            )
        assert SECRET not in str(caught.value)
        assert field in str(caught.value)


def test_the_constructor_checks_the_same_way() -> None:
    with pytest.raises(ValueError, match="'access_token' must be a string or null"):
        StoredAuthorization(issuer="https://a", client_id="c", access_token=b"x")  # type: ignore[arg-type]


def test_the_in_memory_store_keeps_one_record_per_server() -> None:
    store = InMemoryTokenStore()
    assert isinstance(store, TokenStore)
    assert store.load(SERVER) is None
    store.save(SERVER, full())
    assert store.load(SERVER) == full()
    other = StoredAuthorization(issuer="https://other", client_id="c2")
    store.save("https://other.example.com/mcp", other)
    replaced = StoredAuthorization(issuer="https://auth.example.com", client_id="client-2")
    store.save(SERVER, replaced)
    assert store.load(SERVER) == replaced
    assert store.load("https://other.example.com/mcp") == other
    store.forget(SERVER)
    store.forget(SERVER)  # forgetting nothing is not an error
    assert store.load(SERVER) is None
    assert store.load("https://other.example.com/mcp") == other


def test_the_in_memory_store_refuses_what_is_not_a_record() -> None:
    store = InMemoryTokenStore()
    with pytest.raises(TypeError, match="StoredAuthorization"):
        store.save(SERVER, full().to_json())  # type: ignore[arg-type]
    assert store.load(SERVER) is None


def test_the_in_memory_store_repr_counts_servers_and_shows_no_secret() -> None:
    store = InMemoryTokenStore()
    store.save(SERVER, full())
    text = repr(store)
    assert text == "InMemoryTokenStore(servers=1)"
    assert SERVER not in text


def test_a_user_store_satisfies_the_protocol_by_shape() -> None:
    class Mine:
        def load(self, server: str) -> StoredAuthorization | None:
            return None

        def save(self, server: str, authorization: StoredAuthorization) -> None:
            pass

        def forget(self, server: str) -> None:
            pass

    assert isinstance(Mine(), core.TokenStore)
    assert not isinstance(object(), core.TokenStore)
