"""The agent's configuration, built only at the edge (CLI and app wiring).

Precedence, highest first: command-line flags, environment (`RAGSTREAM_` prefix, `__` for
nesting, e.g. `RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS`), the configuration file (YAML or TOML),
then the defaults below. Secrets are `SecretStr`: they print as `**********`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from ragstream.config._duration import Duration
from ragstream.config._section import Section
from ragstream.config.drift import DriftSettings
from ragstream.config.judging import JudgeSettings
from ragstream.config.secrets import SecretFileError, read_secret_file
from ragstream.durations import format_duration
from ragstream.events.trace_ids import TraceField
from ragstream.metrics import parse_metric

__all__ = [
    "ExemplarSettings",
    "HttpSettings",
    "JoinSettings",
    "KafkaSecurity",
    "KafkaSettings",
    "LabelSettings",
    "MetricSettings",
    "ResultsSettings",
    "Settings",
    "StateSettings",
    "TraceSettings",
    "WindowSettings",
    "load_settings",
]


class KafkaSecurity(Section):
    """TLS and SASL as Kafka clients configure them. Each secret is a value or a file (a
    mounted Kubernetes secret), not both; files are read when the Kafka clients are built
    (`resolve_*`), never by `check-config`. OAUTHBEARER takes its token from a file or a
    token endpoint; `ssl_certfile` and `ssl_keyfile` are the client's own (mTLS)."""

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    sasl_password_file: Path | None = None
    sasl_oauth_token_file: Path | None = Field(
        None, description="OAUTHBEARER: a file holding the token, read again when it changes"
    )
    sasl_oauth_token_endpoint: str | None = Field(
        None, description="OAUTHBEARER: an OAuth 2.0 token endpoint (client credentials grant)"
    )
    sasl_oauth_client_id: str | None = None
    sasl_oauth_client_secret: SecretStr | None = None
    sasl_oauth_client_secret_file: Path | None = None
    sasl_oauth_scope: str | None = Field(None, description="the scope asked of the endpoint")
    sasl_oauth_extensions: dict[str, str] = Field(
        default_factory=dict,
        description="OAUTHBEARER: SASL extensions sent with the token (Confluent Cloud's"
        " logicalCluster and identityPoolId)",
    )
    ssl_cafile: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_password: SecretStr | None = None
    ssl_password_file: Path | None = None
    ssl_check_hostname: bool = Field(
        True,
        description=(
            "verify that the broker's certificate names the host connected to; false only for"
            " brokers whose certificates do not name their advertised hosts"
        ),
    )

    @model_validator(mode="after")
    def _sasl_complete(self) -> KafkaSecurity:
        for value, file in (
            ("sasl_password", "sasl_password_file"),
            ("sasl_oauth_client_secret", "sasl_oauth_client_secret_file"),
            ("ssl_password", "ssl_password_file"),
        ):
            if getattr(self, value) is not None and getattr(self, file) is not None:
                raise ValueError(f"kafka.security: give {value} or {file}, not both")
        if not self.protocol.startswith("SASL"):
            return self
        if self.sasl_mechanism == "OAUTHBEARER":
            return self._oauth_complete()
        if (
            self.sasl_mechanism is None
            or self.sasl_username is None
            or (self.sasl_password is None and self.sasl_password_file is None)
        ):
            raise ValueError(
                f"kafka.security: protocol {self.protocol} needs sasl_mechanism, sasl_username"
                " and sasl_password (or sasl_password_file)"
            )
        return self

    def _oauth_complete(self) -> KafkaSecurity:
        file, endpoint = self.sasl_oauth_token_file, self.sasl_oauth_token_endpoint
        if (file is None) == (endpoint is None):
            raise ValueError(
                "kafka.security: sasl_mechanism OAUTHBEARER needs sasl_oauth_token_file or"
                " sasl_oauth_token_endpoint (one of them)"
            )
        if endpoint is not None:
            if not endpoint.startswith(("https://", "http://")):
                raise ValueError(
                    f"kafka.security: sasl_oauth_token_endpoint {endpoint!r} is not an http(s) URL"
                )
            if self.sasl_oauth_client_id is None or (
                self.sasl_oauth_client_secret is None and self.sasl_oauth_client_secret_file is None
            ):
                raise ValueError(
                    "kafka.security: sasl_oauth_token_endpoint needs sasl_oauth_client_id and"
                    " sasl_oauth_client_secret (or sasl_oauth_client_secret_file)"
                )
        return self

    def resolve_sasl_password(self) -> str | None:
        """The SASL password: the value, else the file's content without its line ending.

        Raises `SecretFileError` when the file cannot be read or is empty."""
        return _resolve(self.sasl_password, self.sasl_password_file, "sasl_password_file")

    def resolve_oauth_client_secret(self) -> str | None:
        """The token endpoint's client secret: the value, else its file's content."""
        return _resolve(
            self.sasl_oauth_client_secret,
            self.sasl_oauth_client_secret_file,
            "sasl_oauth_client_secret_file",
        )

    def resolve_ssl_password(self) -> str | None:
        """The password of the client's private key (`ssl_keyfile`), if it has one."""
        return _resolve(self.ssl_password, self.ssl_password_file, "ssl_password_file")


