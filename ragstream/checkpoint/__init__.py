"""Partition state moved between replicas through a compacted Kafka topic."""

from ragstream.checkpoint.handover import Handover, HandoverCounters
from ragstream.checkpoint.record import PartitionSnapshot, RefusedSnapshotError, SnapshotLog, encode
from ragstream.checkpoint.topic import StateTopic

__all__ = [
    "Handover",
    "HandoverCounters",
    "PartitionSnapshot",
    "RefusedSnapshotError",
    "SnapshotLog",
    "StateTopic",
    "encode",
]
