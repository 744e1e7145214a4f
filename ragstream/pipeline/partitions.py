"""The engine's state as JSON-friendly records: one partition's share, to move it between
replicas (`export_partitions` / `adopt_partition`), and everything (`snapshot` / `restore`).

Functions of the engine's parts (`EngineParts`, which `Engine` has), so that what a record
holds is stated in one place and the engine keeps only the batch path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ragstream.join import LabelJoin
from ragstream.pipeline.labelsets import LabelSetMapper
from ragstream.pipeline.sequential import SequentialDrift
from ragstream.pipeline.tally import PartitionTally
from ragstream.pipeline.windowed_drift import WindowedDrift
from ragstream.traces import TraceReader
from ragstream.windows import Clock, WindowSpec, WindowStore

__all__ = [
    "EngineParts",
    "PartitionConfigError",
    "SideState",
    "adopt_partition",
    "export_partitions",
    "restore",
    "snapshot",
    "state_config",
]

VERSION = 1


class PartitionConfigError(ValueError):
    """A partition's state was kept with another configuration (`state_config`)."""

    def __init__(self, differs: Sequence[str]) -> None:
        super().__init__("the partition state was kept with another " + ", ".join(differs))
        self.differs = tuple(differs)
        """The names of the settings that differ."""


class _Config(Protocol):
    @property
    def label_keys(self) -> tuple[str, ...]: ...
    @property
    def gain(self) -> str: ...
    @property
    def relevance_threshold(self) -> float: ...
    @property
    def clock(self) -> str: ...
    @property
    def label_ttl(self) -> float: ...
    @property
    def pending_ttl(self) -> float: ...
    @property
    def max_open(self) -> int: ...
    @property
    def max_pending(self) -> int: ...


class SideState(Protocol):
    """Per-partition state kept beside the engine (the judge's windows and queue), saved
    and moved with the partition's own (`Engine.attach`). Every method takes JSON-friendly
    data and is called between batches."""

    def export_partition(self, partition: int) -> Any:
        """The partition's state, for its next owner (or a restart)."""
        ...

    def adopt_partition(self, partition: int, data: Any) -> None:
        """Take over the partition's state (None: start it empty)."""
        ...

    def drop_partitions(self, partitions: set[int]) -> None: ...

    def snapshot(self) -> Any: ...

    def restore(self, data: Any) -> None:
        """Continue from `snapshot` output (None: from nothing)."""
        ...


class EngineParts(Protocol):
    """The parts of an engine that its state records hold."""

    @property
    def config(self) -> _Config: ...
    @property
    def spec(self) -> WindowSpec: ...

    clock: Clock
    store: WindowStore
    joins: dict[int, LabelJoin]
    labelsets: LabelSetMapper
    tallies: dict[int, PartitionTally]
    sides: dict[str, SideState]
    next_prune: float
    traces: TraceReader | None
    sequential: SequentialDrift | None
    windowed_drift: WindowedDrift | None

    def drop_partitions(self, partitions: set[int]) -> None: ...


def state_config(engine: EngineParts) -> dict[str, Any]:
    """What a partition's state depends on besides the events: the window spec (windows,
    buckets, metric columns, bins), label keys, gain, threshold and clock mode. A
    partition's state moves only between engines where this is equal."""
    c = engine.config
    return {  # lists, not tuples: equal to itself after a JSON round-trip
        "spec": engine.spec.to_dict(),
        "label_keys": list(c.label_keys),
        "gain": c.gain,
        "relevance_threshold": c.relevance_threshold,
        "clock": c.clock,
    }


def export_partitions(
    engine: EngineParts, partitions: Sequence[int] | set[int]
) -> dict[int, dict[str, Any]]:
    """Each partition's windows, open queries, counts, detectors and side states (the
    judge's), for the replica that takes it over or a restart."""
    config = state_config(engine)
    clock_now = engine.clock.snapshot()["now"]
    out: dict[int, dict[str, Any]] = {}
    for partition in sorted(partitions):
        join = engine.joins.get(partition)
        tally = engine.tallies.get(partition)
        out[partition] = {
            "version": VERSION,
            "partition": partition,
            "config": config,
            "clock_now": clock_now,
            "windows": engine.store.export_partition(partition),
            "join": None if join is None else join.snapshot(),
            "traces": None if engine.traces is None else engine.traces.export(partition),
            "drift": None if engine.sequential is None else engine.sequential.export(partition),
            "tally": None if tally is None else tally.snapshot(),
            "sides": {
                name: side.export_partition(partition) for name, side in engine.sides.items()
            },
        }
    return out


