"""Per-query results: one JSON record per final query, the same for `ragstream replay
--per-query` and the results topic (`ResultsSink`), with its JSON Schema (`ResultRecord`).

docs/results.md says what a record holds, how queries are sampled, and what a crash can
duplicate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragstream.join import QueryView
from ragstream.pipeline.engine import Engine
from ragstream.shares import share_point
from ragstream.sinks.publisher import OUTCOMES, KafkaPublisher
from ragstream.sinks.verdict import JudgeVerdict

__all__ = [
    "SAMPLE_MODES",
    "ResultRecord",
    "ResultSampler",
    "ResultsSink",
    "UnknownMetricError",
    "query_record",
    "result_json_schema",
]

SampleMode = Literal["all", "share", "below"]
SAMPLE_MODES: tuple[SampleMode, ...] = ("all", "share", "below")


class UnknownMetricError(ValueError):
    """The sampling names a metric the engine's registry does not compute."""


class ResultRecord(BaseModel):
    """One final query: who it was, when, and every metric of the registry."""

    model_config = ConfigDict(extra="forbid", title="ragstream result")

    type: Literal["result"] = Field(description="always `result`")
    query_id: str = Field(description="the query's id; also the Kafka record's key")
    labels: dict[str, str] = Field(description="the configured service labels (`labels.keys`)")
    ts: float = Field(description="the retrieval event's time, Unix seconds")
    time: str = Field(
        description="`ts` as an RFC 3339 UTC timestamp (microseconds), for stores that read dates",
        json_schema_extra={"format": "date-time"},
    )
    labeled: bool = Field(description="whether any document was graded before it was final")
    graded_docs: int = Field(ge=0, description="how many documents carry a grade")
    label_sources: dict[str, int] = Field(
        description="the graded documents by the source of their latest grade: `inline` "
        "(a result's `rel`), `qrels`, or a feedback event's `source` (`click`, `judge`, ...); "
        "empty for an unlabeled query"
    )
    metrics: dict[str, float | None] = Field(
        description="every per-query metric by its registry name (`ragstream.metrics`); "
        "empty for an unlabeled query, null for a value that is not defined"
    )
    verdicts: JudgeVerdict | None = Field(
        description="the judge's verdict on the query's answer, when it was judged while the "
        "query was open; null otherwise (docs/results.md, `Judge verdicts`)"
    )


def result_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a result record."""
    body = ResultRecord.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **body}


def _defined(value: float) -> float | None:
    """A record's metric value: None for NaN (not defined)."""
    return None if value != value else value


def query_record(
    engine: Engine, query: QueryView, verdicts: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The `ResultRecord` of one final query, as a JSON object, with the judge's
    ``verdicts`` (`JudgeVerdict` fields; None: not judged).

    Decayed sum metrics are valued at the query's own event time; unlabeled queries have
    no retrieval metrics.
    """
    layout = engine.layout
    metrics: dict[str, float | None] = {}
    if query.contribution is not None:
        values = map(_defined, layout.record_values(query.contribution))
        metrics = dict(zip(layout.record_names(), values, strict=True))
    return {
        "type": "result",
        "query_id": query.query_id,
        "labels": layout.labelset_labels(query.labelset),
        "ts": query.ts,
        "time": datetime.fromtimestamp(query.ts, UTC).isoformat(timespec="microseconds"),
        "labeled": query.labeled,
        "graded_docs": len(query.labels),
        "label_sources": query.label_sources,
        "metrics": metrics,
        "verdicts": None if verdicts is None else dict(verdicts),
    }


class ResultSampler:
    """Which final queries are written: `all`; a `share` of them, chosen by a hash of the
    query id (`ragstream.shares`: a rerun chooses the same ones); or those `below` a
    threshold on a metric (queries without that metric's value are not chosen)."""

    def __init__(
        self, mode: SampleMode, *, share: float, metric: str | None, threshold: float
    ) -> None:
        if mode not in SAMPLE_MODES:
            raise ValueError(f"sample mode must be one of {', '.join(SAMPLE_MODES)}, not {mode!r}")
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"share must be within [0, 1], not {share}")
        if mode == "below" and metric is None:
            raise ValueError("sample mode 'below' needs a metric")
        self.mode = mode
        self.share = share
        self.metric = metric
        self.threshold = threshold

    def chooses(self, query_id: str, value: float | None) -> bool:
        """Whether the final query ``query_id`` is written; ``value`` is its `metric`'s, as
        its record has it (None: not defined, or an unlabeled query), read by `below` only."""
        if self.mode == "all":
            return True
        if self.mode == "share":
            return share_point(query_id) < self.share
        return value is not None and value < self.threshold


class ResultsSink:
    """Final queries to a results topic: sampled, then offered to a `KafkaPublisher`
    (never blocking); `flush` before the batch's offsets are committed."""

    def __init__(
        self,
        engine: Engine,
        publisher: KafkaPublisher,
        sampler: ResultSampler,
        *,
        verdicts: Callable[[int, str], Mapping[str, Any] | None] | None = None,
    ) -> None:
        """``verdicts``: (partition, query id) -> the judge's verdict kept for that final
        query (taken: asked once per final query, sampled or not), e.g.
        `JudgingService.take_verdict`."""
        self.engine = engine
        self.publisher = publisher
        self.sampler = sampler
        self.verdicts = verdicts
        names = engine.layout.record_names()
        if sampler.metric is not None and sampler.metric not in names:
            raise UnknownMetricError(
                f"results.metric: no per-query metric {sampler.metric!r}; known: {', '.join(names)}"
            )
        read = sampler.metric if sampler.mode == "below" else None
        self._position = None if read is None else names.index(read)
        """Where the sampling's metric is among a record's metrics (None: not read)."""
        self.counts: Counter[str] = Counter()
        """Final queries by outcome: ``offered``, ``sampled_out``; and ``flush_timeouts``."""

    def on_final(self, queries: Sequence[QueryView]) -> None:
        """Offer each chosen final query's record; a full queue drops it (counted). The
        sampling decides first, so that only the records written are built."""
        take, chooses = self.verdicts, self.sampler.chooses
        for query in queries:
            verdicts = None if take is None else take(query.partition, query.query_id)
            if not chooses(query.query_id, self._value(query)):
                self.counts["sampled_out"] += 1
                continue
            self.counts["offered"] += 1
            self.publisher.offer_record(query.query_id, query_record(self.engine, query, verdicts))

    def _value(self, query: QueryView) -> float | None:
        """The sampling metric's value for a final query, as `query_record` gives it (None:
        not defined, or unlabeled; also when the sampling reads none)."""
        if self._position is None or query.contribution is None:
            return None
        return _defined(self.engine.layout.record_values(query.contribution)[self._position])

    async def flush(self) -> None:
        """Wait until the records offered so far are acknowledged (within the publisher's
        `drain_timeout`, `results.flush_timeout`; past it they stay queued and the commit
        goes on)."""
        if not await self.publisher.flush(self.publisher.drain_timeout):
            self.counts["flush_timeouts"] += 1

    async def start(self) -> None:
        await self.publisher.start()

    async def stop(self) -> None:
        await self.publisher.stop()

    def outcomes(self) -> dict[str, int]:
        """Records by outcome, for `ragstream_results_records_total`: sampled out, or what
        the publisher made of them (`ragstream.sinks.publisher.OUTCOMES`)."""
        return {
            "sampled_out": self.counts["sampled_out"],
            **{o: self.publisher.counts[o] for o in OUTCOMES},
        }
