"""Retrieval events for the streaming benchmark, generated fast and deterministically.

The events have the shape of `ragstream.sources.synthetic.SyntheticTraffic` with only
retrieval events (no clicks, no answers): each query ranks `docs` of a pool of documents
with 1-5 relevant ones (grades 1-3) by a noisy score `quality · grade + N(0, 1)`, every
document has a `t_doc` drawn from an exponential age distribution, and a share of queries
are probes that carry their full `qrels`. `SyntheticTraffic` draws one query at a time
(about 2 ms a query on the benchmark machine, half an hour for a million); this module
draws a block of queries with one vectorized numpy pass and encodes them with orjson, so
the million events take about a minute. The data depend only on the configuration: block
`b` is drawn from `default_rng([seed, b])`, so any stage of the benchmark can regenerate
exactly the messages that were produced to the topic.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from aiokafka.partitioner import murmur2

from ragstream.sources.synthetic import LABEL_SETS, WORDS

__all__ = ["BLOCK", "DataConfig", "Record", "blocks", "partition_of"]

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


def partition_of(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a key: `murmur2(key) mod n`."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


def blocks(config: DataConfig, n: int) -> Iterator[list[Record]]:
    """The first `n` events, `BLOCK` at a time (the last block may be shorter)."""
    pool = config.docs + _MAX_RELEVANT
    doc_ids = [[f"d{m}-{j}" for j in range(pool)] for m in range(997)]
    labels = [dict(ls) for ls in config.label_sets]
    for b in range((n + BLOCK - 1) // BLOCK):
        first = b * BLOCK
        yield _block(config, b, first, min(BLOCK, n - first), doc_ids, labels)


def _block(
    c: DataConfig,
    b: int,
    first: int,
    size: int,
    doc_ids: list[list[str]],
    labels: list[dict[str, str]],
) -> list[Record]:
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
        out.append((event["query_id"].encode(), orjson.dumps(event)))
    return out
