"""The streaming benchmark's results and their table: figure, value, target, pass/miss.

Targets: the pipeline sustains >= 30 000 events/s end to end, at least 0.8 of what a plain
consumer that only parses the JSON with orjson reaches on the same broker and topic (0.5
of one that parses with the standard library's json), at least 80 000 events per CPU
second, and its resident memory is flat in the number of events (growth from the 100k
checkpoint to the end within 10 %, since state is bounded by series x windows x buckets and
the open-query cap).

Each kind of traffic (`Traffic`) is one `Run` with its own baselines; `render_summary`
puts the runs side by side, one row each.

The N-process rows (`bench.pipeline_group`) are rendered in a table of their own, never
mixed with the single-process figures. First the baseline group: N `getmany` +
`orjson.loads` consumers in one group on the same topic, measured the same way (go to last
batch applied), its aggregate events/s and its ratio to one baseline consumer. Then the
pipeline's group: aggregate events/s and its ratio to the same single baselines (held to
the same targets, since a consumer group is how a deployment scales), its ratio to the
baseline group (the same N, so it is each member's against each baseline member's: held to
the 0.8 target, and the like-for-like one where the broker shares the cores), its ratio to
one process and the events per CPU second (so that the cores it takes are in view). Then
each process's share, the CPU from go to stop, and whether every event was applied exactly
once, for each group.

The summary has the same per traffic: the group's aggregate, each member against the
single baseline ("each / baseline") and against a baseline group member ("each / baseline
group member"), and each member's events per CPU second.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from bench.pipeline_data import DataConfig

__all__ = [
    "FLAT_GROWTH",
    "MIN_EVENTS_PER_CPU_S",
    "MIN_EVENTS_PER_S",
    "MIN_RATIO",
    "PLAIN_PROBES",
    "TRAFFICS",
    "Run",
    "Traffic",
    "group_rate",
    "render",
    "render_summary",
]

MIN_EVENTS_PER_S = 30_000.0
MIN_RATIO = {"orjson": 0.8, "json": 0.5}
"""Of the plain consumer's events/s, by its parser."""
MIN_EVENTS_PER_CPU_S = 80_000.0
PLAIN_PROBES = DataConfig().probe_share
"""Share of queries with qrels in the usual traffic (the data's default)."""
FLAT_GROWTH = 0.10


@dataclass(frozen=True, slots=True)
class Traffic:
    """A kind of traffic: the events (their share of probes with qrels) and the engine's
    exported label keys."""

    name: str
    label_keys: list[str]
    probe_share: float

    def describe(self) -> str:
        keys = ",".join(self.label_keys) or "none"
        return f"label keys {keys}, {self.probe_share:.0%} of queries labeled inline (qrels)"


TRAFFICS = {
    t.name: t
    for t in (
        Traffic("plain", [], PLAIN_PROBES),
        Traffic("keys", ["app", "index"], PLAIN_PROBES),
        Traffic("labeled", [], 1.0),
    )
}
"""The benchmarks' kinds of traffic: no exported label keys, two, every query labeled."""


Result = dict[str, Any]
Row = tuple[str, str, str, str, str]
"""A table row: figure, value, target, result, load average."""


@dataclass(slots=True)
class Run:
    """Everything one benchmark run measured (stage results as the stages print them)."""

    events: int
    partitions: int
    rate: float
    label_ttl: float
    label_keys: list[str]
    probe_share: float
    processes: int = 0
    group_partitions: int = 0
    produced_bytes: int = 0
    produce_seconds: float = 0.0
    generate_seconds: float = 0.0
    produce_load: tuple[float, float] = (0.0, 0.0)
    baselines: dict[str, list[Result]] = field(
        default_factory=lambda: {"json": [], "orjson": [], "orjson-fetch": []}
    )
    """Per parser; "orjson-fetch" is the orjson consumer with the agent's fetch size, for
    reference (the targets are against aiokafka's defaults)."""
    pipelines: list[Result] = field(default_factory=list)
    engine: Result | None = None
    profile: Result | None = None
    groups: list[Result] = field(default_factory=list)
    """One `run_group` result per repeat: the pipeline's group."""
    baseline_groups: list[Result] = field(default_factory=list)
    """One `run_group` result per repeat: N `orjson.loads` baseline consumers in one group
    on the same topic, the like-for-like reference for the pipeline's group."""
    traffic: str = "custom"

    def raw(self) -> dict[str, Any]:
        return {
            "traffic": self.traffic,
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
            "processes": self.processes,
            "group_partitions": self.group_partitions,
            "groups": self.groups,
            "baseline_groups": self.baseline_groups,
        }


