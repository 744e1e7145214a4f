"""Process-level tuning for the long-running commands."""

from __future__ import annotations

import gc

__all__ = ["tune_gc"]


def tune_gc(threshold: int = 50_000) -> None:
    """Fewer, cheaper garbage collections for a streaming process.

    Decoding allocates many short-lived containers without cycles; with the default
    threshold (700) the collector runs every few events and its full passes walk the whole
    long-lived heap. Objects alive after start-up are frozen out of collections, and the
    first-generation threshold is raised. Cycles are still collected, only less often.
    """
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(threshold, second, third)
