"""``sign_assertion``, the driver's ``SignAssertion`` (RFC 7523): the algorithm is one
the authorization server lists (RFC 8414 §2, ``token_endpoint_auth_signing_alg_values_supported``)
that the key can do, an RSA key under 2048 bits is refused (RFC 7518 §3.3), and the JWS header
names the key (``kid``, RFC 7515 §4.1.4): the spec's ``key_id``, else the key's RFC 7638
thumbprint. Every assertion is checked with PyJWT against the public key; every refusal names
the key file and never the key."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

import mcp_core as core
from _mcp_io.oauth import jwk_thumbprint, sign_assertion
from tests.drivers.facade import Facade
from tests.servers.http_oauth_server import OAuthServer

ISSUER = "https://auth.example.com"
CLIENT_ID = "signer"

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey

_KEYS: dict[str, Callable[[], PrivateKey]] = {
    "rsa2048": lambda: rsa.generate_private_key(65537, 2048),
    "rsa3072": lambda: rsa.generate_private_key(65537, 3072),
    "rsa1024": lambda: rsa.generate_private_key(65537, 1024),
    "p256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "p384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "p521": lambda: ec.generate_private_key(ec.SECP521R1()),
    "secp256k1": lambda: ec.generate_private_key(ec.SECP256K1()),
    "ed25519": ed25519.Ed25519PrivateKey.generate,
}


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, PrivateKey]]:
    """One key of each kind, written to a PEM file (PKCS #8, unencrypted)."""
    directory = tmp_path_factory.mktemp("keys")
    made: dict[str, tuple[Path, PrivateKey]] = {}
    for name, make in _KEYS.items():
        key = make()
        path = directory / f"{name}.pem"
        path.write_bytes(pem(key))
        made[name] = (path, key)
    return made


def pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def spec(key_file: Path, **oauth: Any) -> core.Spec:
    return core.Spec.from_mapping(
        {
            "name": "t",
            "url": "https://mcp.example.com/mcp",
            "oauth": {
                "grant": "client_credentials",
                "client_id": CLIENT_ID,
                "key_file": str(key_file),
                **oauth,
            },
        }
    )


def sign(
    key_file: Path, algorithms: tuple[str, ...] | None, **oauth: Any
) -> core.AssertionSigned | core.AuthorizationAbandoned:
    action = core.SignAssertion(client_id=CLIENT_ID, audience=ISSUER, algorithms=algorithms)
    return sign_assertion(action, spec(key_file, **oauth), lambda: 7.0)


def checked(event: object, key: PrivateKey, algorithm: str) -> dict[str, Any]:
    """The assertion's header, once PyJWT verified it with ``algorithm`` only."""
    assert isinstance(event, core.AssertionSigned), event
    claims = jwt.decode(
        event.assertion,
        key.public_key(),
        algorithms=[algorithm],
        audience=ISSUER,
        issuer=CLIENT_ID,
    )
    assert claims["sub"] == CLIENT_ID and claims["jti"]
    header: dict[str, Any] = jwt.get_unverified_header(event.assertion)
    assert header["alg"] == algorithm
    return header


def thumbprint_from(jwk: dict[str, Any], required: tuple[str, ...]) -> str:
    """RFC 7638 §3 from a JWK PyJWT wrote: the required members, sorted, no whitespace."""
    canonical = json.dumps({k: jwk[k] for k in required}, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


# --- the algorithm ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "listed", "expected"),
    [
        ("rsa2048", None, "RS256"),  # no list: RS256, which RFC 8414 §2 says servers support
        ("rsa2048", ("RS256", "ES256"), "RS256"),
        ("rsa2048", ("PS256",), "PS256"),
        ("rsa2048", ("ES256", "PS256", "HS256", "none"), "PS256"),
        ("rsa2048", ("PS512", "RS384"), "RS384"),
        ("rsa2048", ("PS384", "RS512"), "PS384"),
        ("rsa3072", ("RS512",), "RS512"),
        ("rsa2048", ("PS512",), "PS512"),
        ("p256", None, "ES256"),
        ("p256", ("RS256", "ES256"), "ES256"),
        ("p384", ("ES256", "ES384"), "ES384"),
        ("p384", None, "ES384"),
        ("p521", ("ES512",), "ES512"),
    ],
)
def test_the_algorithm_is_one_the_server_lists_and_the_key_can_do(
    keys: dict[str, tuple[Path, PrivateKey]],
    kind: str,
    listed: tuple[str, ...] | None,
    expected: str,
) -> None:
    key_file, key = keys[kind]
    header = checked(sign(key_file, listed), key, expected)
    assert header["kid"] == jwk_thumbprint(key.public_key())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "listed", "kind_named", "can"),
    [
        ("rsa2048", ("ES256",), "an RSA key", "RS256, PS256, RS384, PS384, RS512, PS512"),
        ("rsa2048", ("HS256", "none"), "an RSA key", "RS256"),
        ("rsa2048", (), "an RSA key", "RS256"),
        ("p256", ("RS256", "ES384"), "an EC P-256 key", "ES256"),
        ("p384", ("ES256",), "an EC P-384 key", "ES384"),
    ],
)
def test_a_key_the_server_lists_no_algorithm_for_is_refused_naming_the_file_and_the_list(
    keys: dict[str, tuple[Path, PrivateKey]],
    kind: str,
    listed: tuple[str, ...],
    kind_named: str,
    can: str,
) -> None:
    key_file, key = keys[kind]
    event = sign(key_file, listed)
    assert isinstance(event, core.AuthorizationAbandoned)
    reason = event.reason
    assert f"the key file {key_file} holds {kind_named}" in reason
    assert can in reason
    assert "token_endpoint_auth_signing_alg_values_supported" in reason
    for algorithm in listed:
        assert repr(algorithm) in reason
    if not listed:
        assert "signed with none only" in reason
    assert_no_key_in(reason, key)


