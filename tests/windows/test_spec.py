"""Window configuration: durations, labels, validation, decayed layout."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragstream.windows import (
    WindowSpec,
    WindowStore,
    bucket_of,
)
from tests.support import defaults


def test_default_windows_and_labels() -> None:
    spec = defaults.window_spec(columns=("rr",))
    assert spec.names == ("1m", "5m", "1h", "24h")
    assert spec.buckets == 60
    assert spec.bins == 20
    assert spec.horizon == 60.0
    assert spec.width(86400.0) == 1440.0
    assert defaults.window_spec(columns=("rr",), windows=(90.0, 7200.0, 604800.0)).names == (
        "90s",
        "2h",
        "1w",
    )


def test_decayed_layout_is_half_life_major() -> None:
    spec = defaults.window_spec(columns=(), decayed=("dcg", "rr"), half_lives=(60.0, 3600.0))
    assert spec.decayed_width == 4
    lam = math.log(2)
    np.testing.assert_allclose(spec.rates, [lam / 60, lam / 60, lam / 3600, lam / 3600])
    assert WindowSpec.from_dict(spec.to_dict()) == spec


def test_bucket_of_is_floor() -> None:
    assert bucket_of([-0.5, 0.0, 0.999, 1.0, 59.0], 1.0).tolist() == [-1, 0, 0, 1, 59]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"columns": ("a", "a")},
        {"columns": ("a",), "decayed": ("d",)},
        {"columns": ("a",), "decayed": ("d",), "half_lives": (0.0,)},
        {"columns": ("a",), "windows": (300.0, 60.0)},
        {"columns": ("a",), "windows": ()},
        {"columns": ("a",), "buckets": 0},
        {"columns": ("a",), "max_exponent": 800.0},
        {"columns": ("a", "b"), "hist_columns": ("c",)},
        {"columns": ("a", "b"), "hist_columns": ("b", "a")},  # not in column order
        {"columns": ("a", "b"), "hist_columns": ("a", "a")},
    ],
)
def test_rejects_bad_specs(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        defaults.window_spec(**kwargs)


def test_hist_columns_set_memory_and_round_trip() -> None:
    full = defaults.window_spec(
        columns=("a", "b", "c", "d"), decayed=("x",), half_lives=(60.0,), bins=10
    )
    some = defaults.window_spec(
        columns=("a", "b", "c", "d"),
        decayed=("x",),
        half_lives=(60.0,),
        bins=10,
        hist_columns=("b", "d"),
    )
    assert full.histogrammed == full.columns
    assert some.hist_index.tolist() == [1, 3]
    # 8 (rows) + 24 per column + 4·bins per histogram + 16 per decayed value
    assert full.slot_nbytes() == 8 + 24 * 4 + 40 * 4 + 16
    assert some.slot_nbytes() == 8 + 24 * 4 + 40 * 2 + 16
    slots = sum(60 + 1 + math.ceil(60.0 / (w / 60)) + 1 for w in some.windows)
    assert some.series_nbytes() == slots * some.slot_nbytes() + 4 * 40 * 2  # int64 totals
    keys = 8 * sum(60 + 1 + math.ceil(60.0 / (w / 60)) for w in some.windows)
    assert WindowStore(some).nbytes == keys + some.series_nbytes()
    assert WindowStore(full).nbytes == keys + full.series_nbytes()
    assert WindowSpec.from_dict(some.to_dict()) == some
    legacy = full.to_dict()
    del legacy["hist_columns"]  # saved before the option existed: every column
    assert WindowSpec.from_dict(legacy) == full


def test_histograms_of_some_columns_equal_the_full_ones() -> None:
    full = defaults.window_spec(columns=("a", "b", "c"), bins=4)
    some = defaults.window_spec(columns=("a", "b", "c"), bins=4, hist_columns=("a", "c"))
    rng = np.random.default_rng(2)
    values = rng.uniform(-0.2, 1.2, (300, 3))
    values[rng.uniform(size=values.shape) < 0.2] = np.nan
    times = 1_700_000_000.0 - rng.uniform(0, 100.0, 300)
    a, b = WindowStore(full), WindowStore(some)
    a.add(0, (), 1_700_000_000.0, times, values)
    b.add(0, (), 1_700_000_000.0, times, values)
    x = a.read(1_700_000_000.0, exact=True, histograms=True)
    y = b.read(1_700_000_000.0, exact=True, histograms=True)
    assert x.histograms is not None
    assert y.histograms is not None
    assert y.spec.histogrammed == ("a", "c")
    assert y.histograms.tolist() == x.histograms[:, :, [0, 2]].tolist()
    assert y.count.tolist() == x.count.tolist()
    assert y.total.tolist() == x.total.tolist()
