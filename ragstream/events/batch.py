"""A batch of message values to events, the way the engine reads them (`BatchReader.read`).

With the schema's caps (`Limits.is_default`), the compiled scanner reads the retrieval
events of the common shape into small records (`Scanned`, no Python object per document)
and `decode_event` every message it declines; with tighter limits, or without the scanner,
`decode_event` reads them all. The scanner accepts only what `decode_event` accepts, with
the same values (the tests hold it to that), so counts, reasons and values do not depend on
which read a message; the reasons are `decode_event`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ragstream.events.decode import decode_event
from ragstream.events.limits import DEFAULT_LIMITS, Limits
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
        trace_field: str | None = None,
    ) -> None:
        """`scan`: use the compiled scanner when it is built; `top`: how many leading
        document times a scanned record keeps; `label_keys`: the label keys whose values
        scanned records keep, as a tuple in this order (None: none; validated either way);
        `graded`: scanned records of labeled events carry grades and times for the kernels
        instead of their ids and labels (see `scan_retrievals`); `trace_field`: scanned
        records keep that top-level field's value when it is a trace id
        (`Scanned.trace_id`, `ragstream.events.trace_ids`)."""
        self.limits = limits
        self.scan = scan
        self.top = top
        self.label_keys = None if label_keys is None else tuple(label_keys)
        self.graded = graded
        self.trace_field = trace_field
        self._fast = limits is DEFAULT_LIMITS or limits.is_default
        """The schema's caps: the scanner may read the batch first."""
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
                trace_field=self.trace_field,
            )
        else:
            decoded = [None] * len(values)
        errors: list[IndexedDecodeError] = []
        if None in decoded:  # messages the scanner declined (all, without it)
            for index in [i for i, read in enumerate(decoded) if read is None]:
                try:
                    decoded[index] = decode_event(values[index], limits)
                except DecodeError as error:
                    errors.append(IndexedDecodeError(index, error))
        if not errors:  # the usual batch: every message an event
            return BatchRead(decoded)  # type: ignore[arg-type]
        out = BatchRead([], [], errors)
        assert out.kept is not None
        for index, read in enumerate(decoded):
            if read is not None:
                out.events.append(read)
                out.kept.append(index)
        return out
