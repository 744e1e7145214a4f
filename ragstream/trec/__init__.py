"""Offline evaluation of TREC run files against qrels, with trec_eval's conventions.

`evaluate_files(qrels, run, metrics)` reads both files -- in one compiled pass when the
C extension is built, with a vectorized numpy parser otherwise (no Python loop over lines
either way) --, orders each query's results as trec_eval does, and computes the metrics
with the batch kernels of `ragstream.metrics`. `report` formats the result as a table,
JSON, or trec_eval's own `-q` layout. See docs/eval.md.
"""

from __future__ import annotations

from ragstream.trec.errors import TrecFormatError
from ragstream.trec.evaluate import DEFAULT_METRICS, Engine, TrecEvaluation, evaluate_files
from ragstream.trec.table import TrecTable, read_qrels, read_run

__all__ = [
    "DEFAULT_METRICS",
    "Engine",
    "TrecEvaluation",
    "TrecFormatError",
    "TrecTable",
    "evaluate_files",
    "read_qrels",
    "read_run",
]
