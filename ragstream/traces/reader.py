"""A batch of messages from topics of several formats, as ragstream event messages.

`TraceReader.expand` leaves the messages of `ragstream` topics as they are and replaces
each OTLP message (`otlp_proto`, `otlp_json`) by the events its spans give, each one a
ragstream event (schema v1 JSON) in a `Message` with the trace message's topic, partition
and offset and the query id as key; the answers of traces that close in the batch
(`closed_answers`) come at its end. The engine then reads the batch as it reads any other,
so trace-derived events are validated, counted and joined exactly like the events a
service sends.

A topic the Collector's Kafka exporter shares between signals (`signal_header: true`)
also carries metrics and logs: a record whose `otelcol.signal` header is there and is not
`traces` is skipped, counted by reason (`signal_metrics`, `signal_logs`,
`signal_profiles`, `signal_other`), not read as an invalid trace. Records come with their
headers as the Kafka client has them (aiokafka's `ConsumerRecord.headers`, a sequence of
`(str, bytes)`); a record without headers (a file, a `Message`) is read.

The open traces live per partition (`TraceAssembler`), in the engine's partition states
(`ragstream.pipeline.partitions.PartitionState`): they move with the partition and are in
the engine's snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from ragstream.events import DecodeError, Message, Record, value_of
from ragstream.traces.assembly import SKIP_REASONS, Position, TraceAssembler
from ragstream.traces.conventions import OTLP_FORMATS, TraceMapping
from ragstream.traces.otlp_json import read_json
from ragstream.traces.spans import SpanBatch

__all__ = [
    "SIGNAL_HEADER",
    "TraceReader",
    "TraceSupportError",
    "closed_answers",
    "format_reader",
]

_encode = msgspec.json.Encoder().encode

SIGNAL_HEADER = "otelcol.signal"
"""The header the Collector's Kafka exporter writes with `signal_header: true`."""
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

    # -- the batch --------------------------------------------------------------------------

    def expand(
        self, messages: Sequence[Record], assembler: Callable[[int], TraceAssembler]
    ) -> tuple[Sequence[Record], list[tuple[Record, DecodeError]]]:
        """The batch with every OTLP message replaced by the events its spans give at once
        (`assembler`: the partition's open traces, made on its first trace record), and
        the OTLP messages (or spans) that are not valid, with their reason. The answers of
        the traces that close come from `closed_answers`."""
        readers = self._readers
        if not any(m.topic in readers for m in messages):
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
                assembler(message.partition).skipped[skip] += 1
                continue
            try:
                batch = read(value_of(message), mapping)
            except DecodeError as error:
                invalid.append((message, error))
                continue
            assembly = assembler(message.partition)
            position = (message.topic, message.offset)
            invalid.extend((message, error) for error in batch.errors)
            assembly.skip(batch.skipped)
            for span in batch.spans:
                event = assembly.add(span, position)
                if event is not None:
                    out.append(_message(event, message.partition, position))
            for trace_id in batch.roots:
                assembly.root(trace_id)
        return out, invalid

    def new_assembler(self) -> TraceAssembler:
        """A partition's open traces, empty."""
        return TraceAssembler(self.mapping, self.label_keys)


def closed_answers(
    closed: Iterable[tuple[int, list[tuple[dict[str, Any], Position]]]],
) -> list[Message]:
    """The answer events of closed traces (`TraceAssembler.close_due` / `close_all`, with
    their partitions) as messages, in the order given."""
    return [_message(event, p, where) for p, answers in closed for event, where in answers]


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
