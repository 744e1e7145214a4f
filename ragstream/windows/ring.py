"""One sliding window: a ring of event-time buckets holding aggregates and decayed sums.

Bucket ``k = floor(t / w)`` covers ``[k·w, (k+1)·w)`` with ``w = window / buckets``. With
``k_now = floor(now / w)``, the window covers the buckets that *end after* ``now - window``:
``k_now - buckets ≤ k``, i.e. ``buckets + 1`` buckets up to now (the oldest one partly
outside the window), plus up to ``ceil(horizon / w)`` buckets ahead of now for rows that are
slightly in the future. So a read includes every row younger than the window and never one
older than ``window + w``.

The ring position ``k_now`` only moves forward (the largest ``now`` seen). Each slot
remembers its bucket index; a slot whose bucket has left the live range is ignored by reads
and reset when a new bucket reuses it, so rotation costs nothing per tick.
"""

from __future__ import annotations

import math
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from ragstream.windows._kernels import (
    Digest,
    as_rows,
    as_times,
    decay_to,
    group,
    scatter_decayed,
    scatter_plain,
    settle,
)
from ragstream.windows.aggregate import Aggregate
from ragstream.windows.decay import ForwardDecay
from ragstream.windows.spec import F64, I64, WindowSpec

__all__ = ["SlidingWindow", "prepare_rows"]

_NO_KEY = np.iinfo(np.int64).min
_STATE_ARRAYS = ("_rows", "_count", "_sum", "_sum_sq", "_hist", "_dcount", "_dsum")


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
    return as_times(times, plain.shape[0]), Digest.of(plain, spec.edges()), digest


