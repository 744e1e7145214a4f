"""The results topic's cost in the engine's loop: building, sampling and encoding one
record per final query, against the same engine without it. No broker.

Usage: `python -m bench.results_bench [--events N] [--repeat R]`. See docs/results.md,
"Cost".

Synthetic retrieval and feedback events (`SyntheticTraffic`, 50 queries/s, label TTL
5 min, event clock) are applied in batches of 5000 to a fresh `Engine` three ways: as the
agent runs without a results topic (no final query reported), reporting every final
query, and reporting them to a `ResultsSink` whose publisher is not started (its queue
holds every record). Prints each way's best process CPU time of R passes.
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


def _pass(messages: list[Message], report: bool, sink: bool) -> tuple[float, int]:
    settings = load_settings(
        overrides={
            "labels": {"keys": ["app"]},
            "join": {"label_ttl": 300},
            "kafka": {"bootstrap_servers": "127.0.0.1:9"},
            "results": {"topic": "unused", "queue_size": 10**8},
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
    return time.process_time() - start, final


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    traffic = SyntheticTraffic(SyntheticConfig(seed=1, rate=50.0, answer_share=0.0))
    messages = [Message(e.value, key=e.key) for e in traffic.take(args.events)]
    ways = {"no results topic": (False, False), "final queries reported": (True, False)}
    ways["results records"] = (True, True)
    for name, (report, sink) in ways.items():
        runs = [_pass(messages, report, sink) for _ in range(args.repeat)]
        best, final = min(runs)
        rate = len(messages) / best
        print(f"{name}: {best:.2f} s CPU, {rate:,.0f} events/s, {final} final queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
