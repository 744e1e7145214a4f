"""Why a message is not an event: a fixed reason code (a Prometheus label) and a detail.

Reasons, in order of precedence:
`empty` (null or zero-length value), `too_large` (message bytes or a size limit),
`bad_json` (not UTF-8 JSON, or a value nested in more than 200 arrays or objects;
anywhere in the message, unknown fields included), `bad_protobuf` (a message of an
`otlp_proto` topic that is not an OTLP `ExportTraceServiceRequest`), `not_object` (JSON, but not an
object), `unknown_type` (`type` is not retrieval/answer/feedback), `bad_timestamp`
(`ts`/`t_doc` malformed or out of range) and `schema` (anything else: missing or mistyped
fields, out-of-range values).

One reason is given by the source rather than the decoders: `bad_batch`, a Kafka record
batch that cannot be read at all (a compressed payload that does not decompress, a CRC
error, a codec without its library), counted once per batch whatever its record count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

__all__ = ["DECODE_REASONS", "DecodeError", "DecodeReason", "IndexedDecodeError"]

DecodeReason = Literal[
    "empty",
    "too_large",
    "bad_json",
    "bad_protobuf",
    "not_object",
    "unknown_type",
    "bad_timestamp",
    "schema",
    "bad_batch",
]
DECODE_REASONS: tuple[DecodeReason, ...] = get_args(DecodeReason)
"""Every reason code, e.g. to pre-create metric series."""


class DecodeError(ValueError):
    """A message that is not a valid event: a machine-friendly `reason` and a human `detail`."""

    def __init__(self, reason: DecodeReason, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason: DecodeReason = reason
        self.detail: str = detail

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.detail))


@dataclass(frozen=True, slots=True)
class IndexedDecodeError:
    """A decode error and the position of its message in the batch."""

    index: int
    """Position of the message in the batch."""
    error: DecodeError
    """Why it is not an event."""
