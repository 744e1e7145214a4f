"""The `judge` section of the agent's configuration (SPEC §4).

Plain pydantic sections (no environment reading of their own): the agent's `Settings`
holds one as `Settings.judge`, so `RAGSTREAM_JUDGE__OPENAI__MODEL=...` works as usual.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from ragstream.config._duration import Duration
from ragstream.config._section import Section
from ragstream.config.secrets import read_secret_file

__all__ = [
    "GoldSettings",
    "JudgeSettings",
    "LabelRuleSettings",
    "LexicalSettings",
    "OpenAISettings",
    "RetrievalRuleSettings",
    "SamplingSettings",
]


class LabelRuleSettings(Section):
    """Oversample answers whose label `key` equals `value`."""

    key: str
    value: str
    rate: float = Field(ge=0.0, le=1.0)


class RetrievalRuleSettings(Section):
    """Oversample answers whose query's retrieval `metric` is below `below` (when known)."""

    metric: str = "rr"
    below: float
    rate: float = Field(ge=0.0, le=1.0)


class SamplingSettings(Section):
    """Which answers are judged, how fast, and for how much money."""

    rate: float = Field(0.05, ge=0.0, le=1.0, description="base sampling rate")
    label_rules: list[LabelRuleSettings] = Field(default_factory=list)
    retrieval_rules: list[RetrievalRuleSettings] = Field(default_factory=list)
    max_per_second: float | None = Field(5.0, gt=0, description="token-bucket rate limit")
    burst: int = Field(10, ge=1, description="token-bucket size")
    budget_per_hour: float | None = Field(None, ge=0, description="USD per UTC hour")
    budget_per_day: float | None = Field(None, ge=0, description="USD per UTC day")
    estimated_cost: float = Field(
        0.0, ge=0, description="USD charged per sample at admission until real costs are known"
    )
    salt: str = Field("", description="changes which queries the hash picks")


class LexicalSettings(Section):
    """The offline heuristic judge (`ragstream.judging.lexical`, docs/judging.md)."""

    support_threshold: float = Field(
        0.6, ge=0.0, le=1.0, description="least support of a claim against prose contexts"
    )
    min_claim_tokens: int = Field(2, ge=1, description="content tokens a claim needs")
    check_numbers: bool = Field(
        True, description="numbers, times and days the contexts never state are unsupported"
    )
    window: int = Field(3, ge=1, le=10, description="context units one claim may draw on")
    record_threshold: float = Field(
        0.1, ge=0.0, le=1.0, description="least support of a claim against a structured record"
    )
    answer_threshold: float = Field(
        0.5, ge=0.0, le=1.0, description="an answer below this faithfulness is a hallucination"
    )


class OpenAISettings(Section):
    """Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp)."""

    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key: SecretStr | None = None
    api_key_env: str = "OPENAI_API_KEY"
    api_key_file: Path | None = None
    timeout: Duration = 30.0
    max_retries: int = Field(3, ge=0, le=20)
    backoff_initial: Duration = 0.5
    backoff_max: Duration = 20.0
    retry_after_max: Duration = Field(
        60.0, description="give up instead of waiting longer than this for Retry-After"
    )
    json_mode: bool = Field(True, description="send response_format={'type': 'json_object'}")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(1024, ge=16)
    price_prompt_per_1m: float = Field(0.0, ge=0, description="USD per 1M prompt tokens")
    price_completion_per_1m: float = Field(0.0, ge=0, description="USD per 1M completion tokens")
    circuit_failures: int = Field(5, ge=1, description="consecutive failures that open it")
    circuit_cooldown: Duration = 30.0
    cache_size: int = Field(10_000, ge=0)

    def resolve_api_key(self) -> str | None:
        """The key from the settings, else the file, else the environment variable."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        if self.api_key_file is not None:
            return read_secret_file(self.api_key_file, "judge.openai.api_key_file").strip() or None
        return os.environ.get(self.api_key_env) or None


class GoldSettings(Section):
    """Gold verdicts on answers (feedback events with `answer`), compared with the judge's."""

    window: Duration | None = Field(
        None,
        description="window of the judge's sensitivity and specificity (None: the longest window)",
    )
    max_answers: int = Field(
        10_000,
        ge=1,
        description="open answers kept per partition for a gold verdict that comes later (an"
        " unsampled one with its text, until judged)",
    )
    max_waiting: int = Field(
        10_000, ge=1, description="gold verdicts per partition waiting for their answer"
    )


class JudgeSettings(Section):
    """Generation judging: sampling, the judge, its workers, and where judgments go."""

    enabled: bool = True
    kind: Literal["lexical", "openai"] = "lexical"
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    queue_size: int = Field(1000, ge=1)
    concurrency: int = Field(4, ge=1, le=256)
    drain_timeout: Duration = 10.0
    lexical: LexicalSettings = Field(default_factory=LexicalSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    feed_labels: bool = Field(
        False, description="feed per-context relevance back as retrieval labels (source judge)"
    )
    label_threshold: float = Field(0.5, ge=0.0, le=1.0)
    publish_topic: str | None = Field(None, description="Kafka topic for judgments (audit)")
    gold: GoldSettings = Field(default_factory=GoldSettings)
