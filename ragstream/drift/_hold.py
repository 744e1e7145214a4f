"""The alarm of a sequential detector: raised by a detection, held for ``hold`` values."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragstream.drift._common import I64, count_in

__all__ = ["Held"]


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
        if offsets:
            self.detections += len(offsets)
            self.since = values - 1 - offsets[-1]
        elif self.since is not None:
            self.since += values
        return np.asarray(offsets, dtype=np.int64)

    def _hold_state(self) -> dict[str, Any]:
        return {"hold": self.hold, "detections": self.detections, "since": self.since}

    def _restore_hold(self, state: dict[str, Any]) -> None:
        """The hold of a snapshot, its counts checked (ValueError when out of range)."""
        self._start_hold(count_in(state, "hold", low=1))
        self.detections = count_in(state, "detections")
        self.since = None if state["since"] is None else count_in(state, "since")
