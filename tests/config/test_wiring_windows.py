"""The judge's windows are the agent's: every `windows` setting reaches them."""

from __future__ import annotations

from ragstream.config import load_settings
from ragstream.pipeline.engine import Engine
from ragstream.wiring import engine_config, engine_judging, replay_judging


def test_the_judge_windows_follow_the_window_settings() -> None:
    windows = {"sizes": ["1m", "10m"], "buckets": 12, "future_tolerance": "5m"}
    settings = load_settings(overrides={"windows": windows, "metrics": {"histogram_bins": 8}})
    engine = Engine(engine_config(settings))
    agent = engine_judging(settings, engine)
    replay = replay_judging(settings, engine.now, engine.labelsets, queue_size=10)
    assert agent is not None
    assert replay is not None
    for service in (agent, replay):
        spec = service.results.spec
        assert (spec.windows, spec.buckets, spec.bins) == ((60.0, 600.0), 12, 8)
        assert spec.horizon == 300.0 == engine.spec.horizon
