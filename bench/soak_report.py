"""The soak's verdicts and its table: the curve, the RSS slope, throughput end vs start.

Targets (`bench.soak_bench`):

- RSS slope, least squares over the samples of the second half of the run, below
  `MAX_SLOPE` MiB per million events. One retained byte per event is 0.95 MiB per million;
  anything the agent would keep per query (a dict entry, a string, a list slot: 50-200
  bytes) shows as 15-70 MiB per million, while the bounded state (windows preallocated by
  series, open queries replaced at the rate they expire) adds nothing. The allocator's
  arenas wander by a few MiB, which over 5 M events is well below the threshold.
- Open queries at the level the label TTL sets (`rate x label_ttl`, within
  `OPEN_TOLERANCE`, one batch's expiry at a time) and below the configured cap; pending
  labels below theirs; window series at the number the traffic's label sets make, and the
  window bytes constant after warm-up.
- Events per agent second over the last tenth of the run within `MAX_SLOWDOWN` of the
  first tenth after warm-up.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from bench.soak_run import Sample, SoakResult, type_outcomes

__all__ = [
    "MAX_SLOPE",
    "MAX_SLOWDOWN",
    "OPEN_TOLERANCE",
    "Verdict",
    "accounting",
    "render",
    "slope",
    "throughput",
    "verdicts",
]

MAX_SLOPE = 1.0
"""MiB per million events."""
MAX_SLOWDOWN = 0.10
OPEN_TOLERANCE = 0.10
WARMUP = 0.10
"""Share of the run before which no figure is taken (the day window fills later, but its
bytes are allocated from the first event)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    figure: str
    value: str
    target: str
    ok: bool


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of y on x."""
    n = len(points)
    if n < 2:
        return float("nan")
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    sxy = sum((x - mx) * (y - my) for x, y in points)
    return sxy / sxx if sxx else float("nan")


def rss_slope(samples: Sequence[Sample], events: int) -> float:
    """MiB per million events over the samples of the second half."""
    half = [s for s in samples if s.events > events // 2]
    return slope([(s.events / 1e6, s.rss_mib) for s in half])


def throughput(samples: Sequence[Sample], events: int) -> tuple[float, float]:
    """Events per agent second over the first tenth after warm-up and over the last tenth."""
    warm, tenth = int(events * WARMUP), events // 10
    return (
        _rate(samples, warm, warm + tenth),
        _rate(samples, events - tenth, events),
    )


def _rate(samples: Sequence[Sample], start: int, end: int) -> float:
    """Events per agent second between the samples at `start` and `end` events (nearest)."""
    before = [s for s in samples if s.events <= start]
    inside = [s for s in samples if start < s.events <= end]
    if not inside:
        return float("nan")
    t0 = before[-1].agent_seconds if before else 0.0
    e0 = before[-1].events if before else 0
    last = inside[-1]
    return (last.events - e0) / (last.agent_seconds - t0)


def accounting(result: SoakResult) -> list[str]:
    """What does not add up (empty when every event is accounted for)."""
    problems = []
    n = result.config.events
    if result.delivered != n:
        problems.append(f"delivered {result.delivered} of {n} events")
    if sum(result.generated.values()) != result.delivered:
        problems.append(f"generated {result.generated} != delivered {result.delivered}")
    counted = type_outcomes(result.outcomes)
    if counted != result.generated:
        problems.append(f"the engine counted {counted}, the source sent {result.generated}")
    if (n_samples := len(result.samples)) != -(-n // result.config.every):
        problems.append(f"{n_samples} samples for {n} events every {result.config.every}")
    return problems


def verdicts(result: SoakResult) -> list[Verdict]:
    """The soak's figures against its targets."""
    n, b, samples = result.config.events, result.bounds, result.samples
    after = [s for s in samples if s.events > n * WARMUP] or samples[-1:]
    out = []
    problems = accounting(result)
    out.append(
        Verdict(
            "every event counted",
            f"{result.delivered:,} delivered, {sum(result.outcomes.values()):,} counted",
            "equal, per type",
            not problems,
        )
    )
    s = rss_slope(samples, n)
    out.append(
        Verdict("RSS slope, 2nd half", f"{s:+.2f} MiB / M events", f"< {MAX_SLOPE}", s < MAX_SLOPE)
    )
    most_open = max(x.open_queries for x in after)
    level = b["open_level"] * (1 + OPEN_TOLERANCE)
    out.append(
        Verdict(
            "open queries (max after warm-up)",
            f"{most_open:,}",
            f"<= {level:,.0f} (rate x TTL {b['open_level']:,.0f} + 10%), cap {b['max_open']:,.0f}",
            most_open <= min(level, b["max_open"]),
        )
    )
    most_pending = max(x.pending_labels for x in after)
    out.append(
        Verdict(
            "pending labels (max after warm-up)",
            f"{most_pending:,}",
            f"<= cap {b['max_pending']:,.0f}",
            most_pending <= b["max_pending"],
        )
    )
    series = {x.series for x in after}
    out.append(
        Verdict(
            "window series after warm-up",
            ", ".join(str(v) for v in sorted(series)),
            f"= {b['series_level']:.0f} (partitions x label sets), cap {b['max_series']:,.0f}",
            series == {int(b["series_level"])},
        )
    )
    store = {round(x.store_mib, 3) for x in after}
    out.append(
        Verdict(
            "window MiB after warm-up",
            ", ".join(f"{v:.2f}" for v in sorted(store)),
            f"constant ({b['series_nbytes'] / 2**20:.2f} MiB a series)",
            len(store) == 1,
        )
    )
    start, end = throughput(samples, n)
    ratio = end / start
    out.append(
        Verdict(
            "events/s last 10% / first 10% after warm-up",
            f"{end:,.0f} / {start:,.0f} = {ratio:.3f}",
            f">= {1 - MAX_SLOWDOWN:.2f}",
            ratio >= 1 - MAX_SLOWDOWN,
        )
    )
    return out


