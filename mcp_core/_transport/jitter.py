"""Deterministic jitter for reconnect backoff.

The core has no randomness: jitter comes from ``Spec.jitter_seed`` through splitmix64, a
64-bit generator small enough to read (Steele, Lea, Flood, "Fast splittable pseudorandom number
generators", 2014; the constants are those of Java's SplittableRandom). The same seed gives
the same delays, so a recorded session replays to the same timers.
"""

from __future__ import annotations

__all__ = ["Jitter", "backoff_delay"]

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
# Largest exponent used for doubling: 2**62 s is far beyond any cap, and float stays finite.
_MAX_DOUBLINGS = 62


class Jitter:
    """A splitmix64 generator seeded with ``seed`` (any int; taken modulo 2**64)."""

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def next_u64(self) -> int:
        """The next 64-bit output."""
        self._state = (self._state + _GAMMA) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def next_float(self) -> float:
        """The next float in [0, 1), with 53 random bits."""
        return (self.next_u64() >> 11) * 2.0**-53


def backoff_delay(attempt: int, first: float, cap: float, jitter: Jitter) -> float:
    """Seconds to wait before reconnect attempt ``attempt`` (0 for the first retry).

    ``first * 2**attempt``, capped at ``cap``, then multiplied by a factor drawn from
    [0.8, 1.2): +-20 % so that many clients restarted together do not reconnect in lockstep.
    The result is therefore in [0.8 * first, 1.2 * cap). Raises ``ValueError`` for a negative
    ``attempt`` or a non-positive ``first`` or ``cap``.
    """
    if attempt < 0:
        raise ValueError("attempt must be >= 0")
    if first <= 0 or cap <= 0:
        raise ValueError("first and cap must be > 0")
    base = min(cap, first * 2.0 ** min(attempt, _MAX_DOUBLINGS))
    return base * (0.8 + 0.4 * jitter.next_float())
