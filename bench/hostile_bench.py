"""Hostile input at scale: a million generated messages through the decoders and the engine,
and damaged TREC files through `ragstream eval`.

Usage: `python -m bench.hostile_bench [--messages N | --quick] [--max-bytes B] [--seed S]`
(or `scripts/bench.sh hostile`). See docs/reliability.md, "Hostile input".

1. **Messages.** `bench.hostile_data.hostile_messages` (16 categories of malformed,
   extreme and adversarial input among valid events; generated in a worker process per core,
   chunk by chunk, so memory never holds the whole stream) feeds, chunk by chunk:
   - the engine's batch reader (`ragstream.events.BatchReader`): every message must be an
     event or a reason, never an exception, and the reason the generator decided (where it
     decides one) is the one given;
   - one `Engine` (event clock, default limits but `--max-bytes`): `apply` must never raise
     and its counters must account for every message (events by outcome plus invalid by
     reason = messages); its resident memory is sampled every 100k messages;
   - `decode_event` one message at a time, timed per category: microseconds a message and
     nanoseconds a byte against the valid events (no path may be quadratic: a hostile byte
     costs a small factor of a valid one).
2. **TREC files.** A clean collection, then the same run with hostile but readable lines
   (text after the sixth field, ids of kilobytes, scores in exponent form and with hundreds
   of digits, runs of blanks) and damaged files (a truncated line, a NUL byte, invalid
   UTF-8 in an id, a short line at the end): `ragstream eval` (the library call) must give
   values for the first, and values or an error naming the line for the others (the same
   on both engines), in time proportional to the file.

Prints the tables; exits 1 if a message crashed a decoder or the engine, a count does not
add up, or a decided reason was not given.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import math
import multiprocessing
import os
import random
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

from bench.hostile_data import CATEGORIES, Hostile, hostile_messages
from ragstream.config import JoinSettings, Settings, WindowSettings
from ragstream.events import (
    BatchReader,
    DecodeError,
    IndexedDecodeError,
    Limits,
    Message,
    decode_event,
)
from ragstream.pipeline.engine import Engine
from ragstream.trec import TrecFormatError, evaluate_files
from ragstream.wiring import engine_config

__all__ = ["main"]

_CHUNK = 5_000
_SAMPLE_EVERY = 100_000
_METRICS = ["rr", "ap", "precision@10", "ndcg@10"]


def _chunk(args: tuple[int, int, int, int]) -> list[Hostile]:
    start, count, seed, max_bytes = args
    return list(hostile_messages(count, seed, max_bytes=max_bytes, start=start))


def _chunks(total: int, seed: int, max_bytes: int) -> Iterator[list[Hostile]]:
    """The stream in chunks, generated ahead by one worker process per core."""
    jobs = [(s, min(_CHUNK, total - s), seed, max_bytes) for s in range(0, total, _CHUNK)]
    workers = max(1, min(2, os.cpu_count() or 1))
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        yield from pool.imap(_chunk, jobs, chunksize=1)


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return math.nan


class _Tally:
    """What the message stage saw."""

    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0
        self.crashes: list[str] = []
        self.verdicts: Counter[str] = Counter()
        self.by_category: Counter[str] = Counter()
        self.wrong: Counter[tuple[str, str, str]] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.category_bytes: Counter[str] = Counter()
        self.reader_seconds = 0.0
        self.engine_seconds = 0.0
        self.rss: list[tuple[int, float]] = []


def _messages(total: int, seed: int, max_bytes: int) -> tuple[_Tally, Engine]:
    limits = Limits(max_message_bytes=max_bytes)
    reader = BatchReader(limits)
    settings = Settings(
        windows=WindowSettings(sizes=[60.0, 300.0, 3600.0]), join=JoinSettings(label_ttl=60.0)
    )
    config = engine_config(settings, clock="event")
    engine = Engine(dataclasses.replace(config, limits=limits), wall=lambda: 4.0e9)
    tally = _Tally()
    next_sample = _SAMPLE_EVERY
    for chunk in _chunks(total, seed, max_bytes):
        values = [h.value for h in chunk]
        started = time.process_time()
        try:
            read = reader.read(values)
        except Exception as error:  # a crash: counted and reported, the run goes on
            tally.crashes.append(f"BatchReader: {error!r}")
            read = None
        tally.reader_seconds += time.process_time() - started
        if read is not None:
            _judge(tally, chunk, read.kept, read.errors)
        messages = [
            Message(v, partition=0, offset=tally.messages + i) for i, v in enumerate(values)
        ]
        started = time.process_time()
        try:
            engine.apply(messages)
        except Exception as error:
            tally.crashes.append(f"Engine.apply: {error!r}")
        tally.engine_seconds += time.process_time() - started
        for h in chunk:  # one at a time, timed per category
            started = time.perf_counter()
            try:
                decode_event(h.value, limits)
            except DecodeError:
                pass
            except Exception as error:
                tally.crashes.append(f"decode_event ({h.category}): {error!r}")
            tally.seconds[h.category] += time.perf_counter() - started
            tally.category_bytes[h.category] += len(h.value)
            tally.by_category[h.category] += 1
        tally.messages += len(chunk)
        tally.bytes += sum(map(len, values))
        if tally.messages >= next_sample:
            gc.collect()
            tally.rss.append((tally.messages, _rss_mib()))
            next_sample += _SAMPLE_EVERY
    engine.finish()
    return tally, engine


def _judge(
    tally: _Tally, chunk: list[Hostile], kept: list[int] | None, errors: list[IndexedDecodeError]
) -> None:
    reasons = {e.index: e.error.reason for e in errors}
    events = set(range(len(chunk))) if kept is None else set(kept)
    for i, h in enumerate(chunk):
        verdict = "ok" if i in events else reasons.get(i, "lost")
        tally.verdicts[verdict] += 1
        if h.expect is not None and h.expect != verdict:
            tally.wrong[(h.category, h.expect, verdict)] += 1


def _accounted(engine: Engine) -> int:
    return sum(engine.events.values())


def _print_messages(tally: _Tally, engine: Engine, max_bytes: int, wall: float) -> bool:
    ok = True
    print(
        f"\nmessages: {tally.messages:,} ({tally.bytes / 1e6:,.0f} MB, "
        f"at most {max_bytes:,} bytes each), {wall:.0f} s"
    )
    print(f"crashes (an exception out of a decoder or the engine): {len(tally.crashes)}")
    for crash in tally.crashes[:5]:
        print(f"  {crash}")
    ok &= not tally.crashes
    counted = _accounted(engine)
    invalid = sum(engine.invalid.values())
    processed = counted - engine.events[("unknown", "invalid")]
    print(
        f"engine: {processed:,} events (processed, late or duplicate) + {invalid:,} invalid "
        f"by reason = {counted:,} of {tally.messages:,} messages: "
        + (
            "every message accounted for"
            if counted == tally.messages and invalid == engine.events[("unknown", "invalid")]
            else "MISMATCH"
        )
    )
    ok &= counted == tally.messages
    lost = tally.verdicts.get("lost", 0)
    wrong = sum(tally.wrong.values())
    print(
        f"batch reader: {tally.messages - lost:,} verdicts, {lost} lost; "
        f"reasons the generator decided, not given: {wrong}"
    )
    for (category, expect, got), n in tally.wrong.most_common(5):
        print(f"  {category}: expected {expect}, got {got} ({n})")
    ok &= not lost and not wrong
    print(
        "invalid by reason: " + ", ".join(f"{r} {n:,}" for r, n in sorted(engine.invalid.items()))
    )
    print(
        f"batch reader {tally.messages / tally.reader_seconds:,.0f} messages/CPU-s; "
        f"engine (decoding included) {tally.messages / tally.engine_seconds:,.0f} messages/CPU-s"
    )
    if tally.rss:
        first, last = tally.rss[0][1], tally.rss[-1][1]
        curve = ", ".join(f"{n // 1000}k {m:.0f}" for n, m in tally.rss)
        print(f"engine RSS (MiB) every 100k messages: {curve}; growth {last - first:+.0f} MiB")
    valid_us = tally.seconds["valid"] / max(tally.by_category["valid"], 1) * 1e6
    valid_ns = tally.seconds["valid"] / max(tally.category_bytes["valid"], 1) * 1e9
    print("\ndecode_event, one message at a time, by category:")
    print(
        f"{'category':<18}{'messages':>10}{'mean bytes':>12}{'us/message':>12}{'x valid':>9}"
        f"{'ns/byte':>10}{'x valid':>9}"
    )
    for category in CATEGORIES:
        n = tally.by_category[category]
        if not n:
            continue
        us = tally.seconds[category] / n * 1e6
        ns = tally.seconds[category] / tally.category_bytes[category] * 1e9
        size = tally.category_bytes[category] / n
        print(
            f"{category:<18}{n:>10,}{size:>12,.0f}{us:>12.1f}{us / valid_us:>9.2f}"
            f"{ns:>10.2f}{ns / valid_ns:>9.2f}"
        )
    return ok


# -- TREC files ----------------------------------------------------------------------------------


def _collection(queries: int, docs: int, rng: random.Random) -> tuple[list[str], list[str]]:
    qrels, run = [], []
    for q in range(queries):
        for d in range(docs):
            if rng.random() < 0.2:
                qrels.append(f"{q} 0 d{q}-{d} {rng.randint(0, 3)}")
            run.append(f"{q} Q0 d{q}-{d} {d + 1} {rng.random() * 20:.6f} tag")
    return qrels, run


def _hostile_run(run: list[str], rng: random.Random) -> list[str]:
    """Readable but hostile lines: every tenth one changed."""
    out = []
    for i, line in enumerate(run):
        if i % 10:
            out.append(line)
            continue
        qid, q0, doc, rank, score, tag = line.split()
        kind = i // 10 % 4
        if kind == 0:
            out.append(f"{line} " + " ".join("junk" for _ in range(rng.randint(1, 50))))
        elif kind == 1:
            out.append(f"{qid} {q0} {doc}{'x' * rng.randint(1000, 5000)} {rank} {score} {tag}")
        elif kind == 2:
            out.append(f"{qid} {q0} {doc} {rank} {float(score):.300e} {tag}")
        else:
            out.append(f"{qid}{' ' * 200}{q0}\t\t{doc} {rank}   {score} {tag}")
    return out


def _damaged(run: list[str]) -> dict[str, bytes]:
    body = "\n".join(run).encode()
    middle = len(run) // 2
    lines = body.split(b"\n")
    return {
        "truncated line": b"\n".join([*lines[:middle], lines[middle][:8], *lines[middle + 1 :]]),
        "NUL byte": b"\n".join([*lines[:middle], lines[middle] + b"\x00", *lines[middle + 1 :]]),
        "invalid UTF-8": b"\n".join(
            [*lines[:middle], lines[middle] + b" \xff\xfe", *lines[middle + 1 :]]
        ),
        "short last line": body + b"\n1 Q0\n",
    }


def _eval(path_qrels: Path, path_run: Path, engine: str) -> tuple[str, float]:
    started = time.perf_counter()
    try:
        evaluate_files(path_qrels, path_run, _METRICS, engine=engine)  # type: ignore[arg-type]
        outcome = "values"
    except TrecFormatError as error:
        outcome = f"error at line {error.line}"
    except Exception as error:  # a crash
        outcome = f"CRASH {error!r}"
    return outcome, time.perf_counter() - started


def _trec(queries: int, docs: int, seed: int) -> bool:
    rng = random.Random(seed)
    qrels, run = _collection(queries, docs, rng)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "qrels").write_text("\n".join(qrels) + "\n")
        files = {"clean": ("\n".join(run) + "\n").encode()}
        files["hostile, readable"] = ("\n".join(_hostile_run(run, rng)) + "\n").encode()
        files.update(_damaged(run))
        print(f"\nragstream eval: {queries:,} queries x {docs} documents ({len(run):,} run lines)")
        print(
            f"{'run file':<20}{'MB':>8}{'engine':>10}  {'outcome':<24}{'seconds':>9}{'ns/byte':>9}"
        )
        for name, body in files.items():
            path = root / "run"
            path.write_bytes(body)
            outcomes = set()
            for engine in ("compiled", "numpy"):
                outcome, seconds = _eval(root / "qrels", path, engine)
                outcomes.add(outcome)
                ok &= not outcome.startswith("CRASH")
                if name in ("clean", "hostile, readable"):
                    ok &= outcome == "values"
                ns = seconds / len(body) * 1e9
                print(
                    f"{name:<20}{len(body) / 1e6:>8.1f}{engine:>10}  {outcome:<24}"
                    f"{seconds:>9.2f}{ns:>9.1f}"
                )
            ok &= len(outcomes) == 1  # both engines give the same outcome
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="100 000 messages, a small collection")
    parser.add_argument(
        "--max-bytes", type=int, default=65_536, help="the agent's message size limit"
    )
    parser.add_argument("--queries", type=int, default=10_000, help="of the TREC collection")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    total = 100_000 if args.quick else args.messages
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    started = time.time()
    tally, engine = _messages(total, args.seed, args.max_bytes)
    ok = _print_messages(tally, engine, args.max_bytes, time.time() - started)
    ok &= _trec(2_000 if args.quick else args.queries, 100, args.seed)
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print("result: " + ("pass" if ok else "FAIL"))
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
