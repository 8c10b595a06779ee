"""The driver's side of OAuth (MCP 2025-11-25 and 2026-07-28 basic/authorization), done the
same way by both drivers.

The core's authorization layer (``mcp_core/_auth/layer.py``) decides everything; a driver
performs four actions for it (and signs the DPoP proofs ``StartHttp.dpop`` asks for, with
``TokenKeeper.dpop``: ``_mcp_io/dpop.py``), and this module holds every part of them that is
not about threads or tasks:

- ``TokenKeeper``: the client's token store. ``machine_keywords`` is what the machine is
  built with: ``OAuthSettings.from_spec`` (the spec's ``oauth`` mapping), and the
  store's record for the server with its ``expires_at`` moved from the wall clock (the
  store's) to the driver's monotonic clock (the machine's; ``stored``). ``take`` performs
  ``SaveAuthorization``: the record back on the wall clock, into the store.
- ``BrowserStep``: ``PrepareAuthorization`` (bind the one-shot loopback ``RedirectListener``,
  or settle on the ``authorize=`` callback's redirect URI, plus 48 random bytes) and
  ``Authorize`` (the blocking wait for the browser, or reading the callback's answer into the
  redirect's parameters). The driver decides where the blocking part runs: a thread in
  ``mcp_sync``, ``anyio.to_thread`` in ``mcp_asyncio``, which ``close()`` ends at stop.
- ``sign_assertion``: ``SignAssertion``, a ``private_key_jwt`` assertion (RFC 7523) signed
  with the spec's ``key_file`` by PyJWT, the ``oauth`` extra: imported only when a key signs.
  The algorithm is one the authorization server lists in its
  ``token_endpoint_auth_signing_alg_values_supported`` (RFC 8414 §2) that the key can do
  (an RSA key of 2048 bits or more: RS256, PS256, RS384, PS384, RS512, PS512, in that order
  of preference; an EC key: ES256 on P-256, ES384 on P-384, ES512 on P-521, RFC 7518 §3.4);
  with no list, RS256 or the curve's. The header's ``kid`` (RFC 7515 §4.1.4) is the spec's
  ``key_id``, else the key's RFC 7638 JWK thumbprint.
- ``obtain_assertion``: ``ObtainAssertion``, the workload's platform-issued JWT for the
  ``jwt_bearer`` grant (SEP-1933), read afresh from the spec's ``assertion_file`` each time
  (platforms rotate it), or the user's ID token for the ``enterprise`` grant (SEP-990) from
  ``id_token_file``; ``assertion_answer``/``assertion_failed`` turn what the
  ``assertion=`` callback gave (the driver calls it) into the machine's event;
  ``check_assertion_source`` refuses a client with no source, or two, for the JWT.

Every event built here is secret-free in what the driver logs: an abandoned step's reason
names an exception class, a file, the server's published algorithm list or a fixed sentence,
never a URL, a parameter, a token, a key or an assertion.
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import parse_qsl, urlsplit

from mcp_core import (
    AssertionSigned,
    AuthorizationAbandoned,
    AuthorizationPrepared,
    AuthorizationRedirected,
    InMemoryTokenStore,
    InvalidSpec,
    McpError,
    OAuthSettings,
    ObtainAssertion,
    SaveAuthorization,
    SignAssertion,
    Spec,
    StoredAuthorization,
    TokenStore,
)
from mcp_core.driver import ENTROPY_BYTES, token_store_key

from .dpop import DpopSigner, can_sign, check_dpop
from .http import os_message

# The OAuth helpers and the redirect listener load when a login needs them, not with the
# driver: most clients never log in.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePublicKey
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

    from .redirect import RedirectListener

__all__ = [
    "BROWSER_TIMEOUT",
    "BrowserStep",
    "MachineOAuth",
    "TokenKeeper",
    "jwk_thumbprint",
    "redirect_params",
    "sign_assertion",
    "stored",
]

# How long the default browser step waits for the redirect: time to log in, consent, perhaps
# fetch a second factor.
BROWSER_TIMEOUT = 300.0
CALLBACK_PATH = "/callback"
_MAX_PARAMETERS = 64
# Store calls from every client of the process, one at a time: InMemoryTokenStore is not
# thread-safe by itself, and a group's clients may share one store.
_STORE_LOCK = threading.Lock()


def _new_store_lock() -> None:
    # A thread of the parent may hold the lock at the fork, and is not in the child: the
    # child's own clients get a fresh lock (os.register_at_fork).
    global _STORE_LOCK
    _STORE_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_store_lock)

Clock = Callable[[], float]


def stored(store: TokenStore, spec: Spec, clock: Clock) -> StoredAuthorization | None:
    """The machine's ``authorization=``: ``store``'s record for the server, its ``expires_at``
    on ``clock`` (the driver's monotonic clock). What the store raises (a ``TokenStoreError``
    for a bad file) propagates: the client is not built."""
    assert spec.url is not None
    with _STORE_LOCK:
        record = store.load(token_store_key(spec.url))
    if record is None or record.expires_at is None:
        return record
    return replace(record, expires_at=clock() + (record.expires_at - time.time()))


class MachineOAuth(TypedDict):
    """The ``SessionMachine`` keywords of OAuth."""

    oauth: OAuthSettings | None
    authorization: StoredAuthorization | None


class TokenKeeper:
    """One client's token store (``store``; ``None``: an ``InMemoryTokenStore`` of its own).

    ``take`` performs ``SaveAuthorization``: called in the driver's feed, so in feed order, it
    converts the record to wall-clock time at once and returns the write, which may run later
    and elsewhere; a write overtaken by a newer one of the same client is skipped. A failing
    store is logged (its own message, or its class for a store that is not ours to trust with
    secrets), never raised: the session keeps its token either way."""

    def __init__(self, store: TokenStore | None, clock: Clock, log: logging.Logger) -> None:
        self._store: TokenStore = InMemoryTokenStore() if store is None else store
        self._clock = clock
        self._log = log
        self._taken = 0
        self._written = 0
        self.dpop = DpopSigner(log)  # the client's DPoP key, kept with its bound tokens

    def machine_keywords(self, spec: Spec, *, interactive: bool) -> MachineOAuth:
        """``oauth=`` and ``authorization=`` for the machine of ``spec`` (see ``stored``); the
        record's DPoP key goes to ``dpop``, not to the machine. ``InvalidSpec`` for
        ``dpop: true`` where nothing can sign."""
        check_dpop(spec)
        oauth = OAuthSettings.from_spec(spec, interactive=interactive, dpop_signer=can_sign())
        record = None if oauth is None else stored(self._store, spec, self._clock)
        return {"oauth": oauth, "authorization": self.dpop.loaded(record)}

    def take(self, action: SaveAuthorization) -> Callable[[], None]:
        record = self.dpop.kept(action.authorization)
        if record.expires_at is not None:
            record = replace(record, expires_at=time.time() + (record.expires_at - self._clock()))
        self._taken += 1
        number = self._taken
        return lambda: self._write(number, action.server, record)

    def _write(self, number: int, server: str, record: StoredAuthorization) -> None:
        with _STORE_LOCK:
            if number < self._written:
                return
            self._written = number
            try:
                self._store.save(server, record)
            except McpError as exc:
                self._log.warning("the token store could not keep a login: %s", exc.message)
            except Exception as exc:
                self._log.warning("the token store's save raised %s", type(exc).__name__)


# --- the browser step ------------------------------------------------------------------------


class BrowserStep:
    """The browser step of one client, from ``PrepareAuthorization`` to ``Authorize``.

    ``authorize`` is the client's ``authorize=`` callback or ``None`` (the default step: the
    user's browser and a ``RedirectListener`` on 127.0.0.1). ``close()`` (at stop, from any
    thread) closes a listener, so a ``wait_for_browser`` in another thread ends within 0.1 s.
    """

    def __init__(self, spec: Spec, authorize: object | None, clock: Clock) -> None:
        self._port: int = spec.oauth.get("redirect_port", 0)
        self._authorize = authorize
        self._clock = clock
        self._listener: RedirectListener | None = None
        self._guard = threading.Lock()

    def prepare(self) -> AuthorizationPrepared | AuthorizationAbandoned:
        """``PrepareAuthorization``: the redirect URI, with fresh random bytes. Binding the
        listener does not block."""
        from .redirect import RedirectError, RedirectListener

        self.close()  # a listener of an earlier attempt that never got its Authorize
        if self._authorize is not None:
            redirect_uri = _callback_redirect_uri(self._authorize, self._port)
        else:
            try:
                listener = RedirectListener(self._port, CALLBACK_PATH)
            except RedirectError as exc:  # the port is taken: its message says what to do
                return self.abandoned(exc.message)
            with self._guard:
                self._listener = listener
            redirect_uri = listener.redirect_uri
        return AuthorizationPrepared(
            now=self._clock(), redirect_uri=redirect_uri, entropy=os.urandom(ENTROPY_BYTES)
        )

    def wait_for_browser(
        self, url: str, state: str
    ) -> AuthorizationRedirected | AuthorizationAbandoned:
        """The default ``Authorize``, blocking: open ``url`` in the user's browser and wait for
        the redirect that carries ``state`` (the ``Authorize`` action's) on the listener
        (``BROWSER_TIMEOUT``); the listener answers any other request 400 and waits on."""
        from .redirect import RedirectError, RedirectTimeout, open_browser

        with self._guard:
            listener = self._listener
        if listener is None:  # closed by stop() meanwhile
            return self.abandoned("the client stopped")
        try:
            if not open_browser(url):
                return self.abandoned(
                    "no browser could be opened here; pass authorize= to show the URL some "
                    "other way"
                )
            params = listener.wait(BROWSER_TIMEOUT, state=state)
        except RedirectTimeout:
            return self.abandoned(f"no redirect came back within {BROWSER_TIMEOUT:g} seconds")
        except RedirectError as exc:
            return self.abandoned(f"the redirect listener failed ({type(exc).__name__})")
        finally:
            listener.close()
        return AuthorizationRedirected(now=self._clock(), params=params)

    def run(self, url: str, state: str) -> AuthorizationRedirected | AuthorizationAbandoned:
        """``Authorize``, blocking: the ``authorize=`` callback (a plain function here: it gets
        ``url`` only, and the core checks the ``state`` of what it returns) or the default
        browser step, whose listener waits for ``state``."""
        if self._authorize is None:
            return self.wait_for_browser(url, state)
        assert callable(self._authorize)
        try:
            answer = self._authorize(url)
        except Exception as exc:
            return self.failed(exc)
        return self.answered(answer)

    def answered(self, answer: object) -> AuthorizationRedirected | AuthorizationAbandoned:
        """What the ``authorize=`` callback returned, as the redirect's parameters."""
        if inspect.iscoroutine(answer):
            answer.close()  # an async callback given to the blocking driver: never awaited
        try:
            params = redirect_params(answer)
        except (TypeError, ValueError) as exc:
            return self.abandoned(f"the authorize callback's answer is not usable ({exc})")
        return AuthorizationRedirected(now=self._clock(), params=params)

    def failed(self, exc: BaseException) -> AuthorizationAbandoned:
        """The ``authorize=`` callback raised ``exc``: only its class is told (its message
        may quote the URL, which holds the state)."""
        return self.abandoned(f"the authorize callback raised {type(exc).__name__}")

    def abandoned(self, reason: str) -> AuthorizationAbandoned:
        return AuthorizationAbandoned(now=self._clock(), reason=reason)

    def close(self) -> None:
        with self._guard:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()


def _callback_redirect_uri(authorize: object, port: int) -> str:
    """The redirect URI an ``authorize=`` callback stands for: its own ``redirect_uri``
    attribute when it has one (a callback that runs a listener of its own), else the loopback
    callback URI on the spec's ``redirect_port`` (RFC 8252 §7.3: the authorization server
    accepts any port of a loopback redirect URI)."""
    own = getattr(authorize, "redirect_uri", None)
    if isinstance(own, str) and own:
        return own
    return f"http://127.0.0.1{f':{port}' if port else ''}{CALLBACK_PATH}"


def redirect_params(answer: object) -> dict[str, str]:
    """The authorization response's parameters from what an ``authorize=`` callback returned:
    the URL the authorization server redirected to (its query), or those parameters as a
    mapping of strings. ``TypeError`` or ``ValueError`` (never quoting a value) otherwise, or
    when a parameter comes twice (RFC 6749 §3.1)."""
    if isinstance(answer, str):
        try:
            pairs = parse_qsl(
                urlsplit(answer).query, keep_blank_values=True, max_num_fields=_MAX_PARAMETERS
            )
        except ValueError:
            raise ValueError("not a URL with at most 64 query parameters") from None
        params: dict[str, str] = {}
        for name, value in pairs:
            if name in params:
                raise ValueError("a parameter comes twice")
            params[name] = value
        return params
    if isinstance(answer, Mapping):
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in answer.items()):
            raise TypeError("a mapping of parameters must map strings to strings")
        return dict(answer)
    raise TypeError(
        f"expected the redirect URL or a mapping of its parameters, got {type(answer).__name__}"
    )


