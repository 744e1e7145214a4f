"""NIST's trec_eval program, the reference the evaluator's output is compared with.

``scripts/trec_eval.sh fetch`` caches the binary (from Anserini's jar on Maven Central, see
``deploy/trec_eval/pom.xml``); :func:`fetch_trec_eval` calls it and :func:`run_trec_eval`
runs the program the way a person would.
"""

import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.support.fetch import SCRIPTS, run_fetch

__all__ = ["TrecEvalError", "fetch_trec_eval", "run_trec_eval"]

_SCRIPT = SCRIPTS / "trec_eval.sh"


class TrecEvalError(RuntimeError):
    """trec_eval could not be fetched, or it failed on its input."""


def fetch_trec_eval(script: Path = _SCRIPT, timeout: float = 600.0) -> Path:
    """The path of the trec_eval binary, fetched once with ``trec_eval.sh fetch``.

    The script honours ``RAGSTREAM_TREC_EVAL`` (a binary of one's own) and
    ``XDG_CACHE_HOME``; when the binary is cached it returns in milliseconds.
    """
    return run_fetch(script, TrecEvalError, timeout)


def run_trec_eval(
    binary: Path,
    qrels: Path,
    run: Path,
    measures: Sequence[str],
    *,
    per_query: bool = False,
    complete: bool = False,
    relevance_level: int = 1,
    timeout: float = 300.0,
) -> str:
    """What ``trec_eval [-q] [-c] -l N -m M ... QRELS RUN`` prints on stdout.

    ``measures`` use trec_eval's syntax: ``recip_rank``, ``map``, ``P.5,10``, ``ndcg_cut.10``.
    """
    args = [str(binary), "-l", str(relevance_level)]
    args += ["-q"] * per_query + ["-c"] * complete
    for measure in measures:
        args += ["-m", measure]
    done = subprocess.run(
        [*args, str(qrels), str(run)], capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise TrecEvalError(f"trec_eval exited {done.returncode}:\n{done.stderr[-4000:]}")
    return done.stdout
