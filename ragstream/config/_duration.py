"""The pydantic field type of a duration, built on `ragstream.durations`."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer

from ragstream.durations import format_duration, parse_duration

__all__ = ["Duration"]

Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
"""A pydantic field type: accepts `"5m"` or seconds, holds seconds, writes `"5m"` to JSON."""
