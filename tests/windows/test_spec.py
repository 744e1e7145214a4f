"""Window configuration: durations, labels, validation, decayed layout."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragstream.windows import WindowSpec, bucket_of, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1m", 60.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("24h", 86400.0),
        ("1d", 86400.0),
        ("90s", 90.0),
        ("250ms", 0.25),
        (30, 30.0),
        ("2.5m", 150.0),
    ],
)
def test_parse_duration(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "5 minutes", "-1m", "0s", "h"])
def test_parse_duration_rejects(bad: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


def test_default_windows_and_labels() -> None:
    spec = WindowSpec(columns=("rr",))
    assert spec.names == ("1m", "5m", "1h", "24h")
    assert spec.buckets == 60
    assert spec.bins == 20
    assert spec.horizon == 60.0
    assert spec.width(86400.0) == 1440.0
    assert format_duration(90.0) == "90s"
    assert format_duration(7200.0) == "2h"
    assert format_duration(0.5) == "0.5s"


def test_decayed_layout_is_half_life_major() -> None:
    spec = WindowSpec(columns=(), decayed=("dcg", "rr"), half_lives=(60.0, 3600.0))
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
        {"columns": ("a",), "windows": (60.0000001, 60.0000002)},  # both "60s"
    ],
)
def test_rejects_bad_specs(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        WindowSpec(**kwargs)  # type: ignore[arg-type]
