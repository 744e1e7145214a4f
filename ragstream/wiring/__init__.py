"""Builds the library objects from the settings: the one place where configuration meets
code (with the command line, which reads the settings)."""

from ragstream.wiring.engine import drift_config, engine_config
from ragstream.wiring.judging import build_judge, engine_judging, judging_service, replay_judging
from ragstream.wiring.kafka import dead_letters, kafka_source, state_handover

__all__ = [
    "build_judge",
    "dead_letters",
    "drift_config",
    "engine_config",
    "engine_judging",
    "judging_service",
    "kafka_source",
    "replay_judging",
    "state_handover",
]
