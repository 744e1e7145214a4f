"""Drift detection benchmark: delay after a known drop, false alarms on stationary traffic.

    python -m bench.drift_bench            # a simulated week per rate (slow: see docs/drift.md)
    python -m bench.drift_bench --quick    # a few hours per rate, one seed: about a minute

Synthetic per-query reciprocal rank and nDCG (bench/drift_data.py) arrive as a Poisson
process at 1, 10 and 100 labeled queries per second. Every detector runs at its defaults
on the same streams:

- ours, windowed (evaluated at every scrape, 15 s, on the agent's bucket-granular windows,
  bench/drift_windows.py): ``zscore`` and ``psi`` of 5m against 1h, and of 1h against 24h;
- ours, sequential (on the per-query values): ``page_hinkley``, ``adwin``;
- river's ``drift.ADWIN()`` and ``drift.PageHinkley()`` (river's defaults: two-sided).

*Delay*: for each drop (0.02, 0.05, 0.1, 0.2 in the mean) and seed, the change comes after
more than a day of good traffic (the 24h windows are full); sequential detectors start
``--seq-warm`` queries before it. The delay is the first alarm at or after the change, in
queries and in seconds; the median over seeds is printed, with how many seeds detected it
within ``--horizon``. *False alarms*: alarms per day over ``--days`` days of stationary
traffic (a simulated week by default).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from river import drift as river_drift

from bench.drift_data import MODELS, Model, arrivals
from bench.drift_windows import Cells
from tests.support import defaults

F64 = npt.NDArray[np.float64]

RATES = (1.0, 10.0, 100.0)
DROPS = (0.02, 0.05, 0.1, 0.2)
SCRAPE = 15.0
PAIRS = (("5m", 300.0, "1h", 3600.0), ("1h", 3600.0, "24h", 86400.0))
SEQUENTIAL = ("page_hinkley", "adwin", "river ADWIN", "river PH")
WINDOWED = tuple(f"{d} {s}/{lg}" for d in ("zscore", "psi") for s, _, lg, _ in PAIRS)
DETECTORS = WINDOWED + SEQUENTIAL
DAY = 86400.0

RiverADWIN: Any = river_drift.ADWIN  # river has no type hints
RiverPH: Any = river_drift.PageHinkley


# -- sequential detectors -------------------------------------------------------------------


SPENT: dict[str, list[float]] = {}
"""Seconds and values fed, per sequential detector, over the whole run."""


class Sequential:
    """One sequential detector behind one interface: ``feed(values) -> alarm offsets``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._feed: Callable[[F64], list[int]]
        if name == "page_hinkley":
            det_ph = defaults.page_hinkley()
            self._feed = lambda x: det_ph.update(x).tolist()
        elif name == "adwin":
            det_ad = defaults.adwin()
            self._feed = lambda x: det_ad.update(x).tolist()
        else:
            det = RiverADWIN() if name == "river ADWIN" else RiverPH()
            update = det.update

            def feed(x: F64) -> list[int]:
                out = []
                for i, v in enumerate(x.tolist()):
                    update(v)
                    if det.drift_detected:
                        out.append(i)
                return out

            self._feed = feed

    def feed(self, values: F64) -> list[int]:
        t = time.perf_counter()
        out = self._feed(values)
        spent = SPENT.setdefault(self.name, [0.0, 0.0])
        spent[0] += time.perf_counter() - t
        spent[1] += values.size
        return out


# -- windowed detectors ---------------------------------------------------------------------


def windowed_onsets(cells: Cells, at: F64) -> dict[str, F64]:
    """Scrape times at which each windowed detector's alarm turned on."""
    out: dict[str, F64] = {}
    for short, s_len, long, l_len in PAIRS:
        s = cells.read(at, s_len)
        lg = cells.read(at, l_len)
        z = defaults.zscore()
        out[f"zscore {short}/{long}"] = at[z.update(s.moments(), lg.moments())]
        p = defaults.psi()
        out[f"psi {short}/{long}"] = at[p.update(s.hist, lg.hist)]
    return out


# -- runs -----------------------------------------------------------------------------------


@dataclass
class Delay:
    queries: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    missed: int = 0


def stationary(model: Model, rate: float, days: float, seed: int) -> dict[str, int]:
    """Alarms of each detector over ``days`` of traffic without a change."""
    rng = np.random.default_rng([seed, int(rate), hash(model.name) % 1000])
    duration = days * DAY
    cells = Cells(duration)
    seq = [Sequential(n) for n in SEQUENTIAL]
    alarms = dict.fromkeys(DETECTORS, 0)
    for times, values in arrivals(rng, model, rate, 0.0, duration):
        cells.add(times, values)
        for det in seq:
            alarms[det.name] += len(det.feed(values))
    for name, onsets in windowed_onsets(cells, cells.scrapes(SCRAPE)).items():
        alarms[name] = onsets.size
    return alarms


