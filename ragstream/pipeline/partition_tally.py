"""One partition's cumulative counts: what the agent exports as counters and final-query
histograms, kept per input partition so that they move with it.

A partition's tally is part of its state (`ragstream.pipeline.partitions`): it is saved in
every snapshot with the input offsets it covers, adopted by the partition's next owner, and
restored after a crash, so that every event is counted once in every exported number
whichever replica consumed it and however often a replica died (docs/reliability.md).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragstream.pipeline.exemplars import Exemplars, by_labelset, merge_exemplars, snapshot_exemplars
from ragstream.windows import Aggregate

__all__ = ["PartitionTally", "merge_exemplars_of", "sum_counters"]

_K = TypeVar("_K")


@dataclass(slots=True)
class PartitionTally:
    """The cumulative counts of one input partition."""

    events: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(type, outcome) -> count; outcome is processed, invalid, late or duplicate."""
    invalid: Counter[str] = field(default_factory=Counter)
    """Invalid messages by reason."""
    clamped: Counter[str] = field(default_factory=Counter)
    """Events from the future, clamped to t_now, by type."""
    collapsed: Counter[str] = field(default_factory=Counter)
    """Events whose value of a label key was past the cap (exported as `other`), by key."""
    last_event_time: dict[str, float] = field(default_factory=dict)
    """Event time of the newest event seen, by type."""
    final: dict[tuple[str, ...], Aggregate] = field(default_factory=dict)
    """Per label set: every final query's plain metrics (cumulative histograms)."""
    exemplars: dict[tuple[str, ...], Exemplars] = field(default_factory=dict)
    """Per label set: the newest final query of each histogram bucket
    (`ragstream.pipeline.exemplars`)."""

    def seen(self, latest: Mapping[str, float]) -> None:
        """Move the newest event times up to `latest` (type -> time)."""
        last = self.last_event_time
        for name, ts in latest.items():
            if ts > last.get(name, -math.inf):
                last[name] = ts

    def snapshot(self) -> dict[str, Any]:
        """JSON-friendly; `restore` reads it back."""
        return {
            "events": [[t, o, n] for (t, o), n in sorted(self.events.items())],
            "invalid": dict(sorted(self.invalid.items())),
            "clamped": dict(sorted(self.clamped.items())),
            "collapsed": dict(sorted(self.collapsed.items())),
            "last_event_time": dict(sorted(self.last_event_time.items())),
            "final": [[list(k), a.snapshot()] for k, a in sorted(self.final.items())],
            "exemplars": [
                [list(k), snapshot_exemplars(e)] for k, e in sorted(self.exemplars.items()) if e
            ],
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any] | None) -> PartitionTally:
        """A tally from `snapshot` output (None: an empty one)."""
        if data is None:
            return cls()
        return cls(
            events=Counter({(str(t), str(o)): int(n) for t, o, n in data["events"]}),
            invalid=Counter({str(k): int(n) for k, n in data["invalid"].items()}),
            clamped=Counter({str(k): int(n) for k, n in data["clamped"].items()}),
            collapsed=Counter({str(k): int(n) for k, n in data.get("collapsed", {}).items()}),
            last_event_time={str(k): float(v) for k, v in data["last_event_time"].items()},
            final={tuple(k): Aggregate.restore(a) for k, a in data["final"]},
            exemplars=by_labelset(data),
        )


def sum_counters(counters: Iterable[Mapping[_K, int]]) -> Counter[_K]:
    """The sum of several counters (a fresh one)."""
    total: Counter[_K] = Counter()
    for counter in counters:
        total.update(counter)
    return total


def merge_exemplars_of(tallies: Sequence[PartitionTally]) -> dict[tuple[str, ...], Exemplars]:
    """Per label set: the newest exemplar of each bucket over several partitions (fresh
    maps)."""
    parts: dict[tuple[str, ...], list[Exemplars]] = {}
    for tally in tallies:
        for labelset, held in tally.exemplars.items():
            if held:
                parts.setdefault(labelset, []).append(held)
    return {labelset: merge_exemplars(found) for labelset, found in parts.items()}
