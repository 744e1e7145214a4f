"""A batch of message values to events, the way the engine reads them.

With the schema's caps (`Limits.is_default`), the compiled scanner reads the retrieval
events of the common shape into small records (`Scanned`, no Python object per document),
msgspec the messages it declines, and the pydantic reference those msgspec rejects: it
names the reason, or accepts the message after all. With tighter limits every message goes
through `decode_event`. Either way the same messages are events, with the same values, and
the rejected ones get the reference's reasons (the differential tests hold the paths to
one another). The engine and the benchmarks read batches through `BatchReader.read`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ragstream.events.decode import decode_event, decode_rejected
from ragstream.events.limits import DEFAULT_LIMITS, Limits
from ragstream.events.msgspec_decode import fast_decode_many
from ragstream.events.reasons import DecodeError, IndexedDecodeError
from ragstream.events.scanner import Scanned, bounds_of, scan_retrievals
from ragstream.events.structs import DecodedEvent

__all__ = ["BatchRead", "BatchReader", "Read"]

Read = DecodedEvent | Scanned
"""A decoded event, or a retrieval event read by the compiled scanner."""


@dataclass(slots=True)
class BatchRead:
    """What `BatchReader.read` made of a batch."""

    events: list[Read]
    """The events, in input order."""
    kept: list[int] | None = None
    """The input position of each event; None when every value is an event."""
    errors: list[IndexedDecodeError] = field(default_factory=list)
    """The values that are not events, with their position and reason."""


class BatchReader:
    """Reads batches of message values (see the module docstring)."""

    def __init__(
        self,
        limits: Limits = DEFAULT_LIMITS,
        *,
        scan: bool = True,
        top: int = 10,
        label_keys: Sequence[str] | None = None,
        graded: bool = False,
    ) -> None:
        """`scan`: use the compiled scanner when it is built; `top`: how many leading
        document times a scanned record keeps; `label_keys`: the label keys whose values
        scanned records keep, as a tuple in this order (None: none; validated either way);
        `graded`: scanned records of labeled events carry grades and times for the kernels
        instead of their ids and labels (see `scan_retrievals`)."""
        self.limits = limits
        self.scan = scan
        self.top = top
        self.label_keys = None if label_keys is None else tuple(label_keys)
        self.graded = graded
        self._fast = limits is DEFAULT_LIMITS or limits.is_default
        """The schema's caps: msgspec (and the scanner) alone decide what is valid."""
        self._bounds = bounds_of(limits)

    def read(self, values: Sequence[bytes | bytearray | None]) -> BatchRead:
        """Every value as an event or a counted reason; never raises on bad input."""
        limits = self.limits
        decoded: list[Read | None]
        if self._fast and self.scan:
            decoded = scan_retrievals(  # type: ignore[assignment]
                values,
                self._bounds,
                top=self.top,
                label_keys=self.label_keys,
                graded=self.graded,
            )
            declined = [i for i, read in enumerate(decoded) if read is None]
            if declined:
                rest = fast_decode_many([values[i] for i in declined], limits.max_message_bytes)
                for i, event in zip(declined, rest, strict=True):
                    decoded[i] = event
        elif self._fast:
            decoded = fast_decode_many(values, limits.max_message_bytes)  # type: ignore[assignment]
        else:
            decoded = [None] * len(values)
        if decoded.count(None) == 0:  # the usual batch: every message valid for msgspec
            return BatchRead(decoded)  # type: ignore[arg-type]
        decode = decode_rejected if self._fast else decode_event
        out = BatchRead([], [])
        assert out.kept is not None
        for index, (value, read) in enumerate(zip(values, decoded, strict=True)):
            if read is None:  # the reference names the reason (or accepts it after all)
                try:
                    read = decode(value, limits)
                except DecodeError as error:
                    out.errors.append(IndexedDecodeError(index, error))
                    continue
            out.events.append(read)
            out.kept.append(index)
        return out