def _rate(r: Result) -> float:
    return float(r["events"]) / float(r["seconds"])


def _per_cpu(results: list[Result]) -> float:
    """Events applied per CPU second the processes used (first to last batch applied)."""
    return sum(int(r["events"]) for r in results) / sum(float(r["cpu_seconds"]) for r in results)


def group_rate(g: Result) -> float:
    """All processes' events / (go -> the last batch applied by any of them)."""
    last = max(float(m["last"]) for m in g["members"])
    return sum(int(m["events"]) for m in g["members"]) / (last - float(g["go"]))


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
    for parser, name in (
        ("json", "json.loads"),
        ("orjson", "orjson.loads"),
        ("orjson-fetch", "orjson.loads, the agent's fetch size (reference)"),
    ):
        if not base.get(parser):
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
    out = _table(run, rows)
    if run.groups or run.baseline_groups:
        out += "\n\n" + _group_table(run, base)
    return out


def _group_table(run: Run, base: dict[str, list[float]]) -> str:
    """The baseline group's and the pipeline group's aggregates and ratios, then each run's
    members, CPU and exactly-once check, baseline group first."""
    n, groups, plain = run.processes, run.groups, run.baseline_groups
    last = (groups or plain)[-1]
    split = "+".join(str(len(ps)) for ps in last["start_partitions"])
    rows = _baseline_group_rows(run, base) if plain else []
    if groups:
        rows += _pipeline_group_rows(run, base)
    for k in range(max(len(groups), len(plain))):
        run_no = f"run {k + 1}, " if max(len(groups), len(plain)) > 1 else ""
        for results in (plain, groups):
            if k < len(results):
                rows += _member_rows(run, results[k], run_no)
    head = (
        f"{n} processes in one consumer group, topic {last['topic']} with "
        f"{run.group_partitions} partitions split {split}: {n} baseline consumers "
        f"(getmany + orjson.loads) and {n} pipeline processes (each the stage above); "
        "aggregate = all events / (go -> last event applied by any process)"
    )
    return _format(head, rows)


def _baseline_group_rows(run: Run, base: dict[str, list[float]]) -> list[Row]:
    """The baseline group's aggregate and its ratio to one baseline consumer (what the
    cores let N plain consumers add)."""
    n, plain = run.processes, run.baseline_groups
    name = f"{n} baseline consumers"
    rates = [group_rate(g) for g in plain]
    title = f"{name} (getmany + orjson.loads): aggregate"
    rows: list[Row] = [(title, f"{_span(rates)} events/s", "", "", _loads(plain))]
    if base.get("orjson"):
        ratios = [g / b for g, b in zip(rates, base["orjson"], strict=False)]
        rows.append((f"{name} / one (orjson)", _span(ratios, "{:.2f}x"), "", "", ""))
    return rows


def _pipeline_group_rows(run: Run, base: dict[str, list[float]]) -> list[Row]:
    """The pipeline group's aggregate against the single baselines, the baseline group,
    one pipeline process, and per CPU second."""
    n, groups = run.processes, run.groups
    name = f"{n} processes"
    rows: list[Row] = []
    rates = [group_rate(g) for g in groups]
    rows += _target_rows(f"{name}: aggregate", name, rates, base, _loads(groups))
    if run.baseline_groups:
        rows.append(_member_ratio_row(run))
    if run.pipelines:
        one = [_rate(r) for r in run.pipelines]
        ratios = [g / p for g, p in zip(rates, one, strict=False)]
        cores = [r["cpu_seconds"] / r["seconds"] for r in run.pipelines]
        value = f"{_span(ratios, '{:.2f}x')} (one process: {_span(cores, '{:.2f}')} cores)"
        rows.append((f"{name} / one pipeline process", value, "", "", ""))
    rows.append(_cpu_row(f"{name}, each", [_per_cpu(g["members"]) for g in groups]))
    return rows


def _member_ratios(run: Run) -> list[float]:
    """The pipeline group's aggregate / the baseline group's, run i against run i: with the
    same N it is each member's rate against each baseline member's."""
    plain = [group_rate(g) for g in run.baseline_groups]
    return [group_rate(g) / b for g, b in zip(run.groups, plain, strict=False)]


