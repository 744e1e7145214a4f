"""Library objects at the settings' defaults, for the tests that need many of them.

The defaults live only in the settings (`ragstream.config`); the library classes take
every argument. A test states the values it is about and takes the rest from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from ragstream.checkpoint import StateTopic
from ragstream.config import DriftSettings, JoinSettings, Settings, TraceSettings, WindowSettings
from ragstream.config.drift import AdwinSettings, PageHinkleySettings, PsiSettings, ZScoreSettings
from ragstream.config.judging import GoldSettings, JudgeSettings, LexicalSettings, OpenAISettings
from ragstream.config.settings import KafkaSettings, ResultsSettings, StateSettings
from ragstream.drift import (
    DETECTORS,
    Adwin,
    PageHinkley,
    Psi,
    PsiBank,
    PsiParams,
    ZScore,
    ZScoreBank,
    ZScoreParams,
)
from ragstream.join import LabelJoin
from ragstream.judging.cache import JudgmentCache
from ragstream.judging.circuit import CircuitBreaker
from ragstream.judging.http import ChatClient
from ragstream.judging.lexical import LexicalJudge
from ragstream.judging.openai_judge import OpenAIJudge, TokenAccount
from ragstream.judging.results import JudgeResults
from ragstream.pipeline.drift_config import DriftConfig
from ragstream.pipeline.engine import EngineConfig
from ragstream.pipeline.row_layout import RowLayout
from ragstream.sinks.results import ResultSampler, SampleMode
from ragstream.sources.kafka import KafkaSourceConfig
from ragstream.traces import TraceMapping
from ragstream.windows import WindowSpec
from ragstream.wiring.engine import engine_config as engine_config_from
from ragstream.wiring.engine import trace_mapping as mapping_of
from ragstream.wiring.kafka import source_config

__all__ = [
    "adwin",
    "agent_settings",
    "chat_client",
    "circuit_breaker",
    "drift_config",
    "engine_config",
    "judge_results",
    "kafka_source_config",
    "label_join",
    "lexical_judge",
    "openai_judge",
    "page_hinkley",
    "psi",
    "psi_bank",
    "result_sampler",
    "row_layout",
    "state_topic",
    "trace_mapping",
    "window_spec",
    "zscore",
    "zscore_bank",
]

_ENGINE = engine_config_from(Settings(), drift=False)
"""The agent's engine at the default settings, drift detection off (a test that watches
drift gives its own `drift`)."""
_DRIFT = DriftSettings()


def engine_config(**overrides: Any) -> EngineConfig:
    """The engine's configuration at the defaults, with ``overrides`` (its fields)."""
    return dataclasses.replace(_ENGINE, **overrides)


def _fields(section: object, *names: str) -> dict[str, Any]:
    """The settings ``names`` of ``section``, by name."""
    return {name: getattr(section, name) for name in names}


def label_join(**overrides: Any) -> LabelJoin:
    """One partition's label join at the `join` defaults, with ``overrides``; its memory
    of final ids follows `max_open`, as the engine's does."""
    names = ("label_ttl", "pending_ttl", "max_open", "max_pending")
    arguments = _fields(JoinSettings(), *names) | overrides
    arguments.setdefault("recent_final", arguments["max_open"])
    return LabelJoin(**arguments)


def drift_config(
    *,
    metrics: tuple[str, ...] = tuple(_DRIFT.metrics),
    pairs: tuple[tuple[float, float], ...] = tuple(_DRIFT.window_pairs),
    settle: float = _DRIFT.settle,
    **detectors: Iterable[tuple[str, Any]] | None,
) -> DriftConfig:
    """Drift detection at the `drift` defaults; per registered detector (keyword of its
    name) the parameters that differ from its defaults as (name, value) pairs, or None to
    leave it off (not given: on at its defaults)."""
    unknown = set(detectors) - set(DETECTORS)
    if unknown:
        raise TypeError(f"no detector {sorted(unknown)}")
    on = []
    for name in DETECTORS:
        given = detectors.get(name, ())
        if given is not None:
            defaults = getattr(_DRIFT, name).params()
            on.append((name, dataclasses.replace(defaults, **dict(given))))
    return DriftConfig(metrics=metrics, pairs=pairs, settle=settle, detectors=tuple(on))


def zscore(**overrides: Any) -> ZScore:
    """A `ZScore` at the `drift.zscore` defaults, with ``overrides``."""
    return ZScore(**dataclasses.asdict(ZScoreSettings().params()) | overrides)


def psi(**overrides: Any) -> Psi:
    """A `Psi` at the `drift.psi` defaults, with ``overrides``."""
    return Psi(**dataclasses.asdict(PsiSettings().params()) | overrides)


def page_hinkley(**overrides: Any) -> PageHinkley:
    """A `PageHinkley` at the `drift.page_hinkley` defaults, with ``overrides``."""
    return PageHinkley(**dataclasses.asdict(PageHinkleySettings().params()) | overrides)


def adwin(**overrides: Any) -> Adwin:
    """An `Adwin` at the `drift.adwin` defaults, with ``overrides``."""
    return Adwin(**dataclasses.asdict(AdwinSettings().params()) | overrides)


