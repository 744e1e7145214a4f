"""Benchmark of event decoding: stdlib JSON, the pydantic models and the msgspec decoder.

Usage: `python -m bench.decode_bench [--events N] [--repeat R] [--batch B] [--gc MODE]`
(or `scripts/bench.sh decode`).

Every decoder reads the same synthetic messages (`ragstream.sources.synthetic`): retrieval
events only (20 results, numeric timestamps), the same with every timestamp an RFC 3339
string, and the mixed stream (retrieval, answer and feedback events). Two ways of use:
"kept" decodes batches of B messages and keeps each batch's events until the batch is done
(as the engine does), "dropped" lets each event go at once. Rates are events per second of
this process's CPU time (`time.process_time`, which other processes on a shared machine
disturb less than wall time), best of R runs; the load average is printed alongside.
`json.loads` (and `orjson.loads`, if installed) only parse: they are the floor of what a
validating decoder can cost in Python objects. The compiled scanner
(`ragstream.events.scanner`, a batch API) is timed kept only, on the same batches: it reads
the retrieval events of the common shape into small records and declines the rest (the
engine hands those to msgspec), so its row says how many of the stream it read.
`BatchReader` is what the engine reads a batch with: the scanner, then `decode_event` for
what it declines. The pydantic models (`EVENT_ADAPTER.validate_json`, what the producer
helpers validate with) are the baseline of the ratio columns.

Kept events make the cyclic garbage collector a large share of the cost: every dict and
list allocated counts towards a collection, and full collections walk every object of the
process. `--gc freeze` calls `gc.freeze()` once the messages are built (the imported
modules and the data leave the collector's view, as a long-running agent can do after
start-up); `--gc off` disables it, the bound of what tuning can gain.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ragstream.events import (
    DEFAULT_LIMITS,
    EVENT_ADAPTER,
    BatchReader,
    decode_batch,
    decode_event,
    format_rfc3339,
)
from ragstream.events.scanner import AVAILABLE, bounds_of, scan_retrievals
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic

__all__ = ["main"]

Decoder = Callable[[bytes], Any]


def _decoders() -> dict[str, Decoder]:
    """Name -> one-message decoder, parse-only baselines first."""
    decoders: dict[str, Decoder] = {"json.loads": json.loads}
    try:
        import orjson

        decoders["orjson.loads"] = orjson.loads
    except ImportError:
        pass
    decoders["msgspec, untyped"] = msgspec.json.Decoder().decode
    decoders["pydantic models"] = EVENT_ADAPTER.validate_json
    decoders["decode_event (msgspec)"] = decode_event
    return decoders


def _messages(count: int, *, mixed: bool) -> list[bytes]:
    """`count` messages of the synthetic traffic, in query order."""
    config = SyntheticConfig() if mixed else SyntheticConfig(click_share=0, answer_share=0)
    traffic = SyntheticTraffic(config)
    out: list[bytes] = []
    index = 0
    while len(out) < count:
        out.extend(event.value for event in traffic.query_events(index))
        index += 1
    return out[:count]


def _with_rfc3339(messages: Sequence[bytes]) -> list[bytes]:
    """The same messages with `ts` and every `t_doc` written as RFC 3339 strings."""
    out = []
    for raw in messages:
        event = json.loads(raw)
        event["ts"] = format_rfc3339(event["ts"])
        for item in event.get("results", []) + (event.get("qrels") or []):
            if "t_doc" in item:
                item["t_doc"] = format_rfc3339(item["t_doc"])
        out.append(json.dumps(event, separators=(",", ":")).encode())
    return out


def _rate(run: Callable[[], None], count: int, repeat: int) -> float:
    """Best events/s of CPU time over `repeat` runs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return count / best if best > 0 else float("inf")


def _kept(decode: Decoder, messages: Sequence[bytes], batch: int) -> Callable[[], None]:
    def run() -> None:
        for start in range(0, len(messages), batch):
            kept = [decode(m) for m in messages[start : start + batch]]
        del kept

    return run


def _dropped(decode: Decoder, messages: Sequence[bytes]) -> Callable[[], None]:
    def run() -> None:
        for m in messages:
            decode(m)

    return run