def _member_ratio_row(run: Run) -> Row:
    """Each member against a baseline group member, held to the target."""
    n, ratios = run.processes, _member_ratios(run)
    target = MIN_RATIO["orjson"]
    return (
        f"{n} processes / {n} baseline consumers (each / baseline group member)",
        _span(ratios, "{:.3f}"),
        f">= {target}",
        _mark(min(ratios) >= target),
        "",
    )


_MEMBER = {
    "baseline": ("baseline consumer", "baseline consumers"),
    "pipeline": ("process", "processes"),
}
"""What a group's members are called, one and several, by the stage they run."""


def _member_rows(run: Run, g: Result, run_no: str) -> list[Row]:
    """One group run's members (events, own rate, start and end after go, cores, RSS), its
    CPU from go to stop, and its exactly-once check."""
    one, several = _MEMBER[g.get("stage", "pipeline")]
    rows: list[Row] = []
    for i, m in enumerate(g["members"]):
        parts = ",".join(map(str, g["start_partitions"][i]))
        rss = m["memory"][-1]["rss_mib"]
        rows.append(
            (
                f"{run_no}{one} {i + 1} (partitions {parts})",
                f"{m['events']:,} events, {_rate(m):,.0f} events/s own; first received "
                f"{m['first'] - g['go']:.2f} s, last applied {m['last'] - g['go']:.2f} s "
                f"after go; {m['cpu_seconds'] / m['seconds']:.2f} cores; RSS {rss:,.0f} MiB",
                "",
                "",
                "",
            )
        )
    own = sum(m["cpu_seconds"] for m in g["members"]) / (g["stop"] - g["go"])
    rows.append(
        (
            f"{run_no}{several}: CPU from go to stop, of {os.cpu_count()} cores",
            f"machine {g['machine_cores']:.2f}: the {len(g['members'])} {several} {own:.2f}, "
            f"broker {g['broker_cores']:.2f}, the rest (other jobs) "
            f"{g['machine_cores'] - own - g['broker_cores']:.2f}",
            "",
            "",
            "",
        )
    )
    rows.append(_exactly_once(run, g, f"{run_no}{several}: "))
    return rows


def _exactly_once(run: Run, g: Result, prefix: str) -> Row:
    """Total applied and processed (by the engine; by a baseline, parsed) = produced,
    offsets tiled; rebalances noted."""
    total = sum(m["events"] for m in g["members"])
    processed = sum(m["processed"] for m in g["members"])
    verb = "parsed" if g.get("stage") == "baseline" else "processed"
    moved = sum(1 for m in g["members"] for t, _ in m["assignments"] if g["go"] < t < g["stop"])
    notes = list(g["problems"])
    if moved:
        notes.append(f"{moved} assignment changes during the run")
    ok = total == processed == run.events and not g["problems"]
    value = f"{total:,} applied, {processed:,} {verb}, {run.events:,} produced"
    value += "; " + ("; ".join(notes) if notes else "offsets tile every partition")
    return (f"{prefix}events applied exactly once", value, "= produced", _mark(ok), "")


def _pipeline_rows(run: Run, base: dict[str, list[float]]) -> list[tuple[str, str, str, str, str]]:
    rows: list[tuple[str, str, str, str, str]] = []
    pipe = [_rate(r) for r in run.pipelines]
    title = "pipeline end to end (KafkaSource+Runner+Engine)"
    rows += _target_rows(title, "pipeline", pipe, base, _loads(run.pipelines))
    shares = []
    for r in run.pipelines:
        total = r["seconds"]
        shares.append(
            f"fetch {r['fetch_seconds'] / total:.0%} / apply {r['apply_seconds'] / total:.0%}"
            f" / commit {r['commit_seconds'] / total:.0%}"
            + (f" ({r['events'] / r['batches']:,.0f} events a batch)" if r.get("batches") else "")
        )
    rows.append(("pipeline time split", "; ".join(shares), "", "", ""))
    rows.append(_cpu_row("pipeline", [_per_cpu([r]) for r in run.pipelines]))
    return rows


