"""Drift detectors: pure, I/O-free, snapshot-able (see docs/drift.md).

Windowed detectors compare a short window with the rest of a long one at each evaluation
(:class:`ZScore` on count, sum and sum of squares; :class:`Psi` on fixed-bin histograms);
sequential detectors watch the stream of final per-query values (:class:`PageHinkley`,
:class:`Adwin`). Each has ``update`` (a number or a numpy array, in order), ``score``,
``alarm``, ``detections`` and ``snapshot()`` / ``restore()`` to JSON-ready dicts.
:class:`ZScoreBank` and :class:`PsiBank` evaluate many windowed detectors of one kind at
once (one per label set and cell), as the engine reads every label set's windows. Each
detector's settings are a typed parameters class (e.g. :class:`ZScoreParams`); the
registry (`ragstream.drift.registry`) names them.
"""

from ragstream.drift._common import Direction
from ragstream.drift.adwin import Adwin, AdwinParams
from ragstream.drift.bank import PsiBank, ZScoreBank
from ragstream.drift.page_hinkley import PageHinkley, PageHinkleyParams
from ragstream.drift.psi import Psi, PsiParams, psi
from ragstream.drift.registry import DETECTORS, SEQUENTIAL, WINDOWED, DetectorParams
from ragstream.drift.zscore import Moments, ZScore, ZScoreParams, welch_z

__all__ = [
    "DETECTORS",
    "SEQUENTIAL",
    "WINDOWED",
    "Adwin",
    "AdwinParams",
    "DetectorParams",
    "Direction",
    "Moments",
    "PageHinkley",
    "PageHinkleyParams",
    "Psi",
    "PsiBank",
    "PsiParams",
    "ZScore",
    "ZScoreBank",
    "ZScoreParams",
    "psi",
    "welch_z",
]
