"""Rate and money limits for sampling: a token bucket and an hourly/daily cost budget.

Both are pure: the caller passes the time (Unix seconds), so they are tested with a fake
clock and replayed deterministically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["CostBudget", "TokenBucket"]

_HOUR = 3600.0
_DAY = 86_400.0


@dataclass(slots=True)
class TokenBucket:
    """At most ``rate`` admissions a second on average, bursts of up to ``burst``.

    Tokens refill continuously: ``tokens = min(burst, tokens + (now - last) · rate)``.
    """

    rate: float
    burst: int
    _tokens: float = field(default=math.nan, init=False)
    _last: float = field(default=math.nan, init=False)

    def __post_init__(self) -> None:
        if not (self.rate > 0 and math.isfinite(self.rate)) or self.burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")

    def _refill(self, now: float) -> None:
        if math.isnan(self._tokens):
            self._tokens, self._last = float(self.burst), now
            return
        elapsed = max(0.0, now - self._last)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.rate)
        self._last = max(self._last, now)

    def available(self, now: float) -> float:
        """Tokens available at ``now``."""
        self._refill(now)
        return self._tokens

    def take(self, now: float) -> bool:
        """Take one token if there is one."""
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


@dataclass(slots=True)
class CostBudget:
    """Money (USD) allowed per UTC hour and per UTC day; None means no limit.

    Periods are tumbling and aligned to the clock (``floor(now / 3600)``, ``floor(now /
    86400)``), as cloud bills are. A sample is charged its *estimated* cost when admitted;
    when the real cost is known, :meth:`reconcile` moves the difference into the period of
    the admission (if that period is still current). The estimate starts at
    ``estimated_cost`` and then follows the real costs (an exponential moving average with
    weight ``alpha``), so cache hits and short answers lower it.
    """

    per_hour: float | None
    per_day: float | None
    estimated_cost: float
    alpha: float = 0.1
    _hour: int = field(default=-1, init=False)
    _day: int = field(default=-1, init=False)
    spent_hour: float = field(default=0.0, init=False)
    spent_day: float = field(default=0.0, init=False)
    spent_total: float = field(default=0.0, init=False)
    """Actual plus outstanding estimated cost charged since start (USD)."""

    def __post_init__(self) -> None:
        for limit in (self.per_hour, self.per_day):
            if limit is not None and not (limit >= 0 and math.isfinite(limit)):
                raise ValueError("budgets must be finite and >= 0")
        if self.estimated_cost < 0 or not (0 < self.alpha <= 1):
            raise ValueError("estimated_cost must be >= 0 and alpha in (0, 1]")

    def _roll(self, now: float) -> None:
        hour, day = math.floor(now / _HOUR), math.floor(now / _DAY)
        if hour != self._hour:
            self._hour, self.spent_hour = hour, 0.0
        if day != self._day:
            self._day, self.spent_day = day, 0.0

    def can_afford(self, now: float) -> bool:
        """Whether one more sample at the current estimate fits in both periods.

        A zero budget admits nothing; an estimate of 0 fits while the period is not spent.
        """
        self._roll(now)
        cost = self.estimated_cost
        return _fits(self.spent_hour, cost, self.per_hour) and _fits(
            self.spent_day, cost, self.per_day
        )

    def charge(self, now: float) -> float:
        """Charge the estimate for an admitted sample; returns the amount charged."""
        self._roll(now)
        cost = self.estimated_cost
        self.spent_hour += cost
        self.spent_day += cost
        self.spent_total += cost
        return cost

    def reconcile(
        self, admitted_at: float, charged: float, actual: float, now: float, *, learn: bool = True
    ) -> None:
        """Replace a charged estimate by the sample's actual cost; with ``learn``, move the
        estimate towards it (failed judgments reconcile without learning)."""
        self._roll(now)
        delta = actual - charged
        self.spent_total += delta
        if math.floor(admitted_at / _HOUR) == self._hour:
            self.spent_hour = max(0.0, self.spent_hour + delta)
        if math.floor(admitted_at / _DAY) == self._day:
            self.spent_day = max(0.0, self.spent_day + delta)
        if learn:
            self.estimated_cost += self.alpha * (actual - self.estimated_cost)


def _fits(spent: float, cost: float, limit: float | None) -> bool:
    if limit is None:
        return True
    if cost <= 0.0:
        return spent < limit
    return spent + cost <= limit