def with_drop(
    model: Model, rate: float, drop: float, seed: int, warm: int, horizon: float
) -> dict[str, tuple[float, float] | None]:
    """(queries, seconds) from the change to each detector's first alarm, or None."""
    rng = np.random.default_rng([seed, int(rate), int(drop * 1000), hash(model.name) % 1000])
    change = DAY + 2 * 3600.0 + float(rng.uniform(0, 60))  # the 24h windows are full
    end = change + horizon
    cells = Cells(end, mark=change)
    seq_start = change - warm / rate
    kept_t: list[F64] = []
    kept_v: list[F64] = []
    for times, values in arrivals(rng, model, rate, 0.0, end, change, drop):
        cells.add(times, values)
        keep = times >= seq_start
        kept_t.append(times[keep])
        kept_v.append(values[keep])
    t = np.concatenate(kept_t)
    v = np.concatenate(kept_v)
    first_after = int(np.searchsorted(t, change))
    out: dict[str, tuple[float, float] | None] = {}
    for name in SEQUENTIAL:
        det = Sequential(name)
        out[name] = None
        step = 4096
        for start in range(0, v.size, step):
            hits = [start + o for o in det.feed(v[start : start + step])]
            hits = [h for h in hits if h >= first_after]
            if hits:
                h = hits[0]
                out[name] = (float(h - first_after + 1), float(t[h] - change))
                break
    at = cells.scrapes(SCRAPE)
    for name, onsets in windowed_onsets(cells, at).items():
        late = onsets[onsets >= change]
        if late.size:
            when = late[:1]
            out[name] = (float(cells.queries_after_mark(when)[0]), float(when[0] - change))
        else:
            out[name] = None
    return out


# -- report ---------------------------------------------------------------------------------


def fmt_delay(d: Delay, seeds: int) -> str:
    if not d.queries:
        return "—"
    q = float(np.median(d.queries))
    s = float(np.median(d.seconds))
    seen = f" ({len(d.queries)}/{seeds})" if d.missed else ""
    return f"{q:,.0f} q / {fmt_seconds(s)}{seen}"


def fmt_seconds(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short stationary runs, one seed")
    ap.add_argument("--days", type=float, help="stationary days per rate (default 7; quick 0.25)")
    ap.add_argument("--seeds", type=int, help="seeds per drop (default 5; quick 1)")
    ap.add_argument("--horizon", type=float, help="seconds watched after a change (default 12 h)")
    ap.add_argument("--seq-warm", type=int, default=50_000, help="queries before the change")
    ap.add_argument("--metrics", default="rr,ndcg")
    ap.add_argument("--rates", default=",".join(str(int(r)) for r in RATES))
    args = ap.parse_args(argv)
    days = args.days if args.days is not None else (0.25 if args.quick else 7.0)
    seeds = args.seeds if args.seeds is not None else (1 if args.quick else 5)
    horizon = (
        args.horizon if args.horizon is not None else (2 * 3600.0 if args.quick else 12 * 3600.0)
    )
    metrics = [m for m in MODELS if m.name in args.metrics.split(",")]
    rates = [float(r) for r in args.rates.split(",")]

    t0 = time.perf_counter()
    load0 = os.getloadavg()
    print(f"# drift benchmark: {' '.join(sys.argv[1:]) or '(defaults)'}")
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"river {__import__('river').__version__}, {os.cpu_count()} cpus, "
        f"load {load0[0]:.1f}/{load0[1]:.1f}/{load0[2]:.1f}"
    )
    print(
        f"stationary: {days:g} days per rate; drops: {seeds} seeds, horizon {fmt_seconds(horizon)}"
    )
    print()
    for model in metrics:
        good, _ = model.means()
        print(f"## {model.name} (mean {good:.3f}): median delay after the drop (queries / time)")
        print()
        print("| drop | q/s | " + " | ".join(DETECTORS) + " |")
        print("|---" * (len(DETECTORS) + 2) + "|")
        for drop in DROPS:
            for rate in rates:
                delays = {n: Delay() for n in DETECTORS}
                for seed in range(seeds):
                    res = with_drop(model, rate, drop, seed, args.seq_warm, horizon)
                    for name, r in res.items():
                        if r is None:
                            delays[name].missed += 1
                        else:
                            delays[name].queries.append(r[0])
                            delays[name].seconds.append(r[1])
                cells = [fmt_delay(delays[n], seeds) for n in DETECTORS]
                print(f"| {drop:g} | {rate:g} | " + " | ".join(cells) + " |", flush=True)
        print()
        print(
            f"## {model.name}: false alarms per day of stationary traffic ({days:g} days simulated)"
        )
        print()
        print("| q/s | queries | " + " | ".join(DETECTORS) + " |")
        print("|---" * (len(DETECTORS) + 2) + "|")
        for rate in rates:
            alarms = stationary(model, rate, days, seed=1000)
            cells = [f"{alarms[n] / days:.3g} ({alarms[n]})" for n in DETECTORS]
            print(
                f"| {rate:g} | {rate * days * DAY:,.0f} | " + " | ".join(cells) + " |", flush=True
            )
        print()
    load1 = os.getloadavg()
    cost = ", ".join(f"{n} {1e6 * t / max(v, 1):.2f}" for n, (t, v) in SPENT.items())
    print(f"sequential detectors, microseconds a value: {cost}")
    print(
        f"elapsed {time.perf_counter() - t0:.0f} s; load at the end "
        f"{load1[0]:.1f}/{load1[1]:.1f}/{load1[2]:.1f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
