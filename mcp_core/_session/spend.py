"""Priced tools: the spend-gate protocol and an in-memory reference gate.

A spec's ``prices`` names tools that cost money. Calling one needs a ``Reservation`` from the
application's ``SpendGate``: the machine refuses the call with ``UnmeteredCall`` (and sends
nothing) without one, or with one for another server or tool, a smaller price, or one already
used. The client then settles it exactly once: ``commit()`` when the request was sent (the
server may have done the work), ``release()`` when the call failed before sending, so a failed
call does not burn the budget.

The machine never touches a reservation object: the driver describes it in the ``CallTool``
event (``reservation_facts``) and performs the ``SettleReservation`` action it gets back.
"Used once" holds in the whole process: the drivers share one record of every reservation
handed to any client or group (``_mcp_io/client.py``), and a reservation that says it is
``settled`` (committed or released, by anyone) is refused too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .._vocabulary.errors import McpError

__all__ = [
    "BudgetExhausted",
    "InMemorySpendGate",
    "Reservation",
    "SpendGate",
    "reservation_facts",
]


@runtime_checkable
class Reservation(Protocol):
    """Money set aside for one call of ``tool`` on ``server``.

    A reservation may also have a ``settled`` attribute (or property): True once it was
    committed or released, by a client or by the application. The client then refuses it
    with ``UnmeteredCall`` before anything is sent; a ``settled`` that raises counts as True.
    It is optional (not a member of this protocol, so a gate written without it still
    qualifies): without it, the client's own record of what it was handed is the only check.
    """

    server: str
    tool: str
    price: int

    def commit(self) -> None: ...

    def release(self) -> None: ...


class SpendGate(Protocol):
    def reserve(self, server: str, tool: str, price: int) -> Reservation:
        """Set ``price`` aside, or raise (e.g. ``BudgetExhausted``) when it cannot."""
        ...


class BudgetExhausted(McpError):
    """The spend gate has not enough budget left for this reservation."""


def reservation_facts(reservation: object, *, fresh: bool) -> dict[str, Any]:
    """What the machine needs to judge a reservation, as plain data (so it can be recorded):
    for whom and how much it was made, and whether it is unused: ``fresh`` (the driver has
    not seen it before) and not ``settled`` by its own account."""
    if not isinstance(reservation, Reservation):
        return {"server": None, "tool": None, "price": 0, "fresh": False}
    return {
        "server": reservation.server,
        "tool": reservation.tool,
        "price": reservation.price,
        "fresh": fresh and not _says_settled(reservation),
    }


def _says_settled(reservation: Reservation) -> bool:
    """The reservation's own ``settled`` (see ``Reservation``); one that raises: settled."""
    try:
        return bool(getattr(reservation, "settled", False))
    except Exception:
        return True


@dataclass(eq=False)
class _MemoryReservation:
    gate: InMemorySpendGate
    server: str
    tool: str
    price: int
    state: str = "open"  # open -> committed | released

    @property
    def settled(self) -> bool:
        return self.state != "open"

    def commit(self) -> None:
        self._settle("committed")
        self.gate.spent += self.price

    def release(self) -> None:
        self._settle("released")

    def _settle(self, state: str) -> None:
        if self.state != "open":
            raise RuntimeError(f"this reservation was already {self.state}")
        self.state = state
        self.gate.held -= self.price


@dataclass(eq=False)
class InMemorySpendGate:
    """The reference gate: a budget in the application's own unit (e.g. cents).

    ``held`` is set aside by open reservations, ``spent`` by committed ones; ``remaining`` is
    what can still be reserved. Not thread-safe: one event loop, or wrap ``reserve`` in a lock.
    """

    budget: int
    spent: int = 0
    held: int = 0
    reservations: list[_MemoryReservation] = field(default_factory=list, repr=False)

    @property
    def remaining(self) -> int:
        return self.budget - self.spent - self.held

    def reserve(self, server: str, tool: str, price: int) -> Reservation:
        if price <= 0:
            raise ValueError("a price is a positive integer")
        if price > self.remaining:
            raise BudgetExhausted(
                f"calling {tool!r} on {server!r} costs {price}, but only {self.remaining} of "
                f"the budget of {self.budget} is left"
            )
        self.held += price
        reservation = _MemoryReservation(self, server, tool, price)
        self.reservations.append(reservation)
        return reservation
