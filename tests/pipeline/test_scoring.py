"""Scoring open queries: each column equals a from-scratch computation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ragstream.events import DecodedRetrieval, RetrievedDoc, decode_event
from ragstream.join.label_map import labels_of
from ragstream.pipeline.row_layout import RowLayout
from ragstream.pipeline.scoring import ScoredQueries, Scorer
from tests.support import defaults

DAY = 86_400.0

RankedDoc = RetrievedDoc
_Query = tuple[float, bytes, bytes | None, bytes | None]


def _query(qid: str, ts: float, docs: list[RankedDoc], qrels: list[RankedDoc]) -> _Query:
    """A query's columns as the engine scores a row with an entry in the label map."""
    message = {"type": "retrieval", "query_id": qid, "ts": ts, "results": docs, "qrels": qrels}
    event = decode_event(json.dumps(message).encode())
    assert isinstance(event, DecodedRetrieval)
    entry, _, top = labels_of(event, ts, ts + 900.0)
    return (ts, top, *entry.columns())


def _score(layout: RowLayout, queries: list[_Query]) -> ScoredQueries:
    """The queries scored from their columns, as the engine scores those with an entry."""
    ts, tops, ranked, judged = zip(*queries, strict=True)
    times = np.array(ts, dtype=np.float64)
    return Scorer(layout, gain="linear", threshold=1.0).score(times, tops, ranked, judged)


def _dcg(gains: list[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def test_rows_match_hand_computation_including_decay() -> None:
    ts = 100 * DAY
    docs = [
        RankedDoc(doc_id="a", t_doc=ts - 7 * DAY),  # one half-life old: weight 1/2
        RankedDoc(doc_id="b", t_doc=ts),  # fresh: weight 1
        RankedDoc(doc_id="c"),  # no t_doc: dates from ts
        RankedDoc(doc_id="a"),  # repeat, ignored
    ]
    qrels = [RankedDoc(doc_id="b", rel=2), RankedDoc(doc_id="z", rel=3, t_doc=ts - 14 * DAY)]
    layout = defaults.row_layout(cutoffs=(1, 3), half_lives=(7 * DAY,))
    unlabeled = _query("u", ts, [RankedDoc(doc_id="x", t_doc=ts - 10.0)], [])
    scored = _score(layout, [_query("q", ts, docs, qrels), unlabeled])
    row = dict(zip(layout.plain, scored.plain[0], strict=True))
    assert row["rr"] == 0.5
    assert row["precision@1"] == 0.0
    assert row["precision@3"] == pytest.approx(1 / 3)
    assert row["recall@3"] == 0.5
    assert row["hit_rate@1"] == 0.0
    assert row["dcg@3"] == pytest.approx(2 / math.log2(3))
    assert row["ndcg@3"] == pytest.approx((2 / math.log2(3)) / _dcg([3, 2]))
    ratio = dict(zip(layout.ratio, scored.ratio[0, 0], strict=True))
    # judged z is two half-lives old (weight 1/4), b is fresh: decayed ideal = [2, 0.75]
    assert ratio["ndcg_decayed@3"] == pytest.approx((2 / math.log2(3)) / _dcg([2.0, 0.75]))
    assert ratio["recall_decayed@3"] == pytest.approx(1.0 / 1.25)
    decayed = dict(zip(layout.decayed, scored.decayed[0, 0], strict=True))
    assert decayed["rr_decayed"] == pytest.approx(0.5)
    assert decayed["precision_decayed@3"] == pytest.approx(1 / 3)
    assert decayed["dcg_decayed@3"] == pytest.approx(2 / math.log2(3))
    assert scored.doc_age[0].tolist() == pytest.approx([7 * DAY, 7 * DAY / 3])
    assert scored.labeled.tolist() == [True, False]
    assert np.isnan(scored.plain[1]).all()
    assert np.isnan(scored.decayed[1]).all()
    assert scored.doc_age[1].tolist() == [10.0, 10.0]


@pytest.mark.parametrize(
    ("ranked_time", "label_time"),
    [(None, 100 * DAY - 7 * DAY), (100 * DAY, 100 * DAY - 7 * DAY), (100 * DAY - 7 * DAY, None)],
    ids=["ranking-without-time", "ranking-fresher", "label-without-time"],
)
def test_a_document_has_one_time_in_the_ranking_and_the_ideal(
    ranked_time: float | None, label_time: float | None
) -> None:
    """The ranking and the qrel give one document different times (or only one gives
    one): it weighs the same in the ranking and in the ideal ranking, the label's time
    winning, so the ratio metrics stay at most 1. Here the only judged document is first,
    one half-life old: ndcg_decayed and recall_decayed are 1, dcg_decayed@1 is 3 x 1/2."""
    ts = 100 * DAY
    docs = [RankedDoc(doc_id="a", t_doc=ranked_time), RankedDoc(doc_id="b", t_doc=ts)]
    qrels = [RankedDoc(doc_id="a", rel=3, t_doc=label_time)]
    layout = defaults.row_layout(cutoffs=(1, 3), half_lives=(7 * DAY,))
    scored = _score(layout, [_query("q", ts, docs, qrels)])
    ratio = dict(zip(layout.ratio, scored.ratio[0, 0], strict=True))
    decayed = dict(zip(layout.decayed, scored.decayed[0, 0], strict=True))
    assert ratio["ndcg_decayed@1"] == pytest.approx(1.0)
    assert ratio["recall_decayed@3"] == pytest.approx(1.0)
    assert decayed["dcg_decayed@1"] == pytest.approx(1.5)
    assert decayed["rr_decayed"] == pytest.approx(0.5)
