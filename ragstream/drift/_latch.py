"""The alarm of a windowed detector: on at a threshold, off below a lower one."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ragstream.drift._common import F64, I64

_B = npt.NDArray[np.bool_]


def latch_step(alarm: _B, severity: F64, release: float) -> tuple[_B, _B]:
    """One evaluation of many independent latches, elementwise: the new alarms and where
    an alarm turned on. The rule of :meth:`Latch.feed` for one value: no signal (NaN)
    turns the alarm off; a raised alarm stays while ``severity >= release``; a lowered
    one turns on at ``severity >= 1``."""
    with np.errstate(invalid="ignore"):
        signal = ~np.isnan(severity)
        kept = alarm & (severity >= release)
        raised = ~alarm & (severity >= 1.0)
    new: _B = signal & (kept | raised)
    onset: _B = signal & raised
    return new, onset


__all__ = ["Latch", "latch_step"]


class Latch:
    """Hysteresis over a severity in threshold units (``1`` = at the threshold).

    The alarm turns on when the severity reaches 1 and turns off when it falls below
    ``release`` (``0 < release <= 1``) or when there is no signal (NaN: volume under the
    floor). ``onsets`` counts the times it turned on. Without the gap between the two levels
    a score that hovers at the threshold would raise one alarm per evaluation.
    """

    __slots__ = ("alarm", "onsets", "release")

    def __init__(self, release: float) -> None:
        if not 0.0 < release <= 1.0:
            raise ValueError("release must be in (0, 1]")
        self.release = release
        self.alarm = False
        self.onsets = 0

    def feed(self, severity: F64) -> I64:
        """Evaluate ``severity`` in order; indices where the alarm turned on."""
        out: list[int] = []
        alarm = self.alarm
        release = self.release
        for i, s in enumerate(severity.tolist()):
            if math.isnan(s):
                alarm = False
            elif alarm:
                alarm = s >= release
            elif s >= 1.0:
                alarm = True
                out.append(i)
        self.alarm = alarm
        self.onsets += len(out)
        return np.asarray(out, dtype=np.int64)