# --- private_key_jwt -------------------------------------------------------------------------

# What an RSA key signs with, in order of preference: RS256 first (RFC 8414 §2: servers
# "SHOULD support RS256"), then the same strength in PSS, then stronger hashes.
_RSA_ALGORITHMS = ("RS256", "PS256", "RS384", "PS384", "RS512", "PS512")
# RFC 7518 §3.3 and §3.5: "A key of size 2048 bits or larger MUST be used" with RS* and PS*.
_RSA_MIN_BITS = 2048
# An EC key's curve (cryptography's name): its JWK name (RFC 7518 §6.2.1.1) and its one
# algorithm (RFC 7518 §3.4: each ES algorithm is bound to one curve).
_EC_CURVES = {
    "secp256r1": ("P-256", "ES256"),
    "secp384r1": ("P-384", "ES384"),
    "secp521r1": ("P-521", "ES512"),
}
# How much of the server's list a reason shows (its values are the server's text).
_SHOWN_ALGORITHMS = 8


def jwk_thumbprint(public_key: RSAPublicKey | EllipticCurvePublicKey) -> str:
    """The RFC 7638 thumbprint of ``public_key``: base64url (no padding) of the SHA-256 of its
    JWK's required members (RSA: ``e``, ``kty``, ``n``, RFC 7638 §3.2; EC: ``crv``, ``kty``,
    ``x``, ``y``), in lexicographic order, without whitespace (RFC 7638 §3.3). The JWK is
    PyJWT's (coordinates at the curve's full size, RFC 7518 §6.2.1.2). ``ValueError`` for a key
    that is neither RSA nor EC on P-256/384/521."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from jwt.algorithms import ECAlgorithm, RSAAlgorithm

    required: tuple[str, ...]
    if isinstance(public_key, rsa.RSAPublicKey):
        jwk, required = RSAAlgorithm.to_jwk(public_key, as_dict=True), ("e", "kty", "n")
    elif isinstance(public_key, ec.EllipticCurvePublicKey) and public_key.curve.name in _EC_CURVES:
        jwk, required = ECAlgorithm.to_jwk(public_key, as_dict=True), ("crv", "kty", "x", "y")
    else:
        raise ValueError("a JWK thumbprint is made here for RSA and EC P-256/384/521 keys only")
    members = {name: jwk[name] for name in required}
    canonical = json.dumps(members, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(canonical.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _shown(algorithms: tuple[str, ...]) -> str:
    """The server's list for a reason: at most ``_SHOWN_ALGORITHMS`` values, each quoted
    (``repr`` escapes any control character) and cut short."""
    if not algorithms:
        return "none"
    shown = ", ".join(repr(a[:32]) for a in algorithms[:_SHOWN_ALGORITHMS])
    more = len(algorithms) - _SHOWN_ALGORITHMS
    return shown + (f" and {more} more" if more > 0 else "")


def sign_assertion(
    action: SignAssertion, spec: Spec, clock: Clock
) -> AssertionSigned | AuthorizationAbandoned:
    """``SignAssertion``: the claims ``client_assertion_claims`` makes, signed with the spec's
    ``key_file`` by an algorithm of ``action.algorithms`` (the server's list) that the key can
    do, with the spec's ``key_id`` or the key's thumbprint as ``kid``. Reads the file
    (blocking, briefly). A key that cannot sign (unreadable, too small, of a kind the server
    does not list) abandons the step with a reason that names the file and the problem, never
    the key or the assertion."""

    def abandoned(reason: str) -> AuthorizationAbandoned:
        return AuthorizationAbandoned(now=clock(), reason=reason)

    key_file = spec.oauth.get("key_file")
    if key_file is None:  # the machine asks only when the spec has one
        return abandoned("no oauth key_file is configured to sign a client assertion")
    try:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
    except ImportError:
        return abandoned(
            "signing a client assertion needs PyJWT with cryptography: "
            "pip install 'mcp-sansio-client[oauth]'"
        )
    try:
        with open(key_file, "rb") as file:
            data = file.read()
    except OSError as exc:
        return abandoned(f"the key file {key_file} cannot be read ({os_message(exc)})")
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:  # TypeError: encrypted; never quoted, it may echo
        return abandoned(
            f"the key file {key_file} is not an unencrypted PEM private key ({type(exc).__name__})"
        )
    can: tuple[str, ...]  # what the key signs with, preferred first
    if isinstance(key, rsa.RSAPrivateKey):
        if key.key_size < _RSA_MIN_BITS:
            return abandoned(
                f"the key file {key_file} holds a {key.key_size}-bit RSA key, too small to sign "
                f"(RFC 7518 §3.3 and §3.5 require {_RSA_MIN_BITS} bits or more): make a new "
                f"key of at least {_RSA_MIN_BITS} bits and register its public key"
            )
        kind, can = "an RSA key", _RSA_ALGORITHMS
    elif isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name in _EC_CURVES:
        curve, algorithm = _EC_CURVES[key.curve.name]
        kind, can = f"an EC {curve} key", (algorithm,)
    else:
        return abandoned(
            f"the key file {key_file} holds a key that cannot sign here: use an RSA key of "
            f"{_RSA_MIN_BITS} bits or more, or an EC key on P-256, P-384 or P-521"
        )
    listed = action.algorithms
    chosen = can[0] if listed is None else next((a for a in can if a in listed), None)
    if chosen is None:
        assert listed is not None
        return abandoned(
            f"the key file {key_file} holds {kind}, which signs with {', '.join(can)}, but the "
            f"authorization server accepts client assertions signed with {_shown(listed)} only "
            "(its token_endpoint_auth_signing_alg_values_supported, RFC 8414 §2): use a key "
            "of a kind it lists"
        )
    key_id = spec.oauth.get("key_id")
    kid = key_id if key_id is not None else jwk_thumbprint(key.public_key())
    from mcp_core.driver import client_assertion_claims

    claims = client_assertion_claims(
        client_id=action.client_id,
        audience=action.audience,
        issued_at=int(time.time()),
        jti=secrets.token_urlsafe(24),
    )
    try:
        assertion = jwt.encode(claims, key, algorithm=chosen, headers={"kid": kid})
    except Exception as exc:
        return abandoned(f"the key in {key_file} could not sign ({type(exc).__name__})")
    return AssertionSigned(now=clock(), assertion=assertion)


# A platform's JWT (or a user's ID token) is a few KiB at most; a larger file is not one.
_MAX_ASSERTION_BYTES = 64 * 1024
# Where each grant that asks for a JWT (ObtainAssertion) finds it in the spec, and what it is
# called in a reason: workload identity's platform JWT (SEP-1933), enterprise-managed
# authorization's ID token from the enterprise sign-on (SEP-990).
_SOURCES = {
    "jwt_bearer": ("assertion_file", "assertion"),
    "enterprise": ("id_token_file", "ID token"),
}


def obtain_assertion(
    action: ObtainAssertion, spec: Spec, clock: Clock
) -> AssertionSigned | AuthorizationAbandoned:
    """``ObtainAssertion``: the JWT in the spec's ``assertion_file`` (a Kubernetes projected
    service account token, a SPIFFE JWT-SVID, ...), or for the ``enterprise`` grant the user's
    ID token in ``id_token_file`` (the enterprise sign-on keeps it fresh), read now, its
    surrounding whitespace removed; passed on as it is (the authorization server, or the
    identity provider, checks it). A file that cannot be read, is empty, too large or not
    text abandons the step with a reason that names the file, never what it holds."""
    del action  # for whom it is: the platform set that when it issued the file

    def abandoned(reason: str) -> AuthorizationAbandoned:
        return AuthorizationAbandoned(now=clock(), reason=reason)

    key, what = _SOURCES.get(str(spec.oauth.get("grant")), _SOURCES["jwt_bearer"])
    path = spec.oauth.get(key)
    if path is None:  # the machine asks only when the spec has one
        return abandoned(f"no oauth {key} is configured")
    try:
        with open(path, "rb") as file:
            data = file.read(_MAX_ASSERTION_BYTES + 1)
    except OSError as exc:
        return abandoned(f"the {what} file {path} cannot be read ({os_message(exc)})")
    if len(data) > _MAX_ASSERTION_BYTES:
        return abandoned(f"the {what} file {path} is over {_MAX_ASSERTION_BYTES} bytes")
    try:
        assertion = data.decode("ascii").strip()
    except UnicodeDecodeError:
        return abandoned(f"the {what} file {path} does not hold a JWT (not ASCII text)")
    if not assertion:
        return abandoned(f"the {what} file {path} is empty")
    return AssertionSigned(now=clock(), assertion=assertion)


def assertion_answer(answer: object, clock: Clock) -> AssertionSigned | AuthorizationAbandoned:
    """What the ``assertion=`` callback returned, for the machine: a non-empty string is the
    JWT (surrounding whitespace removed); anything else abandons the step, naming its type
    only."""
    if isinstance(answer, str) and answer.strip():
        return AssertionSigned(now=clock(), assertion=answer.strip())
    shown = "an empty string" if isinstance(answer, str) else type(answer).__name__
    return AuthorizationAbandoned(
        now=clock(), reason=f"the assertion= callback returned {shown}, not a JWT"
    )


def assertion_failed(exc: Exception, clock: Clock) -> AuthorizationAbandoned:
    """The ``assertion=`` callback raised: the step is abandoned naming the exception's class
    only (its message might quote the JWT)."""
    reason = f"the assertion= callback raised {type(exc).__name__}"
    return AuthorizationAbandoned(now=clock(), reason=reason)


def check_assertion_source(spec: Spec, callback: object) -> None:
    """``InvalidSpec`` unless the ``jwt_bearer`` grant has exactly one source for the JWT (the
    spec's ``assertion_file`` or the ``assertion=`` callback), the ``enterprise`` grant exactly
    one for the user's ID token (``id_token_file`` or ``assertion=``), and the callback is
    given only for those grants."""
    grant = str(spec.oauth.get("grant"))
    asks = spec.oauth_enabled and grant in _SOURCES
    key, what = _SOURCES.get(grant, _SOURCES["jwt_bearer"])
    has_file = spec.oauth.get(key) is not None
    problem = None
    if callback is not None and not asks:
        problem = (
            "assertion= is given but the spec's oauth grant is neither 'jwt_bearer' nor "
            "'enterprise'"
        )
    elif asks and callback is None and not has_file:
        supplies = "the workload's JWT" if grant == "jwt_bearer" else "the user's ID token"
        problem = (
            f"its oauth grant is {grant!r} with neither an oauth {key} nor an "
            f"assertion= callback to supply {supplies}"
        )
    elif asks and callback is not None and has_file:
        problem = f"both oauth {key} and assertion= would supply the {what}: keep one"
    if problem is not None:
        raise InvalidSpec(f"invalid spec for server {spec.name!r}: {problem}")
