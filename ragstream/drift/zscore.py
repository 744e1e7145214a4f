"""Welch z-score of a short window's mean against the rest of a long window.

The windows keep count ``n``, sum ``Σx`` and sum of squares ``Σx²`` per column. The short
window (e.g. 5m) lies inside the long one (e.g. 1h): both end at the present, the long one
starts earlier. Comparing the short window with the whole long window would compare it
partly with itself and bias ``z`` toward 0 (by the factor ``1 - n_s/n_l`` on the
difference of means, and a correlated standard error). So the reference is the long window
*minus* the short one, derived from the sums, which subtract exactly as they add:

    n_r = n_l - n_s,   Σx_r = Σx_l - Σx_s,   Σx²_r = Σx²_l - Σx²_s

    m = Σx / n,   v = (Σx² - (Σx)²/n) / (n - 1)   (clipped at 0)
    z = (m_s - m_r) / sqrt(v_s/n_s + v_r/n_r)

No signal (NaN) below ``min_count`` values in the short window or ``min_reference`` in the
reference. See docs/drift.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np
import numpy.typing as npt

from ragstream.drift._alarm import Latched
from ragstream.drift._common import F64, Direction

__all__ = ["MIN_STDERR", "Moments", "ZScore", "ZScoreParams", "welch_z"]

MIN_STDERR = 1e-9
"""Floor of the standard error: two windows of one constant value give ``z = 0`` (or a
large finite ``z`` if the constants differ) instead of 0/0."""


class Moments(NamedTuple):
    """Count, sum and sum of squares of one window; numbers or arrays of one shape."""

    n: npt.ArrayLike
    total: npt.ArrayLike
    total_sq: npt.ArrayLike


def _arrays(m: Moments) -> tuple[F64, F64, F64]:
    n, s, q = np.broadcast_arrays(
        np.asarray(m.n, dtype=np.float64),
        np.asarray(m.total, dtype=np.float64),
        np.asarray(m.total_sq, dtype=np.float64),
    )
    return n, s, q


def _mean_var(n: F64, s: F64, q: F64) -> tuple[F64, F64]:
    with np.errstate(invalid="ignore", divide="ignore"):
        mean: F64 = s / n
        var: F64 = np.maximum(q - s * s / n, 0.0) / (n - 1.0)
    return mean, var


def welch_z(short: Moments, long: Moments, *, min_count: int = 2, min_reference: int = 2) -> F64:
    """``z`` of the short window against the long window minus the short one, elementwise
    over any shape (label sets, columns, evaluation times); NaN where either side has fewer
    values than its floor (at least 2). Raises ``ValueError`` if a long window holds fewer
    values than its short one (the short window must lie inside the long one)."""
    n_s, s_s, q_s = _arrays(short)
    n_l, s_l, q_l = _arrays(long)
    n_r = n_l - n_s
    if np.any(n_r < 0):
        raise ValueError("a long window holds fewer values than its short window")
    m_s, v_s = _mean_var(n_s, s_s, q_s)
    m_r, v_r = _mean_var(n_r, s_l - s_s, q_l - q_s)
    ok = (n_s >= max(min_count, 2)) & (n_r >= max(min_reference, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.maximum(np.sqrt(v_s / n_s + v_r / n_r), MIN_STDERR)
        z: F64 = np.where(ok, (m_s - m_r) / se, np.nan)
    return z


@dataclass(frozen=True, slots=True)
class ZScoreParams:
    """The settings of a :class:`ZScore` (and of a :class:`~ragstream.drift.ZScoreBank`)."""

    threshold: float
    min_count: int
    min_reference: int
    direction: Direction
    release: float


class ZScore(Latched):
    """Alarm on the Welch z-score of one metric's short window against its long window.

    ``update`` takes the two windows' moments at one evaluation (numbers) or at a series
    of evaluations in time order (1-D arrays), e.g. at every scrape. The alarm turns on
    when ``z`` passes ``threshold`` in the watched direction (``-z >= threshold`` for
    ``down``) and off when it falls back below ``release * threshold`` or the volume goes
    under a floor.
    """

    kind: ClassVar[str] = "zscore"
    params = ZScoreParams
    floor = 2

    __slots__ = ("direction",)

    def __init__(
        self,
        threshold: float,
        min_count: int,
        min_reference: int,
        direction: Direction | str,
        release: float,
    ) -> None:
        self.direction = Direction(direction)
        self._start(threshold, min_count, min_reference, release)

    def severity(self, z: F64) -> F64:
        """``z`` in threshold units, signed so that the watched direction is positive."""
        if self.direction is Direction.DOWN:
            signed = -z
        elif self.direction is Direction.UP:
            signed = z
        else:
            signed = np.abs(z)
        out: F64 = signed / self.threshold
        return out

    def statistic(self, short: Moments, long: Moments) -> F64:
        """`welch_z` with this detector's volume floors."""
        return welch_z(short, long, min_count=self.min_count, min_reference=self.min_reference)
