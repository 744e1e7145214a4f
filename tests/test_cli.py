"""The command line entry point itself."""

import click
from click.testing import CliRunner

from ragstream import __version__
from ragstream.cli import main


def test_version_names_the_installed_package() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"ragstream, version {__version__}"
    assert __version__ != "0.0.0"


def test_every_subcommand_loads_and_explains_itself() -> None:
    runner = CliRunner()
    listing = runner.invoke(main, ["--help"])
    assert listing.exit_code == 0
    names = ["check-config", "demo", "eval", "judge", "replay", "run", "schema"]
    for name in names:
        assert name in listing.output
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert f"Usage: main {name}" in result.output or f"Usage: ragstream {name}" in result.output
    unknown = runner.invoke(main, ["nope"])
    assert unknown.exit_code == 2
    assert "No such command 'nope'" in unknown.output


def _commands_section(output: str) -> list[str]:
    lines = output.splitlines()
    start = lines.index("Commands:") + 1
    return [line for line in lines[start:] if line.strip()]


def test_command_list_gives_each_command_a_whole_description() -> None:
    runner = CliRunner()
    listing = _commands_section(runner.invoke(main, ["--help"], terminal_width=80).output)
    assert len(listing) == 7, listing  # one line per command at 80 columns
    for line in listing:
        name, description = line.split(maxsplit=1)
        assert not description.endswith("..."), line
        assert description.endswith("."), line
        command = main.get_command(click.Context(main), name)
        assert command is not None
        assert command.short_help == description


def test_replay_help_lists_only_what_a_file_replay_uses() -> None:
    runner = CliRunner()
    text = runner.invoke(main, ["replay", "--help"], terminal_width=100).output
    for option in ("--bootstrap-servers", "--topic", "--group-id", "--port"):
        assert option not in text
    assert "--config" in text
    assert "--set" in text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("--format"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("-"))
    described = " ".join(" ".join(lines[start:end]).split())
    assert described.startswith("--format [table|json] table: ")  # a description
    assert described.endswith("[default: table]")
    refused = runner.invoke(main, ["replay", "--port", "1", "x.jsonl"])
    assert refused.exit_code == 2
    assert "No such option '--port'" in refused.output
    for command in ("run", "check-config"):  # the Kafka commands keep the shortcuts
        assert "--bootstrap-servers" in runner.invoke(main, [command, "--help"]).output