def test_a_long_or_odd_server_list_is_shown_cut_short_and_escaped(
    keys: dict[str, tuple[Path, PrivateKey]],
) -> None:
    key_file, _ = keys["rsa2048"]
    listed = ("ES256\n\x1b[31m", "X" * 200, *(f"A{n}" for n in range(20)))
    event = sign(key_file, listed)
    assert isinstance(event, core.AuthorizationAbandoned)
    assert "\n" not in event.reason and "\x1b" not in event.reason
    assert "X" * 33 not in event.reason
    assert "and 14 more" in event.reason and "'A5'" in event.reason and "'A6'" not in event.reason


def test_an_rsa_key_under_2048_bits_is_refused(keys: dict[str, tuple[Path, PrivateKey]]) -> None:
    key_file, key = keys["rsa1024"]
    for listed in (None, ("RS256",), ("PS256",)):
        event = sign(key_file, listed)
        assert isinstance(event, core.AuthorizationAbandoned), listed
        assert f"the key file {key_file} holds a 1024-bit RSA key" in event.reason
        assert "RFC 7518 §3.3" in event.reason and "2048 bits" in event.reason
        assert_no_key_in(event.reason, key)


@pytest.mark.parametrize("kind", ["secp256k1", "ed25519"])
def test_a_key_of_another_kind_is_refused(
    keys: dict[str, tuple[Path, PrivateKey]], kind: str
) -> None:
    key_file, key = keys[kind]
    event = sign(key_file, None)
    assert isinstance(event, core.AuthorizationAbandoned)
    assert f"the key file {key_file} holds a key that cannot sign here" in event.reason
    assert_no_key_in(event.reason, key)


def assert_no_key_in(reason: str, key: PrivateKey) -> None:
    text = pem(key).decode()
    body = "".join(text.splitlines()[1:-1])
    assert not any(body[i : i + 16] in reason for i in range(0, len(body) - 16, 8))
    if isinstance(key, rsa.RSAPrivateKey):
        numbers = key.private_numbers()
        for secret in (numbers.d, numbers.p, numbers.q):
            assert str(secret)[:12] not in reason


# --- the kid ---------------------------------------------------------------------------------


def test_the_kid_is_the_spec_s_key_id_when_it_has_one(
    keys: dict[str, tuple[Path, PrivateKey]],
) -> None:
    for kind, algorithm in (("rsa2048", "RS256"), ("p256", "ES256")):
        key_file, key = keys[kind]
        header = checked(sign(key_file, None, key_id="key-2026-01"), key, algorithm)
        assert header["kid"] == "key-2026-01"


