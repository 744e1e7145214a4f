"""Judging wired together: sampler -> workers -> judge -> results, labels and audit topic.

`JudgingService.on_answers` is the runner's per-batch callback: synchronous, it decides
per answer and enqueues or drops, so consumption never waits for a judge. Built from the
`judge` settings section by :meth:`JudgingService.from_settings`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragstream.judging.budget import CostBudget, TokenBucket
from ragstream.judging.cache import JudgmentCache
from ragstream.judging.circuit import CircuitBreaker
from ragstream.judging.http import ChatClient
from ragstream.judging.lexical import LexicalJudge
from ragstream.judging.model import AnswerLike, Judge, JudgeError, JudgeInput, Judgment
from ragstream.judging.openai_judge import OpenAIJudge, TokenAccount
from ragstream.judging.publisher import JudgmentPublisher
from ragstream.judging.results import JudgeLabel, JudgeResults, judge_labels
from ragstream.judging.sampler import LabelRule, RetrievalRule, Sampler
from ragstream.judging.settings import JudgeSettings
from ragstream.judging.workers import JudgeWorkers

if TYPE_CHECKING:
    from ragstream.pipeline.engine import Engine

__all__ = [
    "JudgingService",
    "RetrievalLookup",
    "build_judge",
    "build_sampler",
    "engine_label_sink",
    "engine_lookup",
]

RetrievalLookup = Callable[[str], Mapping[str, float] | None]
"""query_id -> the query's current retrieval metrics (e.g. ``{"rr": 0.5}``), or None."""
LabelSink = Callable[[Sequence[JudgeLabel]], None]


def engine_lookup(engine: Engine, metrics: Sequence[str]) -> RetrievalLookup:
    """Reads an open query's current metric row from the engine (None when not open or
    not scored yet; NaN values — an unlabeled query — do not match any rule)."""
    index = {name: engine.columns.index(name) for name in metrics if name in engine.columns}

    def lookup(query_id: str) -> Mapping[str, float] | None:
        query = engine.find_query(query_id)
        if query is None or query.contribution is None:
            return None
        row = query.contribution
        return {name: float(row[i]) for name, i in index.items()}

    return lookup


def engine_label_sink(engine: Engine) -> tuple[LabelSink, Counter[str]]:
    """Applies judge labels to the open query in the engine (rescored with the next batch);
    returns the sink and its counts by outcome (``applied``, ``late``, ``not_open``)."""
    counts: Counter[str] = Counter()

    def sink(labels: Sequence[JudgeLabel]) -> None:
        for label in labels:
            outcome = engine.label(label.query_id, label.doc_id, label.rel, ts=label.ts)
            counts["not_open" if outcome is None else str(outcome)] += 1

    return sink, counts


def build_sampler(settings: JudgeSettings) -> Sampler:
    """The sampler described by ``settings.sampling``."""
    s = settings.sampling
    rules: list[LabelRule | RetrievalRule] = [
        LabelRule(r.key, r.value, r.rate) for r in s.label_rules
    ]
    rules += [RetrievalRule(r.metric, r.below, r.rate) for r in s.retrieval_rules]
    limit = TokenBucket(s.max_per_second, s.burst) if s.max_per_second is not None else None
    budget = None
    if s.budget_per_hour is not None or s.budget_per_day is not None:
        budget = CostBudget(s.budget_per_hour, s.budget_per_day, s.estimated_cost)
    return Sampler(s.rate, rules, limit=limit, budget=budget, salt=s.salt)


def build_judge(settings: JudgeSettings) -> Judge:
    """The configured judge: `LexicalJudge` or an `OpenAIJudge` on the configured endpoint."""
    if settings.kind == "lexical":
        lx = settings.lexical
        return LexicalJudge(lx.support_threshold, lx.min_claim_tokens, lx.check_numbers)
    o = settings.openai
    client = ChatClient(
        o.base_url,
        o.model,
        api_key=o.resolve_api_key(),
        timeout=o.timeout,
        max_retries=o.max_retries,
        backoff_initial=o.backoff_initial,
        backoff_max=o.backoff_max,
        retry_after_max=o.retry_after_max,
        json_mode=o.json_mode,
        temperature=o.temperature,
        max_tokens=o.max_tokens,
    )
    return OpenAIJudge(
        client,
        breaker=CircuitBreaker(o.circuit_failures, o.circuit_cooldown),
        cache=JudgmentCache(o.cache_size),
        account=TokenAccount(o.price_prompt_per_1m, o.price_completion_per_1m),
    )


