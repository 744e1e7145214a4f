"""The streaming benchmark's results and their table: figure, value, target, pass/miss.

Targets: the pipeline sustains >= 30 000 events/s end to end, at least half of what a plain
consumer that only parses the JSON reaches on the same broker and topic, and its resident
memory is flat in the number of events (growth from the 100k checkpoint to the end within
10 %, since state is bounded by series x windows x buckets and the open-query cap).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FLAT_GROWTH", "MIN_EVENTS_PER_S", "MIN_RATIO", "Run", "render"]

MIN_EVENTS_PER_S = 30_000.0
MIN_RATIO = 0.5
FLAT_GROWTH = 0.10

Result = dict[str, Any]


@dataclass(slots=True)
class Run:
    """Everything one benchmark run measured (stage results as the stages print them)."""

    events: int
    partitions: int
    rate: float
    label_ttl: float
    label_keys: list[str]
    probe_share: float
    produced_bytes: int = 0
    produce_seconds: float = 0.0
    generate_seconds: float = 0.0
    produce_load: tuple[float, float] = (0.0, 0.0)
    baselines: dict[str, list[Result]] = field(default_factory=lambda: {"json": [], "orjson": []})
    pipelines: list[Result] = field(default_factory=list)
    engine: Result | None = None
    profile: Result | None = None

    def raw(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "partitions": self.partitions,
            "rate": self.rate,
            "label_ttl": self.label_ttl,
            "label_keys": self.label_keys,
            "probe_share": self.probe_share,
            "produced_bytes": self.produced_bytes,
            "produce_seconds": self.produce_seconds,
            "generate_seconds": self.generate_seconds,
            "baselines": self.baselines,
            "pipelines": self.pipelines,
            "engine": self.engine,
            "profile": self.profile,
        }


def _rate(r: Result) -> float:
    return float(r["events"]) / float(r["seconds"])


def _span(values: list[float], fmt: str = "{:,.0f}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if len(values) == 1 or lo == hi else f"{fmt.format(lo)}-{fmt.format(hi)}"


def _loads(results: list[Result]) -> str:
    lo = min(min(r["load"]) for r in results)
    hi = max(max(r["load"]) for r in results)
    return f"{lo:.1f}-{hi:.1f}"


def _mark(ok: bool) -> str:
    return "pass" if ok else "MISS"


def _memory(r: Result) -> tuple[float, float, float]:
    """RSS at the first checkpoint (100k), at the end, and the relative growth."""
    points = r["memory"]
    first, last = points[0]["rss_mib"], points[-1]["rss_mib"]
    return first, last, (last - first) / first


def _memory_runs(run: Run) -> list[tuple[str, list[Result]]]:
    engine = [] if run.engine is None else [run.engine]
    return [("pipeline", run.pipelines), ("engine alone", engine)]


def render(run: Run) -> str:
    rows: list[tuple[str, str, str, str, str]] = []
    mb = run.produced_bytes / 1e6
    rows.append(
        (
            "produce (not a measured figure)",
            f"{run.events / run.produce_seconds:,.0f} events/s, {run.produce_seconds:.1f} s "
            f"(of which generating {run.generate_seconds:.1f} s), {mb:,.0f} MB",
            "",
            "",
            f"{run.produce_load[0]:.1f}-{run.produce_load[1]:.1f}",
        )
    )
    base: dict[str, list[float]] = {p: [_rate(r) for r in rs] for p, rs in run.baselines.items()}
    for parser, name in (("json", "json.loads"), ("orjson", "orjson.loads")):
        if not base[parser]:
            continue
        rows.append(
            (
                f"baseline: aiokafka getmany + {name}",
                f"{_span(base[parser])} events/s",
                "",
                "",
                _loads(run.baselines[parser]),
            )
        )
    if run.pipelines:
        rows += _pipeline_rows(run, base)
    if run.engine is not None:
        e = run.engine
        rows.append(
            (
                "engine alone, in-process (no Kafka)",
                f"{_rate(e):,.0f} events/s",
                f">= {MIN_EVENTS_PER_S:,.0f}",
                _mark(_rate(e) >= MIN_EVENTS_PER_S),
                _loads([e]),
            )
        )
    for name, results in _memory_runs(run):
        for r in results:
            first, last, growth = _memory(r)
            end = r["memory"][-1]
            rows.append(
                (
                    f"{name}: RSS at 100k -> {int(end['events']):,} events",
                    f"{first:,.0f} -> {last:,.0f} MiB ({growth:+.1%})",
                    f"flat (<= {FLAT_GROWTH:.0%})",
                    _mark(growth <= FLAT_GROWTH),
                    "",
                )
            )
    last_pipe = run.pipelines[-1]["memory"][-1] if run.pipelines else {}
    if last_pipe:
        bound = run.label_ttl * run.rate
        rows.append(
            (
                "engine state at the end",
                f"windows {last_pipe['store_mib']:.1f} MiB, open queries "
                f"{last_pipe['open_queries']:,.0f} (label_ttl x rate = {bound:,.0f})",
                "",
                "",
                "",
            )
        )
    return _table(run, rows)


def _pipeline_rows(run: Run, base: dict[str, list[float]]) -> list[tuple[str, str, str, str, str]]:
    rows: list[tuple[str, str, str, str, str]] = []
    pipe = [_rate(r) for r in run.pipelines]
    rows.append(
        (
            "pipeline end to end (KafkaSource+Runner+Engine)",
            f"{_span(pipe)} events/s",
            f">= {MIN_EVENTS_PER_S:,.0f}",
            _mark(min(pipe) >= MIN_EVENTS_PER_S),
            _loads(run.pipelines),
        )
    )
    for parser in ("orjson", "json"):
        if not base[parser]:
            continue
        ratios = [p / b for p, b in zip(pipe, base[parser], strict=True)]
        rows.append(
            (
                f"pipeline / baseline ({parser})",
                _span(ratios, "{:.3f}"),
                f">= {MIN_RATIO}",
                _mark(min(ratios) >= MIN_RATIO),
                "",
            )
        )
    shares = []
    for r in run.pipelines:
        total = r["seconds"]
        shares.append(
            f"fetch {r['fetch_seconds'] / total:.0%} / apply {r['apply_seconds'] / total:.0%}"
            f" / commit {r['commit_seconds'] / total:.0%}"
            + (f" ({r['events'] / r['batches']:,.0f} events a batch)" if r.get("batches") else "")
        )
    rows.append(("pipeline time split", "; ".join(shares), "", "", ""))
    return rows


def _table(run: Run, rows: list[tuple[str, str, str, str, str]]) -> str:
    head = ("figure", "value", "target", "result", "load avg")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    lines = [
        f"{run.events:,} retrieval events (20 documents, {run.probe_share:.0%} probes with "
        f"qrels), {run.partitions} partitions, event clock, {run.rate:g} queries/s of event "
        f"time, label_ttl {run.label_ttl:g} s, label keys {run.label_keys or 'none'}",
        "",
        " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)),
        "-+-".join("-" * w for w in widths),
    ]
    lines += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    for name, results in _memory_runs(run):
        for r in results:
            series = ", ".join(
                f"{p['events'] / 1000:,.0f}k: {p['rss_mib']:,.0f}" for p in r["memory"]
            )
            lines.append(f"\n{name} RSS (MiB) by events applied: {series}")
    if run.pipelines:
        lines.append(
            f"pipeline outcomes: {run.pipelines[-1]['outcomes']}, labeled final "
            f"queries: {run.pipelines[-1]['final_labeled_queries']:,}"
        )
    if run.profile is not None:
        lines.append(
            f"\ncProfile of the engine alone on {run.profile['events']:,} events "
            f"(top 10 by cumulative time):\n{run.profile['profile']}"
        )
    return "\n".join(lines)
