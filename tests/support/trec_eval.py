"""NIST's trec_eval program, the reference the evaluator's output is compared with.

``scripts/trec_eval.sh fetch`` caches the binary (from Anserini's jar on Maven Central, see
``deploy/trec_eval/pom.xml``); :func:`fetch_trec_eval` calls it and :func:`run_trec_eval`
runs the program the way a person would (with ``-q -c``, as trec_eval 10 prints it: see
:func:`with_zero_lines`).
"""

import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.support.fetch import SCRIPTS, run_fetch

__all__ = ["TrecEvalError", "fetch_trec_eval", "run_trec_eval", "with_zero_lines"]

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
    if per_query and complete:
        return with_zero_lines(done.stdout, qrels, run)
    return done.stdout


def with_zero_lines(output: str, qrels: Path, run: Path) -> str:
    """trec_eval 9's ``-q -c`` output as trec_eval 10 prints it: a line of zeros for each
    measure of each qrels query the run lacks, among the other queries in byte order of
    their ids (the binary here is 9.0.4, which prints none: usnistgov/trec_eval issue 18).
    The queries are read from the files' first fields, apart from the evaluator's readers."""
    lines = output.splitlines(keepends=True)
    per_query = [line for line in lines if line.split("\t")[1].strip() != "all"]
    summary = lines[len(per_query) :]
    if not per_query:
        return output
    first = per_query[0].split("\t")[1]
    measures = [line.split("\t")[0] for line in per_query if line.split("\t")[1] == first]
    blocks: dict[bytes, list[str]] = {}
    for line in per_query:
        blocks.setdefault(line.split("\t")[1].encode(), []).append(line)
    missing = _first_fields(qrels) - _first_fields(run)
    for qid in missing:
        text = qid.decode()
        blocks[qid] = [f"{measure}\t{text}\t0.0000\n" for measure in measures]
    return "".join(line for qid in sorted(blocks) for line in blocks[qid]) + "".join(summary)


def _first_fields(path: Path) -> set[bytes]:
    """The first field of every line that is not blank or a comment."""
    fields = (line.split(maxsplit=1) for line in path.read_bytes().splitlines())
    return {parts[0] for parts in fields if parts and not parts[0].startswith(b"#")}
