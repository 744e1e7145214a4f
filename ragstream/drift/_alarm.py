"""The alarms of the detectors: a sequential detector's is raised by a detection and held
for ``hold`` values (`Held`); a windowed detector's turns on at a threshold and off below
a lower one (`Latched`, `latch_step`)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from ragstream.drift._common import (
    F64,
    I64,
    MAX_COUNT,
    Direction,
    check_version,
    count_in,
    float_in,
    float_out,
)

__all__ = ["Held", "Latched", "latch_step"]

_B = npt.NDArray[np.bool_]


def latch_step(alarm: _B, severity: F64, release: float) -> tuple[_B, _B]:
    """One evaluation of many independent latches, elementwise: the new alarms and where
    an alarm turned on. No signal (NaN) turns the alarm off; a raised alarm stays while
    ``severity >= release``; a lowered one turns on at ``severity >= 1``."""
    with np.errstate(invalid="ignore"):
        signal = ~np.isnan(severity)
        kept = alarm & (severity >= release)
        raised = ~alarm & (severity >= 1.0)
    new: _B = signal & (kept | raised)
    onset: _B = signal & raised
    return new, onset


class Latched:
    """What the windowed detectors share: settings from their ``params`` dataclass (its
    fields are the constructor's arguments, in snapshot order), the last score, and the
    alarm, a hysteresis over the severity in threshold units (``1`` = at the threshold).

    The alarm turns on when the severity reaches 1 and turns off when it falls below
    ``release`` (``0 < release <= 1``) or when there is no signal (NaN: volume under the
    floor). ``detections`` counts the times it turned on. Without the gap between the two
    levels a score that hovers at the threshold would raise one alarm per evaluation.
    """

    kind: ClassVar[str]
    params: ClassVar[type[Any]]
    settings_names: ClassVar[tuple[str, ...]]

    floor: ClassVar[int]
    """The least volume floor that gives a statistic."""

    __slots__ = (
        "alarm",
        "detections",
        "min_count",
        "min_reference",
        "release",
        "score",
        "threshold",
    )

    def __init_subclass__(cls) -> None:
        cls.settings_names = tuple(f.name for f in dataclasses.fields(cls.params))

    def _start(self, threshold: float, min_count: int, min_reference: int, release: float) -> None:
        """The shared settings checked, no score, the alarm off (a subclass's constructor
        calls it)."""
        if threshold <= 0:
            raise ValueError("threshold must be positive")
        if min_count < self.floor or min_reference < self.floor:
            raise ValueError(f"volume floors must be at least {self.floor}")
        if not 0.0 < release <= 1.0:
            raise ValueError("release must be in (0, 1]")
        self.threshold = float(threshold)
        self.min_count = int(min_count)
        self.min_reference = int(min_reference)
        self.release = release
        self.alarm = False
        self.detections = 0
        self.score = float("nan")

    def statistic(self, short: Any, long: Any) -> F64:
        """The statistic of every evaluation (NaN: no signal)."""
        raise NotImplementedError

    def severity(self, value: F64) -> F64:
        """The statistic in threshold units, the watched direction positive."""
        raise NotImplementedError

    def update(self, short: Any, long: Any) -> I64:
        """Evaluate in order; indices (into the batch) where the alarm turned on."""
        value = self.statistic(short, long).reshape(-1)
        if value.size == 0:
            return np.zeros(0, dtype=np.int64)
        self.score = float(value[-1])
        return self.feed(self.severity(value))

    def feed(self, severity: F64) -> I64:
        """Evaluate ``severity`` in order; indices where the alarm turned on."""
        out: list[int] = []
        alarm = np.array([self.alarm])
        for i in range(severity.size):
            alarm, onset = latch_step(alarm, severity[i : i + 1], self.release)
            if onset[0]:
                out.append(i)
        self.alarm = bool(alarm[0])
        self.detections += len(out)
        return np.asarray(out, dtype=np.int64)

    def snapshot(self) -> dict[str, Any]:
        settings = {n: getattr(self, n) for n in self.settings_names}
        return {
            "kind": self.kind,
            "version": 1,
            **{n: v.value if isinstance(v, Direction) else v for n, v in settings.items()},
            "score": float_out(self.score),
            "alarm": self.alarm,
            "detections": self.detections,
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> Self:
        check_version(snapshot, cls.kind)
        det = cls(**{n: snapshot[n] for n in cls.settings_names})
        det.score = float_in(snapshot["score"])
        det.alarm = bool(snapshot["alarm"])
        det.detections = int(snapshot["detections"])
        return det


class Held:
    """What the sequential detectors share: ``detections``, and the alarm.

    A sequential detector restarts after a detection (see each detector's reset policy),
    so its statistic falls back to 0 at once; the alarm stays raised while fewer than
    ``hold`` values have been seen since, so that a scrape in between still sees it.
    """

    __slots__ = ("detections", "hold", "since")

    def _start_hold(self, hold: int) -> None:
        if hold < 1:
            raise ValueError("hold must be at least 1")
        self.hold = int(hold)
        self.detections = 0
        self.since: int | None = None
        """Values seen after the latest detection (``None``: none yet)."""

    @property
    def alarm(self) -> bool:
        return self.since is not None and self.since < self.hold

    def _held(self, values: int, offsets: list[int]) -> I64:
        """A batch of ``values`` values was processed, with detections at ``offsets``
        (returned as an array)."""
        # both counts stop at MAX_COUNT, so that what a snapshot brings back restores again
        if offsets:
            self.detections = min(self.detections + len(offsets), MAX_COUNT)
            self.since = values - 1 - offsets[-1]
        elif self.since is not None:
            self.since = min(self.since + values, MAX_COUNT)
        return np.asarray(offsets, dtype=np.int64)

    def _hold_state(self) -> dict[str, Any]:
        return {"hold": self.hold, "detections": self.detections, "since": self.since}

    def _restore_hold(self, state: dict[str, Any]) -> None:
        """The hold of a snapshot, its counts checked (ValueError when out of range)."""
        self._start_hold(count_in(state, "hold", low=1))
        self.detections = count_in(state, "detections")
        self.since = None if state["since"] is None else count_in(state, "since")
