"""Snapshots that `update` could not have left are refused by `restore` (ValueError, which
the hand-over counts as a refused snapshot) before any loop reads them; and the compiled
loops check what they are given when called directly."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from ragstream.drift import Adwin, PageHinkley
from ragstream.drift._common import MAX_COUNT
from tests.support import defaults

try:
    from ragstream.drift import _kernels
except ImportError:  # pragma: no cover - the extension is built by `pip install -e .`
    _kernels = None  # type: ignore[assignment]

Change = Callable[[dict[str, Any]], None]


def _adwin() -> Adwin:
    det = defaults.adwin(clock=4, max_buckets=3, grace_period=5, max_window=200)
    det.update(np.linspace(0.0, 1.0, 150))
    assert len(det.snapshot()["rows"]) > 2
    return det


def _ph() -> PageHinkley:
    det = defaults.page_hinkley(min_instances=10, threshold=50.0)
    det.update(np.sin(np.arange(40.0)))
    return det


def _set(key: str, value: object) -> Change:
    def change(snapshot: dict[str, Any]) -> None:
        snapshot[key] = value

    return change


def _empty_row(snapshot: dict[str, Any]) -> None:
    """The top row emptied and the width kept consistent: a drop of it would shift out a
    bucket that is not there."""
    totals, _ = snapshot["rows"][-1]
    snapshot["width"] -= len(totals) << (len(snapshot["rows"]) - 1)
    snapshot["rows"][-1] = [[], []]


def _empty_middle_row(snapshot: dict[str, Any]) -> None:
    totals, _ = snapshot["rows"][1]
    snapshot["width"] -= len(totals) << 1
    snapshot["rows"][1] = [[], []]


ADWIN_DAMAGE: dict[str, Change] = {
    "an empty top row": _empty_row,
    "an empty middle row": _empty_middle_row,
    "max_buckets 2**58": _set("max_buckets", 1 << 58),
    "clock near 2**63": _set("clock", (1 << 63) - 1),
    "tick near 2**63": _set("tick", (1 << 63) - 5),
    "a negative tick": _set("tick", -1),
    "a float tick": _set("tick", 3.5),
    "a bool clock": _set("clock", True),
    "an infinite total": _set("total", math.inf),
    "a NaN variance": _set("variance", math.nan),
    "a width that does not add up": lambda s: s.update(width=s["width"] + 1),
    "too many rows": lambda s: s.update(rows=[[[1.0], [0.0]]] * 64),
    "a string in a row": lambda s: s["rows"][0][0].__setitem__(0, "1"),
    "rows of unequal length": lambda s: s["rows"][0][1].append(0.0),
    "detections below 0": _set("detections", -1),
    "hold 0": _set("hold", 0),
}

PH_DAMAGE: dict[str, Change] = {
    "n near 2**63": _set("n", (1 << 63) - 5),
    "a negative n": _set("n", -1),
    "a NaN mean": _set("mean", math.nan),
    "an infinite g": _set("g_down", math.inf),
    "a NaN threshold": _set("threshold", math.nan),
    "a NaN delta": _set("delta", math.nan),
    "a huge integer m2": _set("m2", 10**400),
    "since below 0": _set("since", -3),
}


@pytest.mark.parametrize("damage", ADWIN_DAMAGE.values(), ids=ADWIN_DAMAGE.keys())
def test_a_damaged_adwin_snapshot_is_refused(damage: Change) -> None:
    snapshot = _adwin().snapshot()
    Adwin.restore(snapshot)  # the snapshot as written is fine
    damage(snapshot)
    with pytest.raises(ValueError, match="snapshot"):
        Adwin.restore(snapshot)


@pytest.mark.parametrize("damage", PH_DAMAGE.values(), ids=PH_DAMAGE.keys())
def test_a_damaged_page_hinkley_snapshot_is_refused(damage: Change) -> None:
    snapshot = _ph().snapshot()
    PageHinkley.restore(snapshot)
    damage(snapshot)
    with pytest.raises(ValueError, match="snapshot"):
        PageHinkley.restore(snapshot)


def test_an_emptied_window_restores() -> None:
    det = defaults.adwin()
    restored = Adwin.restore(det.snapshot())  # one empty row 0: a window after a reset
    assert restored.update([0.5, 0.5]).tolist() == []
    assert restored.width == 2
    assert Adwin.restore({**det.snapshot(), "tick": MAX_COUNT}).snapshot()["tick"] == MAX_COUNT


needs_kernels = pytest.mark.skipif(_kernels is None, reason="ragstream.drift._kernels not built")


def _adwin_args(det: Adwin, batch: Any, **changes: Any) -> list[Any]:
    snapshot = det.snapshot()
    args = {
        "rows": [(list(t), list(m)) for t, m in snapshot["rows"]],
        "values": np.ascontiguousarray(batch, dtype=np.float64).data,
        "width": snapshot["width"],
        "total": snapshot["total"],
        "variance": snapshot["variance"],
        "tick": snapshot["tick"],
        "score": snapshot["score"],
        "clock": det.clock,
        "grace": det.grace_period,
        "max_buckets": det.max_buckets,
        "max_window": det.max_window,
        "min_length": det.min_window_length,
        "delta": det.delta,
        "direction": 0,
    } | changes
    return list(args.values())


@needs_kernels
@pytest.mark.parametrize(
    "changes",
    [
        {"tick": (1 << 63) - 2},
        {"width": 10**6},  # more than the rows hold
        {"direction": 7},
        {"delta": math.nan},
        {"values": np.array([1.0, math.inf])},
        {"values": memoryview(np.zeros(3).tobytes())[1:17]},  # not aligned to a double
    ],
    ids=["tick", "width", "direction", "delta", "infinite value", "misaligned"],
)
def test_the_compiled_adwin_loop_checks_its_arguments(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="adwin"):
        _kernels.adwin_update(*_adwin_args(_adwin(), [0.5, 0.25, 0.75], **changes))


@needs_kernels
def test_the_compiled_adwin_loop_refuses_rows_update_cannot_leave() -> None:
    det = _adwin()
    rows = [(list(t), list(m)) for t, m in det.snapshot()["rows"]]
    width = det.snapshot()["width"] - len(rows[-1][0]) * (1 << (len(rows) - 1))
    empty_top = [*rows[:-1], ([], [])]
    with pytest.raises(ValueError, match="1 to max_buckets"):
        _kernels.adwin_update(*_adwin_args(det, [0.5], rows=empty_top, width=width))
    ints = [([1] * len(t), list(m)) for t, m in rows]
    with pytest.raises(TypeError, match="floats"):
        _kernels.adwin_update(*_adwin_args(det, [0.5], rows=ints))


@needs_kernels
def test_a_huge_max_buckets_grows_rows_as_python_lists_do() -> None:
    """No allocation of max_buckets up front: 2**58 buckets a row is a row that never
    compresses, which both loops keep as it grows."""
    values = np.linspace(0.0, 1.0, 300)
    compiled = defaults.adwin(max_buckets=1 << 58, max_window=10_000)
    python = defaults.adwin(max_buckets=1 << 58, max_window=10_000)
    compiled.update(values)
    python._feed_python(values)
    assert compiled.snapshot()["rows"] == [[list(t), list(m)] for t, m in python._rows]


def test_page_hinkley_raises_where_python_raises_on_overflow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A square past the doubles: Python's float ** raises OverflowError, and so does the
    compiled loop (it used to return NaN state)."""
    import ragstream.drift.page_hinkley as module

    values = np.array([0.9e154, 0.9e154])  # squares fit; the square of their sum does not
    for kernels in (vars(module)["_kernels"], None):
        monkeypatch.setattr(module, "_kernels", kernels)
        det = defaults.page_hinkley(min_instances=10)
        det.update([0.0])
        with pytest.raises(OverflowError):
            det.update(values)


