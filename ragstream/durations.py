"""Durations as people write them in configuration: `90s`, `5m`, `1h`, `24h`, `7d` -- the
one parser and formatter of the project -- and the decay rate of a half-life.

Plain Python: the metric kernels import it, and `ragstream eval` should not pay for
pydantic. The pydantic field type built on these functions is `ragstream.config.Duration`."""

from __future__ import annotations

import math
import re

__all__ = ["decay_rate", "format_duration", "parse_duration"]

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")


def parse_duration(value: object) -> float:
    """Seconds from `"5m"`, `"1.5h"`, `"250ms"`, or a plain number of seconds."""
    if isinstance(value, bool):
        raise ValueError("a duration must be a number of seconds or a string like '5m'")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        match = _PATTERN.match(value)
        if match is None and _PATTERN.match(value.strip().removeprefix("-")) is not None:
            raise ValueError(f"{value!r} is a negative duration: a duration is >= 0, e.g. '10m'")
        if match is None:
            raise ValueError(
                f"cannot read {value!r} as a duration: use a number and a unit "
                "(ms, s, m, h, d, w), e.g. '90s', '5m', '1h'"
            )
        seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    else:
        raise ValueError("a duration must be a number of seconds or a string like '5m'")
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise ValueError(f"a duration must be finite and >= 0, got {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest exact form in weeks, hours, minutes, seconds or milliseconds: 60 ->
    `1m`, 86400 -> `24h`, 604800 -> `1w`, 90 -> `90s`, 0.25 -> `250ms`.

    It names windows (`window="24h"`) and half-lives (`half_life="1w"`) in the exported
    labels, and writes durations back into configuration. Days are read (`7d`) but never
    written, so that a day-long window is `24h`, as Prometheus users write it."""
    for unit in ("w", "h", "m", "s"):
        count = seconds / _UNITS[unit]
        if count >= 1 and count == int(count):
            return f"{int(count)}{unit}"
    millis = seconds * 1000.0
    if millis == int(millis):
        return f"{int(millis)}ms"
    return f"{seconds}s"


def decay_rate(half_life_seconds: float) -> float:
    """lambda = ln 2 / half_life; an infinite half-life gives 0 (no decay)."""
    half_life = float(half_life_seconds)
    if math.isnan(half_life) or half_life <= 0:
        raise ValueError(f"half-life must be > 0 seconds, got {half_life_seconds!r}")
    return math.log(2.0) / half_life
