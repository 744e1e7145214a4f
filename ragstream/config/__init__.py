"""Configuration, built at the edge: file, then environment, then flags."""

from ragstream.config._duration import Duration
from ragstream.config.explain import describe_sources, explain_error, render_settings
from ragstream.config.secrets import SecretFileError, read_secret_file
from ragstream.config.settings import (
    DriftSettings,
    ExemplarSettings,
    HttpSettings,
    JoinSettings,
    KafkaSecurity,
    LabelSettings,
    MetricSettings,
    Settings,
    TraceSettings,
    WindowSettings,
    load_settings,
)
from ragstream.durations import format_duration, parse_duration

__all__ = [
    "DriftSettings",
    "Duration",
    "ExemplarSettings",
    "HttpSettings",
    "JoinSettings",
    "KafkaSecurity",
    "LabelSettings",
    "MetricSettings",
    "SecretFileError",
    "Settings",
    "TraceSettings",
    "WindowSettings",
    "describe_sources",
    "explain_error",
    "format_duration",
    "load_settings",
    "parse_duration",
    "read_secret_file",
    "render_settings",
]
