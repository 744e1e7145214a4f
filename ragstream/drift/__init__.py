"""Drift detectors: pure, I/O-free, snapshot-able (see docs/drift.md).

Windowed detectors compare a short window with the rest of a long one (:class:`ZScore`,
:class:`Psi`; evaluated per label set and cell by :class:`ZScoreBank` and :class:`PsiBank`);
sequential ones watch the stream of final per-query values (:class:`PageHinkley`,
:class:`Adwin`). The registry (`ragstream.drift.registry`) names them and their settings.
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
