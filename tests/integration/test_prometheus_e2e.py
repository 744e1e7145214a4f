"""A real Prometheus server scrapes running agents; its answers match what they report."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support import KafkaBroker, TopicFactory, produce_records
from tests.support.agent_process import running_agent, wait_ready
from tests.support.prometheus import PrometheusServer

pytestmark = pytest.mark.prometheus

# Every series the agent documents for a running demo (docs/exposition.md).
DEMO_SERIES = [
    "ragstream_retrieval_mrr",
    "ragstream_retrieval_ndcg",
    "ragstream_retrieval_dcg",
    "ragstream_retrieval_precision",
    "ragstream_retrieval_recall",
    "ragstream_retrieval_hit_rate",
    "ragstream_retrieval_mrr_decayed",
    "ragstream_retrieval_ndcg_decayed",
    "ragstream_retrieval_dcg_decayed",
    "ragstream_retrieval_precision_decayed",
    "ragstream_retrieval_recall_decayed",
    "ragstream_retrieval_doc_age_seconds",
    "ragstream_window_queries",
    "ragstream_window_sums",
    "ragstream_window_counts",
    "ragstream_drift_score",
    "ragstream_drift_alarm",
    "ragstream_drift_detections_total",
    "ragstream_query_rr_bucket",
    "ragstream_query_ndcg_bucket",
    "ragstream_query_precision_bucket",
    "ragstream_query_recall_bucket",
    "ragstream_query_ndcg_sum",
    "ragstream_query_ndcg_count",
    "ragstream_events_total",
    "ragstream_invalid_events_total",
    "ragstream_labels_total",
    "ragstream_open_queries",
    "ragstream_pending_labels",
    "ragstream_queries_finalized_total",
    "ragstream_last_event_timestamp_seconds",
    "ragstream_series",
    "ragstream_build_info",
    "ragstream_generation_faithfulness",
    "ragstream_generation_answer_relevance",
    "ragstream_generation_context_relevance",
    "ragstream_generation_hallucination_ratio",
    "ragstream_generation_judged_queries",
    "ragstream_generation_refusal_ratio",
    "ragstream_generation_hallucination_ratio_corrected",
    "ragstream_generation_hallucination_ratio_corrected_bound",
    "ragstream_judge_agreement_total",
    "ragstream_judge_sensitivity",
    "ragstream_judge_specificity",
    "ragstream_judge_gold_comparisons",
    "ragstream_judge_gold_total",
    "ragstream_judge_samples_total",
    "ragstream_judge_requests_total",
    "ragstream_judge_queue_depth",
]


async def _own_samples(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    async with aiohttp.ClientSession() as http, http.get(url + "/metrics") as response:
        text = await response.text()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def _poll(prom: PrometheusServer, promql: str, count: int = 1, within: float = 60.0) -> list:  # type: ignore[type-arg]
    return await asyncio.to_thread(prom.wait_for, promql, within, count)


async def test_prometheus_scrapes_the_demo_and_sees_every_documented_series(
    tmp_path: Path,
) -> None:
    args = [
        "demo",
        "--host",
        "127.0.0.1",
        "--rate",
        "30",
        "--refresh",
        "3600",
        "--label-ttl",
        "2",
        "--drift-at",
        "5",
        "--duration",
        "120",
    ]
    async with running_agent(args, tmp_path / "demo.log") as agent:
        with PrometheusServer([agent.target]) as prom:
            for name in DEMO_SERIES:
                await _poll(prom, name)
            up = prom.query("up")
            assert [r["value"][1] for r in up] == ["1"]
            apps = {r["metric"]["app"] for r in prom.query('ragstream_retrieval_mrr{window="1m"}')}
            assert apps == {"support", "search", "docs"}


def _quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus's histogram_quantile on cumulative (upper bound, count) pairs."""
    buckets = sorted(buckets)
    total = buckets[-1][1]
    rank = q * total
    lower, below = 0.0, 0.0
    for upper, cumulative in buckets:
        if cumulative >= rank:
            if math.isinf(upper):
                return lower
            return lower + (upper - lower) * (rank - below) / (cumulative - below)
        lower, below = upper, cumulative
    raise AssertionError("unreachable")


