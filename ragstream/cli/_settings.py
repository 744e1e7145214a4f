"""Flags shared by the commands that build the agent's settings (`run`, `check-config`,
`replay`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml

from ragstream.config import Settings, explain_error, load_settings

__all__ = [
    "CommandLineError",
    "file_settings_options",
    "settings_from_flags",
    "settings_options",
    "with_settings",
]

F = TypeVar("F", bound=Callable[..., Any])


class CommandLineError(click.ClickException):
    """A problem the command line can fix (a taken port): one line, exit 2 as click's
    usage errors."""

    exit_code = 2


_CONFIG = click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar="RAGSTREAM_CONFIG",
    help="YAML or TOML configuration file (env RAGSTREAM_CONFIG).",
)
_SET = click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="Any setting by its dotted path, e.g. --set windows.sizes='[1m, 1h]'.",
)
_KAFKA_HTTP = (
    click.option("--bootstrap-servers", help="Kafka bootstrap servers, host:port[,...]."),
    click.option("--topic", "topics", multiple=True, help="Topic to consume (repeatable)."),
    click.option("--group-id", help="Kafka consumer group."),
    click.option("--port", type=int, help="HTTP port for /metrics, /healthz, /readyz."),
)


def _apply(command: F, options: tuple[Callable[[F], F], ...]) -> F:
    for option in reversed(options):
        command = option(command)
    return command


def settings_options(command: F) -> F:
    """Add `--config`, the Kafka and HTTP shortcuts, and `--set section.key=value`."""
    return _apply(command, (_CONFIG, *_KAFKA_HTTP, _SET))


def file_settings_options(command: F) -> F:
    """Add `--config` and `--set` only: for commands that neither consume Kafka nor serve."""
    return _apply(command, (_CONFIG, _SET))


def _nest(overrides: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = overrides
    for part in parents:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise click.BadParameter(f"{dotted}: {part} is not a section", param_hint="--set")
        node = child
    node[leaf] = value


def settings_from_flags(
    config_file: Path | None,
    bootstrap_servers: str | None,
    topics: tuple[str, ...],
    group_id: str | None,
    port: int | None,
    assignments: tuple[str, ...],
) -> Settings:
    """Build the settings, or exit with the problems explained in plain words."""
    overrides: dict[str, Any] = {}
    for item in assignments:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--set")
        _nest(overrides, key.strip(), yaml.safe_load(raw) if raw.strip() else "")
    shortcuts = {
        "kafka.bootstrap_servers": bootstrap_servers,
        "kafka.topics": list(topics) or None,
        "kafka.group_id": group_id,
        "http.port": port,
    }
    for dotted, value in shortcuts.items():
        if value is not None:
            _nest(overrides, dotted, value)
    try:
        return load_settings(config_file, overrides)
    except Exception as error:  # every configuration error becomes plain words
        raise click.ClickException(explain_error(error)) from error


def with_settings(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the flags of `settings_options` (or `file_settings_options`) into one `settings`
    keyword argument."""

    @functools.wraps(command)
    def wrapper(
        config_file: Path | None,
        assignments: tuple[str, ...],
        bootstrap_servers: str | None = None,
        topics: tuple[str, ...] = (),
        group_id: str | None = None,
        port: int | None = None,
        **kwargs: Any,
    ) -> Any:
        settings = settings_from_flags(
            config_file, bootstrap_servers, topics, group_id, port, assignments
        )
        return command(settings=settings, **kwargs)

    return wrapper
