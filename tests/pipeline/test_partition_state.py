"""Partition state moves between engines: export -> adopt -> continue equals never moving."""

from __future__ import annotations

import json
import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from bench import series
from ragstream.events import Message
from ragstream.exporter.collector import EngineCollector
from ragstream.pipeline.engine import Engine, EngineConfig
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from tests.support.defaults import engine_config

START = 1_767_225_600.0
WALL = START + 7200.0  # the wall clock only judges "future" events in event mode
PARTITIONS = 3


def _config(clock: str = "event", **overrides: Any) -> EngineConfig:
    options: dict[str, Any] = {
        "cutoffs": (1, 5),
        "half_lives": (3600.0,),
        "windows": (60.0, 300.0, 3600.0),
        "clock": clock,
        "label_keys": ("app",),
        **overrides,
    }
    return engine_config(**options)


def _messages(n: int, seed: int = 3) -> list[Message]:
    traffic = SyntheticTraffic(SyntheticConfig(seed=seed, rate=5.0, start=START))
    return [
        Message(e.value, zlib.crc32(e.key) % PARTITIONS, i, "t", e.key)
        for i, e in enumerate(traffic.take(n))
    ]


def _feed(engine: Engine, messages: list[Message], batch: int) -> None:
    for i in range(0, len(messages), batch):
        engine.apply(messages[i : i + batch])


def _moved(state: dict[str, Any]) -> dict[str, Any]:
    """As it travels: strict JSON and back."""
    loaded: dict[str, Any] = json.loads(json.dumps(state, allow_nan=False))
    return loaded


def hand_over(
    first: Engine, second: Engine, messages: list[Message], cut: int, batch: int = 100
) -> list[dict[str, Any]]:
    """Partitions 0 and 1 move from ``first`` (which has applied ``messages[:cut]``) to
    ``second`` through their records, JSON and back; each then applies the rest of its
    partitions' messages. The records that moved."""
    moved = []
    for partition, state in first.export_partitions({0, 1}).items():  # 2 stays
        moved.append(state)
        second.adopt_partition(json.loads(json.dumps(state, allow_nan=False)))
        first.drop_partitions({partition})
    for start in range(cut, len(messages), batch):
        part = messages[start : start + batch]
        first.apply([m for m in part if m.partition == 2])
        second.apply([m for m in part if m.partition != 2])
    return moved


def _assert_same_reads(a: Engine, b: Engine, now: float) -> None:
    assert a.store.labelsets() == b.store.labelsets()
    ra, rb = a.store.read(now, exact=True), b.store.read(now, exact=True)
    assert ra.queries.tolist() == rb.queries.tolist()
    np.testing.assert_allclose(ra.mean(), rb.mean(), rtol=1e-9)
    np.testing.assert_allclose(ra.decayed_mean(), rb.decayed_mean(), rtol=1e-9)


MOVING = _messages(500)


@settings(max_examples=12, deadline=None)
@given(cut=st.integers(0, len(MOVING)), batch=st.sampled_from([25, 100, 500]))
def test_moving_every_partition_at_any_cut_equals_never_moving(cut: int, batch: int) -> None:
    messages = MOVING
    reference = Engine(_config(), wall=lambda: WALL)
    _feed(reference, messages[:cut], batch)
    _feed(reference, messages[cut:], batch)

    first = Engine(_config(), wall=lambda: WALL)
    _feed(first, messages[:cut], batch)
    second = Engine(_config(), wall=lambda: WALL)
    for partition, state in first.export_partitions({0, 1, 2}).items():
        second.adopt_partition(_moved(state))
        first.drop_partitions({partition})
    _feed(second, messages[cut:], batch)

    assert second.now() == reference.now()
    _assert_same_reads(reference, second, reference.now())
    assert second.open_queries == reference.open_queries
    assert second.pending_labels == reference.pending_labels
    assert first.events + second.events == reference.events  # each event counted once
    moved = {n: first.join_counters().get(n, 0) + c for n, c in second.join_counters().items()}
    assert moved == reference.join_counters()


