"""One sliding window: a ring of event-time buckets, for one series or many side by side.

Bucket ``k = floor(t / w)`` covers ``[k·w, (k+1)·w)`` with ``w = window / buckets``. With
``k_now = floor(now / w)``, the window covers the buckets that *end after* ``now - window``:
``k_now - buckets ≤ k``, i.e. ``buckets + 1`` buckets up to now (the oldest one partly
outside the window), plus up to ``ceil(horizon / w)`` buckets ahead of now for rows that are
slightly in the future. So a read includes every row younger than the window and never one
older than ``window + w``.

The ring position ``k_now`` only moves forward (the largest ``now`` seen) and is shared by
every series of the ring: slot ``k mod slots`` holds bucket ``k`` for all of them. When the
position moves, buckets that leave the live range are subtracted from a running total per
series and cleared, so a read of every series at once is O(series), not O(series x slots).

State arrays are ``(slots, series, ...)`` (the *planes*, one per bucket) plus
``(series, ...)`` (the running totals of the live buckets). A batch of rows of any number of
series is applied with a fixed number of numpy calls.
"""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from ragstream.windows._scatter import (
    Digest,
    add_into,
    as_rows,
    as_times,
    decay_to,
    decayed_sums,
    group,
    plain_sums,
)
from ragstream.windows.spec import F64, I64, WindowSpec

__all__ = ["SlidingWindow", "prepare_rows", "settle", "state_layout"]

_NO_KEY = np.iinfo(np.int64).min
_NAMES = ("rows", "count", "sum", "sum_sq", "hist", "dcount", "dsum")
_SETTLE = (("count", ("sum", "sum_sq")), ("dcount", ("dsum",)))
_FIELDS = {"dcount": "decayed_count", "dsum": "decayed_sum"}
"""Snapshot field names that differ from the state names."""
State = dict[str, npt.NDArray[Any]]


def prepare_rows(
    spec: WindowSpec,
    times: npt.ArrayLike,
    values: npt.ArrayLike,
    decayed: npt.ArrayLike | None,
) -> tuple[F64, Digest, Digest | None]:
    """Check and digest a batch once for all windows: times ``(n,)``, plain rows
    ``(n, C)``, decayed rows ``(n, H·D)`` (``None`` when absent)."""
    plain = as_rows(values, len(spec.columns), "values")
    digest = None
    if decayed is not None and spec.decayed_width:
        drows = as_rows(decayed, spec.decayed_width, "decayed values")
        if drows.shape[0] != plain.shape[0]:
            raise ValueError("values and decayed values must have the same number of rows")
        digest = Digest.of(drows)
    return as_times(times, plain.shape[0]), Digest.of(plain, spec.edges(), spec.hist_index), digest


def state_layout(spec: WindowSpec) -> dict[str, tuple[tuple[int, ...], type[np.generic]]]:
    """Per state name: the shape of one series' value in one bucket, and the bucket dtype."""
    c, d = len(spec.columns), spec.decayed_width
    return {
        "rows": ((), np.int64),
        "count": ((c,), np.int64),
        "sum": ((c,), np.float64),
        "sum_sq": ((c,), np.float64),
        "hist": ((len(spec.histogrammed), spec.bins), np.int32),  # int32: half the memory
        "dcount": ((d,), np.int64),
        "dsum": ((d,), np.float64),
    }


def settle(state: State, index: Any) -> None:
    """Exact zeros for sums whose count is back to zero, at ``index`` of each array."""
    for counts, sums in _SETTLE:
        empty = state[counts][index] == 0
        if empty.any():
            for name in sums:
                part = state[name][index]
                part[empty] = 0.0
                state[name][index] = part


