"""Exported series compared: /metrics text parsed into samples, several replicas' samples
combined into what one replica would export, and two expositions compared sample by sample.

Used by the crash harness (`bench.crash_harness`), the rebalance test and the engine tests:
after crashes, restarts and rebalances, every series the stream decides must equal a run
that never crashed on one replica.

Which series the stream decides, and how replicas combine, is stated here once:

- counters and histograms (`_total`, `_bucket`, `_sum`, `_count`) add up over replicas;
- gauges that are sums or counts (`ragstream_window_sums`, `_counts`, `_queries`, open
  queries, pending labels, series, open traces, judged answers) add up too;
- `ragstream_last_event_timestamp_seconds` is the newest over replicas;
- windowed means (`ragstream_retrieval_*`, `ragstream_generation_*`) and the drift scores
  are compared as they are on a single replica; over replicas they are not summed (they
  follow from the window sums and counts, which are).

`PROCESS_FAMILIES` are left out: they describe the work of one process (its snapshots,
commits, scrapes, judge calls and their cost, lag, build), not the stream, and a restarted
process counts its own work from 0 (`docs/reliability.md`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

__all__ = [
    "PROCESS_FAMILIES",
    "Mismatch",
    "Samples",
    "combine",
    "compare",
    "parse",
]

Key = tuple[str, frozenset[tuple[str, str]]]
Samples = dict[Key, float]

PROCESS_FAMILIES = (
    "ragstream_state_snapshot",  # snapshots written/adopted/refused and their bytes
    "ragstream_consumer_lag",
    "ragstream_build_info",
    "ragstream_window_retracts_expired",  # depends on how far the clock had moved
    "ragstream_judge_",  # judge calls, their latency, queue, tokens and cost: work done
    "ragstream_drift_",  # windowed detectors advance at scrapes (wall time), not events
    "python_",
    "process_",
)
"""Name prefixes of the series that describe one process's work, not the stream."""
_ADDITIVE_GAUGES = (
    "ragstream_window_sums",
    "ragstream_window_counts",
    "ragstream_window_queries",
    "ragstream_open_queries",
    "ragstream_pending_labels",
    "ragstream_series",
    "ragstream_open_traces",
    "ragstream_generation_judged_queries",
)
_NEWEST = ("ragstream_last_event_timestamp_seconds",)


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One sample that differs (None: absent on that side)."""

    name: str
    labels: Mapping[str, str]
    expected: float | None
    got: float | None

    def __str__(self) -> str:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return f"{self.name}{{{labels}}}: expected {self.expected}, got {self.got}"


def parse(text: str, *, process: bool = False) -> Samples:
    """Every sample of a /metrics text exposition (``process``: the `PROCESS_FAMILIES`
    too). `_created` samples are left out (they are the process's start time)."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            if not process and sample.name.startswith(PROCESS_FAMILIES):
                continue
            out[(sample.name, frozenset(sample.labels.items()))] = float(sample.value)
    return out


def _additive(name: str) -> bool:
    return name.endswith(("_total", "_bucket", "_sum", "_count")) or name in _ADDITIVE_GAUGES


def combine(replicas: Iterable[Samples], *, means: bool = False) -> Samples:
    """What the replicas export together, as one replica would: additive series summed,
    the newest event time the largest; the windowed means only with ``means`` (correct
    when at most one replica exports each label set, e.g. one replica)."""
    out: Samples = {}
    for samples in replicas:
        for key, value in samples.items():
            name = key[0]
            if key[0] in _NEWEST:
                out[key] = max(value, out.get(key, -math.inf))
            elif _additive(name):
                out[key] = out.get(key, 0.0) + value
            elif means:
                if key in out:
                    raise ValueError(f"{name} is exported by several replicas: not combinable")
                out[key] = value
    return out


def without_means(samples: Samples) -> Samples:
    """The samples that `combine` adds up or takes the newest of (no windowed means)."""
    return {k: v for k, v in samples.items() if k[0] in _NEWEST or _additive(k[0])}


def drop_label(samples: Samples, label: str) -> Samples:
    """The samples summed over the values of one label (e.g. `partition`), as PromQL's
    ``sum without (label)``; additive series only (others are taken as they are)."""
    out: Samples = {}
    for (name, labels), value in samples.items():
        key = (name, frozenset((k, v) for k, v in labels if k != label))
        if name in _NEWEST:
            out[key] = max(value, out.get(key, -math.inf))
        elif _additive(name):
            out[key] = out.get(key, 0.0) + value
        else:
            out[key] = value
    return out


def compare(expected: Samples, got: Samples, *, rtol: float = 1e-9) -> list[Mismatch]:
    """Every sample that differs (relative tolerance ``rtol``: float sums added in
    another order differ in their last bits) or is present on one side only."""
    out: list[Mismatch] = []
    for key in sorted(expected.keys() | got.keys(), key=lambda k: (k[0], sorted(k[1]))):
        want, have = expected.get(key), got.get(key)
        if want is not None and have is not None:
            if math.isnan(want) and math.isnan(have):
                continue
            if math.isclose(want, have, rel_tol=rtol, abs_tol=1e-12):
                continue
        out.append(Mismatch(key[0], dict(key[1]), want, have))
    return out
