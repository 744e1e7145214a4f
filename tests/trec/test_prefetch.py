"""The console script's early start of `ragstream eval`'s join (`ragstream.cli._prefetch`):
its guess of the files from the arguments, and a wrong guess costing no result."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ragstream.cli import _prefetch, main
from ragstream.cli.eval import eval_command

WriteFile = Callable[[str, str | bytes], Path]

QRELS = "q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 x 1\n"
RUN = "q1 Q0 a 1 1 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 2 t\nq2 Q0 w 1 -1 t\nq2 Q0 x 2 -2 t\n"
OTHER_RUN = "q1 Q0 c 1 9 t\nq2 Q0 x 1 9 t\n"  # rr 1 for both
REPEATED = "q1 Q0 a 1 1 t\nq1 Q0 a 2 3 t\nq2 Q0 x 1 1 t\n"  # a twice: an error without keep-best;
# with it, rr 1 for both


@pytest.fixture(autouse=True)
def _collector_back_on() -> Iterator[None]:
    """`begin` turns the collector off for the rest of the process, as the console script
    wants; here the process goes on."""
    yield
    gc.enable()


def test_valued_are_the_commands_options_with_a_value() -> None:
    valued = {
        name
        for param in eval_command.params
        if isinstance(param, click.Option) and not param.is_flag
        for name in param.opts
    }
    assert valued == _prefetch.VALUED


@pytest.mark.parametrize(
    ("argv", "guess"),
    [
        (["eval", "--qrels", "q", "--run", "r"], ("q", "r", False)),
        (["eval", "--run=r", "-q", "--qrels=q", "-m", "rr", "--keep-best"], ("q", "r", True)),
        (
            ["eval", "-c", "--format", "trec", "--engine", "auto", "--qrels", "q", "--run", "r"],
            ("q", "r", False),
        ),
        (["eval", "--qrels", "q", "--run", "r", "--engine", "numpy"], None),
        (["eval", "--qrels", "q", "--run", "r", "--reader=arrow"], None),
        (["eval", "--qrels", "q", "--", "--run", "r"], None),
        (["eval", "--qrels", "q", "-qc", "--run", "r"], None),
        (["eval", "--qrels", "q", "--run"], None),
        (["eval", "--qrels", "q"], None),
        (["eval", "--help", "--qrels", "q", "--run", "r"], None),
        (["run", "--qrels", "q", "--run", "r"], None),
        ([], None),
    ],
)
def test_guess(argv: list[str], guess: tuple[str, str, bool] | None) -> None:
    assert _prefetch._guess(argv) == guess


def _rr(args: list[str]) -> str:
    result = CliRunner().invoke(main, ["eval", *args, "-m", "rr", "--format", "trec"])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_join_begun_is_used_when_it_is_of_the_commands_files(write: WriteFile) -> None:
    files = ["--qrels", str(write("qrels", QRELS)), "--run", str(write("run", RUN))]
    _prefetch.begin(["eval", *files])
    assert len(_prefetch._BEGUN) == 1
    assert not gc.isenabled()
    assert _rr(files) == "recip_rank            \tall\t0.7500\n"
    assert _prefetch._BEGUN == []  # taken


def test_a_wrong_guess_costs_no_result(write: WriteFile) -> None:
    qrels = str(write("qrels", QRELS))
    run, other, repeated = write("run", RUN), write("other", OTHER_RUN), write("rep", REPEATED)
    expected_other = _rr(["--qrels", qrels, "--run", str(other)])
    assert expected_other == "recip_rank            \tall\t1.0000\n"
    # another run file: the join begun is of the wrong one and is not used
    _prefetch.begin(["eval", "--qrels", qrels, "--run", str(run)])
    assert _rr(["--qrels", qrels, "--run", str(other)]) == expected_other
    assert _prefetch._BEGUN == []
    # the same files without --keep-best: a repeat is an error there, not in the command
    _prefetch.begin(["eval", "--qrels", qrels, "--run", str(repeated)])
    assert _rr(["--qrels", qrels, "--run", str(repeated), "--keep-best"]) == expected_other


def test_the_console_script_begins_the_join(write: WriteFile) -> None:
    files = ["--qrels", str(write("qrels", QRELS)), "--run", str(write("run", RUN))]
    # begin records the join it started; the command's output is the same either way
    script = (
        "import sys\n"
        "from ragstream.cli import _prefetch, entry\n"
        "begin = _prefetch.begin\n"
        "def counted(argv):\n"
        "    begin(argv)\n"
        "    print(len(_prefetch._BEGUN), file=sys.stderr)\n"
        "_prefetch.begin = counted\n"
        f"sys.argv = ['ragstream', 'eval', *{files!r}, '-m', 'rr', '--format', 'trec']\n"
        "entry()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60
    )
    assert (done.returncode, done.stderr) == (0, "1\n")
    assert done.stdout == "recip_rank            \tall\t0.7500\n"
