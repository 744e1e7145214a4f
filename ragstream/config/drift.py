"""The `drift` section of the agent's configuration (docs/drift.md, "In the agent").

The detectors' defaults are here and nowhere else (the classes of `ragstream.drift` take
every argument). Each detector registered in `ragstream.drift.registry` has a section of
its name whose `params()` gives its typed parameters; `Settings` checks the section against
the configured windows and cutoffs.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from ragstream.config._duration import Duration
from ragstream.config._section import Section
from ragstream.drift import DETECTORS, SEQUENTIAL, WINDOWED, DetectorParams, Direction
from ragstream.metrics import REGISTRY, parse_metric

__all__ = [
    "AdwinSettings",
    "DriftSettings",
    "PageHinkleySettings",
    "PsiSettings",
    "ZScoreSettings",
]

Way = Literal["down", "up", "both"]


class _Detector(Section):
    """A detector's section: `enabled`, and its parameters with their defaults."""

    enabled: bool = True

    detector: ClassVar[str]
    """Its name in `ragstream.drift.registry`, which gives its parameters type."""

    def params(self) -> DetectorParams:
        """The detector's typed parameters (everything but `enabled`)."""
        values: dict[str, Any] = self.model_dump(exclude={"enabled"})
        if "direction" in values:
            values["direction"] = Direction(values["direction"])
        kind = WINDOWED.get(self.detector) or SEQUENTIAL[self.detector]
        return kind.params(**values)


class ZScoreSettings(_Detector):
    """Welch z-score of the short window against the rest of the long one."""

    detector: ClassVar[str] = "zscore"

    threshold: float = Field(5.0, gt=0, description="alarm at |z| >= this, in the direction")
    min_count: int = Field(200, ge=2, description="values in the short window for a signal")
    min_reference: int = Field(1000, ge=2, description="values in the reference for a signal")
    direction: Way = "down"
    release: float = Field(0.8, gt=0, le=1, description="the alarm ends under release x threshold")


class PsiSettings(_Detector):
    """Population stability index of the two windows' histograms."""

    detector: ClassVar[str] = "psi"

    threshold: float = Field(0.1, gt=0)
    min_count: int = Field(1000, ge=1)
    min_reference: int = Field(1000, ge=1)
    eps: float = Field(1e-4, gt=0, lt=1, description="share standing in for an empty bin")
    release: float = Field(0.8, gt=0, le=1)


class PageHinkleySettings(_Detector):
    """Page-Hinkley on the final per-query values, in standard deviations."""

    detector: ClassVar[str] = "page_hinkley"

    delta: float = Field(0.08, ge=0, description="slack, in standard deviations")
    threshold: float = Field(110.0, gt=0)
    min_instances: int = Field(1000, ge=2, description="values that build the reference")
    direction: Way = "down"
    hold: int = Field(1000, ge=1, description="values the alarm stays raised after a detection")


class AdwinSettings(_Detector):
    """ADWIN on the final per-query values, its window bounded."""

    detector: ClassVar[str] = "adwin"

    delta: float = Field(1e-5, gt=0, lt=1)
    clock: int = Field(32, ge=1, description="values between checks")
    max_buckets: int = Field(5, ge=2)
    min_window_length: int = Field(5, ge=1)
    grace_period: int = Field(10, ge=0)
    max_window: int = Field(1_000_000, ge=10, description="values kept at most")
    direction: Way = "down"
    hold: int = Field(1000, ge=1)


class DriftSettings(Section):
    """Drift detection: windowed detectors on (short, long) window pairs at every scrape,
    sequential ones on the final per-query values."""

    enabled: bool = True
    metrics: list[str] = Field(
        default_factory=lambda: ["ndcg@10", "rr"], description="plain retrieval metrics watched"
    )
    window_pairs: list[tuple[Duration, Duration]] = Field(
        default_factory=lambda: [(300.0, 3600.0), (3600.0, 86400.0)],
        description="(short, long) windows compared; by default 5m/1h and 1h/24h, "
        "those of them whose windows are configured",
    )
    settle: Duration = Field(
        120.0, ge=0, description="the windows' newest part left out, for late labels to arrive"
    )
    zscore: ZScoreSettings = Field(default_factory=ZScoreSettings)
    psi: PsiSettings = Field(default_factory=PsiSettings)
    page_hinkley: PageHinkleySettings = Field(default_factory=PageHinkleySettings)
    adwin: AdwinSettings = Field(default_factory=AdwinSettings)

    def detectors(self) -> tuple[tuple[str, DetectorParams], ...]:
        """The registered detectors that are on, with their typed parameters (each from
        the section of its name)."""
        sections: list[tuple[str, _Detector]] = [(name, getattr(self, name)) for name in DETECTORS]
        return tuple((name, section.params()) for name, section in sections if section.enabled)

    def fitted(self, sizes: list[float]) -> DriftSettings:
        """These settings for the configured window sizes: pairs left at their default
        keep those whose windows are configured (the default windows keep both)."""
        if "window_pairs" in self.model_fields_set:
            return self
        fitting = [p for p in self.window_pairs if p[0] in sizes and p[1] in sizes]
        if fitting == self.window_pairs:
            return self
        return self.model_copy(update={"window_pairs": fitting})

    @field_validator("metrics")
    @classmethod
    def _plain_metrics(cls, metrics: list[str]) -> list[str]:
        names = []
        for text in metrics:
            spec = parse_metric(text)  # a ValueError names what is accepted
            if spec.decayed or spec.family not in {f.name for f in REGISTRY.streamed()}:
                raise ValueError(f"{text!r}: drift watches plain streamed metrics, e.g. ndcg@10")
            if spec.name in names:
                raise ValueError(f"{spec.name} is listed twice")
            names.append(spec.name)
        return names

    @field_validator("window_pairs")
    @classmethod
    def _short_then_long(cls, pairs: list[tuple[float, float]]) -> list[tuple[float, float]]:
        for short, long in pairs:
            if not short < long:
                raise ValueError("each pair is (short, long) with short < long")
        return pairs
