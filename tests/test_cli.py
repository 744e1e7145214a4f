"""The command line entry point itself."""

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
    names = ["check-config", "demo", "eval", "replay", "run", "schema"]
    for name in names:
        assert name in listing.output
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert f"Usage: main {name}" in result.output or f"Usage: ragstream {name}" in result.output
    unknown = runner.invoke(main, ["nope"])
    assert unknown.exit_code == 2
    assert "No such command 'nope'" in unknown.output