@needs_kernels
def test_a_clock_near_2_63_runs_as_the_python_loop_does() -> None:
    """Any clock the constructor takes: the loop's next check is never computed past 2**63."""
    values = np.linspace(0.0, 1.0, 100)
    compiled = defaults.adwin(clock=(1 << 63) - 1)
    python = defaults.adwin(clock=(1 << 63) - 1)
    compiled.update(values)
    python._feed_python(values)
    assert compiled.snapshot()["tick"] == python._tick == 100
    assert compiled.snapshot()["rows"] == [[list(t), list(m)] for t, m in python._rows]


@pytest.mark.parametrize("field", ["since", "detections"])
def test_counts_restored_near_the_limit_restore_again(field: str) -> None:
    rng = np.random.default_rng(7)
    drop = np.r_[rng.normal(0.8, 0.05, 300), rng.normal(0.3, 0.05, 300)]
    det = defaults.page_hinkley(min_instances=30, threshold=20.0)
    assert det.update(drop).size
    det = PageHinkley.restore({**det.snapshot(), field: MAX_COUNT - 1})
    hits = det.update(drop if field == "detections" else np.full(3, 0.5))
    assert (hits.size > 0) == (field == "detections")
    back = PageHinkley.restore(det.snapshot())
    assert back.snapshot() == det.snapshot()
    assert det.snapshot()[field] == MAX_COUNT
