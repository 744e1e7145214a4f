"""Synthetic RAG traffic: retrieval, answer and feedback events with a scheduled drift.

Shared by the demo, the tests and the benchmarks. Deterministic for a given seed. Each query
draws a pool of relevant documents (grades 1-3) and non-relevant ones; the service ranks
them by a noisy score whose signal falls after `drift_at` for the drifting label set, and
its index gets staler (older `t_doc`) at the same time. A share of queries are probes that
carry their full `qrels`; for the others, users click some of the top results and the
clicks come back later as `feedback` events (a few even before the retrieval event, as
Kafka partitions and producers reorder). Answers quote their contexts, and after the drift
they more often add a sentence that no context supports. A share of the answers
(`gold_share`) get a gold verdict, a `feedback` event with `answer: {"hallucination": ...}`
that says whether that sentence was added, after a delay (a few before the answer).
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LABEL_SETS", "WORDS", "SyntheticConfig", "SyntheticTraffic", "TimedEvent"]

WORDS = (
    "index",
    "shard",
    "replica",
    "cache",
    "token",
    "vector",
    "embedding",
    "latency",
    "quota",
    "invoice",
    "refund",
    "account",
    "password",
    "policy",
    "region",
    "cluster",
    "backup",
    "restore",
    "upgrade",
    "license",
    "billing",
    "webhook",
    "timeout",
    "certificate",
    "rotation",
    "schema",
    "migration",
    "retention",
)
"""The vocabulary of the synthetic queries, contexts and answers."""
_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class TimedEvent:
    """One event and the (event-clock) time at which it reaches the topic."""

    arrival: float
    """When the event is delivered; feedback arrives after its delay."""
    event: dict[str, Any]
    """The JSON-ready event (SPEC §1)."""

    @property
    def key(self) -> bytes:
        """The Kafka message key: the query id."""
        return str(self.event["query_id"]).encode()

    @property
    def value(self) -> bytes:
        """The Kafka message value: compact UTF-8 JSON."""
        return json.dumps(self.event, separators=(",", ":")).encode()


LABEL_SETS: tuple[Mapping[str, str], ...] = (
    {"app": "support", "index": "v7"},
    {"app": "search", "index": "v7"},
    {"app": "docs", "index": "v8"},
)
"""The three services of the synthetic traffic (the first one drifts by default)."""


@dataclass(frozen=True, slots=True)
class SyntheticConfig:
    """Shape of the synthetic traffic."""

    seed: int = 7
    start: float = 1_767_225_600.0
    """Event time of the first query (Unix seconds)."""
    rate: float = 20.0
    """Queries per second of event time."""
    docs_per_query: int = 20
    label_sets: tuple[Mapping[str, str], ...] = LABEL_SETS
    probe_share: float = 0.1
    """Share of queries that carry full qrels (golden or probe queries)."""
    click_share: float = 0.6
    """Chance that a user clicks a top-5 result, for non-probe queries."""
    feedback_delay: tuple[float, float] = (2.0, 120.0)
    """Feedback delay range in seconds (uniform)."""
    early_feedback_share: float = 0.02
    """Share of feedback delivered before its retrieval event."""
    answer_share: float = 1.0
    drift_at: float | None = 600.0
    """Seconds after `start` when quality drops; None for no drift."""
    drift_label_set: int = 0
    """Index into `label_sets` of the set that drifts."""
    quality: float = 2.5
    """Ranking signal before the drift (higher is better)."""
    drifted_quality: float = 0.4
    hallucination_rate: float = 0.05
    drifted_hallucination_rate: float = 0.45
    doc_age_days: float = 30.0
    drifted_doc_age_days: float = 240.0
    gold_share: float = 0.0
    """Share of answers that get a gold verdict (0: none, and the stream is the same as
    without the option)."""
    gold_delay: tuple[float, float] = (5.0, 60.0)
    """Gold verdict delay range in seconds after the answer (uniform)."""
    trace_ids: bool = False
    """Query ids that are OpenTelemetry trace ids (32 hex digits of the seed and the index),
    as those of queries read from spans are; False: `q-<seed>-<index>`."""


class SyntheticTraffic:
    """Generates the events of consecutive queries, in arrival order per call."""

    def __init__(self, config: SyntheticConfig | None = None) -> None:
        self.config = config or SyntheticConfig()
        self._stream = self.stream()

    def drifted(self, ts: float, label_set: int) -> bool:
        """True when the query at `ts` with this label set is after the scheduled drop."""
        c = self.config
        return (
            c.drift_at is not None and label_set == c.drift_label_set and ts >= c.start + c.drift_at
        )

    def query_events(self, index: int) -> list[TimedEvent]:
        """All events of query number `index` (deterministic in seed and index)."""
        c = self.config
        rng = np.random.default_rng([c.seed, index])
        ts = c.start + index / c.rate
        ls = int(rng.integers(len(c.label_sets)))
        drifted = self.drifted(ts, ls)
        qid = f"{c.seed:016x}{index + 1:016x}" if c.trace_ids else f"q-{c.seed}-{index}"
        labels = dict(c.label_sets[ls])
        n_rel = int(rng.integers(1, 6))
        n_pool = c.docs_per_query + n_rel
        grades = np.zeros(n_pool, dtype=np.int64)
        grades[:n_rel] = rng.integers(1, 4, size=n_rel)
        quality = c.drifted_quality if drifted else c.quality
        scores = quality * grades + rng.normal(0.0, 1.0, size=n_pool)
        order = np.argsort(-scores, kind="stable")[: c.docs_per_query]
        age_days = c.drifted_doc_age_days if drifted else c.doc_age_days
        ages = rng.exponential(age_days * _DAY, size=n_pool)
        doc_ids = [f"d{index % 997}-{j}" for j in range(n_pool)]
        results = [
            {
                "doc_id": doc_ids[j],
                "score": round(float(scores[j]), 4),
                "t_doc": round(ts - ages[j], 3),
            }
            for j in order
        ]
        retrieval: dict[str, Any] = {
            "type": "retrieval",
            "query_id": qid,
            "ts": ts,
            "labels": labels,
            "query": " ".join(rng.choice(WORDS, size=4)),
            "results": results,
        }
        out = [TimedEvent(ts, retrieval)]
        if rng.random() < c.probe_share:
            retrieval["qrels"] = [
                {"doc_id": doc_ids[j], "rel": int(grades[j]), "t_doc": round(ts - ages[j], 3)}
                for j in range(n_rel)
            ]
        else:
            out.extend(
                self._clicks(
                    rng, qid, ts, labels, [doc_ids[j] for j in order[:5]], grades[order[:5]]
                )
            )
        if rng.random() < c.answer_share:
            answer, hallucinated = self._answer(rng, qid, ts, labels, results[:3], drifted)
            out.append(TimedEvent(ts + 0.5, answer))
            if c.gold_share > 0 and rng.random() < c.gold_share:  # drawn last: same stream
                out.append(self._gold(rng, answer, hallucinated))
        return out

    def _gold(
        self, rng: np.random.Generator, answer: dict[str, Any], hallucinated: bool
    ) -> TimedEvent:
        """A reviewer's verdict on the answer, the truth of the synthetic traffic."""
        c = self.config
        delay = float(rng.uniform(*c.gold_delay))
        arrival = answer["ts"] + delay
        if rng.random() < c.early_feedback_share:  # overtakes its answer
            arrival = answer["ts"] - 1.0
        event = {
            "type": "feedback",
            "query_id": answer["query_id"],
            "ts": answer["ts"] + delay,
            "labels": answer["labels"],
            "answer": {"hallucination": hallucinated},
            "source": "annotator",
        }
        return TimedEvent(arrival, event)

    def _clicks(
        self,
        rng: np.random.Generator,
        qid: str,
        ts: float,
        labels: dict[str, str],
        top: list[str],
        grades: np.ndarray[Any, np.dtype[np.int64]],
    ) -> Iterator[TimedEvent]:
        c = self.config
        for doc_id, grade in zip(top, grades.tolist(), strict=True):
            if rng.random() >= c.click_share:
                continue
            delay = float(rng.uniform(*c.feedback_delay))
            arrival = ts + delay
            if rng.random() < c.early_feedback_share:  # overtakes its retrieval event
                delay, arrival = 0.5, ts - 1.0
            event = {
                "type": "feedback",
                "query_id": qid,
                "ts": ts + delay,
                "labels": labels,
                "doc_id": doc_id,
                "rel": int(grade),
                "source": "click",
            }
            yield TimedEvent(arrival, event)

    def _answer(
        self,
        rng: np.random.Generator,
        qid: str,
        ts: float,
        labels: dict[str, str],
        top: list[dict[str, Any]],
        drifted: bool,
    ) -> tuple[dict[str, Any], bool]:
        """The answer event, and whether it adds an unsupported sentence."""
        c = self.config
        contexts = []
        sentences = []
        for doc in top:
            words = rng.choice(WORDS, size=6)
            text = (
                f"The {words[0]} {words[1]} uses {words[2]} {words[3]} for {words[4]} {words[5]}."
            )
            contexts.append({"doc_id": doc["doc_id"], "text": text})
            sentences.append(text)
        rate = c.drifted_hallucination_rate if drifted else c.hallucination_rate
        hallucinated = bool(rng.random() < rate)
        if hallucinated:
            sentences.append(
                f"It also guarantees {int(rng.integers(2, 99))} free moon credits per week."
            )
        event = {
            "type": "answer",
            "query_id": qid,
            "ts": ts + 0.5,
            "labels": labels,
            "question": f"How does the {contexts[0]['text'].split()[1]} work?",
            "answer": " ".join(sentences),
            "contexts": contexts,
            "model": "synthetic-1",
            "cited_doc_ids": [ctx["doc_id"] for ctx in contexts[:2]],
        }
        return event, hallucinated

    def stream(self, n_queries: int | None = None) -> Iterator[TimedEvent]:
        """Events in arrival order: query after query, each delayed event in its place."""
        held: list[tuple[float, int, TimedEvent]] = []
        seq = itertools.count()
        indices = itertools.count() if n_queries is None else iter(range(n_queries))
        for index in indices:
            now = self.config.start + index / self.config.rate
            for event in self.query_events(index):
                heapq.heappush(held, (event.arrival, next(seq), event))
            while held and held[0][0] <= now:
                yield heapq.heappop(held)[2]
        while held:
            yield heapq.heappop(held)[2]

    def take(self, n_events: int) -> list[TimedEvent]:
        """The next `n_events` events of one endless stream, in arrival order."""
        return list(itertools.islice(self._stream, n_events))
