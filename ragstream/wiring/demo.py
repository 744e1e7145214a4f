"""`ragstream demo` assembled: the engine on paced synthetic traffic with the lexical judge,
around one `Agent` (no Kafka). Windows, metrics and drift detection come from the settings;
the traffic, its labels and the label TTL are the demo's own."""

from __future__ import annotations

from ragstream.agent import Agent
from ragstream.config import JoinSettings, LabelSettings, Settings
from ragstream.config.judging import JudgeSettings, SamplingSettings
from ragstream.judging.service import JudgingService, engine_lookup
from ragstream.pipeline.engine import Engine
from ragstream.sources.paced import PacedSyntheticSource
from ragstream.sources.synthetic import SyntheticConfig
from ragstream.wiring.engine import engine_config
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
    settings: Settings | None = None,
    gold_share: float = 0.0,
    trace_ids: bool = False,
) -> tuple[Agent, JudgingService]:
    """The demo's agent (three apps' traffic at `rate` queries a second, the quality of
    app=support dropping after `drift_at` seconds, a `gold_share` of the answers with a
    reviewer's gold verdict within the label TTL, query ids that are OpenTelemetry trace
    ids with `trace_ids`, so that the final-query histograms carry exemplars) and its
    judging service; `settings` give the windows, metrics and drift detection (default:
    the defaults)."""
    judge = JudgeSettings(sampling=SamplingSettings(rate=judge_rate, max_per_second=100.0))
    settings = (settings or Settings()).model_copy(
        update={
            "labels": LabelSettings(keys=["app", "index"]),
            "join": JoinSettings(label_ttl=label_ttl),
            "judge": judge,
        }
    )
    engine = Engine(engine_config(settings, clock="wall"))
    late = max(0.0, min(30.0, label_ttl / 2))  # gold verdicts come well within the TTL
    traffic = SyntheticConfig(
        seed=seed,
        rate=rate,
        drift_at=drift_at,
        feedback_delay=(1.0, 15.0),
        gold_share=gold_share,
        gold_delay=(min(1.0, late), late),
        trace_ids=trace_ids,
    )
    judging = judging_service(settings, labelset=engine.labelsets, lookup=engine_lookup(engine, []))
    source = PacedSyntheticSource(traffic)
    return Agent(engine, source, host=host, port=port, judging=judging), judging
