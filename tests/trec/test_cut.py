"""Rankings cut where the metrics stop reading: the compiled join keeps of each ranking its
first k grades and on to its first relevant one, and the values stay those of whole rankings
(of the numpy path, which never cuts)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragstream.metrics import RankingBatch, RankingDepth, evaluate, parse_metric, ranking_depth
from ragstream.trec import Engine, TrecFormatError, evaluate_files
from ragstream.trec._chunks import _by_class, chunks, padded_cells
from ragstream.trec._compiled import join_files
from ragstream.trec._ranked import Ranked, Segment
from ragstream.trec.evaluate import _kernels
from tests.trec.test_compiled import _SETTINGS, WriteFile, _collection, _files, join_while_cut

_CUTTABLE = ["rr", "precision@3", "recall@2", "ndcg@5", "dcg@1", "hit_rate@4", "ndcg@10"]


def _rows(values: np.ndarray, offsets: np.ndarray) -> list[list[float]]:
    return [values[a:b].tolist() for a, b in itertools.pairwise(offsets)]


def _expected_cut(ranking: list[float], depth: RankingDepth, level: float) -> list[float]:
    """The rule, from the whole ranking: its first k grades, and on to its first grade
    >= level when `to_relevant`."""
    keep = min(depth.k, len(ranking))
    if depth.to_relevant:
        first = next((i for i, g in enumerate(ranking) if g >= level), None)
        if first is not None:
            keep = max(keep, first + 1)
    return ranking[:keep]


def _check_cut(qrels: Path, run: Path, keep_best: bool, complete: bool, workers: int) -> None:
    whole = join_files(qrels, run, keep_best=keep_best, complete=complete, workers=workers)
    assert whole is not None
    for depth in (RankingDepth(1, True), RankingDepth(3, False), RankingDepth(2, True)):
        for level in (1.0, 2.0):
            cut = join_files(
                qrels,
                run,
                keep_best=keep_best,
                complete=complete,
                workers=workers,
                depth=depth,
                relevance_level=level,
            )
            assert cut is not None
            assert (cut.error is None) == (whole.error is None)
            if whole.error is not None:
                assert cut.error is not None
                assert str(cut.error) == str(whole.error)
                continue
            a, b = whole.ranked, cut.ranked
            assert b.qids == a.qids
            assert b.judged.tobytes() == a.judged.tobytes()
            assert b.judged_offsets.tobytes() == a.judged_offsets.tobytes()
            expected = [_expected_cut(r, depth, level) for r in _rows(a.rel, a.rel_offsets)]
            assert _rows(b.rel, b.rel_offsets) == expected, (depth, level)


@_SETTINGS
@given(files=_files(messy=False), workers=st.sampled_from([1, 3]))
def test_the_cut_keeps_the_first_k_and_on_to_the_first_relevant(
    write: WriteFile, files: tuple[bytes, bytes, bool, bool], workers: int
) -> None:
    # Files of one block per query (the block path, in parts) and interleaved ones (the
    # general path): the same rule, the judged grades untouched, errors unchanged.
    qrels_text, run_text, keep_best, complete = files
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    _check_cut(qrels, run, keep_best, complete, workers)


def _metrics() -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(_CUTTABLE), min_size=1, max_size=4, unique=True)


def _values(
    qrels: Path,
    run: Path,
    metrics: list[str],
    engine: Engine,
    level: int = 1,
    keep_best: bool = False,
    complete: bool = False,
) -> object:
    try:
        result = evaluate_files(
            qrels,
            run,
            metrics,
            engine=engine,
            relevance_level=level,
            keep_best=keep_best,
            complete=complete,
        )
    except TrecFormatError as error:
        return str(error)
    per_query = {name: values.tobytes() for name, values in result.per_query.items()}
    return result.qids, per_query, result.mean


@_SETTINGS
@given(files=_files(messy=False), metrics=_metrics(), level=st.sampled_from([1, 2]))
def test_cut_rankings_give_the_values_of_whole_ones(
    write: WriteFile, files: tuple[bytes, bytes, bool, bool], metrics: list[str], level: int
) -> None:
    qrels_text, run_text, keep_best, complete = files
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    compiled = _values(qrels, run, metrics, "compiled", level, keep_best, complete)
    assert compiled == _values(qrels, run, metrics, "numpy", level, keep_best, complete)


def test_a_large_collection_is_cut_in_parts_with_numpy_s_values(write: WriteFile) -> None:
    qrels_text, run_text = _collection(np.random.default_rng(11), 600, 60)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    for workers in (1, 2, 5):
        _check_cut(qrels, run, False, False, workers)
    metrics = ["rr", "precision@5", "recall@10", "ndcg@10", "ndcg@5"]
    cut = join_files(
        qrels,
        run,
        keep_best=False,
        complete=False,
        depth=ranking_depth([parse_metric(m) for m in metrics]),
    )
    whole = join_files(qrels, run, keep_best=False, complete=False)
    assert cut is not None
    assert whole is not None
    assert cut.ranked.rel.size < whole.ranked.rel.size / 2  # most of it never written
    assert _values(qrels, run, metrics, "compiled") == _values(qrels, run, metrics, "numpy")


# -- chunks: queries of like length padded together --------------------------------------


def _uneven(rng: np.random.Generator, n: int) -> Segment:
    lengths = np.where(rng.random(n) < 0.9, rng.integers(1, 12, n), rng.integers(12, 300, n))
    judged_lengths = rng.integers(0, 25, n)
    rel_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    judged_offsets = np.concatenate([[0], np.cumsum(judged_lengths)]).astype(np.int64)
    rel = rng.choice([0.0, 0.0, 1.0, 2.0, 3.0], size=int(rel_offsets[-1]))
    judged = rng.choice([0.0, 1.0, 2.0, 3.0], size=int(judged_offsets[-1]))
    return Segment(rel, rel_offsets, judged, judged_offsets)


@pytest.mark.parametrize("cells", [1, 64, 5_000, 1 << 24])
def test_chunks_cover_every_query_once_with_its_own_arrays(cells: int) -> None:
    rng = np.random.default_rng(4)
    segments = [_uneven(rng, 700), _uneven(rng, 0), _uneven(rng, 300)]
    work = chunks(segments, cells)
    seen = np.zeros(1000, dtype=np.int64)
    whole = Ranked((), tuple(segments), 0)
    rel_rows = _rows(whole.rel, whole.rel_offsets)
    judged_rows = _rows(whole.judged, whole.judged_offsets)
    for chunk in work:
        at = np.arange(1000)[chunk.at]
        seen[at] += 1
        b = chunk.batch()
        assert b.length.tolist() == [len(rel_rows[i]) for i in at]
        assert b.judged_length.tolist() == [len(judged_rows[i]) for i in at]
        assert [row[:n].tolist() for row, n in zip(b.rel, b.length, strict=True)] == [
            rel_rows[i] for i in at
        ]
        assert [row[:n].tolist() for row, n in zip(b.judged, b.judged_length, strict=True)] == [
            judged_rows[i] for i in at
        ]
        rows, width = b.num_queries, max(b.rel.shape[1], b.judged.shape[1])
        assert rows == 1 or width * rows <= max(cells, width)
    assert (seen == 1).all()
    assert padded_cells(segments) == sum(
        max(len(r), len(j)) for r, j in zip(rel_rows, judged_rows, strict=True)
    )
    if cells == 1 << 24:  # uneven lengths: grouped, not padded to the longest
        assert len(work) > 2


@pytest.mark.parametrize("compiled", [True, False])
def test_a_class_of_many_small_segments_is_evaluated_together(compiled: bool) -> None:
    # One segment a part of the scanner: the queries of a length class in several segments
    # go in one chunk, and each query's values still land at its own place.
    rng = np.random.default_rng(9)
    segments = [_uneven(rng, 40) for _ in range(12)]
    work = chunks(segments, 1 << 20)
    assert any(len(chunk.pieces) > 1 for chunk in work)
    assert len(work) < sum(len(_by_class(g)) for g in segments)  # not a chunk a class a part
    specs = tuple(parse_metric(m) for m in ["rr", "precision@5", "ndcg@10"])
    whole = Ranked((), tuple(segments), 0)
    batch = RankingBatch.from_ragged(
        whole.rel, whole.rel_offsets, whole.judged, whole.judged_offsets
    )
    one = evaluate(batch, specs)
    values = _kernels(specs, segments, "linear", 1, threads=2, compiled=compiled)
    assert {k: v.tobytes() for k, v in values.items()} == {k: v.tobytes() for k, v in one.items()}


@pytest.mark.parametrize("compiled", [True, False])
def test_the_kernels_over_chunks_give_one_batch_s_values(compiled: bool) -> None:
    # numpy's kernels over chunks, or the compiled ones over the segments' ranges
    rng = np.random.default_rng(8)
    segments = (_uneven(rng, 900), _uneven(rng, 500))
    specs = tuple(parse_metric(m) for m in ["rr", "ap", "precision@5", "ndcg@10", "recall@3"])
    whole = Ranked((), segments, 0)
    batch = RankingBatch.from_ragged(
        whole.rel, whole.rel_offsets, whole.judged, whole.judged_offsets
    )
    one = evaluate(batch, specs)
    for threads in (1, 2):
        values = _kernels(specs, segments, "linear", 1, threads=threads, compiled=compiled)
        assert {k: v.tobytes() for k, v in values.items()} == {
            k: v.tobytes() for k, v in one.items()
        }


# -- a cut set while a join runs ---------------------------------------------------


def test_the_cut_object_holds_a_depth_and_its_level() -> None:
    from ragstream.trec._trec_reader import Cut

    cut = Cut()
    assert (cut.depth, cut.level) == (0, float("inf"))
    cut.set(10, 2.0)
    assert (cut.depth, cut.level) == (10, 2.0)
    cut.set(0, 1.0)  # no depth: the level does not apply
    assert (cut.depth, cut.level) == (0, float("inf"))
    with pytest.raises(ValueError, match="depth"):
        Cut(-1)


def test_a_join_without_a_cut_keeps_whole_rankings_and_refuses_anything_else() -> None:
    # `cut` is a Cut or None (all of each ranking), as its signature says; None and no
    # argument join alike, and another object is a TypeError, not a crash.
    from ragstream.trec._trec_reader import Cut, join

    qrels = b"q1 0 d1 1\nq1 0 d3 2\n"
    run = b"".join(b"q1 Q0 d%d %d %d t\n" % (i, i, 20 - i) for i in range(1, 13))

    def plain(out: object) -> tuple[object, ...]:
        """The join's output with its buffers as bytes (they compare by identity)."""
        assert isinstance(out, tuple)
        segments = [tuple(bytes(memoryview(b)) for b in part) for part in out[3]]
        order = None if out[4] is None else bytes(memoryview(out[4]))
        return (*out[:3], segments, order, *out[5:])

    whole = plain(join(qrels, run, False, 1))
    assert whole[3] != []  # the one query, joined
    assert plain(join(qrels, run, False, 1, None)) == whole
    assert plain(join(qrels, run, False, 1, Cut())) == whole
    assert plain(join(qrels, run, False, 1, Cut(2))) != whole  # a cut shows
    with pytest.raises(TypeError, match="Cut or None"):
        join(qrels, run, False, 1, 3)  # type: ignore[arg-type]


