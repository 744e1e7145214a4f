"""Windowed judge scores per label set, the hallucination ratio with its Wilson interval
and corrected for the judge's measured error, and judge labels for the retrieval join.

Each successful judgment of a sampled answer adds one row ``(faithfulness,
answer_relevance, context_relevance, hallucination, refusal)`` at the answer's event time
to a `WindowStore`; a score that is undefined for that answer (None) is NaN there, i.e.
missing in that column only. Failed judgments add no row: they are counted by reason in
:attr:`JudgeResults.failures`.

Each comparison of a judge's verdict with a gold one adds a row to a second store with one
window, the gold window (the longest by default): ``flagged`` in the column of the gold
verdict (``flagged_if_hallucinated`` or ``flagged_if_faithful``), NaN in the other. Its
sums and counts are the confusion counts behind the judge's sensitivity and specificity,
and so behind each window's corrected ratio (`ragstream.judging.agreement`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ragstream.judging.agreement import Confusion, CorrectedRate, corrected_rate, wilson_interval
from ragstream.judging.model import JudgeError, JudgeInput, Judgment
from ragstream.windows import WindowSpec, WindowStore

__all__ = [
    "GENERATION_COLUMNS",
    "GenerationRead",
    "JudgeLabel",
    "JudgeResults",
    "judge_labels",
    "wilson_interval",
]

GENERATION_COLUMNS = (
    "faithfulness",
    "answer_relevance",
    "context_relevance",
    "hallucination",
    "refusal",
)
_AGREEMENT_COLUMNS = ("flagged_if_hallucinated", "flagged_if_faithful")
"""The gold window's columns: the judge's flag (1 or 0) under the gold verdict's column."""


@dataclass(frozen=True, slots=True)
class GenerationRead:
    """One window of one label set: mean scores, counts, and the hallucination ratio."""

    window: str
    judged: int
    """Judged answers in the window (the sample size)."""
    means: dict[str, float]
    """Mean per column (NaN where no answer had that score)."""
    counts: dict[str, int]
    """Answers with a value per column."""
    hallucinations: int
    hallucination_ratio: float
    """hallucinations / judged answers (NaN when none)."""
    hallucination_interval: tuple[float, float]
    """Wilson 95% interval of the ratio."""
    refusals: int = 0
    refusal_ratio: float = math.nan
    """refusals / judged answers (NaN when none): answers that decline to answer."""
    corrected: CorrectedRate | None = None
    """The ratio corrected for the judge's sensitivity and specificity, measured on the
    gold verdicts of the gold window (`corrected_rate`; undefined without them)."""


@dataclass(frozen=True, slots=True)
class JudgeLabel:
    """A retrieval label produced by a judge: (query, document, grade) at the answer's ts."""

    query_id: str
    doc_id: str
    rel: float
    ts: float
    labels: Mapping[str, str]


def judge_labels(item: JudgeInput, judgment: Judgment, threshold: float) -> list[JudgeLabel]:
    """One label per context with a doc id: ``rel = 1`` if its relevance >= threshold, else 0.

    A document given as several contexts takes its best context's score.
    """
    best: dict[str, float] = {}
    for doc_id, score in zip(item.doc_ids, judgment.context_scores, strict=False):
        if doc_id is not None:
            best[doc_id] = max(score, best.get(doc_id, -math.inf))
    return [
        JudgeLabel(item.query_id, doc_id, 1.0 if score >= threshold else 0.0, item.ts, item.labels)
        for doc_id, score in best.items()
    ]


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


