"""`ragstream run`: the agent on Kafka, configured by file, environment and flags."""

from __future__ import annotations

import asyncio
import logging

import click

from ragstream.cli._settings import CommandLineError, settings_options, with_settings
from ragstream.config import SecretFileError, Settings
from ragstream.exporter.http import AddressInUseError
from ragstream.sinks.results import UnknownMetricError
from ragstream.sources.kafka import CoPartitionError, KafkaAuthError
from ragstream.traces import TraceSupportError
from ragstream.wiring.run import run_agent

__all__ = ["run"]


@click.command("run", short_help="Run the agent on Kafka topics and serve /metrics.")
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
        asyncio.run(run_agent(settings))
    except (
        CoPartitionError,
        KafkaAuthError,
        SecretFileError,
        TraceSupportError,
        UnknownMetricError,
    ) as error:
        raise click.ClickException(str(error)) from error
    except AddressInUseError as error:
        raise CommandLineError(
            f"cannot serve /metrics: {error.strerror}; choose another port with --port"
            " (or http.port)"
        ) from None
