"""Checks of the numbers a detector snapshot brings back, before any loop (compiled or not)
reads them: a snapshot comes from the state topic or a file, which may be damaged or
foreign, so each count must be an integer in range and each float finite. A failed
check raises ValueError, which the hand-over counts as a refused snapshot."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_COUNT", "count_in", "finite_in"]

MAX_COUNT = 1 << 53
"""The largest count a snapshot may hold (values, ticks, parameters): every count the
detectors keep is exact as a double and far from the 64-bit limit of the compiled loops."""


def count_in(snapshot: dict[str, Any], key: str, low: int = 0, high: int = MAX_COUNT) -> int:
    """``snapshot[key]`` as an integer in ``[low, high]`` (a bool or a float is refused)."""
    value = snapshot[key]
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"snapshot field {key!r}: an integer in [{low}, {high}], got {value!r}")
    return value


def finite_in(snapshot: dict[str, Any], key: str) -> float:
    """``snapshot[key]`` as a finite float (an int or a float; a bool is refused)."""
    value = snapshot[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"snapshot field {key!r}: a number, got {value!r}")
    try:
        out = float(value)
    except OverflowError:  # an int beyond the doubles
        out = math.inf
    if not math.isfinite(out):
        raise ValueError(f"snapshot field {key!r} holds a non-finite number: {value!r}")
    return out
