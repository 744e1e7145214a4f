"""The results topic's cost in the engine's loop: building, sampling and encoding one
record per final query, against the same engine without it. No broker.

Usage: `python -m bench.results_bench [--events N] [--repeat R] [--sample MODE]
[--share S] [--threshold T]`. See docs/results.md, "Cost".

Synthetic retrieval and feedback events (`SyntheticTraffic`, 50 queries/s, label TTL
5 min, event clock) are applied in batches of 5000 to a fresh `Engine` three ways: as the
agent runs without a results topic (no final query reported), reporting every final
query, and reporting them to a `ResultsSink` whose publisher is not started (its queue
holds every record), sampled as `results.sample` says (`--sample`, default `all`, with
`--share` or `--threshold` on `ndcg@10`). Prints each way's best process CPU time of R
passes and, for the sink, how many records it offered.
"""

from __future__ import annotations

import argparse
import time

from ragstream.config.settings import load_settings
from ragstream.events import Message
from ragstream.pipeline.engine import Engine
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import engine_config
from ragstream.wiring.results import results_sink

__all__ = ["main"]

BATCH = 5000


def _pass(
    messages: list[Message], report: bool, sink: bool, sampling: dict[str, object]
) -> tuple[float, int, int]:
    settings = load_settings(
        overrides={
            "labels": {"keys": ["app"]},
            "join": {"label_ttl": 300},
            "kafka": {"bootstrap_servers": "127.0.0.1:9"},
            "results": {"topic": "unused", "queue_size": 10**8, **sampling},
        }
    )
    config = engine_config(settings, clock="event", final_unlabeled=report, report_final=report)
    engine = Engine(config)
    results = results_sink(settings, engine, client_options={}) if sink else None
    final = 0
    start = time.process_time()
    for i in range(0, len(messages), BATCH):
        queries = engine.apply(messages[i : i + BATCH]).final
        final += len(queries)
        if results is not None:
            results.on_final(queries)
    offered = 0 if results is None else results.counts["offered"]
    return time.process_time() - start, final, offered


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sample", choices=("all", "share", "below"), default="all")
    parser.add_argument("--share", type=float, default=1.0, help="the share written (share)")
    parser.add_argument("--threshold", type=float, default=0.5, help="ndcg@10 below it (below)")
    args = parser.parse_args(argv)
    sampling = {"sample": args.sample, "share": args.share, "threshold": args.threshold}
    traffic = SyntheticTraffic(SyntheticConfig(seed=1, rate=50.0, answer_share=0.0))
    messages = [Message(e.value, key=e.key) for e in traffic.take(args.events)]
    ways = {"no results topic": (False, False), "final queries reported": (True, False)}
    ways["results records"] = (True, True)
    for name, (report, sink) in ways.items():
        runs = [_pass(messages, report, sink, sampling) for _ in range(args.repeat)]
        best, final, offered = min(runs)
        rate = len(messages) / best
        line = f"{name}: {best:.2f} s CPU, {rate:,.0f} events/s, {final} final queries"
        print(line + (f", {offered} records offered" if sink else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
