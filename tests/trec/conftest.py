"""Fixtures of the TREC evaluator tests: small files on disk and the pytrec_eval reference."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval

from ragstream.metrics import parse_metric, trec_name

WriteFile = Callable[[str, str | bytes], Path]
Reference = Callable[..., dict[str, dict[str, float]]]


@pytest.fixture
def write(tmp_path: Path) -> WriteFile:
    """`write(name, text)` creates tmp_path/name with exactly `text` and returns its path."""

    def _write(name: str, text: str | bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return path

    return _write


@pytest.fixture
def trec_eval() -> Reference:
    """trec_eval's C code (pytrec_eval): `trec_eval(qrels, run, metrics)` per-query values."""
    return _trec_eval


def _measure_arg(name: str) -> str:
    """pytrec_eval's measure syntax: P_5 -> "P.5", recip_rank -> "recip_rank"."""
    base, _, cutoff = name.rpartition("_")
    return f"{base}.{cutoff}" if cutoff.isdigit() else name


def _trec_eval(
    qrels: Path, run: Path, metrics: list[str], relevance_level: int = 1
) -> dict[str, dict[str, float]]:
    """Per-query values {qid: {canonical metric name: value}} computed by trec_eval's C code."""
    with qrels.open() as f:
        qrel: Any = pytrec_eval.parse_qrel(f)
    with run.open() as f:
        parsed: Any = pytrec_eval.parse_run(f)
    names = {trec_name(parse_metric(m)): parse_metric(m).name for m in metrics}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrel, {_measure_arg(n) for n in names}, relevance_level=relevance_level
    )
    raw: dict[str, dict[str, float]] = evaluator.evaluate(parsed)
    return {
        qid: {names[m]: v for m, v in values.items() if m in names} for qid, values in raw.items()
    }
