"""The synthetic traffic generator: deterministic, well-formed, and drifting on schedule."""

from __future__ import annotations

import json
from collections import Counter

from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic


def _first_relevant_rank(event: dict[str, object], grades: dict[str, int]) -> int | None:
    results = event["results"]
    assert isinstance(results, list)
    for rank, doc in enumerate(results, start=1):
        if grades.get(doc["doc_id"], 0) >= 1:
            return rank
    return None


def test_same_seed_gives_the_same_bytes_and_another_seed_does_not() -> None:
    a = [e.value for e in SyntheticTraffic(SyntheticConfig(seed=3)).take(500)]
    b = [e.value for e in SyntheticTraffic(SyntheticConfig(seed=3)).take(500)]
    c = [e.value for e in SyntheticTraffic(SyntheticConfig(seed=4)).take(500)]
    assert a == b
    assert a != c


def test_stream_carries_every_event_type_with_keys_and_delayed_feedback() -> None:
    traffic = SyntheticTraffic(SyntheticConfig(seed=1, probe_share=0.2))
    events = list(traffic.stream(400))
    kinds = Counter(e.event["type"] for e in events)
    assert kinds["retrieval"] == 400
    assert kinds["answer"] == 400
    assert kinds["feedback"] > 200
    probes = [e for e in events if "qrels" in e.event]
    assert 40 < len(probes) < 130
    for e in events:
        assert e.key == str(e.event["query_id"]).encode()
        assert json.loads(e.value) == e.event
    retrieval_arrival = {
        e.event["query_id"]: e.arrival for e in events if e.event["type"] == "retrieval"
    }
    feedback = [e for e in events if e.event["type"] == "feedback"]
    early = [e for e in feedback if e.arrival < retrieval_arrival[e.event["query_id"]]]
    late = [e for e in feedback if e.arrival > retrieval_arrival[e.event["query_id"]] + 1.0]
    assert early, "some feedback must arrive before its retrieval event"
    assert len(late) > len(early) * 10


def test_ranking_quality_and_freshness_drop_for_the_drifting_label_set_only() -> None:
    config = SyntheticConfig(seed=5, probe_share=1.0, rate=10.0, drift_at=100.0)
    traffic = SyntheticTraffic(config)
    rr: dict[tuple[int, bool], list[float]] = {}
    age: dict[tuple[int, bool], list[float]] = {}
    for event in (e.event for e in traffic.stream(2000)):
        if event["type"] != "retrieval":
            continue
        ls = config.label_sets.index(event["labels"])
        after = event["ts"] >= config.start + 100.0
        grades = {q["doc_id"]: q["rel"] for q in event["qrels"]}
        rank = _first_relevant_rank(event, grades)
        rr.setdefault((ls, after), []).append(0.0 if rank is None else 1.0 / rank)
        ages = [event["ts"] - doc["t_doc"] for doc in event["results"]]
        age.setdefault((ls, after), []).append(sum(ages) / len(ages))

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    assert mean(rr[(0, True)]) < mean(rr[(0, False)]) - 0.25
    assert abs(mean(rr[(1, True)]) - mean(rr[(1, False)])) < 0.1
    assert mean(age[(0, True)]) > 4 * mean(age[(0, False)])
    assert mean(age[(2, True)]) < 2 * mean(age[(2, False)])
