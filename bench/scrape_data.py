"""Traffic for the exposition benchmark: the synthetic stream, spread over N label sets.

One base stream of `SyntheticTraffic` (retrievals, answers, clicks that come back as feedback)
covers the `span` seconds before `T_END` at `rate` queries a second, with one label set and
trace ids as query ids (so the final-query histograms carry exemplars); it
is cached in `bench/.data/` (the generator takes about 2 ms a query). Query `i` is then given
the label set `app = f"app{i % N}"` (so every label set gets the same share of the traffic
and has data in every window) and partition `i % partitions` (all events of a query on one
partition, as a Kafka key would put them). Event times can be shifted as a whole, so that
the same stream ends at the wall clock of a live run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ragstream.config import LabelSettings, Settings
from ragstream.events import Message
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import engine_config as wiring_engine_config

__all__ = [
    "LABEL_KEYS",
    "T_END",
    "DataConfig",
    "base_events",
    "engine_config",
    "fill",
    "message_batches",
]

T_END = 1_790_000_000.0
"""The fixed "now" of the scrape measurements: the stream ends here."""
LABEL_KEYS = ("app", "index")
_DATA = Path(__file__).resolve().parent / ".data"
_QUERY_INDEX = re.compile(rb'"query_id":"[0-9a-f]{16}([0-9a-f]{16})"')
"""The index of a query in its trace id (`SyntheticConfig.trace_ids`): the last 16 hex
digits are the index + 1."""


@dataclass(frozen=True, slots=True)
class DataConfig:
    """The base stream: `span` seconds of traffic at `rate` queries a second."""

    span: float = 1000.0
    """Longer than the label TTL (900 s), so that final histograms have queries too."""
    rate: float = 20.0
    seed: int = 7
    partitions: int = 3
    batch: int = 2000
    """Messages per batch handed to the engine."""

    @property
    def path(self) -> Path:
        return _DATA / f"scrape-events-{self.seed}-{self.rate:g}-{self.span:g}-traced.jsonl"


def base_events(config: DataConfig) -> list[bytes]:
    """The base stream's messages in arrival order, up to `T_END` (generated once, cached)."""
    path = config.path
    if path.exists():
        return path.read_bytes().splitlines()
    traffic = SyntheticTraffic(
        SyntheticConfig(
            seed=config.seed,
            start=T_END - config.span,
            rate=config.rate,
            label_sets=({"app": "app0", "index": "v7"},),
            drift_at=None,
            trace_ids=True,  # every final query may be an exemplar: the largest exposition
        )
    )
    n_queries = int(config.span * config.rate)
    values = [e.value for e in traffic.stream(n_queries) if e.arrival <= T_END]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(b"\n".join(values) + b"\n")
    tmp.replace(path)
    return values


def _query_index(value: bytes) -> int:
    match = _QUERY_INDEX.search(value)
    if match is None:
        raise ValueError("event without a synthetic query id")
    return int(match.group(1), 16) - 1


def _shifted(value: bytes, shift: float, decoder: msgspec.json.Decoder[Any]) -> bytes:
    """The event with `ts` and every `t_doc` moved by `shift` seconds."""
    event = decoder.decode(value)
    event["ts"] += shift
    for doc in (*event.get("results", ()), *event.get("qrels", ())):
        if "t_doc" in doc:
            doc["t_doc"] += shift
    return msgspec.json.encode(event)


def message_batches(
    values: list[bytes], config: DataConfig, labelsets: int, shift: float = 0.0
) -> Iterator[list[Message]]:
    """The base stream over `labelsets` label sets and `config.partitions` partitions."""
    decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()
    offsets = [0] * config.partitions
    batch: list[Message] = []
    for value in values:
        index = _query_index(value)
        if shift:
            value = _shifted(value, shift, decoder)
        if labelsets > 1:
            value = value.replace(b'"app":"app0"', b'"app":"app%d"' % (index % labelsets), 1)
        partition = index % config.partitions
        batch.append(Message(value, partition, offsets[partition], "scrape-bench"))
        offsets[partition] += 1
        if len(batch) >= config.batch:
            yield batch
            batch = []
    if batch:
        yield batch


def engine_config(labelsets: int) -> EngineConfig:
    """The default engine configuration, with the two service labels exported."""
    labels = LabelSettings(keys=list(LABEL_KEYS), max_values=max(50, labelsets))
    return wiring_engine_config(Settings(labels=labels))


def fill(engine: Engine, batches: Iterator[list[Message]]) -> int:
    """Apply every batch; returns the number of messages."""
    n = 0
    for batch in batches:
        engine.apply(batch)
        n += len(batch)
    return n
