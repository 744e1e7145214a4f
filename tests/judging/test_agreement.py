"""Agreement statistics: hand-computed cases, brute-force references, and the coverage of
the corrected rate's interval by simulation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.judging.agreement import (
    Z95,
    Confusion,
    auroc,
    corrected_rate,
    wilson_interval,
)
from ragstream.judging.results import wilson_interval as results_wilson


def test_wilson_has_one_implementation() -> None:
    assert results_wilson is wilson_interval


def test_confusion_counts_pairs() -> None:
    pairs = [(True, True)] * 8 + [(False, True)] * 2 + [(True, False)] * 4 + [(False, False)] * 6
    c = Confusion.from_pairs(pairs)
    assert (c.tp, c.fp, c.fn, c.tn) == (8, 2, 4, 6)
    assert (c.positives, c.negatives, c.n) == (12, 8, 20)
    assert c.se_counts == (8, 12)
    assert c.sp_counts == (6, 8)
    assert c + c == Confusion(16, 4, 8, 12)


def test_rates_of_a_hand_computed_table() -> None:
    c = Confusion(tp=8, fp=2, fn=4, tn=6)
    se, sp, prec = c.sensitivity(), c.specificity(), c.precision()
    assert se.value == pytest.approx(8 / 12)
    assert se.n == 12
    assert sp.value == pytest.approx(6 / 8)
    assert sp.n == 8
    assert prec.value == pytest.approx(8 / 10)
    assert prec.n == 10
    assert (se.lower, se.upper) == wilson_interval(8, 12, Z95)
    # Wilson (8 of 12) by hand: centre (2/3 + z²/24) / (1 + z²/12), half as in the formula
    z2 = Z95 * Z95
    centre = (8 / 12 + z2 / 24) / (1 + z2 / 12)
    half = Z95 * math.sqrt((8 / 12) * (4 / 12) / 12 + z2 / (4 * 144)) / (1 + z2 / 12)
    assert (se.lower, se.upper) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert (se.lower, se.upper) == pytest.approx((0.3906, 0.8619), abs=1e-4)

    f1 = c.f1()
    assert f1.value == pytest.approx(16 / 22)
    j_low, j_high = wilson_interval(8, 14, Z95)  # Jaccard: 8 of tp + fp + fn = 14
    assert (f1.lower, f1.upper) == pytest.approx(
        (2 * j_low / (1 + j_low), 2 * j_high / (1 + j_high))
    )
    assert f1.lower < f1.value < f1.upper

    ba = c.balanced_accuracy()
    assert ba.value == pytest.approx((8 / 12 + 6 / 8) / 2)
    sp_low, sp_high = wilson_interval(6, 8, Z95)
    low = 8 / 12 + 6 / 8 - math.hypot(8 / 12 - se.lower, 6 / 8 - sp_low)
    high = 8 / 12 + 6 / 8 + math.hypot(se.upper - 8 / 12, sp_high - 6 / 8)
    assert (ba.lower, ba.upper) == pytest.approx((low / 2, high / 2))
    # narrower than the naive sum of the two intervals' halves
    assert ba.upper - ba.lower < (se.upper - se.lower + sp_high - sp_low) / 2


def test_undefined_rates_are_nan_with_the_whole_interval() -> None:
    c = Confusion(tp=0, fp=3, fn=0, tn=5)  # no gold hallucination
    for est in (c.sensitivity(), c.balanced_accuracy()):
        assert not est.defined
        assert (est.lower, est.upper) == (0.0, 1.0)
        assert est.as_dict()["value"] is None
    assert c.specificity().value == pytest.approx(5 / 8)
    assert not Confusion().f1().defined


def _brute_auc(scores: list[float], gold: list[bool]) -> tuple[float, float]:
    """AUC and DeLong variance from the full pair matrix."""
    pos = [s for s, g in zip(scores, gold, strict=True) if g]
    neg = [s for s, g in zip(scores, gold, strict=True) if not g]
    psi = np.array([[1.0 if x > y else 0.5 if x == y else 0.0 for y in neg] for x in pos])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    var = v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg)
    return float(psi.mean()), float(var)


def test_auroc_of_a_hand_computed_case() -> None:
    # positives 0.9, 0.5, 0.5 against negatives 0.5, 0.1: 1 + 1 + ½ + 1 + ½ + 1 of 6 pairs
    est = auroc([0.9, 0.5, 0.5, 0.5, 0.1], [True, True, True, False, False])
    assert est.value == pytest.approx(5 / 6)
    assert est.n == 5
    assert est.lower < 5 / 6 < est.upper


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]), st.booleans()),
        min_size=4,
        max_size=60,
    )
)
def test_auroc_matches_the_pair_count(rows: list[tuple[float, bool]]) -> None:
    scores = [s for s, _ in rows]
    gold = [g for _, g in rows]
    m = sum(gold)
    if m < 2 or len(gold) - m < 2:
        return
    area, var = _brute_auc(scores, gold)
    est = auroc(scores, gold)
    assert est.value == pytest.approx(area, abs=1e-12)
    assert est.lower <= est.value <= est.upper
    if 0 < area < 1 and var > 0:
        half = Z95 * math.sqrt(var) / (area * (1 - area))
        logit = math.log(area / (1 - area))
        expected = (1 / (1 + math.exp(half - logit)), 1 / (1 + math.exp(-logit - half)))
        assert (est.lower, est.upper) == pytest.approx(expected, abs=1e-9)


def test_auroc_of_a_perfect_score_keeps_a_width() -> None:
    small = auroc([1.0] * 10 + [0.0] * 10, [True] * 10 + [False] * 10)
    large = auroc([1.0] * 100 + [0.0] * 100, [True] * 100 + [False] * 100)
    assert small.value == large.value == 1.0
    assert 0.5 < small.lower < large.lower < 1.0
    assert small.lower == pytest.approx(0.80, abs=0.01)  # Newcombe's bound for 10 and 10
    assert small.upper == large.upper == 1.0
    reversed_ = auroc([0.0] * 10 + [1.0] * 10, [True] * 10 + [False] * 10)
    assert reversed_.value == 0.0
    assert (reversed_.lower, reversed_.upper) == pytest.approx((0.0, 1 - small.lower))
    assert not auroc([0.3, 0.4], [True, True]).defined
    with pytest.raises(ValueError, match="length"):
        auroc([0.1], [True, False])


def test_auroc_of_a_constant_score_is_a_half_with_a_width() -> None:
    est = auroc([0.0] * 40, [True] * 10 + [False] * 30)
    assert est.value == 0.5
    assert 0.25 < est.lower < 0.5 < est.upper < 0.75


def test_corrected_rate_of_a_hand_computed_case() -> None:
    # p = 0.3, Se = 0.8, Sp = 0.9: (0.3 + 0.9 - 1) / (0.8 + 0.9 - 1) = 2/7
    r = corrected_rate(300, 1000, (80, 100), (180, 200))
    assert r.defined
    assert r.n_gold == 300
    assert r.value == pytest.approx(2 / 7)
    assert r.lower < 2 / 7 < r.upper
    # the bounds are where the documented test statistic meets z² times its variance
    z2 = Z95 * Z95
    se = (80 + z2 / 2) / (100 + z2)
    sp = (180 + z2 / 2) / (200 + z2)
    for pi in (r.lower, r.upper):
        a = pi * se + (1 - pi) * (1 - sp)
        var = (
            a * (1 - a) / 1000
            + pi**2 * se * (1 - se) / (100 + z2)
            + (1 - pi) ** 2 * sp * (1 - sp) / (200 + z2)
        )
        assert (0.3 - a) ** 2 == pytest.approx(z2 * var, rel=1e-9)


def test_a_perfect_judge_measured_on_endless_gold_gives_the_wilson_interval() -> None:
    big = 10**12
    r = corrected_rate(30, 100, (big, big), (big, big))
    assert r.value == pytest.approx(0.3)
    assert (r.lower, r.upper) == pytest.approx(wilson_interval(30, 100, Z95), abs=1e-6)


def test_the_interval_carries_the_error_of_se_and_sp() -> None:
    few = corrected_rate(300, 1000, (8, 10), (18, 20))
    many = corrected_rate(300, 1000, (800, 1000), (1800, 2000))
    assert few.value == pytest.approx(many.value)
    assert few.upper - few.lower > 2 * (many.upper - many.lower)


def test_corrected_rate_is_clipped() -> None:
    # flagged share 0.08 below the false-positive rate 0.1, within sampling error
    low = corrected_rate(80, 1000, (80, 100), (180, 200))
    assert low.value == 0.0
    assert low.lower == 0.0
    assert 0.0 < low.upper < 0.1
    high = corrected_rate(850, 1000, (80, 100), (180, 200))  # above Se = 0.8
    assert high.value == 1.0
    assert high.upper == 1.0
    assert 0.9 < high.lower < 1.0


def test_a_share_no_rate_explains_collapses_to_the_bound() -> None:
    """0.05 flagged where the judge flags 0.1 of faithful answers: every rate is rejected,
    the interval is the clipped value alone (the documented signal that the gold answers'
    Sp does not hold here)."""
    r = corrected_rate(50, 1000, (80, 100), (180, 200))
    assert (r.value, r.lower, r.upper) == (0.0, 0.0, 0.0)
    r = corrected_rate(990, 1000, (80, 100), (180, 200))
    assert (r.value, r.lower, r.upper) == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    ("flagged", "n", "se", "sp"),
    [
        (30, 100, (5, 10), (5, 10)),  # Se + Sp = 1: the judge tells nothing
        (30, 100, (2, 10), (6, 10)),  # Se + Sp < 1
        (30, 100, (0, 0), (6, 10)),  # no gold hallucination
        (30, 100, (8, 10), (0, 0)),  # no gold faithful answer
        (0, 0, (8, 10), (9, 10)),  # nothing judged
    ],
)
def test_undefined_correction(
    flagged: int, n: int, se: tuple[int, int], sp: tuple[int, int]
) -> None:
    r = corrected_rate(flagged, n, se, sp)
    assert not r.defined
    assert math.isnan(r.value)
    assert (r.lower, r.upper) == (0.0, 1.0)
    assert r.as_dict()["value"] is None
    assert r.n_gold == se[1] + sp[1]


def test_bad_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="successes"):
        corrected_rate(5, 4, (1, 2), (1, 2))
    with pytest.raises(ValueError, match="successes"):
        corrected_rate(1, 4, (3, 2), (1, 2))


_PREVALENCE = (0.05, 0.2, 0.6)
_SE = (0.6, 0.8, 0.95)
_SP = (0.6, 0.8, 0.95)
_WINDOW = (200, 2000)
_GOLD = (100, 400)


def test_corrected_interval_covers_the_true_rate_in_simulation() -> None:
    """1,000 seeded trials per grid point: a window of n answers (its true rate is the
    share of its answers that are hallucinated), the judge's flags, and gold answers from
    the same stream that measure Se and Sp. At every point at least 93% of the intervals
    cover the window's true rate, and so do at least 93% of the defined ones (an undefined
    correction, [0, 1], is common only where 5 or so gold hallucinations measure an Se of
    0.6)."""
    rng = np.random.default_rng(20240601)
    trials = 1000
    widths: dict[tuple[float, float, float, int, int], float] = {}
    for prev, se, sp, n, n_gold in itertools.product(_PREVALENCE, _SE, _SP, _WINDOW, _GOLD):
        true_pos = rng.binomial(n, prev, trials)
        flagged = rng.binomial(true_pos, se) + rng.binomial(n - true_pos, 1 - sp)
        gold_pos = rng.binomial(n_gold, prev, trials)
        tp = rng.binomial(gold_pos, se)
        tn = rng.binomial(n_gold - gold_pos, sp)
        covered = covered_defined = defined = 0
        width = 0.0
        for i in range(trials):
            r = corrected_rate(
                int(flagged[i]),
                n,
                (int(tp[i]), int(gold_pos[i])),
                (int(tn[i]), int(n_gold - gold_pos[i])),
            )
            hit = r.lower <= true_pos[i] / n <= r.upper
            covered += hit
            width += r.upper - r.lower
            if r.defined:
                defined += 1
                covered_defined += hit
        point = (prev, se, sp, n, n_gold)
        assert covered >= 0.93 * trials, (point, covered)
        assert covered_defined >= 0.93 * defined, (point, covered_defined, defined)
        widths[point] = width / trials
    # not trivially wide: a good judge measured on 400 gold answers pins a window of 2000
    assert widths[(0.2, 0.95, 0.95, 2000, 400)] < 0.1
    assert widths[(0.6, 0.95, 0.95, 2000, 400)] < 0.1
