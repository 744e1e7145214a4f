"""What the engine's drift detection is built from: plain arguments (the wiring fills them
from the `drift` settings), and their resolution against the row layout and windows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragstream.durations import format_duration
from ragstream.pipeline.layout import RowLayout

__all__ = [
    "SEQUENTIAL_KINDS",
    "DriftConfig",
    "Params",
    "ResolvedDrift",
    "WindowPair",
]

Params = tuple[tuple[str, Any], ...]
"""A detector's keyword arguments (e.g. `(("threshold", 5.0),)`; empty: its defaults)."""

SEQUENTIAL_KINDS = ("page_hinkley", "adwin")


@dataclass(frozen=True, slots=True)
class DriftConfig:
    """Drift detection of one engine (see docs/drift.md, "In the agent").

    A detector whose parameters are None is off; `()` runs it at its defaults.
    """

    metrics: tuple[str, ...] = ("ndcg@10", "rr")
    """Plain metric columns watched (canonical names, e.g. `ndcg@10`, `rr`)."""
    pairs: tuple[tuple[float, float], ...] = ((300.0, 3600.0), (3600.0, 86400.0))
    """(short, long) window lengths, seconds, for the windowed detectors."""
    settle: float = 120.0
    """Seconds: the windowed detectors read each window without its buckets newer than
    this, whose late labels have not all arrived yet."""
    zscore: Params | None = ()
    psi: Params | None = ()
    page_hinkley: Params | None = ()
    adwin: Params | None = ()

    def params(self, kind: str) -> dict[str, Any] | None:
        """The keyword arguments of one detector kind, None when it is off."""
        found: Params | None = getattr(self, kind)
        return None if found is None else dict(found)

    def sequential(self) -> tuple[tuple[str, dict[str, Any]], ...]:
        """The sequential detectors that are on, with their arguments."""
        return tuple((kind, p) for kind in SEQUENTIAL_KINDS if (p := self.params(kind)) is not None)

    def sequential_state_config(self) -> dict[str, Any]:
        """What the sequential detectors' state depends on (lists and dicts: equal to
        itself after a JSON round trip): a partition's detectors are adopted only by an
        engine where this is equal."""
        return {
            "metrics": list(self.metrics),
            "detectors": {kind: dict(sorted(p.items())) for kind, p in self.sequential()},
        }


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