class JudgingService:
    """Samples answers, judges them in the background, and keeps the results."""

    def __init__(
        self,
        sampler: Sampler,
        judge: Judge,
        results: JudgeResults,
        *,
        queue_size: int = 1000,
        concurrency: int = 4,
        drain_timeout: float = 10.0,
        lookup: RetrievalLookup | None = None,
        on_labels: LabelSink | None = None,
        label_threshold: float = 0.5,
        publisher: JudgmentPublisher | None = None,
        sampler_clock: Callable[[], float] = time.time,
        window_clock: Callable[[], float] = time.time,
    ) -> None:
        self.sampler = sampler
        self.judge = judge
        self.results = results
        self.workers = JudgeWorkers(
            judge,
            queue_size=queue_size,
            concurrency=concurrency,
            on_result=self._on_result,
            on_failure=self._on_failure,
        )
        self.drain_timeout = drain_timeout
        self.lookup = lookup
        self.on_labels = on_labels
        self.label_threshold = label_threshold
        self.publisher = publisher
        self._sampler_clock = sampler_clock
        self._window_clock = window_clock
        self._needs_metrics = any(isinstance(r, RetrievalRule) for r in sampler.rules)

    @classmethod
    def from_settings(
        cls,
        settings: JudgeSettings,
        *,
        labelset: Callable[[Mapping[str, str]], tuple[str, ...]] = lambda labels: (),
        windows: Sequence[float] = (60.0, 300.0, 3600.0, 86400.0),
        buckets: int = 60,
        bins: int = 20,
        lookup: RetrievalLookup | None = None,
        on_labels: LabelSink | None = None,
        bootstrap_servers: str | None = None,
        producer_options: Mapping[str, Any] | None = None,
        sampler_clock: Callable[[], float] = time.time,
        window_clock: Callable[[], float] = time.time,
    ) -> JudgingService:
        """Everything from the settings; ``bootstrap_servers`` is needed only to publish."""
        publisher = None
        if settings.publish_topic is not None:
            if bootstrap_servers is None:
                raise ValueError("judge.publish_topic needs the Kafka bootstrap servers")
            publisher = JudgmentPublisher(
                settings.publish_topic,
                bootstrap_servers=bootstrap_servers,
                **dict(producer_options or {}),
            )
        return cls(
            build_sampler(settings),
            build_judge(settings),
            JudgeResults(labelset=labelset, windows=windows, buckets=buckets, bins=bins),
            queue_size=settings.queue_size,
            concurrency=settings.concurrency,
            drain_timeout=settings.drain_timeout,
            lookup=lookup,
            on_labels=on_labels if settings.feed_labels else None,
            label_threshold=settings.label_threshold,
            publisher=publisher,
            sampler_clock=sampler_clock,
            window_clock=window_clock,
        )

    # -- the runner's callback ----------------------------------------------------------------

    def on_answers(self, answers: Sequence[AnswerLike]) -> None:
        """Decide per answer and enqueue the sampled ones; never blocks."""
        now = self._sampler_clock()
        for event in answers:
            metrics = None
            if self._needs_metrics and self.lookup is not None:
                metrics = self.lookup(event.query_id)
            decision = self.sampler.decide(event.query_id, event.labels, now, metrics)
            if not decision.sampled:
                continue
            workers = self.workers
            if workers.full:  # do not even build the item
                workers.drop()
            elif workers.submit(
                JudgeInput.from_event(
                    event, estimated_cost=decision.charged, admitted_at=decision.at
                )
            ):
                continue
            self.sampler.reconcile(decision.at, decision.charged, 0.0, now, ok=False)

    # -- results ------------------------------------------------------------------------------

    def _on_result(self, item: JudgeInput, judgment: Judgment) -> None:
        self.results.record(item, judgment, self._window_clock())
        self.sampler.reconcile(
            item.admitted_at, item.estimated_cost, judgment.usage.cost, self._sampler_clock()
        )
        if self.on_labels is not None:
            labels = judge_labels(item, judgment, self.label_threshold)
            if labels:
                self.on_labels(labels)
        if self.publisher is not None:
            self.publisher.offer(item, judgment)

    def _on_failure(self, item: JudgeInput, error: JudgeError) -> None:
        self.results.record_failure(item, error)
        self.sampler.reconcile(
            item.admitted_at, item.estimated_cost, error.usage.cost, self._sampler_clock(), ok=False
        )

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        if self.publisher is not None:
            await self.publisher.start()
        await self.workers.start()

    async def stop(self) -> None:
        """Drain the queue within ``drain_timeout``, then stop the workers and the publisher."""
        await self.workers.stop(self.drain_timeout)
        if self.publisher is not None:
            await self.publisher.stop()
