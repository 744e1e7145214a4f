"""Test infrastructure shared by the test suite and the benchmarks: real external services."""

from ragstream.testing.kafka_broker import KafkaBroker, KafkaBrokerError, TopicFactory
from ragstream.testing.kafka_files import fetch_kafka_jars
from ragstream.testing.kafka_read import read_records

__all__ = ["KafkaBroker", "KafkaBrokerError", "TopicFactory", "fetch_kafka_jars", "read_records"]
