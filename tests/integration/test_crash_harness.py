"""The crash harness at a small size: `ragstream run` killed with SIGKILL at random moments
and restarted, on the real broker; every exported series equals a run that never crashed.

A control run without partition state shows that the comparison sees a doubled event.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.crash_harness import HarnessConfig, run_trials, summary
from tests.support import KafkaBroker

pytestmark = pytest.mark.slow


def _config(kafka_broker: KafkaBroker, tmp_path: Path, **overrides: object) -> HarnessConfig:
    options: dict[str, object] = {
        "bootstrap": kafka_broker.bootstrap_servers,
        "trials": 5,
        "queries": 400,
        "max_kills": 2,
        "seed": 7,
        "produce_seconds": 3.0,
        "work_dir": tmp_path,
        **overrides,
    }
    return HarnessConfig(**options)  # type: ignore[arg-type]


async def test_five_trials_of_random_kills_export_every_series_as_a_run_without_crashes(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    results = await run_trials(_config(kafka_broker, tmp_path))
    report = summary(results)
    assert report["trials"] == 5
    assert int(str(report["kills"])) >= 5
    assert int(str(report["series_compared_per_trial"])) > 1000  # windows, histograms, ...
    assert all(r.judged > 50 for r in results)  # the judge's windows are compared too
    mismatches = [str(m) for r in results for m in r.mismatches]
    assert mismatches == []


async def test_without_partition_state_a_kill_shows_as_mismatches(
    kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    """The control: a restarted agent without partition state resumes at the committed
    offset with nothing of what came before, and the harness says so (the kill comes 5.9 s
    in, well into consumption)."""
    config = _config(kafka_broker, tmp_path, trials=1, max_kills=1, state=False, seed=4)
    results = await run_trials(config)
    assert results[0].kills == ["consuming"]
    assert any(m.name == "ragstream_events_total" for m in results[0].mismatches)
