"""The drift benchmark's simulated windows read what ragstream.windows reads."""

from __future__ import annotations

import numpy as np
import pytest

from bench.drift_data import MODELS, arrivals
from bench.drift_windows import Cells
from ragstream.windows import WindowStore
from tests.support import defaults


def test_cells_read_like_the_agent_windows() -> None:
    rng = np.random.default_rng(1)
    duration = 2.5 * 3600
    times, values = next(arrivals(rng, MODELS[1], 2.0, 0.0, duration))
    cells = Cells(duration)
    cells.add(times, values)
    spec = defaults.window_spec(columns=("ndcg",), windows=(300.0, 3600.0), buckets=60)
    windows = WindowStore(spec)
    at = cells.scrapes(15.0)
    reads = {w: cells.read(at, w) for w in (300.0, 3600.0)}
    done = 0
    for i, t in enumerate(at.tolist()):
        upto = int(np.searchsorted(times, t))
        if upto > done:
            windows.add(0, (), t, times[done:upto], values[done:upto, None])
            done = upto
        agent = windows.read(t, (), exact=True, histograms=True)
        assert agent.histograms is not None
        for j, w in enumerate((300.0, 3600.0)):
            ours = reads[w]
            assert int(ours.n[i]) == int(agent.count[0, j, 0]), (t, w)
            total, total_sq = float(agent.total[0, j, 0]), float(agent.total_sq[0, j, 0])
            assert ours.total[i] == pytest.approx(total, rel=1e-9, abs=1e-9)
            assert ours.total_sq[i] == pytest.approx(total_sq, rel=1e-9, abs=1e-9)
            np.testing.assert_array_equal(ours.hist[i], agent.histograms[0, j, 0])


def test_drop_streams_have_the_stated_means() -> None:
    rng = np.random.default_rng(2)
    for model in MODELS:
        good, _ = model.means()
        for drop in (0.0, 0.05, 0.2):
            x = model.sample(rng, 400_000, drop)
            assert x.mean() == pytest.approx(good - drop, abs=0.004)
            assert x.min() >= 0.0
            assert x.max() <= 1.0
    rr = MODELS[0].sample(rng, 10_000, 0.1)
    assert set(np.unique(rr).tolist()) <= {0.0, *(1.0 / r for r in range(1, 11))}
    ndcg = MODELS[1].sample(rng, 10_000)
    assert 0.1 < (ndcg == 0.0).mean() < 0.2
    assert 0.2 < (ndcg == 1.0).mean() < 0.3