def adopt_partition(engine: EngineParts, state: Mapping[str, Any]) -> None:
    """Take over one partition exported by `export_partitions` (the engine's own state of
    that partition, if any, is replaced).

    The rings are keyed by absolute bucket index, so they line up with this engine's
    whatever its clock: buckets that have aged out of a window by this engine's position
    are left out, and the decay landmark is rebased. With the event clock, `t_now` moves up
    to the exporter's (it has seen those events). The join keeps its open queries (with
    their current contributions, so later labels replace them) but takes this engine's caps
    and TTLs for what comes next. The partition's counts (its tally, the join's and the
    open traces' counters) come along: the exporter drops them, so that each event is
    counted once over all replicas. Raises `PartitionConfigError` (a `ValueError`), before changing
    anything, when the state was kept with another configuration; a damaged state may
    raise after a partial import (drop the partition then).
    """
    if state.get("version") != VERSION:
        raise ValueError(f"unsupported partition state version {state.get('version')!r}")
    theirs, ours = state.get("config") or {}, state_config(engine)
    differs = [name for name in ours if theirs.get(name) != ours[name]]
    if differs:
        raise PartitionConfigError(differs)
    partition = int(state["partition"])
    windows = dict(state["windows"])
    if int(windows["partition"]) != partition:
        raise ValueError("the partition state's windows belong to another partition")
    engine.drop_partitions({partition})
    engine.store.import_partition(windows)
    _adopt_join(engine, partition, state.get("join"))
    if engine.traces is not None:  # open traces (absent from older records)
        engine.traces.adopt(partition, state.get("traces"))
    if engine.sequential is not None:  # other drift settings: its detectors start afresh
        engine.sequential.adopt(partition, state.get("drift"))
    # the counts (absent from older records: they start at 0 then)
    engine.tallies[partition] = PartitionTally.restore(state.get("tally"))
    sides = state.get("sides") or {}
    for name, side in engine.sides.items():  # absent: that side starts afresh
        side.adopt_partition(partition, sides.get(name))
    for item in windows["series"]:  # see _adopt_join
        engine.labelsets.admit(item["labels"])
    clock_now = state.get("clock_now")
    if engine.config.clock == "event" and clock_now is not None:
        clock = engine.clock.snapshot()
        if clock["now"] is None or float(clock_now) > clock["now"]:
            clock["now"] = float(clock_now)
            engine.clock = Clock.restore(clock, wall=engine.clock.wall)


def _adopt_join(engine: EngineParts, partition: int, data: Mapping[str, Any] | None) -> None:
    if data is None:
        return
    c = engine.config
    join = LabelJoin.restore(
        {
            **data,
            "label_ttl": c.label_ttl,
            "pending_ttl": c.pending_ttl,
            "max_open": c.max_open,
            "max_pending": c.max_pending,
            "recent_final": c.max_open,
        }
    )
    engine.joins[partition] = join
    # Values admitted from now on count the adopted ones against the cap (an adopted
    # `other` means the exporter had reached it: so has this replica then).
    for query in data["open"]:
        engine.labelsets.admit(query["labelset"])


def snapshot(engine: EngineParts) -> dict[str, Any]:
    """Everything the engine knows, JSON-friendly; take it between batches."""
    return {
        "version": VERSION,
        "clock": engine.clock.snapshot(),
        "store": engine.store.snapshot(),
        "joins": {str(p): j.snapshot() for p, j in sorted(engine.joins.items())},
        "labelsets": engine.labelsets.snapshot(),
        "tallies": {str(p): t.snapshot() for p, t in sorted(engine.tallies.items())},
        "next_prune": engine.next_prune if math.isfinite(engine.next_prune) else None,
        "traces": None if engine.traces is None else engine.traces.snapshot(),
        "drift": _drift_snapshot(engine),
        "sides": {name: side.snapshot() for name, side in engine.sides.items()},
    }


def _drift_snapshot(engine: EngineParts) -> dict[str, Any]:
    windowed = engine.windowed_drift
    return {
        "sequential": None if engine.sequential is None else engine.sequential.snapshot(),
        "windowed": {} if windowed is None else windowed.snapshot(),
    }


def _drift_restore(engine: EngineParts, data: Mapping[str, Any] | None) -> None:
    """The detectors of a snapshot, where this engine runs the same ones (others start
    afresh); absent from older snapshots."""
    if data is None:
        return
    if engine.sequential is not None and data.get("sequential") is not None:
        engine.sequential.restore(data["sequential"])
    if engine.windowed_drift is not None:
        engine.windowed_drift.restore(data.get("windowed") or {})


def restore(engine: EngineParts, data: Mapping[str, Any]) -> None:
    """Make a new engine continue from `snapshot` output (its wall clock is kept)."""
    if "tallies" not in data:
        raise ValueError("the snapshot was taken by an older version (counts not per partition)")
    engine.clock = Clock.restore(data["clock"], wall=engine.clock.wall)
    store = WindowStore.restore(data["store"])
    if store.spec != engine.spec:
        raise ValueError("the snapshot was taken with other windows or metrics")
    engine.store = store
    engine.joins = {int(p): LabelJoin.restore(j) for p, j in data["joins"].items()}
    engine.labelsets.restore_state(data["labelsets"])
    engine.tallies = {int(p): PartitionTally.restore(t) for p, t in data["tallies"].items()}
    next_prune = data.get("next_prune")  # absent from older snapshots: at the next batch
    engine.next_prune = -math.inf if next_prune is None else float(next_prune)
    sides = data.get("sides") or {}
    for name, side in engine.sides.items():
        side.restore(sides.get(name))
    if engine.traces is not None:  # open traces (absent from older snapshots)
        engine.traces.restore(data.get("traces"))
    _drift_restore(engine, data.get("drift"))
