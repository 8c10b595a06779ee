"""What a driver needs from the core besides the machine, for writing one for another framework.

``inherit_environment(os.environ, spawn.inherit)`` is the part of the driver's environment a
spawned server gets, with ``spawn.env`` put on top; ``INHERITED_ENV`` is the list of variable
names the machine puts in ``Spawn.inherit`` (the official SDKs' list). ``reservation_facts``
turns the reservation a caller passed for a priced tool into the plain data a ``CallTool``
event carries (``reservation=``), so the machine can judge it and a recording can hold it.
``token_store_key(url)`` is the key a server's login is kept under in a ``TokenStore``, and
``OAuthSettings.from_spec`` the machine's ``oauth=`` for a spec. ``completion_params`` is the
params of a ``completion/complete`` ``Request`` for what a caller gave ``complete()``.
``lists_tools_first(status)`` says whether to list the tools before a call that lets the tool
decide whether it runs as a task.

For the I/O around authorization: ``ENTROPY_BYTES`` is how many random bytes an
``AuthorizationPrepared`` event carries; ``client_assertion_claims`` the claims of the RFC 7523
client assertion a driver signs for ``private_key_jwt``. For wording: ``redact_url(url)`` is a
URL fit for an error or a log (no userinfo, query or fragment); ``proxy_url_problem(url)`` what
is wrong with a proxy URL, or None.
"""

from typing import TYPE_CHECKING, Any

from ._config.oauth_settings import token_store_key
from ._config.spec import proxy_url_problem
from ._session.spend import reservation_facts
from ._session.tasks import lists_tools_first
from ._transport.stdio_parts import INHERITED_ENV, inherit_environment
from ._vocabulary.events import ENTROPY_BYTES
from ._vocabulary.models import CompletionRef, completion_params
from ._vocabulary.urls import redact_url

if TYPE_CHECKING:
    from ._auth.clients import client_assertion_claims

__all__ = [
    "ENTROPY_BYTES",
    "INHERITED_ENV",
    "CompletionRef",
    "client_assertion_claims",
    "completion_params",
    "inherit_environment",
    "lists_tools_first",
    "proxy_url_problem",
    "redact_url",
    "reservation_facts",
    "token_store_key",
]


def __getattr__(name: str) -> Any:
    # The authorization layer is imported when a driver first signs an assertion: importing
    # it with this module cost every client about 12 ms of its import time.
    if name == "client_assertion_claims":
        from ._auth.clients import client_assertion_claims

        return client_assertion_claims
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
