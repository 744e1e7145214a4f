"""Judging wired together: sampler -> workers -> judge -> results, labels and audit topic.

`JudgingService.on_answers` is the runner's per-batch callback: synchronous, it decides
per answer and enqueues or drops, so consumption never waits for a judge. Built from the
`judge` settings section by `ragstream.wiring.judging_service`.

What is judged is partition state (docs/judging.md, "With the partition"): the answers
sampled and not judged yet, and the windows of the judgments, are kept per Kafka partition,
saved in the engine's snapshots with the offsets they cover and moved with a partition on a
rebalance. Each partition's share is a `JudgePartition` held in its `PartitionState`, in
the partition map the service is bound to: the engine's once attached (`Engine.attach`; the
service is a `ragstream.pipeline.partitions.SideState`), its own until then. A judgment that
comes back for a partition that has left this replica is discarded: its next owner judges
that answer again from the state it adopted.

Gold verdicts (`on_verdicts`, feedback events with `answer`) join their answers in a
`GoldJoin`, each partition's open answers and verdicts part of its share: an answer with a
gold verdict is judged whatever the sampler drew (still subject to the queue bound), and the
judge's verdict is compared with the gold one in the results' gold window. An answer judged
only for its gold verdict is compared, not added to the windows' rates.

With a `VerdictKeeper` (``verdicts``; the agent's when a results topic is set), the verdict
of a judgment whose query is open in the join is kept in its partition's share until the
query is final, when the results sink takes it (`take_verdict`) into the query's record.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragstream.judging.gold import GoldJoin, GoldShare, OpenAnswer, verdict_of
from ragstream.judging.model import AnswerLike, Judge, JudgeError, JudgeInput, Judgment
from ragstream.judging.partition import JudgePartition
from ragstream.judging.publisher import JudgmentPublisher
from ragstream.judging.results import JudgeLabel, JudgeResults, judge_labels
from ragstream.judging.sampler import Outcome, RetrievalRule, Sampler
from ragstream.judging.verdicts import VerdictKeeper
from ragstream.judging.workers import JudgeWorkers
from ragstream.pipeline.partitions import PartitionState

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
        queue_size: int,
        concurrency: int,
        drain_timeout: float,
        label_threshold: float,
        gold: GoldJoin,
        lookup: RetrievalLookup | None = None,
        on_labels: LabelSink | None = None,
        publisher: JudgmentPublisher | None = None,
        sampler_clock: Callable[[], float] = time.time,
        window_clock: Callable[[], float] = time.time,
        verdicts: VerdictKeeper | None = None,
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
        self.name = "judge"
        """Its shares' name in the partition states (`bind`)."""
        self.partitions: dict[int, PartitionState] = {}
        """The partition map its shares (`JudgePartition`) are held in: its own until it
        is bound to an engine's (`bind`)."""
        self.discarded = 0
        """Judgments dropped because their partition had left this replica."""
        self.gold = gold
        """The gold join's settings and counts (see `ragstream.judging.gold`)."""
        self.agreement: Counter[tuple[str, tuple[str, ...], bool, str]] = Counter()
        """Comparisons by (judge, label set, gold verdict, judge's verdict); this process's
        count (a corrected gold verdict is compared, and counted, again)."""
        self.verdicts = verdicts
        """Keeps the verdicts of open queries for their result records (None: none kept)."""

    # -- the runner's callback ----------------------------------------------------------------

    def on_answers(self, answers: Sequence[tuple[int, AnswerLike]]) -> None:
        """Decide per answer (with its partition) and enqueue the sampled ones, and those
        with a gold verdict; never blocks."""
        now = self._sampler_clock()
        gold = self.gold
        for partition, event in answers:
            share = self._gold(partition)
            verdict = gold.open(share, event.query_id, event.ts, event.labels)
            metrics = None
            if self._needs_metrics and self.lookup is not None:
                metrics = self.lookup(event.query_id)
            decision = self.sampler.decide(event.query_id, event.labels, now, metrics)
            if not decision.sampled and verdict is None:
                gold.keep(share, event.query_id, event)  # judged if a gold verdict comes
                continue
            workers = self.workers
            if workers.full:  # do not even build the item
                workers.drop()
                if verdict is not None:
                    gold.dropped(share, event.query_id)
            elif self._submit(
                JudgeInput.from_event(
                    event,
                    partition=partition,
                    estimated_cost=decision.charged,
                    admitted_at=decision.at,
                    sampled=decision.sampled,
                ),
                self._share(partition),
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
            share = self._gold(partition)
            entry = gold.verdict(
                share, event.query_id, event.answer["hallucination"], event.ts, now
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
                    gold.dropped(share, event.query_id)
                else:
                    self._submit(item, self._share(partition))
            elif not entry.queued:  # its judgment failed: nothing to compare with
                gold.outcomes["failed"] += 1
            # queued: compared when its judgment comes back
        # after: a verdict for an answer past its TTL is found late
        gold.expire((s.gold for _, s in self._shares() if s.gold is not None), now)

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

    def _share(self, partition: int) -> JudgePartition:
        """The partition's share, made (with its state) when it has none yet."""
        share = self._held(partition)
        if share is None:
            state = self.partitions.setdefault(partition, PartitionState(partition))
            share = state.sides[self.name] = JudgePartition(partition, self.results)
        return share

    def _held(self, partition: int) -> JudgePartition | None:
        """The partition's share, if it holds one."""
        state = self.partitions.get(partition)
        share = None if state is None else state.sides.get(self.name)
        return share if isinstance(share, JudgePartition) else None

    def _shares(self) -> list[tuple[int, JudgePartition]]:
        """The shares held, in partition order."""
        held = ((p, state.sides.get(self.name)) for p, state in self.partitions.items())
        return sorted(
            ((p, s) for p, s in held if isinstance(s, JudgePartition)), key=lambda x: x[0]
        )

    def _gold(self, partition: int) -> GoldShare:
        """The partition's gold join, made when it has none yet."""
        share = self._share(partition)
        if share.gold is None:
            share.gold = GoldShare()
        return share.gold

    def _submit(self, item: JudgeInput, share: JudgePartition) -> bool:
        if not self.workers.submit(item):
            return False
        if share.pending is None:
            share.pending = {}
        share.pending[id(item)] = item
        self.gold.queued(share.gold, item.query_id)
        return True

    def _settle(self, item: JudgeInput) -> JudgePartition | None:
        """Take a finished item off its partition's pending answers; None (and counted)
        when that partition left this replica, or came back since (it was re-queued)."""
        share = self._held(item.partition)
        pending = None if share is None else share.pending
        if pending is None or pending.pop(id(item), None) is None:
            self.discarded += 1
            return None
        return share

    @property
    def unjudged(self) -> int:
        """Sampled answers of held partitions that are not judged yet."""
        return sum(len(s.pending) for _, s in self._shares() if s.pending is not None)

    @property
    def verdicts_kept(self) -> int:
        """Verdicts kept for open queries, over held partitions."""
        return sum(len(s.verdicts) for _, s in self._shares())

    def take_verdict(self, partition: int, query_id: str) -> dict[str, Any] | None:
        """The kept verdict of a query of ``partition`` that became final (`JudgeVerdict`
        fields), no longer kept; None when it was not judged while open, or nothing is
        kept."""
        keeper = self.verdicts
        share = None if keeper is None else self._held(partition)
        return None if keeper is None or share is None else keeper.take(share.verdicts, query_id)

    @property
    def gold_open(self) -> int:
        """Open answers of the gold join, over held partitions."""
        return sum(len(s.gold.answers) for _, s in self._shares() if s.gold is not None)

    @property
    def gold_waiting(self) -> int:
        """Gold verdicts waiting for their answer, over held partitions."""
        return sum(len(s.gold.waiting) for _, s in self._shares() if s.gold is not None)

    # -- results ------------------------------------------------------------------------------

    def _on_result(self, item: JudgeInput, judgment: Judgment) -> None:
        self.sampler.reconcile(  # the call was made: its cost counts wherever it lands
            item.admitted_at, item.estimated_cost, judgment.usage.cost, self._sampler_clock()
        )
        share = self._settle(item)
        if share is None:
            return
        now = self._window_clock()
        if item.sampled:
            self.results.record(item, judgment, now)
        judge = judgment.judge or self.judge.name
        entry = self.gold.judged(share.gold, item.query_id, verdict_of(judgment), judge)
        if entry is not None and entry.gold is not None:
            self._compare(item.partition, entry, now)
        if self.verdicts is not None:
            self.verdicts.keep(share.verdicts, item.query_id, judgment)
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
        share = self._settle(item)
        if share is not None:
            self.results.record_failure(item, error)
            self.gold.judged(share.gold, item.query_id, None, self.judge.name)

    # -- partition state (`ragstream.pipeline.partitions.SideState`) --------------------------

    def bind(self, name: str, partitions: dict[int, PartitionState]) -> None:
        """Hold its shares in ``partitions`` (an engine's map), under ``name``; the service
        must hold none yet (attach it before it sees answers)."""
        if self._shares():
            raise ValueError("the judging service holds partitions already: attach it first")
        self.name, self.partitions = name, partitions

    def new_partition(self, partition: int) -> JudgePartition:
        """An empty share of the partition, not held."""
        return JudgePartition(partition, self.results)

    def adopt_partition(self, partition: int, data: Any) -> JudgePartition:
        """Take over a partition's share (None: start it empty): its windows and gold
        join, and its unjudged answers queued again."""
        share, unjudged = JudgePartition.adopt(partition, data, self.results)
        for item in unjudged:
            self._requeue(item, share)
        return share

    def snapshot(self) -> dict[str, Any]:
        """This process's counts, JSON-friendly: a whole-engine snapshot carries them beside
        the partitions' shares, so that a process that continues from it (a resumed replay)
        counts on from there."""
        return {
            "samples": {str(k): v for k, v in self.sampler.counts.items()},
            "by_rule": dict(self.sampler.by_rule),
            "requests": dict(self.workers.outcomes),
            "dropped": dict(self.workers.dropped),
            "failures": dict(self.results.failures),
            "gold": dict(self.gold.outcomes),
            "verdicts": {} if self.verdicts is None else dict(self.verdicts.outcomes),
            "agreement": [
                [judge, list(labelset), gold, verdict, n]
                for (judge, labelset, gold, verdict), n in self.agreement.items()
            ],
        }

    def restore(self, counts: Any) -> None:
        """Count on from `snapshot` output (None: from 0); the partitions' shares are
        adopted after (`adopt_partition`)."""
        if not counts:
            return
        for key, n in counts["samples"].items():
            self.sampler.counts[Outcome(key)] = int(n)
        self.sampler.by_rule = Counter({str(k): int(n) for k, n in counts["by_rule"].items()})
        self.workers.outcomes = Counter(counts["requests"])
        self.workers.dropped = Counter(counts["dropped"])
        self.results.failures = Counter(counts["failures"])
        for key, n in counts["gold"].items():
            self.gold.outcomes[str(key)] = int(n)
        if self.verdicts is not None:  # absent from older counts: from zero
            self.verdicts.restore_counts(counts.get("verdicts") or {})
        self.agreement = Counter(
            {
                (str(judge), tuple(labelset), bool(gold), verdict): int(n)
                for judge, labelset, gold, verdict, n in counts["agreement"]
            }
        )

    def _requeue(self, item: JudgeInput, share: JudgePartition) -> None:
        """Queue an unjudged answer again (admitted now, nothing charged yet: the cost is
        counted when it is judged); dropped and counted when the queue is full."""
        now = self._sampler_clock()
        item = dataclasses.replace(item, admitted_at=now, estimated_cost=0.0)
        if self.workers.full:
            self.workers.drop()
        else:
            self._submit(item, share)

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
        """Drain the queue within ``drain_timeout``, then stop the workers and the publisher
        (which sends what it holds within its own drain timeout)."""
        await self.workers.stop(self.drain_timeout)
        if self.publisher is not None:
            await self.publisher.stop()
