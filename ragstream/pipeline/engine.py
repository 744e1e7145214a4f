"""The synchronous heart of the agent: decode -> validate -> apply, one batch at a time.

`Engine.apply(messages)` decodes a batch, stamps event times on the clock, opens queries and
applies labels in arrival order, scores every query that changed in one kernel pass,
replaces each changed query's contribution in the windows (retract the old row, add the
new one), and finalizes queries whose label TTL has ended. It does no I/O: sources, sinks
and the HTTP server sit around it in `ragstream.pipeline.runner`.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from ragstream.events import (
    BatchReader,
    DecodedAnswer,
    DecodedFeedback,
    DecodedRetrieval,
    DecodeError,
    Limits,
    Message,
    Read,
    Record,
)
from ragstream.events.scanner import Scanned
from ragstream.events.trace_ids import TraceField
from ragstream.join import LabelJoin, LabelOutcome, Openings, QueryTable, QueryView, RowLabels
from ragstream.join.table import Rows
from ragstream.metrics import Gain
from ragstream.pipeline.drift_config import DriftConfig, ResolvedDrift
from ragstream.pipeline.exemplars import Exemplars, Found, capture
from ragstream.pipeline.labelsets import LabelSetMapper
from ragstream.pipeline.partition_tally import (
    PartitionTally,
    merge_exemplars_of,
    sum_counters,
)
from ragstream.pipeline.partitions import (
    VERSION,
    JoinLimits,
    PartitionConfigError,
    PartitionRead,
    PartitionState,
    Shares,
    SideState,
)
from ragstream.pipeline.row_layout import RowLayout
from ragstream.pipeline.scoring import ScoredQueries, Scorer
from ragstream.pipeline.sequential_drift import Held, SequentialDrift
from ragstream.pipeline.windowed_drift import WindowedDrift
from ragstream.traces import OTLP_FORMATS, TraceAssembler, TraceMapping, TraceReader
from ragstream.traces.reader import closed_answers
from ragstream.windows import (
    Aggregate,
    Clock,
    Timing,
    WindowSpec,
    WindowStore,
)

__all__ = [
    "BatchReport",
    "Engine",
    "EngineConfig",
]

_F64 = NDArray[np.float64]
_PRUNE_EVERY = 60.0
SNAPSHOT_VERSION = 2
"""Version of a whole-engine snapshot (`Engine.snapshot`): 2 holds each partition's record
(`Engine.export_partitions`) beside the shared parts; 1 grouped the state by kind."""
_FUTURE = int(Timing.FUTURE)
_EVENT_TS = attrgetter("ts")
_TOP_DOCS = 10
"""Leading document times the scanner keeps at least (the largest default cutoff)."""


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Everything the engine is built from; the app wiring fills it from the settings
    (`ragstream.wiring.engine`), where the defaults are."""

    cutoffs: tuple[int, ...]
    half_lives: tuple[float, ...]
    windows: tuple[float, ...]
    buckets: int
    bins: int
    clock: str
    future_tolerance: float
    label_keys: tuple[str, ...]
    max_label_values: int
    label_ttl: float
    pending_ttl: float
    max_open: int
    """Open queries per partition; also the final query ids each remembers."""
    max_pending: int
    gain: Gain
    relevance_threshold: float
    limits: Limits
    scan: bool
    """Read retrieval events of the common shape with the compiled scanner when it is
    built (`ragstream.events.scanner`); False: msgspec reads every message. Same results."""
    formats: tuple[tuple[str, str], ...]
    """(topic, format) for topics that do not carry ragstream events: `otlp_proto` or
    `otlp_json`, OpenTelemetry traces (`ragstream.traces`)."""
    traces: TraceMapping
    """How spans of the OTLP topics become events."""
    drift: DriftConfig | None
    """Drift detection (docs/drift.md, "In the agent"); None: off."""
    final_unlabeled: bool
    """Report every final query in `BatchReport.final`; False: only those with a label."""
    report_final: bool
    """False: `BatchReport.final` and `finish` give no query (the agent, which reads
    none): final queries are then read from their tables' rows only for the histograms."""
    trace_id_field: str | None
    """A top-level field of retrieval events the schema does not know whose value, when a
    trace id, is the query's trace id for its exemplars (`ragstream.events.trace_ids`);
    without one, or None, the query id, when it is a trace id."""


