"""A task, as the server reports it: the handle of a long-running ``tools/call``.

Two protocol versions have tasks, with different names for the same facts:

- 2025-11-25 basic/utilities/tasks (experimental): a task-augmented request is answered with
  ``{"task": {taskId, status, statusMessage?, createdAt, lastUpdatedAt, ttl, pollInterval?}}``
  (milliseconds), and ``tasks/get`` with the same fields, flat.
- the 2026-07-28 Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): the call's
  result is itself the task, flat, with ``resultType: "task"``, ``ttlMs`` and
  ``pollIntervalMs``; ``tasks/get`` adds what the status carries (``result``, ``error``,
  ``inputRequests``).

``TaskStatus`` reads either; times stay the server's ISO 8601 strings, durations become
seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TASK_STATUSES", "TERMINAL_STATUSES", "TaskStatus"]

# 2025-11-25 basic/utilities/tasks §Task Status, and SEP-2663 (the same five).
TASK_STATUSES = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})


def _seconds(wire: Mapping[str, Any], *keys: str) -> float | None:
    """The first of ``keys`` holding a number of milliseconds, in seconds (None: absent, null
    or not a number; 2026-07-28 ``ttlMs: null`` means unlimited)."""
    for key in keys:
        value = wire.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return max(0.0, value / 1000)
    return None


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStatus:
    """Where a task stands, as its server last said.

    ``status`` is one of ``working``, ``input_required``, ``completed``, ``failed``,
    ``cancelled``; ``message`` the server's ``statusMessage``. ``ttl`` is how long the server
    keeps the task after its creation and ``poll_interval`` how often it asks to be polled,
    both in seconds (None: not said, or, for ``ttl``, unlimited)."""

    task_id: str
    status: str
    message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl: float | None = None
    poll_interval: float | None = None
    # The task exactly as received, every field kept (``result``, ``inputRequests``, ...).
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def done(self) -> bool:
        """The task reached a terminal status: it will not change again."""
        return self.status in TERMINAL_STATUSES

    @classmethod
    def from_wire(cls, wire: object) -> TaskStatus:
        """Read a task (either version's field names). ``ValueError`` naming the field for a
        missing or malformed ``taskId`` or ``status``, or a status no version defines."""
        if not isinstance(wire, Mapping):
            raise ValueError("the task is not an object")
        task_id, status = wire.get("taskId"), wire.get("status")
        if not isinstance(task_id, str) or not task_id:
            raise ValueError("the task's taskId is missing or not a string")
        if status not in TASK_STATUSES:
            shown = repr(status[:32]) if isinstance(status, str) else "not a string"
            raise ValueError(f"the task's status is {shown}, not one the protocol defines")
        texts = {
            key: value[:2000] if isinstance(value := wire.get(key), str) else None
            for key in ("statusMessage", "createdAt", "lastUpdatedAt")
        }
        return cls(
            task_id=task_id,
            status=status,
            message=texts["statusMessage"],
            created_at=texts["createdAt"],
            last_updated_at=texts["lastUpdatedAt"],
            ttl=_seconds(wire, "ttlMs", "ttl"),
            poll_interval=_seconds(wire, "pollIntervalMs", "pollInterval"),
            raw=wire,
        )

    def to_wire(self) -> dict[str, Any]:
        """The task as 2026-07-28 names its fields (milliseconds, flat), None fields left out."""
        wire: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        for key, value in (
            ("statusMessage", self.message),
            ("createdAt", self.created_at),
            ("lastUpdatedAt", self.last_updated_at),
            ("ttlMs", _ms(self.ttl)),
            ("pollIntervalMs", _ms(self.poll_interval)),
        ):
            if value is not None:
                wire[key] = value
        return wire
