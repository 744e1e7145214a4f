"""Soak: one agent process on 10 M synthetic events at full speed; memory and speed flat.

Usage: `python -m bench.soak_bench [--events N] [--every N] [--trace] [--json FILE]`
(or `scripts/bench.sh soak`). See docs/benchmarks.md, "Soak".

Runs the agent of `ragstream run` (engine, runner, HTTP server, judging; two exported
label keys, the event clock) on the in-memory source of `bench.soak_run`, samples it every
`--every` events, and prints the curve and the verdicts of `bench.soak_report`: the RSS
slope over the second half, open queries, pending labels and windows at their bounds, and
the throughput of the last tenth against the first tenth after warm-up. `--trace` starts
tracemalloc at the warm-up's end, takes snapshots mid-run and at the end, and prints what
grew between them, by traceback (tracing slows the agent tenfold and keeps memory of its
own: the RSS and speed verdicts then mean nothing). Exit status 0 whatever the verdicts
(a benchmark, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess

from bench.soak_report import WARMUP, render
from bench.soak_run import SoakConfig, run_soak

__all__ = ["main"]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.soak_bench", description=__doc__)
    p.add_argument("--events", type=int, default=10_000_000)
    p.add_argument("--every", type=int, default=100_000, help="events between samples")
    p.add_argument("--rate", type=float, default=20.0, help="queries per second of event time")
    p.add_argument("--label-ttl", type=float, default=900.0)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--no-scrape", action="store_true", help="no /metrics scrape per sample")
    p.add_argument("--trace", action="store_true", help="tracemalloc snapshots (slow)")
    p.add_argument("--json", dest="json_out", help="also write the raw results here")
    return p.parse_args(argv)


def _at_sample(events: int, every: int) -> int:
    """The sample point at or after `events`."""
    return max(every, -(-events // every) * every)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    n, every = args.events, args.every
    trace_at = ()
    if args.trace:
        trace_at = tuple(sorted({_at_sample(int(n * WARMUP), every), _at_sample(n // 2, every), n}))
    config = SoakConfig(
        events=n,
        every=every,
        partitions=args.partitions,
        rate=args.rate,
        label_ttl=args.label_ttl,
        seed=args.seed,
        scrape=not args.no_scrape,
        trace_at=trace_at,
    )
    print(f"uptime: {_uptime()}", flush=True)
    before = os.getloadavg()[0]
    result = run_soak(config)
    load = (before, os.getloadavg()[0])
    print(f"uptime: {_uptime()}\n", flush=True)
    print(render(result, load))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({**result.as_dict(), "load": load}, f, indent=1)
    return 0


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())
