"""A run of retrieval events to open in a `LabelJoin`: one shape for the batch, a value per
event in each field, cut as a whole by `slice`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragstream.events import DecodedRetrieval
from ragstream.events.scanner import Scanned

__all__ = ["Openings"]


@dataclass(frozen=True, slots=True)
class Openings:
    """Retrieval events in arrival order and what the join keeps of each; every field but
    `traces` (None: none) holds one value per event."""

    events: Sequence[Scanned | DecodedRetrieval]
    """The events: read by the compiled scanner, or decoded where it declined them."""
    labelsets: Sequence[tuple[str, ...]]
    """Their label sets (the values of the configured label keys; ``()`` without keys)."""
    times: Sequence[float]
    """Their times on the clock."""
    raws: Sequence[bytes]
    """Their messages."""
    traces: Sequence[str | None] | None
    """Their trace ids (`QueryTable.traces`), or None when the agent keeps none."""

    def __len__(self) -> int:
        return len(self.events)

    def slice(self, start: int, stop: int) -> Openings:
        """The events from ``start`` up to ``stop``, every field cut alike."""
        traces = self.traces
        return Openings(
            self.events[start:stop],
            self.labelsets[start:stop],
            self.times[start:stop],
            self.raws[start:stop],
            None if traces is None else traces[start:stop],
        )
