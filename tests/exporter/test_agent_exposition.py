"""What the agent serves: its families (the demo's engine and judge, after a few seconds of
traffic) are written byte for byte as prometheus_client's encoders write them, in every
format; and the judge's and the state hand-over's prometheus_client metrics, read back into
families, are written as prometheus_client writes those metrics."""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from collections.abc import Iterator

import pytest

from ragstream.checkpoint import HandoverCounters
from ragstream.checkpoint.collector import HandoverCollector
from ragstream.exporter.family import from_metric
from ragstream.exporter.text import TextRenderer, negotiate
from ragstream.judging.collector import JudgeCollector
from ragstream.wiring.demo import demo_agent
from tests.exporter.test_text_renderer import (
    ACCEPTS,
    assert_written_as_prometheus_client,
    encoded,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def restored_gc() -> Iterator[None]:
    """The agent tunes the collector for its process; the test process gets it back."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


async def test_the_agents_families_are_written_as_prometheus_client_writes_them(
    restored_gc: None,
) -> None:
    agent, judging = demo_agent(
        rate=200.0,
        drift_at=4.0,
        label_ttl=1.0,
        judge_rate=1.0,
        gold_share=0.5,
        seed=5,
        host="127.0.0.1",
        port=0,
    )
    asyncio.get_running_loop().call_later(8.0, agent.stop)
    await agent.run()
    families = agent.families()
    kinds = {f.name: f.kind for f in families}
    assert kinds["ragstream_query_ndcg"] == kinds["ragstream_judge_latency_seconds"] == "histogram"
    assert kinds["ragstream_events"] == kinds["ragstream_judge_requests"] == "counter"
    assert kinds["ragstream_build_info"] == kinds["ragstream_drift_alarm"] == "gauge"
    filled = {f.name for f in families if f.rows or any(h[1][-1] for h in f.histograms)}
    assert {"ragstream_query_ndcg", "ragstream_generation_judged_queries"} <= filled
    assert_written_as_prometheus_client(TextRenderer(), families)

    handover = HandoverCounters(written=3, fresh=1, bytes_written=12_345_678)
    handover.refused = Counter({"config": 2})
    judge = JudgeCollector(judging, agent.engine.config.label_keys, now=agent.engine.read_clock())
    metrics = [*judge.collect(), *HandoverCollector(handover).collect()]
    read_back = [from_metric(m) for m in metrics]
    for accept in ACCEPTS:
        fmt = negotiate(accept)
        assert (TextRenderer().render(read_back, fmt), fmt.content_type) == encoded(
            metrics, accept
        ), accept
