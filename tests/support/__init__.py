"""Test infrastructure shared by the test suite and the benchmarks: real external services."""

from tests.support.kafka_broker import KafkaBroker, KafkaBrokerError, TopicFactory
from tests.support.kafka_files import fetch_kafka_jars
from tests.support.kafka_read import committed_offsets, read_records
from tests.support.kafka_write import produce_records
from tests.support.trec_eval import TrecEvalError, fetch_trec_eval, run_trec_eval

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