def render(result: SoakResult, load: tuple[float, float] = (float("nan"), float("nan"))) -> str:
    """The curve, then the verdicts."""
    c = result.config
    lines = [
        f"soak: {c.events:,} events, {c.partitions} partitions, batches of {c.batch}, "
        f"{c.rate:g} queries/s of event time, label TTL {c.label_ttl:g} s, "
        f"sample every {c.every:,}; load {load[0]:.1f} -> {load[1]:.1f} ({os.cpu_count()} cores)",
        f"generated: {result.generated}",
        f"outcomes: {result.outcomes}",
        f"joins: {result.joins}",
        f"judge: {result.judge}",
        f"wall {result.wall_seconds:.0f} s, of which generating events "
        f"{result.generate_seconds:.0f} s",
        "",
        f"{'events':>10} {'event h':>7} {'RSS MiB':>8} {'open':>7} {'pending':>7} "
        f"{'series':>6} {'win MiB':>7} {'judge MiB':>9} {'events/s':>9} {'scrape ms':>9}",
    ]
    for s in result.samples:
        lines.append(
            f"{s.events:>10,} {s.event_hours:>7.1f} {s.rss_mib:>8.1f} {s.open_queries:>7,} "
            f"{s.pending_labels:>7,} {s.series:>6} {s.store_mib:>7.2f} {s.judge_store_mib:>9.2f} "
            f"{s.rate:>9,.0f} {s.scrape_ms:>9.1f}"
        )
    lines.append("")
    found = verdicts(result)
    width = max(len(v.figure) for v in found)
    for v in found:
        lines.append(
            f"{'PASS' if v.ok else 'MISS'}  {v.figure:<{width}}  {v.value}   (target {v.target})"
        )
    if result.traces:
        lines.append("(traced: tracemalloc's own memory and time make RSS and speed meaningless)")
    for trace in result.traces:
        lines.append("")
        lines.extend(trace)
    return "\n".join(lines)