def zscore_bank(cells: tuple[int, ...] = (), **overrides: Any) -> ZScoreBank:
    """A `ZScoreBank` over ``cells`` at the `drift.zscore` defaults, with ``overrides``."""
    return ZScoreBank(
        cells, ZScoreParams(**dataclasses.asdict(ZScoreSettings().params()) | overrides)
    )


def psi_bank(cells: tuple[int, ...] = (), **overrides: Any) -> PsiBank:
    """A `PsiBank` over ``cells`` at the `drift.psi` defaults, with ``overrides``."""
    return PsiBank(cells, PsiParams(**dataclasses.asdict(PsiSettings().params()) | overrides))


def trace_mapping(**overrides: Any) -> TraceMapping:
    """How spans become events at the `traces` defaults, with ``overrides``."""
    return dataclasses.replace(mapping_of(TraceSettings()), **overrides)


def row_layout(**overrides: Any) -> RowLayout:
    """The agent's row layout at the `metrics` and `labels` defaults, with ``overrides``."""
    arguments: dict[str, Any] = {
        "cutoffs": _ENGINE.cutoffs,
        "half_lives": _ENGINE.half_lives,
        "label_keys": _ENGINE.label_keys,
        **overrides,
    }
    return RowLayout(**arguments)


def window_spec(**overrides: Any) -> WindowSpec:
    """A window spec at the `windows` and `metrics` defaults (the agent's windows, buckets,
    histogram bins and future tolerance), with ``overrides``; give its ``columns``."""
    arguments: dict[str, Any] = {
        "windows": _ENGINE.windows,
        "buckets": _ENGINE.buckets,
        "bins": _ENGINE.bins,
        "horizon": _ENGINE.future_tolerance,
        **overrides,
    }
    return WindowSpec(**arguments)


def judge_results(**overrides: Any) -> JudgeResults:
    """The judge's windows at the agent's window and `judge.gold` defaults, with
    ``overrides``."""
    arguments: dict[str, Any] = {
        "windows": _ENGINE.windows,
        "buckets": _ENGINE.buckets,
        "bins": _ENGINE.bins,
        "horizon": _ENGINE.future_tolerance,
        "gold_window": GoldSettings().window,
        **overrides,
    }
    return JudgeResults(**arguments)


def kafka_source_config(**overrides: Any) -> KafkaSourceConfig:
    """A Kafka consumer's configuration at the `kafka` defaults (plaintext, no client
    options), with ``overrides``; give its ``bootstrap_servers`` and ``topics``."""
    return dataclasses.replace(source_config(KafkaSettings(), {}), **overrides)


def lexical_judge(**overrides: Any) -> LexicalJudge:
    """The lexical judge at the `judge.lexical` defaults, with ``overrides``."""
    return LexicalJudge(**{**LexicalSettings().model_dump(), **overrides})


def chat_client(base_url: str, model: str, **overrides: Any) -> ChatClient:
    """A chat-completions client at the `judge.openai` defaults, with ``overrides``."""
    names = "timeout max_retries backoff_initial backoff_max retry_after_max json_mode"
    names += " temperature max_tokens"
    return ChatClient(base_url, model, **_fields(OpenAISettings(), *names.split()) | overrides)


def circuit_breaker(**overrides: Any) -> CircuitBreaker:
    """A circuit breaker at the `judge.openai` defaults, with ``overrides``."""
    o = OpenAISettings()
    arguments: dict[str, Any] = {
        "failures": o.circuit_failures,
        "cooldown": o.circuit_cooldown,
        **overrides,
    }
    return CircuitBreaker(**arguments)


def openai_judge(client: ChatClient, **overrides: Any) -> OpenAIJudge:
    """A judge on ``client`` with the `judge.openai` defaults' breaker, cache and prices,
    with ``overrides``."""
    o = OpenAISettings()
    arguments: dict[str, Any] = {
        "breaker": circuit_breaker(),
        "cache": JudgmentCache(o.cache_size),
        "account": TokenAccount(o.price_prompt_per_1m, o.price_completion_per_1m),
        **overrides,
    }
    return OpenAIJudge(client, **arguments)


def agent_settings(judge: JudgeSettings, windows: Sequence[float] = (), **join: Any) -> Settings:
    """The agent's settings with the ``judge`` section, the window sizes ``windows`` (none
    given: the default ones) and the ``join`` settings given; the rest at the defaults."""
    sections: dict[str, Any] = {"judge": judge, "join": JoinSettings(**join)}
    if windows:
        sections["windows"] = WindowSettings(sizes=list(windows))
    return Settings(**sections)


def result_sampler(mode: SampleMode, **overrides: Any) -> ResultSampler:
    """A results sampler in ``mode`` at the `results` defaults (the metric only for
    `below`), with ``overrides``."""
    r = ResultsSettings()
    arguments: dict[str, Any] = {
        "share": r.share,
        "metric": r.metric if mode == "below" else None,
        "threshold": r.threshold,
        **overrides,
    }
    return ResultSampler(mode, **arguments)


def state_topic(topic: str, bootstrap_servers: str, **overrides: Any) -> StateTopic:
    """A state topic's client at the `kafka` and `state` defaults, with ``overrides``."""
    arguments: dict[str, Any] = {
        "client_id": KafkaSettings().client_id,
        "replication_factor": StateSettings().replication_factor,
        **overrides,
    }
    return StateTopic(topic, bootstrap_servers=bootstrap_servers, **arguments)
