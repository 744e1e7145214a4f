"""What every detector shares: value coercion, the watched direction, JSON-safe floats."""

from __future__ import annotations

import dataclasses
import math
from enum import StrEnum
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "F64",
    "I64",
    "Direction",
    "arguments",
    "as_values",
    "check_version",
    "float_in",
    "float_out",
]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

SNAPSHOT_VERSION = 1


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


def arguments(params: Any) -> dict[str, Any]:
    """A detector's parameters dataclass as its constructor's keyword arguments."""
    return {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}


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