def test_the_thumbprint_is_rfc_7638_s() -> None:
    """RFC 7638 §3.1's example key and thumbprint."""
    n = (
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJ"
        "ECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FD"
        "W2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4"
        "vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
    )
    modulus = int.from_bytes(base64.urlsafe_b64decode(n + "=" * (-len(n) % 4)), "big")
    public = rsa.RSAPublicNumbers(65537, modulus).public_key()
    assert jwk_thumbprint(public) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


@pytest.mark.parametrize("kind", ["rsa2048", "rsa3072", "p256", "p384", "p521"])
def test_the_thumbprint_matches_the_jwk_pyjwt_writes(
    keys: dict[str, tuple[Path, PrivateKey]], kind: str
) -> None:
    _, key = keys[kind]
    public = key.public_key()
    if isinstance(public, rsa.RSAPublicKey):
        jwk = RSAAlgorithm.to_jwk(public, as_dict=True)
        expected = thumbprint_from(jwk, ("e", "kty", "n"))
    else:
        assert isinstance(public, ec.EllipticCurvePublicKey)
        jwk = ECAlgorithm.to_jwk(public, as_dict=True)
        expected = thumbprint_from(jwk, ("crv", "kty", "x", "y"))
    assert jwk_thumbprint(public) == expected


def test_a_p521_coordinate_keeps_its_leading_zero_octets() -> None:
    """RFC 7518 §6.2.1.2: a coordinate is the curve's full size (66 octets on P-521), so a
    point whose x starts with zero bits still has 66 octets: the thumbprint must not change
    with how small x happens to be."""
    for _ in range(200):  # one key in two has such an x
        key = ec.generate_private_key(ec.SECP521R1())
        if key.public_key().public_numbers().x.bit_length() <= 520:  # its first octet is 0
            break
    else:
        pytest.fail("no P-521 key with a leading zero octet in x in 200 tries")
    jwk = ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    assert len(base64.urlsafe_b64decode(jwk["x"] + "==")) == 66
    expected = thumbprint_from(jwk, ("crv", "kty", "x", "y"))
    assert jwk_thumbprint(key.public_key()) == expected


# --- end to end: the server's list comes from its metadata --------------------------------------


@pytest.mark.anyio
@pytest.mark.timeout(60)
async def test_a_key_the_server_s_metadata_rules_out_abandons_the_flow_on_each_driver(
    driver: str, keys: dict[str, tuple[Path, PrivateKey]]
) -> None:
    """tests/servers/http_oauth_server.py lists RS256 and ES256: a P-384 key is refused before
    anything is sent, and so is a 1024-bit RSA key; an RSA key of 2048 bits gets in, its
    assertion naming the key by its thumbprint."""
    rsa_file, rsa_key = keys["rsa2048"]
    public = rsa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    server = OAuthServer(clients={CLIENT_ID: {"public_key": public}})
    with server:
        for kind, words in (("p384", "'RS256', 'ES256'"), ("rsa1024", "1024-bit RSA key")):
            oauth = {"grant": "client_credentials", "client_id": CLIENT_ID}
            oauth["key_file"] = str(keys[kind][0])
            with pytest.raises(core.ConnectFailed, match=words):
                async with Facade(driver, url=server.url, oauth=oauth):
                    pass
        assert "token:client_credentials" not in server.oauth_log
        oauth = {"grant": "client_credentials", "client_id": CLIENT_ID, "key_file": str(rsa_file)}
        async with Facade(driver, url=server.url, oauth=oauth) as c:
            assert (await c.call_tool("echo", {"text": "jwt"})).text == "jwt"
        assert server.oauth_log.count("token:client_credentials") == 1
        [assertion] = [s for s in server.secrets if s.count(".") == 2 and s.startswith("eyJ")]
        header = jwt.get_unverified_header(assertion)
        assert header["alg"] == "RS256"
        assert header["kid"] == jwk_thumbprint(rsa_key.public_key())  # type: ignore[arg-type]