def test_one_partition_moves_alone_and_reads_as_it_did_there() -> None:
    messages = _messages(600)
    source = Engine(_config(), wall=lambda: WALL)
    _feed(source, messages, 100)
    adopter = Engine(_config(), wall=lambda: WALL)
    adopter.adopt_partition(_moved(source.export_partitions([1])[1]))
    assert adopter.store.partitions() == [1]
    assert set(adopter.joins) == {1}
    kept = Engine(_config(), wall=lambda: WALL)  # the source with partitions 0 and 2 dropped
    _feed(kept, messages, 100)
    kept.drop_partitions({0, 2})
    _assert_same_reads(kept, adopter, source.now())
    assert adopter.open_queries == kept.open_queries > 0
    # a label for a query opened before the move replaces its contribution on the adopter
    last = [json.loads(m.value) for m in messages if m.partition == 1]
    query_id = next(e["query_id"] for e in reversed(last) if e["type"] == "retrieval")
    query = kept.find_query(query_id)
    assert query is not None
    doc = query.doc_ids[-1]
    feedback = {"type": "feedback", "query_id": query.query_id, "ts": query.ts + 1.0}
    label = Message(json.dumps({**feedback, "doc_id": doc, "rel": 3}).encode(), 1)
    kept.apply([label])
    adopter.apply([label])
    _assert_same_reads(kept, adopter, kept.now())


def test_an_adopter_whose_wall_clock_is_later_reads_the_aged_windows() -> None:
    wall = START + 30.0
    source = Engine(_config("wall"), wall=lambda: wall)
    messages = [m for m in _messages(300) if json.loads(m.value)["ts"] <= START + 30.0]
    source.apply(messages)
    retrievals = sum(json.loads(m.value)["type"] == "retrieval" for m in messages)
    assert source.store.read(wall, ("support",), exact=True).queries[0, 0] > 0  # 1m
    state = _moved(source.export_partitions({0, 1, 2})[0])
    later = START + 150.0  # two minutes on: the 1m window has emptied, the 5m one has not
    adopter = Engine(_config("wall"), wall=lambda: later)
    adopter.apply([])  # its rings move to its own clock first
    adopter.adopt_partition(state)
    source.drop_partitions({1, 2})
    _assert_same_reads(source, adopter, later)
    one, five, hour = adopter.store.read(later, exact=True).queries.sum(axis=0)[:3]
    assert adopter.spec.names[:3] == ("1m", "5m", "1h")
    assert one == 0
    assert 0 < five <= retrievals
    assert five == hour


def test_the_event_clock_moves_up_to_the_exporters() -> None:
    source = Engine(_config(), wall=lambda: WALL)
    _feed(source, _messages(300), 100)
    adopter = Engine(_config(), wall=lambda: WALL)
    adopter.apply([Message(b'{"type": "feedback"}')])  # invalid: the clock stays unset
    adopter.adopt_partition(_moved(source.export_partitions([2])[2]))
    assert adopter.now() == source.now()


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"buckets": 30}, "spec"),
        ({"windows": (60.0, 3600.0)}, "spec"),
        ({"label_keys": ("app", "index")}, "label_keys"),
        ({"gain": "exponential"}, "gain"),
        ({"clock": "wall"}, "clock"),
    ],
)
def test_state_kept_with_another_configuration_is_refused_untouched(
    overrides: dict[str, Any], named: str
) -> None:
    source = Engine(_config(), wall=lambda: WALL)
    _feed(source, _messages(200), 100)
    adopter = Engine(_config(**overrides), wall=lambda: WALL)
    with pytest.raises(ValueError, match=named):
        adopter.adopt_partition(_moved(source.export_partitions([0])[0]))
    assert len(adopter.store) == 0
    assert adopter.joins == {}


def test_an_unknown_state_version_is_refused() -> None:
    source = Engine(_config(), wall=lambda: WALL)
    state = {**source.export_partitions([0])[0], "version": 2}
    with pytest.raises(ValueError, match="version 2"):
        Engine(_config(), wall=lambda: WALL).adopt_partition(state)


