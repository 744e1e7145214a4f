"""Judgments to a Kafka topic as JSON, for audit; keyed by ``query_id``.

`offer` is synchronous and never blocks: `ragstream.sinks.publisher.KafkaPublisher` queues
(bounded; when full the judgment is dropped and counted) and sends in the background. Send
failures are counted and logged, never raised into the judging path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ragstream.judging.model import JudgeInput, Judgment
from ragstream.sinks.publisher import KafkaPublisher

__all__ = ["JudgmentPublisher", "judgment_record"]


def judgment_record(item: JudgeInput, judgment: Judgment, *, judged_at: float) -> dict[str, Any]:
    """The published JSON object: the query, its labels, the scores and how they were made."""
    return {
        "type": "judgment",
        "query_id": item.query_id,
        "ts": item.ts,
        "judged_at": judged_at,
        "labels": dict(item.labels),
        "doc_ids": list(item.doc_ids),
        **judgment.as_dict(),
    }


class JudgmentPublisher(KafkaPublisher):
    """Publishes judgments to ``topic`` through a `KafkaPublisher` (its queue and counts)."""

    def __init__(
        self, topic: str, *, wall: Callable[[], float] = time.time, **options: Any
    ) -> None:
        """``options``: `KafkaPublisher`'s (``bootstrap_servers`` or ``producer``,
        ``queue_size``, ``drain_timeout``, the producer's own)."""
        super().__init__(topic, name="judgment-publisher", **options)
        self._wall = wall

    def offer(self, item: JudgeInput, judgment: Judgment) -> bool:
        """Queue one judgment for sending; False (counted) when the queue is full."""
        record = judgment_record(item, judgment, judged_at=self._wall())
        return self.offer_record(item.query_id, record)
