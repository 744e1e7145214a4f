"""`ragstream run`: the agent on Kafka, configured by file, environment and flags."""

from __future__ import annotations

import asyncio
import logging

import click

from ragstream.app import Agent
from ragstream.cli._settings import settings_options, with_settings
from ragstream.config import Settings
from ragstream.pipeline.engine import Engine
from ragstream.sinks.dead_letters import KafkaDeadLetters
from ragstream.sources.kafka import (
    CoPartitionError,
    KafkaSource,
    KafkaSourceConfig,
    client_security,
)
from ragstream.wiring import engine_config, judging_service, state_handover

__all__ = ["run"]


@click.command("run")
@settings_options
@with_settings
def run(settings: Settings) -> None:
    """Consume the configured Kafka topics and serve /metrics until SIGTERM.

    Precedence: flags > environment (RAGSTREAM_..., __ for nesting) > --config file.
    `ragstream check-config` shows the effective configuration.
    """
    logging.basicConfig(
        level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        asyncio.run(_run(settings))
    except CoPartitionError as error:
        raise click.ClickException(str(error)) from error


async def _run(settings: Settings) -> None:
    k = settings.kafka
    engine = Engine(engine_config(settings))
    handover = state_handover(settings, engine, client_security(k.security))
    source = KafkaSource(
        KafkaSourceConfig(
            bootstrap_servers=k.bootstrap_servers,
            topics=tuple(k.topics),
            group_id=k.group_id,
            client_id=k.client_id,
            auto_offset_reset=k.auto_offset_reset,
            max_batch=k.max_batch,
            poll_timeout=k.poll_timeout,
            retry_backoff_max=k.retry_backoff_max,
            commit_interval=k.commit_interval,
            security=k.security,
        ),
        on_revoked=engine.drop_partitions,
        handover=handover,
    )
    letters = None
    if k.dead_letter_topic:
        letters = KafkaDeadLetters(
            k.dead_letter_topic,
            bootstrap_servers=k.bootstrap_servers,
            client_id=k.client_id,
            **client_security(k.security),
        )

    async def start() -> None:
        await source.start()
        if letters is not None:
            await letters.start()

    agent = Agent(
        engine,
        source,
        host=settings.http.host,
        port=settings.http.port,
        start_source=start,
        lag=source.lag,
        assigned=lambda: len(source.assignment()),
        dead_letters=letters,
        judging=judging_service(settings, engine, client_security(k.security)),
        handover=None if handover is None else handover.counters,
    )
    try:
        await agent.run()
    finally:
        if letters is not None:
            await letters.stop()
