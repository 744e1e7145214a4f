"""What the engine's drift detection is built from: plain arguments (the wiring fills them
from the `drift` settings), and their resolution against the row layout and windows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ragstream.drift import SEQUENTIAL, WINDOWED, DetectorParams
from ragstream.durations import format_duration
from ragstream.pipeline.row_layout import RowLayout

__all__ = [
    "DriftConfig",
    "ResolvedDrift",
    "WindowPair",
]

Detectors = tuple[tuple[str, DetectorParams], ...]
"""The detectors that are on: (registered name, its settings), in registration order."""


@dataclass(frozen=True, slots=True)
class DriftConfig:
    """Drift detection of one engine (see docs/drift.md, "In the agent")."""

    metrics: tuple[str, ...]
    """Plain metric columns watched (canonical names, e.g. `ndcg@10`, `rr`)."""
    pairs: tuple[tuple[float, float], ...]
    """(short, long) window lengths, seconds, for the windowed detectors."""
    settle: float
    """Seconds: the windowed detectors read each window without its buckets newer than
    this, whose late labels have not all arrived yet."""
    detectors: Detectors
    """The detectors that are on, by their name in `ragstream.drift.registry`, each with
    its registered parameters type; a detector not listed is off."""

    def __post_init__(self) -> None:
        for name, params in self.detectors:
            kind = WINDOWED.get(name) or SEQUENTIAL.get(name)
            if kind is None:
                raise ValueError(f"no drift detector is registered as {name!r}")
            if not isinstance(params, kind.params):
                raise TypeError(f"drift detector {name} takes {kind.params.__name__}")

    def params(self, name: str) -> DetectorParams | None:
        """The settings of one detector, None when it is off."""
        return dict(self.detectors).get(name)

    def windowed(self) -> Detectors:
        """The windowed detectors that are on, in registration order."""
        return tuple((name, p) for name in WINDOWED if (p := self.params(name)) is not None)

    def sequential(self) -> Detectors:
        """The sequential detectors that are on, in registration order."""
        return tuple((name, p) for name in SEQUENTIAL if (p := self.params(name)) is not None)

    def sequential_state_config(self) -> dict[str, Any]:
        """What the sequential detectors' state depends on (lists and dicts: equal to
        itself after a JSON round trip): a partition's detectors are adopted only by an
        engine where this is equal."""
        return {
            "metrics": list(self.metrics),
            "detectors": {name: _plain(p) for name, p in self.sequential()},
        }


def _plain(params: DetectorParams) -> dict[str, Any]:
    """A detector's settings as JSON values, by name (an enum as its value)."""
    return {k: v.value if hasattr(v, "value") else v for k, v in sorted(asdict(params).items())}


@dataclass(frozen=True, slots=True)
class WindowPair:
    """One (short, long) pair, by position in the engine's windows."""

    short: int
    long: int
    short_name: str
    long_name: str


@dataclass(frozen=True, slots=True)
class ResolvedDrift:
    """A `DriftConfig` checked against the row layout and the windows."""

    config: DriftConfig
    metrics: tuple[str, ...]
    columns: tuple[int, ...]
    """Window-column index of each metric (the same index in the final rows: the plain
    metrics come first)."""
    hist_metrics: tuple[str, ...]
    """The metrics that keep a window histogram (what PSI compares)."""
    hist_columns: tuple[int, ...]
    """Their index among the histogrammed columns."""
    pairs: tuple[WindowPair, ...]

    @classmethod
    def of(
        cls, config: DriftConfig, layout: RowLayout, windows: tuple[float, ...]
    ) -> ResolvedDrift:
        """Raises `ValueError` naming what does not fit: a metric that is not a plain
        column of the layout, a pair whose windows are not configured or not short < long,
        a settle time not below every short window."""
        if len(set(config.metrics)) != len(config.metrics):
            raise ValueError(f"drift metrics are repeated: {list(config.metrics)}")
        unknown = [m for m in config.metrics if m not in layout.plain]
        if unknown:
            raise ValueError(
                f"drift metrics {unknown} are not among the agent's metrics "
                f"({', '.join(layout.plain)})"
            )
        columns = tuple(layout.index(m) for m in config.metrics)
        hist = [m for m in config.metrics if m in layout.hist_columns]
        pairs = []
        for short, long in config.pairs:
            name = f"{format_duration(short)}/{format_duration(long)}"
            missing = [format_duration(w) for w in (short, long) if w not in windows]
            if missing:
                raise ValueError(f"drift window pair {name}: {', '.join(missing)} not a window")
            if not short < long:
                raise ValueError(f"drift window pair {name}: the short window must be shorter")
            if not 0 <= config.settle < short:
                raise ValueError(
                    f"drift.settle ({format_duration(config.settle)}) must be under the "
                    f"short window of {name}"
                )
            pairs.append(
                WindowPair(
                    windows.index(short),
                    windows.index(long),
                    format_duration(short),
                    format_duration(long),
                )
            )
        return cls(
            config,
            tuple(config.metrics),
            columns,
            tuple(hist),
            tuple(layout.hist_columns.index(m) for m in hist),
            tuple(pairs),
        )
