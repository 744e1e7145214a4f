"""Hostile input on trace topics: no exception but counted reasons, every message counted
once, and the valid traces around it give their events."""

from __future__ import annotations

import random

import pytest

from bench.hostile_data import hostile_messages
from ragstream.events import DECODE_REASONS, Message
from ragstream.pipeline.engine import Engine
from tests.support.defaults import engine_config
from tests.traces.test_spans import App, _llm, _retriever

pytestmark = pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning")


def _traces(encoding: str) -> list[Message]:
    app = App()
    for i in range(5):
        with app.span("chain", {"openinference.span.kind": "CHAIN"}, root=True):
            with app.span("r", _retriever([{"id": f"d{i}", "content": "text"}])):
                pass
            with app.span("llm", _llm("q", f"a{i}")):
                pass
    return app.messages(encoding)


def _mutations(values: list[bytes], rng: random.Random, n: int) -> list[bytes]:
    """Truncations, byte flips, insertions and splices of valid messages."""
    out = []
    for _ in range(n):
        value = bytearray(rng.choice(values))
        op = rng.randrange(4)
        at = rng.randrange(len(value))
        if op == 0:
            del value[at:]
        elif op == 1:
            value[at] ^= 1 << rng.randrange(8)
        elif op == 2:
            value[at:at] = rng.randbytes(rng.randrange(1, 8))
        else:
            other = rng.choice(values)
            value[at:] = other[rng.randrange(len(other)) :]
        out.append(bytes(value))
    return out


@pytest.mark.parametrize("encoding", ["otlp_proto", "otlp_json"])
def test_hostile_and_mutated_messages_on_a_trace_topic(encoding: str) -> None:
    good = _traces(encoding)
    rng = random.Random(encoding)
    junk = [h.value for h in hostile_messages(300, seed=14)]
    junk += _mutations([m.value for m in good], rng, 400)
    engine = Engine(engine_config(clock="event", formats=((good[0].topic, encoding),)))
    batch = [Message(v, 0, 1000 + i, good[0].topic) for i, v in enumerate(junk)]
    mixed = [*batch[:350], *good, *batch[350:]]
    report = engine.apply(mixed)  # never raises
    assert {e.reason for _, e in report.invalid} <= set(DECODE_REASONS)
    assert (
        engine.events[("unknown", "invalid")] == len(report.invalid) == sum(engine.invalid.values())
    )
    # most junk is refused (a mutation may still be a valid request, with spans or without)
    assert len({m.offset for m, _ in report.invalid}) >= len(junk) * 3 // 4
    answers = {a.answer for _, a in report.answers} | {
        a.answer for _, a in engine.apply([]).answers
    }
    assert {f"a{i}" for i in range(5)} <= answers  # the valid traces gave their answers
