"""What is judged is partition state: the answers sampled and not judged yet, and the
judgment windows, move with a partition to its next owner and come back after a crash from
the state saved with the offsets, so that each sampled answer lands in the windows once.

Every replica runs the real engine and the real lexical judge on synthetic traffic; the
reference is one replica that never moved or crashed."""

from __future__ import annotations

import asyncio
import json
import zlib
from typing import Any

import numpy as np
import pytest

from ragstream.config.judging import JudgeSettings, SamplingSettings
from ragstream.events import Message
from ragstream.judging.partition import JudgePartition
from ragstream.judging.service import JudgingService
from ragstream.pipeline.engine import Engine
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.windows import WindowStore
from ragstream.wiring import judging_service
from tests.support.defaults import agent_settings, engine_config

START = 1_767_225_600.0
WALL = START + 7200.0
NOW = START + 1800.0  # every replica reads its judgment windows at one time
WINDOWS = (60.0, 300.0, 3600.0)
PARTITIONS = 3
BATCH = 50


def _messages(n: int) -> list[Message]:
    traffic = SyntheticTraffic(SyntheticConfig(seed=11, rate=5.0, start=START))
    return [
        Message(e.value, zlib.crc32(e.key) % PARTITIONS, i, "t", e.key)
        for i, e in enumerate(traffic.take(n))
    ]


MESSAGES = _messages(1500)
CONFIG = engine_config(
    cutoffs=(1, 5), half_lives=(3600.0,), windows=WINDOWS, clock="event", label_keys=("app",)
)


def _service(engine: Engine) -> JudgingService:
    settings = JudgeSettings(
        sampling=SamplingSettings(rate=0.5, max_per_second=None), queue_size=100_000
    )
    return judging_service(
        agent_settings(settings, WINDOWS),
        labelset=engine.labelsets,
        sampler_clock=lambda: NOW,
        window_clock=lambda: NOW,
    )


def _replica(*, attach: bool = True) -> tuple[Engine, JudgingService]:
    engine = Engine(CONFIG, wall=lambda: WALL)
    service = _service(engine)
    if attach:
        engine.attach("judge", service)
    return engine, service


def _moved(state: Any) -> Any:
    """As it travels: strict JSON and back."""
    return json.loads(json.dumps(state, allow_nan=False))


async def _feed(
    engine: Engine, service: JudgingService, messages: list[Message], *, judge: bool = True
) -> None:
    """Apply batches and hand their answers to the judge; ``judge``: let the workers run
    between batches (False: the answers stay queued)."""
    for i in range(0, len(messages), BATCH):
        service.on_answers(engine.apply(messages[i : i + BATCH]).answers)
        if judge:
            await asyncio.sleep(0)


async def _reference() -> JudgingService:
    engine, service = _replica()
    await service.start()
    await _feed(engine, service, MESSAGES)
    await service.stop()
    return service


def _windows(services: list[JudgingService]) -> dict[tuple[str, ...], dict[str, Any]]:
    """The judgment windows of the replicas together, read at NOW: per label set and
    window, the number judged and the means."""
    store = WindowStore(services[0].results.spec)
    for service in services:
        for partition in service.results.store.partitions():
            store.import_partition(_moved(service.results.store.export_partition(partition)))
    read = store.read(NOW, exact=True)
    means = read.mean()
    return {
        labels: {
            name: (int(read.queries[i, j]), read.count[i, j].tolist(), means[i, j])
            for j, name in enumerate(store.spec.names)
        }
        for i, labels in enumerate(read.labelsets)
    }


def _assert_same(expected: JudgingService, got: list[JudgingService]) -> None:
    want, have = _windows([expected]), _windows(got)
    assert want.keys() == have.keys()
    for labels, windows in want.items():
        for name, (queries, counts, means) in windows.items():
            g_queries, g_counts, g_means = have[labels][name]
            assert (g_queries, g_counts) == (queries, counts), (labels, name)
            np.testing.assert_allclose(g_means, means, rtol=1e-9)


async def _handed_over(*, attach: bool) -> tuple[JudgingService, JudgingService]:
    """Replica a reads every partition, then partitions 0 and 1 move to replica b with
    answers of theirs still queued at a."""
    (a, judge_a), (b, judge_b) = _replica(attach=attach), _replica(attach=attach)
    await judge_a.start()
    await judge_b.start()
    cut = 700
    await _feed(a, judge_a, MESSAGES[: cut - 200])
    await _feed(a, judge_a, MESSAGES[cut - 200 : cut], judge=False)
    queued = judge_a.workers.depth
    for state in a.export_partitions({0, 1}).values():
        b.adopt_partition(_moved(state))
    a.drop_partitions({0, 1})
    rest = MESSAGES[cut:]
    await _feed(a, judge_a, [m for m in rest if m.partition == 2])
    await _feed(b, judge_b, [m for m in rest if m.partition != 2])
    await judge_a.stop()
    await judge_b.stop()
    assert queued > 0  # the hand-over found answers not judged yet
    return judge_a, judge_b


