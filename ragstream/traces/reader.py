"""A batch of messages from topics of several formats, as ragstream event messages.

`TraceReader.expand` leaves the messages of `ragstream` topics as they are and replaces
each OTLP message (`otlp_proto`, `otlp_json`) by the events its spans give, each one a
ragstream event (schema v1 JSON) in a `Message` with the trace message's topic, partition
and offset and the query id as key; answers of traces that close in the batch come at its
end. The engine then reads the batch as it reads any other, so trace-derived events are
validated, counted and joined exactly like the events a service sends.

A topic the Collector's Kafka exporter shares between signals (`signal_header: true`)
also carries metrics and logs: a record whose `otelcol.signal` header is there and is not
`traces` is skipped, counted by reason (`signal_metrics`, `signal_logs`,
`signal_profiles`, `signal_other`), not read as an invalid trace. Records come with their
headers as the Kafka client has them (aiokafka's `ConsumerRecord.headers`, a sequence of
`(str, bytes)`); a record without headers (a file, a `Message`) is read.

The open traces live per partition (`TraceAssembler`): they move with the partition
(`export` / `adopt`) and are in the engine's snapshot.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from ragstream.events import DecodeError, Message, Record, value_of
from ragstream.traces.assembly import TRACE_OUTCOMES, Position, TraceAssembler
from ragstream.traces.conventions import OTLP_FORMATS, TraceMapping
from ragstream.traces.otlp_json import read_json
from ragstream.traces.spans import SpanBatch

__all__ = ["SIGNAL_HEADER", "SKIP_REASONS", "TraceReader", "TraceSupportError", "format_reader"]

_encode = msgspec.json.Encoder().encode

SIGNAL_HEADER = "otelcol.signal"
"""The header the Collector's Kafka exporter writes with `signal_header: true`."""
SKIP_REASONS = ("signal_metrics", "signal_logs", "signal_profiles", "signal_other")
"""Why a record of a trace topic is skipped: its `otelcol.signal` header names another
signal (one of the Collector's, else `other`)."""
_SIGNALS = {b"metrics": SKIP_REASONS[0], b"logs": SKIP_REASONS[1], b"profiles": SKIP_REASONS[2]}


class TraceSupportError(ImportError):
    """An `otlp_proto` topic is configured but the OpenTelemetry protobuf definitions are
    not installed."""


