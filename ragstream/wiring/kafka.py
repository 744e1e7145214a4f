"""The Kafka side of `ragstream run`, built from the settings: client security, the source,
the partition-state hand-over plugged into it, and the dead-letter topic."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from functools import partial
from typing import Any

from aiokafka.abc import AbstractTokenProvider
from aiokafka.helpers import create_ssl_context

from ragstream.checkpoint import Handover, StateTopic
from ragstream.config import KafkaSecurity, SecretFileError, Settings, read_secret_file
from ragstream.config.settings import KafkaSettings
from ragstream.pipeline.engine import Engine
from ragstream.sinks.dead_letters import KafkaDeadLetters
from ragstream.sources.kafka import KafkaSource, KafkaSourceConfig
from ragstream.sources.kafka_oauth import EndpointTokenProvider, FileTokenProvider

__all__ = [
    "client_security",
    "dead_letters",
    "kafka_source",
    "source_config",
    "state_handover",
]


def client_security(security: KafkaSecurity) -> dict[str, Any]:
    """aiokafka keyword arguments for TLS and SASL (secrets unwrapped, and secret files
    read, only here); raises `SecretFileError` when a secret's file, the CA, the client
    certificate or its key cannot be read."""
    kwargs: dict[str, Any] = {"security_protocol": security.protocol}
    if security.protocol in ("SSL", "SASL_SSL"):
        kwargs["ssl_context"] = _ssl_context(security)
    if not security.protocol.startswith("SASL"):
        return kwargs
    kwargs["sasl_mechanism"] = security.sasl_mechanism
    if security.sasl_mechanism == "OAUTHBEARER":
        kwargs["sasl_oauth_token_provider"] = _oauth_token_provider(security)
        return kwargs
    password = security.resolve_sasl_password()  # the value or its file's content
    assert password is not None  # one of them is required by KafkaSecurity
    kwargs["sasl_plain_username"] = security.sasl_username
    kwargs["sasl_plain_password"] = password
    return kwargs


def _oauth_token_provider(security: KafkaSecurity) -> AbstractTokenProvider:
    """The OAUTHBEARER token provider of the settings: from the token file, else from the
    token endpoint (its client secret read from its file at each fetch, when in one)."""
    if security.sasl_oauth_token_file is not None:
        reader = partial(read_secret_file, setting="kafka.security.sasl_oauth_token_file")
        return FileTokenProvider(
            security.sasl_oauth_token_file, reader, extensions=security.sasl_oauth_extensions
        )
    assert security.sasl_oauth_token_endpoint is not None  # KafkaSecurity requires one
    assert security.sasl_oauth_client_id is not None
    security.resolve_oauth_client_secret()  # a secret file that cannot be read fails now

    def secret() -> str:
        value = security.resolve_oauth_client_secret()
        assert value is not None
        return value

    return EndpointTokenProvider(
        security.sasl_oauth_token_endpoint,
        security.sasl_oauth_client_id,
        secret,
        scope=security.sasl_oauth_scope,
        extensions=security.sasl_oauth_extensions,
    )


def _ssl_context(security: KafkaSecurity) -> ssl.SSLContext:
    """The broker's certificate checked against the CA (else the system's) and, unless
    `ssl_check_hostname` is false, against the host name; the client's certificate and
    key loaded when given (the key's password from its value or file)."""
    files = {
        "ssl_cafile": security.ssl_cafile,
        "ssl_certfile": security.ssl_certfile,
        "ssl_keyfile": security.ssl_keyfile,
    }
    for setting, path in files.items():
        if path is not None and not path.is_file():
            raise SecretFileError(f"kafka.security.{setting}: {path} is not a readable file")
    if security.ssl_keyfile is not None and security.ssl_certfile is None:
        raise SecretFileError("kafka.security.ssl_keyfile is set without ssl_certfile")
    try:
        context: ssl.SSLContext = create_ssl_context(
            cafile=str(security.ssl_cafile) if security.ssl_cafile else None,
            certfile=str(security.ssl_certfile) if security.ssl_certfile else None,
            keyfile=str(security.ssl_keyfile) if security.ssl_keyfile else None,
            password=security.resolve_ssl_password(),
        )
    except (ssl.SSLError, OSError) as error:  # never echoes a password or a key
        reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or "invalid"
        raise SecretFileError(
            "kafka.security: cannot load the TLS files (ssl_cafile, ssl_certfile,"
            f" ssl_keyfile, ssl_password): {reason}"
        ) from None
    context.check_hostname = security.ssl_check_hostname
    return context


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
    settings: Settings,
    engine: Engine,
    handover: Handover | None = None,
    client_options: dict[str, Any] | None = None,
) -> KafkaSource:
    """The consumer of the configured topics for `engine`: revoked partitions leave the
    engine, and `handover` (when given) moves their state through the state topic.
    `client_options`: `client_security`'s, when the agent's clients share them (one OAuth
    token provider for all); built here otherwise."""
    return KafkaSource(
        source_config(settings.kafka, client_options),
        on_revoked=engine.drop_partitions,
        on_assigned=engine.hold_partitions,
        state=handover,
    )


def source_config(
    k: KafkaSettings, client_options: Mapping[str, Any] | None = None
) -> KafkaSourceConfig:
    """The consumer's configuration from the `kafka` section (`client_options` as for
    `kafka_source`)."""
    return KafkaSourceConfig(
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
        request_timeout=k.request_timeout,
        session_timeout=k.session_timeout,
        client_options=client_security(k.security) if client_options is None else client_options,
    )


def dead_letters(
    settings: Settings, client_options: dict[str, Any] | None = None
) -> KafkaDeadLetters | None:
    """The dead-letter topic's producer, or None when `kafka.dead_letter_topic` is unset
    (`client_options` as for `kafka_source`)."""
    k = settings.kafka
    if not k.dead_letter_topic:
        return None
    return KafkaDeadLetters(
        k.dead_letter_topic,
        bootstrap_servers=k.bootstrap_servers,
        client_id=k.client_id,
        **(client_security(k.security) if client_options is None else client_options),
    )
