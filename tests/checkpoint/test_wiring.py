"""The `state` settings build the hand-over `run` uses (environment, defaults, limits)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragstream.config import load_settings
from ragstream.pipeline.engine import Engine
from ragstream.wiring import engine_config, state_handover


def test_the_topic_is_derived_from_the_group_and_the_interval_read_as_a_duration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGSTREAM_KAFKA__GROUP_ID", "support-eval")
    monkeypatch.setenv("RAGSTREAM_STATE__CHECKPOINT_INTERVAL", "5s")
    settings = load_settings()
    handover = state_handover(settings, Engine(engine_config(settings)))
    assert handover is not None
    assert handover.topic.topic == "support-eval-state"
    assert handover.interval == 5.0
    assert handover.chunk_bytes == 512 * 1024


def test_a_named_topic_and_switching_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(overrides={"state": {"topic": "shared-state", "chunk_bytes": 4096}})
    handover = state_handover(settings, Engine(engine_config(settings)))
    assert handover is not None
    assert handover.topic.topic == "shared-state"
    assert handover.chunk_bytes == 4096
    monkeypatch.setenv("RAGSTREAM_STATE__ENABLED", "false")
    off = load_settings()
    assert state_handover(off, Engine(engine_config(off))) is None


@pytest.mark.parametrize(
    "state",
    [{"chunk_bytes": 100}, {"checkpoint_interval": 0}, {"replication_factor": 0}, {"x": 1}],
)
def test_values_that_cannot_work_are_refused(state: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        load_settings(overrides={"state": state})
