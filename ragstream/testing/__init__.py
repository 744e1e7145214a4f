"""Test infrastructure shared by the test suite and the benchmarks: real external services."""

from ragstream.testing.kafka_broker import KafkaBroker, KafkaBrokerError, TopicFactory
from ragstream.testing.kafka_files import fetch_kafka_jars
from ragstream.testing.kafka_read import committed_offsets, read_records
from ragstream.testing.kafka_write import produce_records
from ragstream.testing.trec_eval import TrecEvalError, fetch_trec_eval, run_trec_eval

__all__ = [
    "KafkaBroker",
    "KafkaBrokerError",
    "TopicFactory",
    "TrecEvalError",
    "committed_offsets",
    "fetch_kafka_jars",
    "fetch_trec_eval",
    "produce_records",
    "read_records",
    "run_trec_eval",
]
