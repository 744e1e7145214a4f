"""Process-level tuning for the long-running commands."""

from __future__ import annotations

import gc

__all__ = ["tune_gc"]


def tune_gc(threshold: int = 500_000) -> None:
    """Fewer, cheaper garbage collections for a streaming process.

    Decoding allocates many short-lived containers without cycles; with the default
    threshold (700) the collector runs every few events and its full passes walk the whole
    long-lived heap. Objects alive after start-up are frozen out of collections, and the
    first-generation threshold is raised. Cycles are still collected, only less often.

    The threshold is above a batch's containers: a batch of 5 000 labeled events makes
    over 100 000 (records, labels, queries), and a collection every 50 000 walked most of
    them while they were still alive. At 500 000 most die (by reference count) before one
    runs, with the same peak memory.
    """
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(threshold, second, third)
