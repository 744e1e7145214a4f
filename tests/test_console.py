"""The demo's terminal tables."""

from __future__ import annotations

import asyncio

from ragstream.config.judging import JudgeSettings, SamplingSettings
from ragstream.events import Message
from ragstream.pipeline.engine import Engine
from ragstream.report.console import render_generation, render_summary
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import judging_service
from tests.support import defaults
from tests.support.defaults import agent_settings, engine_config


def test_summary_has_one_row_per_label_set_and_window_with_aligned_columns() -> None:
    config = engine_config(label_keys=("app",), clock="event")
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
        render_generation(defaults.judge_results(), defaults.row_layout(label_keys=("app",)), 0.0)
        == "(no judged answers yet)"
    )


async def test_generation_table_shows_the_raw_and_the_corrected_ratio_with_intervals() -> None:
    config = engine_config(label_keys=("app",), clock="event")
    engine = Engine(config)
    service = judging_service(
        agent_settings(JudgeSettings(sampling=SamplingSettings(rate=0.5, max_per_second=None))),
        labelset=engine.labelsets,
        sampler_clock=engine.now,
        window_clock=engine.now,
    )
    traffic = SyntheticTraffic(SyntheticConfig(seed=4, rate=10.0, drift_at=0.0, gold_share=0.5))
    events = traffic.take(3000)
    await service.start()
    for start in range(0, len(events), 200):
        report = engine.apply([Message(e.value) for e in events[start : start + 200]])
        service.on_answers(report.answers)
        service.on_verdicts(report.verdicts)
        await asyncio.sleep(0)
    await service.stop()
    now = engine.now()
    lines = render_generation(service.results, engine.layout, now).splitlines()
    assert lines[0].split() == [
        "label", "set", "window", "judged", "faithful", "halluc.", "95%", "interval",
        "corrected", "95%", "interval", "gold",
    ]  # fmt: skip
    rows = {line.split()[0]: line for line in lines[2:]}
    assert set(rows) == {"app=docs", "app=search", "app=support"}
    for name, line in rows.items():
        read = service.results.read(now, (name.removeprefix("app="),))["5m"]
        corrected = read.corrected
        assert corrected is not None
        assert corrected.defined  # gold verdicts of both kinds on every app
        low, high = read.hallucination_interval
        assert line.split()[2:] == [
            str(read.judged),
            f"{read.means['faithfulness']:.3f}",
            f"{read.hallucination_ratio:.3f}",
            f"[{low:.2f},",
            f"{high:.2f}]",
            f"{corrected.value:.3f}",
            f"[{corrected.lower:.2f},",
            f"{corrected.upper:.2f}]",
            str(corrected.n_gold),
        ]