def test_a_join_cut_while_it_runs_keeps_each_ranking_whole_or_cut(write: WriteFile) -> None:
    # The reader's Cut may be set while a join runs: each ranking is kept whole (joined
    # before) or cut (after).
    qrels_text, run_text = _collection(np.random.default_rng(12), 2000, 60)
    qrels, run = write("qrels", qrels_text), write("run", run_text)
    whole = join_files(qrels, run, keep_best=False, complete=False)
    assert whole is not None
    depth = RankingDepth(3, True)
    rows = _rows(whole.ranked.rel, whole.ranked.rel_offsets)
    cut_rows = [_expected_cut(r, depth, 1.0) for r in rows]
    assert rows != cut_rows
    for delay in (0.0, 0.002, 0.01):
        joined = join_while_cut(qrels, run, delay, depth)
        got = _rows(joined.ranked.rel, joined.ranked.rel_offsets)
        assert all(g in (r, c) for g, r, c in zip(got, rows, cut_rows, strict=True))
        assert joined.ranked.qids == whole.ranked.qids
    # never cut: every ranking whole; the same values either way
    joined = join_while_cut(qrels, run, None, depth)
    assert _rows(joined.ranked.rel, joined.ranked.rel_offsets) == rows
    metrics = ["rr", "precision@3", "ndcg@3"]
    result = evaluate_files(qrels, run, metrics)
    reference = evaluate_files(qrels, run, metrics, engine="numpy")
    assert {k: v.tobytes() for k, v in result.per_query.items()} == {
        k: v.tobytes() for k, v in reference.per_query.items()
    }


