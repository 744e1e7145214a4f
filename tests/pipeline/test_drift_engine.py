"""Drift detection in the engine: sequential detectors fed final per-query values per
partition (their state moving with the partition), windowed ones evaluated on the windows."""

from __future__ import annotations

import json
import math
import zlib
from typing import Any

import numpy as np
import pytest

from ragstream.drift import Adwin, Moments, Psi, ZScore, psi, welch_z
from ragstream.drift.registry import SequentialDetector
from ragstream.events import Message
from ragstream.join import QueryView
from ragstream.pipeline.drift_config import DriftConfig, ResolvedDrift
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support import defaults
from tests.support.defaults import engine_config

START = 1_767_225_600.0
WALL = START + 86_400.0
PARTITIONS = 3
DRIFT = defaults.drift_config(
    metrics=("ndcg@10", "rr"),
    pairs=((60.0, 600.0),),
    settle=5.0,
    zscore=(("min_count", 100), ("min_reference", 300)),
    psi=(("min_count", 100), ("min_reference", 300)),
    page_hinkley=(("min_instances", 150), ("hold", 200)),
    adwin=(("hold", 200),),
)


def _config(drift: DriftConfig | None = DRIFT, **overrides: Any) -> EngineConfig:
    options: dict[str, Any] = {
        "cutoffs": (1, 10),
        "windows": (60.0, 600.0, 3600.0),
        "clock": "event",
        "label_keys": ("app",),
        "label_ttl": 5.0,
        "drift": drift,
        **overrides,
    }
    return engine_config(**options)


def _messages(n: int, drift_at: float | None = 300.0, seed: int = 4) -> list[Message]:
    traffic = SyntheticTraffic(
        SyntheticConfig(
            seed=seed,
            rate=20.0,
            start=START,
            drift_at=drift_at,
            feedback_delay=(0.5, 3.0),
        )
    )
    return [
        Message(e.value, zlib.crc32(e.key) % PARTITIONS, i, "t", e.key)
        for i, e in enumerate(traffic.take(n))
    ]


MESSAGES = _messages(60_000)  # about 11 minutes of event time, the drop at 5 min


def _feed(engine: Engine, messages: list[Message], batch: int = 500) -> list[QueryView]:
    final: list[QueryView] = []
    for i in range(0, len(messages), batch):
        final.extend(engine.apply(messages[i : i + batch]).final)
    return final


def _moved(state: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(state, allow_nan=False))
    return loaded


def test_the_sequential_detectors_see_the_drop_of_the_drifting_label_set_only() -> None:
    engine = Engine(_config(), wall=lambda: WALL)
    _feed(engine, MESSAGES)
    assert engine.sequential is not None
    reads = {(r.metric, r.detector, r.labelset): r for r in engine.sequential.read()}
    assert {ls for _, _, ls in reads} == {("support",), ("search",), ("docs",)}
    for metric in ("ndcg@10", "rr"):
        for detector in ("page_hinkley", "adwin"):
            key = (metric, detector, ("support",))
            assert engine.sequential.detections[key] >= 1, key
            for quiet in (("search",), ("docs",)):
                assert engine.sequential.detections[(metric, detector, quiet)] == 0
                assert not reads[(metric, detector, quiet)].alarm


def test_each_partitions_detectors_saw_its_final_values_in_finalization_order() -> None:
    """The engine's detector of (partition, label set, metric) is a detector fed the final
    values of that partition's queries, in the order `apply` reported them final."""
    engine = Engine(_config(), wall=lambda: WALL)
    final = _feed(engine, MESSAGES[:30_000])
    layout = engine.layout
    columns = {m: layout.index(m) for m in DRIFT.metrics}
    assert engine.sequential is not None
    checked = 0
    for partition in range(PARTITIONS):
        for labelset in (("support",), ("docs",)):
            mine = [
                q.contribution
                for q in final
                if q.partition == partition
                and q.labelset == labelset
                and q.labeled
                and q.contribution is not None
            ]
            held = engine.sequential.partitions[partition][labelset]
            for m, metric in enumerate(DRIFT.metrics):
                values = np.array([row[columns[metric]] for row in mine])
                ph = defaults.page_hinkley(min_instances=150, hold=200)
                adwin = defaults.adwin(hold=200)
                for v in values:  # one at a time: the engine fed them in batches
                    ph.update(v)
                    adwin.update(v)
                _same(held[m][0], ph)
                _same(held[m][1], adwin)
                checked += values.size
    assert checked > 3000


