"""Throughput of the lexical judge on one core, for answers of about 3 kB.

Usage: ``python -m bench.judge_lexical_speed [--file PATH] [--size 3000] [--rounds 3]``

The answers are real ones: RAGTruth's development file (``../shared/data/ragtruth/``
next to the project root, or ``--file``), each record's answer followed by the answers of
the next records until it is ``--size`` characters long, judged against the record's own
contexts (prose passages, news articles and structured records). The text caches are
cleared before each round, so every round starts cold. It prints the rate against wall
time and against the process's CPU time (the judge is single-threaded, so the second is
the rate of one core even on a machine that other work keeps busy).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ragstream.config.judging import LexicalSettings
from ragstream.judging import text
from ragstream.judging.lexical import LexicalJudge

__all__ = ["main"]

_DEFAULT = Path(__file__).resolve().parents[1].parent / "shared/data/ragtruth/ragtruth_dev.jsonl"


def _inputs(path: Path, size: int) -> list[tuple[str, str, list[str]]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    out = []
    for i, row in enumerate(rows):
        answer, k = row["answer"], i + 1
        while len(answer) < size:
            answer += "\n" + rows[k % len(rows)]["answer"]
            k += 1
        out.append((row["question"], answer[:size], row["contexts"]))
    return out


def main() -> None:
    """Print answers per second, best of the rounds."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--file", type=Path, default=_DEFAULT)
    parser.add_argument("--size", type=int, default=3000, help="characters per answer")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    inputs = _inputs(args.file, args.size)
    judge = LexicalJudge(**LexicalSettings().model_dump())
    rates, cpu_rates = [], []
    for _ in range(args.rounds):
        text.tokens.cache_clear()
        started, cpu_started = time.perf_counter(), time.process_time()
        for question, answer, contexts in inputs:
            judge.evaluate(question, answer, contexts)
        rates.append(len(inputs) / (time.perf_counter() - started))
        cpu_rates.append(len(inputs) / (time.process_time() - cpu_started))
    print(
        f"lexical judge: {len(inputs)} answers of {args.size} characters, best of "
        f"{args.rounds} rounds: {max(rates):.0f} answers/s of wall time, "
        f"{max(cpu_rates):.0f} answers per CPU second (one thread; wall rounds: "
        + ", ".join(f"{r:.0f}" for r in rates)
        + ")"
    )


if __name__ == "__main__":
    main()
