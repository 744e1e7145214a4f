"""One input partition's state in one place: `PartitionState`.

Everything the agent knows about one Kafka partition moves with it between replicas and
survives a restart: its open queries and waiting labels (the join), its cumulative counts
(the tally), its drift detectors, its open traces and the judge's share. A `PartitionState`
holds the join, the tally, the sequential drift detectors, the open traces and the sides'
shares (the judge's `JudgePartition`) itself, and reaches what engine-wide holders keep per
partition (the shared window stores) through `Shares`; its `export`, `adopt` and `drop` are
the one place where a partition's record is written, read or forgotten, and `read` what the
exporter sees of it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragstream.join import LabelJoin
from ragstream.pipeline.partition_tally import PartitionTally
from ragstream.pipeline.sequential_drift import Held, SequentialDrift
from ragstream.traces import TraceAssembler, TraceReader
from ragstream.windows import WindowStore

__all__ = [
    "JoinLimits",
    "PartitionConfigError",
    "PartitionRead",
    "PartitionState",
    "Shares",
    "SidePartition",
    "SideState",
]

VERSION = 1
"""Version of a partition's record (`Engine.export_partitions`)."""


class PartitionConfigError(ValueError):
    """A partition's state was kept with another configuration (`Engine.state_config`)."""

    def __init__(self, differs: Sequence[str]) -> None:
        super().__init__("the partition state was kept with another " + ", ".join(differs))
        self.differs = tuple(differs)
        """The names of the settings that differ."""


class SidePartition(Protocol):
    """A side's share of one partition (e.g. the judge's `JudgePartition`), held in the
    partition's `PartitionState.sides`; called between batches."""

    def export(self) -> Any:
        """Its state, JSON-friendly, for the partition's next owner (or a restart)."""
        ...

    def drop(self) -> None:
        """Forget what the side keeps of the partition beyond this share (its windows)."""
        ...


class SideState(Protocol):
    """A holder of per-partition state kept beside the engine's (the judge), attached with
    `Engine.attach`: its shares live in the partition states of the map it is bound to,
    and are saved and moved with the partition's own. Every method takes JSON-friendly data
    and is called between batches."""

    def bind(self, name: str, partitions: dict[int, PartitionState]) -> None:
        """Keep its shares in ``partitions`` (the engine's map), under ``name``."""
        ...

    def new_partition(self, partition: int) -> SidePartition:
        """An empty share of the partition (not held: exported or dropped as is)."""
        ...

    def adopt_partition(self, partition: int, data: Any) -> SidePartition:
        """The partition's share taken over from `SidePartition.export` output (None:
        start it empty)."""
        ...

    def snapshot(self) -> Any:
        """What it keeps beside its shares (the judge's counts), for a whole-engine
        snapshot."""
        ...

    def restore(self, data: Any) -> None:
        """Continue from `snapshot` output (None: from nothing), before its shares are
        adopted."""
        ...


@dataclass(frozen=True, slots=True)
class JoinLimits:
    """The TTLs and caps a partition's join is built with (this engine's, also for an
    adopted join: they govern what comes next)."""

    label_ttl: float
    pending_ttl: float
    max_open: int
    max_pending: int

    def new_join(self, partition: int) -> LabelJoin:
        return LabelJoin(partition=partition, **self._settings())

    def restore_join(self, data: Mapping[str, Any], partition: int) -> LabelJoin:
        """A partition's join from `LabelJoin.snapshot` output, with these TTLs and caps."""
        return LabelJoin.restore({**data, **self._settings()}, partition)

    def _settings(self) -> dict[str, Any]:
        """The join's arguments (it remembers as many final query ids as it holds open)."""
        return {**dataclasses.asdict(self), "recent_final": self.max_open}


@dataclass(frozen=True, slots=True)
class Shares:
    """What a partition's record is written and read with besides its own state: the
    engine-wide holders that keep a share of each partition (the shared window store and
    the sides, such as the judge), the sequential drift detectors' settings, and how the
    partition's join and open traces are made."""

    store: WindowStore
    sequential: SequentialDrift | None
    sides: Mapping[str, SideState]
    limits: JoinLimits
    traces: TraceReader | None
    """The OTLP topics' reader (None: no topic carries traces)."""


@dataclass(frozen=True, slots=True)
class PartitionRead:
    """What is exported of one held partition: its counters (a read changes nothing)."""

    tally: PartitionTally
    join: Mapping[str, int]
    """Its label join's counters (empty before its first event)."""
    spans: Mapping[tuple[str, str], int]
    """(kind, outcome) -> spans of its trace records (see `TraceAssembler`)."""
    traces: Mapping[str, int]
    """Its closed traces by outcome."""
    skipped: Mapping[str, int]
    """Its trace records skipped, by reason."""