def _resolve(value: SecretStr | None, file: Path | None, setting: str) -> str | None:
    """A secret's value, else the content of its file (`SecretFileError` when that cannot
    be read or is empty), else None."""
    if value is not None:
        return value.get_secret_value()
    if file is None:
        return None
    secret = read_secret_file(file, f"kafka.security.{setting}")
    if not secret:
        raise SecretFileError(f"kafka.security.{setting}: {file} is empty")
    return secret


class KafkaSettings(Section):
    """Where events come from and how they are consumed."""

    bootstrap_servers: str = "localhost:9092"
    topics: list[str] = Field(default_factory=lambda: ["rag-events"], min_length=1)
    group_id: str = "ragstream"
    client_id: str = "ragstream"
    auto_offset_reset: Literal["earliest", "latest"] = "latest"
    max_batch: int = Field(5000, ge=1, description="max records per getmany batch")
    fetch_partition_bytes: int = Field(
        4 << 20,
        ge=1024,
        description="bytes a fetch brings at most per partition (max.partition.fetch.bytes)",
    )
    poll_timeout: Duration = 0.5
    dead_letter_topic: str | None = None
    retry_backoff_max: Duration = 30.0
    commit_interval: Duration = Field(
        1.0, ge=0, description="between offset commits (0: every batch); revoke and stop commit all"
    )
    request_timeout: Duration = Field(
        5.0, gt=0, description="an offset commit (retried with the next) or a lag read waits"
    )
    session_timeout: Duration = Field(
        10.0,
        ge=1.0,
        description=(
            "the group session: a replica silent this long (killed) leaves the group and its"
            " partitions move; also the time given to every replica to rejoin a rebalance"
        ),
    )
    security: KafkaSecurity = Field(default_factory=KafkaSecurity)
    formats: dict[str, Literal["ragstream", "otlp_proto", "otlp_json"]] = Field(
        default_factory=dict,
        description=(
            "what a topic carries, per topic: ragstream events (the default) or OpenTelemetry"
            " traces as the Collector's kafka exporter writes them (otlp_proto, otlp_json)"
        ),
    )

    @model_validator(mode="after")
    def _formats_of_topics(self) -> KafkaSettings:
        stray = sorted(set(self.formats) - set(self.topics))
        if stray:
            raise ValueError(
                f"kafka.formats names {', '.join(stray)}, not in kafka.topics "
                f"({', '.join(self.topics)}): add it to kafka.topics or leave it out of"
                " kafka.formats"
            )
        return self


