"""How far a judge agrees with gold verdicts, and the judged rate corrected for its error.

Pure arithmetic, no I/O: `ragstream judge --report`, the RAGTruth bench and the agent's
online agreement all compute from here, so they give the same numbers on the same answers.

A *positive* is a hallucinated answer. From (gold, verdict) pairs:

- sensitivity ``tp / (tp + fn)`` (recall on hallucinations), specificity ``tn / (tn + fp)``,
  precision ``tp / (tp + fp)``: binomial proportions, each with its Wilson interval;
- balanced accuracy ``(Se + Sp) / 2``: Se and Sp come from disjoint answers (gold positives
  and gold negatives), so the interval of their sum is the MOVER combination of their
  Wilson intervals (Newcombe; Zou & Donner 2008), halved;
- F1 ``2tp / (2tp + fp + fn)`` is ``2J / (1 + J)`` with ``J = tp / (tp + fp + fn)`` (the
  Jaccard index), a binomial proportion given ``tp + fp + fn``: the Wilson interval of J
  mapped through that increasing function;
- AUROC of a score against gold: the Mann-Whitney statistic, ties counted 1/2, with the
  DeLong variance and the interval taken on the logit scale (it stays in (0, 1)).

`corrected_rate` is the Rogan-Gladen prevalence ``(p_obs + Sp - 1) / (Se + Sp - 1)``; its
interval inverts a test that carries the three sampling errors (see its docstring).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Confusion",
    "CorrectedRate",
    "Estimate",
    "auroc",
    "corrected_rate",
    "proportion",
    "wilson_interval",
]

Z95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95% interval."""


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``p̂ = successes / n``::

        centre = (p̂ + z²/2n) / (1 + z²/n)
        half   = z · sqrt(p̂(1 - p̂)/n + z²/4n²) / (1 + z²/n)

    Returns ``(centre - half, centre + half)`` clipped to [0, 1]; ``(0, 1)`` when n = 0.
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError("need 0 <= successes <= n")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True, slots=True)
class Estimate:
    """A rate with its 95% interval; ``value`` is NaN (and the interval [0, 1]) when the
    rate is undefined (no answer in its denominator)."""

    value: float
    lower: float
    upper: float
    n: int
    """Answers behind the estimate (the denominator; for AUROC, the scored answers)."""

    @property
    def defined(self) -> bool:
        return not math.isnan(self.value)

    def as_dict(self) -> dict[str, float | int | None]:
        """JSON-friendly: an undefined value is null."""
        return {
            "value": self.value if self.defined else None,
            "lower": self.lower,
            "upper": self.upper,
            "n": self.n,
        }


def proportion(successes: int, n: int, z: float = Z95) -> Estimate:
    """``successes / n`` with its Wilson interval (undefined when n = 0)."""
    low, high = wilson_interval(successes, n, z)
    return Estimate(successes / n if n else math.nan, low, high, n)