class JudgeResults:
    """Windowed judge scores, keyed by partition and label set (see the module docstring)."""

    def __init__(
        self,
        *,
        labelset: Callable[[Mapping[str, str]], tuple[str, ...]] = lambda labels: (),
        windows: Sequence[float],
        buckets: int,
        bins: int,
        horizon: float,
        gold_window: float | None,
    ) -> None:
        self.spec = WindowSpec(
            columns=GENERATION_COLUMNS,
            windows=tuple(windows),
            buckets=buckets,
            bins=bins,
            horizon=horizon,
        )
        self.store = WindowStore(self.spec)
        self.gold_spec = WindowSpec(
            columns=_AGREEMENT_COLUMNS,
            windows=(max(windows) if gold_window is None else gold_window,),
            buckets=buckets,
            bins=1,
            horizon=horizon,
            hist_columns=(),
        )
        self.gold_store = WindowStore(self.gold_spec)
        """The comparisons with gold verdicts, over the gold window (see the module doc)."""
        self.labelset = labelset
        self.recorded = 0
        self.late = 0
        """Judgments whose answer time was older than the longest window."""
        self.failures: Counter[str] = Counter()
        """Failed judgments by reason; never averaged in."""

    def record(self, item: JudgeInput, judgment: Judgment, now: float) -> bool:
        """Add one judgment at the answer's time (clamped to ``now``); False if too old."""
        row = np.array(
            [
                [
                    _nan(judgment.faithfulness),
                    _nan(judgment.answer_relevance),
                    _nan(judgment.context_relevance),
                    1.0 if judgment.hallucination else 0.0,
                    1.0 if judgment.refusal else 0.0,
                ]
            ]
        )
        ts = min(item.ts, now)
        landed = bool(self.store.add(item.partition, self.labelset(item.labels), now, [ts], row)[0])
        if landed:
            self.recorded += 1
        else:
            self.late += 1
        return landed

    def compare(
        self,
        partition: int,
        labels: Mapping[str, str],
        ts: float,
        gold: bool,
        flagged: bool,
        now: float,
        *,
        retract: bool = False,
    ) -> bool:
        """Add (or, ``retract``, take back) one comparison of the judge's flag with a gold
        verdict, at the answer's time; False when it is outside the gold window."""
        row = np.full((1, len(_AGREEMENT_COLUMNS)), math.nan)
        row[0, 0 if gold else 1] = 1.0 if flagged else 0.0
        ts = min(ts, now)
        labelset = self.labelset(labels)
        if retract:
            return bool(self.gold_store.retract(partition, labelset, now, [ts], row)[0])
        return bool(self.gold_store.add(partition, labelset, now, [ts], row)[0])

    def confusion(self, now: float, labels: Sequence[str]) -> Confusion:
        """The judge's confusion counts against gold verdicts over the gold window."""
        read = self.gold_store.read(now, labels, exact=True)
        flagged = [round(float(x)) for x in read.total[0, 0]]
        positives, negatives = (int(x) for x in read.count[0, 0])
        tp, fp = flagged
        return Confusion(tp=tp, fp=fp, fn=positives - tp, tn=negatives - fp)

    def record_failure(self, item: JudgeInput, error: JudgeError) -> None:
        """Count a failed judgment by reason."""
        self.failures[error.reason] += 1

    def read(self, now: float, labels: Sequence[str]) -> dict[str, GenerationRead]:
        """Every window of one label set at ``now``."""
        out: dict[str, GenerationRead] = {}
        confusion = self.confusion(now, labels)
        read = self.store.read(now, labels, exact=True)
        all_means = read.mean()
        h, r = GENERATION_COLUMNS.index("hallucination"), GENERATION_COLUMNS.index("refusal")
        for wi, name in enumerate(self.spec.names):
            means, counts, totals = all_means[0, wi], read.count[0, wi], read.total[0, wi]
            n, k, refusals = int(counts[h]), round(float(totals[h])), round(float(totals[r]))
            out[name] = GenerationRead(
                window=name,
                judged=int(read.queries[0, wi]),
                means={c: float(means[i]) for i, c in enumerate(GENERATION_COLUMNS)},
                counts={c: int(counts[i]) for i, c in enumerate(GENERATION_COLUMNS)},
                hallucinations=k,
                hallucination_ratio=k / n if n else math.nan,
                hallucination_interval=wilson_interval(k, n),
                refusals=refusals,
                refusal_ratio=refusals / int(counts[r]) if counts[r] else math.nan,
                corrected=corrected_rate(k, n, confusion.se_counts, confusion.sp_counts),
            )
        return out

    def read_all(self, now: float) -> dict[tuple[str, ...], dict[str, GenerationRead]]:
        """Every label set's windows at ``now``."""
        return {key: self.read(now, key) for key in self.store.labelsets()}

    def read_gold(self, now: float) -> dict[tuple[str, ...], Confusion]:
        """Every label set's confusion counts over the gold window at ``now``."""
        return {key: self.confusion(now, key) for key in self.gold_store.labelsets()}