async def test_queued_answers_and_windows_move_with_their_partitions() -> None:
    reference = await _reference()
    assert reference.results.recorded > 100
    judge_a, judge_b = await _handed_over(attach=True)
    _assert_same(reference, [judge_a, judge_b])
    # a judged the answers of 0 and 1 it still had queued for nothing: b judged them again
    assert judge_a.discarded > 0
    assert judge_a.results.store.partitions() == [2]
    assert judge_a.results.recorded + judge_b.results.recorded == reference.results.recorded
    assert judge_a.unjudged == judge_b.unjudged == 0


async def test_without_the_side_state_judgments_stay_behind_or_are_lost() -> None:
    """The control: a judge not attached to the engine keeps its queue and windows where
    they were: after a hand-over the old owner still exports the moved partitions, and a
    restart from the saved states has lost every judgment before them."""
    judge_a, judge_b = await _handed_over(attach=False)
    assert judge_a.results.store.partitions() == [0, 1, 2]  # it kept the moved ones
    assert judge_b.results.store.partitions() == [0, 1]
    reference = await _reference()
    crashed, judge_c = _replica(attach=False)
    await judge_c.start()
    await _feed(crashed, judge_c, MESSAGES[:800])
    states = _moved(crashed.export_partitions({0, 1, 2}))
    await judge_c.stop()
    restarted, judge_r = _replica(attach=False)
    for state in states.values():
        restarted.adopt_partition(state)
    await judge_r.start()
    await _feed(restarted, judge_r, MESSAGES[800:])
    await judge_r.stop()
    assert 0 < judge_r.results.recorded < reference.results.recorded
    judged = {k: {w: v[0] for w, v in r.items()} for k, r in _windows([judge_r]).items()}
    want = {k: {w: v[0] for w, v in r.items()} for k, r in _windows([reference]).items()}
    assert judged != want


async def test_a_restart_judges_what_the_checkpoint_had_queued_once() -> None:
    """kill -9 in miniature: the replica saves every partition with answers queued,
    judges and applies more (lost with it); a new replica adopts the saved states and
    re-applies the events after them."""
    reference = await _reference()
    crashed, judge_c = _replica()
    checkpoint = 800
    await _feed(crashed, judge_c, MESSAGES[: checkpoint - 150])
    await judge_c.start()
    await asyncio.sleep(0)
    await _feed(crashed, judge_c, MESSAGES[checkpoint - 150 : checkpoint], judge=False)
    assert judge_c.unjudged > 0
    states = _moved(crashed.export_partitions({0, 1, 2}))
    saved = _moved(crashed.snapshot())
    await _feed(crashed, judge_c, MESSAGES[checkpoint : checkpoint + 300])  # then lost
    await judge_c.stop()

    restarted, judge_r = _replica()
    for state in states.values():
        restarted.adopt_partition(state)
    assert judge_r.unjudged > 0  # queued again
    await judge_r.start()
    await _feed(restarted, judge_r, MESSAGES[checkpoint:])
    await judge_r.stop()
    _assert_same(reference, [judge_r])
    assert judge_r.unjudged == 0

    # the same from a whole-engine snapshot (file mode's checkpoint)
    judge_s = _service(Engine(CONFIG, wall=lambda: WALL))
    resumed = Engine.restore(CONFIG, saved, wall=lambda: WALL, sides={"judge": judge_s})
    assert judge_s.unjudged > 0
    await judge_s.start()
    await _feed(resumed, judge_s, MESSAGES[checkpoint:])
    await judge_s.stop()
    _assert_same(reference, [judge_s])


async def test_the_judges_share_is_held_in_the_engines_partition_states() -> None:
    """Each partition's unjudged answers are in its `PartitionState` (as a `JudgePartition`):
    dropping the partition from the engine drops them, and its record carries them."""
    engine, service = _replica()
    await _feed(engine, service, MESSAGES[:300], judge=False)  # nothing judged yet
    shares = {p: state.sides.get("judge") for p, state in engine.partitions.items()}
    assert shares
    assert all(isinstance(s, JudgePartition) for s in shares.values())
    held = {p: len(s.pending or {}) for p, s in shares.items() if isinstance(s, JudgePartition)}
    assert sum(held.values()) == service.unjudged == service.workers.depth > 0
    moved = _moved(engine.export_partitions({0})[0])
    assert len(moved["sides"]["judge"]["pending"]) == held[0]
    engine.drop_partitions({0})
    assert service.unjudged == sum(held.values()) - held[0]
    assert 0 not in service.results.store.partitions()
    engine.adopt_partition(moved)
    assert service.unjudged == sum(held.values())  # queued again (the queue holds all)


def test_a_service_holding_partitions_is_not_bound_to_another_map() -> None:
    """A service not attached keeps its shares in its own partition map; once it holds one,
    attaching it to an engine (whose map would not hold them) is refused."""
    engine, service = _replica(attach=False)
    service.on_answers(engine.apply(MESSAGES[:100]).answers)
    assert service.partitions
    assert not any(s.sides for s in engine.partitions.values())
    with pytest.raises(ValueError, match="attach it first"):
        engine.attach("judge", service)