@dataclass(frozen=True, slots=True)
class Confusion:
    """Counts of (gold, verdict) pairs; a positive is a hallucinated answer."""

    tp: int = 0
    """Gold hallucination, flagged."""
    fp: int = 0
    """Gold faithful, flagged."""
    fn: int = 0
    """Gold hallucination, not flagged."""
    tn: int = 0
    """Gold faithful, not flagged."""

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[bool, bool]]) -> Confusion:
        """Count ``(gold, verdict)`` pairs."""
        tp = fp = fn = tn = 0
        for gold, verdict in pairs:
            if gold:
                tp, fn = (tp + 1, fn) if verdict else (tp, fn + 1)
            else:
                fp, tn = (fp + 1, tn) if verdict else (fp, tn + 1)
        return cls(tp, fp, fn, tn)

    def __add__(self, other: Confusion) -> Confusion:
        return Confusion(
            self.tp + other.tp, self.fp + other.fp, self.fn + other.fn, self.tn + other.tn
        )

    @property
    def positives(self) -> int:
        """Gold hallucinations."""
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        """Gold faithful answers."""
        return self.tn + self.fp

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def se_counts(self) -> tuple[int, int]:
        """``(tp, positives)``: what `corrected_rate` reads of the sensitivity."""
        return self.tp, self.positives

    @property
    def sp_counts(self) -> tuple[int, int]:
        """``(tn, negatives)``: what `corrected_rate` reads of the specificity."""
        return self.tn, self.negatives

    def sensitivity(self, z: float = Z95) -> Estimate:
        """Recall on hallucinations, ``tp / (tp + fn)``, Wilson interval."""
        return proportion(self.tp, self.positives, z)

    def specificity(self, z: float = Z95) -> Estimate:
        """``tn / (tn + fp)``, Wilson interval."""
        return proportion(self.tn, self.negatives, z)

    def precision(self, z: float = Z95) -> Estimate:
        """``tp / (tp + fp)``, Wilson interval."""
        return proportion(self.tp, self.tp + self.fp, z)

    def f1(self, z: float = Z95) -> Estimate:
        """``2tp / (2tp + fp + fn)``: the Wilson interval of the Jaccard index
        ``J = tp / (tp + fp + fn)`` mapped through ``2J / (1 + J)``."""
        m = self.tp + self.fp + self.fn
        low, high = wilson_interval(self.tp, m, z)
        value = 2 * self.tp / (2 * self.tp + self.fp + self.fn) if m else math.nan
        return Estimate(value, 2 * low / (1 + low), 2 * high / (1 + high), m)

    def balanced_accuracy(self, z: float = Z95) -> Estimate:
        """``(Se + Sp) / 2``, MOVER interval from the Wilson intervals of Se and Sp;
        undefined without both gold positives and gold negatives."""
        se, sp = self.sensitivity(z), self.specificity(z)
        if not (se.defined and sp.defined):
            return Estimate(math.nan, 0.0, 1.0, self.n)
        total = se.value + sp.value
        low = total - math.hypot(se.value - se.lower, sp.value - sp.lower)
        high = total + math.hypot(se.upper - se.value, sp.upper - sp.value)
        return Estimate(total / 2, max(0.0, low / 2), min(1.0, high / 2), self.n)

    def as_dict(self) -> dict[str, int]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn}


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _expit(x: float) -> float:
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def auroc(scores: Sequence[float], gold: Sequence[bool], z: float = Z95) -> Estimate:
    """Area under the ROC curve of ``scores`` (higher: more likely hallucinated) against
    ``gold``: the share of (positive, negative) pairs the score orders right, ties 1/2.

    The interval is ``logit(A) ± z·se / (A(1 - A))`` mapped back, with DeLong's variance
    ``S10/m + S01/n`` (the sample variances of each answer's share of pairs won). With no
    pair ordered wrong (A = 1) that variance is 0; the lower bound is then Newcombe's
    score-type bound (`_separated_bound`), which narrows as answers are added (mirrored for
    A = 0). When every answer wins the same share of pairs (all scores tied: A = 1/2) it is
    0 too, and Newcombe's variance at A stands in. Undefined (NaN, [0, 1]) without a
    positive and a negative; [0, 1] around the value when either side has a single answer.
    """
    s = np.asarray(scores, dtype=np.float64)
    g = np.asarray(gold, dtype=bool)
    if s.shape != g.shape or s.ndim != 1:
        raise ValueError("scores and gold must be two sequences of one length")
    if np.isnan(s).any():
        raise ValueError("scores must not be NaN")
    pos, neg = np.sort(s[g]), np.sort(s[~g])
    m, n = len(pos), len(neg)
    if m == 0 or n == 0:
        return Estimate(math.nan, 0.0, 1.0, m + n)
    # Share of negatives each positive beats (ties 1/2), and of positives above each negative.
    v10 = (np.searchsorted(neg, pos, "left") + np.searchsorted(neg, pos, "right")) / (2.0 * n)
    v01 = 1.0 - (np.searchsorted(pos, neg, "left") + np.searchsorted(pos, neg, "right")) / (2.0 * m)
    area = float(v10.mean())
    if m < 2 or n < 2:
        return Estimate(area, 0.0, 1.0, m + n)
    if area in (0.0, 1.0):  # complete separation (or its reverse)
        bound = _separated_bound(m, n, z)
        return (
            Estimate(area, bound, 1.0, m + n)
            if area == 1.0
            else Estimate(area, 0.0, 1.0 - bound, m + n)
        )
    var = float(v10.var(ddof=1)) / m + float(v01.var(ddof=1)) / n
    if var <= 0.0:  # every answer wins the same share of pairs (all scores tied, say)
        var = _newcombe_variance(area, m, n)
    half = z * math.sqrt(var) / (area * (1 - area))
    return Estimate(area, _expit(_logit(area) - half), _expit(_logit(area) + half), m + n)


