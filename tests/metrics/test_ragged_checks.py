"""The compiled kernels (`ragstream.metrics._ragged`) called directly check what they are
given before they size or read anything: a cutoff whose running values would not fit in
memory's sizes, and buffers not aligned to their 8-byte items, are ValueErrors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

try:
    from ragstream.metrics import _ragged
except ImportError:  # pragma: no cover - built by `pip install -e .`
    _ragged = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(_ragged is None, reason="ragstream.metrics._ragged not built")

_PRECISION = bytes([_ragged.FAMILIES.index("precision")]) if _ragged is not None else b""


def _arrays() -> dict[str, Any]:
    return {
        "rel": np.array([1.0, 0.0, 1.0]).data,
        "rel_offsets": np.array([0, 3], dtype=np.int64).data,
        "judged": np.array([1.0, 1.0]).data,
        "judged_offsets": np.array([0, 2], dtype=np.int64).data,
        "codes": _PRECISION,
        "ks": np.array([2], dtype=np.int64).data,
        "threshold": 1.0,
        "discount": np.log2(np.arange(2, 4, dtype=np.float64)).data,
        "out": np.empty(1).data,
        "start": 0,
        "stop": 1,
    }


def test_the_arguments_as_the_plan_gives_them() -> None:
    out = np.empty(1)
    args = _arrays() | {"out": out.data}
    assert _ragged.ragged(*args.values())
    assert out.tolist() == [0.5]


@pytest.mark.parametrize("k", [1 << 61, (1 << 63) - 1, (1 << 62) + 3])
def test_a_cutoff_whose_room_would_wrap_is_refused(k: int) -> None:
    args = _arrays() | {"ks": np.array([k], dtype=np.int64).data}
    with pytest.raises(ValueError, match="a cutoff of at most"):
        _ragged.ragged(*args.values())
    with pytest.raises(ValueError, match="a cutoff of at most"):
        _ragged.kernel(_PRECISION, np.array([k], dtype=np.int64).data, 1.0, args["discount"])


@pytest.mark.parametrize("name", ["rel", "rel_offsets", "judged", "judged_offsets", "ks", "out"])
def test_a_misaligned_buffer_is_refused(name: str) -> None:
    arrays = _arrays()
    whole = memoryview(arrays[name]).cast("B")
    shifted = bytearray(len(whole) + 1)
    shifted[1:] = whole
    args = arrays | {name: memoryview(shifted)[1:]}
    with pytest.raises(ValueError, match="aligned"):
        _ragged.ragged(*args.values())


def test_out_sized_without_overflow() -> None:
    """More rows than `out` holds, however many metrics: refused before anything is
    written."""
    args = _arrays() | {"out": np.empty(0).data}
    with pytest.raises(ValueError, match="out is too small"):
        _ragged.ragged(*args.values())
