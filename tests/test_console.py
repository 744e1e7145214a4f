"""The demo's terminal tables."""

from __future__ import annotations

from ragstream.events import Message
from ragstream.judging.results import JudgeResults
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.pipeline.layout import RowLayout
from ragstream.report.console import render_generation, render_summary
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic


def test_summary_has_one_row_per_label_set_and_window_with_aligned_columns() -> None:
    config = EngineConfig(label_keys=("app",), clock="event")
    engine = Engine(config, wall=lambda: 1_900_000_000.0)
    events = SyntheticTraffic(SyntheticConfig(seed=2, rate=10.0, drift_at=None)).take(600)
    engine.apply([Message(e.value) for e in events])
    lines = render_summary(engine, engine.now()).splitlines()
    assert lines[0].split()[:4] == ["label", "set", "window", "queries"]
    assert set(lines[1]) <= {"-", " "}
    rows = lines[2:]
    assert {r.split()[0] for r in rows} == {"app=docs", "app=search", "app=support"}
    assert {r.split()[1] for r in rows} == {"1m", "5m"}
    assert len({len(r) for r in lines}) == 1  # every line padded to the same width


def test_generation_table_says_when_nothing_was_judged() -> None:
    assert (
        render_generation(JudgeResults(), RowLayout(label_keys=("app",)), 0.0)
        == "(no judged answers yet)"
    )
