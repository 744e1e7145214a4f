"""The base of every configuration section: unknown keys refused, values frozen."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Section"]


class Section(BaseModel):
    """A section of the settings (`Settings.kafka`, `Settings.judge.openai`, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
