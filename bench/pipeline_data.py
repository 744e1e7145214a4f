"""Events for the streaming benchmarks, generated fast and deterministically.

The events have the shape of `ragstream.sources.synthetic.SyntheticTraffic`: each query
ranks `docs` of a pool of documents
with 1-5 relevant ones (grades 1-3) by a noisy score `quality · grade + N(0, 1)`, every
document has a `t_doc` drawn from an exponential age distribution, and a share of queries
are probes that carry their full `qrels`. By default there are only retrieval events (the
pipeline benchmark); with `feedback_share` a share of the other queries get 1-3 clicks on
their top 5 as `feedback` events some seconds later (a few before their retrieval event,
a few after the label TTL), and with `answer_share` queries get an `answer` event half a
second later quoting their top 3, sometimes with a sentence no context supports: the
soak's mix (`bench.soak_bench`). Events come in arrival order across blocks.
`SyntheticTraffic` draws one query at a time
(about 2 ms a query on the benchmark machine, half an hour for a million); this module
draws a block of queries with one vectorized numpy pass and encodes them with orjson, so
the million events take about a minute. The data depend only on the configuration: block
`b` is drawn from `default_rng([seed, b])`, so any stage of the benchmark can regenerate
exactly the messages that were produced to the topic.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from aiokafka.partitioner import murmur2

from ragstream.sources.synthetic import LABEL_SETS, WORDS

__all__ = ["BLOCK", "DataConfig", "Record", "blocks", "partition_of"]

_CLICK_RANKS = 5
_MAX_CLICKS = 3
_CONTEXTS = 3
_HALLUCINATION = "It also guarantees {} free moon credits per week."

BLOCK = 10_000
"""Queries drawn per numpy pass (part of the data's definition)."""
_DAY = 86_400.0
_MAX_RELEVANT = 5

Record = tuple[bytes, bytes]
"""(key, value): the query id and the compact JSON event."""


@dataclass(frozen=True, slots=True)
class DataConfig:
    """Shape of the benchmark's traffic."""

    seed: int = 7
    start: float = 1_767_225_600.0
    """Event time of the first query (Unix seconds)."""
    rate: float = 20.0
    """Queries per second of event time (with the event clock this sets how many queries
    are open at once: `label_ttl · rate`)."""
    docs: int = 20
    """Documents per ranking."""
    probe_share: float = 0.2
    """Share of queries carrying their full qrels (the others are unlabeled)."""
    quality: float = 2.5
    doc_age_days: float = 30.0
    label_sets: tuple[Mapping[str, str], ...] = LABEL_SETS
    feedback_share: float = 0.0
    """Share of the non-probe queries whose users click 1-3 of the top 5 (each click a
    feedback event); the others are never labeled."""
    feedback_delay: tuple[float, float] = (2.0, 120.0)
    """Seconds from a query to its feedback (uniform)."""
    early_share: float = 0.0
    """Share of feedback that arrives a second before its retrieval event (it waits)."""
    late_share: float = 0.0
    """Share of feedback delayed by `late_delay` instead (past a label TTL: counted late)."""
    late_delay: tuple[float, float] = (1000.0, 1800.0)
    answer_share: float = 0.0
    """Share of queries with an answer event, 0.5 s after the retrieval."""
    hallucination_rate: float = 0.05
    """Share of answers that add a sentence no context supports."""
    extra_fields: bool = False
    """Retrieval events carry fields the schema does not know, after their own, as a
    producer adds them: two at the top (`trace_id`, 32 hex digits; `retriever`, an object)
    and two in each result (`chunk_id`, a string; `page`, an integer). Otherwise the same
    events."""
    padded: bool = False
    """Retrieval events as long as with `extra_fields`, without them: the query text ends
    in as many spaces as the extra fields take bytes. The control that tells what the extra
    fields cost from what their bytes cost (the Kafka fetch goes with the bytes)."""


def _encode(event: dict[str, Any]) -> bytes:
    """Compact JSON, in a buffer of its own size: orjson (3.12 and later) returns bytes
    whose allocation keeps its whole working buffer (4 KiB at least, whatever the length),
    which messages held by the engine or a block in hand would multiply; a message read from
    Kafka is its own size."""
    return bytes(memoryview(orjson.dumps(event)))


def partition_of(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a key: `murmur2(key) mod n`."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


def blocks(config: DataConfig, n: int) -> Iterator[list[Record]]:
    """The first `n` events in arrival order, one list per `BLOCK` queries (the last list
    may be shorter; with feedback or answers a list holds every event that arrives by the
    block's last query, the earlier blocks' delayed ones included)."""
    pool = config.docs + _MAX_RELEVANT
    doc_ids = [[f"d{m}-{j}" for j in range(pool)] for m in range(997)]
    labels = [dict(ls) for ls in config.label_sets]
    mixed = config.feedback_share > 0 or config.answer_share > 0
    held: list[tuple[float, int, Record]] = []  # (arrival, order, record), a heap
    emitted, b = 0, 0
    while emitted < n:
        first = b * BLOCK
        size = BLOCK if mixed else min(BLOCK, n - first)
        records, later = _block(config, b, first, size, doc_ids, labels)
        b += 1
        if not mixed:
            emitted += len(records)
            yield records
            continue
        for item in later:
            heapq.heappush(held, item)
        end = config.start + (first + BLOCK - 1) / config.rate
        out: list[Record] = []
        for q, record in enumerate(records, start=first):  # each query's arrival is its ts
            ts = config.start + q / config.rate
            while held and held[0][0] <= ts:
                out.append(heapq.heappop(held)[2])
            out.append(record)
        while held and held[0][0] <= end:
            out.append(heapq.heappop(held)[2])
        out = out[: n - emitted]
        emitted += len(out)
        yield out


def _block(
    c: DataConfig,
    b: int,
    first: int,
    size: int,
    doc_ids: list[list[str]],
    labels: list[dict[str, str]],
) -> tuple[list[Record], list[tuple[float, int, Record]]]:
    """The block's retrieval events in query order, and its feedback and answer events with
    their arrival times (ordered by arrival, then by query and kind)."""
    rng = np.random.default_rng([c.seed, b])
    pool = c.docs + _MAX_RELEVANT
    index = np.arange(first, first + BLOCK)
    ts = c.start + index / c.rate
    label_set = rng.integers(len(labels), size=BLOCK)
    n_rel = rng.integers(1, _MAX_RELEVANT + 1, size=BLOCK)
    relevant = np.arange(pool)[None, :] < n_rel[:, None]
    grades = rng.integers(1, 4, size=(BLOCK, pool)) * relevant
    scores = np.round(c.quality * grades + rng.normal(size=(BLOCK, pool)), 4)
    order = np.argsort(-scores, axis=1, kind="stable")[:, : c.docs]
    t_doc = np.round(ts[:, None] - rng.exponential(c.doc_age_days * _DAY, size=(BLOCK, pool)), 3)
    probe = rng.random(BLOCK) < c.probe_share
    words = rng.integers(len(WORDS), size=(BLOCK, 4))
    out: list[Record] = []
    for i in range(size):
        q = first + i
        ids = doc_ids[q % 997]
        s, t, ranked = scores[i].tolist(), t_doc[i].tolist(), order[i].tolist()
        event: dict[str, Any] = {
            "type": "retrieval",
            "query_id": f"q-{c.seed}-{q}",
            "ts": float(ts[i]),
            "labels": labels[int(label_set[i])],
            "query": " ".join(WORDS[w] for w in words[i].tolist()),
            "results": [{"doc_id": ids[j], "score": s[j], "t_doc": t[j]} for j in ranked],
        }
        if probe[i]:
            g = grades[i].tolist()
            event["qrels"] = [
                {"doc_id": ids[j], "rel": g[j], "t_doc": t[j]} for j in range(int(n_rel[i]))
            ]
        if c.extra_fields:
            _add_extra_fields(event, q)
        elif c.padded:
            _pad_like_extra_fields(event, q)
        out.append((event["query_id"].encode(), _encode(event)))
    if c.feedback_share <= 0 and c.answer_share <= 0:
        return out, []
    # Drawn after everything above, so that the retrieval events do not depend on the mix.
    clicks = rng.integers(1, _MAX_CLICKS + 1, size=BLOCK)
    clicks *= (~probe & (rng.random(BLOCK) < c.feedback_share)).astype(np.int64)
    ranks = np.argsort(rng.random((BLOCK, _CLICK_RANKS)), axis=1)[:, :_MAX_CLICKS]
    delay = rng.uniform(*c.feedback_delay, size=(BLOCK, _MAX_CLICKS))
    late = rng.random((BLOCK, _MAX_CLICKS)) < c.late_share
    delay = np.where(late, rng.uniform(*c.late_delay, size=(BLOCK, _MAX_CLICKS)), delay)
    early = rng.random((BLOCK, _MAX_CLICKS)) < c.early_share
    answered = rng.random(BLOCK) < c.answer_share
    hallucinated = rng.random(BLOCK) < c.hallucination_rate
    credits = rng.integers(2, 99, size=BLOCK)
    context_words = rng.integers(len(WORDS), size=(BLOCK, _CONTEXTS, 6))
    later: list[tuple[float, int, Record]] = []
    for i in range(size):
        q = first + i
        qid, ids, t = f"q-{c.seed}-{q}", doc_ids[q % 997], float(ts[i])
        key, ranked = qid.encode(), order[i].tolist()
        label = labels[int(label_set[i])]
        for k in range(int(clicks[i])):
            j = ranked[int(ranks[i, k])]
            arrival, event_ts = t + float(delay[i, k]), t + float(delay[i, k])
            if early[i, k]:  # overtakes its retrieval event
                arrival, event_ts = t - 1.0, t + 0.5
            feedback = {
                "type": "feedback",
                "query_id": qid,
                "ts": event_ts,
                "labels": label,
                "doc_id": ids[j],
                "rel": int(grades[i, j]),
                "source": "click",
            }
            later.append((arrival, 4 * q + k, (key, _encode(feedback))))
        if answered[i]:
            later.append(
                (
                    t + 0.5,
                    4 * q + 3,
                    (
                        key,
                        _encode(
                            _answer(
                                qid,
                                t,
                                label,
                                ids,
                                ranked,
                                context_words[i].tolist(),
                                hallucinated[i],
                                int(credits[i]),
                            )
                        ),
                    ),
                )
            )
    return out, later


def _add_extra_fields(event: dict[str, Any], q: int) -> None:
    """Two unknown fields at the top of a retrieval event and two in each result (drawn
    from nothing random, so that the events are otherwise the same)."""
    event["trace_id"] = f"{q * 0x9E3779B97F4A7C15 % 2**128:032x}"
    event["retriever"] = {"name": "hybrid", "k": len(event["results"])}
    for rank, doc in enumerate(event["results"]):
        doc["chunk_id"] = f"{doc['doc_id']}#c{rank % 4}"
        doc["page"] = 1 + rank * 7 % 40


def _pad_like_extra_fields(event: dict[str, Any], q: int) -> None:
    """Spaces at the end of the query text, as many as `_add_extra_fields` adds bytes."""
    extra = {**event, "results": [dict(doc) for doc in event["results"]]}
    _add_extra_fields(extra, q)
    event["query"] += " " * (len(_encode(extra)) - len(_encode(event)))


def _answer(
    qid: str,
    ts: float,
    labels: dict[str, str],
    ids: list[str],
    ranked: list[int],
    words: list[list[int]],
    hallucinated: bool,
    credits: int,
) -> dict[str, Any]:
    """An answer quoting the top `_CONTEXTS` documents (the demo's answers, see
    `SyntheticTraffic`)."""
    texts = ["The {} {} uses {} {} for {} {}.".format(*(WORDS[w] for w in ws)) for ws in words]
    sentences = [*texts, _HALLUCINATION.format(credits)] if hallucinated else texts
    contexts = [{"doc_id": ids[ranked[r]], "text": texts[r]} for r in range(_CONTEXTS)]
    return {
        "type": "answer",
        "query_id": qid,
        "ts": ts + 0.5,
        "labels": labels,
        "question": f"How does the {WORDS[words[0][1]]} work?",
        "answer": " ".join(sentences),
        "contexts": contexts,
        "model": "synthetic-1",
        "cited_doc_ids": [ctx["doc_id"] for ctx in contexts[:2]],
    }
