"""Offline evaluation of TREC run files against qrels, with trec_eval's conventions.

`evaluate_files(qrels, run, metrics)` reads both files -- in one compiled pass when the
C extension is built, with a vectorized numpy parser otherwise (no Python loop over lines
either way) --, orders each query's results as trec_eval does, and computes the metrics
with the batch kernels of `ragstream.metrics`. `report` formats the result as a table,
JSON, or trec_eval's own `-q` layout. See docs/eval.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ragstream.trec._compiled import start_join
from ragstream.trec.errors import TrecFormatError

if TYPE_CHECKING:
    from ragstream.trec.evaluate import (
        DEFAULT_METRICS,
        Engine,
        TrecEvaluation,
        evaluate_files,
    )
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
    "start_join",
]

_LAZY = {
    "DEFAULT_METRICS": "ragstream.trec.evaluate",
    "Engine": "ragstream.trec.evaluate",
    "TrecEvaluation": "ragstream.trec.evaluate",
    "evaluate_files": "ragstream.trec.evaluate",
    "read_qrels": "ragstream.trec.table",
    "read_run": "ragstream.trec.table",
    "TrecTable": "ragstream.trec.table",
}


def __getattr__(name: str) -> object:
    """What needs numpy, imported when first used: `ragstream eval` starts the compiled
    join (`start_join`) before numpy is imported, and needs the numpy readers only when
    the scanner declines a file."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