class SlidingWindow:
    """A ring of ``buckets + 1 + ceil(horizon / w)`` time buckets for one window length,
    holding ``capacity`` series (one until :meth:`reserve`)."""

    def __init__(self, spec: WindowSpec, length: float) -> None:
        self.spec = spec
        self.length = float(length)
        self.width = spec.width(self.length)
        self.ahead = math.ceil(spec.horizon / self.width)
        self.slots = spec.buckets + 1 + self.ahead
        self.rates = spec.rates
        self.capacity = 1
        self._top = _NO_KEY
        self.landmark = 0.0
        self._moved = 0
        self._keys = np.full(self.slots, _NO_KEY, dtype=np.int64)
        layout = state_layout(spec)
        self._planes: State = {
            n: np.zeros((self.slots, self.capacity, *s), dtype=t) for n, (s, t) in layout.items()
        }
        self._totals: State = {
            n: np.zeros((self.capacity, *s), dtype=np.int64 if n == "hist" else t)
            for n, (s, t) in layout.items()
        }

    def reserve(self, capacity: int) -> None:
        """Make room for series ids below ``capacity`` (arrays are copied once)."""
        if capacity <= self.capacity:
            return
        for state, axis in ((self._planes, 1), (self._totals, 0)):
            for name, old in state.items():
                shape = list(old.shape)
                shape[axis] = capacity
                new = np.zeros(shape, dtype=old.dtype)
                new[(slice(None),) * axis + (slice(0, self.capacity),)] = old
                state[name] = new
        self.capacity = capacity

    # -- geometry --------------------------------------------------------------------------

    def position(self, now: float) -> int:
        """The ring position for a read or write at ``now`` (never behind an earlier one)."""
        return max(self._top, math.floor(now / self.width))

    def _live_keys(self, top: int) -> npt.NDArray[np.bool_]:
        if top == _NO_KEY:
            return np.zeros(self.slots, dtype=np.bool_)
        return (self._keys >= top - self.spec.buckets) & (self._keys <= top + self.ahead)

    def _advance(self, top: int) -> None:
        """Move the ring to ``top``: buckets that leave the live range leave the totals."""
        old = self._top
        if top <= old:
            return
        self._top = top
        if old == _NO_KEY:
            return
        gone = (self._keys != _NO_KEY) & (self._keys < top - self.spec.buckets)
        if gone.any():
            idx = np.flatnonzero(gone)
            everything = bool((self._keys[~gone] == _NO_KEY).all())
            for name, plane in self._planes.items():
                if not everything:
                    self._totals[name] -= plane[idx].sum(axis=0)
                plane[idx] = 0
            self._keys[idx] = _NO_KEY
            if everything:
                for total in self._totals.values():
                    total[...] = 0
            else:
                settle(self._totals, slice(None))
        self._moved += top - old
        if self._moved >= self.slots:
            self.refresh()

    def refresh(self) -> None:
        """Recompute the running totals from the buckets (bounds float drift in the sums;
        done whenever the ring has moved by its own length)."""
        for name, plane in self._planes.items():
            self._totals[name][...] = plane.sum(axis=0)
        self._moved = 0

    # -- updates ---------------------------------------------------------------------------

    def apply_rows(
        self,
        now: float,
        stamps: F64,
        plain: Digest,
        drows: Digest | None,
        sign: int,
        series: I64,
    ) -> npt.NDArray[np.bool_]:
        """Add (``sign=1``) or retract (``-1``) rows checked by :func:`prepare_rows`, stamped
        at ``stamps``, row i into series ``series[i]`` (below :attr:`capacity`); returns
        which rows landed (were still live, for a retract).
        Rows whose bucket is no longer live are skipped; a row further ahead than the
        horizon moves the ring forward to make room for it."""
        spec = self.spec
        keys = np.floor(stamps / self.width).astype(np.int64)
        top = max(self._top, math.floor(now / self.width))
        if keys.size:
            top = max(top, int(keys.max()) - self.ahead)
        self._advance(top)
        live = keys >= top - spec.buckets
        if not keys.size or not live.any():
            return live
        if not live.all():
            keys, stamps, plain = keys[live], stamps[live], plain.take(live)
            drows = None if drows is None else drows.take(live)
            series = series[live]
        pos = keys % self.slots
        self._keys[pos] = keys
        # series-major cell keys, so the cells of one series are adjacent (ascending)
        cell, local = group(series * self.slots + pos, self.slots * self.capacity)
        owner = cell // self.slots
        distinct = (cell % self.slots) * self.capacity + owner  # index into the planes
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        owners = owner[starts]
        m = distinct.size
        flat = {
            n: p.reshape(self.slots * self.capacity, *p.shape[2:]) for n, p in self._planes.items()
        }
        sums = plain_sums(local, m, plain, spec.bins)
        updates: list[tuple[str, npt.NDArray[Any]]] = [
            ("rows", sums.rows),
            ("count", sums.count),
            ("sum", sums.total),
            ("sum_sq", sums.total_sq),
            ("hist", sums.hist),
        ]
        if drows is not None:
            newest = float(stamps.max())
            if float(self.rates.max()) * (newest - self.landmark) > spec.max_exponent:
                self.rebase(newest)
            dcount, dsum = decayed_sums(local, m, stamps, drows, self.rates, self.landmark)
            updates += [("dcount", dcount), ("dsum", dsum)]
        for name, update in updates:
            add_into(flat[name], distinct, update, sign)
            per_series = update if starts.size == owner.size else np.add.reduceat(update, starts)
            add_into(self._totals[name], owners, per_series, sign)
        if sign < 0:
            settle(flat, distinct)
            settle(self._totals, owners)
        return live

    def rebase(self, landmark: float) -> None:
        """Move the decay landmark forward; reads are unchanged up to one rounding."""
        if landmark < self.landmark:
            raise ValueError("the landmark only moves forward")
        shift = landmark - self.landmark
        for state in (self._planes, self._totals):  # in place: callers may hold views
            state["dsum"][...] = decay_to(state["dsum"], self.rates, shift)
        self.landmark = float(landmark)

    def clear(self, series: npt.ArrayLike) -> None:
        """Forget everything of the given series (their ids can be reused)."""
        index = np.asarray(series, dtype=np.int64)
        for name in _NAMES:
            self._planes[name][:, index] = 0
            self._totals[name][index] = 0

    # -- reads -----------------------------------------------------------------------------

    def bucket_sums(
        self, now: float, series: int, names: tuple[str, ...], until: float | None = None
    ) -> State:
        """One series' sums over its buckets live at ``now`` (up to ``until``, as in
        :meth:`running_sums`), added in slot order: they depend only on what the buckets
        hold, not on the order of the additions and retractions that filled them (the same
        after a restore from :meth:`state`). O(slots) per series."""
        keep = self._live_keys(self.position(now))
        if until is not None:
            keep &= self._keys <= math.floor(until / self.width)
        idx = np.flatnonzero(keep)
        p = self._planes
        return {
            n: p[n][idx, series].sum(axis=0, dtype=np.int64 if n == "hist" else None) for n in names
        }

    def running_sums(self, now: float, names: tuple[str, ...], until: float | None = None) -> State:
        """Every series' sums over the buckets live at ``now``, arrays ``(capacity, ...)``
        (``dsum`` landmark-relative), from the running totals less the buckets that ``now``
        has moved out, without moving the ring: O(series), and their last bits depend on
        the order of additions, retractions and refreshes. Sums are exactly 0 where their
        count is. Do not modify the arrays.

        ``until``: only the buckets that start at or before ``until`` (those of rows
        stamped up to ``until``, bucket-granular): the window less its newest part."""
        top = self.position(now)
        gone = (self._keys != _NO_KEY) & (self._keys < top - self.spec.buckets)
        if until is not None:
            gone |= (self._keys != _NO_KEY) & (self._keys > math.floor(until / self.width))
        if self._top == _NO_KEY or (top == self._top and until is None) or not gone.any():
            return {n: self._totals[n] for n in names}
        if (self._keys[~gone] == _NO_KEY).all():
            return {n: np.zeros_like(self._totals[n]) for n in names}
        idx = np.flatnonzero(gone)
        out = {n: self._totals[n] - self._planes[n][idx].sum(axis=0) for n in names}
        for counts, sums in _SETTLE:
            for name in sums:
                if name in out:
                    out[name][out[counts] == 0] = 0.0
        return out

    def empty_series(self, now: float) -> npt.NDArray[np.bool_]:
        """Per series: nothing is held in a live bucket at ``now``."""
        t = self.running_sums(now, ("rows", "count", "dcount"))
        empty: npt.NDArray[np.bool_] = (
            (t["rows"] == 0) & ~t["count"].any(axis=1) & ~t["dcount"].any(axis=1)
        )
        return empty

    @property
    def nbytes(self) -> int:
        """Bytes held by the ring's arrays (fixed by the capacity, never by the events)."""
        arrays = (self._keys, *self._planes.values(), *self._totals.values())
        return sum(int(a.nbytes) for a in arrays)

    # -- merging ---------------------------------------------------------------------------

    def absorb(self, other: SlidingWindow, series: npt.ArrayLike) -> None:
        """Add ``other``'s live buckets into this ring, in place: other's series ``i`` into
        this ring's series ``series[i]`` (distinct ids)."""
        if other.spec != self.spec or other.length != self.length:
            raise ValueError("cannot merge windows of different specs or lengths")
        target = np.asarray(series, dtype=np.int64).reshape(-1)
        if target.size != other.capacity:
            raise ValueError("one target series per series of the other ring")
        self.reserve(int(target.max()) + 1)
        self._advance(max(self._top, other._top))
        if self.spec.decayed_width and other.landmark > self.landmark:
            self.rebase(other.landmark)
        # Live keys of both rings lie in one range as long as the ring, so equal slots hold
        # equal keys (or this ring's slot is empty).
        idx = np.flatnonzero(other._live_keys(self._top))
        if not idx.size:
            return
        self._keys[idx] = other._keys[idx]
        shift = self.landmark - other.landmark
        cells = np.ix_(idx, target)
        for name in _NAMES:
            incoming = other._planes[name][idx]
            if name == "dsum":
                incoming = decay_to(incoming, self.rates, shift)
            self._planes[name][cells] += incoming
            self._totals[name][target] += incoming.sum(axis=0)
        settle(self._planes, cells)
        settle(self._totals, target)

    # -- persistence -----------------------------------------------------------------------

    def state(self, series: int = 0) -> dict[str, Any]:
        """JSON-friendly state of one series without the spec: its live, non-empty buckets
        only, in ascending order."""
        keep = np.flatnonzero(self._live_keys(self._top))
        p = self._planes
        nonempty = (p["rows"][keep, series] != 0) | (p["hist"][keep, series] != 0).any(axis=(1, 2))
        for name in ("count", "dcount"):
            nonempty |= (p[name][keep, series] != 0).any(axis=1)
        keep = keep[nonempty]
        keep = keep[np.argsort(self._keys[keep])]
        return {
            "length": self.length,
            "top": None if self._top == _NO_KEY else self._top,
            "landmark": self.landmark,
            "keys": self._keys[keep].tolist(),
            **{_FIELDS.get(n, n): p[n][keep, series].tolist() for n in _NAMES},
        }

    @classmethod
    def from_state(cls, spec: WindowSpec, state: dict[str, Any]) -> Self:
        """Inverse of :meth:`state`: a one-series ring."""
        ring = cls(spec, float(state["length"]))
        ring._top = _NO_KEY if state["top"] is None else int(state["top"])
        ring.landmark = float(state["landmark"])
        keys = np.asarray(state["keys"], dtype=np.int64)
        idx = keys % ring.slots
        ring._keys[idx] = keys
        for name, (shape, dtype) in state_layout(spec).items():
            # (len(keys), *shape), not (-1, *shape): a plane of size 0 (a spec without
            # decayed metrics, e.g. the judge's windows) has no row count to infer
            data = np.asarray(state[_FIELDS.get(name, name)], dtype=dtype).reshape(
                len(keys), *shape
            )
            ring._planes[name][idx, 0] = data
        ring.refresh()
        return ring
