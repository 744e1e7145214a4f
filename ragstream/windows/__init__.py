"""Sliding time windows: incremental, mergeable, snapshot-able aggregates.

Rows (one metric vector per query) are added at their event time into rings of time
buckets, retracted exactly when a late label replaces them, merged across partitions, and
read as arrays of every label set (`WindowStore.read`); decayed sum metrics decay live
through forward-decay sums. See docs/windows.md.
"""

from ragstream.windows._scatter import bin_index
from ragstream.windows.aggregate import Aggregate
from ragstream.windows.clock import Clock, ClockMode, Timing
from ragstream.windows.sliding_window import SlidingWindow
from ragstream.windows.spec import WindowSpec, bucket_of
from ragstream.windows.store import WindowStore
from ragstream.windows.totals import WindowTotals

__all__ = [
    "Aggregate",
    "Clock",
    "ClockMode",
    "SlidingWindow",
    "Timing",
    "WindowSpec",
    "WindowStore",
    "WindowTotals",
    "bin_index",
    "bucket_of",
]
