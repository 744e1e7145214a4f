"""Window configuration: metric columns, half-lives, window lengths and bucket geometry."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ragstream.durations import decay_rate, format_duration

__all__ = [
    "F64",
    "I64",
    "WindowSpec",
    "bucket_of",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def bucket_of(times: npt.ArrayLike, width: float) -> I64:
    """Bucket index ``floor(t / width)``: bucket k covers ``[k·width, (k+1)·width)``."""
    return np.floor(np.asarray(times, dtype=np.float64) / width).astype(np.int64)


@dataclass(frozen=True)
class WindowSpec:
    """What every window of a store aggregates, and how its buckets are laid out.

    Rows are vectors: ``columns`` are plain metrics (count, sum, sum of squares and a
    histogram over [0, 1] each); ``decayed`` are sum metrics that decay live, one value per
    half-life and metric, laid out half-life-major (``index = h * len(decayed) + d``).
    """

    columns: tuple[str, ...]
    """Plain metric columns, e.g. ``("rr", "ndcg@10")``."""
    windows: tuple[float, ...]
    """Window lengths in seconds, ascending (the `windows` settings give them)."""
    buckets: int
    """Buckets per window; a bucket is ``window / buckets`` seconds wide."""
    bins: int
    """Histogram bins over [0, 1]."""
    horizon: float
    """How far ahead of now a row may be and still land in its own bucket (the clock's
    future tolerance)."""
    decayed: tuple[str, ...] = ()
    """Decayed sum metrics, e.g. ``("dcg_decayed@10", "rr_decayed")``."""
    half_lives: tuple[float, ...] = ()
    """Half-lives in seconds; each decayed metric is kept once per half-life."""
    max_exponent: float = 300.0
    """Forward-decay sums are rebased before any ``λ·(t - L)`` exceeds this."""
    hist_columns: tuple[str, ...] | None = None
    """Columns that keep a histogram (in column order); ``None``: every column. A
    histogram is ``4 · bins`` bytes per slot, the bulk of a series' memory."""
    names: tuple[str, ...] = field(init=False)
    """Window labels, e.g. ``("1m", "5m", "1h", "24h")``."""

    def __post_init__(self) -> None:
        for group in (self.columns, self.decayed):
            if len(set(group)) != len(group):
                raise ValueError(f"duplicate column names in {group}")
        if bool(self.decayed) != bool(self.half_lives):
            raise ValueError("decayed metrics and half_lives must be given together")
        if any(not (math.isfinite(h) and h > 0) for h in self.half_lives):
            raise ValueError("half-lives must be positive and finite")
        if not self.windows or list(self.windows) != sorted(set(self.windows)):
            raise ValueError("windows must be distinct and ascending")
        if any(not (math.isfinite(w) and w > 0) for w in self.windows):
            raise ValueError("window lengths must be positive and finite")
        if self.buckets < 1 or self.bins < 1:
            raise ValueError("buckets and bins must be at least 1")
        if not (math.isfinite(self.horizon) and self.horizon >= 0):
            raise ValueError("horizon must be finite and non-negative")
        if self.hist_columns is not None:
            unknown = set(self.hist_columns) - set(self.columns)
            if unknown:
                raise ValueError(f"hist_columns not among the columns: {sorted(unknown)}")
            ordered = tuple(c for c in self.columns if c in set(self.hist_columns))
            if ordered != tuple(self.hist_columns):
                raise ValueError("hist_columns must be distinct and in column order")
        if not (0 < self.max_exponent <= 600):
            raise ValueError("max_exponent must be in (0, 600] to keep sums finite")
        object.__setattr__(self, "names", tuple(format_duration(w) for w in self.windows))

    @property
    def decayed_width(self) -> int:
        """Number of decayed values a row carries: ``len(half_lives) * len(decayed)``."""
        return len(self.half_lives) * len(self.decayed)

    @property
    def histogrammed(self) -> tuple[str, ...]:
        """The columns that keep a histogram."""
        return self.columns if self.hist_columns is None else self.hist_columns

    @property
    def hist_index(self) -> I64:
        """Column index of each histogrammed column."""
        names = set(self.histogrammed)
        return np.asarray([i for i, c in enumerate(self.columns) if c in names], dtype=np.int64)

    def slot_nbytes(self) -> int:
        """Bytes of one bucket of one series:
        ``8 + 24·C + 4·bins·C_hist + 16·H·D`` (rows, count/sum/sum of squares,
        int32 histogram bins, decayed count and sum)."""
        c, ch = len(self.columns), len(self.histogrammed)
        return 8 + 24 * c + 4 * self.bins * ch + 16 * self.decayed_width

    def series_nbytes(self) -> int:
        """Bytes of one series over all windows:
        ``Σ_w (slots_w + 1) · slot_nbytes + 4 · bins · C_hist`` with
        ``slots_w = buckets + 1 + ceil(horizon / (window / buckets))``; the ``+ 1`` is the
        running window total (its histogram in int64) that makes whole-store reads
        O(series)."""
        slots = sum(
            self.buckets + 1 + math.ceil(self.horizon / self.width(w)) for w in self.windows
        )
        total = len(self.windows) * 4 * self.bins * len(self.histogrammed)
        return (slots + len(self.windows)) * self.slot_nbytes() + total

    @property
    def rates(self) -> F64:
        """Decay rate per decayed value, ``λ = ln 2 / half_life``, half-life-major."""
        lam = np.array([decay_rate(h) for h in self.half_lives], dtype=np.float64)
        return np.repeat(lam, len(self.decayed))

    @property
    def longest(self) -> float:
        """The longest window: events older than it are late."""
        return self.windows[-1]

    def width(self, window: float) -> float:
        """Bucket width of a window, in seconds."""
        return window / self.buckets

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, for snapshots."""
        return {
            "columns": list(self.columns),
            "decayed": list(self.decayed),
            "half_lives": list(self.half_lives),
            "windows": list(self.windows),
            "buckets": self.buckets,
            "bins": self.bins,
            "horizon": self.horizon,
            "max_exponent": self.max_exponent,
            "hist_columns": None if self.hist_columns is None else list(self.hist_columns),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WindowSpec:
        """Inverse of :meth:`to_dict` (without ``hist_columns``: every column has one)."""
        hist = data.get("hist_columns")
        return cls(
            columns=tuple(data["columns"]),
            decayed=tuple(data["decayed"]),
            half_lives=tuple(float(h) for h in data["half_lives"]),
            windows=tuple(float(w) for w in data["windows"]),
            buckets=int(data["buckets"]),
            bins=int(data["bins"]),
            horizon=float(data["horizon"]),
            max_exponent=float(data["max_exponent"]),
            hist_columns=None if hist is None else tuple(hist),
        )

    def edges(self) -> F64:
        """Upper edges of the histogram bins: bin j counts values in ``(e[j-1], e[j]]``."""
        return np.arange(1, self.bins + 1, dtype=np.float64) / self.bins
