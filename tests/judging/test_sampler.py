"""Sampler: deterministic draws, oversampling rules, rate limit, cost budget, counts."""

from __future__ import annotations

import ast
import hashlib
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.judging.budget import CostBudget, TokenBucket
from ragstream.judging.sampler import LabelRule, Outcome, RetrievalRule, Sampler, sample_point

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z, the start of a UTC hour
assert T0 % 3600 == 0


def test_sample_point_is_blake2b_of_the_id() -> None:
    digest = hashlib.blake2b(b"\x00q-42", digest_size=8).digest()
    assert sample_point("q-42") == int.from_bytes(digest, "big") / 2**64
    assert sample_point("q-42", salt="s") != sample_point("q-42")
    assert 0.0 <= sample_point("") < 1.0


def test_the_sampler_loads_the_shared_draw_not_the_results_sink() -> None:
    """The judge's draw and the results topic's share are one function
    (`ragstream.shares`), which the sampler imports without the sink and its engine."""
    code = (
        "import sys, ragstream.judging.sampler;"
        "print(sorted(m for m in sys.modules if m.startswith('ragstream')))"
    )
    run = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    loaded = set(ast.literal_eval(run.stdout))
    assert "ragstream.shares" in loaded
    assert not loaded & {"ragstream.sinks.results", "ragstream.pipeline.engine"}
    assert not any(m.startswith(("ragstream.sinks", "ragstream.pipeline")) for m in loaded)


def test_sample_points_are_uniform() -> None:
    points = [sample_point(f"query-{i}") for i in range(20_000)]
    for cut in (0.01, 0.1, 0.5):
        share = sum(p < cut for p in points) / len(points)
        assert abs(share - cut) < 4 * (cut * (1 - cut) / len(points)) ** 0.5 + 1e-3


def test_same_decision_on_every_replica_and_retry() -> None:
    ids = [f"q{i}" for i in range(2000)]
    a, b = Sampler(0.1, salt=""), Sampler(0.1, salt="")
    first = [a.decide(q, {}, T0).outcome for q in ids]
    again = [a.decide(q, {}, T0 + 5).outcome for q in ids]
    other = [b.decide(q, {}, T0 + 99).outcome for q in reversed(ids)][::-1]
    assert first == again == other
    assert 150 < first.count(Outcome.SAMPLED) < 250


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=20), st.floats(0, 1), st.floats(0, 1))
def test_a_higher_rate_samples_a_superset(query_id: str, r1: float, r2: float) -> None:
    low, high = sorted((r1, r2))
    if Sampler(low, salt="").decide(query_id, {}, T0).sampled:
        assert Sampler(high, salt="").decide(query_id, {}, T0).sampled


def test_rules_take_the_largest_matching_rate() -> None:
    sampler = Sampler(
        0.01,
        [
            LabelRule("app", "billing", 0.5),
            RetrievalRule("rr", 0.34, 0.8),
            RetrievalRule("ndcg@10", 0.2, 1.0),
        ],
        salt="",
    )
    assert sampler.rate_for({"app": "support"}) == (0.01, None)
    assert sampler.rate_for({"app": "billing"}) == (0.5, "label:app=billing")
    assert sampler.rate_for({"app": "billing"}, {"rr": 0.25}) == (0.8, "retrieval:rr<0.34")
    assert sampler.rate_for({}, {"rr": 0.5, "ndcg@10": 0.1}) == (1.0, "retrieval:ndcg@10<0.2")
    # unknown or unlabeled (NaN) retrieval metrics match no rule
    assert sampler.rate_for({}, {"rr": float("nan")}) == (0.01, None)
    assert sampler.rate_for({}, None) == (0.01, None)


def test_poor_retrieval_is_oversampled() -> None:
    sampler = Sampler(0.0, [RetrievalRule("rr", 0.5, 1.0)], salt="")
    poor = sampler.decide("q1", {}, T0, {"rr": 0.2})
    good = sampler.decide("q2", {}, T0, {"rr": 1.0})
    assert poor.sampled
    assert poor.rule == "retrieval:rr<0.5"
    assert good.outcome is Outcome.NOT_SAMPLED
    assert sampler.by_rule == {"retrieval:rr<0.5": 1}