def _target_rows(
    title: str, name: str, rates: list[float], base: dict[str, list[float]], loads: str
) -> list[tuple[str, str, str, str, str]]:
    """The events/s row and the ratio rows to each baseline, held to the targets."""
    rows = [
        (
            title,
            f"{_span(rates)} events/s",
            f">= {MIN_EVENTS_PER_S:,.0f}",
            _mark(min(rates) >= MIN_EVENTS_PER_S),
            loads,
        )
    ]
    for parser in ("orjson", "json", "orjson-fetch"):
        if base.get(parser):  # run i against the baselines of run i
            ratios = [r / b for r, b in zip(rates, base[parser], strict=False)]
            held = parser in MIN_RATIO  # the reference baseline has no target
            rows.append(
                (
                    f"{name} / baseline ({parser})",
                    _span(ratios, "{:.3f}"),
                    f">= {MIN_RATIO[parser]}" if held else "",
                    _mark(min(ratios) >= MIN_RATIO[parser]) if held else "",
                    "",
                )
            )
    return rows


def _cpu_row(name: str, per_cpu: list[float]) -> tuple[str, str, str, str, str]:
    return (
        f"{name}: events per CPU second",
        _span(per_cpu),
        f">= {MIN_EVENTS_PER_CPU_S:,.0f}",
        _mark(min(per_cpu) >= MIN_EVENTS_PER_CPU_S),
        "",
    )


def _format(title: str, rows: list[tuple[str, str, str, str, str]]) -> str:
    head = ("figure", "value", "target", "result", "load avg")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    lines = [
        title,
        "",
        " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)),
        "-+-".join("-" * w for w in widths),
    ]
    lines += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def _table(run: Run, rows: list[tuple[str, str, str, str, str]]) -> str:
    title = (
        f"traffic {run.traffic}: "
        f"{run.events:,} retrieval events (20 documents, {run.probe_share:.0%} probes with "
        f"qrels), {run.partitions} partitions, event clock, {run.rate:g} queries/s of event "
        f"time, label_ttl {run.label_ttl:g} s, label keys {run.label_keys or 'none'}"
    )
    lines = [_format(title, rows)]
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


def render_summary(runs: list[Run]) -> str:
    """One row per traffic: the one-process pipeline and the group against the same run's
    `getmany` + `orjson.loads` baseline, the group also against the same run's baseline
    group, and per CPU second (issue 15's targets)."""
    rows: list[tuple[str, ...]] = []
    for run in runs:
        base = [_rate(r) for r in run.baselines["orjson"]]
        one = [_rate(r) for r in run.pipelines]
        ratio = [p / b for p, b in zip(one, base, strict=False)]
        cpu = [_per_cpu([r]) for r in run.pipelines]
        row = [
            f"{run.traffic} ({','.join(run.label_keys) or 'no keys'}, "
            f"{run.probe_share:.0%} labeled)",
            _span(base) if base else "-",
            _span(one) if one else "-",
            _span(ratio, "{:.3f}") if ratio else "-",
            _span(cpu) if cpu else "-",
        ]
        row += _summary_group(run, base)
        row.append("-" if run.engine is None else f"{_rate(run.engine):,.0f}")
        loads = run.pipelines + run.groups + run.baseline_groups
        loads += [r for rs in run.baselines.values() for r in rs]
        row.append(_loads(loads) if loads else "")
        rows.append(tuple(row))
    n = runs[0].processes
    head = (
        "traffic",
        "orjson baseline",
        "one process",
        f"/ baseline (>= {MIN_RATIO['orjson']})",
        f"per CPU s (>= {MIN_EVENTS_PER_CPU_S:,.0f})",
        f"{n} processes",
        f"each / baseline (>= {MIN_RATIO['orjson']})",
        f"{n} baseline consumers",
        f"each / baseline group member (>= {MIN_RATIO['orjson']})",
        f"each per CPU s (>= {MIN_EVENTS_PER_CPU_S:,.0f})",
        "engine alone",
        "load avg",
    )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [
        f"Summary: {runs[0].events:,} events a traffic, events/s unless said",
        "",
        " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)),
        "-+-".join("-" * w for w in widths),
    ]
    lines += [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def _summary_group(run: Run, base: list[float]) -> list[str]:
    """The summary's group columns: the pipeline group's aggregate, each member against the
    single baseline, the baseline group's aggregate, each member against a baseline group
    member (the aggregates' ratio: the same N), each member per CPU second."""
    rates = [group_rate(g) for g in run.groups]
    plain = [group_rate(g) for g in run.baseline_groups]
    each = [g / run.processes / b for g, b in zip(rates, base, strict=False)]
    like = _member_ratios(run)
    return [
        _span(rates) if rates else "-",
        _span(each, "{:.3f}") if each else "-",
        _span(plain) if plain else "-",
        _span(like, "{:.3f}") if like else "-",
        _span([_per_cpu(g["members"]) for g in run.groups]) if rates else "-",
    ]
