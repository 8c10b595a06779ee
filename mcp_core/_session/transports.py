"""The transport a session talks through, chosen from its spec.

stdio specs get ``_transport/stdio.py``; url specs ``_transport/http.py``, wrapped by the
authorization layer (``_auth/layer.py``) when the session runs OAuth. The layer is imported
only then, so a machine without OAuth never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._config.oauth_settings import OAuthSettings
from .._config.spec import Spec
from .._transport.connection import Connection, Session, SseTransport, Transport
from .._transport.http import HttpTransport
from .._transport.stdio import StdioTransport
from .._vocabulary.actions import Action
from .._vocabulary.tokens import StoredAuthorization

if TYPE_CHECKING:
    from .._auth.layer import Authorization

__all__ = ["build_transport"]


def build_transport(
    spec: Spec,
    connections: list[Connection],
    session: Session,
    out: list[Action],
    oauth: OAuthSettings | None,
    authorization: StoredAuthorization | None,
) -> tuple[Transport, SseTransport | None, Authorization | None]:
    """The session's transport, the same object again when it is HTTP (its streams), and the
    authorization layer when there is one. ``ValueError`` for ``oauth`` on a stdio spec or
    next to an ``Authorization`` header of the spec's own."""
    http = spec.transport == "http"
    if oauth is not None and (not http or "authorization" in map(str.lower, spec.headers)):
        raise ValueError("oauth= is for url servers without an Authorization header")
    if not http:
        return StdioTransport(spec, connections, session, out), None, None
    plain = HttpTransport(spec, connections, session, out)
    if oauth is None:
        return plain, plain, None
    from .._auth.layer import Authorization

    layer = Authorization(spec, plain, session, out, oauth, authorization)
    return layer, layer, layer
