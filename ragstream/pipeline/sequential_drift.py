"""The sequential drift detectors of an engine: Page-Hinkley and ADWIN on the stream of
final per-query values, per metric, label set and partition.

They are fed where queries are finalized (`Engine._advance`), in finalization order, and
each partition's are held by its `PartitionState` (`ragstream.pipeline.partitions`), so
that they move with the partition between replicas (`export` / `adopt` here write and read
them). `SequentialDrift` makes, feeds, writes and reads them. Read per (metric, detector,
label set) over the partitions held here: the largest score, and the alarm when any
partition's detector has one. Detections are counted here, by the engine that saw them:
the count never goes down when a partition leaves and never jumps when one arrives.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragstream.drift import SEQUENTIAL
from ragstream.drift.registry import SequentialDetector as Detector
from ragstream.pipeline.drift_config import DriftConfig

__all__ = ["Held", "SequentialDrift", "SequentialRead"]

_F64 = NDArray[np.float64]
LabelSet = tuple[str, ...]
Held = dict[LabelSet, list[list[Detector]]]
"""One partition's detectors: label set -> [metric][kind]."""
VERSION = 1


@dataclass(frozen=True, slots=True)
class SequentialRead:
    """One (metric, detector, label set) over the partitions held."""

    metric: str
    detector: str
    labelset: LabelSet
    score: float
    """The largest score of the partitions' detectors (1 is the alarm level)."""
    alarm: bool
    """Any partition's detector has its alarm raised."""


class SequentialDrift:
    """Detectors keyed (label set, metric, kind) per partition; see the module docstring."""

    def __init__(
        self,
        config: DriftConfig,
        columns: tuple[int, ...],
        held: Callable[[], Mapping[int, Held]],
    ) -> None:
        """``held``: the detectors each held partition has (its `PartitionState`'s)."""
        self.metrics = tuple(config.metrics)
        self.columns = np.asarray(columns, dtype=np.int64)
        self.kinds = config.sequential()
        self.state_config = config.sequential_state_config()
        self._held = held
        self.detections: Counter[tuple[str, str, LabelSet]] = Counter()
        """(metric, detector, label set) -> detections seen by this engine."""

    @property
    def partitions(self) -> dict[int, Held]:
        """partition -> its detectors, for the held partitions that have any."""
        return {p: held for p, held in self._held().items() if held}

    def __bool__(self) -> bool:
        return bool(self.kinds) and bool(self.metrics)

    def _new(self) -> list[list[Detector]]:
        return [
            [SEQUENTIAL[kind].build(params) for kind, params in self.kinds] for _ in self.metrics
        ]

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, held: Held, labelset: LabelSet, rows: _F64) -> None:
        """Final contribution rows of one partition (``held``, its detectors) and label
        set, in finalization order (NaN values, e.g. of an unlabeled metric, are skipped by
        the detectors)."""
        detectors = held.get(labelset)
        if detectors is None:
            detectors = held[labelset] = self._new()
        # a metric's values contiguous (the detectors' compiled loops read them as they are)
        values = np.ascontiguousarray(rows[:, self.columns].T)
        for m, metric in enumerate(self.metrics):
            column = values[m]
            for (kind, _), detector in zip(self.kinds, detectors[m], strict=True):
                hits = detector.update(column)
                if hits.size:
                    self.detections[(metric, kind, labelset)] += int(hits.size)

    # -- reads -----------------------------------------------------------------------------

    def read(self) -> list[SequentialRead]:
        """Every (metric, detector, label set) held, sorted by label set."""
        merged: dict[tuple[LabelSet, int, int], tuple[float, bool]] = {}
        for held in self.partitions.values():
            for labelset, detectors in held.items():
                for m, row in enumerate(detectors):
                    for k, d in enumerate(row):
                        seen, raised = merged.get((labelset, m, k), (-math.inf, False))
                        merged[(labelset, m, k)] = (max(d.score, seen), d.alarm or raised)
        return [
            SequentialRead(self.metrics[m], self.kinds[k][0], labelset, score, alarm)
            for (labelset, m, k), (score, alarm) in sorted(merged.items())
        ]

    # -- partitions ------------------------------------------------------------------------

    def prune(self, keep: set[tuple[int, LabelSet]]) -> None:
        """Forget the detectors of (partition, label set) pairs not in ``keep`` (the series
        the windows still hold)."""
        for partition, held in self._held().items():
            for labelset in [ls for ls in held if (partition, ls) not in keep]:
                del held[labelset]

    def export(self, held: Held) -> dict[str, Any]:
        """One partition's detectors, JSON-friendly."""
        return {
            "version": VERSION,
            "config": self.state_config,
            "series": [
                {
                    "labels": list(labelset),
                    "detectors": [[d.snapshot() for d in row] for row in held[labelset]],
                }
                for labelset in sorted(held)
            ],
        }

    def adopt(self, data: Mapping[str, Any] | None) -> Held:
        """One partition's detectors from `export` output. With none, or kept with other
        drift settings (metrics, detectors or their parameters), they start afresh
        instead (none); the windows are adopted anyway."""
        held: Held = {}
        if data is None or data.get("version") != VERSION:
            return held
        if data.get("config") != self.state_config:
            return held
        for item in data["series"]:
            rows = item["detectors"]
            if len(rows) != len(self.metrics):
                raise ValueError("the partition's drift state holds other metrics")
            held[tuple(item["labels"])] = [
                [
                    SEQUENTIAL[kind].restore(snapshot)
                    for (kind, _), snapshot in zip(self.kinds, row, strict=True)
                ]
                for row in rows
            ]
        return held

    def snapshot(self) -> list[list[Any]]:
        """The detection counts (the detectors are their partitions', `export`)."""
        return [[m, k, list(ls), n] for (m, k, ls), n in sorted(self.detections.items())]

    def restore(self, data: list[list[Any]]) -> None:
        """Count on from `snapshot` output."""
        self.detections = Counter({(m, k, tuple(ls)): int(n) for m, k, ls, n in data})
