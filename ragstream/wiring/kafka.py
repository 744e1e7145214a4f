"""The Kafka side of `ragstream run`, built from the settings: client security, the source,
the partition-state hand-over plugged into it, and the dead-letter topic."""

from __future__ import annotations

from typing import Any

from aiokafka.helpers import create_ssl_context

from ragstream.checkpoint import Handover, StateTopic
from ragstream.config import KafkaSecurity, Settings
from ragstream.pipeline.engine import Engine
from ragstream.sinks.dead_letters import KafkaDeadLetters
from ragstream.sources.kafka import KafkaSource, KafkaSourceConfig

__all__ = ["client_security", "dead_letters", "kafka_source", "state_handover"]


def client_security(security: KafkaSecurity) -> dict[str, Any]:
    """aiokafka keyword arguments for TLS and SASL (secrets unwrapped, and secret files
    read, only here); raises `SecretFileError` when `sasl_password_file` cannot be read."""
    kwargs: dict[str, Any] = {"security_protocol": security.protocol}
    if security.protocol in ("SSL", "SASL_SSL"):
        kwargs["ssl_context"] = create_ssl_context(
            cafile=str(security.ssl_cafile) if security.ssl_cafile else None,
            certfile=str(security.ssl_certfile) if security.ssl_certfile else None,
            keyfile=str(security.ssl_keyfile) if security.ssl_keyfile else None,
            password=security.ssl_password.get_secret_value() if security.ssl_password else None,
        )
    if security.protocol.startswith("SASL"):
        password = security.resolve_sasl_password()  # the value or its file's content
        assert password is not None  # one of them is required by KafkaSecurity
        kwargs["sasl_mechanism"] = security.sasl_mechanism
        kwargs["sasl_plain_username"] = security.sasl_username
        kwargs["sasl_plain_password"] = password
    return kwargs


def state_handover(
    settings: Settings, engine: Engine, client_options: dict[str, Any] | None = None
) -> Handover | None:
    """The engine's partition-state hand-over, or None when `state.enabled` is false."""
    state, kafka = settings.state, settings.kafka
    if not state.enabled:
        return None
    topic = StateTopic(
        state.topic_for(kafka.group_id),
        bootstrap_servers=kafka.bootstrap_servers,
        client_id=kafka.client_id,
        client_options=client_options,
        replication_factor=state.replication_factor,
    )
    return Handover(
        engine,
        topic,
        interval=state.checkpoint_interval,
        chunk_bytes=state.chunk_bytes,
        writer=kafka.client_id,
    )


def kafka_source(
    settings: Settings, engine: Engine, handover: Handover | None = None
) -> KafkaSource:
    """The consumer of the configured topics for `engine`: revoked partitions leave the
    engine, and `handover` (when given) moves their state through the state topic."""
    k = settings.kafka
    config = KafkaSourceConfig(
        bootstrap_servers=k.bootstrap_servers,
        topics=tuple(k.topics),
        group_id=k.group_id,
        client_id=k.client_id,
        auto_offset_reset=k.auto_offset_reset,
        max_batch=k.max_batch,
        fetch_partition_bytes=k.fetch_partition_bytes,
        poll_timeout=k.poll_timeout,
        retry_backoff_max=k.retry_backoff_max,
        commit_interval=k.commit_interval,
        session_timeout=k.session_timeout,
        client_options=client_security(k.security),
    )
    return KafkaSource(
        config,
        on_revoked=engine.drop_partitions,
        on_assigned=engine.hold_partitions,
        state=handover,
    )


def dead_letters(settings: Settings) -> KafkaDeadLetters | None:
    """The dead-letter topic's producer, or None when `kafka.dead_letter_topic` is unset."""
    k = settings.kafka
    if not k.dead_letter_topic:
        return None
    return KafkaDeadLetters(
        k.dead_letter_topic,
        bootstrap_servers=k.bootstrap_servers,
        client_id=k.client_id,
        **client_security(k.security),
    )
