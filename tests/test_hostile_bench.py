"""The hostile-input benchmark at a small size: it runs, and finds nothing wrong."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_the_hostile_bench_accounts_for_every_message() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.hostile_bench", "--messages", "3000", "--queries", "100"],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "crashes (an exception out of a decoder or the engine): 0" in out
    assert "= 3,000 of 3,000 messages: every message accounted for" in out
    assert "reasons the generator decided, not given: 0" in out
    assert out.rstrip().endswith("result: pass")
