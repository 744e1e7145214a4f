"""The fuzz targets at a small size, in the suite: the differential checks of
tests/fuzz/targets.py on seeded mutations of their seeds against the installed extensions,
then the four sanitized libFuzzer builds of scripts/fuzz.sh for a few hundred inputs each
(minutes of it: `scripts/fuzz.sh 300`, docs/testing.md)."""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest

from tests.fuzz.targets import TARGETS, one_input, seeds

ROOT = Path(__file__).resolve().parents[2]
MUTATIONS = 300  # a target, in plain Python
RUNS = 400  # a sanitized target's inputs


def _mutate(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    """A few of libFuzzer's kinds of mutation: flip, insert, erase, repeat, splice."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(out) + 1)
        kind = rng.randrange(5)
        if kind == 0 and out:
            out[min(at, len(out) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif kind == 2:
            del out[at : at + rng.randint(1, 16)]
        elif kind == 3:
            out[at:at] = out[at : at + rng.randint(1, 32)] * rng.randint(1, 4)
        else:
            other = rng.choice(others)
            start = rng.randrange(len(other) + 1)
            out[at:] = other[start : start + rng.randint(1, 64)] + out[at:]
    return bytes(out)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_compiled_and_python_agree_on_mutated_seeds(target: str) -> None:
    rng = random.Random(target)
    inputs = list(seeds(target))
    assert inputs
    for data in inputs:
        one_input(target, data)
    for _ in range(MUTATIONS):
        one_input(target, _mutate(rng, rng.choice(inputs), inputs))


def test_the_sanitized_fuzzers_run_clean() -> None:
    """scripts/fuzz.sh builds each target with AddressSanitizer and UBSan (once: it keeps
    the build while the sources are the same) and runs it on its seeds and their mutations;
    any crash, sanitizer report or difference makes it fail."""
    done = subprocess.run(
        ["scripts/fuzz.sh", "runs", str(RUNS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    for target in ("event_scanner", "drift_kernels", "metrics_ragged", "trec_reader"):
        assert f"== fuzzing {target} for {RUNS} inputs" in output
    assert len(re.findall(r"^Done \d+ runs", output, re.MULTILINE)) == 4, output[-6000:]
