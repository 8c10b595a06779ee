"""The device authorization grant's steps (RFC 8628), on top of ``Flow``'s.

With ``grant: device_code`` the flow runs as for any grant up to a client identity (discovery,
then the pre-registered ``client_id`` or RFC 7591 registration for the device grant); then,
instead of the browser step:

1. ``_ask_device``: POST the authorization server's ``device_authorization_endpoint``
   (``client_id``, ``scope``, ``resource``); a server that lists none is refused at once
   (``AuthorizationFailed``), as is a client that may not ask a person (``interactive`` false:
   ``AuthorizationRequired``, as for the browser step);
2. ``_on_device_authorization``: the answer becomes a ``DeviceLogin`` and a ``ShowDeviceCode``
   action for the driver (the user code and where to enter it; never the device code). The
   connect deadline of a handshake waiting for the token stops while the user is away, as for
   the browser step; the code's ``expires_in`` bounds the wait instead;
3. ``_device_due`` (the layer's ``expire``, at the time ``_device_deadline`` gave the layer's
   ``next_deadline``; the core has no clock of its own): the poll is due, or the code expired;
4. ``_on_poll``: ``authorization_pending`` polls again after ``interval``, ``slow_down`` after
   ``interval`` grown by 5 seconds for good, ``access_denied`` and ``expired_token`` refuse
   (``AuthorizationFailed`` with that code); a poll that got no answer (a timeout, a
   connection error, HTTP 429 or 5xx) polls again after twice the interval (RFC 8628 §3.5);
   a token is kept as any other (``_on_token``), its refresh token used as today.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._vocabulary.actions import ShowDeviceCode
from .._vocabulary.errors import AuthorizationRequired
from .._vocabulary.phases import AuthPhase, AuthStep
from . import device as device
from .flow import ANSWERED as FLOW_ANSWERED
from .flow import Flow

__all__ = ["ANSWERED", "DeviceFlow"]


class DeviceFlow(Flow):
    """``Flow`` with the device authorization grant; see the module docstring."""

    __slots__ = ("_device_login",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._device_login: device.DeviceLogin | None = None  # the login under way

    def _grant(self) -> None:
        if self._settings.grant == "device_code":
            self._ask_device()
        else:
            super()._grant()

    def _ask_device(self) -> None:
        """RFC 8628 §3.1, where a person may be asked."""
        server = self._server
        assert server is not None
        if not self._settings.interactive:
            reason = "a device login needs a person to approve it, and this client asks no one"
            self._refuse(AuthorizationRequired(self._spec.name, reason))
            return
        endpoint = device.device_endpoint(server)
        scope = self._choose_scope(server)
        request = device.device_authorization_request(
            endpoint, auth=self._client_auth(None), scope=scope, resource=self._resource_value()
        )
        self._held.count_authorization()
        self._move(AuthStep.DEVICE)
        self._start(request)

    def _on_device_authorization(self, status: int, body: bytes) -> None:
        answer = device.parse_device_authorization(status, body)
        self._device_login = device.DeviceLogin.begin(answer, self._session.now)
        self._move(AuthStep.SHOW_CODE)
        # The user may take minutes on the other device: expires_in bounds the wait instead
        # (send_all gives a waiting handshake init_timeout again once the token comes).
        self._held.suspend_connect_deadlines()
        self._out.append(
            ShowDeviceCode(
                user_code=answer.user_code,
                verification_uri=answer.verification_uri,
                verification_uri_complete=answer.verification_uri_complete,
                expires_in=answer.expires_in,
            )
        )

    def _device_deadline(self, best: float | None) -> float | None:
        """The layer's ``next_deadline``: the next poll, or the code's expiry."""
        login = self._device_login
        if login is None or self.phase is not AuthPhase.AWAITING_DEVICE:
            return best
        due = min(login.due, login.expires_at)
        return due if best is None or due < best else best

    def _device_due(self, now: float) -> None:
        """The layer's ``expire``: a code past its ``expires_in`` refuses; a due poll goes."""
        login = self._device_login
        if login is None or self.phase is not AuthPhase.AWAITING_DEVICE:
            return
        expired = login.expired(now)
        if expired is not None:
            self._refuse(expired)
        elif now >= login.due:
            self._guard(self._poll, login)

    def _poll(self, login: device.DeviceLogin) -> None:
        """RFC 8628 §3.4."""
        server = self._server
        assert server is not None
        request = device.device_token_request(
            server.token_endpoint, auth=self._client_auth(None), device_code=login.device_code
        )
        self._move(AuthStep.POLL)
        self._start(request)

    def _on_poll(self, status: int, body: bytes) -> None:
        login = self._device_login
        assert login is not None
        waiting = device.poll_answer(status, body)
        if waiting is not None:
            login.wait(self._session.now, slow_down=waiting == "slow_down")
            self._move(AuthStep.WAIT)
            return
        self._on_token(status, body)
        self._device_login = None

    def _poll_failed(self) -> None:
        """A poll got no usable answer: poll less often (RFC 8628 §3.5), until the code
        expires."""
        login = self._device_login
        assert login is not None
        login.wait(self._session.now, backoff=True)
        self._move(AuthStep.WAIT)

    def _end_flow(self) -> None:
        super()._end_flow()
        self._device_login = None


# ``Flow``'s readers of the answers to its requests, and the device grant's.
ANSWERED: Mapping[AuthPhase, Callable[[DeviceFlow, int, bytes], None]] = {
    **FLOW_ANSWERED,
    AuthPhase.DEVICE_AUTHORIZING: DeviceFlow._on_device_authorization,
    AuthPhase.POLLING: DeviceFlow._on_poll,
}
