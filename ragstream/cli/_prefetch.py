"""`ragstream eval`'s files read from the first milliseconds of the process.

Importing click and the command takes 20-30 ms, a tenth of the command on a collection of
a hundred thousand queries, with one core idle. The console script (`ragstream.cli.entry`)
therefore looks at its arguments before importing click: when they are `eval` with
`--qrels` and `--run`, it begins the compiled join of those files (`start_join`) at once,
and turns the garbage collector off, as the command does, for the imports too.

This is a guess, not the parse: click parses the arguments as always, and the command
uses the join begun here only when it is of the files, and with the options, that click
gave it (`take`); otherwise it is left to finish unused in its daemon thread. So a guess
that is wrong costs time, never a result. The guess reads only long options; it stops at
`--` and at anything it does not know, and knows which options take a value from the
command itself (a test holds `VALUED` to `eval_command`'s options).
"""

from __future__ import annotations

import gc
import os

TYPE_CHECKING = False  # typing is not imported yet this early (a few ms)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ragstream.trec import PendingJoin

__all__ = ["VALUED", "begin", "take"]

VALUED = frozenset(
    {
        "--qrels",
        "--run",
        "-m",
        "--metrics",
        "--format",
        "--digits",
        "--gain",
        "--relevance-level",
        "--reader",
        "--engine",
    }
)
"""`ragstream eval`'s options that take a value."""

_DEFAULTS = {"--reader": "numpy", "--engine": "auto"}
"""Options whose value decides whether the compiled join is used: the guess begins the
join only when they are absent or have these values."""

_BEGUN: list[tuple[str, str, bool, PendingJoin]] = []


def begin(argv: Sequence[str]) -> None:
    """Begin the join of `ragstream eval ARGV...`'s files when the arguments name them."""
    guess = _guess(argv)
    if guess is None:
        return
    qrels, run, keep_best = guess
    gc.disable()  # as the command does (`ragstream.cli.eval`), from here on
    from ragstream.cli import _process

    _process.prepare()  # before numpy is imported and the join allocates
    from ragstream.trec import start_join

    started = start_join(qrels, run, keep_best=keep_best, background=True)
    if started is not None:
        _BEGUN.append((os.path.abspath(qrels), os.path.abspath(run), keep_best, started))


def take(qrels: str, run: str, keep_best: bool) -> PendingJoin | None:
    """The join begun by `begin`, when it is of these files with this option (once)."""
    if not _BEGUN:
        return None
    begun_qrels, begun_run, begun_keep_best, started = _BEGUN.pop()
    same = (os.path.abspath(qrels), os.path.abspath(run), keep_best)
    return started if same == (begun_qrels, begun_run, begun_keep_best) else None


def _guess(argv: Sequence[str]) -> tuple[str, str, bool] | None:
    """(qrels, run, keep_best) of `eval` arguments, or None when unsure."""
    if not argv or argv[0] != "eval":
        return None
    values: dict[str, str] = {}
    keep_best = False
    at = 1
    while at < len(argv):
        arg = argv[at]
        at += 1
        name, equals, value = arg.partition("=")
        if name in VALUED:
            if not equals:
                if at == len(argv):
                    return None
                value = argv[at]
                at += 1
            values[name] = value
        elif arg == "--keep-best":
            keep_best = True
        elif arg not in ("-q", "-c"):
            return None  # "--", a short option cluster, --help: click decides
    if any(values.get(name, default) != default for name, default in _DEFAULTS.items()):
        return None
    if "--qrels" not in values or "--run" not in values:
        return None
    return values["--qrels"], values["--run"], keep_best
