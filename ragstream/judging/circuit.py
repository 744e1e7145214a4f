"""A circuit breaker: stop calling a failing endpoint, try again after a cool-down.

closed --(``failures`` consecutive failures)--> open --(``cooldown`` seconds)--> half-open;
half-open lets one trial call through: success closes the circuit, failure opens it again.
Pure: the caller passes the time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import IntEnum

__all__ = ["CircuitBreaker", "CircuitState"]


class CircuitState(IntEnum):
    """Exported as a gauge: 0 closed, 1 open, 2 half-open."""

    CLOSED = 0
    OPEN = 1
    HALF_OPEN = 2


@dataclass(slots=True)
class CircuitBreaker:
    """Counts consecutive failures; see the module docstring for the states."""

    failures: int
    cooldown: float
    state: CircuitState = CircuitState.CLOSED
    consecutive: int = 0
    opened_at: float = 0.0
    transitions: Counter[str] = field(default_factory=Counter)
    """Transitions by target state name (``open``, ``half_open``, ``closed``)."""
    _trial_out: bool = False

    def __post_init__(self) -> None:
        if self.failures < 1 or self.cooldown < 0:
            raise ValueError("failures must be >= 1 and cooldown >= 0")

    def current(self, now: float) -> CircuitState:
        """The state at ``now`` (open turns half-open once the cool-down has passed)."""
        if self.state is CircuitState.OPEN and now - self.opened_at >= self.cooldown:
            self._move(CircuitState.HALF_OPEN)
            self._trial_out = False
        return self.state

    def allow(self, now: float) -> bool:
        """Whether a call may go out now (half-open: only one trial at a time)."""
        state = self.current(now)
        if state is CircuitState.CLOSED:
            return True
        if state is CircuitState.HALF_OPEN and not self._trial_out:
            self._trial_out = True
            return True
        return False

    def success(self) -> None:
        """A call succeeded: close the circuit."""
        self.consecutive = 0
        self._trial_out = False
        if self.state is not CircuitState.CLOSED:
            self._move(CircuitState.CLOSED)

    def failure(self, now: float) -> None:
        """A call failed: open after ``failures`` in a row, or at once when half-open."""
        self.consecutive += 1
        self._trial_out = False
        if self.state is CircuitState.HALF_OPEN or (
            self.state is CircuitState.CLOSED and self.consecutive >= self.failures
        ):
            self.opened_at = now
            self._move(CircuitState.OPEN)

    def release(self) -> None:
        """A call was abandoned (cancelled) without a result: free the half-open trial."""
        self._trial_out = False

    def _move(self, state: CircuitState) -> None:
        self.state = state
        self.transitions[state.name.lower()] += 1