def _exported(engine: Engine, now: float | None = None) -> series.Samples:
    """Every series the engine exports, read at ``now`` (default: its own clock)."""
    registry = CollectorRegistry()
    registry.register(EngineCollector(engine, clock=None if now is None else lambda: now))
    return series.parse(generate_latest(registry).decode())


def _with_bad(messages: list[Message]) -> list[Message]:
    """The messages with a malformed one after every 37th, on the same partition."""
    out: list[Message] = []
    for i, m in enumerate(messages):
        out.append(m)
        if i % 37 == 0:
            out.append(Message(b'{"type": "retrieval", "ts": ', m.partition, i, "t", m.key))
    return out


COUNTED = _with_bad(_messages(900))


def test_counts_move_with_their_partitions_each_event_counted_once_over_replicas() -> None:
    reference = Engine(_config(), wall=lambda: WALL)
    _feed(reference, COUNTED, 100)
    cut = 500
    a, b = Engine(_config(), wall=lambda: WALL), Engine(_config(), wall=lambda: WALL)
    _feed(a, COUNTED[:cut], 100)
    for state in a.export_partitions({0, 1}).values():
        b.adopt_partition(_moved(state))
    a.drop_partitions({0, 1})
    rest = COUNTED[cut:]
    _feed(a, [m for m in rest if m.partition == 2], 100)
    _feed(b, [m for m in rest if m.partition != 2], 100)
    a.finish()
    b.finish()
    reference.finish()
    now = reference.now()  # replicas read at one time (the wall clock, in a live run)
    got_a, got_b = _exported(a, now), _exported(b, now)
    assert {dict(k[1]).get("partition") for k in got_a} == {None, "2"}
    assert {dict(k[1]).get("partition") for k in got_b} == {None, "0", "1"}
    expected = series.without_means(_exported(reference))
    assert series.compare(expected, series.combine([got_a, got_b])) == []
    assert sum(reference.invalid.values()) == len(COUNTED) - 900 > 0
    assert a.events + b.events == reference.events
    assert sum(a.join_counters().values()) > 0


@settings(max_examples=8, deadline=None)
@given(
    checkpoint=st.integers(0, len(COUNTED)),
    lost=st.integers(0, 300),
    batch=st.sampled_from([25, 100, 400]),
)
def test_a_restart_from_a_checkpoint_re_applies_only_the_later_events(
    checkpoint: int, lost: int, batch: int
) -> None:
    """The crash of a replica in miniature: it checkpoints every partition, applies more
    events (lost with it), and a new one adopts the checkpoint and re-applies the events
    after it: every exported series equals a run that never crashed."""
    reference = Engine(_config(), wall=lambda: WALL)
    _feed(reference, COUNTED, batch)
    crashed = Engine(_config(), wall=lambda: WALL)
    _feed(crashed, COUNTED[:checkpoint], batch)
    states = crashed.export_partitions({0, 1, 2})
    _feed(crashed, COUNTED[checkpoint : checkpoint + lost], batch)  # applied, then lost
    restarted = Engine(_config(), wall=lambda: WALL)
    for state in states.values():
        restarted.adopt_partition(_moved(state))
    _feed(restarted, COUNTED[checkpoint:], batch)
    assert series.compare(_exported(reference), _exported(restarted)) == []
    resumed = Engine.restore(_config(), _moved(restarted.snapshot()), wall=lambda: WALL)
    assert series.compare(_exported(reference), _exported(resumed)) == []


def test_adopted_label_values_count_against_the_cap() -> None:
    source = Engine(_config(), wall=lambda: WALL)
    _feed(source, _messages(300), 100)
    held = {ls[0] for ls in source.store.labelsets()}
    assert len(held) == 3
    adopter = Engine(_config(max_label_values=3), wall=lambda: WALL)
    for partition, state in source.export_partitions({0, 1, 2}).items():
        adopter.adopt_partition(_moved(state))
        assert partition in adopter.store.partitions()
    assert adopter.labelsets({"app": "brand-new"}) == ("other",)
    assert adopter.labelsets({"app": "support"}) == ("support",)