class TraceSettings(Section):
    """OpenTelemetry traces (topics of format otlp_proto or otlp_json): the OpenInference
    attribute names read and how a trace's spans are joined (docs/opentelemetry.md)."""

    span_kind: str = Field("openinference.span.kind", description="the span kind attribute")
    input_value: str = "input.value"
    input_mime_type: str = "input.mime_type"
    output_value: str = "output.value"
    output_mime_type: str = "output.mime_type"
    documents: str = Field(
        "retrieval.documents",
        description="prefix of documents: <prefix>.N.document.id/score/content/metadata",
    )
    reranked_documents: str = Field(
        "reranker.output_documents",
        description="prefix of a reranker's output documents, as documents",
    )
    input_messages: str = "llm.input_messages"
    output_messages: str = "llm.output_messages"
    model_name: str = "llm.model_name"
    query_id_attribute: str | None = Field(
        None, description="a span attribute that holds the query id; null: the trace id (hex)"
    )
    doc_id_keys: list[str] = Field(
        default_factory=lambda: ["doc_id", "id"],
        description="document metadata keys read, in order, when document.id is absent",
    )
    doc_time_key: str | None = Field(
        "t_doc", description="document metadata key of its own time (recency); null: none"
    )
    question_keys: list[str] = Field(
        default_factory=lambda: ["question", "query", "input"],
        description="keys read, in order, when a span's input is a JSON object",
    )
    answer_keys: list[str] = Field(
        default_factory=lambda: ["answer", "output", "result", "response", "text"],
        description="keys read, in order, when a span's output is a JSON object",
    )
    labels: dict[str, str] = Field(
        default_factory=lambda: {"service": "service.name"},
        description=(
            "event label key -> span attribute (else resource attribute); a key of labels.keys"
            " not listed is read from the attribute of its own name"
        ),
    )
    wait: Duration = Field(
        30.0, ge=0, description="an open trace closes this long after its last span arrived"
    )
    max_open: int = Field(10_000, ge=1, description="open traces per partition")
    max_message_bytes: int = Field(4 * 1024 * 1024, ge=1, description="largest OTLP message")


class WindowSettings(Section):
    """Sliding windows of time buckets (SPEC §3)."""

    sizes: list[Duration] = Field(default_factory=lambda: [60.0, 300.0, 3600.0, 86400.0])
    buckets: int = Field(60, ge=1, le=10_000, description="buckets per window")
    clock: Literal["wall", "event"] = "wall"
    future_tolerance: Duration = 60.0

    @field_validator("sizes")
    @classmethod
    def _positive_sizes(cls, sizes: list[float]) -> list[float]:
        if not sizes or min(sizes) <= 0:
            raise ValueError("window sizes must be a non-empty list of positive durations")
        return sorted(set(sizes))


class MetricSettings(Section):
    """Which retrieval metrics are kept (SPEC §2)."""

    cutoffs: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    half_lives: list[Duration] = Field(default_factory=lambda: [604_800.0])
    gain: Literal["linear", "exponential"] = "linear"
    relevance_threshold: float = 1.0
    histogram_bins: int = Field(20, ge=2, le=1000)

    @field_validator("cutoffs")
    @classmethod
    def _positive_cutoffs(cls, cutoffs: list[int]) -> list[int]:
        if not cutoffs or min(cutoffs) < 1:
            raise ValueError("cutoffs must be a non-empty list of integers >= 1")
        return sorted(set(cutoffs))

    @field_validator("half_lives")
    @classmethod
    def _positive_half_lives(cls, half_lives: list[float]) -> list[float]:
        if min(half_lives, default=1.0) <= 0:
            raise ValueError("half-lives must be positive durations")
        return sorted(set(half_lives))


class LabelSettings(Section):
    """Which event labels become Prometheus labels, and how many values each may take."""

    keys: list[str] = Field(default_factory=list)
    max_values: int = Field(50, ge=1, description="values per key beyond this become 'other'")


class JoinSettings(Section):
    """Late labels (SPEC §3)."""

    label_ttl: Duration = 900.0
    pending_ttl: Duration = 60.0
    max_open: int = Field(
        200_000, ge=1, description="open queries per partition, and final query ids remembered"
    )
    max_pending: int = Field(100_000, ge=1)


class StateSettings(Section):
    """Partition state moved between replicas through a compacted Kafka topic (`run`)."""

    enabled: bool = True
    topic: str | None = Field(None, description="default: '<kafka.group_id>-state'")
    checkpoint_interval: Duration = Field(30.0, gt=0, description="between periodic snapshots")
    chunk_bytes: int = Field(
        512 * 1024, ge=1024, le=8 * 1024 * 1024, description="largest state record value"
    )
    replication_factor: int | None = Field(
        None, ge=1, description="for a topic created by the agent; default: up to 3"
    )

    def topic_for(self, group_id: str) -> str:
        """The state topic's name: the configured one, else derived from the group id."""
        return self.topic or f"{group_id}-state"


class HttpSettings(Section):
    """The `/metrics`, `/healthz` and `/readyz` server."""

    host: str = "0.0.0.0"
    port: int = Field(9464, ge=0, le=65535)


