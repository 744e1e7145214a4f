"""The row layout: column names, their parsing, row packing, ages and label-set names."""

from __future__ import annotations

import numpy as np
import pytest

from ragstream.metrics import REGISTRY
from ragstream.pipeline.row_layout import EVENT_TIME, EVENT_TIME_BASE, RowLayout
from tests.support import defaults

LAYOUT = defaults.row_layout(
    cutoffs=(1, 5), half_lives=(3600.0, 604800.0), label_keys=("app", "index")
)


def test_columns_follow_the_registry_in_row_order() -> None:
    cutoff = [f.name for f in REGISTRY.streamed() if f.cutoff]
    assert LAYOUT.plain == ("rr", *(f"{f}@{k}" for f in cutoff for k in (1, 5)))
    assert "ap" not in LAYOUT.plain  # offline only
    assert LAYOUT.ratio == (
        "recall_decayed@1",
        "recall_decayed@5",
        "ndcg_decayed@1",
        "ndcg_decayed@5",
    )
    assert LAYOUT.decayed == (
        "rr_decayed",
        "precision_decayed@1",
        "precision_decayed@5",
        "dcg_decayed@1",
        "dcg_decayed@5",
    )
    assert LAYOUT.window_columns[-3:] == ("doc_age_seconds@1", "doc_age_seconds@5", EVENT_TIME)
    assert "ndcg_decayed@5|604800" in LAYOUT.window_columns
    assert LAYOUT.hist_columns == tuple(
        c for c in LAYOUT.plain if c.partition("@")[0] in ("rr", "precision", "recall", "ndcg")
    )


def test_every_column_parses_back_to_its_parts() -> None:
    names = [c.name for c in LAYOUT.columns]
    assert len(set(names)) == len(names)
    assert tuple(names[: LAYOUT.width]) == LAYOUT.window_columns
    column = LAYOUT.column("ndcg_decayed@5|604800")
    assert (column.part, column.k, column.half_life, column.gauge) == (
        "ratio",
        5,
        604800.0,
        "retrieval_ndcg_decayed",
    )
    assert LAYOUT.column("rr_decayed|3600").part == "decayed"
    assert LAYOUT.column("doc_age_seconds@5").gauge == "retrieval_doc_age_seconds"
    assert LAYOUT.column("rr").help.startswith("Mean reciprocal rank")
    with pytest.raises(KeyError):
        LAYOUT.column("ndcg@10")
    with pytest.raises(ValueError, match="not exported"):
        _ = LAYOUT.column(EVENT_TIME).gauge


def test_rows_unpack_and_records_are_inverse() -> None:
    n, h = 3, len(LAYOUT.half_lives)
    rng = np.random.default_rng(1)
    ts = np.array([1.7e9, 1.7e9 + 5, 1.7e9 + 9])
    plain = rng.random((n, len(LAYOUT.plain)))
    ratio = rng.random((n, h, len(LAYOUT.ratio)))
    ages = rng.random((n, len(LAYOUT.doc_age)))
    ages[2] = np.nan  # a query without documents has no age, nor an event time
    decayed = rng.random((n, h, len(LAYOUT.decayed)))
    rows = LAYOUT.rows(ts, plain, ratio, ages, decayed)
    assert rows.shape == (n, LAYOUT.width + h * len(LAYOUT.decayed))
    event = rows[:, LAYOUT.index(EVENT_TIME)]
    np.testing.assert_array_equal(event[:2], ts[:2] - EVENT_TIME_BASE)
    assert np.isnan(event[2])
    parts = LAYOUT.unpack(rows[1])
    np.testing.assert_array_equal(parts.plain, plain[1])
    np.testing.assert_array_equal(parts.ratio, ratio[1])
    np.testing.assert_array_equal(parts.decayed, decayed[1])
    names, values = LAYOUT.record_names(), LAYOUT.record_values(rows[1])
    assert len(names) == len(values) == rows.shape[1] - 1  # all but the event time
    record = dict(zip(names, values, strict=True))
    assert record["ndcg_decayed@5/1w"] == ratio[1, 1, 3]
    assert record["rr_decayed/1h"] == decayed[1, 0, 0]


def test_live_age_and_label_set_names() -> None:
    assert RowLayout.live_age(10.0, 100.0, EVENT_TIME_BASE + 160.0) == 70.0
    assert RowLayout.live_age(10.0, 100.0, EVENT_TIME_BASE) == 10.0  # never younger
    assert LAYOUT.labelset_name(("docs", "")) == "app=docs,index=-"
    assert LAYOUT.labelset_labels(("docs", "v8")) == {"app": "docs", "index": "v8"}
    assert defaults.row_layout().labelset_name(()) == "all"
