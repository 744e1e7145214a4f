"""Many windowed detectors of one kind evaluated together: one per key (e.g. a label set)
and cell (e.g. window pair x metric), all with the same settings.

The engine reads every label set's windows at once (arrays ``(labelsets, pairs,
metrics)``); a bank computes every element's statistic with one call of
:func:`~ragstream.drift.welch_z` or :func:`~ragstream.drift.psi` and applies the hysteresis
elementwise (:func:`~ragstream.drift._alarm.latch_step`), so each element behaves as its own
detector fed the same windows.

Keys come and go with the label sets: at each update the state of a key seen before is
carried over, a new key starts with its alarm off, and a key that is absent is forgotten.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import asdict
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from ragstream.drift._alarm import latch_step
from ragstream.drift._common import (
    F64,
    I64,
    check_version,
    float_in,
    float_out,
)
from ragstream.drift.psi import Psi, PsiParams
from ragstream.drift.zscore import ZScore, ZScoreParams

__all__ = ["PsiBank", "ZScoreBank"]

_B = npt.NDArray[np.bool_]


class _Bank:
    """Keys, and per key and cell: the last score, the alarm and the onsets counted.

    A subclass names its ``detector`` class, whose ``params`` the bank takes; the bank's
    config lists the detector's ``settings_names``.
    """

    kind: ClassVar[str]
    detector: ClassVar[type[ZScore] | type[Psi]]
    settings: ZScore | Psi

    def __init__(self, cells: tuple[int, ...], params: ZScoreParams | PsiParams) -> None:
        if not isinstance(params, self.detector.params):
            raise TypeError(f"{type(self).__name__} takes {self.detector.params.__name__}")
        self.settings = self.detector(**asdict(params))
        """A detector holding the settings (validated as it validates them)."""
        self.cells = tuple(int(c) for c in cells)
        self.keys: list[Hashable] = []
        self.score: F64 = np.zeros((0, *self.cells))
        """``(keys, *cells)``: the last statistic (NaN: no signal)."""
        self.alarm: _B = np.zeros((0, *self.cells), dtype=np.bool_)
        self.detections: I64 = np.zeros((0, *self.cells), dtype=np.int64)
        """``(keys, *cells)``: times the alarm turned on since the key was first seen."""

    def _carry(self, keys: Sequence[Hashable]) -> tuple[_B, I64]:
        """The alarms and onset counts of ``keys`` (those of unknown keys: off and 0)."""
        keys = list(keys)
        if keys == self.keys:
            return self.alarm, self.detections
        alarm = np.zeros((len(keys), *self.cells), dtype=np.bool_)
        onsets = np.zeros((len(keys), *self.cells), dtype=np.int64)
        where = {key: i for i, key in enumerate(self.keys)}
        old = [where.get(key, -1) for key in keys]
        new_rows = [i for i, j in enumerate(old) if j >= 0]
        if new_rows:
            old_rows = [old[i] for i in new_rows]
            alarm[new_rows] = self.alarm[old_rows]
            onsets[new_rows] = self.detections[old_rows]
        return alarm, onsets

    def _step(self, keys: Sequence[Hashable], score: F64, severity: F64) -> _B:
        """One evaluation of every key; returns where an alarm turned on."""
        shape = (len(keys), *self.cells)
        if score.shape != shape:
            raise ValueError(f"expected statistics of shape {shape}, got {score.shape}")
        previous, onsets = self._carry(keys)
        alarm, onset = latch_step(previous, severity, self.settings.release)
        self.keys = list(keys)
        self.score = score
        self.alarm = alarm
        self.detections = onsets + onset
        return onset

    def update(self, keys: Sequence[Hashable], short: Any, long: Any) -> _B:
        """One evaluation: the short and the long windows' moments ``(keys, *cells)``
        (`ZScoreBank`) or histograms ``(keys, *cells, bins)`` (`PsiBank`). Returns where an
        alarm turned on; ``ValueError`` where a long window holds fewer values than its
        short one."""
        value = self.settings.statistic(short, long)
        value = np.broadcast_to(value, (len(keys), *self.cells)).astype(np.float64)
        return self._step(keys, value, self.settings.severity(value))

    def config(self) -> dict[str, Any]:
        """Kind, version, cells and settings: the snapshot without the state."""
        s = self.settings.snapshot()
        return {
            "kind": self.kind,
            "version": 1,
            "cells": list(self.cells),
            **{name: s[name] for name in self.detector.settings_names},
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> Self:
        check_version(snapshot, cls.kind)
        settings = {n: snapshot[n] for n in cls.detector.settings_names}
        bank = cls(tuple(snapshot["cells"]), cls.detector.params(**settings))
        shape = (len(snapshot["keys"]), *bank.cells)
        bank.keys = [tuple(k) if isinstance(k, list) else k for k in snapshot["keys"]]
        bank.score = np.asarray([float_in(v) for v in snapshot["score"]], np.float64).reshape(shape)
        bank.alarm = np.asarray(snapshot["alarm"], dtype=np.bool_).reshape(shape)
        bank.detections = np.asarray(snapshot["detections"], dtype=np.int64).reshape(shape)
        return bank

    def snapshot(self) -> dict[str, Any]:
        """JSON-ready: :meth:`config` and, per key, scores, alarms and onsets."""
        return {
            **self.config(),
            "keys": [list(k) if isinstance(k, tuple) else k for k in self.keys],
            "score": [float_out(v) for v in self.score.reshape(-1).tolist()],
            "alarm": self.alarm.reshape(-1).tolist(),
            "detections": self.detections.reshape(-1).tolist(),
        }


class ZScoreBank(_Bank):
    """:class:`~ragstream.drift.ZScore` detectors, one per key and cell, with one set of
    settings (a ``ZScoreParams``, after ``cells``)."""

    kind: ClassVar[str] = "zscore_bank"
    detector = ZScore


class PsiBank(_Bank):
    """:class:`~ragstream.drift.Psi` detectors, one per key and cell, with one set of
    settings (a ``PsiParams``, after ``cells``)."""

    kind: ClassVar[str] = "psi_bank"
    detector = Psi
