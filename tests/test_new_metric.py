"""Adding a metric is one kernel function and one registry row, here in the tests only.

The family `relevant@k` (the number of relevant documents in the top k) is registered for
the duration of each test; everything that names metrics must then know it without
another edit: name parsing, `evaluate`, the engine's windows and per-query rows, the
Prometheus exposition, the console table, `replay`'s records and `ragstream eval`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from prometheus_client import CollectorRegistry, generate_latest

from ragstream.events import Message
from ragstream.exporter.collector import EngineCollector
from ragstream.metrics import REGISTRY, MetricFamily, RankingBatch, evaluate, parse_metric
from ragstream.metrics._context import _column, _Context
from ragstream.pipeline.engine import Engine
from ragstream.report.console import render_summary
from ragstream.sinks.results import query_record
from ragstream.trec import evaluate_files
from tests.support.defaults import engine_config

T0 = 1_767_225_600.0


def _relevant_retrieved(ctx: _Context, k: int | None, decayed: bool) -> NDArray[np.float64]:
    """relevant@k = the number of relevant documents in the top k."""
    assert k is not None
    return _column(ctx.hits(decayed), k)


@pytest.fixture
def relevant() -> Iterator[MetricFamily]:
    family = MetricFamily(
        "relevant",
        _relevant_retrieved,
        help="Mean number of relevant documents in the top k.",
        display="Rel",
    )
    REGISTRY.add(family)
    try:
        yield family
    finally:
        REGISTRY.remove("relevant")


def test_the_name_parses_and_evaluates(relevant: MetricFamily) -> None:
    spec = parse_metric("Relevant@3")
    assert (spec.family, spec.k, spec.title) == ("relevant", 3, "Rel@3")
    batch = RankingBatch.from_lists([[1, 0, 2, 1], [0, 0], []], [[1, 2, 1, 3], [1], []])
    values = evaluate(batch, ["relevant@3", "precision@3"])
    assert values["relevant@3"].tolist() == [2.0, 0.0, 0.0]  # ranks 1 and 3; none; none
    np.testing.assert_array_equal(values["relevant@3"] / 3, values["precision@3"])
    with pytest.raises(ValueError, match="has no decayed form"):
        parse_metric("relevant_decayed@3")


def _events() -> list[Message]:
    """Two labeled queries of app=a: relevant in the top 5 are 2 and 1."""
    events = [
        {
            "type": "retrieval",
            "query_id": "q1",
            "ts": T0,
            "labels": {"app": "a"},
            "results": [{"doc_id": "x", "rel": 1}, {"doc_id": "y"}, {"doc_id": "z", "rel": 2}],
        },
        {
            "type": "retrieval",
            "query_id": "q2",
            "ts": T0 + 1,
            "labels": {"app": "a"},
            "results": [{"doc_id": "x"}, {"doc_id": "w", "rel": 1}],
        },
    ]
    return [Message(json.dumps(e).encode()) for e in events]


def test_the_agent_keeps_exports_and_shows_it(relevant: MetricFamily) -> None:
    config = engine_config(cutoffs=(1, 5), clock="event", label_keys=("app",), label_ttl=10.0)
    engine = Engine(config, wall=lambda: T0 + 100)
    assert "relevant@5" in engine.layout.plain
    engine.apply(_events())
    read = engine.store.read(engine.now(), ("a",), exact=True)
    one_minute = read.mean()[0, engine.spec.names.index("1m")]
    assert one_minute[engine.layout.index("relevant@5")] == pytest.approx(1.5)

    registry = CollectorRegistry()
    registry.register(EngineCollector(engine))
    text = generate_latest(registry).decode()
    assert "# HELP ragstream_retrieval_relevant Mean number of relevant documents" in text
    assert 'ragstream_retrieval_relevant{app="a",k="5",window="1m"} 1.5' in text

    table = render_summary(engine, engine.now(), windows=("1m",), metrics=("relevant@5",))
    assert table.splitlines()[0].split()[5] == "Rel@5"  # after "label set", window, ...
    assert table.splitlines()[2].split()[4] == "1.500"

    final = engine.finish()
    records = {q.query_id: query_record(engine, q) for q in final}
    assert records["q1"]["metrics"]["relevant@5"] == 2.0
    assert records["q2"]["metrics"]["relevant@1"] == 0.0


def test_eval_computes_it(relevant: MetricFamily, tmp_path: Path) -> None:
    qrels = tmp_path / "qrels"
    run = tmp_path / "run"
    qrels.write_text("1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 d 1\n")
    run.write_text("1 Q0 a 1 3.0 t\n1 Q0 b 2 2.0 t\n1 Q0 c 3 1.0 t\n2 Q0 e 1 1.0 t\n")
    for engine in ("auto", "numpy"):
        result = evaluate_files(qrels, run, ["relevant@2", "relevant@3"], engine=engine)
        assert result.per_query["relevant@2"].tolist() == [1.0, 0.0]
        assert result.per_query["relevant@3"].tolist() == [2.0, 0.0]
