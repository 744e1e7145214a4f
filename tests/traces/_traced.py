"""A tracer provider whose spans are kept in the Collector's Kafka formats, for the tests of
instrumented frameworks (`_rag.py` has the LangChain app these follow)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ragstream.events import DecodedAnswer, Message
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.partition_tally import sum_counters
from ragstream.traces.assembly import SKIP_REASONS, TRACE_OUTCOMES
from tests.support import defaults
from tests.support.defaults import engine_config
from tests.traces._rag import CollectorFormat

__all__ = [
    "TOPIC",
    "Traced",
    "answers",
    "engine",
    "skip_counts",
    "span_counts",
    "trace_counts",
]

TOPIC = "otlp_spans"


class Traced:
    """A provider exporting every span alone (SimpleSpanProcessor), as an app does."""

    def __init__(self, service: str = "support-bot") -> None:
        self.exporter = CollectorFormat()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def messages(self, encoding: str = "otlp_proto") -> list[Message]:
        """Every span exported so far as the Collector writes it, one message each, keyed
        by the trace id; the exports are taken."""
        out = [
            Message(value, 0, i, TOPIC, key)
            for i, (key, value) in enumerate(self.exporter.messages(encoding))
        ]
        self.exporter.take()
        return out


def engine(encoding: str = "otlp_proto", wait: float | None = None) -> Engine:
    """An engine on the event clock reading `TOPIC` in `encoding`."""
    mapping = defaults.trace_mapping() if wait is None else defaults.trace_mapping(wait=wait)
    return Engine(
        engine_config(
            clock="event",
            label_keys=("service",),
            formats=((TOPIC, encoding),),
            traces=mapping,
        )
    )


def answers(engine: Engine, batches: Sequence[Sequence[Message]]) -> list[DecodedAnswer]:
    """The answer events of the batches, none of them invalid."""
    out: list[DecodedAnswer] = []
    for batch in batches:
        report = engine.apply(batch)
        assert report.invalid == []
        out.extend(answer for _, answer in report.answers)
    return out


def span_counts(engine: Engine) -> Counter[tuple[str, str]]:
    """(kind, outcome) -> spans of the trace topics, over the engine's partitions."""
    return sum_counters(read.spans for read in engine.read_partitions().values())


def trace_counts(engine: Engine) -> dict[str, int]:
    """Closed traces by outcome (every outcome present), over the engine's partitions."""
    total = sum_counters(read.traces for read in engine.read_partitions().values())
    return {outcome: total[outcome] for outcome in TRACE_OUTCOMES}


def skip_counts(engine: Engine) -> dict[str, int]:
    """Trace records skipped, by reason (every reason present), over its partitions."""
    total = sum_counters(read.skipped for read in engine.read_partitions().values())
    return {reason: total[reason] for reason in SKIP_REASONS}
