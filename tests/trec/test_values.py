"""Metrics evaluated by the compiled join as it joins each query (a plan's kernel, set on the
join's Cut): the values are those of the compiled kernels over the rankings the join keeps
without it, bit for bit, whenever the kernel comes -- before the join, while its threads
read, or after they ended."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstream.metrics import parse_metric, ranking_depth
from ragstream.metrics.ragged import RaggedPlan, ragged_plan
from ragstream.trec import evaluate_files
from ragstream.trec._compiled import Compiled, join_files
from ragstream.trec.evaluate import _evaluate
from tests.trec.test_compiled import _SETTINGS, WriteFile, _collection, _files, join_while_cut

_METRICS = ["rr", "ap", "precision@3", "recall@2", "hit_rate@4", "dcg@5", "ndcg@5", "ndcg@10"]


def _plan(metrics: list[str], level: int) -> RaggedPlan:
    plan = ragged_plan(metrics, threshold=float(level))
    assert plan is not None
    return plan


def _join(
    qrels: Path,
    run: Path,
    metrics: list[str],
    level: int = 1,
    keep_best: bool = False,
    complete: bool = False,
    workers: int | None = None,
    plan: RaggedPlan | None = None,
) -> Compiled | None:
    return join_files(
        qrels,
        run,
        keep_best=keep_best,
        complete=complete,
        workers=workers,
        depth=ranking_depth([parse_metric(m) for m in metrics]),
        relevance_level=level,
        plan=plan,
    )


def _expected(
    rankings: Compiled, metrics: list[str], level: int, complete: bool
) -> dict[str, bytes]:
    """The values of the compiled kernels over a join's rankings, in the order of its ids."""
    specs = tuple(parse_metric(m) for m in metrics)
    evaluation = _evaluate(rankings.ranked, specs, "linear", level, complete)
    return {name: values.tobytes() for name, values in evaluation.per_query.items()}


def _same(
    valued: Compiled | None,
    rankings: Compiled | None,
    metrics: list[str],
    level: int,
    complete: bool,
) -> None:
    assert (valued is None) == (rankings is None)
    if valued is None or rankings is None:
        return
    assert str(valued.error) == str(rankings.error)
    assert valued.ranked.qids == rankings.ranked.qids
    assert valued.ranked.num_qrels_queries == rankings.ranked.num_qrels_queries
    if valued.values is None:  # the general path (not one block per query): rankings
        assert valued.ranked.rel.tobytes() == rankings.ranked.rel.tobytes()
        assert valued.ranked.judged.tobytes() == rankings.ranked.judged.tobytes()
        return
    assert valued.ranked.segments == ()  # no ranking is kept
    got = {name: values.tobytes() for name, values in valued.values.items()}
    assert got == _expected(rankings, metrics, level, complete)


@_SETTINGS
@given(
    files=_files(messy=False),
    metrics=st.lists(st.sampled_from(_METRICS), min_size=1, max_size=5, unique=True),
    level=st.sampled_from([1, 2]),
    workers=st.sampled_from([1, 3]),
)
def test_values_of_the_join_are_the_kernels_values_over_its_rankings(
    write: WriteFile,
    files: tuple[bytes, bytes, bool, bool],
    metrics: list[str],
    level: int,
    workers: int,
) -> None:
    # Ties, repeats (an error, or --keep-best), -c, exponent scores, interleaved queries
    # (the general path, which keeps the rankings), queries in one file only.
    qrels_text, run_text, keep_best, complete = files
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    rankings = _join(qrels, run, metrics, level, keep_best, complete, workers)
    plan = _plan(metrics, level)
    valued = _join(qrels, run, metrics, level, keep_best, complete, workers, plan)
    _same(valued, rankings, metrics, level, complete)


def test_a_large_collection_in_parts_with_deferred_blocks(write: WriteFile) -> None:
    # Queries in random order (the values are put in the order of their ids), scores that
    # need Python's conversion (their blocks are joined last, with the GIL), 1-5 parts.
    qrels_text, run_text = _collection(np.random.default_rng(7), 900, 50)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    rankings = _join(qrels, run, _METRICS)
    for workers in (1, 2, 3, 5):
        valued = _join(qrels, run, _METRICS, workers=workers, plan=_plan(_METRICS, 1))
        assert valued is not None
        assert valued.values is not None
        _same(valued, rankings, _METRICS, 1, False)


def test_a_kernel_set_while_the_join_runs_or_after_it_ended(write: WriteFile) -> None:
    # A kernel set while the join runs: the rankings joined before are evaluated at the
    # end of their part (or of the join). Whenever it comes, the values
    # are the same; one that comes after the join ended finds the rankings kept.
    qrels_text, run_text = _collection(np.random.default_rng(11), 3000, 40)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    metrics = ["rr", "precision@5", "ndcg@10", "recall@10"]
    rankings = _join(qrels, run, metrics)
    plan = _plan(metrics, 1)
    depth = ranking_depth([parse_metric(m) for m in metrics])
    assert depth is not None
    for delay in (0.0, 0.001, 0.003, 0.01, 0.03, 0.1):
        valued = join_while_cut(qrels, run, delay, depth, plan=plan)
        assert rankings is not None
        if valued.values is None:  # it came after the join ended
            assert _expected(valued, metrics, 1, False) == _expected(rankings, metrics, 1, False)
        else:
            _same(valued, rankings, metrics, 1, False)


def test_the_command_s_values_are_the_numpy_path_s(write: WriteFile) -> None:
    # evaluate_files with the compiled engine evaluates in the join; numpy's path reads and
    # evaluates the files itself.
    qrels_text, run_text = _collection(np.random.default_rng(13), 400, 30)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    for complete in (False, True):
        compiled = evaluate_files(qrels, run, _METRICS, complete=complete, engine="compiled")
        numpy = evaluate_files(qrels, run, _METRICS, complete=complete, engine="numpy")
        assert compiled.qids == numpy.qids
        assert compiled.mean == numpy.mean
        assert compiled.num_queries == numpy.num_queries
        for name, values in numpy.per_query.items():
            assert compiled.per_query[name].tobytes() == values.tobytes()


def test_the_cut_holds_one_kernel() -> None:
    from ragstream.metrics import _ragged
    from ragstream.trec._trec_reader import Cut

    plan, other = _plan(["rr"], 1), _plan(["ndcg@3"], 1)
    cut = Cut()
    assert cut.kernel is None
    cut.set(3, 1.0, plan.kernel)
    assert cut.kernel is plan.kernel
    cut.set(5, 2.0)  # None leaves it
    assert (cut.depth, cut.level, cut.kernel) == (5, 2.0, plan.kernel)
    cut.set(5, 2.0, plan.kernel)  # the same one again
    with pytest.raises(ValueError, match="set once"):
        cut.set(5, 2.0, other.kernel)
    with pytest.raises(ValueError, match="PyCapsule"):
        Cut(0, 1.0, object())  # not a kernel's capsule
    assert Cut(2, 1.0, other.kernel).kernel is other.kernel
    with pytest.raises(ValueError, match="cutoff"):
        _ragged.kernel(bytes([2]), np.zeros(1, np.int64).data, 1.0, np.ones(1).data)
    with pytest.raises(ValueError, match="unknown metric code"):
        _ragged.kernel(bytes([99]), np.zeros(1, np.int64).data, 1.0, np.ones(1).data)
