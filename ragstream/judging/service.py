"""Judging wired together: sampler -> workers -> judge -> results, labels and audit topic.

`JudgingService.on_answers` is the runner's per-batch callback: synchronous, it decides
per answer and enqueues or drops, so consumption never waits for a judge. Built from the
`judge` settings section by `ragstream.wiring.judging_service`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ragstream.judging.model import AnswerLike, Judge, JudgeError, JudgeInput, Judgment
from ragstream.judging.publisher import JudgmentPublisher
from ragstream.judging.results import JudgeLabel, JudgeResults, judge_labels
from ragstream.judging.sampler import RetrievalRule, Sampler
from ragstream.judging.workers import JudgeWorkers

if TYPE_CHECKING:
    from ragstream.pipeline.engine import Engine

__all__ = [
    "JudgingService",
    "RetrievalLookup",
    "engine_label_sink",
    "engine_lookup",
]

RetrievalLookup = Callable[[str], Mapping[str, float] | None]
"""query_id -> the query's current retrieval metrics (e.g. ``{"rr": 0.5}``), or None."""
LabelSink = Callable[[Sequence[JudgeLabel]], None]


def engine_lookup(engine: Engine, metrics: Sequence[str]) -> RetrievalLookup:
    """Reads an open query's current metric row from the engine (None when not open or
    not scored yet; NaN values — an unlabeled query — do not match any rule)."""
    layout = engine.layout
    index = {name: layout.index(name) for name in metrics if name in layout.window_columns}

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
