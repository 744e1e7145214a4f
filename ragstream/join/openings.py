"""A run of retrieval events to open in a `LabelJoin`: the engine collects it in this shape
and the join takes it whole, a value per event in each field, cut by `slice`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragstream.events import DecodedRetrieval
from ragstream.events.scanner import Scanned

__all__ = ["Openings"]


@dataclass(slots=True)
class Openings:
    """Retrieval events in arrival order and what the join keeps of each; every field but
    `traces` (None: none) holds one value per event."""

    events: list[Scanned | DecodedRetrieval] = field(default_factory=list)
    """The events: read by the compiled scanner, or decoded where it declined them."""
    labelsets: list[tuple[str, ...]] = field(default_factory=list)
    """Their label sets (the values of the configured label keys; ``()`` without keys)."""
    times: list[float] = field(default_factory=list)
    """Their times on the clock."""
    raws: list[bytes] = field(default_factory=list)
    """Their messages."""
    traces: list[str | None] | None = None
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
