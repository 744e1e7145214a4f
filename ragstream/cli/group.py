"""The click group of the `ragstream` command line, one module per subcommand.

Subcommands are imported only when they run (or for `--help`), so that `ragstream eval`
does not pay for the Kafka and HTTP stacks, nor `ragstream run` for the TREC parser.
"""

from __future__ import annotations

import importlib

import click

__all__ = ["main"]

_COMMANDS = {
    "check-config": "ragstream.cli.check_config:check_config",
    "demo": "ragstream.cli.demo:demo",
    "eval": "ragstream.cli.eval:eval_command",
    "judge": "ragstream.cli.judge:judge_command",
    "replay": "ragstream.cli.replay:replay",
    "run": "ragstream.cli.run:run",
    "schema": "ragstream.cli.schema:schema",
}


class _LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attribute = target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ragstream", prog_name="ragstream")
def main() -> None:
    """Streaming online evaluation of RAG services."""