class SlidingWindow:
    """A ring of ``buckets + 1 + ceil(horizon / w)`` time buckets for one window length."""

    def __init__(self, spec: WindowSpec, length: float) -> None:
        self.spec = spec
        self.length = float(length)
        self.width = spec.width(self.length)
        self.ahead = math.ceil(spec.horizon / self.width)
        self.slots = spec.buckets + 1 + self.ahead
        self.rates = spec.rates
        self._top = _NO_KEY
        self.landmark = 0.0
        width, dwidth, slots = len(spec.columns), spec.decayed_width, self.slots
        self._keys = np.full(slots, _NO_KEY, dtype=np.int64)
        self._rows = np.zeros(slots, dtype=np.int64)
        self._count = np.zeros((slots, width), dtype=np.int64)
        self._sum = np.zeros((slots, width), dtype=np.float64)
        self._sum_sq = np.zeros((slots, width), dtype=np.float64)
        self._hist = np.zeros((slots, width, spec.bins), dtype=np.int32)  # half the memory
        self._dcount = np.zeros((slots, dwidth), dtype=np.int64)
        self._dsum = np.zeros((slots, dwidth), dtype=np.float64)

    # -- geometry --------------------------------------------------------------------------

    def position(self, now: float) -> int:
        """The ring position for a read or write at ``now`` (never behind an earlier one)."""
        return max(self._top, math.floor(now / self.width))

    def live_range(self, now: float) -> tuple[int, int]:
        """First and last live bucket index at ``now`` (inclusive)."""
        top = self.position(now)
        return top - self.spec.buckets, top + self.ahead

    def _live(self, now: float | None = None) -> npt.NDArray[np.bool_]:
        """Slots holding a live bucket at ``now`` (default: at the ring's own position)."""
        return self._live_keys(self._top if now is None else self.position(now))

    def _live_keys(self, top: int) -> npt.NDArray[np.bool_]:
        if top == _NO_KEY:
            return np.zeros(self.slots, dtype=np.bool_)
        return (self._keys >= top - self.spec.buckets) & (self._keys <= top + self.ahead)

    # -- updates ---------------------------------------------------------------------------

    def add(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Add rows stamped at ``times`` into their buckets; returns which rows landed.

        Rows whose bucket is no longer live are skipped. A row further ahead than the
        horizon moves the ring forward to make room for it.
        """
        return self._apply(now, times, values, decayed, 1)

    def retract(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Retract rows added before (same times and values); returns which rows were still
        live. A row whose bucket has rotated out is a no-op (``False``)."""
        return self._apply(now, times, values, decayed, -1)

    def _apply(
        self,
        now: float,
        times: npt.ArrayLike,
        values: npt.ArrayLike,
        decayed: npt.ArrayLike | None,
        sign: int,
    ) -> npt.NDArray[np.bool_]:
        return self.apply_rows(now, *prepare_rows(self.spec, times, values, decayed), sign)

    def apply_rows(
        self, now: float, stamps: F64, plain: Digest, drows: Digest | None, sign: int
    ) -> npt.NDArray[np.bool_]:
        """:meth:`add` (``sign=1``) or :meth:`retract` (``-1``) of rows checked by
        :func:`prepare_rows`."""
        spec = self.spec
        keys = np.floor(stamps / self.width).astype(np.int64)
        top = max(self._top, math.floor(now / self.width))
        if keys.size:
            top = max(top, int(keys.max()) - self.ahead)
        self._top = top
        live = keys >= top - spec.buckets
        if not keys.size:
            return live
        if not live.all():
            if not live.any():
                return live
            keys, stamps, plain = keys[live], stamps[live], plain.take(live)
            drows = None if drows is None else drows.take(live)
        distinct, local = group(keys % self.slots, self.slots)
        distinct_keys = np.empty(distinct.size, dtype=np.int64)
        distinct_keys[local] = keys
        stale = self._keys[distinct] != distinct_keys
        if stale.any():
            self._reset(distinct[stale])
            self._keys[distinct] = distinct_keys
        scatter_plain(
            self._rows,
            self._count,
            self._sum,
            self._sum_sq,
            self._hist,
            distinct,
            local,
            plain,
            sign,
        )
        if drows is not None:
            self._ensure_landmark(float(stamps.max()))
            scatter_decayed(
                self._dcount,
                self._dsum,
                distinct,
                local,
                stamps,
                drows,
                self.rates,
                self.landmark,
                sign,
            )
        if sign < 0:
            self._settle(distinct)
        return live

    def _settle(self, slots: I64) -> None:
        """Exact zeros for sums whose count is back to zero, in the given slots."""
        for counts, sums in (
            (self._count, (self._sum, self._sum_sq)),
            (self._dcount, (self._dsum,)),
        ):
            empty = counts[slots] == 0
            for array in sums:
                part = array[slots]
                part[empty] = 0.0
                array[slots] = part

    def _reset(self, slots: I64) -> None:
        for name in _STATE_ARRAYS:
            getattr(self, name)[slots] = 0

    def _ensure_landmark(self, t: float) -> None:
        if float(self.rates.max()) * (t - self.landmark) > self.spec.max_exponent:
            self.rebase(t)

    def rebase(self, landmark: float) -> None:
        """Move the decay landmark forward; reads are unchanged up to one rounding."""
        if landmark < self.landmark:
            raise ValueError("the landmark only moves forward")
        self._dsum = decay_to(self._dsum, self.rates, landmark - self.landmark)
        self.landmark = float(landmark)

    # -- reads -----------------------------------------------------------------------------

    def aggregate(self, now: float) -> Aggregate:
        """The plain aggregate over the live buckets at ``now``."""
        live = self._live(now)
        return Aggregate.from_arrays(
            self.spec.columns,
            int(self._rows[live].sum()),
            self._count[live].sum(axis=0),
            self._sum[live].sum(axis=0),
            self._sum_sq[live].sum(axis=0),
            self._hist[live].sum(axis=0, dtype=np.int64),
        )

    def decay(self, now: float) -> ForwardDecay:
        """The forward-decay sums over the live buckets at ``now`` (read with ``.value(t)``)."""
        live = self._live(now)
        return ForwardDecay.from_arrays(
            self.rates,
            self.landmark,
            self._dcount[live].sum(axis=0),
            self._dsum[live].sum(axis=0),
            self.spec.max_exponent,
        )

    def is_empty(self, now: float) -> bool:
        """True when no live bucket holds anything."""
        live = self._live(now)
        return not (self._rows[live].any() or self._count[live].any() or self._dcount[live].any())

    def live_buckets(self, now: float) -> I64:
        """Indices ``k`` of the live buckets that hold something, ascending."""
        live = self._live(now) & self._nonempty()
        return np.sort(self._keys[live])

    def _nonempty(self) -> npt.NDArray[np.bool_]:
        out: npt.NDArray[np.bool_] = (
            (self._rows != 0)
            | (self._count != 0).any(axis=1)
            | (self._dcount != 0).any(axis=1)
            | (self._hist != 0).any(axis=(1, 2))
        )
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held by the ring's arrays (fixed at construction)."""
        return int(self._keys.nbytes) + sum(int(getattr(self, a).nbytes) for a in _STATE_ARRAYS)

    # -- merging ---------------------------------------------------------------------------

    def merge(self, other: SlidingWindow) -> SlidingWindow:
        """A new ring equal to one that saw both streams (position and landmark: the later)."""
        merged = self.copy()
        merged.absorb(other)
        return merged

    def __add__(self, other: SlidingWindow) -> SlidingWindow:
        return self.merge(other)

    def absorb(self, other: SlidingWindow) -> None:
        """Add ``other``'s live buckets into this ring, in place."""
        if other.spec != self.spec or other.length != self.length:
            raise ValueError("cannot merge windows of different specs or lengths")
        self._top = max(self._top, other._top)
        if self.spec.decayed_width and other.landmark > self.landmark:
            self.rebase(other.landmark)
        mine = self._live()
        self._reset(np.nonzero(~mine)[0])
        self._keys[~mine] = _NO_KEY
        # Live keys of both rings lie in one range shorter than the ring, so equal slots
        # hold equal keys (or this ring's slot is empty).
        idx = np.nonzero(other._live_keys(self._top))[0]
        self._keys[idx] = other._keys[idx]
        for name in _STATE_ARRAYS[:-1]:
            target = getattr(self, name)
            target[idx] += getattr(other, name)[idx]
        shift = self.landmark - other.landmark
        self._dsum[idx] += decay_to(other._dsum[idx], self.rates, shift)
        settle(self._count, self._sum, self._sum_sq)
        settle(self._dcount, self._dsum)

    def copy(self) -> SlidingWindow:
        """An independent copy."""
        twin = SlidingWindow(self.spec, self.length)
        twin._top = self._top
        twin.landmark = self.landmark
        twin._keys = self._keys.copy()
        for name in _STATE_ARRAYS:
            setattr(twin, name, getattr(self, name).copy())
        return twin

    # -- persistence -----------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """JSON-friendly state without the spec: the live, non-empty buckets only."""
        keep = np.nonzero(self._live() & self._nonempty())[0]
        keep = keep[np.argsort(self._keys[keep])]
        return {
            "length": self.length,
            "top": None if self._top == _NO_KEY else self._top,
            "landmark": self.landmark,
            "keys": self._keys[keep].tolist(),
            "rows": self._rows[keep].tolist(),
            "count": self._count[keep].tolist(),
            "sum": self._sum[keep].tolist(),
            "sum_sq": self._sum_sq[keep].tolist(),
            "hist": self._hist[keep].tolist(),
            "decayed_count": self._dcount[keep].tolist(),
            "decayed_sum": self._dsum[keep].tolist(),
        }

    @classmethod
    def from_state(cls, spec: WindowSpec, state: dict[str, Any]) -> Self:
        """Inverse of :meth:`state`."""
        ring = cls(spec, float(state["length"]))
        ring._top = _NO_KEY if state["top"] is None else int(state["top"])
        ring.landmark = float(state["landmark"])
        keys = np.asarray(state["keys"], dtype=np.int64)
        idx = keys % ring.slots
        ring._keys[idx] = keys
        width, dwidth = len(spec.columns), spec.decayed_width
        ring._rows[idx] = np.asarray(state["rows"], dtype=np.int64)
        ring._count[idx] = np.asarray(state["count"], dtype=np.int64).reshape(-1, width)
        ring._sum[idx] = np.asarray(state["sum"], dtype=np.float64).reshape(-1, width)
        ring._sum_sq[idx] = np.asarray(state["sum_sq"], dtype=np.float64).reshape(-1, width)
        ring._hist[idx] = np.asarray(state["hist"], dtype=np.int32).reshape(-1, width, spec.bins)
        ring._dcount[idx] = np.asarray(state["decayed_count"], dtype=np.int64).reshape(-1, dwidth)
        ring._dsum[idx] = np.asarray(state["decayed_sum"], dtype=np.float64).reshape(-1, dwidth)
        return ring

    def snapshot(self) -> dict[str, Any]:
        """JSON-friendly state including the spec."""
        return {"version": 1, "spec": self.spec.to_dict(), **self.state()}

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> Self:
        """Inverse of :meth:`snapshot`."""
        return cls.from_state(WindowSpec.from_dict(snapshot["spec"]), snapshot)

    def __repr__(self) -> str:
        return f"SlidingWindow(length={self.length}, buckets={self.spec.buckets})"