def test_a_moved_partition_keeps_its_detectors_and_counters_stay_monotone() -> None:
    cut = 25_000
    never = Engine(_config(), wall=lambda: WALL)
    _feed(never, MESSAGES)
    first = Engine(_config(), wall=lambda: WALL)
    second = Engine(_config(), wall=lambda: WALL)
    _feed(first, MESSAGES[:cut])
    assert first.sequential is not None
    assert second.sequential is not None
    before = dict(first.sequential.detections)
    exported = first.export_partitions({2})
    first.drop_partitions({2})
    assert 2 not in first.sequential.partitions
    assert dict(first.sequential.detections) == before  # what it saw stays counted
    second.adopt_partition(_moved(exported[2]))
    assert sum(second.sequential.detections.values()) == 0  # nothing jumps on arrival
    rest = MESSAGES[cut:]
    _feed(first, [m for m in rest if m.partition != 2])
    _feed(second, [m for m in rest if m.partition == 2])
    for engine in (never, first, second):  # every query final, whatever each clock says
        engine.finish()
    assert never.sequential is not None
    # the moved partition's detectors continue as if it had never moved
    for labelset, detectors in never.sequential.partitions[2].items():
        moved = second.sequential.partitions[2][labelset]
        for m in range(len(DRIFT.metrics)):
            _same(moved[m][0], detectors[m][0])
            _same(moved[m][1], detectors[m][1])
    # between them, the two engines counted what the one that never moved counted
    total = first.sequential.detections + second.sequential.detections
    assert total == never.sequential.detections
    assert sum(total.values()) > 0


def _detectors(snapshot: dict[str, Any]) -> tuple[Any, ...]:
    """The sequential detectors of a whole-engine snapshot: their detection counts and
    each partition's detectors."""
    held = {p: r["drift"] for p, r in snapshot["partitions"].items()}
    return snapshot["drift"]["detections"], held


def _same(a: SequentialDetector, b: SequentialDetector) -> None:
    """ADWIN exactly; Page-Hinkley up to rounding (batches sum in another order)."""
    if isinstance(a, Adwin):
        assert a.snapshot() == b.snapshot()
    else:
        x, y = a.snapshot(), b.snapshot()
        assert x.keys() == y.keys()
        for key in x:
            if isinstance(x[key], float):
                assert x[key] == pytest.approx(y[key], rel=1e-9, abs=1e-9), key
            else:
                assert x[key] == y[key], key


def test_a_partition_kept_with_other_drift_settings_starts_its_detectors_afresh() -> None:
    first = Engine(_config(), wall=lambda: WALL)
    _feed(first, MESSAGES[:20_000])
    other = defaults.drift_config(metrics=("rr",), pairs=DRIFT.pairs, settle=DRIFT.settle)
    second = Engine(_config(drift=other), wall=lambda: WALL)
    second.adopt_partition(_moved(first.export_partitions({1})[1]))
    assert second.sequential is not None
    assert 1 not in second.sequential.partitions  # afresh ...
    assert second.store.partitions() == [1]  # ... but the windows were adopted
    off = Engine(_config(drift=None), wall=lambda: WALL)
    off.adopt_partition(_moved(first.export_partitions({1})[1]))
    assert off.sequential is None
    assert off.store.partitions() == [1]
    back = Engine(_config(), wall=lambda: WALL)
    back.adopt_partition(_moved(off.export_partitions({1})[1]))  # "drift": None
    assert back.sequential is not None
    assert back.sequential.partitions == {}


