"""`ragstream check-config`: the effective configuration, secrets masked, or what is wrong."""

from __future__ import annotations

import click

from ragstream.cli._settings import settings_options, with_settings
from ragstream.config import Settings, describe_sources, render_settings

__all__ = ["check_config"]


@click.command("check-config", short_help="Print the effective configuration, or what is wrong.")
@settings_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["yaml", "json"]),
    default="yaml",
    show_default=True,
    help="How the configuration is printed.",
)
@with_settings
def check_config(settings: Settings, fmt: str) -> None:
    """Print the effective configuration (file < environment < flags), secrets masked;
    as YAML, followed by comments on what each topic carries and how spans of trace topics
    become events."""
    click.echo(render_settings(settings, fmt), nl=fmt == "json")
    if fmt == "yaml":
        click.echo(describe_sources(settings))
