"""The windowed drift detectors of an engine: z-score and PSI of each configured (short,
long) window pair, per metric and label set, evaluated on the engine's clock (`advance`,
from the batch path) from the totals of every label set at once, and read (`read`, at a
scrape) without being evaluated: how often and by how many servers the agent is scraped
changes no alarm.

The engine evaluates at its first batch in each step of its clock, a step being one
bucket of the shortest short window (5 s for 5m with 60 buckets), and whenever the
windows' read cut (`until`) has moved: at most once per step and cut, however many
batches come, and at least once per step while batches come (an idle source still
hands over empty batches).

The windows are read without their newest `settle` seconds (`WindowStore.read`
with `until`, to the long window's last bucket boundary before `now - settle`, so that
both windows of a pair end at the same instant): a query's values can still change until
its labels have arrived, and the newest queries of a short window, scored on the labels
that have arrived so far, would make it look worse than its reference. The alarms'
hysteresis lives in the detector banks of `ragstream.drift` between evaluations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ragstream.drift import WINDOWED, Moments
from ragstream.drift.registry import WindowedBank
from ragstream.pipeline.drift_config import ResolvedDrift, WindowPair
from ragstream.windows import WindowSpec, WindowStore

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
    """Advance with `advance(store, now)` (or evaluate with `evaluate(store, now)`), read
    the last evaluation with `read()`; the banks keep the alarms between evaluations."""

    def __init__(self, resolved: ResolvedDrift) -> None:
        self.resolved = resolved
        config = resolved.config
        self.settle = config.settle
        pairs = len(resolved.pairs)
        self._columns = np.asarray(resolved.columns, dtype=np.int64)
        self._hist = np.asarray(resolved.hist_columns, dtype=np.int64)
        self.banks: dict[str, WindowedBank] = {}
        """Registered name -> its bank, cells ``(pairs, metrics read)``."""
        self.metrics: dict[str, tuple[str, ...]] = {}
        """Registered name -> the metrics its bank reads."""
        for name, params in config.windowed():
            kind = WINDOWED[name]
            metrics = resolved.metrics if kind.reads == "moments" else resolved.hist_metrics
            if metrics:
                self.banks[name] = kind.build((pairs, len(metrics)), params)
                self.metrics[name] = metrics
        self._evaluated: tuple[int, tuple[float, ...]] | None = None
        """(step, cuts) of the last evaluation by `advance`."""

    def __bool__(self) -> bool:
        return bool(self.resolved.pairs) and bool(self.banks)

    def advance(self, store: WindowStore, now: float) -> bool:
        """Evaluate at ``now`` (the engine's clock) when it is in a step, or the windows'
        read cut is at a place, not evaluated yet (see the module docstring); returns
        whether it evaluated."""
        if not math.isfinite(now):
            return False
        spec = store.spec
        step = min(spec.width(spec.windows[pair.short]) for pair in self.resolved.pairs)
        at = (math.floor(now / step), tuple(self.until(spec, p, now) for p in self.resolved.pairs))
        if at == self._evaluated:
            return False
        self.evaluate(store, now)
        self._evaluated = at
        return True

    def read(self) -> WindowedDriftRead:
        """The last evaluation, as the banks hold it; changes nothing. A bank whose label
        sets are not those of the others (one restored afresh from a snapshot kept with
        other settings) is left out until the next evaluation."""
        if not self.banks:
            return WindowedDriftRead([], self.resolved.pairs, ())
        keys = next(iter(self.banks.values())).keys
        results = tuple(
            self._result(name, bank) for name, bank in self.banks.items() if bank.keys == keys
        )
        return WindowedDriftRead(cast("list[LabelSet]", list(keys)), self.resolved.pairs, results)

    def snapshot(self) -> dict[str, Any]:
        """Each bank's snapshot, by registered name."""
        return {name: bank.snapshot() for name, bank in self.banks.items()}

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Continue the banks of `snapshot` output kept with the same settings (the others
        start afresh)."""
        for name, bank in self.banks.items():
            if name in saved:
                restored = WINDOWED[name].restore(saved[name])
                if restored.config() == bank.config():
                    self.banks[name] = restored

    def until(self, spec: WindowSpec, pair: WindowPair, now: float) -> float:
        """Where a pair's windows are read to (`WindowStore.read(until=...)`): the
        last bucket boundary of the long window at or before ``now - settle``, less half a
        bucket of the short one. Both windows then end at that boundary (a short window's
        buckets divide a long one's when its length divides the long one's), so the short
        window lies inside the long one and the reference holds only older queries."""
        w_short = spec.width(spec.windows[pair.short])
        w_long = spec.width(spec.windows[pair.long])
        cut = math.floor((now - self.settle) / w_long) * w_long
        return cut - w_short / 2

    def evaluate(self, store: WindowStore, now: float) -> WindowedDriftRead:
        """One evaluation of every label set the store holds, at ``now``."""
        reads_of = {WINDOWED[name].reads for name in self.banks}
        histograms = "histograms" in reads_of
        # one read per cut, of the windows of the pairs that end there
        cuts = [self.until(store.spec, pair, now) for pair in self.resolved.pairs]
        wanted: dict[float, set[int]] = {}
        for until, pair in zip(cuts, self.resolved.pairs, strict=True):
            wanted.setdefault(until, set()).update((pair.short, pair.long))
        reads = {
            until: store.read(now, until=until, histograms=histograms, windows=windows)
            for until, windows in wanted.items()
        }
        per_pair = [reads[until] for until in cuts]
        labelsets = per_pair[0].labelsets if per_pair else store.labelsets()
        pairs = list(zip(self.resolved.pairs, per_pair, strict=True))
        inputs: dict[str, tuple[Any, Any]] = {}

        def pick(name: str, cols: NDArray[np.int64], long: bool) -> NDArray[Any]:
            """Field ``name`` of each pair's short or long window, ``(label sets, pairs,
            len(cols), ...)``."""
            per = [getattr(t, name)[:, p.long if long else p.short][:, cols] for p, t in pairs]
            return np.stack(per, axis=1)

        if "moments" in reads_of:
            fields = ("count", "total", "total_sq")
            cols = self._columns
            short = [pick(f, cols, False) for f in fields]
            long = [pick(f, cols, True) for f in fields]
            ok = long[0] >= short[0]  # nested windows always are; a damaged read gives no signal
            inputs["moments"] = (
                Moments(*(np.where(ok, a, 0) for a in short)),
                Moments(*(np.where(ok, a, 0) for a in long)),
            )
        if histograms:
            h_s, h_l = pick("histograms", self._hist, False), pick("histograms", self._hist, True)
            fits: _B = np.all(h_l >= h_s, axis=-1, keepdims=True)
            inputs["histograms"] = (np.where(fits, h_s, 0), np.where(fits, h_l, 0))
        results: list[WindowedResult] = []
        for name, bank in self.banks.items():
            bank.update(labelsets, *inputs[WINDOWED[name].reads])
            results.append(self._result(name, bank))
        return WindowedDriftRead(list(labelsets), self.resolved.pairs, tuple(results))

    def _result(self, name: str, bank: WindowedBank) -> WindowedResult:
        return WindowedResult(name, self.metrics[name], bank.score, bank.alarm, bank.detections)
