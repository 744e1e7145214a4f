"""The sequential drift detectors of an engine: Page-Hinkley and ADWIN on the stream of
final per-query values, per metric, label set and partition.

They are fed where queries are finalized (`Engine._advance`), in finalization order, and
kept per partition so that their state moves with the partition between replicas
(`export` / `adopt`, through `ragstream.pipeline.partitions`). Read per (metric, detector,
label set) over the partitions held here: the largest score, and the alarm when any
partition's detector has one. Detections are counted here, by the engine that saw them:
the count never goes down when a partition leaves and never jumps when one arrives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragstream.drift import SEQUENTIAL
from ragstream.drift.registry import SequentialDetector as Detector
from ragstream.pipeline.drift_config import DriftConfig

__all__ = ["SequentialDrift", "SequentialRead"]

_F64 = NDArray[np.float64]
LabelSet = tuple[str, ...]
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

    def __init__(self, config: DriftConfig, columns: tuple[int, ...]) -> None:
        self.metrics = tuple(config.metrics)
        self.columns = np.asarray(columns, dtype=np.int64)
        self.kinds = config.sequential()
        self.state_config = config.sequential_state_config()
        self.partitions: dict[int, dict[LabelSet, list[list[Detector]]]] = {}
        """partition -> label set -> [metric][kind] detectors."""
        self.detections: Counter[tuple[str, str, LabelSet]] = Counter()
        """(metric, detector, label set) -> detections seen by this engine."""

    def __bool__(self) -> bool:
        return bool(self.kinds) and bool(self.metrics)

    def _new(self) -> list[list[Detector]]:
        return [
            [SEQUENTIAL[kind].build(params) for kind, params in self.kinds] for _ in self.metrics
        ]

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, partition: int, labelset: LabelSet, rows: _F64) -> None:
        """Final contribution rows of one partition and label set, in finalization order
        (NaN values, e.g. of an unlabeled metric, are skipped by the detectors)."""
        held = self.partitions.setdefault(partition, {})
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
                    for k, detector in enumerate(row):
                        key = (labelset, m, k)
                        score, alarm = detector.score, detector.alarm
                        seen = merged.get(key)
                        if seen is not None:
                            score, alarm = max(score, seen[0]), alarm or seen[1]
                        merged[key] = (score, alarm)
        return [
            SequentialRead(self.metrics[m], self.kinds[k][0], labelset, score, alarm)
            for (labelset, m, k), (score, alarm) in sorted(merged.items())
        ]

    # -- partitions ------------------------------------------------------------------------

    def drop(self, partition: int) -> None:
        self.partitions.pop(partition, None)

    def prune(self, keep: set[tuple[int, LabelSet]]) -> None:
        """Forget the detectors of (partition, label set) pairs not in ``keep`` (the series
        the windows still hold)."""
        for partition in list(self.partitions):
            held = self.partitions[partition]
            for labelset in [ls for ls in held if (partition, ls) not in keep]:
                del held[labelset]
            if not held:
                del self.partitions[partition]

    def export(self, partition: int) -> dict[str, Any]:
        """One partition's detectors, JSON-friendly."""
        held = self.partitions.get(partition, {})
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

    def adopt(self, partition: int, data: Mapping[str, Any] | None) -> bool:
        """Replace one partition's detectors by exported ones. With none, or kept with
        other drift settings (metrics, detectors or their parameters), the partition's
        detectors start afresh instead (returns False); the windows are adopted anyway."""
        self.partitions.pop(partition, None)
        if data is None or data.get("version") != VERSION:
            return False
        if data.get("config") != self.state_config:
            return False
        held: dict[LabelSet, list[list[Detector]]] = {}
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
        if held:
            self.partitions[partition] = held
        return True

    def snapshot(self) -> dict[str, Any]:
        return {
            "partitions": {str(p): self.export(p) for p in sorted(self.partitions)},
            "detections": [
                [m, k, list(ls), n] for (m, k, ls), n in sorted(self.detections.items())
            ],
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        for partition, exported in data["partitions"].items():
            self.adopt(int(partition), exported)
        self.detections = Counter({(m, k, tuple(ls)): int(n) for m, k, ls, n in data["detections"]})
