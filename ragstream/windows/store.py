"""Windows kept per Kafka partition and label set, merged across partitions when read.

State is keyed ``(partition, labelset) -> WindowSet``, so a partition's state can be
dropped when the partition is revoked, exported, and imported by the replica that gets it.
Memory is ``series x windows x slots x columns``: fixed per series, never per event. Label
sets whose windows are all empty can be pruned.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from ragstream.windows._kernels import as_rows
from ragstream.windows.spec import WindowSpec
from ragstream.windows.windowset import WindowRead, WindowSet

__all__ = ["LabelSet", "WindowStore"]

LabelSet = tuple[str, ...]
"""Label values in the order of the configured label keys."""


class WindowStore:
    """``(partition, labelset) -> WindowSet``, with reads merged across partitions."""

    def __init__(self, spec: WindowSpec) -> None:
        self.spec = spec
        self._parts: dict[int, dict[LabelSet, WindowSet]] = {}
        self.expired_retracts = 0
        """Rows whose retract found their bucket rotated out of every window."""

    # -- updates ---------------------------------------------------------------------------

    def add(
        self,
        partition: int,
        labels: Sequence[str],
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Add rows of one series; returns which rows landed in at least one window."""
        series = self._parts.setdefault(partition, {})
        key = tuple(labels)
        windows = series.get(key)
        if windows is None:
            windows = series[key] = WindowSet(self.spec)
        return windows.add(now, times, values, decayed)

    def retract(
        self,
        partition: int,
        labels: Sequence[str],
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Retract rows of one series by their original times; ``False`` rows had rotated
        out of every window (a no-op, counted in :attr:`expired_retracts`)."""
        windows = self._parts.get(partition, {}).get(tuple(labels))
        if windows is None:
            n = as_rows(values, len(self.spec.columns), "values").shape[0]
            done = np.zeros(n, dtype=np.bool_)
        else:
            done = windows.retract(now, times, values, decayed)
        self.expired_retracts += int((~done).sum())
        return done

    # -- reads -----------------------------------------------------------------------------

    def read(self, now: float, labels: Sequence[str]) -> dict[str, WindowRead]:
        """One label set's windows at ``now``, merged across partitions (empty if unseen)."""
        key = tuple(labels)
        found = [series[key] for series in self._parts.values() if key in series]
        return self._merge_reads(now, found)

    def read_all(self, now: float) -> dict[LabelSet, dict[str, WindowRead]]:
        """Every label set's windows at ``now``, merged across partitions."""
        return {key: self.read(now, key) for key in self.labelsets()}

    def _merge_reads(self, now: float, found: Iterable[WindowSet]) -> dict[str, WindowRead]:
        merged: dict[str, WindowRead] | None = None
        for windows in found:
            reads = windows.read(now)
            merged = reads if merged is None else {n: merged[n] + r for n, r in reads.items()}
        return WindowSet(self.spec).read(now) if merged is None else merged

    def labelsets(self) -> list[LabelSet]:
        """Every label set held by any partition, sorted."""
        return sorted({key for series in self._parts.values() for key in series})

    def partitions(self) -> list[int]:
        """Partitions holding state, ascending."""
        return sorted(self._parts)

    def __len__(self) -> int:
        """Number of series ``(partition, labelset)``."""
        return sum(len(series) for series in self._parts.values())

    @property
    def nbytes(self) -> int:
        """Bytes held by all windows: ``series x per-series bytes``."""
        return sum(w.nbytes for series in self._parts.values() for w in series.values())

    # -- housekeeping ----------------------------------------------------------------------

    def prune(self, now: float) -> int:
        """Drop series whose windows are all empty at ``now``; returns how many."""
        dropped = 0
        for partition in list(self._parts):
            series = self._parts[partition]
            for key in [k for k, w in series.items() if w.is_empty(now)]:
                del series[key]
                dropped += 1
            if not series:
                del self._parts[partition]
        return dropped

    def drop_partition(self, partition: int) -> int:
        """Forget a partition's state (it was revoked); returns the series dropped."""
        return len(self._parts.pop(partition, {}))

    def export_partition(self, partition: int) -> dict[str, Any]:
        """One partition's state, JSON-friendly, for the replica that takes it over."""
        return {
            "version": 1,
            "spec": self.spec.to_dict(),
            "partition": partition,
            "series": self._series_state(self._parts.get(partition, {})),
        }

    def import_partition(self, snapshot: dict[str, Any]) -> int:
        """Merge an exported partition into this store; returns the series imported."""
        if WindowSpec.from_dict(snapshot["spec"]) != self.spec:
            raise ValueError("the exported partition was kept with a different window spec")
        partition = int(snapshot["partition"])
        incoming = self._series_from_state(snapshot["series"])
        series = self._parts.setdefault(partition, {})
        for key, windows in incoming.items():
            if key in series:
                series[key].absorb(windows)
            else:
                series[key] = windows
        return len(incoming)

    # -- persistence -----------------------------------------------------------------------

    def _series_state(self, series: dict[LabelSet, WindowSet]) -> list[dict[str, Any]]:
        return [{"labels": list(k), "windows": series[k].state()} for k in sorted(series)]

    def _series_from_state(self, items: list[dict[str, Any]]) -> dict[LabelSet, WindowSet]:
        return {
            tuple(item["labels"]): WindowSet.from_state(self.spec, item["windows"])
            for item in items
        }

    def snapshot(self) -> dict[str, Any]:
        """JSON-friendly state of every partition."""
        return {
            "version": 1,
            "spec": self.spec.to_dict(),
            "expired_retracts": self.expired_retracts,
            "partitions": [
                {"partition": p, "series": self._series_state(self._parts[p])}
                for p in sorted(self._parts)
            ],
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> Self:
        """Inverse of :meth:`snapshot`."""
        store = cls(WindowSpec.from_dict(snapshot["spec"]))
        store.expired_retracts = int(snapshot["expired_retracts"])
        for part in snapshot["partitions"]:
            store._parts[int(part["partition"])] = store._series_from_state(part["series"])
        return store
