"""`ragstream demo` assembled: the engine on paced synthetic traffic with the lexical judge,
around one `Agent` (no Kafka)."""

from __future__ import annotations

from ragstream.agent import Agent
from ragstream.config import JoinSettings, LabelSettings
from ragstream.config.judging import JudgeSettings, SamplingSettings
from ragstream.judging.service import JudgingService, engine_lookup
from ragstream.pipeline.engine import Engine
from ragstream.sources.paced import PacedSyntheticSource
from ragstream.sources.synthetic import SyntheticConfig
from ragstream.wiring.engine import engine_config_of
from ragstream.wiring.judging import judging_service

__all__ = ["demo_agent"]


def demo_agent(
    *,
    rate: float,
    drift_at: float,
    label_ttl: float,
    judge_rate: float,
    seed: int,
    host: str,
    port: int,
) -> tuple[Agent, JudgingService]:
    """The demo's agent (three apps' traffic at `rate` queries a second, the quality of
    app=support dropping after `drift_at` seconds) and its judging service."""
    engine = Engine(
        engine_config_of(
            labels=LabelSettings(keys=["app", "index"]),
            join=JoinSettings(label_ttl=label_ttl),
            clock="wall",
        )
    )
    traffic = SyntheticConfig(seed=seed, rate=rate, drift_at=drift_at, feedback_delay=(1.0, 15.0))
    judge = JudgeSettings(sampling=SamplingSettings(rate=judge_rate, max_per_second=100.0))
    judging = judging_service(judge, labelset=engine.labelsets, lookup=engine_lookup(engine, []))
    source = PacedSyntheticSource(traffic)
    return Agent(engine, source, host=host, port=port, judging=judging), judging
