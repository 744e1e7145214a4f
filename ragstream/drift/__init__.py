"""Drift detectors: pure, I/O-free, snapshot-able (see docs/drift.md).

Windowed detectors compare a short window with the rest of a long one at each evaluation
(:class:`ZScore` on count, sum and sum of squares; :class:`Psi` on fixed-bin histograms);
sequential detectors watch the stream of final per-query values (:class:`PageHinkley`,
:class:`Adwin`). Each has ``update`` (a number or a numpy array, in order), ``score``,
``alarm``, ``detections`` and ``snapshot()`` / ``restore()`` to JSON-ready dicts.
:class:`ZScoreBank` and :class:`PsiBank` evaluate many windowed detectors of one kind at
once (one per label set and cell), as a scrape reads every label set's windows.
"""

from ragstream.drift._common import Direction
from ragstream.drift.adwin import Adwin
from ragstream.drift.bank import PsiBank, ZScoreBank
from ragstream.drift.page_hinkley import PageHinkley
from ragstream.drift.psi import Psi, psi
from ragstream.drift.zscore import Moments, ZScore, welch_z

__all__ = [
    "Adwin",
    "Direction",
    "Moments",
    "PageHinkley",
    "Psi",
    "PsiBank",
    "ZScore",
    "ZScoreBank",
    "psi",
    "welch_z",
]
