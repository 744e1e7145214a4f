"""ADWIN (Bifet & Gavaldà, SDM 2007) on the stream of final per-query values, with an
exponential histogram whose size is bounded by configuration.

The window ``W`` of recent values is kept as buckets: row ``i`` holds buckets of ``2**i``
values (their sum and their sum of squared deviations, ``M2``), at most ``max_buckets``
a row; when a row gets one more, its two oldest merge into one bucket of the next row
(ADWIN2). Every ``clock`` values (once ``W`` holds more than ``grace_period``) every
bucket boundary splits ``W`` into an older part ``W0`` (``n0`` values, mean ``μ0``) and a
newer part ``W1``; with ``σ²`` the variance of ``W``, ``δ' = ln(2 ln|W| / delta)`` and
``m = 1/(n0 - L + 1) + 1/(n1 - L + 1)`` (``L = min_window_length``), a cut is a change when

    μ0 - μ1 > ε = sqrt(2 m σ² δ') + (2/3) m δ'          (``down``: the mean fell)

(``up``: ``μ1 - μ0 > ε``; ``both``: ``|μ0 - μ1| > ε``, which is river's ADWIN). The
arithmetic follows river's implementation step for step, so with ``direction="both"`` and
a window that never reaches ``max_window`` the detections are river's (tested).

Bounded memory: ``|W|`` values need about ``log2(|W| / max_buckets) + 1`` rows; when ``|W|``
would pass ``max_window`` the oldest buckets are dropped (forgotten, not an alarm), so the
state never holds more than about ``max_buckets · log2(max_window / max_buckets)``
buckets (:meth:`Adwin.max_buckets_bound`; 90 at the defaults), whatever the number of
values.

Reset policy: at a detection the window is emptied and the detector starts again (as
river's ``ADWIN`` does on the next value); the alarm flag is held for ``hold`` values.
See docs/drift.md.

The loop runs compiled (``ragstream.drift._kernels.adwin_update``, the same operations in
the same order: the same bits) when the extension is built, in Python otherwise
(``_feed_python``, the reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from ragstream.drift._alarm import Held
from ragstream.drift._common import I64, Direction, as_values, check_version, count_in, finite_in

try:
    from ragstream.drift import _kernels
except ImportError:  # not built (no C compiler at install time): the Python loop serves
    _kernels = None  # type: ignore[assignment]

__all__ = ["Adwin", "AdwinParams"]

_MAX_ROWS = 63
"""Rows of buckets at most: row ``i`` holds buckets of ``2**i`` values, and a window
holds fewer than ``2**63``."""
_DIRECTION_CODE = {Direction.DOWN: 0, Direction.UP: 1, Direction.BOTH: 2}


@dataclass(frozen=True, slots=True)
class AdwinParams:
    """The settings of an :class:`Adwin`."""

    delta: float
    clock: int
    max_buckets: int
    min_window_length: int
    grace_period: int
    max_window: int
    direction: Direction
    hold: int


class Adwin(Held):
    """ADWIN change detector (see the module docstring)."""

    kind: ClassVar[str] = "adwin"
    params = AdwinParams

    __slots__ = (
        "_rows",
        "_score",
        "_tick",
        "_total",
        "_variance",
        "_width",
        "clock",
        "delta",
        "direction",
        "grace_period",
        "max_buckets",
        "max_window",
        "min_window_length",
    )

    def __init__(
        self,
        delta: float,
        clock: int,
        max_buckets: int,
        min_window_length: int,
        grace_period: int,
        max_window: int,
        direction: Direction | str,
        hold: int,
    ) -> None:
        if not 0.0 < delta < 1.0:
            raise ValueError("delta must be in (0, 1)")
        if clock < 1 or max_buckets < 2 or min_window_length < 1 or grace_period < 0:
            raise ValueError("clock >= 1, max_buckets >= 2, min_window_length >= 1, grace >= 0")
        if max_window < 2 * min_window_length:
            raise ValueError("max_window must hold two sub-windows of min_window_length")
        self.delta = float(delta)
        self.clock = int(clock)
        self.max_buckets = int(max_buckets)
        self.min_window_length = int(min_window_length)
        self.grace_period = int(grace_period)
        self.max_window = int(max_window)
        self.direction = Direction(direction)
        self._start_hold(hold)
        self._score = 0.0
        self._reset()

    def _reset(self) -> None:
        # _rows[i] = (totals, m2s) of the buckets of 2**i values, oldest first
        self._rows: list[tuple[list[float], list[float]]] = [([], [])]
        self._width = 0
        self._total = 0.0
        self._variance = 0.0  # M2 of the whole window
        self._tick = 0

    # -- reads -----------------------------------------------------------------------------

    @property
    def width(self) -> int:
        """Values in the window."""
        return self._width

    @property
    def mean(self) -> float:
        """Mean of the window (NaN when empty)."""
        return self._total / self._width if self._width else math.nan

    @property
    def buckets(self) -> int:
        """Buckets held (the state's size)."""
        return sum(len(totals) for totals, _ in self._rows)

    @property
    def score(self) -> float:
        """At the latest check, the largest ``(μ0 - μ1) / ε`` over the cuts (signed for
        the watched direction): 1 is the alarm level. 0 before the first check."""
        return self._score

    def max_buckets_bound(self) -> int:
        """The most buckets this configuration can hold: ``max_buckets`` a row, and
        ``floor(log2((max_window + max_buckets - 1) / max_buckets)) + 1`` rows, since every
        row below the top one holds at least ``max_buckets - 1`` buckets, so ``R`` rows
        hold at least ``max_buckets · 2**(R-1) - (max_buckets - 1)`` values."""
        m = self.max_buckets
        return m * ((self.max_window + m - 1) // m).bit_length()

    # -- updates ---------------------------------------------------------------------------

    def update(self, values: npt.ArrayLike) -> I64:
        """Feed values in order (NaN skipped); offsets (into the finite values) of the
        values at which a change was detected."""
        x = as_values(values)
        if _kernels is None:
            return self._held(int(x.size), self._feed_python(x))
        (
            self._rows,
            self._width,
            self._total,
            self._variance,
            self._tick,
            self._score,
            offsets,
        ) = _kernels.adwin_update(
            self._rows,
            np.ascontiguousarray(x).data,
            self._width,
            self._total,
            self._variance,
            self._tick,
            self._score,
            self.clock,
            self.grace_period,
            self.max_buckets,
            self.max_window,
            self.min_window_length,
            self.delta,
            _DIRECTION_CODE[self.direction],
        )
        return self._held(int(x.size), offsets)

    def _feed_python(self, x: npt.NDArray[np.float64]) -> list[int]:
        """Insert the values, checking the cuts every `clock` values; the offsets of the
        values at which a change was detected (the window was emptied there)."""
        xs: list[float] = x.tolist()
        offsets: list[int] = []
        clock = self.clock
        i = 0
        n = len(xs)
        while i < n:
            stop = min(n, i + clock - self._tick % clock)
            self._insert(xs, i, stop)
            i = stop
            if self._tick % clock == 0 and self._width > self.grace_period and self._check():
                offsets.append(i - 1)
                self._reset()
        return offsets

    def _insert(self, xs: list[float], start: int, stop: int) -> None:
        """Insert ``xs[start:stop]`` (no check in between): river's ``insert_element``
        and ``compress_buckets``, with the state in locals."""
        width = self._width
        total = self._total
        variance = self._variance
        rows = self._rows
        totals0, m2s0 = rows[0]
        limit = self.max_buckets
        max_window = self.max_window
        for j in range(start, stop):
            value = xs[j]
            if width:
                dv = value - total / width
                variance += width * dv * dv / (width + 1)
            width += 1
            total += value
            totals0.append(value)
            m2s0.append(0.0)
            if len(totals0) > limit:
                idx = 0
                totals, m2s = totals0, m2s0
                while True:
                    size = float(1 << idx)
                    mu1 = totals[0] / size
                    mu2 = totals[1] / size
                    merged_total = totals[0] + totals[1]
                    merged_m2 = m2s[0] + m2s[1] + size * 0.5 * (mu1 - mu2) * (mu1 - mu2)
                    del totals[:2]
                    del m2s[:2]
                    idx += 1
                    if idx == len(rows):
                        rows.append(([], []))
                    totals, m2s = rows[idx]
                    totals.append(merged_total)
                    m2s.append(merged_m2)
                    if len(totals) <= limit:
                        break
            if width > max_window:
                self._width, self._total, self._variance = width, total, variance
                while self._width > max_window:
                    self._drop_oldest()
                width, total, variance = self._width, self._total, self._variance
        self._width = width
        self._total = total
        self._variance = variance
        self._tick += stop - start

    def _drop_oldest(self) -> None:
        """Forget the oldest bucket (river's ``delete_element``)."""
        last = len(self._rows) - 1
        totals, m2s = self._rows[last]
        n = float(1 << last)
        u = totals.pop(0)
        v = m2s.pop(0)
        mu = u / n
        self._width -= 1 << last
        self._total -= u
        width = float(self._width)
        mu_window = self._total / width
        self._variance -= v + n * width * (mu - mu_window) * (mu - mu_window) / (n + width)
        if not totals and last > 0:
            self._rows.pop()

    def _check(self) -> bool:
        """Evaluate every cut, oldest first (river's ``detect_change``); True at the
        first one that is a change."""
        width = float(self._width)
        lmin = float(self.min_window_length)
        delta_prime = math.log(2.0 * math.log(width) / self.delta)
        var = self._variance / width
        direction = self.direction
        n0 = 0.0
        n1 = width
        u0 = 0.0
        u1 = self._total
        best = -math.inf
        rows = self._rows
        sqrt = math.sqrt
        for idx in range(len(rows) - 1, -1, -1):
            size = float(1 << idx)
            totals = rows[idx][0]
            if idx == 0:
                totals = totals[:-1]  # no cut after the newest value
            for t in totals:
                n0 += size
                n1 -= size
                u0 += t
                u1 -= t
                if n1 < lmin or n0 < lmin:
                    continue
                diff = u0 / n0 - u1 / n1
                if direction is Direction.UP:
                    diff = -diff
                elif direction is Direction.BOTH:
                    diff = abs(diff)
                m = 1.0 / (n0 - lmin + 1.0) + 1.0 / (n1 - lmin + 1.0)
                eps = sqrt(2.0 * m * var * delta_prime) + 2.0 / 3.0 * delta_prime * m
                ratio = diff / eps
                if ratio > best:
                    best = ratio
                    if diff > eps:
                        self._score = ratio
                        return True
        if best > -math.inf:
            self._score = best
        return False

    # -- persistence -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "version": 1,
            "delta": self.delta,
            "clock": self.clock,
            "max_buckets": self.max_buckets,
            "min_window_length": self.min_window_length,
            "grace_period": self.grace_period,
            "max_window": self.max_window,
            "direction": self.direction.value,
            "width": self._width,
            "total": self._total,
            "variance": self._variance,
            "tick": self._tick,
            "score": self._score,
            "rows": [[list(t), list(v)] for t, v in self._rows],
            **self._hold_state(),
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> Self:
        """The detector of a snapshot, every number checked first (ValueError when one is
        out of range or the bucket rows are not ones `update` could have left): the
        compiled loop trusts the rows it is given."""
        check_version(snapshot, cls.kind)
        det = cls(
            delta=finite_in(snapshot, "delta"),
            clock=count_in(snapshot, "clock", low=1),
            max_buckets=count_in(snapshot, "max_buckets", low=2),
            min_window_length=count_in(snapshot, "min_window_length", low=1),
            grace_period=count_in(snapshot, "grace_period"),
            max_window=count_in(snapshot, "max_window", low=2),
            direction=snapshot["direction"],
            hold=count_in(snapshot, "hold", low=1),
        )
        det._rows = _rows_in(snapshot["rows"], det.max_buckets)
        width = sum(len(t) << i for i, (t, _) in enumerate(det._rows))
        if width != count_in(snapshot, "width") or width > det.max_window:
            raise ValueError("adwin snapshot: bucket sizes do not add up to its width")
        det._width = width
        det._total = finite_in(snapshot, "total")
        det._variance = finite_in(snapshot, "variance")
        det._tick = count_in(snapshot, "tick")
        det._score = finite_in(snapshot, "score")
        det._restore_hold(snapshot)
        return det


def _rows_in(rows: Any, max_buckets: int) -> list[tuple[list[float], list[float]]]:
    """The bucket rows of a snapshot as `update` leaves them: 1 to 63 rows of equal-length
    (totals, m2s) lists of finite numbers, at most ``max_buckets`` buckets a row, and every
    row holding at least one bucket but a lone empty row 0 (an emptied window). ValueError
    otherwise."""
    malformed = ValueError("adwin snapshot has malformed bucket rows")
    if not isinstance(rows, list) or not 1 <= len(rows) <= _MAX_ROWS:
        raise malformed
    out: list[tuple[list[float], list[float]]] = []
    for row in rows:
        if not isinstance(row, list | tuple) or len(row) != 2:
            raise malformed
        totals, m2s = row
        if not isinstance(totals, list) or not isinstance(m2s, list):
            raise malformed
        if len(totals) != len(m2s) or len(totals) > max_buckets:
            raise malformed
        if not totals and len(rows) > 1:
            raise ValueError("adwin snapshot has an empty bucket row")
        out.append((_finite(totals), _finite(m2s)))
    return out


def _finite(values: list[Any]) -> list[float]:
    """The numbers of a bucket row as floats; ValueError when one is not a finite number."""
    return [finite_in({"bucket": v}, "bucket") for v in values]