@dataclass(slots=True)
class BatchReport:
    """What one `apply` did, for the caller's sinks (dead letters, per-query output)."""

    invalid: list[tuple[Record, DecodeError]] = field(default_factory=list)
    answers: list[tuple[int, DecodedAnswer]] = field(default_factory=list)
    """The answers that were not late, each with its partition (the judge keeps its state
    per partition)."""
    verdicts: list[tuple[int, DecodedFeedback]] = field(default_factory=list)
    """The feedback events that carry a gold verdict on an answer (`answer`), each with its
    partition, in arrival order: the judge compares them with its own verdicts, and decides
    by its label TTL whether they still count."""
    final: list[QueryView] = field(default_factory=list)


class Engine:
    """Windows, joins and counters of one agent; feed it batches with `apply`."""

    def __init__(self, config: EngineConfig, *, wall: Callable[[], float] | None = None) -> None:
        self.config = config
        layout = RowLayout(config.cutoffs, config.half_lives, config.label_keys)
        self.layout = layout
        self.columns = layout.window_columns
        self.spec = WindowSpec(
            columns=self.columns,
            decayed=layout.decayed if layout.half_lives else (),
            half_lives=layout.half_lives,
            windows=config.windows,
            buckets=config.buckets,
            bins=config.bins,
            horizon=config.future_tolerance,
            hist_columns=layout.hist_columns,
        )
        clock_kwargs = {} if wall is None else {"wall": wall}
        self.clock = Clock.for_spec(self.spec, config.clock, **clock_kwargs)
        self.store = WindowStore(self.spec)
        self.scorer = Scorer(layout, gain=config.gain, threshold=config.relevance_threshold)
        self.labelsets = LabelSetMapper(config.label_keys, config.max_label_values)
        self.partitions: dict[int, PartitionState] = {}
        """Per held partition: its join and counts, which move with it (see
        `ragstream.pipeline.partitions`); the windows are the shared `store`'s."""
        self._limits = JoinLimits(
            config.label_ttl, config.pending_ttl, config.max_open, config.max_pending
        )
        self.sides: dict[str, SideState] = {}
        """State kept beside the engine per partition (the judge's windows), saved and
        moved with the engine's own (`attach`)."""
        self._final_columns = len(layout.plain)
        self._exemplar_columns = [i for i, c in enumerate(layout.plain) if c in layout.hist_columns]
        """The final-query histograms the exporter writes, and whose exemplars are kept."""
        self.next_prune = -math.inf
        """Event time of the next upkeep of the windows (empty series leave them)."""
        self.drift = (
            None if config.drift is None else ResolvedDrift.of(config.drift, layout, config.windows)
        )
        drift = self.drift
        sequential = (
            None if drift is None else SequentialDrift(drift.config, drift.columns, self._detectors)
        )
        self.sequential = sequential if sequential else None
        """Page-Hinkley and ADWIN on final per-query values, per partition (None: off)."""
        windowed = None if drift is None else WindowedDrift(drift)
        self.windowed_drift = windowed if windowed else None
        """Z-score and PSI of window pairs, evaluated on the engine's clock by `apply`
        and read by the exporter (None: off)."""
        self.reader = BatchReader(
            config.limits,
            scan=config.scan,
            top=max((_TOP_DOCS, *config.cutoffs)),  # what the mean ages read
            label_keys=config.label_keys or None,
            graded=True,  # labeled queries then are rows of the table too
            trace_field=config.trace_id_field,
        )
        field_name = config.trace_id_field
        self._trace_field = None if field_name is None else TraceField(field_name)
        """Reads the queries' trace ids from their events (None: their ids are)."""
        self.traces: TraceReader | None = None
        """The OTLP topics' reader, when a topic carries traces (each partition's open
        traces are in its state)."""
        if any(fmt in OTLP_FORMATS for _, fmt in config.formats):
            self.traces = TraceReader(dict(config.formats), config.traces, config.label_keys)

    # -- the batch ---------------------------------------------------------------------------

    def apply(self, messages: Sequence[Record]) -> BatchReport:
        """Apply one batch; never raises on bad input (it is counted and reported)."""
        report = BatchReport()
        if self.traces is not None:  # OTLP messages become the events of their spans
            messages = self._expand_traces(messages, report)
        return self._apply_read(messages, report)

    def _apply_read(self, messages: Sequence[Record], report: BatchReport) -> BatchReport:
        """`apply` after the OTLP messages were expanded."""
        events, kept, values = self._decode(messages, report)
        if events:
            stamped = self.clock.stamp([e.ts for e in events])
            report.answers, report.verdicts = self._apply_events(
                events, kept, values, stamped.times.tolist(), stamped.timing.tolist(), stamped.now
            )
        now = self.clock.now()
        self._rescore(now)
        report.final = self._advance(now)
        if self.windowed_drift is not None:  # on the engine's clock, never at a read
            self.windowed_drift.advance(self.store, now)
        return report

    def _decode(
        self, messages: Sequence[Record], report: BatchReport
    ) -> tuple[list[Read], Sequence[Record], list[bytes]]:
        """The batch's events, their messages and the messages' values, in order; invalid
        messages reported (see `ragstream.events.BatchReader`)."""
        values = [m.value for m in messages]
        read = self.reader.read(values)  # a tombstone's None is counted `empty` there
        for item in read.errors:
            message = messages[item.index]
            report.invalid.append((message, item.error))
            self._count_invalid(message.partition, item.error.reason)
        raw = cast("list[bytes]", values)  # the values read as events: no None among them
        if read.kept is None:
            return read.events, messages, raw
        kept = read.kept
        return read.events, [messages[i] for i in kept], [raw[i] for i in kept]

    def _expand_traces(self, messages: Sequence[Record], report: BatchReport) -> Sequence[Record]:
        """The batch with its OTLP messages replaced by their events (see
        `ragstream.traces.TraceReader`); invalid OTLP messages reported."""
        assert self.traces is not None
        clock = self.clock  # the event clock closes traces at the event times it has seen
        now = clock.now() if self.config.clock == "wall" else clock.reached
        expanded, invalid = self.traces.expand(messages, self._assembler)
        for message, error in invalid:
            report.invalid.append((message, error))
            self._count_invalid(message.partition, error.reason)
        closing = self._close_traces(now)
        return [*expanded, *closing] if closing else expanded

    def _assembler(self, partition: int) -> TraceAssembler:
        """The partition's open traces (begun on its first trace record)."""
        state = self._state(partition)
        if state.traces is not None:
            return state.traces
        assert self.traces is not None
        return state.begin_traces(self.traces.new_assembler())

    def _close_traces(self, now: float | None) -> list[Message]:
        """The answers of the traces that close at ``now`` (None: all of them, the end of
        the stream), the partitions' in the order their traces began."""
        held = sorted(
            (s.trace_order, s.partition, s.traces)
            for s in self.partitions.values()
            if s.traces is not None
        )
        return closed_answers(
            (p, traces.close_all() if now is None else traces.close_due(now))
            for _, p, traces in held
        )

    def reject(self, invalid: Sequence[tuple[Record, DecodeError]]) -> None:
        """Count messages a source could not hand over as values at all (a Kafka record
        batch that cannot be read), as `apply` counts the invalid ones it reads."""
        for message, error in invalid:
            self._count_invalid(message.partition, error.reason)

    def _count_invalid(self, partition: int, reason: str) -> None:
        tally = self._state(partition).tally
        tally.invalid[reason] += 1
        tally.events[("unknown", "invalid")] += 1

    def _state(self, partition: int) -> PartitionState:
        """The partition's state (a new one on its first event)."""
        state = self.partitions.get(partition)
        if state is None:
            state = self.partitions[partition] = PartitionState(partition)
        return state

    def _apply_events(
        self,
        events: Sequence[Read],
        messages: Sequence[Record],
        values: Sequence[bytes],
        times: Sequence[float],
        timings: Sequence[int],
        now: float,
    ) -> tuple[list[tuple[int, DecodedAnswer]], list[tuple[int, DecodedFeedback]]]:
        """Join every event in arrival order: one loop, counts kept in locals until the end
        (`values`: the messages' values, read once by `_decode`).

        Returns the answers that were not late and the gold verdicts, with their
        partitions, for the judge."""
        answers: list[tuple[int, DecodedAnswer]] = []
        verdicts: list[tuple[int, DecodedFeedback]] = []
        states = self.partitions
        mapper = self.labelsets if self.config.label_keys else None
        counts: Counter[tuple[int, str, str]] = Counter()
        latest: dict[tuple[int, str], float] = {}
        runs: dict[int, Openings] = {}
        """Per partition: retrieval events not opened yet (their label sets left empty
        without label keys, their trace ids read at the end). They open in one call per
        run, before the partition's next event that touches its join: per partition (each
        has its own join) the arrival order holds."""
        trace_of = None if self._trace_field is None else self._trace_field.of_each

        def flush(partition: int) -> None:
            run = runs.pop(partition, None)
            if run is None:
                return
            newest = max(map(_EVENT_TS, run.events))
            if newest > latest.get((partition, "retrieval"), -math.inf):
                latest[(partition, "retrieval")] = newest
            if mapper is None:
                run.labelsets = [()] * len(run)
            if trace_of is not None:
                run.traces = trace_of(run.events, run.raws)
            duplicates = states[partition].join.open(run)  # type: ignore[union-attr]
            counts[(partition, "retrieval", "processed")] += len(run) - duplicates
            if duplicates:
                counts[(partition, "retrieval", "duplicate")] += duplicates

        collapsed: dict[int, Counter[str]] = {}
        """Per partition: its tally's count of values past the cap (looked up once)."""
        each = zip(events, messages, values, times, timings, strict=True)
        for event, message, value, ts, timing in each:
            partition = message.partition
            if timing or type(event) is not Scanned:
                kind = "retrieval" if isinstance(event, Scanned) else event.type
                if event.ts > latest.get((partition, kind), -math.inf):
                    latest[(partition, kind)] = event.ts
                state = states.get(partition)
                join = (None if state is None else state.join) or self._new_join(partition)
                if timing:
                    if timing == _FUTURE:
                        self._state(partition).tally.clamped[kind] += 1
                    elif type(event) is not DecodedFeedback:  # a late label may still count
                        counts[(partition, kind, "late")] += 1
                        continue
                if type(event) is DecodedAnswer:  # the join is not involved
                    answers.append((partition, event))
                    counts[(partition, kind, "processed")] += 1
                    continue
                if type(event) is DecodedFeedback:  # the join, after the partition's run
                    if partition in runs:
                        flush(partition)
                    if event.answer is not None:  # a gold verdict: the judge's
                        verdicts.append((partition, event))
                        counts[(partition, kind, "processed")] += 1
                        continue
                    assert event.doc_id is not None
                    assert event.rel is not None
                    outcome = join.label(
                        event.query_id,
                        event.doc_id,
                        event.rel,
                        ts=event.ts,
                        t_now=now,
                        source=event.source,
                    )
                    counted = "late" if outcome is LabelOutcome.LATE else "processed"
                    counts[(partition, kind, counted)] += 1
                    continue
            # a retrieval event (one clamped to now too): opened with its run
            run = runs.get(partition)
            if run is None:
                run = runs[partition] = Openings()
                state = states.get(partition)
                if state is None or state.join is None:
                    self._new_join(partition)
            retrieval = cast("Scanned | DecodedRetrieval", event)
            run.events.append(retrieval)
            run.times.append(ts)
            run.raws.append(value)
            if mapper is not None:
                past = collapsed.get(partition)
                if past is None:
                    past = collapsed[partition] = self._state(partition).tally.collapsed
                if type(retrieval) is DecodedRetrieval:
                    run.labelsets.append(mapper(retrieval.labels, past))
                else:  # the values of the keys the mapper maps, a tuple
                    run.labelsets.append(mapper.of_values(retrieval.labels, past))  # type: ignore[arg-type]
        for partition in list(runs):
            flush(partition)
        for (p, type_, result), n in counts.items():
            self._state(p).tally.events[(type_, result)] += n
        for (p, type_), seen in latest.items():
            self._state(p).tally.seen({type_: seen})
        return answers, verdicts

    def _new_join(self, partition: int) -> LabelJoin:
        """A new join for the partition; its state moves last, so that the joins are
        visited in the order they were made."""
        state = self.partitions.pop(partition, None) or PartitionState(partition)
        self.partitions[partition] = state
        join = state.join = self._limits.new_join(partition)
        return join

    # -- windows -----------------------------------------------------------------------------

    def _rescore(self, now: float) -> None:
        """Replace the contribution of every query that changed in this batch: one retract
        of the old rows and one add of the new ones, for all series at once, in arrival
        order. The rows opened in the batch without an entry in their table's label map
        are scored from their columns, all at once, and the rows with one from it, all at
        once (a pass of the kernels each, as they were always grouped)."""
        changes = [(join.table, join.take_changed()) for join in self.joins.values()]
        changes = [(table, rows) for table, rows in changes if rows]
        if not changes:
            return
        fresh = [table.take_fresh() for table, _ in changes]
        fresh_times, fresh_rows = self._score_fresh([t for t, _ in changes], fresh)
        keys: list[tuple[int, tuple[str, ...]]] = []
        entries: list[RowLabels] = []
        """The changed rows' entries (scored from them)."""
        if all(len(rows) == len(own) for (_, rows), own in zip(changes, fresh, strict=True)):
            # the usual batch: every changed row was opened in it, without an entry
            for table, rows in changes:
                lo, hi = rows[0] - table.base, rows[-1] + 1 - table.base
                keys += zip(repeat(table.partition), table.labelsets[lo:hi])
            times, values = fresh_times, fresh_rows
        else:
            at_fresh: list[int] = []
            at_labeled: list[int] = []
            columns: list[tuple[float, bytes, bytes | None, bytes | None]] = []
            for table, rows in changes:
                labels, labelsets, base = table.labels, table.labelsets, table.base
                partition = table.partition
                for row in rows:
                    entry = labels.get(row)
                    if entry is None:
                        at_fresh.append(len(keys))
                    else:
                        at_labeled.append(len(keys))
                        entries.append(entry)
                        columns.append(table.labeled_columns(row))
                    keys.append((partition, labelsets[row - base]))
            ts, tops, ranked, judged = zip(*columns, strict=True)
            labeled_times = np.array(ts, dtype=np.float64)
            own = self._rows(self.scorer.score(labeled_times, tops, ranked, judged))
            times = np.empty(len(keys))
            values = np.empty((len(keys), own.shape[1]))
            if at_fresh:
                times[at_fresh], values[at_fresh] = fresh_times, fresh_rows
            times[at_labeled], values[at_labeled] = labeled_times, own
        distinct = dict.fromkeys(keys)  # the series, in order of first appearance
        code = {key: at for at, key in enumerate(distinct)}
        index = np.fromiter(map(code.__getitem__, keys), dtype=np.int64, count=len(keys))
        series = list(distinct)
        width = len(self.columns)
        if entries:
            old = [k for k, entry in enumerate(entries) if entry.contribution is not None]
            if old:
                previous = np.stack([entries[k].contribution for k in old])  # type: ignore[misc]
                were = [at_labeled[k] for k in old]
                self.store.retract_many(
                    now, series, index[were], times[were], previous[:, :width], previous[:, width:]
                )
        self.store.add_many(now, series, index, times, values[:, :width], values[:, width:])
        for entry, row in zip(entries, own if entries else (), strict=True):
            entry.contribution = row

    def _score_fresh(
        self, tables: Sequence[QueryTable], fresh: Sequence[Rows]
    ) -> tuple[_F64, _F64]:
        """Score the rows opened in this batch without an entry, of every table in one pass
        (from their columns), and keep each row's contribution in its table; returns their
        times and rows end to end."""
        times: list[float] = []
        tops: list[bytes] = []
        ranked: list[bytes | None] | None = None
        judged: list[bytes | None] | None = None
        for table, rows in zip(tables, fresh, strict=True):
            if not len(rows):
                continue
            ts, top, graded, judgments = table.columns(rows)
            if graded is not None and ranked is None:
                ranked, judged = [None] * len(times), [None] * len(times)
            if ranked is not None:
                assert judged is not None
                ranked += [None] * len(rows) if graded is None else graded
                judged += [None] * len(rows) if judgments is None else judgments
            times += ts
            tops += top
        if not times:
            return np.empty(0), np.empty((0, 0))
        ts_all = np.array(times, dtype=np.float64)
        rows_all = self._rows(self.scorer.score(ts_all, tops, ranked, judged))
        start = 0
        for table, rows in zip(tables, fresh, strict=True):
            table.store(rows, rows_all[start : start + len(rows)])
            start += len(rows)
        return ts_all, rows_all

    def _rows(self, scored: ScoredQueries) -> _F64:
        """One row per query (see `RowLayout.rows`)."""
        return self.layout.rows(
            scored.ts, scored.plain, scored.ratio, scored.doc_age, scored.decayed
        )

    def _advance(self, now: float) -> list[QueryView]:
        if math.isfinite(now) and now >= self.next_prune:  # quiet label sets leave when empty
            pruned = self.store.prune(now)
            self.next_prune = now + _PRUNE_EVERY
            if pruned and self.sequential is not None:
                self.sequential.prune(set(self.store.series()))
        final: list[QueryView] = []
        rows: dict[tuple[int, tuple[str, ...]], list[_F64]] = {}
        queries: dict[tuple[int, tuple[str, ...]], tuple[list[float], list[str | None]]] = {}
        report, unlabeled = self.config.report_final, self.config.final_unlabeled
        traced = self._trace_field is not None
        for join in self.joins.values():
            final_rows = join.advance(now)
            table = join.table
            if report:  # read, for the caller
                final += [table.read(r) for r in final_rows if unlabeled or table.labeled(r)]
            labels, ranked, base = table.labels, table.ranked, table.base
            fields = table.traces if traced else None  # the trace field's values, if set
            if ranked is None:  # the labeled ones have an entry
                final_rows = list(filter(labels.__contains__, final_rows))
            else:  # or were graded by the scanner
                final_rows = [r for r in final_rows if ranked[r - base] is not None or r in labels]
            for row in final_rows:
                contribution = table.labeled_contribution(row)
                if contribution is not None:
                    key = (table.partition, table.labelsets[row - base])
                    rows.setdefault(key, []).append(contribution)
                    times, ids = queries.setdefault(key, ([], []))  # for the exemplars
                    times.append(table.ts[row - base])
                    trace_id = None if fields is None else fields[row - base]
                    ids.append(table.ids[row - base] if trace_id is None else trace_id)
        merged: dict[tuple[int, tuple[str, ...]], list[_F64]] = {}
        for (partition, labelset), contributions in rows.items():
            block = np.stack(contributions)[:, : self._final_columns]
            merged.setdefault((partition, labelset), []).append(block)
            if self.sequential is not None:  # in finalization order, per partition
                self.sequential.feed(self._state(partition).detectors, labelset, block)
        found: list[Found] = []  # for the exemplars
        for (partition, labelset), blocks in merged.items():  # one add per series and batch
            tally = self._state(partition).tally
            aggregate = tally.final.get(labelset)
            if aggregate is None:
                aggregate = tally.final[labelset] = Aggregate(
                    self.layout.plain, bins=self.config.bins
                )
            block = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
            aggregate.add(block)
            found.append(
                (tally.exemplars.setdefault(labelset, {}), block, *queries[(partition, labelset)])
            )
        capture(found, self._exemplar_columns, self.spec.edges())
        return final

    def finish(self) -> list[QueryView]:
        """Finalize every open query and drop waiting labels (the end of a replay); open
        traces close first, and their answers are counted."""
        final: list[QueryView] = []
        if self.traces is not None:
            closing = self._close_traces(None)
            if closing:
                final = self._apply_read(closing, BatchReport()).final
        return final + self._advance(math.inf)

    # -- partitions and state -----------------------------------------------------------------

    def _shares(self) -> Shares:
        """The holders that keep a share of each partition beside its `PartitionState`."""
        return Shares(self.store, self.sequential, self.sides, self._limits, self.traces)

    def _detectors(self) -> dict[int, Held]:
        """The sequential drift detectors of each held partition."""
        return {p: state.detectors for p, state in self.partitions.items()}

    def drop_partitions(self, partitions: set[int]) -> None:
        """Forget everything about revoked partitions, their counts too (another replica
        consumes them now, and exports their counts from their state)."""
        shares = self._shares()
        for partition in partitions:
            (self.partitions.pop(partition, None) or PartitionState(partition)).drop(shares)

    def hold_partitions(self, partitions: set[int]) -> None:
        """Partitions assigned to this engine: their counts are exported (at 0 until their
        first event or their adopted state)."""
        for partition in partitions:
            self._state(partition)

    def read_partitions(self) -> dict[int, PartitionRead]:
        """Each held partition's counters (`PartitionState.read`), in partition order: what
        the exporter reads of them."""
        return {p: self.partitions[p].read() for p in sorted(self.partitions)}

    @property
    def joins(self) -> dict[int, LabelJoin]:
        """The held partitions' joins (those that saw an event), by partition in the order
        held; read only."""
        return {p: s.join for p, s in self.partitions.items() if s.join is not None}

    def attach(self, name: str, side: SideState) -> None:
        """Keep ``side``'s per-partition state in this engine's partition states and
        snapshots, under ``name`` (e.g. the judge's queue and gold join)."""
        self.sides[name] = side
        side.bind(name, self.partitions)

    def join_counters(self) -> dict[str, int]:
        """The label joins' counters summed over held partitions."""
        return dict(sum_counters(join.counters.as_dict() for join in self.joins.values()))

    # the cumulative counts of the held partitions, summed (each partition's in its tally)

    def _tallies(self) -> list[PartitionTally]:
        return [state.tally for state in self.partitions.values()]

    @property
    def events(self) -> Counter[tuple[str, str]]:
        """(type, outcome) -> count over held partitions (a fresh counter)."""
        return sum_counters(t.events for t in self._tallies())

    @property
    def invalid(self) -> Counter[str]:
        """Invalid messages by reason over held partitions (a fresh counter)."""
        return sum_counters(t.invalid for t in self._tallies())

    @property
    def collapsed(self) -> Counter[str]:
        """Events with a label value past the cap, by key, over held partitions."""
        return sum_counters(t.collapsed for t in self._tallies())

    @property
    def last_event_time(self) -> dict[str, float]:
        """Event time of the newest event seen by type, over held partitions."""
        out: dict[str, float] = {}
        for tally in self._tallies():
            for kind, ts in tally.last_event_time.items():
                out[kind] = max(ts, out.get(kind, -math.inf))
        return out

    @property
    def final(self) -> dict[tuple[str, ...], Aggregate]:
        """Per label set: the final-query histograms of the held partitions, merged (read
        only: an aggregate of one partition only is that partition's own)."""
        merged: dict[tuple[str, ...], Aggregate] = {}
        for p in sorted(self.partitions):
            for labelset, aggregate in self.partitions[p].tally.final.items():
                found = merged.get(labelset)
                merged[labelset] = aggregate if found is None else found + aggregate
        return merged

    @property
    def exemplars(self) -> dict[tuple[str, ...], Exemplars]:
        """Per label set: the newest final query of each histogram bucket over the held
        partitions (`ragstream.pipeline.exemplars`; fresh maps)."""
        return merge_exemplars_of([self.partitions[p].tally for p in sorted(self.partitions)])

    def state_config(self) -> dict[str, Any]:
        """What a partition's state depends on besides the events: the window spec
        (windows, buckets, metric columns, bins), label keys, gain, threshold and clock
        mode. A partition's state moves only between engines where this is equal."""
        config = self.config
        return {  # lists, not tuples: equal to itself after a JSON round-trip
            "spec": self.spec.to_dict(),
            "label_keys": list(config.label_keys),
            "gain": config.gain,
            "relevance_threshold": config.relevance_threshold,
            "clock": config.clock,
        }

    def export_partitions(self, parts: Sequence[int] | set[int]) -> dict[int, dict[str, Any]]:
        """Each partition's record (`PartitionState.export`) with the version, the
        configuration it was kept with and the clock, for the replica that takes the
        partition over (`adopt_partition`) or a restart. Take it between batches: labels
        given from the side since the last batch are scored first, so that none is left
        behind."""
        self._rescore(self.clock.now())  # a no-op unless labels came from the side
        return self._records(parts)

    def _records(self, parts: Sequence[int] | set[int]) -> dict[int, dict[str, Any]]:
        """`export_partitions` without the scoring first."""
        config = self.state_config()
        clock_now = self.clock.snapshot()["now"]
        shares = self._shares()
        out: dict[int, dict[str, Any]] = {}
        for partition in sorted(parts):
            state = self.partitions.get(partition) or PartitionState(partition)
            record = state.export(shares)
            if partition not in self.partitions:
                record["tally"] = None
            out[partition] = {
                "version": VERSION,
                "partition": partition,
                "config": config,
                "clock_now": clock_now,
                **record,
            }
        return out

    def adopt_partition(self, state: Mapping[str, Any]) -> None:
        """Take over one partition exported by `export_partitions` (the engine's own state
        of that partition, if any, is replaced).

        The rings are keyed by absolute bucket index, so they line up with this engine's
        whatever its clock: buckets that have aged out of a window by this engine's
        position are left out, and the decay landmark is rebased. With the event clock,
        `t_now` moves up to the exporter's (it has seen those events). The join keeps its
        open queries but takes this engine's caps and TTLs for what comes next (see
        `PartitionState.adopt`). The exporter drops the partition's counts, so that each
        event is counted once over all replicas. Raises `PartitionConfigError` (a
        `ValueError`), before changing anything, when the state was kept with another
        configuration; a damaged state may raise after a partial import (drop the
        partition then)."""
        if state.get("version") != VERSION:
            raise ValueError(f"unsupported partition state version {state.get('version')!r}")
        theirs, ours = state.get("config") or {}, self.state_config()
        differs = [name for name in ours if theirs.get(name) != ours[name]]
        if differs:
            raise PartitionConfigError(differs)
        partition = int(state["partition"])
        if int(state["windows"]["partition"]) != partition:
            raise ValueError("the partition state's windows belong to another partition")
        self.drop_partitions({partition})
        adopted = PartitionState.adopt(partition, state, self._shares())
        self.partitions[partition] = adopted
        for labelset in PartitionState.labelsets(state):
            self.labelsets.admit(labelset)
        clock_now = state.get("clock_now")
        if self.config.clock == "event" and clock_now is not None:
            clock = self.clock.snapshot()
            if clock["now"] is None or float(clock_now) > clock["now"]:
                clock["now"] = float(clock_now)
                self.clock = Clock.restore(clock, wall=self.clock.wall)

    def snapshot(self) -> dict[str, Any]:
        """Everything the engine knows, JSON-friendly; take it between batches. What the
        partitions share (the clock, the label sets, the windows' upkeep, the windowed drift
        detectors, the detection counts, the sides' own counts) and each held partition's
        record as `export_partitions` writes it for the state topic."""
        windowed, sequential = self.windowed_drift, self.sequential
        return {
            "version": SNAPSHOT_VERSION,
            "clock": self.clock.snapshot(),
            "expired_retracts": self.store.expired_retracts,
            "labelsets": self.labelsets.snapshot(),
            "next_prune": self.next_prune if math.isfinite(self.next_prune) else None,
            "drift": {
                "detections": None if sequential is None else sequential.snapshot(),
                "windowed": {} if windowed is None else windowed.snapshot(),
            },
            "sides": {name: side.snapshot() for name, side in self.sides.items()},
            "partitions": {str(p): r for p, r in self._records(set(self.partitions)).items()},
        }

    @classmethod
    def restore(
        cls,
        config: EngineConfig,
        snapshot: Mapping[str, Any],
        *,
        wall: Callable[[], float] | None = None,
        sides: Mapping[str, SideState] | None = None,
    ) -> Engine:
        """An engine built from `config` that continues from `snapshot` (its wall clock is
        kept), with ``sides`` attached first (`attach`) so that they continue from it too.
        Raises `ValueError` for a snapshot of another version."""
        version = snapshot.get("version")
        if version != SNAPSHOT_VERSION:
            raise ValueError(
                f"the snapshot is of version {version!r}; this version of ragstream reads "
                f"version {SNAPSHOT_VERSION} only"
            )
        engine = cls(config, wall=wall)
        for name, side in (sides or {}).items():
            engine.attach(name, side)
        engine.clock = Clock.restore(snapshot["clock"], wall=engine.clock.wall)
        engine.store.expired_retracts = int(snapshot["expired_retracts"])
        for name, side in engine.sides.items():  # before the partitions requeue and count
            side.restore(snapshot["sides"].get(name))
        partitions = snapshot["partitions"]  # each adopted as from the state topic
        for p in sorted(partitions, key=int):
            engine.adopt_partition(partitions[p])
        engine.labelsets.restore_state(snapshot["labelsets"])  # as saved, whatever was admitted
        next_prune = snapshot["next_prune"]
        engine.next_prune = -math.inf if next_prune is None else float(next_prune)
        drift = snapshot["drift"]
        if engine.sequential is not None and drift["detections"] is not None:
            engine.sequential.restore(drift["detections"])
        if engine.windowed_drift is not None:
            engine.windowed_drift.restore(drift["windowed"])
        return engine

    # -- lookups from the side (judging) -------------------------------------------------------

    def find_query(self, query_id: str) -> QueryView | None:
        """The open query with this id, on whichever partition it lives; a read only
        (`LabelJoin.get`): the judge's lookups change no state."""
        join = self._join_of(query_id)
        return None if join is None else join.get(query_id)

    def label(
        self, query_id: str, doc_id: str, rel: float, *, ts: float, source: str = "judge"
    ) -> LabelOutcome | None:
        """Apply one label from the side (the judge's, by default) as if it were a
        feedback event from ``source``.

        It takes effect with the next batch, like any label; None when the query is not open.
        """
        join = self._join_of(query_id)
        if join is None:
            return None
        return join.label(query_id, doc_id, rel, ts=ts, t_now=self.clock.now(), source=source)

    def _join_of(self, query_id: str) -> LabelJoin | None:
        """The join of the partition where this query is open."""
        for join in self.joins.values():
            if join.holds(query_id):
                return join
        return None

    # -- reads -------------------------------------------------------------------------------

    @property
    def open_queries(self) -> int:
        return sum(join.open_count for join in self.joins.values())

    @property
    def pending_labels(self) -> int:
        return sum(join.pending_count for join in self.joins.values())

    @property
    def open_traces(self) -> int:
        return sum(len(s.traces.open) for s in self.partitions.values() if s.traces is not None)

    def now(self) -> float:
        return self.clock.now()

    def read_clock(self) -> Callable[[], float]:
        """What windows are read at from the side (scrapes, the judge): the engine's own
        clock with the event clock, the wall clock otherwise."""
        return self.now if self.config.clock == "event" else time.time
