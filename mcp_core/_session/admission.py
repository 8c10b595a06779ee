"""Admission: the in-flight window, the queue behind it, and every caller's deadline.

Work is admitted only while the session can take it (the session machine decides that, and
answers refusals). Admitted work goes to a ready connection with room in its window (at most
``cap`` requests in flight each), else waits FIFO in a queue of ``queue_limit``, else is
refused with ``Busy``. Each admitted piece of work has a deadline from admission, kept in a
heap so that admission and expiry cost O(log n). Hence, after any sequence of events,
``in_flight + queued <= cap * connections + queue_limit``.

A priced call holds a reservation until its request goes out: it is committed
when the work enters a connection's window, released if the work leaves before that. Both
are a ``SettleReservation`` action, emitted here exactly once per reservation.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterator, Sequence

from .._transport.connection import Connection, Work
from .._vocabulary.actions import Action, SettleReservation
from .._vocabulary.phases import Phase

__all__ = ["Admission"]


class Admission:
    """The window and queue over ``connections``; ``cap()`` is each one's in-flight cap."""

    __slots__ = ("_cap", "_connections", "_deadlines", "_out", "_queue_limit", "queue", "works")

    def __init__(
        self,
        connections: Sequence[Connection],
        queue_limit: int,
        cap: Callable[[], int],
        out: list[Action],
    ) -> None:
        self._connections = connections
        self._queue_limit = queue_limit
        self._cap = cap
        self._out = out
        self.works: dict[int, Work] = {}  # ticket -> work, queued or in a window
        self.queue: deque[Work] = deque()
        self._deadlines: list[tuple[float, int]] = []  # a heap of (deadline, ticket)

    @property
    def in_flight(self) -> int:
        return sum(connection.busy for connection in self._connections)

    # --- entering --------------------------------------------------------------------------

    def admit(self, work: Work) -> Connection | bool | None:
        """Register ``work``: the connection to send it on now, ``None`` when it was queued,
        or ``False`` when window and queue are full (nothing registered: answer ``Busy``)."""
        connection = self.free_connection()
        if connection is None and len(self.queue) >= self._queue_limit:
            return False
        self.works[work.ticket] = work
        self.arm(work)
        if connection is None:
            self.queue.append(work)
        return connection

    def free_connection(self) -> Connection | None:
        """A ready connection with room in its window, the lowest index first."""
        cap = 0
        for connection in self._connections:
            if connection.phase is Phase.READY:
                cap = cap or self._cap()
                if connection.busy < cap:
                    return connection
        return None

    def next_queued(self) -> tuple[Connection, Work] | None:
        """The oldest queued work and a connection with room for it, taken off the queue."""
        if not self.queue:
            return None
        connection = self.free_connection()
        if connection is None:
            return None
        return connection, self.queue.popleft()

    def enter(self, work: Work, connection: Connection) -> None:
        """``work`` takes a place in ``connection``'s window (once: later rounds of the same
        call keep it); its reservation is spent now, as its request goes out."""
        if work.slot is None:
            connection.busy += 1
            work.slot = connection.index
            self.settle(work, commit=True)

    # --- leaving ---------------------------------------------------------------------------

    def release(self, work: Work) -> None:
        """Work leaves its window (answered, withdrawn or lost), or the queue; a reservation
        it still holds was never spent and goes back."""
        self.settle(work, commit=False)
        if work.slot is not None:
            self._connections[work.slot].busy -= 1
            work.slot = None
        elif work in self.queue:
            self.queue.remove(work)

    def finish(self, work: Work) -> None:
        """``work`` is answered: forget it."""
        del self.works[work.ticket]
        self.release(work)

    def drain(self) -> list[Work]:
        """Remove every piece of work, in ticket order."""
        works = sorted(self.works.values(), key=lambda w: w.ticket)
        self.works.clear()
        self.queue.clear()
        for work in works:
            self.release(work)
        return works

    def settle(self, work: Work, *, commit: bool) -> None:
        if work.reserved:
            work.reserved = False
            self._out.append(SettleReservation(ticket=work.ticket, commit=commit))

    # --- deadlines -------------------------------------------------------------------------

    def arm(self, work: Work) -> None:
        """(Re)arm ``work.deadline``; an entry the deadline moved away from is dropped later."""
        heapq.heappush(self._deadlines, (work.deadline, work.ticket))

    def push_out(self, work: Work, deadline: float) -> None:
        """Move ``work.deadline`` to ``deadline`` if that is later; an earlier one is ignored:
        a deadline only ever moves out, so a caller keeps the time it was given."""
        if deadline > work.deadline:
            work.deadline = deadline
            self.arm(work)

    def earliest_deadline(self) -> float | None:
        """The top of the deadline heap, after dropping entries that no longer hold (work
        answered, or its deadline pushed out by progress): each entry is dropped once."""
        heap = self._deadlines
        while heap:
            deadline, ticket = heap[0]
            work = self.works.get(ticket)
            if work is not None and work.deadline == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    def expired(self, now: float) -> Iterator[Work]:
        """Take out, one by one, each piece of work whose deadline has come."""
        while (deadline := self.earliest_deadline()) is not None and deadline <= now:
            yield self.works.pop(heapq.heappop(self._deadlines)[1])
