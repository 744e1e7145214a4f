"""The scatter kernels give the same bits whether they gather the present cells or sum
every cell (missing ones as 0), on sparse rows, dense rows and everything between."""

from __future__ import annotations

import numpy as np
import pytest

from ragstream.windows import _scatter
from ragstream.windows._scatter import Digest, decayed_sums, plain_sums

EDGES = np.linspace(0.05, 1.0, 20)


def _rows(rng: np.random.Generator, n: int, width: int, present: float) -> np.ndarray:
    values = rng.random((n, width))
    values[:, 0] = rng.normal(0.0, 1e6, n)  # signed and large: rounding shows
    values[rng.random((n, width)) >= present] = np.nan
    return values


@pytest.mark.parametrize("present", [0.0, 0.05, 0.15, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("slots", [1, 7, 300])
def test_gathered_sums_equal_full_sums_bit_for_bit(
    present: float, slots: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(int(present * 100) + slots)
    n, width = 2000, 34
    local = rng.integers(0, slots, n)
    values = _rows(rng, n, width, present)
    hist = np.arange(0, width, 3)
    times = 1000.0 + rng.random(n) * 500.0
    rates = np.log(2.0) / rng.uniform(60.0, 86400.0, width)
    out = {}
    for sparse in (0.0, 1.0):  # never gather; always gather
        monkeypatch.setattr(_scatter, "_SPARSE", sparse)
        sums = plain_sums(local, slots, Digest.of(values, EDGES, hist), len(EDGES))
        dcount, dsum = decayed_sums(local, slots, times, Digest.of(values), rates, 900.0)
        out[sparse] = (sums.rows, sums.count, sums.total, sums.total_sq, sums.hist, dcount, dsum)
    for full, gathered in zip(out[0.0], out[1.0], strict=True):
        assert full.shape == gathered.shape
        assert full.dtype == gathered.dtype
        np.testing.assert_array_equal(full, gathered, strict=True)
        assert np.signbit(full).tolist() == np.signbit(gathered).tolist()
    assert int(out[0.0][1].sum()) == int((~np.isnan(values)).sum())  # every value counted
