"""What a caller sees of a session: the ``Status`` snapshot, drawn from the machine's parts
without changing any of them."""

from __future__ import annotations

from collections.abc import Sequence

from .._config.spec import Spec
from .._transport.connection import Connection
from .._transport.eras import server_extensions
from .._vocabulary.errors import McpError
from .._vocabulary.phases import Phase
from .._vocabulary.status import SessionState, Status

__all__ = ["snapshot"]


def snapshot(
    spec: Spec,
    state: SessionState,
    sse: bool,
    concurrency: str,
    load: tuple[int, int],
    connections: Sequence[Connection],
    tools: Sequence[object] | None,
    last_error: McpError | None,
    now: float,
) -> Status:
    """The session's status at ``now``: ``load`` is (in flight, queued), ``tools`` the tool
    list as last fetched, the era and the server's facts those of the first ready connection."""
    ready = next((c.handshake for c in connections if c.phase is Phase.READY), None)
    retries = [c.retry_at for c in connections if c.retry_at is not None]
    return Status(
        name=spec.name,
        state=state,
        era=ready.era if ready else None,
        protocol_version=ready.protocol_version if ready else None,
        transport="sse" if sse else spec.transport,
        concurrency=concurrency,
        in_flight=load[0],
        queued=load[1],
        tools=len(tools) if tools is not None else None,
        last_error=str(last_error) if last_error else None,
        retry_in=max(0.0, min(retries) - now) if retries else None,
        server_info=ready.server_info if ready else None,
        capabilities=ready.capabilities if ready and ready.known else None,
        extensions=server_extensions(ready) if ready and ready.known else None,
        instructions=ready.instructions if ready else None,
    )
