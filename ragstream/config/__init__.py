"""Configuration, built at the edge: file, then environment, then flags."""

from ragstream.config.drift import DriftSettings
from ragstream.config.explain import describe_sources, explain_error, render_settings
from ragstream.config.secrets import SecretFileError, read_secret_file
from ragstream.config.settings import (
    ExemplarSettings,
    HttpSettings,
    JoinSettings,
    KafkaSecurity,
    LabelSettings,
    Settings,
    TraceSettings,
    WindowSettings,
    load_settings,
)

__all__ = [
    "DriftSettings",
    "ExemplarSettings",
    "HttpSettings",
    "JoinSettings",
    "KafkaSecurity",
    "LabelSettings",
    "SecretFileError",
    "Settings",
    "TraceSettings",
    "WindowSettings",
    "describe_sources",
    "explain_error",
    "load_settings",
    "read_secret_file",
    "render_settings",
]