class TraceReader:
    """Reads the OTLP topics of a batch (see the module docstring)."""

    def __init__(
        self,
        formats: Mapping[str, str],
        mapping: TraceMapping,
        label_keys: Sequence[str] = (),
    ) -> None:
        """`formats`: topic -> format; topics not named (or `ragstream`) carry events."""
        unknown = {f for f in formats.values() if f != "ragstream" and f not in OTLP_FORMATS}
        if unknown:
            raise ValueError(f"unknown source formats: {sorted(unknown)}")
        self.formats = {t: f for t, f in formats.items() if f in OTLP_FORMATS}
        self.mapping = mapping
        self.label_keys = tuple(label_keys)
        self._readers = {t: format_reader(f) for t, f in self.formats.items()}
        self.assemblers: dict[int, TraceAssembler] = {}
        """Per held partition: its open traces and its span and trace counters."""

    # -- the batch --------------------------------------------------------------------------

    def expand(
        self, messages: Sequence[Record], now: float
    ) -> tuple[Sequence[Record], list[tuple[Record, DecodeError]]]:
        """The batch with every OTLP message replaced by its events, and the OTLP messages
        (or spans) that are not valid, with their reason."""
        readers = self._readers
        if not self.assemblers and not any(m.topic in readers for m in messages):
            return messages, []
        out: list[Record] = []
        invalid: list[tuple[Record, DecodeError]] = []
        mapping = self.mapping
        for message in messages:
            read = readers.get(message.topic)
            if read is None:
                out.append(message)
                continue
            skip = _skipped(message)
            if skip is not None:
                self._assembler(message.partition).skipped[skip] += 1
                continue
            try:
                batch = read(value_of(message), mapping)
            except DecodeError as error:
                invalid.append((message, error))
                continue
            assembler = self._assembler(message.partition)
            position = (message.topic, message.offset)
            invalid.extend((message, error) for error in batch.errors)
            assembler.skip(batch.skipped)
            for span in batch.spans:
                event = assembler.add(span, position)
                if event is not None:
                    out.append(_message(event, message.partition, position))
            for trace_id in batch.roots:
                assembler.root(trace_id)
        for partition, assembler in self.assemblers.items():
            for event, where in assembler.close_due(now):
                out.append(_message(event, partition, where))
        return out, invalid

    def close_all(self) -> list[Message]:
        """The answers of every open trace (the end of a replay)."""
        out: list[Message] = []
        for partition, assembler in self.assemblers.items():
            for event, where in assembler.close_all():
                out.append(_message(event, partition, where))
        return out

    def _assembler(self, partition: int) -> TraceAssembler:
        assembler = self.assemblers.get(partition)
        if assembler is None:
            assembler = self.assemblers[partition] = TraceAssembler(self.mapping, self.label_keys)
        return assembler

    # -- partitions and state ---------------------------------------------------------------

    def drop(self, partitions: set[int]) -> None:
        """Forget revoked partitions' open traces and counters (their new owner has them)."""
        for partition in partitions:
            self.assemblers.pop(partition, None)

    def export(self, partition: int) -> dict[str, Any] | None:
        """One partition's open traces, for the replica that takes it over."""
        assembler = self.assemblers.get(partition)
        return None if assembler is None else assembler.snapshot()

    def adopt(self, partition: int, data: Mapping[str, Any] | None) -> None:
        """Take over a partition's open traces and counters."""
        self.drop({partition})
        if data is not None:
            self._assembler(partition).restore(data)

    def snapshot(self) -> dict[str, Any]:
        return {
            "partitions": {str(p): a.snapshot() for p, a in sorted(self.assemblers.items())},
        }

    def restore(self, data: Mapping[str, Any] | None) -> None:
        self.assemblers = {}
        if data is None:
            return
        for partition, state in data["partitions"].items():
            self._assembler(int(partition)).restore(state)

    # -- reads ------------------------------------------------------------------------------

    @property
    def open_traces(self) -> int:
        return sum(len(a.open) for a in self.assemblers.values())

    def span_counts(self, partition: int | None = None) -> Counter[tuple[str, str]]:
        """(kind, outcome) -> spans, of one partition or summed over held partitions."""
        totals: Counter[tuple[str, str]] = Counter()
        for p, assembler in self.assemblers.items():
            if partition is None or p == partition:
                totals.update(assembler.spans)
        return totals

    def trace_counts(self, partition: int | None = None) -> dict[str, int]:
        """Closed traces by outcome (every outcome present), of one partition or summed
        over held partitions."""
        totals: Counter[str] = Counter()
        for p, assembler in self.assemblers.items():
            if partition is None or p == partition:
                totals.update(assembler.traces)
        return {name: totals.get(name, 0) for name in (*TRACE_OUTCOMES, "evicted")}

    def skip_counts(self, partition: int | None = None) -> dict[str, int]:
        """Records of the trace topics skipped, by reason (every reason present), of one
        partition or summed over held partitions."""
        totals: Counter[str] = Counter()
        for p, assembler in self.assemblers.items():
            if partition is None or p == partition:
                totals.update(assembler.skipped)
        return {name: totals.get(name, 0) for name in SKIP_REASONS}


def format_reader(fmt: str) -> Callable[[bytes, TraceMapping], SpanBatch]:
    """The reader of an OTLP format; `otlp_proto` needs the `otlp` extra (`TraceSupportError`
    when it is not installed)."""
    if fmt == "otlp_json":
        return read_json
    try:
        from ragstream.traces.otlp_proto import read_proto
    except ImportError as error:  # the `otlp` extra is not installed
        raise TraceSupportError(
            "reading otlp_proto traces needs the OpenTelemetry protobuf definitions: "
            f"pip install 'ragstream[otlp]' ({error})"
        ) from error
    return read_proto


def _skipped(record: Record) -> str | None:
    """Why a trace topic's record is skipped, from its `otelcol.signal` header; None: read
    it (no such header, or `traces`)."""
    headers = getattr(record, "headers", None)
    if not headers:
        return None
    for key, value in headers:
        if key == SIGNAL_HEADER:
            return None if value == b"traces" else _SIGNALS.get(value, SKIP_REASONS[3])
    return None


def _message(event: dict[str, Any], partition: int, position: Position) -> Message:
    topic, offset = position
    return Message(
        _encode(event), partition, offset, topic, event["query_id"].encode("utf-8", "replace")
    )
