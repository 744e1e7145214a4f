"""Which answers get judged: a deterministic hash draw, oversampling rules, and limits.

The draw is ``u = blake2b(salt + query_id) / 2^64`` in [0, 1): the same query gets the same
``u`` on every replica, every retry and every replay, so a query is sampled iff
``u < rate``, where ``rate`` is the largest of the base rate and the rates of the rules it
matches. Sampled queries then pass the cost budget and the token bucket (those depend on
time and load, so they are the only non-deterministic part). Every decision is counted by
outcome. Time is passed in: the sampler is pure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ragstream.judging.budget import CostBudget, TokenBucket
from ragstream.shares import share_point

__all__ = ["Decision", "LabelRule", "Outcome", "RetrievalRule", "Sampler", "sample_point"]


class Outcome(StrEnum):
    """What the sampler decided for one answer."""

    SAMPLED = "sampled"
    NOT_SAMPLED = "not_sampled"
    RATE_LIMITED = "rate_limited"
    BUDGET = "budget"


def sample_point(query_id: str, salt: str = "") -> float:
    """The query's uniform draw in [0, 1): the `ragstream.shares.share_point` of
    ``salt · NUL · id``."""
    return share_point(f"{salt}\x00{query_id}")


@dataclass(frozen=True, slots=True)
class LabelRule:
    """Sample answers whose label ``key`` equals ``value`` at ``rate``."""

    key: str
    value: str
    rate: float

    def matches(self, labels: Mapping[str, str], metrics: Mapping[str, float]) -> bool:
        return labels.get(self.key) == self.value

    @property
    def name(self) -> str:
        return f"label:{self.key}={self.value}"


@dataclass(frozen=True, slots=True)
class RetrievalRule:
    """Sample answers whose query's retrieval ``metric`` (e.g. rr, ndcg@10) is below
    ``below`` at ``rate``. Queries whose metric is unknown (no retrieval event yet, or no
    label) do not match."""

    metric: str
    below: float
    rate: float

    def matches(self, labels: Mapping[str, str], metrics: Mapping[str, float]) -> bool:
        value = metrics.get(self.metric)
        return value is not None and not math.isnan(value) and value < self.below

    @property
    def name(self) -> str:
        return f"retrieval:{self.metric}<{self.below:g}"


Rule = LabelRule | RetrievalRule


@dataclass(frozen=True, slots=True)
class Decision:
    """One sampling decision."""

    outcome: Outcome
    rate: float
    """The rate that applied (the base rate or the largest matching rule's)."""
    rule: str | None
    """Name of the rule that set the rate (None: the base rate)."""
    point: float
    """The query's draw in [0, 1)."""
    charged: float = 0.0
    """USD charged to the budget at admission (estimated cost)."""
    at: float = math.nan
    """When it was decided (the time passed in)."""

    @property
    def sampled(self) -> bool:
        return self.outcome is Outcome.SAMPLED


class Sampler:
    """Deterministic sampling with oversampling rules, a rate limit and a cost budget."""

    def __init__(
        self,
        rate: float,
        rules: Sequence[Rule] = (),
        *,
        limit: TokenBucket | None = None,
        budget: CostBudget | None = None,
        salt: str,
    ) -> None:
        for r in (rate, *(rule.rate for rule in rules)):
            if not 0.0 <= r <= 1.0:
                raise ValueError(f"sampling rates must be in [0, 1], got {r}")
        self.rate = rate
        self.rules = tuple(rules)
        self.limit = limit
        self.budget = budget
        self.salt = salt
        self.counts: Counter[Outcome] = Counter(dict.fromkeys(Outcome, 0))
        """Decisions by outcome."""
        self.by_rule: Counter[str] = Counter()
        """Sampled answers by the rule that set their rate (``base`` for the base rate)."""

    def rate_for(
        self, labels: Mapping[str, str], metrics: Mapping[str, float] | None = None
    ) -> tuple[float, str | None]:
        """The rate for an answer: the largest of the base rate and matching rules' rates."""
        rate, rule_name = self.rate, None
        seen = metrics or {}
        for rule in self.rules:
            if rule.rate > rate and rule.matches(labels, seen):
                rate, rule_name = rule.rate, rule.name
        return rate, rule_name

    def decide(
        self,
        query_id: str,
        labels: Mapping[str, str],
        now: float,
        metrics: Mapping[str, float] | None = None,
    ) -> Decision:
        """Decide for one answer at time ``now`` (seconds) and count the outcome."""
        rate, rule = self.rate_for(labels, metrics)
        point = sample_point(query_id, self.salt)
        if point >= rate:
            return self._count(Decision(Outcome.NOT_SAMPLED, rate, rule, point, at=now))
        if self.budget is not None and not self.budget.can_afford(now):
            return self._count(Decision(Outcome.BUDGET, rate, rule, point, at=now))
        if self.limit is not None and not self.limit.take(now):
            return self._count(Decision(Outcome.RATE_LIMITED, rate, rule, point, at=now))
        charged = self.budget.charge(now) if self.budget is not None else 0.0
        self.by_rule[rule or "base"] += 1
        return self._count(Decision(Outcome.SAMPLED, rate, rule, point, charged, now))

    def reconcile(
        self, admitted_at: float, charged: float, actual: float, now: float, *, ok: bool = True
    ) -> None:
        """Replace an admission's estimated cost by the actual one (see `CostBudget`)."""
        if self.budget is not None:
            self.budget.reconcile(admitted_at, charged, actual, now, learn=ok)

    def _count(self, decision: Decision) -> Decision:
        self.counts[decision.outcome] += 1
        return decision