async def test_two_agents_on_kafka_live_decay_and_a_quantile_across_replicas(
    kafka_broker: KafkaBroker, kafka_topic_factory: TopicFactory, tmp_path: Path
) -> None:
    topic = await kafka_topic_factory(2)
    start = time.time() - 20.0
    traffic = SyntheticTraffic(
        SyntheticConfig(seed=8, start=start, rate=40.0, feedback_delay=(0.5, 3.0), probe_share=0.5)
    )
    events = [e for e in traffic.take(4000) if e.event["ts"] < time.time()]
    env = {
        "RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": kafka_broker.bootstrap_servers,
        "RAGSTREAM_KAFKA__TOPICS": f'["{topic}"]',
    }
    args = [
        "run",
        "--group-id",
        "e2e",
        "--set",
        "http.host=127.0.0.1",
        "--set",
        "kafka.auto_offset_reset=earliest",
        "--set",
        "labels.keys=[app]",
        "--set",
        "join.label_ttl=2s",
        "--set",
        "metrics.half_lives=[1m]",
    ]
    async with (
        running_agent(args, tmp_path / "a.log", env) as first,
        running_agent(args, tmp_path / "b.log", env) as second,
    ):
        # one partition each, before any event exists
        await asyncio.to_thread(wait_ready, [first, second])
        await produce_records(
            kafka_broker.bootstrap_servers, topic, [(e.key, e.value) for e in events]
        )
        targets = [first.target, second.target]
        with PrometheusServer(targets) as prom:
            # both replicas consume (one partition each) and everything is applied
            total = 'sum(ragstream_events_total{outcome=~"processed|late|duplicate"})'
            deadline = time.monotonic() + 90
            while True:
                result = prom.query(total)
                if result and float(result[0]["value"][1]) == len(events):
                    break
                assert time.monotonic() < deadline, f"applied: {result}"
                await asyncio.sleep(1)
            per_instance = prom.query(
                'sum by (instance) (ragstream_events_total{type="retrieval"})'
            )
            assert len(per_instance) == 2
            assert all(float(r["value"][1]) > 0 for r in per_instance)
            await asyncio.sleep(4)  # the label TTL ends: every query is final
            # what Prometheus stored equals what each agent reports about itself
            for url, target in zip((first.url, second.url), targets, strict=True):
                own = await _own_samples(url)
                stored = await _poll(
                    prom, f'ragstream_retrieval_mrr{{instance="{target}",window="1h"}}'
                )
                for series in stored:
                    labels = {
                        k: v
                        for k, v in series["metric"].items()
                        if k not in ("__name__", "instance", "job")
                    }
                    key = ("ragstream_retrieval_mrr", frozenset(labels.items()))
                    assert float(series["value"][1]) == pytest.approx(own[key], rel=1e-12)
            # a decayed gauge moves between two scrapes (half-life 1m), the plain one does not
            decayed = 'sum(ragstream_retrieval_mrr_decayed{window="1h",app="search"})'
            plain = 'sum(ragstream_retrieval_mrr{window="1h",app="search"})'
            t1 = time.time()
            d1, p1 = (
                float(prom.query(decayed, at=t1)[0]["value"][1]),
                float(prom.query(plain, at=t1)[0]["value"][1]),
            )
            await asyncio.sleep(6)
            t2 = time.time()
            d2, p2 = (
                float(prom.query(decayed, at=t2)[0]["value"][1]),
                float(prom.query(plain, at=t2)[0]["value"][1]),
            )
            assert p2 == p1
            assert 0 < d2 < d1
            assert d2 / d1 == pytest.approx(2 ** (-(t2 - t1) / 60), abs=0.03)  # scrape jitter
            # the median NDCG@10 across both replicas, from the summed histograms
            promql = 'histogram_quantile(0.5, sum by (le) (ragstream_query_ndcg_bucket{k="10"}))'
            median = float(prom.query(promql)[0]["value"][1])
            summed: dict[str, float] = {}
            for url in (first.url, second.url):
                for (name, pairs), value in (await _own_samples(url)).items():
                    label_map = dict(pairs)
                    if name == "ragstream_query_ndcg_bucket" and label_map.get("k") == "10":
                        summed[label_map["le"]] = summed.get(label_map["le"], 0.0) + value
            buckets = [(float(le), count) for le, count in summed.items()]
            assert summed["+Inf"] > 100
            assert median == pytest.approx(_quantile(0.5, buckets), rel=1e-9)