def _batched(messages: Sequence[bytes], batch: int) -> Callable[[], None]:
    def run() -> None:
        for start in range(0, len(messages), batch):
            events, errors = decode_batch(messages[start : start + batch])
            assert not errors
        del events

    return run


def _scanned(messages: Sequence[bytes], batch: int) -> Callable[[], None]:
    bounds = bounds_of(DEFAULT_LIMITS)

    def run() -> None:
        for start in range(0, len(messages), batch):
            kept = scan_retrievals(messages[start : start + batch], bounds)
        del kept

    return run


def _engine_reads(messages: Sequence[bytes], batch: int) -> Callable[[], None]:
    reader = BatchReader()  # what the engine reads a batch with: scanner, decode_event

    def run() -> None:
        for start in range(0, len(messages), batch):
            read = reader.read(messages[start : start + batch])
            assert not read.errors
        del read

    return run


def _stream(name: str, messages: list[bytes], batch: int, repeat: int) -> None:
    """Print one table: each decoder kept and dropped, with the ratio to the pydantic models."""
    events, errors = decode_batch(messages)
    if errors:
        raise SystemExit(f"{name}: {len(errors)} invalid messages, e.g. {errors[0].error}")
    kinds = sorted({e.type for e in events})
    del events  # live events would slow every later collection
    size = sum(map(len, messages)) / len(messages)
    print(f"\n{name}: {len(messages)} messages ({', '.join(kinds)}), mean {size:,.0f} bytes")
    head = ("kept, ev/s", "dropped, ev/s", "x ref kept", "x ref drop")
    print(f"{'decoder':<26}{head[0]:>12}{head[1]:>15}{head[2]:>12}{head[3]:>12}")
    rates: dict[str, tuple[float, float]] = {}
    for label, decode in _decoders().items():
        kept = _rate(_kept(decode, messages, batch), len(messages), repeat)
        dropped = _rate(_dropped(decode, messages), len(messages), repeat)
        rates[label] = (kept, dropped)
    rates["decode_batch (msgspec)"] = (
        _rate(_batched(messages, batch), len(messages), repeat),
        float("nan"),
    )
    if AVAILABLE:
        read = sum(r is not None for r in scan_retrievals(messages, bounds_of(DEFAULT_LIMITS)))
        label = f"scanner ({read / len(messages):.0%} read)"
        rates[label] = (_rate(_scanned(messages, batch), len(messages), repeat), float("nan"))
    rates["BatchReader (the engine's)"] = (
        _rate(_engine_reads(messages, batch), len(messages), repeat),
        float("nan"),
    )
    ref_kept, ref_dropped = rates["pydantic models"]
    for label, (kept, dropped) in rates.items():
        drop, drop_ratio = (
            ("-", "-")
            if math.isnan(dropped)
            else (f"{dropped:,.0f}", f"{dropped / ref_dropped:.2f}")
        )
        print(f"{label:<26}{kept:>12,.0f}{drop:>15}{kept / ref_kept:>12.2f}{drop_ratio:>12}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=20_000, help="messages per stream")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (best is kept)")
    parser.add_argument("--batch", type=int, default=500, help="messages per kept batch")
    parser.add_argument(
        "--gc", choices=["default", "freeze", "off"], default="default", help="collector mode"
    )
    args = parser.parse_args(argv)
    retrieval = _messages(args.events, mixed=False)
    streams = {
        "retrieval": retrieval,
        "retrieval, RFC 3339 times": _with_rfc3339(retrieval),
        "mixed": _messages(args.events, mixed=True),
    }
    if args.gc == "freeze":
        gc.collect()
        gc.freeze()
    elif args.gc == "off":
        gc.disable()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average {load} on {os.cpu_count()} CPUs; rates in events per CPU second")
    print(f"garbage collector: {args.gc}; kept batches of {args.batch}; best of {args.repeat}")
    for name, messages in streams.items():
        _stream(name, messages, args.batch, args.repeat)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nload average at the end {load}")


if __name__ == "__main__":
    main()