def test_token_bucket_by_hand() -> None:
    bucket = TokenBucket(rate=2.0, burst=3)
    assert [bucket.take(T0) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(T0 + 0.25) is False  # 0.5 token
    assert bucket.take(T0 + 0.5) is True  # 1.0 token
    assert bucket.available(T0 + 100) == 3.0  # capped at burst
    assert bucket.available(T0 + 50) == 3.0  # time going back does not add tokens
    with pytest.raises(ValueError, match="rate"):
        TokenBucket(rate=0.0, burst=1)


def test_rate_limited_decisions_are_counted() -> None:
    sampler = Sampler(1.0, limit=TokenBucket(rate=1.0, burst=2), salt="")
    outcomes = [sampler.decide(f"q{i}", {}, T0).outcome for i in range(5)]
    assert outcomes == [Outcome.SAMPLED] * 2 + [Outcome.RATE_LIMITED] * 3
    assert sampler.decide("q9", {}, T0 + 1.0).sampled
    assert sampler.counts[Outcome.RATE_LIMITED] == 3
    assert sampler.counts[Outcome.SAMPLED] == 3


def test_budget_per_hour_and_reconciliation() -> None:
    budget = CostBudget(per_hour=0.03, per_day=None, estimated_cost=0.01)
    sampler = Sampler(1.0, budget=budget, salt="")
    decisions = [sampler.decide(f"q{i}", {}, T0 + i) for i in range(5)]
    assert [d.outcome for d in decisions] == [Outcome.SAMPLED] * 3 + [Outcome.BUDGET] * 2
    assert budget.spent_hour == pytest.approx(0.03)
    # the first judgment was a cache hit (cost 0): 0.01 comes back, the estimate drops 10%
    first = decisions[0]
    sampler.reconcile(first.at, first.charged, 0.0, T0 + 10)
    assert budget.spent_hour == pytest.approx(0.02)
    assert budget.estimated_cost == pytest.approx(0.009)
    again = sampler.decide("q10", {}, T0 + 11)
    assert again.sampled
    assert again.charged == pytest.approx(0.009)
    # a new UTC hour starts a new budget
    assert sampler.decide("q11", {}, T0 + 12).outcome is Outcome.BUDGET
    assert sampler.decide("q12", {}, T0 + 3600).sampled
    assert sum(sampler.counts.values()) == 8


def test_budget_per_day_and_zero_budget() -> None:
    budget = CostBudget(per_hour=1.0, per_day=0.025, estimated_cost=0.01)
    sampler = Sampler(1.0, budget=budget, salt="")
    outcomes = [sampler.decide(f"q{i}", {}, T0 + 3600 * i).outcome for i in range(4)]
    assert outcomes == [Outcome.SAMPLED, Outcome.SAMPLED, Outcome.BUDGET, Outcome.BUDGET]
    day = 86_400.0
    assert sampler.decide("next-day", {}, (T0 // day + 1) * day).sampled
    spent = CostBudget(per_hour=0.0, per_day=None, estimated_cost=0.0)
    assert Sampler(1.0, salt="", budget=spent).decide("q", {}, T0).outcome is Outcome.BUDGET


def test_reconcile_of_an_old_period_leaves_the_current_one_alone() -> None:
    budget = CostBudget(per_hour=1.0, per_day=None, estimated_cost=0.1)
    charged = budget.charge(T0)
    budget.charge(T0 + 3600)
    budget.reconcile(T0, charged, 0.0, T0 + 3601, learn=False)
    assert budget.spent_hour == pytest.approx(0.1)
    assert budget.estimated_cost == 0.1
    assert budget.spent_total == pytest.approx(0.1)


def test_budget_is_checked_before_the_rate_limit() -> None:
    bucket = TokenBucket(rate=1.0, burst=1)
    sampler = Sampler(
        1.0,
        limit=bucket,
        salt="",
        budget=CostBudget(per_hour=0.0, per_day=None, estimated_cost=0.0),
    )
    assert sampler.decide("q", {}, T0).outcome is Outcome.BUDGET
    assert bucket.available(T0) == 1.0  # no token was spent on a refused sample


def test_invalid_rates_are_refused() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Sampler(1.5, salt="")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Sampler(0.1, [LabelRule("a", "b", -0.1)], salt="")