def test_snapshot_and_restore_continue_the_detectors_exactly() -> None:
    engine = Engine(_config(), wall=lambda: WALL)
    _feed(engine, MESSAGES[:25_000])
    assert engine.windowed_drift is not None
    engine.windowed_drift.evaluate(engine.store, engine.now())
    restored = Engine.restore(_config(), _moved(engine.snapshot()), wall=lambda: WALL)
    for e in (engine, restored):
        _feed(e, MESSAGES[25_000:])
        assert e.windowed_drift is not None
        e.windowed_drift.evaluate(e.store, e.now())
    mine, theirs = engine.snapshot(), restored.snapshot()
    assert _detectors(theirs) == _detectors(mine)
    mine, theirs = mine["drift"], theirs["drift"]
    for kind in ("zscore", "psi"):  # the restored windows' sums differ in rounding only
        a, b = mine["windowed"][kind], theirs["windowed"][kind]
        assert {k: v for k, v in a.items() if k != "score"} == {
            k: v for k, v in b.items() if k != "score"
        }
        np.testing.assert_allclose(
            np.array(a["score"], dtype=float), np.array(b["score"], dtype=float), rtol=1e-9
        )
        assert sum(a["alarm"]) > 0  # the alarms were raised, and restored raised
    assert engine.sequential is not None
    assert restored.sequential is not None
    assert restored.sequential.detections == engine.sequential.detections


def test_the_windowed_evaluation_is_ragstream_drift_on_the_same_totals() -> None:
    """Scores from `welch_z` and `psi` on the totals the store gives without the newest
    `settle` seconds; alarms as one `ZScore` / `Psi` per element fed the same totals."""
    engine = Engine(_config(), wall=lambda: WALL)
    assert engine.windowed_drift is not None
    layout = engine.layout
    cols = [layout.index(m) for m in DRIFT.metrics]
    hist = [layout.hist_columns.index(m) for m in DRIFT.metrics]
    z_singles: dict[tuple[Any, ...], ZScore] = {}
    p_singles: dict[tuple[Any, ...], Psi] = {}
    alarms = 0
    for i in range(0, len(MESSAGES), 2000):
        engine.apply(MESSAGES[i : i + 2000])
        now = engine.now()
        read = engine.windowed_drift.evaluate(engine.store, now)
        until = engine.windowed_drift.until(engine.spec, read.pairs[0], now)
        # both windows end at the long window's last bucket boundary before now - settle
        width = engine.spec.width(600.0)
        assert until + engine.spec.width(60.0) / 2 == (now - DRIFT.settle) // width * width
        totals = engine.store.read(now, until=until, histograms=True)
        assert totals.histograms is not None
        assert read.labelsets == totals.labelsets
        assert (totals.count[:, 1] >= totals.count[:, 0]).all()  # nested: no reference < 0
        assert (totals.histograms[:, 1] >= totals.histograms[:, 0]).all()
        zscore, psi_result = read.results
        assert (zscore.detector, psi_result.detector) == ("zscore", "psi")
        for li, labelset in enumerate(totals.labelsets):
            for m, column in enumerate(cols):
                short = Moments(*(a[li, 0, column] for a in _moments(totals)))
                long = Moments(*(a[li, 1, column] for a in _moments(totals)))
                z = float(welch_z(short, long, min_count=100, min_reference=300))
                np.testing.assert_allclose(zscore.score[li, 0, m], z, rtol=1e-12)
                h_s = totals.histograms[li, 0, hist[m]]
                h_l = totals.histograms[li, 1, hist[m]]
                p = float(psi(h_s, h_l, min_count=100, min_reference=300))
                np.testing.assert_allclose(psi_result.score[li, 0, m], p, rtol=1e-12)
                det_z = z_singles.setdefault(
                    (labelset, m), defaults.zscore(threshold=5.0, min_count=100, min_reference=300)
                )
                det_p = p_singles.setdefault(
                    (labelset, m), defaults.psi(threshold=0.1, min_count=100, min_reference=300)
                )
                det_z.update(short, long)
                det_p.update(h_s, h_l)
                assert bool(zscore.alarm[li, 0, m]) == det_z.alarm
                assert bool(psi_result.alarm[li, 0, m]) == det_p.alarm
                assert int(zscore.detections[li, 0, m]) == det_z.detections
                alarms += int(det_z.alarm)
    assert alarms > 0  # the drop raised the z-score's alarm


