"""The soak benchmark's code on a short run: every event accounted for, the bounds held,
and the soak's traffic as described (no timing is asserted)."""

from __future__ import annotations

import dataclasses
import sys
import tracemalloc

import numpy as np
import orjson
import pytest

import bench.pipeline_data
from bench.pipeline_data import DataConfig, blocks
from bench.soak_report import accounting, render, rss_slope, slope, verdicts
from bench.soak_run import SOAK_LABEL_SETS, SoakConfig, SoakResult, run_soak, soak_data

N = 200_000


@pytest.fixture(scope="module")
def result() -> SoakResult:
    return run_soak(SoakConfig(events=N, every=20_000))


def test_every_event_is_delivered_once_and_counted_by_type(result: SoakResult) -> None:
    assert result.delivered == N
    assert sum(result.generated.values()) == N
    assert set(result.generated) == {"retrieval", "feedback", "answer"}
    by_type: dict[str, int] = {}
    for name, n in result.outcomes.items():
        kind, outcome = name.split("/")
        assert outcome in ("processed", "late"), name  # nothing invalid, duplicate, dropped
        by_type[kind] = by_type.get(kind, 0) + n
    assert by_type == result.generated
    assert result.joins["opened"] == result.generated["retrieval"]
    assert result.joins["labels_late"] == result.outcomes["feedback/late"] > 0
    assert accounting(result) == []


def test_samples_cover_the_run_and_the_bounds_hold(result: SoakResult) -> None:
    samples = result.samples
    assert [s.events for s in samples] == list(range(20_000, N + 1, 20_000))
    level = result.config.rate * result.config.label_ttl
    after = samples[2:]  # the open queries fill within label_ttl x rate queries
    assert all(0.9 * level <= s.open_queries <= 1.1 * level for s in after)
    assert all(s.pending_labels <= result.bounds["max_pending"] for s in samples)
    assert {s.series for s in after} == {3 * len(SOAK_LABEL_SETS)}
    assert len({s.store_mib for s in after}) == 1
    assert samples[-1].event_hours > result.config.label_ttl / 3600  # TTLs expired
    assert result.joins["finalized"] > 0
    assert all(s.scrape_kib > 0 for s in samples)
    judge = result.judge  # drained at the end: every sample judged or counted as dropped
    assert judge["recorded"] == judge["outcomes"]["ok"] > 0
    assert judge["submitted"] == sum(judge["outcomes"].values())
    assert judge["in_flight"] == 0


def test_the_report_names_each_figure_and_catches_a_miscount(result: SoakResult) -> None:
    figures = {v.figure: v for v in verdicts(result)}
    assert figures["every event counted"].ok
    assert figures["window series after warm-up"].ok
    assert figures["open queries (max after warm-up)"].ok
    assert "RSS slope" in render(result)
    lost = dataclasses.replace(result, outcomes={**result.outcomes, "answer/processed": 1})
    assert accounting(lost)
    assert not verdicts(lost)[0].ok


def test_slope_is_least_squares() -> None:
    rng = np.random.default_rng(3)
    x = np.arange(50, dtype=float)
    y = 2.5 * x + rng.normal(size=50)
    assert slope(list(zip(x.tolist(), y.tolist(), strict=True))) == pytest.approx(
        float(np.polyfit(x, y, 1)[0])
    )


def test_rss_slope_reads_the_second_half_only(result: SoakResult) -> None:
    grown = [
        dataclasses.replace(s, rss_mib=100.0 + (0.0 if s.events > N // 2 else -s.events / 1e3))
        for s in result.samples
    ]
    assert rss_slope(grown, N) == pytest.approx(0.0)


def test_the_mix_leaves_the_retrieval_events_as_they_were() -> None:
    plain = [v for b in blocks(DataConfig(), 30_000) for _, v in b]
    mixed = soak_data(SoakConfig())
    mixed = dataclasses.replace(mixed, label_sets=DataConfig().label_sets, probe_share=0.2)
    retrievals = [
        v for b in blocks(mixed, 90_000) for _, v in b if orjson.loads(v)["type"] == "retrieval"
    ]
    assert retrievals[: len(plain) - 10_000] == plain[: len(plain) - 10_000]


def test_the_mix_arrives_in_order_with_early_and_late_feedback() -> None:
    config = soak_data(SoakConfig())
    events = [orjson.loads(v) for b in blocks(config, 60_000) for _, v in b]
    assert len(events) == 60_000
    seen: set[str] = set()
    early = after_ttl = unlabeled = 0
    clicked: set[str] = set()
    retrievals = 0
    for e in events:
        if e["type"] == "retrieval":
            seen.add(e["query_id"])
            retrievals += 1
            unlabeled += "qrels" not in e
        elif e["type"] == "feedback":
            clicked.add(e["query_id"])
            early += e["query_id"] not in seen
            q = int(e["query_id"].rsplit("-", 1)[1])
            after_ttl += e["ts"] - (config.start + q / config.rate) > 900.0
        else:
            assert e["query_id"] in seen  # half a second after its retrieval
    assert early > 0
    assert after_ttl > 0
    assert 1 - len(clicked) / retrievals > 0.3  # a share never labeled at all
    assert unlabeled > 0.8 * retrievals


def test_generated_messages_take_the_memory_of_their_bytes() -> None:
    """Messages held (by open queries, in a block in hand) cost their size, as a message
    read from Kafka does: not orjson's working buffer."""
    tracemalloc.start()
    try:
        records = [r for b in blocks(soak_data(SoakConfig()), 3000) for r in b]
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    held = snapshot.filter_traces([tracemalloc.Filter(True, bench.pipeline_data.__file__)])
    traced = sum(stat.size for stat in held.statistics("filename"))
    sizes = sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in records)
    assert traced < 1.2 * sizes
