"""The command line entry point itself."""

from click.testing import CliRunner

from ragstream import __version__
from ragstream.cli import main


def test_version_names_the_installed_package() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"ragstream, version {__version__}"
    assert __version__ != "0.0.0"
