"""Exposition benchmark: scrape time and memory by series count, and consumption under scrapes.

Usage: `python -m bench.scrape_bench [--quick] [--sizes 100,1000,10000] [--pairs 4] ...`
(or `scripts/bench.sh scrape`). See docs/benchmarks.md, "Exposition (scrapes)".

1. For each target size, an engine (default configuration, label keys `app` and `index`,
   3 partitions) is filled with the synthetic stream spread over N label sets, N chosen
   from a first one-label-set run so that the exposition has about the target number of
   sample lines. Every size runs in a fresh process (clean resident memory): it times the
   scrape in-process and an HTTP GET of `/metrics`, in the text format and in OpenMetrics,
   and reports memory.
2. The agent consumes the same stream with and without a scraper polling `/metrics` every
   second (at the 1 000-series size), interleaved; events/s, medians and their ratio.

It prints one table with the targets and pass/miss, and the load average around every
figure; where the largest size misses its target, a cProfile breakdown of its scrape.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import asdict
from typing import Any

from bench.scrape_data import DataConfig
from bench.scrape_report import render
from bench.scrape_throughput import measure_throughput
from bench.scrape_timing import measure_size

__all__ = ["main"]

SCRAPE_TARGET = 0.020
"""p50 of a scrape at 10 000 series in either format, seconds (docs/benchmarks.md)."""
RATIO_TARGET = 0.95


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.scrape_bench", description=__doc__)
    p.add_argument("--sizes", default="100,1000,10000", help="target series counts")
    p.add_argument("--reps", type=int, default=100, help="in-process scrapes per size")
    p.add_argument("--http-reps", type=int, default=30, help="HTTP scrapes per size")
    p.add_argument("--pairs", type=int, default=4, help="throughput runs without/with scrapes")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between scrapes")
    p.add_argument("--throughput-size", type=int, default=1000, help="target series")
    p.add_argument("--span", type=float, default=1000.0, help="seconds of traffic")
    p.add_argument("--rate", type=float, default=20.0, help="queries per second")
    p.add_argument("--quick", action="store_true", help="fewer repetitions and pairs")
    p.add_argument("--profile", action="store_true", help="profile every size, miss or not")
    p.add_argument("--json", dest="json_out", help="also write the raw results here")
    p.add_argument("--worker", choices=["size", "throughput"], help=argparse.SUPPRESS)
    p.add_argument("--labelsets", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.reps, args.http_reps, args.pairs = 20, 10, 2
    return args


def _worker(args: argparse.Namespace) -> dict[str, Any]:
    data = DataConfig(span=args.span, rate=args.rate)
    if args.worker == "size":
        return measure_size(
            args.labelsets,
            data=data,
            reps=args.reps,
            http_reps=args.http_reps,
            profile=args.profile,
        )
    return measure_throughput(args.labelsets, data=data, pairs=args.pairs, interval=args.interval)


def _spawn(args: argparse.Namespace, worker: str, labelsets: int, profile: bool) -> dict[str, Any]:
    """Run one worker in a fresh interpreter; its result is the last line of its output."""
    command = [
        sys.executable,
        "-m",
        "bench.scrape_bench",
        "--worker",
        worker,
        "--labelsets",
        str(labelsets),
        "--reps",
        str(args.reps),
        "--http-reps",
        str(args.http_reps),
        "--pairs",
        str(args.pairs),
        "--interval",
        str(args.interval),
        "--span",
        str(args.span),
        "--rate",
        str(args.rate),
        *(["--profile"] if profile else []),
    ]
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _labelsets_for(target: int, fixed: float, per_labelset: float) -> int:
    """Label sets whose exposition is nearest to `target` sample lines (at least one)."""
    return max(1, round((target - fixed) / per_labelset))


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    if args.worker is not None:
        print(json.dumps(_worker(args)), flush=True)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    first = _spawn(args, "size", 1, args.profile)
    fixed, per = first["series_fixed"], first["series_per_labelset"]
    results: list[dict[str, Any]] = []
    for target in sizes:
        n = _labelsets_for(target, fixed, per)
        print(f"size {target}: {n} label sets", file=sys.stderr)
        largest = target == max(sizes)  # profiled always (a few scrapes), shown on a miss
        result = first if n == 1 else _spawn(args, "size", n, args.profile or largest)
        met = all(result[f]["scrape"]["p50"] < SCRAPE_TARGET for f in ("text", "openmetrics"))
        if largest and not args.profile and met:
            result.pop("profile", None)
        results.append({"target": target, **result})
    n = _labelsets_for(args.throughput_size, fixed, per)
    print(f"throughput: {n} label sets, {args.pairs} pairs", file=sys.stderr)
    throughput = _spawn(args, "throughput", n, False)
    throughput["target"] = args.throughput_size
    report = {
        "data": asdict(DataConfig(span=args.span, rate=args.rate)),
        "command": " ".join(["python -m bench.scrape_bench", *(argv or sys.argv[1:])]),
        "sizes": results,
        "throughput": throughput,
        "scrape_target": SCRAPE_TARGET,
        "ratio_target": RATIO_TARGET,
        "cpus": os.cpu_count(),
    }
    print(render(report))
    if args.json_out:
        with open(args.json_out, "w") as handle:
            json.dump(report, handle, indent=2)


if __name__ == "__main__":
    main()
