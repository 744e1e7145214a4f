"""Prometheus exposition of judging: windowed generation gauges, the judge's agreement
with gold verdicts and the corrected hallucination ratio, and judge self-health.

A custom collector (``collect()`` is called on every scrape); register it on the agent's
registry. Windowed gauges carry ``window`` and the configured service labels; nothing
carries a query or document id.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from ragstream.judging.circuit import CircuitState
from ragstream.judging.gold import GOLD_OUTCOMES
from ragstream.judging.openai_judge import OpenAIJudge
from ragstream.judging.sampler import Outcome
from ragstream.judging.service import JudgingService
from ragstream.judging.verdicts import VERDICT_OUTCOMES
from ragstream.judging.workers import DROP_REASONS

__all__ = ["GENERATION_GAUGES", "JudgeCollector"]

GENERATION_GAUGES = {
    "faithfulness": "ragstream_generation_faithfulness",
    "answer_relevance": "ragstream_generation_answer_relevance",
    "context_relevance": "ragstream_generation_context_relevance",
}
"""Window column -> gauge name (the hallucination ratio is exported with its interval)."""

_FAILURE_REASONS = (
    "timeout",
    "http_error",
    "client_error",
    "connection_error",
    "bad_response",
    "bad_json",
    "circuit_open",
    "internal",
)


class JudgeCollector:
    """Yields the judging metric families from a `JudgingService` at scrape time."""

    def __init__(
        self,
        service: JudgingService,
        label_keys: Sequence[str] = (),
        *,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.service = service
        self.label_keys = tuple(label_keys)
        self._now = now

    def describe(self) -> list[Metric]:
        """No up-front description: the families depend on the data (and are unique)."""
        return []

    def collect(self) -> Iterator[Metric]:
        yield from self._windowed()
        yield from self._agreement()
        yield from self._health()

    def _windowed(self) -> Iterator[Metric]:
        keys = ["window", *self.label_keys]
        gauges = {
            col: GaugeMetricFamily(name, f"Mean judged {col.replace('_', ' ')}", labels=keys)
            for col, name in GENERATION_GAUGES.items()
        }
        ratio = GaugeMetricFamily(
            "ragstream_generation_hallucination_ratio",
            "Share of judged answers with an unsupported claim",
            labels=keys,
        )
        bounds = GaugeMetricFamily(
            "ragstream_generation_hallucination_ratio_bound",
            "Wilson 95% interval of the hallucination ratio",
            labels=[*keys, "bound"],
        )
        judged = GaugeMetricFamily(
            "ragstream_generation_judged_queries",
            "Judged answers behind the generation gauges (the sample size)",
            labels=keys,
        )
        refusal = GaugeMetricFamily(
            "ragstream_generation_refusal_ratio",
            "Share of judged answers that decline to answer from the contexts",
            labels=keys,
        )
        corrected = GaugeMetricFamily(
            "ragstream_generation_hallucination_ratio_corrected",
            "Hallucination ratio corrected for the judge's sensitivity and specificity on gold"
            " verdicts (Rogan-Gladen); absent when the correction is undefined",
            labels=keys,
        )
        corrected_bounds = GaugeMetricFamily(
            "ragstream_generation_hallucination_ratio_corrected_bound",
            "95% interval of the corrected ratio (window sampling and Se/Sp errors); 0 and 1"
            " when the correction is undefined",
            labels=[*keys, "bound"],
        )
        for labelset, reads in self.service.results.read_all(self._now()).items():
            for window, read in reads.items():
                values = [window, *labelset]
                judged.add_metric(values, read.judged)
                for col in GENERATION_GAUGES:
                    if read.counts[col] > 0:
                        gauges[col].add_metric(values, read.means[col])
                if not math.isnan(read.hallucination_ratio):
                    ratio.add_metric(values, read.hallucination_ratio)
                    low, high = read.hallucination_interval
                    bounds.add_metric([*values, "lower"], low)
                    bounds.add_metric([*values, "upper"], high)
                if not math.isnan(read.refusal_ratio):
                    refusal.add_metric(values, read.refusal_ratio)
                rate = read.corrected
                if rate is not None and read.judged:  # the interval is [0, 1] when undefined
                    if rate.defined:
                        corrected.add_metric(values, rate.value)
                    corrected_bounds.add_metric([*values, "lower"], rate.lower)
                    corrected_bounds.add_metric([*values, "upper"], rate.upper)
        yield from gauges.values()
        yield from (ratio, bounds, judged, refusal, corrected, corrected_bounds)

    def _agreement(self) -> Iterator[Metric]:
        """The comparisons with gold verdicts: counts, and Se and Sp over the gold window."""
        service = self.service
        results = service.results
        keys = ["judge", *self.label_keys]
        total = CounterMetricFamily(
            "ragstream_judge_agreement",
            "Answers with a gold verdict compared with the judge's verdict",
            labels=[*keys, "gold", "verdict"],
        )
        for (judge, labelset, gold, verdict), n in sorted(service.agreement.items()):
            gold_name = "hallucination" if gold else "faithful"
            total.add_metric([judge, *labelset, gold_name, verdict], n)
        yield total
        window = results.gold_spec.names[0]
        rates = {
            name: GaugeMetricFamily(
                f"ragstream_judge_{name}",
                f"The judge's {name} against gold verdicts over the gold window",
                labels=[*keys, "window"],
            )
            for name in ("sensitivity", "specificity")
        }
        rate_bounds = {
            name: GaugeMetricFamily(
                f"ragstream_judge_{name}_bound",
                f"Wilson 95% interval of the judge's {name}",
                labels=[*keys, "window", "bound"],
            )
            for name in rates
        }
        comparisons = GaugeMetricFamily(
            "ragstream_judge_gold_comparisons",
            "Gold verdicts compared over the gold window, by gold verdict",
            labels=[*keys, "window", "gold"],
        )
        judge = service.judge.name
        for labelset, confusion in results.read_gold(self._now()).items():
            values = [judge, *labelset, window]
            comparisons.add_metric([*values, "hallucination"], confusion.positives)
            comparisons.add_metric([*values, "faithful"], confusion.negatives)
            for name, estimate in (
                ("sensitivity", confusion.sensitivity()),
                ("specificity", confusion.specificity()),
            ):
                if estimate.defined:
                    rates[name].add_metric(values, estimate.value)
                    rate_bounds[name].add_metric([*values, "lower"], estimate.lower)
                    rate_bounds[name].add_metric([*values, "upper"], estimate.upper)
        yield comparisons
        for name in rates:
            yield rates[name]
            yield rate_bounds[name]
        outcomes = {o: service.gold.outcomes[o] for o in GOLD_OUTCOMES}
        yield _counter("ragstream_judge_gold", "Gold verdicts by outcome", "outcome", outcomes)
        yield GaugeMetricFamily(
            "ragstream_judge_gold_open_answers",
            "Answers open for a gold verdict (within their label TTL)",
            value=service.gold_open,
        )
        yield GaugeMetricFamily(
            "ragstream_judge_gold_waiting",
            "Gold verdicts waiting for their answer",
            value=service.gold_waiting,
        )

    def _health(self) -> Iterator[Metric]:
        service = self.service
        sampler, workers = service.sampler, service.workers
        samples = {o.value: sampler.counts[o] for o in Outcome}
        yield _counter(
            "ragstream_judge_samples", "Sampling decisions by outcome", "outcome", samples
        )
        requests = {r: workers.outcomes[r] for r in ("ok", *_FAILURE_REASONS)}
        yield _counter(
            "ragstream_judge_requests", "Finished judgments by outcome", "outcome", requests
        )
        dropped = {r: workers.dropped[r] for r in DROP_REASONS}
        yield _counter(
            "ragstream_judge_dropped", "Sampled answers dropped unjudged", "reason", dropped
        )
        buckets = workers.latency.cumulative()
        yield HistogramMetricFamily(
            "ragstream_judge_latency_seconds",
            "Seconds per judgment, successful or not",
            buckets=buckets,
            sum_value=workers.latency.sum,
        )
        yield GaugeMetricFamily(
            "ragstream_judge_queue_depth", "Sampled answers waiting", value=workers.depth
        )
        yield GaugeMetricFamily(
            "ragstream_judge_in_flight", "Judgments under way", value=workers.in_flight
        )
        if sampler.budget is not None:
            spent = GaugeMetricFamily(
                "ragstream_judge_budget_spent_usd",
                "Judge cost charged in the current period",
                labels=["period"],
            )
            spent.add_metric(["hour"], sampler.budget.spent_hour)
            spent.add_metric(["day"], sampler.budget.spent_day)
            yield spent
        if service.verdicts is not None:  # the verdicts kept for the result records
            outcomes = {o: service.verdicts.outcomes[o] for o in VERDICT_OUTCOMES}
            text = "Judge verdicts for the result records by outcome"
            yield _counter("ragstream_judge_verdicts", text, "outcome", outcomes)
            yield GaugeMetricFamily(
                "ragstream_judge_verdicts_kept",
                "Judge verdicts kept until their query is final",
                value=service.verdicts_kept,
            )
        judge = service.judge
        if isinstance(judge, OpenAIJudge):
            yield from _openai_metrics(judge)


def _counter(name: str, text: str, label: str, counts: Mapping[str, float]) -> Metric:
    """A counter family with one sample per value of ``label``, in ``counts``' order."""
    family = CounterMetricFamily(name, text, labels=[label])
    for value, n in counts.items():
        family.add_metric([value], n)
    return family


def _openai_metrics(judge: OpenAIJudge) -> Iterator[Metric]:
    account = judge.account
    tokens = {"prompt": account.prompt_tokens, "completion": account.completion_tokens}
    yield _counter("ragstream_judge_tokens", "Tokens used", "kind", tokens)
    yield CounterMetricFamily(
        "ragstream_judge_cost_usd", "Judge cost from token usage", value=account.cost
    )
    cache = {"hit": judge.cache.hits, "miss": judge.cache.misses}
    yield _counter("ragstream_judge_cache", "Cache lookups", "result", cache)
    reasons = ("timeout", "http_429", "http_5xx", "connection_error")
    retries = {r: judge.client.retries[r] for r in reasons}
    yield _counter("ragstream_judge_http_retries", "Retried HTTP attempts", "reason", retries)
    state = GaugeMetricFamily(
        "ragstream_judge_circuit_state",
        "Judge circuit breaker: 1 for the current state",
        labels=["state"],
    )
    current = judge.circuit_state()
    for s in CircuitState:
        state.add_metric([s.name.lower()], 1.0 if s is current else 0.0)
    yield state