class ExemplarSettings(Section):
    """Where the exemplars of the final-query histograms get their trace ids
    (docs/drill-down.md)."""

    trace_id_field: str | None = Field(
        None,
        description=(
            "a top-level field of retrieval events whose string value, when a trace id, is"
            " the query's trace id; without one, or null: the query id, when it is a trace id"
        ),
    )

    @field_validator("trace_id_field")
    @classmethod
    def _not_a_schema_field(cls, name: str | None) -> str | None:
        if name is not None:
            TraceField(name)  # refuses the schema's own fields
        return name


class ResultsSettings(Section):
    """The per-query results topic (docs/results.md); off while `topic` is unset."""

    topic: str | None = Field(None, description="where each final query's record goes")
    sample: Literal["all", "share", "below"] = Field(
        "all", description="all; a share (by query id hash); or below a threshold on a metric"
    )
    share: float = Field(1.0, ge=0.0, le=1.0, description="the share written (sample=share)")
    metric: str = Field("ndcg@10", description="the metric compared (sample=below)")
    threshold: float = Field(0.5, description="records with the metric below it (sample=below)")
    queue_size: int = Field(10_000, ge=1, description="records waiting to be sent; more drop")
    flush_timeout: Duration = Field(
        5.0, gt=0, description="wait for the records of a batch before its commit, at most"
    )


class Settings(BaseSettings):
    """Everything `ragstream run` needs."""

    model_config = SettingsConfigDict(
        env_prefix="RAGSTREAM_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )
    _config_file: ClassVar[Path | None] = None

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    windows: WindowSettings = Field(default_factory=WindowSettings)
    metrics: MetricSettings = Field(default_factory=MetricSettings)
    labels: LabelSettings = Field(default_factory=LabelSettings)
    join: JoinSettings = Field(default_factory=JoinSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    traces: TraceSettings = Field(default_factory=TraceSettings)
    exemplars: ExemplarSettings = Field(default_factory=ExemplarSettings)
    drift: DriftSettings = Field(default_factory=DriftSettings)
    results: ResultsSettings = Field(default_factory=ResultsSettings)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    @model_validator(mode="after")
    def _drift_fits(self) -> Settings:
        """Drift's window pairs are configured windows, its metrics' cutoffs configured
        cutoffs, and its settle time shorter than every short window. Left at their
        default, the pairs are those of the default pairs whose windows are configured."""
        drift = self.drift
        if not drift.enabled:
            return self
        fitted = drift.fitted(self.windows.sizes)
        if fitted is not drift:  # frozen: set once, while validating
            object.__setattr__(self, "drift", fitted)
            drift = fitted
        problems = []
        sizes = self.windows.sizes
        for short, long in drift.window_pairs:
            pair = f"{format_duration(short)}/{format_duration(long)}"
            missing = [w for w in (short, long) if w not in sizes]
            if missing:
                wanted = ", ".join(format_duration(w) for w in sorted({*sizes, *missing}))
                problems.append(
                    f"drift.window_pairs: window pair {pair}:"
                    f" {', '.join(map(format_duration, missing))} not in windows.sizes;"
                    f" write windows.sizes: [{wanted}], or leave the pair out"
                )
            elif drift.settle >= short:
                problems.append(
                    f"drift.settle ({format_duration(drift.settle)}): settle must be shorter"
                    f" than the short window of {pair}; write a drift.settle below"
                    f" {format_duration(short)}"
                )
        for name in drift.metrics:
            k = parse_metric(name).k
            if k is not None and k not in self.metrics.cutoffs:
                wanted = ", ".join(map(str, sorted({*self.metrics.cutoffs, k})))
                problems.append(
                    f"drift.metrics: metric {name}: cutoff {k} not in metrics.cutoffs;"
                    f" write metrics.cutoffs: [{wanted}], or watch a configured cutoff"
                )
        if problems:
            raise ValueError("\n  - ".join(problems))
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = cls._config_file
        if path is not None:
            if path.suffix.lower() == ".toml":
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
            else:
                sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
        return tuple(sources)


def load_settings(
    config_file: Path | None = None, overrides: Mapping[str, Any] | None = None
) -> Settings:
    """Build the settings from flags (`overrides`, nested dicts), environment and file.

    Raises `FileNotFoundError` for a missing file and pydantic's `ValidationError` for
    values that do not fit; `ragstream.config.explain` turns both into plain words.
    """
    if config_file is not None and not config_file.is_file():
        raise FileNotFoundError(f"configuration file not found: {config_file}")
    loaded: type[Settings] = type("LoadedSettings", (Settings,), {"_config_file": config_file})
    return loaded(**dict(overrides or {}))
