"""The drift detectors by name: each one's typed settings, how it is built and restored,
and what it reads. The engine (`ragstream.pipeline`), the settings (`ragstream.config`)
and the state topic find the detectors here, so that a new detector is its module and one
registration (docs/architecture.md, "Recipes").

A **sequential** detector watches the stream of final per-query values: it has
``update(values)`` (numbers in order; returns the positions of its detections), ``score``
(1 is the alarm level), ``alarm``, ``detections`` and ``snapshot()`` / ``restore()``. A
**windowed** one compares a short window with a long one at each evaluation, as a bank of
one detector per label set and cell (``ZScoreBank``): ``update(keys, short, long)`` with
the windows' moments (count, sum, sum of squares) or their histograms, as ``reads`` says.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal, Protocol

import numpy as np
import numpy.typing as npt

from ragstream.drift.adwin import Adwin
from ragstream.drift.bank import PsiBank, ZScoreBank
from ragstream.drift.page_hinkley import PageHinkley

__all__ = [
    "DETECTORS",
    "SEQUENTIAL",
    "WINDOWED",
    "DetectorParams",
    "SequentialDetector",
    "SequentialKind",
    "WindowedBank",
    "WindowedKind",
]


class DetectorParams(Protocol):
    """A detector's settings: a frozen dataclass of its constructor's arguments."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


class SequentialDetector(Protocol):
    """What the engine asks of a sequential detector."""

    @property
    def score(self) -> float: ...
    @property
    def alarm(self) -> bool: ...
    @property
    def detections(self) -> int: ...
    def update(self, values: npt.ArrayLike) -> npt.NDArray[np.int64]: ...
    def snapshot(self) -> dict[str, Any]: ...


class WindowedBank(Protocol):
    """What the engine asks of a bank of windowed detectors."""

    keys: list[Hashable]
    score: npt.NDArray[np.float64]
    alarm: npt.NDArray[np.bool_]
    detections: npt.NDArray[np.int64]

    def update(self, keys: Sequence[Hashable], short: Any, long: Any) -> npt.NDArray[np.bool_]: ...
    def config(self) -> dict[str, Any]: ...
    def snapshot(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class SequentialKind:
    """A registered sequential detector: its class, whose ``params`` dataclass holds the
    constructor's arguments."""

    detector: type[PageHinkley] | type[Adwin]

    @property
    def params(self) -> type[DetectorParams]:
        return self.detector.params

    def build(self, params: DetectorParams) -> SequentialDetector:
        return self.detector(**asdict(params))

    def restore(self, snapshot: dict[str, Any]) -> SequentialDetector:
        return self.detector.restore(snapshot)


@dataclass(frozen=True, slots=True)
class WindowedKind:
    """A registered windowed detector, evaluated as a bank over ``cells``."""

    bank: type[ZScoreBank] | type[PsiBank]
    reads: Literal["moments", "histograms"]
    """The windows' moments of each metric, or the histograms of the metrics keeping one."""

    @property
    def params(self) -> type[DetectorParams]:
        return self.bank.detector.params

    def build(self, cells: tuple[int, ...], params: DetectorParams) -> WindowedBank:
        return self.bank(cells, params)  # type: ignore[arg-type]

    def restore(self, snapshot: dict[str, Any]) -> WindowedBank:
        return self.bank.restore(snapshot)


WINDOWED: Mapping[str, WindowedKind] = {
    "zscore": WindowedKind(ZScoreBank, "moments"),
    "psi": WindowedKind(PsiBank, "histograms"),
}
SEQUENTIAL: Mapping[str, SequentialKind] = {
    "page_hinkley": SequentialKind(PageHinkley),
    "adwin": SequentialKind(Adwin),
}
DETECTORS: tuple[str, ...] = (*WINDOWED, *SEQUENTIAL)
"""Every registered name, windowed first: the order of the engine's reads."""