def test_a_file_that_cannot_be_mapped_is_left_to_numpy(write: WriteFile) -> None:
    qrels = write("qrels", "q1 0 a 1\n")
    assert join_files(qrels, write("empty", ""), keep_best=False, complete=False) is None


def test_query_ids_that_are_not_utf8_read_as_numpy_reads_them(write: WriteFile) -> None:
    # The scanner hands the ids over as one newline-separated bytes object, decoded when
    # read: an invalid sequence at the end of one id does not swallow the next one.
    ids = [b"q\xc3", b"q\xff1", b"\xe9t\xe9", b"ok", b"\xf0\x9f\x98", b"z\xc3\xa9"]
    qrels = b"".join(q + b" 0 d1 1\n" + q + b" 0 d2 0\n" for q in ids)
    run = b"".join(q + b" Q0 d%d %d %d t\n" % (i, i, 10 - i) for q in ids for i in range(1, 4))
    qrels_path, run_path = write("qrels", qrels), write("run", run)
    compiled = evaluate_files(qrels_path, run_path, ["rr", "precision@2"], engine="compiled")
    reference = evaluate_files(qrels_path, run_path, ["rr", "precision@2"], engine="numpy")
    assert compiled.qids == reference.qids
    assert len(compiled.qids) == len(ids)
    assert {k: v.tobytes() for k, v in compiled.per_query.items()} == {
        k: v.tobytes() for k, v in reference.per_query.items()
    }