def _separated_bound(m: int, n: int, z: float) -> float:
    """Lower bound of an AUROC of 1 (Newcombe 2006, method 5): the θ below 1 where
    ``(1 - θ)² = z²·V(θ)``, V = `_newcombe_variance` at θ."""

    def excess(theta: float) -> float:
        return (1 - theta) ** 2 - z * z * _newcombe_variance(theta, m, n)

    low, high = 0.0, 1.0  # excess(0) = 1 > 0; just below 1 it is negative
    for _ in range(60):
        mid = (low + high) / 2
        if excess(mid) > 0:
            low = mid
        else:
            high = mid
    return low


def _newcombe_variance(theta: float, m: int, n: int) -> float:
    """Variance of the Mann-Whitney AUROC at ``theta`` (Hanley-McNeil, as Newcombe 2006
    modifies it): ``θ(1 - θ)[1 + (N - 1)((1 - θ)/(2 - θ) + θ/(1 + θ))] / mn``,
    ``N = (m + n)/2``."""
    big_n = (m + n) / 2
    shape = 1 + (big_n - 1) * ((1 - theta) / (2 - theta) + theta / (1 + theta))
    return theta * (1 - theta) * shape / (m * n)


@dataclass(frozen=True, slots=True)
class CorrectedRate:
    """The judged rate corrected for the judge's measured error (`corrected_rate`)."""

    value: float
    """Rogan-Gladen estimate clipped to [0, 1]; NaN when undefined."""
    lower: float
    upper: float
    n_gold: int
    """Gold comparisons behind Se and Sp."""
    defined: bool
    """False when there is no judged answer, no gold positive or negative, or the
    measured ``Se + Sp <= 1`` (the judge tells nothing): value NaN, interval [0, 1]."""

    def as_dict(self) -> dict[str, float | int | bool | None]:
        """JSON-friendly: an undefined value is null."""
        return {
            "value": self.value if self.defined else None,
            "lower": self.lower,
            "upper": self.upper,
            "n_gold": self.n_gold,
            "defined": self.defined,
        }


def _adjusted(successes: int, n: int, z: float) -> tuple[float, float]:
    """Agresti-Coull centre and variance of a proportion (``z²/2`` successes and
    failures added), so that a measured Se or Sp of 0 or 1 still carries its
    uncertainty."""
    n_adj = n + z * z
    p = (successes + z * z / 2) / n_adj
    return p, p * (1 - p) / n_adj


