"""What every detector shares: value coercion, the watched direction, JSON-safe floats,
and the checks of the numbers a snapshot brings back.

A snapshot comes from the state topic or a file, which may be damaged or foreign, so each
count must be an integer in range and each float finite before any loop (compiled or not)
reads it; a failed check raises ValueError, which the hand-over counts as a refused
snapshot."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "F64",
    "I64",
    "MAX_COUNT",
    "Direction",
    "as_values",
    "check_version",
    "count_in",
    "finite_in",
    "float_in",
    "float_out",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

SNAPSHOT_VERSION = 1
MAX_COUNT = 1 << 53
"""The largest count a snapshot may hold (values, ticks, parameters): every count the
detectors keep is exact as a double and far from the 64-bit limit of the compiled loops."""


class Direction(StrEnum):
    """Which change raises an alarm. Retrieval and answer quality get worse when they go
    ``down`` (the default); a hallucination ratio gets worse when it goes ``up``."""

    DOWN = "down"
    UP = "up"
    BOTH = "both"


def as_values(values: npt.ArrayLike) -> F64:
    """A 1-D float64 array of the finite values in ``values`` (a number or an array),
    in order; NaN means "no value" and is dropped. Infinite values are refused."""
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size and not np.isfinite(arr).all():
        if np.isinf(arr).any():
            raise ValueError("drift detectors accept finite values or NaN, not infinities")
        arr = arr[~np.isnan(arr)]
    return arr


def float_out(value: float) -> float | None:
    """A float for a JSON snapshot: NaN becomes ``None`` (JSON has no NaN)."""
    return None if math.isnan(value) else float(value)


def float_in(value: float | None) -> float:
    """Inverse of :func:`float_out`."""
    return math.nan if value is None else float(value)


def check_version(snapshot: dict[str, Any], kind: str) -> None:
    """Refuse a snapshot of another kind or version, naming what was found."""
    if snapshot.get("kind") != kind:
        raise ValueError(f"not a {kind} snapshot: kind {snapshot.get('kind')!r}")
    if snapshot.get("version") != SNAPSHOT_VERSION:
        raise ValueError(f"unsupported {kind} snapshot version {snapshot.get('version')!r}")


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
