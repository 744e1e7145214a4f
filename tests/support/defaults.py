"""Library objects at the settings' defaults, for the tests that need many of them.

The defaults live only in the settings (`ragstream.config`); the library classes take
every argument. A test states the values it is about and takes the rest from here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ragstream.config import DriftSettings, JoinSettings
from ragstream.join import LabelJoin
from ragstream.pipeline.engine import EngineConfig
from ragstream.wiring.engine import engine_config_of

__all__ = ["engine_config", "label_join"]

_ENGINE = engine_config_of(drift=DriftSettings(enabled=False))
"""The agent's engine at the default settings, drift detection off (a test that watches
drift gives its own `drift`)."""


def engine_config(**overrides: Any) -> EngineConfig:
    """The engine's configuration at the defaults, with ``overrides`` (its fields)."""
    return dataclasses.replace(_ENGINE, **overrides)


def label_join(**overrides: Any) -> LabelJoin:
    """One partition's label join at the `join` defaults, with ``overrides``; its memory
    of final ids follows `max_open`, as the engine's does."""
    join = JoinSettings()
    arguments: dict[str, Any] = {
        "label_ttl": join.label_ttl,
        "pending_ttl": join.pending_ttl,
        "max_open": join.max_open,
        "max_pending": join.max_pending,
        **overrides,
    }
    arguments.setdefault("recent_final", arguments["max_open"])
    return LabelJoin(**arguments)