def _moments(totals: Any) -> tuple[Any, Any, Any]:
    return totals.count, totals.total, totals.total_sq


def test_no_false_alarm_without_a_drop_at_the_default_settings() -> None:
    """(The lower volume floors of the other tests are for speed: PSI's noise at 100
    values is over its threshold, docs/drift.md.)"""
    at_defaults = defaults.drift_config(pairs=((60.0, 600.0),), settle=5.0)
    engine = Engine(_config(drift=at_defaults), wall=lambda: WALL)
    assert engine.windowed_drift is not None
    assert engine.sequential is not None
    quiet = _messages(60_000, drift_at=None, seed=11)
    judged = 0
    for i in range(0, len(quiet), 1000):
        engine.apply(quiet[i : i + 1000])
        read = engine.windowed_drift.evaluate(engine.store, engine.now())
        for result in read.results:
            assert not result.alarm.any()
            judged += int((~np.isnan(result.score)).sum())
    assert judged > 200  # evaluations with enough volume for a signal
    assert sum(engine.sequential.detections.values()) == 0


def test_drift_settings_that_do_not_fit_the_engine_are_refused() -> None:
    layout = defaults.row_layout(cutoffs=(1, 10))
    windows = (60.0, 600.0)
    with pytest.raises(ValueError, match="ndcg@5"):
        ResolvedDrift.of(defaults.drift_config(metrics=("ndcg@5",)), layout, windows)
    with pytest.raises(ValueError, match="1h not a window"):
        ResolvedDrift.of(defaults.drift_config(pairs=((60.0, 3600.0),)), layout, windows)
    with pytest.raises(ValueError, match="must be shorter"):
        ResolvedDrift.of(defaults.drift_config(pairs=((600.0, 60.0),)), layout, windows)
    with pytest.raises(ValueError, match="settle"):
        ResolvedDrift.of(
            defaults.drift_config(pairs=((60.0, 600.0),), settle=60.0), layout, windows
        )
    resolved = ResolvedDrift.of(
        defaults.drift_config(pairs=((60.0, 600.0),), settle=5), layout, windows
    )
    assert resolved.columns == (layout.index("ndcg@10"), layout.index("rr"))
    assert [(p.short_name, p.long_name) for p in resolved.pairs] == [("1m", "10m")]
    assert math.isfinite(resolved.config.settle)


def test_the_reference_holds_only_queries_older_than_the_short_window() -> None:
    """Read without the newest `settle`, the long window (60 s buckets here) must not keep
    the queries the short one (6 s buckets) left out: the reference is long minus short."""
    engine = Engine(_config(drift=defaults.drift_config(pairs=((60.0, 600.0),), settle=5.0)))
    assert engine.windowed_drift is not None
    layout = engine.layout
    now = START + 3000.0
    old = np.arange(now - 400.0, now - 100.0, 1.0)  # inside the long window only
    new = np.arange(now - 4.0, now, 0.5)  # newer than now - settle
    times = np.concatenate([old, new])
    rows = np.full((times.size, layout.width), np.nan)
    rows[:, layout.index("rr")] = 0.5
    engine.store.add(0, ("support",), now, times, rows)
    pair = engine.windowed_drift.resolved.pairs[0]
    totals = engine.store.read(now, until=engine.windowed_drift.until(engine.spec, pair, now))
    rr = layout.index("rr")
    short, long = totals.count[0, pair.short, rr], totals.count[0, pair.long, rr]
    assert short == 0  # the newest queries left out, the old ones outside it
    assert long - short == old.size  # the reference: the old queries, none of the new
