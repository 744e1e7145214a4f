"""Judging wired together: sampler -> workers -> judge -> results, labels and audit topic.

`JudgingService.on_answers` is the runner's per-batch callback: synchronous, it decides
per answer and enqueues or drops, so consumption never waits for a judge. Built from the
`judge` settings section by `ragstream.wiring.judging_service`.

What is judged is partition state (docs/judging.md, "With the partition"): the answers
sampled and not judged yet, and the windows of the judgments, are kept per Kafka partition,
saved in the engine's snapshots with the offsets they cover and moved with a partition on a
rebalance (the service is a `ragstream.pipeline.partitions.SideState`, attached with
`Engine.attach`). A judgment that comes back for a partition that has left this replica is
discarded: its next owner judges that answer again from the state it adopted.

Gold verdicts (`on_verdicts`, feedback events with `answer`) join their answers in a
`GoldJoin`, part of the same partition state: an answer with a gold verdict is judged
whatever the sampler drew (still subject to the queue bound), and the judge's verdict is
compared with the gold one in the results' gold window. An answer judged only for its gold
verdict is compared, not added to the windows' rates.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragstream.judging.gold import GoldJoin, OpenAnswer, verdict_of
from ragstream.judging.model import AnswerLike, Judge, JudgeError, JudgeInput, Judgment
from ragstream.judging.publisher import JudgmentPublisher
from ragstream.judging.results import JudgeLabel, JudgeResults, judge_labels
from ragstream.judging.sampler import Outcome, RetrievalRule, Sampler
from ragstream.judging.workers import JudgeWorkers

if TYPE_CHECKING:
    from ragstream.events import DecodedFeedback
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
        gold: GoldJoin | None = None,
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
        self._pending: dict[int, dict[int, JudgeInput]] = {}
        """Per held partition: the sampled answers submitted and not judged yet, by the
        item's identity (the same object comes back from the workers)."""
        self.discarded = 0
        """Judgments dropped because their partition had left this replica."""
        self.gold = GoldJoin() if gold is None else gold
        """Gold verdicts and the open answers they are for (see `ragstream.judging.gold`)."""
        self.agreement: Counter[tuple[str, tuple[str, ...], bool, str]] = Counter()
        """Comparisons by (judge, label set, gold verdict, judge's verdict); this process's
        count (a corrected gold verdict is compared, and counted, again)."""

    # -- the runner's callback ----------------------------------------------------------------

    def on_answers(self, answers: Sequence[tuple[int, AnswerLike]]) -> None:
        """Decide per answer (with its partition) and enqueue the sampled ones, and those
        with a gold verdict; never blocks."""
        now = self._sampler_clock()
        gold = self.gold
        for partition, event in answers:
            verdict = gold.open(partition, event.query_id, event.ts, event.labels)
            metrics = None
            if self._needs_metrics and self.lookup is not None:
                metrics = self.lookup(event.query_id)
            decision = self.sampler.decide(event.query_id, event.labels, now, metrics)
            if not decision.sampled and verdict is None:
                gold.keep(partition, event.query_id, event)  # judged if a gold verdict comes
                continue
            workers = self.workers
            if workers.full:  # do not even build the item
                workers.drop()
                if verdict is not None:
                    gold.dropped(partition, event.query_id)
            elif self._submit(
                JudgeInput.from_event(
                    event,
                    partition=partition,
                    estimated_cost=decision.charged,
                    admitted_at=decision.at,
                    sampled=decision.sampled,
                )
            ):
                continue
            if decision.sampled:
                self.sampler.reconcile(decision.at, decision.charged, 0.0, now, ok=False)

    def on_verdicts(self, verdicts: Sequence[tuple[int, DecodedFeedback]]) -> None:
        """Take gold verdicts (feedback events with `answer`, with their partitions) in
        arrival order: compare at once with a judged answer, have a kept one judged, or
        wait for the answer; then close the answers past their label TTL and the verdicts
        that waited too long. Called after every batch (with its answers first), even one
        without verdicts, as the join ends a batch; never blocks."""
        now = self._window_clock()
        gold = self.gold
        for partition, event in verdicts:
            assert event.answer is not None
            entry = gold.verdict(
                partition, event.query_id, event.answer["hallucination"], event.ts, now
            )
            if entry is None:
                continue
            if entry.verdict is not None:
                self._compare(partition, entry, now)
            elif entry.item is not None:  # kept unsampled: judged now, by force
                kept = entry.judge_input(partition)
                assert kept is not None
                item = dataclasses.replace(kept, admitted_at=self._sampler_clock())
                if self.workers.full:
                    self.workers.drop()
                    gold.dropped(partition, event.query_id)
                else:
                    self._submit(item)
            elif not entry.queued:  # its judgment failed: nothing to compare with
                gold.outcomes["failed"] += 1
            # queued: compared when its judgment comes back
        gold.expire(now)  # after: a verdict for an answer past its TTL is found late

    def _compare(self, partition: int, entry: OpenAnswer, now: float) -> None:
        """Record the comparison of an open answer's verdict with its latest gold verdict,
        replacing the one recorded before (the latest gold verdict wins)."""
        assert entry.verdict is not None
        assert entry.gold is not None
        flagged = entry.verdict == "hallucination"
        results = self.results
        if entry.compared is not None:
            results.compare(
                partition, entry.labels, entry.ts, entry.compared, flagged, now, retract=True
            )
        results.compare(partition, entry.labels, entry.ts, entry.gold, flagged, now)
        entry.compared = entry.gold
        self.gold.outcomes["compared"] += 1
        key = (entry.judge, results.labelset(entry.labels), entry.gold, entry.verdict)
        self.agreement[key] += 1

    def _submit(self, item: JudgeInput) -> bool:
        if not self.workers.submit(item):
            return False
        self._pending.setdefault(item.partition, {})[id(item)] = item
        self.gold.queued(item.partition, item.query_id)
        return True

    def _settle(self, item: JudgeInput) -> bool:
        """Take a finished item off its partition's pending answers; False (and counted)
        when that partition left this replica, or came back since (it was re-queued)."""
        pending = self._pending.get(item.partition)
        if pending is None or pending.pop(id(item), None) is None:
            self.discarded += 1
            return False
        return True

    @property
    def unjudged(self) -> int:
        """Sampled answers of held partitions that are not judged yet."""
        return sum(len(items) for items in self._pending.values())

    # -- results ------------------------------------------------------------------------------

    def _on_result(self, item: JudgeInput, judgment: Judgment) -> None:
        self.sampler.reconcile(  # the call was made: its cost counts wherever it lands
            item.admitted_at, item.estimated_cost, judgment.usage.cost, self._sampler_clock()
        )
        if not self._settle(item):
            return
        now = self._window_clock()
        if item.sampled:
            self.results.record(item, judgment, now)
        judge = judgment.judge or self.judge.name
        entry = self.gold.judged(item.partition, item.query_id, verdict_of(judgment), judge)
        if entry is not None and entry.gold is not None:
            self._compare(item.partition, entry, now)
        if self.on_labels is not None:
            labels = judge_labels(item, judgment, self.label_threshold)
            if labels:
                self.on_labels(labels)
        if self.publisher is not None:
            self.publisher.offer(item, judgment)

    def _on_failure(self, item: JudgeInput, error: JudgeError) -> None:
        self.sampler.reconcile(
            item.admitted_at, item.estimated_cost, error.usage.cost, self._sampler_clock(), ok=False
        )
        if self._settle(item):
            self.results.record_failure(item, error)
            self.gold.judged(item.partition, item.query_id, None, self.judge.name)

    # -- partition state (`ragstream.pipeline.partitions.SideState`) --------------------------

    def export_partition(self, partition: int) -> dict[str, Any]:
        """The partition's unjudged answers, judgment windows, gold comparisons, open
        answers and waiting gold verdicts, JSON-friendly."""
        pending = self._pending.get(partition, {})
        return {
            "pending": [item.to_state() for item in pending.values()],
            "windows": self.results.export_partition(partition),
            "agreement": self.results.export_gold(partition),
            "gold": self.gold.export_partition(partition),
        }

    def adopt_partition(self, partition: int, data: Any) -> None:
        """Take over a partition's state (None: start it empty): its windows and gold
        join, and its unjudged answers queued again."""
        self._pending.setdefault(partition, {})
        self.gold.adopt_partition(partition, None if not data else data.get("gold"))
        if not data:
            return
        self.results.adopt_partition(partition, data.get("windows"))
        self.results.adopt_gold(partition, data.get("agreement"))
        for state in data.get("pending") or ():
            self._requeue(JudgeInput.from_state(state))

    def drop_partitions(self, partitions: set[int]) -> None:
        """Forget revoked partitions; their queued answers are judged for nothing
        (`discarded`), the new owner judges them from the state it adopts."""
        for partition in partitions:
            self._pending.pop(partition, None)
            self.results.drop_partition(partition)
            self.gold.drop_partition(partition)

    def snapshot(self) -> dict[str, Any]:
        """Every held partition's unjudged answers and gold join, and the windows."""
        return {
            "pending": {
                str(p): [item.to_state() for item in items.values()]
                for p, items in sorted(self._pending.items())
            },
            "results": self.results.snapshot(),
            "agreement": self.results.gold_snapshot(),
            "gold": {str(p): self.gold.export_partition(p) for p in self.gold.partitions()},
            "counts": self._counts(),
        }

    def _counts(self) -> dict[str, Any]:
        """This process's counts, JSON-friendly: a whole-engine snapshot carries them, so
        that a process that continues from it (a resumed replay, a restarted agent) counts
        on from there."""
        return {
            "samples": {str(k): v for k, v in self.sampler.counts.items()},
            "by_rule": dict(self.sampler.by_rule),
            "requests": dict(self.workers.outcomes),
            "dropped": dict(self.workers.dropped),
            "failures": dict(self.results.failures),
            "gold": dict(self.gold.outcomes),
            "agreement": [
                [judge, list(labelset), gold, verdict, n]
                for (judge, labelset, gold, verdict), n in self.agreement.items()
            ],
        }

    def _restore_counts(self, counts: Mapping[str, Any]) -> None:
        for key, n in counts["samples"].items():
            self.sampler.counts[Outcome(key)] = int(n)
        self.sampler.by_rule = Counter({str(k): int(n) for k, n in counts["by_rule"].items()})
        self.workers.outcomes = Counter(counts["requests"])
        self.workers.dropped = Counter(counts["dropped"])
        self.results.failures = Counter(counts["failures"])
        for key, n in counts["gold"].items():
            self.gold.outcomes[str(key)] = int(n)
        self.agreement = Counter(
            {
                (str(judge), tuple(labelset), bool(gold), verdict): int(n)
                for judge, labelset, gold, verdict, n in counts["agreement"]
            }
        )

    def restore(self, data: Any) -> None:
        """Continue from `snapshot` output (None: from nothing); unjudged answers queued
        again."""
        self._pending = {}
        for partition in self.gold.partitions():
            self.gold.drop_partition(partition)
        if not data:
            self.results.restore(None)
            return
        self.results.restore(data.get("results"), data.get("agreement"))
        if data.get("counts"):
            self._restore_counts(data["counts"])
        for key, state in (data.get("gold") or {}).items():
            self.gold.adopt_partition(int(key), state)
        for key, items in (data.get("pending") or {}).items():
            self._pending.setdefault(int(key), {})
            for state in items:
                self._requeue(JudgeInput.from_state(state))

    def _requeue(self, item: JudgeInput) -> None:
        """Queue an unjudged answer again (admitted now, nothing charged yet: the cost is
        counted when it is judged); dropped and counted when the queue is full."""
        now = self._sampler_clock()
        item = dataclasses.replace(item, admitted_at=now, estimated_cost=0.0)
        if self.workers.full:
            self.workers.drop()
        else:
            self._submit(item)

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        if self.publisher is not None:
            await self.publisher.start()
        await self.workers.start()

    async def settle(self) -> None:
        """Return once every queued answer is judged and recorded (`ragstream replay` waits
        so after each batch, so that its output does not depend on the judge's speed)."""
        await self.workers.join()

    async def stop(self) -> None:
        """Drain the queue within ``drain_timeout``, then stop the workers and the publisher."""
        await self.workers.stop(self.drain_timeout)
        if self.publisher is not None:
            await self.publisher.stop()
