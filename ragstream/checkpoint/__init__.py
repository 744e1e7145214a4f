"""Partition state moved between replicas through a compacted Kafka topic."""

from ragstream.checkpoint.handover import (
    REFUSAL_REASONS,
    Handover,
    HandoverCounters,
    PartitionStates,
)
from ragstream.checkpoint.record import PartitionSnapshot, RefusedSnapshotError, SnapshotLog, encode
from ragstream.checkpoint.topic import StateTopic, StateTopicError

__all__ = [
    "REFUSAL_REASONS",
    "Handover",
    "HandoverCounters",
    "PartitionSnapshot",
    "PartitionStates",
    "RefusedSnapshotError",
    "SnapshotLog",
    "StateTopic",
    "StateTopicError",
    "encode",
]
