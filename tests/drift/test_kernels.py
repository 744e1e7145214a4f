"""The compiled loops of the detectors (ragstream.drift._kernels) against their Python code:
the same detections and the same state, bit for bit, after every batch."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import numpy as np
import pytest

import ragstream.drift.adwin as adwin_module
import ragstream.drift.page_hinkley as ph_module
from ragstream.drift import Adwin, PageHinkley
from tests.support import defaults

BUILT = importlib.util.find_spec("ragstream.drift._kernels") is not None

Detector = Adwin | PageHinkley


def test_the_extension_is_built() -> None:
    # `pip install -e .` compiles it (setup.py); without it the Python loops serve.
    assert BUILT
    from ragstream.drift import _kernels

    assert vars(adwin_module)["_kernels"] is _kernels
    assert vars(ph_module)["_kernels"] is _kernels


pytestmark = pytest.mark.skipif(not BUILT, reason="ragstream.drift._kernels is not built")


def _stream(rng: np.random.Generator, n: int) -> np.ndarray:
    """Values in [0, 1] with level shifts of random size and spread, 5% NaN."""
    parts: list[np.ndarray] = []
    while sum(p.size for p in parts) < n:
        level, spread = rng.random(), 0.3 * rng.random()
        parts.append(np.clip(rng.normal(level, spread, int(rng.integers(30, 2000))), 0.0, 1.0))
    x = np.concatenate(parts)[:n]
    x[rng.random(n) < 0.05] = np.nan
    return x


def _state(detector: Detector) -> str:
    return json.dumps(detector.snapshot())


def _same_as_python(
    monkeypatch: pytest.MonkeyPatch,
    module: Any,
    compiled: Detector,
    python: Detector,
    x: np.ndarray,
    rng: np.random.Generator,
) -> int:
    """Feed both in the same random batches, `python` without the extension; assert the
    same offsets and state after each batch. The detections."""
    found = 0
    at = 0
    while at < x.size:
        batch = x[at : at + int(rng.integers(1, 400))]
        at += batch.size
        ours = compiled.update(batch)
        with monkeypatch.context() as patch:
            patch.setattr(module, "_kernels", None)
            reference = python.update(batch)
        assert ours.tolist() == reference.tolist()
        assert _state(compiled) == _state(python)
        found += ours.size
    return found


def _adwin_params(seed: int, rng: np.random.Generator) -> dict[str, Any]:
    params: dict[str, Any] = {"direction": ("down", "up", "both")[seed % 3]}
    if seed % 4 == 1:  # a small window: the oldest buckets are dropped
        params["max_window"] = int(rng.integers(20, 500))
    if seed % 2 == 0:
        params |= {
            "clock": int(rng.integers(1, 50)),
            "max_buckets": int(rng.integers(2, 8)),
            "grace_period": int(rng.integers(1, 40)),
            "min_window_length": int(rng.integers(1, 10)),
            "delta": float(rng.choice([1e-5, 0.002, 0.1, 0.5])),
        }
    return params


def _ph_params(seed: int, rng: np.random.Generator) -> dict[str, Any]:
    return {
        "direction": ("down", "up", "both")[seed % 3],
        "min_instances": int(rng.choice([2, 30, 1000])),
        "threshold": float(rng.choice([5.0, 30.0, 110.0])),
        "delta": float(rng.choice([0.0, 0.08, 0.5])),
    }


@pytest.mark.parametrize(
    ("kind", "module", "params"),
    [(defaults.adwin, adwin_module, _adwin_params), (defaults.page_hinkley, ph_module, _ph_params)],
    ids=["adwin", "page_hinkley"],
)
def test_compiled_is_the_python_code(
    monkeypatch: pytest.MonkeyPatch, kind: Any, module: Any, params: Any
) -> None:
    # Twelve streams, each with its settings (directions, windows small enough to drop
    # buckets, warm-ups, thresholds): the detections reset the detectors on the way.
    found = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        settings = params(seed, rng)
        x = _stream(rng, int(rng.integers(2000, 12000)))
        found += _same_as_python(monkeypatch, module, kind(**settings), kind(**settings), x, rng)
    assert found >= 20


def test_page_hinkley_segments_bit_for_bit() -> None:
    # Many short segments from random states, warm or not: the rare last-bit differences
    # (libm's pow(x, 2) is not always x * x) show only over thousands of them.
    rng = np.random.default_rng(7)
    for trial in range(10_000):
        compiled = defaults.page_hinkley(
            min_instances=int(rng.choice([2, 30])),
            threshold=float(rng.choice([5.0, 30.0, 1e9])),
            direction=str(rng.choice(["up", "down", "both"])),
        )
        compiled._n = int(rng.integers(0, 100))
        compiled._mean = float(rng.random()) if compiled._n else 0.0
        compiled._m2 = float(rng.random() * compiled._n * 0.1)
        reference = PageHinkley.restore(compiled.snapshot())
        x = rng.random(int(rng.integers(1, 200)))
        hit = compiled._segment(x)
        assert (hit, _state(compiled)) == (reference._segment_numpy(x), _state(reference)), trial


def test_restored_detectors_continue_as_the_python_code(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    x = _stream(rng, 6000)
    adwin = defaults.adwin(max_window=300)
    adwin.update(x[:3000])
    snapshot = json.loads(_state(adwin))
    compiled, python = Adwin.restore(snapshot), Adwin.restore(snapshot)
    _same_as_python(monkeypatch, adwin_module, compiled, python, x[3000:], rng)
    ph = defaults.page_hinkley(min_instances=30)
    ph.update(x[:3000])
    snapshot = json.loads(_state(ph))
    compiled_ph, python_ph = PageHinkley.restore(snapshot), PageHinkley.restore(snapshot)
    _same_as_python(monkeypatch, ph_module, compiled_ph, python_ph, x[3000:], rng)


def test_python_errors_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # No grace: a check of a one-value window takes log(log(1)) = log(0), which Python's
    # math refuses; the compiled loop raises the same error.
    with pytest.raises(ValueError, match="math domain error"):
        defaults.adwin(grace_period=0, clock=1).update([0.5])
    with monkeypatch.context() as patch:
        patch.setattr(adwin_module, "_kernels", None)
        with pytest.raises(ValueError, match="math domain error"):
            defaults.adwin(grace_period=0, clock=1).update([0.5])
