"""The `ragstream` command line: one click group, one module per subcommand."""

from __future__ import annotations

import click

from ragstream import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ragstream")
def main() -> None:
    """Streaming online evaluation of RAG services."""


# Subcommands register themselves here, one line each.
from ragstream.cli.check_config import check_config  # noqa: E402
from ragstream.cli.demo import demo  # noqa: E402
from ragstream.cli.eval import eval_command  # noqa: E402
from ragstream.cli.replay import replay  # noqa: E402
from ragstream.cli.run import run  # noqa: E402
from ragstream.cli.schema import schema  # noqa: E402

main.add_command(check_config)
main.add_command(demo)
main.add_command(eval_command)
main.add_command(replay)
main.add_command(run)
main.add_command(schema)
