"""OpenTelemetry traces with the OpenInference conventions, as ragstream events.

`TraceReader` (`reader.py`) turns the OTLP messages of a batch into ragstream event
messages; `otlp_proto.py` reads the Collector's `otlp_proto` encoding with the
OpenTelemetry protobuf definitions (the `otlp` extra, imported only when a topic is
configured with it), `otlp_json.py` its OTLP/JSON encoding; `mapping.py` maps spans to
events; `assembly.py` keeps each partition's open traces
until their answer can be made; `conventions.py` has the attribute names (`TraceMapping`).
"""

from ragstream.traces.assembly import TraceAssembler
from ragstream.traces.conventions import (
    OTLP_FORMATS,
    SPAN_KINDS,
    TraceMapping,
)
from ragstream.traces.reader import TraceReader, TraceSupportError

__all__ = [
    "OTLP_FORMATS",
    "SPAN_KINDS",
    "TraceAssembler",
    "TraceMapping",
    "TraceReader",
    "TraceSupportError",
]
