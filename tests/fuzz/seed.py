"""Seed inputs for the libFuzzer targets (`scripts/fuzz.sh`).

Usage: `python -m tests.fuzz.seed TARGET DIR`: writes TARGET's seed inputs into DIR, one
file each, named by content. For `event_scanner`, the test suite's messages: the scanner's
generated cases (`tests.events._scan_cases`), its tables of unknown and malformed values,
the benchmark's events with and without extra fields, and hostile messages
(`bench.hostile_data`) of at most 8 KiB; for the others, `tests.fuzz.targets.seeds`
(detector snapshots, CSR recipes, qrels and run files).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

from bench.hostile_data import hostile_messages
from bench.pipeline_data import DataConfig, blocks
from tests.events._scan_cases import _case
from tests.events.test_scan import _MALFORMED, _TRACE_VALUES, _UNKNOWN, _with_unknown
from tests.fuzz import targets

__all__ = ["main", "seeds"]

_MAX_LEN = 1 << 16  # the largest seed written
_MESSAGE_LEN = 8192  # the event target reads inputs of at most this (scripts/fuzz.sh)


def seeds() -> Iterator[bytes]:
    """The seed messages (some repeat; the files are named by content)."""
    for seed in range(400):
        yield _case(seed).data
    for value in [*_UNKNOWN[:-3], *_MALFORMED, *_TRACE_VALUES]:  # not the 200 kB string
        yield from _with_unknown(value)
    for extra in (False, True):
        config = DataConfig(docs=5, probe_share=0.5, extra_fields=extra)
        yield from (value for block in blocks(config, 20) for _, value in block)
    yield from (m.value for m in hostile_messages(400, seed=3, max_bytes=_MESSAGE_LEN))


def main(argv: list[str]) -> None:
    target, out = argv[0], Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for data in seeds() if target == "event_scanner" else targets.seeds(target):
        if 0 < len(data) <= _MAX_LEN:
            (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
            count += 1
    print(f"{count} seed inputs in {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
