"""Fixtures for the whole suite: one real Kafka broker per session, started on first use."""

import itertools
import re
import uuid
from collections.abc import Iterator

import pytest

from tests.support import KafkaBroker, TopicFactory, fetch_kafka_jars


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the broker ``kafka``, so ``-m "not kafka"`` skips them all."""
    for item in items:
        if "kafka_broker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kafka)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A single-node KRaft broker on 127.0.0.1, shared by the session (see docs/testing.md)."""
    with KafkaBroker(fetch_kafka_jars()) as broker:
        yield broker


@pytest.fixture
def kafka_topic_factory(kafka_broker: KafkaBroker, request: pytest.FixtureRequest) -> TopicFactory:
    """``await make_topic(partitions=1)`` creates a new topic named after the test."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", request.node.name)[:150]
    counter = itertools.count()

    async def make_topic(partitions: int = 1) -> str:
        name = f"{stem}-{next(counter)}-{uuid.uuid4().hex[:8]}"
        await kafka_broker.create_topic(name, partitions)
        return name

    return make_topic
