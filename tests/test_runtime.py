"""Process tuning for the long-running commands."""

from __future__ import annotations

import gc

from ragstream.pipeline.gc_tuning import tune_gc


def test_tune_gc_freezes_the_start_up_heap_and_raises_the_threshold() -> None:
    before = gc.get_threshold()
    try:
        tune_gc(threshold=12_345)
        assert gc.get_threshold() == (12_345, before[1], before[2])
        assert gc.get_freeze_count() > 0
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
