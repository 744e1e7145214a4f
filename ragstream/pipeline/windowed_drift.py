"""The windowed drift detectors of an engine: z-score and PSI of each configured (short,
long) window pair, per metric and label set, evaluated when the windows are read (at a
scrape) from the totals of every label set at once.

The windows are read without their newest `settle` seconds (`WindowStore.read_totals`
with `until`): a query's values can still change until its labels have arrived, and the
newest queries of a short window, scored on the labels that have arrived so far, would
make it look worse than its reference. The alarms' hysteresis lives in the detector
banks of `ragstream.drift` between evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragstream.drift import Moments, PsiBank, ZScoreBank
from ragstream.pipeline.drift_config import ResolvedDrift, WindowPair
from ragstream.windows import WindowStore

__all__ = ["WindowedDrift", "WindowedDriftRead", "WindowedResult"]

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]
_B = NDArray[np.bool_]
LabelSet = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WindowedResult:
    """One detector kind at one evaluation: arrays ``(label sets, pairs, metrics)``."""

    detector: str
    metrics: tuple[str, ...]
    score: _F64
    """NaN where there is no signal (volume under a floor)."""
    alarm: _B
    detections: _I64
    """Onsets since the label set was first evaluated here."""


@dataclass(frozen=True, slots=True)
class WindowedDriftRead:
    labelsets: list[LabelSet]
    pairs: tuple[WindowPair, ...]
    results: tuple[WindowedResult, ...]


class WindowedDrift:
    """Evaluate with `evaluate(store, now)`; the banks keep the alarms between calls."""

    def __init__(self, resolved: ResolvedDrift) -> None:
        self.resolved = resolved
        config = resolved.config
        self.settle = config.settle
        pairs = len(resolved.pairs)
        self._short = np.asarray([p.short for p in resolved.pairs], dtype=np.int64)
        self._long = np.asarray([p.long for p in resolved.pairs], dtype=np.int64)
        self._columns = np.asarray(resolved.columns, dtype=np.int64)
        self._hist = np.asarray(resolved.hist_columns, dtype=np.int64)
        z, p = config.params("zscore"), config.params("psi")
        self.zscore = (
            None
            if z is None or not resolved.metrics
            else ZScoreBank((pairs, len(resolved.metrics)), **z)
        )
        self.psi = (
            None
            if p is None or not resolved.hist_metrics
            else PsiBank((pairs, len(resolved.hist_metrics)), **p)
        )

    def __bool__(self) -> bool:
        return bool(self.resolved.pairs) and (self.zscore is not None or self.psi is not None)

    def evaluate(self, store: WindowStore, now: float) -> WindowedDriftRead:
        """One evaluation of every label set the store holds, at ``now``."""
        totals = store.read_totals(now, until=now - self.settle, histograms=self.psi is not None)
        labelsets = totals.labelsets
        results: list[WindowedResult] = []
        if self.zscore is not None:
            cols = self._columns

            def pick(array: NDArray[Any], windows: _I64) -> NDArray[Any]:
                return array[:, windows][:, :, cols]

            n_s, n_l = pick(totals.count, self._short), pick(totals.count, self._long)
            ok = n_l >= n_s  # nested windows always are; a damaged read gives no signal
            short = Moments(
                np.where(ok, n_s, 0),
                np.where(ok, pick(totals.total, self._short), 0.0),
                np.where(ok, pick(totals.total_sq, self._short), 0.0),
            )
            long = Moments(
                np.where(ok, n_l, 0),
                np.where(ok, pick(totals.total, self._long), 0.0),
                np.where(ok, pick(totals.total_sq, self._long), 0.0),
            )
            self.zscore.update(labelsets, short, long)
            results.append(self._result("zscore", self.resolved.metrics, self.zscore))
        if self.psi is not None:
            hist = totals.histograms
            assert hist is not None
            h_s = hist[:, self._short][:, :, self._hist]
            h_l = hist[:, self._long][:, :, self._hist]
            fits: _B = np.all(h_l >= h_s, axis=-1, keepdims=True)
            self.psi.update(labelsets, np.where(fits, h_s, 0), np.where(fits, h_l, 0))
            results.append(self._result("psi", self.resolved.hist_metrics, self.psi))
        return WindowedDriftRead(list(labelsets), self.resolved.pairs, tuple(results))

    @staticmethod
    def _result(kind: str, metrics: tuple[str, ...], bank: ZScoreBank | PsiBank) -> WindowedResult:
        return WindowedResult(kind, metrics, bank.score, bank.alarm, bank.detections)
