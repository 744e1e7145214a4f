"""How the sequential detectors' defaults were chosen: false alarms and delays on a grid.

    python -m bench.drift_calibrate ph rr        # Page-Hinkley (delta x threshold), ~15 min
    python -m bench.drift_calibrate adwin rr     # ADWIN (delta), ~10 min

Stationary values (no arrival times: these detectors see only the value sequence), then
the median delay over 20 seeds after a drop of 0.05, 0.1 and 0.2, with 50 000 values before
the change. The figures are in docs/drift.md, "Calibration".
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bench.drift_data import MODELS
from ragstream.drift import Adwin, PageHinkley
from tests.support import defaults

PH_GRID = [
    (k, float(h)) for k in (0.05, 0.08, 0.1, 0.12) for h in (40, 50, 60, 70, 80, 100, 120, 150, 180)
]
ADWIN_GRID = (0.002, 1e-4, 1e-5, 1e-6)


Setting = tuple[float, float] | float


def make(setting: Setting) -> PageHinkley | Adwin:
    """Page-Hinkley for a ``(delta, threshold)`` pair, ADWIN for a ``delta``."""
    if isinstance(setting, tuple):
        return defaults.page_hinkley(delta=setting[0], threshold=setting[1])
    return defaults.adwin(delta=setting)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("detector", choices=("ph", "adwin"))
    ap.add_argument("metric", choices=[m.name for m in MODELS])
    args = ap.parse_args(argv)
    model = next(m for m in MODELS if m.name == args.metric)
    ph = args.detector == "ph"
    grid: list[Setting] = list(PH_GRID) if ph else list(ADWIN_GRID)
    total, chunk = (60_480_000, 2_000_000) if ph else (20_000_000, 1_000_000)
    rng = np.random.default_rng(7 if ph else 8)
    dets = {s: make(s) for s in grid}
    t = time.perf_counter()
    done = 0
    while done < total:
        x = model.sample(rng, chunk)
        for d in dets.values():
            d.update(x)
        done += x.size
    print(f"{args.metric}: {done:,} stationary values, {time.perf_counter() - t:.0f} s")
    for s, d in dets.items():
        print(f"  {s}: {d.detections} false alarms")
    for drop in (0.05, 0.1, 0.2):
        delays: dict[Setting, list[float]] = {s: [] for s in grid}
        for seed in range(20):
            r = np.random.default_rng(100 + seed)
            pre = model.sample(r, 50_000)
            post = model.sample(r, 40_000, drop)
            for s in grid:
                d = make(s)
                d.update(pre)
                hit = d.update(post)
                delays[s].append(float(hit[0] + 1) if hit.size else np.inf)
        medians = ", ".join(f"{s}: {np.median(v):.0f}" for s, v in delays.items())
        print(f"drop {drop}: median delay (queries) {medians}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