_TRACE_ORDER = itertools.count()


@dataclass(slots=True)
class PartitionState:
    """One held partition: its join (None before its first event), its tally, its
    sequential drift detectors, its open traces and its sides' shares; `export`, `adopt`,
    `drop` and `read` are what is done with it as a whole."""

    partition: int
    tally: PartitionTally = field(default_factory=PartitionTally)
    """Its cumulative counts and final-query histograms."""
    join: LabelJoin | None = None
    """Its open queries and waiting labels."""
    detectors: Held = field(default_factory=dict)
    """Its sequential drift detectors (`ragstream.pipeline.sequential_drift`), by label set."""
    traces: TraceAssembler | None = None
    """Its open traces and span counters (None before its first trace record)."""
    sides: dict[str, SidePartition] = field(default_factory=dict)
    """The attached sides' shares of it, by side name (each made by its side)."""
    trace_order: int = 0
    """When its traces began (`begin_traces`): the partitions' traces close in this order,
    the order their first trace record came (or they were adopted or restored), which the
    event clock sees."""

    def begin_traces(self, assembler: TraceAssembler) -> TraceAssembler:
        """Hold ``assembler`` as its open traces, closed after those of the partitions
        whose traces began before."""
        self.traces, self.trace_order = assembler, next(_TRACE_ORDER)
        return assembler

    def export(self, shares: Shares) -> dict[str, Any]:
        """The partition's record without its header (`Engine.export_partitions` adds the
        version, the configuration and the clock): windows, open queries, counts,
        detectors, open traces and side states."""
        p = self.partition
        return {
            "windows": shares.store.export_partition(p),
            "join": None if self.join is None else self.join.snapshot(),
            "traces": None if self.traces is None else self.traces.snapshot(),
            "drift": None
            if shares.sequential is None
            else shares.sequential.export(self.detectors),
            "tally": self.tally.snapshot(),
            "sides": {name: self._side(name, side).export() for name, side in shares.sides.items()},
        }

    @classmethod
    def adopt(cls, partition: int, state: Mapping[str, Any], shares: Shares) -> PartitionState:
        """The partition taken over from `export` output, its shares put in the holders
        (which hold none of it: `drop` first). The join keeps its open queries (with
        their current contributions, so later labels replace them) but takes the
        engine's limits for what comes next; the counts come along (absent from older
        records: they start at 0 then)."""
        windows = state["windows"]
        shares.store.import_partition(dict(windows))
        data = state.get("join")
        join = None if data is None else shares.limits.restore_join(data, partition)
        detectors: Held = {}
        if shares.sequential is not None:  # other drift settings: its detectors start afresh
            detectors = shares.sequential.adopt(state.get("drift"))
        adopted = cls(partition, PartitionTally.restore(state.get("tally")), join, detectors)
        traces = state.get("traces")  # open traces (absent from older records)
        if shares.traces is not None and traces is not None:
            adopted.begin_traces(shares.traces.new_assembler()).restore(traces)
        sides = state.get("sides") or {}
        for name, side in shares.sides.items():  # absent: that side starts afresh
            adopted.sides[name] = side.adopt_partition(partition, sides.get(name))
        return adopted

    def drop(self, shares: Shares) -> None:
        """Forget the partition's share in every holder (its own state goes with it)."""
        shares.store.drop_partition(self.partition)
        for name, side in shares.sides.items():
            self._side(name, side).drop()

    def _side(self, name: str, side: SideState) -> SidePartition:
        """Its share of ``side`` (an empty one, not held, when the side holds none)."""
        share = self.sides.get(name)
        return side.new_partition(self.partition) if share is None else share

    def read(self) -> PartitionRead:
        """Its counters, for the exporter."""
        traces = self.traces
        return PartitionRead(
            self.tally,
            {} if self.join is None else self.join.counters.as_dict(),
            {} if traces is None else traces.spans,
            {} if traces is None else traces.traces,
            {} if traces is None else traces.skipped,
        )

    @staticmethod
    def labelsets(state: Mapping[str, Any]) -> list[Sequence[str]]:
        """The label sets an exported record holds (its open queries', then its series'):
        the adopter admits them to its label-set cap, so that values admitted from then on
        count them (an adopted `other` means the exporter had reached it: so has this
        replica then)."""
        join = state.get("join")
        out: list[Sequence[str]] = [] if join is None else [q["labelset"] for q in join["open"]]
        return out + [item["labels"] for item in state["windows"]["series"]]
