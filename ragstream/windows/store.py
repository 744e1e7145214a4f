"""Windows kept per Kafka partition and label set, merged across partitions when read.

State is keyed ``(partition, labelset) -> series id`` over one :class:`SlidingWindow` per
window length, each holding every series side by side, so a whole batch of many series is
applied with a fixed number of numpy calls, and a read returns every label set (or one) at
once as a :class:`WindowTotals` (:meth:`WindowStore.read`). A
partition's state can be dropped when the partition is revoked, exported, and imported by
the replica that gets it. Memory is ``series x windows x slots x columns``: fixed per
series, never per event. Label sets whose windows are all empty can be pruned.

All series share one ring position per window length: the store follows one clock.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ragstream.windows._scatter import as_rows, decay_to
from ragstream.windows.sliding_window import SlidingWindow, prepare_rows, settle, state_layout
from ragstream.windows.spec import I64, WindowSpec
from ragstream.windows.totals import LabelSet, WindowTotals

__all__ = ["SeriesKey", "WindowStore"]

SeriesKey = tuple[int, LabelSet]
"""``(partition, labelset)``: one series."""

_GROWTH = 8


class WindowStore:
    """``(partition, labelset) -> series``, with reads merged across partitions."""

    def __init__(self, spec: WindowSpec) -> None:
        self.spec = spec
        self.rings = [SlidingWindow(spec, length) for length in spec.windows]
        """One ring per window length, in the order of ``spec.windows``."""
        self._ids: dict[int, dict[LabelSet, int]] = {}
        self._free: list[int] = []
        self._next = 0
        self._layout: tuple[list[LabelSet], I64, I64] | None = None
        """Cached for whole-store reads: label sets, series ids by label set, group starts."""
        self.expired_retracts = 0
        """Rows whose retract found their bucket rotated out of every window."""

    # -- series ids ------------------------------------------------------------------------

    def _id(self, partition: int, labels: Sequence[str], create: bool) -> int:
        """The series id of ``(partition, labels)``; -1 when unknown and not created."""
        key = tuple(labels)
        series = self._ids.get(partition)
        if series is not None and key in series:
            return series[key]
        if not create:
            return -1
        if self._free:
            sid = self._free.pop()
        else:
            sid = self._next
            self._next += 1
            capacity = self.capacity
            if sid >= capacity:
                self._reserve(max(sid + 1, capacity + max(_GROWTH, capacity // 4)))
        self._ids.setdefault(partition, {})[key] = sid
        self._layout = None
        return sid

    def _release(self, partition: int, keys: Sequence[LabelSet]) -> None:
        series = self._ids[partition]
        sids = [series.pop(k) for k in keys]
        self._layout = None
        if sids:
            for ring in self.rings:
                ring.clear(sids)
            self._free.extend(sids)
        if not series:
            del self._ids[partition]

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
        sid = self._id(partition, labels, create=True)
        return self._apply(now, times, values, decayed, 1, np.asarray([sid]))

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
        n = as_rows(values, len(self.spec.columns), "values").shape[0]
        return self.retract_many(
            now, [(partition, tuple(labels))], np.zeros(n), times, values, decayed
        )

    def add_many(
        self,
        now: float,
        series: Sequence[SeriesKey],
        index: npt.ArrayLike,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Add rows of many series at once: row i belongs to ``series[index[i]]``. Equal to
        :meth:`add` per series, with a fixed number of numpy calls per window whatever the
        number of series. Returns which rows landed in at least one window."""
        rows = _index(index, len(series))
        if not rows.size:  # like add per series: no rows, no series, no call
            return np.zeros(0, dtype=np.bool_)
        ids = np.full(len(series), -1, dtype=np.int64)
        for s in np.unique(rows).tolist():  # only the series that get rows
            ids[s] = self._id(series[s][0], series[s][1], create=True)
        return self._apply(now, times, values, decayed, 1, ids[rows])

    def retract_many(
        self,
        now: float,
        series: Sequence[SeriesKey],
        index: npt.ArrayLike,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Retract rows of many series at once (row i of ``series[index[i]]``); equal to
        :meth:`retract` per series. ``False`` rows were no-ops (counted)."""
        ids = np.asarray([self._id(p, labels, create=False) for p, labels in series], np.int64)
        rows = ids[_index(index, len(series))]
        if not rows.size:
            return np.zeros(0, dtype=np.bool_)
        known = rows >= 0
        if known.all():
            done = self._apply(now, times, values, decayed, -1, rows)
        else:
            done = np.zeros(rows.size, dtype=np.bool_)
            if known.any():
                plain = as_rows(values, len(self.spec.columns), "values")
                drows = None
                if decayed is not None and self.spec.decayed_width:
                    drows = as_rows(decayed, self.spec.decayed_width, "decayed values")[known]
                stamps = np.broadcast_to(np.asarray(times, dtype=np.float64), rows.shape)
                done[known] = self._apply(now, stamps[known], plain[known], drows, -1, rows[known])
        self.expired_retracts += int((~done).sum())
        return done

    def _apply(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None,
        sign: int,
        ids: I64,
    ) -> npt.NDArray[np.bool_]:
        """Add (``sign=1``) or retract (``-1``) row i into series ``ids[i]`` (one id: every
        row) of every ring; returns which rows landed in (were live in) at least one."""
        stamps, plain, drows = prepare_rows(self.spec, times, values, decayed)
        if ids.size == 1 and stamps.size != 1:
            ids = np.full(stamps.size, int(ids[0]), dtype=np.int64)
        if ids.shape != stamps.shape:
            raise ValueError(f"expected {stamps.size} series ids, got shape {ids.shape}")
        landed = np.zeros(stamps.size, dtype=np.bool_)
        for ring in self.rings:
            landed |= ring.apply_rows(now, stamps, plain, drows, sign, ids)
        return landed

    def _reserve(self, capacity: int) -> None:
        for ring in self.rings:
            ring.reserve(capacity)

    # -- reads -----------------------------------------------------------------------------

    def read(
        self,
        now: float,
        labels: Sequence[str] | None = None,
        *,
        exact: bool = False,
        until: float | None = None,
        histograms: bool = False,
        windows: Collection[int] | None = None,
    ) -> WindowTotals:
        """Every label set's windows at ``now`` (``labels``: that one only, zero if unseen)
        merged across partitions, as arrays.

        Two summations, equal up to float rounding (`tests/windows/test_store.py` shows where
        they differ): ``exact=False`` reads the rings' running totals, O(series x columns),
        for scrapes and drift; ``exact=True`` adds up each series' live buckets, then the
        partitions in the order they came, so the bits depend only on what the buckets hold
        and are the same after a crash and a resume from a snapshot (for reports and the
        judge's results). ``until``: each window less its buckets that start after
        ``until`` (e.g. the last minutes, whose late labels have not all arrived yet);
        ``histograms``: the merged histograms too (`WindowTotals.histograms`);
        ``windows``: only these windows (by position) are read, the others stay zero.
        """
        spec = self.spec
        labelsets, sids, starts = self._series_layout()
        if labels is not None:  # that label set's run of series ids, or none
            key = tuple(labels)
            held = key in labelsets
            i = labelsets.index(key) if held else 0
            ends = [*starts.tolist(), sids.size]
            sids = sids[ends[i] : ends[i + 1]] if held else sids[:0]
            labelsets, starts = [key], np.zeros(1, dtype=np.int64)
        names: tuple[str, ...] = ("rows", "count", "sum", "sum_sq", "dcount", "dsum")
        names = (*names, "hist") if histograms else names
        layout = state_layout(spec)
        out = {
            n: np.zeros(
                (len(labelsets), len(spec.windows), *layout[n][0]),
                np.int64 if n == "hist" else layout[n][1],
            )
            for n in names
        }
        dtotal = np.zeros_like(out["dsum"])
        for j, ring in enumerate(self.rings if sids.size else ()):
            if windows is not None and j not in windows:
                continue
            if exact:
                sums = self._bucket_sums(ring, now, labelsets, names, until)
            else:
                t = ring.running_sums(now, names, until)
                alone = starts.size == sids.size  # one partition per label set: no merging
                sums = {
                    n: t[n][sids] if alone else np.add.reduceat(t[n][sids], starts) for n in names
                }
            for n in names:
                out[n][:, j] = sums[n]
            # per-series sums are exactly 0 where empty, so merged ones are too
            dtotal[:, j] = decay_to(sums["dsum"], ring.rates, now - ring.landmark)
        return WindowTotals(
            spec,
            now,
            labelsets,
            out["rows"],
            out["count"],
            out["sum"],
            out["sum_sq"],
            out["dcount"],
            dtotal,
            out.get("hist"),
        )

    def _bucket_sums(
        self,
        ring: SlidingWindow,
        now: float,
        labelsets: list[LabelSet],
        names: tuple[str, ...],
        until: float | None,
    ) -> dict[str, npt.NDArray[Any]]:
        """Per label set: the bucket sums of its series, added partition by partition in
        the order the partitions came (:meth:`read` with ``exact``)."""
        rows: list[dict[str, npt.NDArray[Any]]] = []
        for key in labelsets:
            merged: dict[str, npt.NDArray[Any]] | None = None
            for series in self._ids.values():
                if key in series:
                    part = ring.bucket_sums(now, series[key], names, until)
                    merged = part if merged is None else {n: merged[n] + part[n] for n in names}
            assert merged is not None  # a label set read is held by a partition
            settle(merged, slice(None))
            rows.append(merged)
        return {n: np.stack([r[n] for r in rows]) for n in names}

    def _series_layout(self) -> tuple[list[LabelSet], I64, I64]:
        """Label sets (sorted), series ids ordered by label set, and where each label set's
        run of ids starts; recomputed only when series come or go."""
        if self._layout is None:
            labelsets = self.labelsets()
            where = {key: i for i, key in enumerate(labelsets)}
            pairs = sorted((where[k], sid) for s in self._ids.values() for k, sid in s.items())
            sids = np.asarray([sid for _, sid in pairs], dtype=np.int64)
            owner = np.asarray([o for o, _ in pairs], dtype=np.int64)
            starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if pairs else owner
            self._layout = (labelsets, sids, starts)
        return self._layout

    def series(self) -> list[SeriesKey]:
        """Every series ``(partition, labelset)`` held, sorted."""
        return sorted((p, k) for p, series in self._ids.items() for k in series)

    def labelsets(self) -> list[LabelSet]:
        """Every label set held by any partition, sorted."""
        return sorted({key for series in self._ids.values() for key in series})

    def partitions(self) -> list[int]:
        """Partitions holding state, ascending."""
        return sorted(self._ids)

    def __len__(self) -> int:
        """Number of series ``(partition, labelset)``."""
        return sum(len(series) for series in self._ids.values())

    @property
    def capacity(self) -> int:
        """Series the arrays have room for (grows by a quarter when full, never shrinks;
        ids of dropped series are reused)."""
        return self.rings[0].capacity

    @property
    def nbytes(self) -> int:
        """Bytes held by all windows: ``capacity x spec.series_nbytes()`` plus the rings'
        bucket keys."""
        return sum(ring.nbytes for ring in self.rings)

    # -- housekeeping ----------------------------------------------------------------------

    def prune(self, now: float) -> int:
        """Drop series whose windows are all empty at ``now``; returns how many."""
        if not self._ids:
            return 0
        empty = np.logical_and.reduce([ring.empty_series(now) for ring in self.rings])
        dropped = 0
        for partition in list(self._ids):
            gone = [k for k, sid in self._ids[partition].items() if empty[sid]]
            self._release(partition, gone)
            dropped += len(gone)
        return dropped

    def drop_partition(self, partition: int) -> int:
        """Forget a partition's state (it was revoked); returns the series dropped."""
        if partition not in self._ids:
            return 0
        keys = list(self._ids[partition])
        self._release(partition, keys)
        return len(keys)

    def export_partition(self, partition: int) -> dict[str, Any]:
        """One partition's state, JSON-friendly, for the replica that takes it over (or a
        restart): per series, each ring's `SlidingWindow.state`."""
        series = self._ids.get(partition, {})
        names = self.spec.names
        return {
            "version": 1,
            "spec": self.spec.to_dict(),
            "partition": partition,
            "series": [
                {
                    "labels": list(k),
                    "windows": {
                        n: r.state(series[k]) for n, r in zip(names, self.rings, strict=True)
                    },
                }
                for k in sorted(series)
            ],
        }

    def import_partition(self, snapshot: dict[str, Any]) -> int:
        """Merge an exported partition into this store; returns the series imported."""
        _check_version(snapshot)
        if WindowSpec.from_dict(snapshot["spec"]) != self.spec:
            raise ValueError("the exported partition was kept with a different window spec")
        partition, items = int(snapshot["partition"]), snapshot["series"]
        for item in items:
            sid = self._id(partition, item["labels"], create=True)
            for name, ring in zip(self.spec.names, self.rings, strict=True):
                ring.absorb(SlidingWindow.from_state(self.spec, item["windows"][name]), [sid])
        return len(items)


def _index(index: npt.ArrayLike, size: int) -> I64:
    rows = np.asarray(index, dtype=np.int64).reshape(-1)
    if rows.size and (rows.min() < 0 or rows.max() >= size):
        raise ValueError(f"series index out of range [0, {size})")
    return rows


def _check_version(snapshot: dict[str, Any]) -> None:
    if snapshot.get("version") != 1:
        raise ValueError(f"unsupported window snapshot version {snapshot.get('version')!r}")