def corrected_rate(
    flagged: int,
    n: int,
    se_counts: tuple[int, int],
    sp_counts: tuple[int, int],
    z: float = Z95,
) -> CorrectedRate:
    """True hallucination rate of ``n`` judged answers of which the judge flagged
    ``flagged``, given its sensitivity ``se_counts = (tp, gold positives)`` and specificity
    ``sp_counts = (tn, gold negatives)`` measured on gold verdicts.

    Value: Rogan-Gladen ``(p + Sp - 1) / (Se + Sp - 1)`` with ``p = flagged / n``, clipped to
    [0, 1]. Interval: every rate π in [0, 1] that a z-test does not reject, where the test
    compares the observed share with the share the judge would flag at π,
    ``a(π) = π·Se + (1 - π)(1 - Sp)``::

        (p - a(π))² <= z² · [a(π)(1 - a(π))/n + π²·Var(Se) + (1 - π)²·Var(Sp)]

    (Fieller's inversion of the ratio, with the flagged share's variance taken at the
    tested rate as in the Wilson interval and the Agresti-Coull variances of Se and Sp).
    Both sides are quadratic in π, so the set is found exactly; when Se + Sp - 1 is not
    clearly above 0 the set widens to all of [0, 1] instead of giving a spurious
    precision. When no rate passes (the flagged share lies farther below the judge's
    false-positive rate, or above its sensitivity, than sampling explains: the gold
    answers' Se or Sp does not hold for these answers) the interval is the clipped value
    alone, 0 or 1. The three variances treat the window and the gold answers as
    independent samples. Coverage is checked by simulation in
    tests/judging/test_agreement.py.
    """
    tp, positives = se_counts
    tn, negatives = sp_counts
    if not (0 <= flagged <= n and 0 <= tp <= positives and 0 <= tn <= negatives):
        raise ValueError("need 0 <= successes <= trials in every count")
    n_gold = positives + negatives
    undefined = CorrectedRate(math.nan, 0.0, 1.0, n_gold, False)
    if n == 0 or positives == 0 or negatives == 0:
        return undefined
    se, sp = tp / positives, tn / negatives
    youden = se + sp - 1
    if youden <= 0:
        return undefined
    p = flagged / n
    value = min(1.0, max(0.0, (p + sp - 1) / youden))
    (se_adj, var_se), (sp_adj, var_sp) = _adjusted(tp, positives, z), _adjusted(tn, negatives, z)
    youden, fpr = se_adj + sp_adj - 1, 1 - sp_adj
    z2 = z * z
    # f(π) = (p - fpr - youden·π)² - z²[a(π)(1 - a(π))/n + π² var_se + (1 - π)² var_sp],
    # a(π) = fpr + youden·π; coefficients of π², π, 1.
    c2 = youden**2 + z2 * (youden**2 / n - var_se - var_sp)
    c1 = -2 * (p - fpr) * youden - z2 * (youden * (1 - 2 * fpr) / n - 2 * var_sp)
    c0 = (p - fpr) ** 2 - z2 * (fpr * (1 - fpr) / n + var_sp)
    lower, upper = _accepted_hull(c2, c1, c0)
    lower, upper = min(lower, value), max(upper, value)
    return CorrectedRate(value, lower, upper, n_gold, True)


def _accepted_hull(c2: float, c1: float, c0: float) -> tuple[float, float]:
    """Smallest interval holding every π in [0, 1] with ``c2·π² + c1·π + c0 <= 0``
    (``(1, 0)``, empty, when there is none)."""
    cuts = [0.0, 1.0]
    if abs(c2) > 1e-300:
        disc = c1 * c1 - 4 * c2 * c0
        if disc >= 0:
            root = math.sqrt(disc)
            cuts += [r for r in ((-c1 - root) / (2 * c2), (-c1 + root) / (2 * c2)) if 0 < r < 1]
    elif c1 != 0:
        r = -c0 / c1
        if 0 < r < 1:
            cuts.append(r)
    cuts.sort()

    def accepted(x: float) -> bool:
        return (c2 * x + c1) * x + c0 <= 1e-15

    points = [x for x in cuts if accepted(x)]
    points += [(a + b) / 2 for a, b in itertools.pairwise(cuts) if accepted((a + b) / 2)]
    if not points:
        return 1.0, 0.0
    return min(points), max(points)
