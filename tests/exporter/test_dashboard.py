"""The Grafana dashboard only queries series that the agent documents and exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_every_dashboard_query_names_a_documented_series() -> None:
    dashboard = json.loads((ROOT / "grafana" / "ragstream-dashboard.json").read_text())
    documented = set(
        re.findall(r"`(ragstream_[a-z_]+)`", (ROOT / "docs" / "exposition.md").read_text())
    )
    documented |= set(
        re.findall(r"`(ragstream_judge_[a-z_]+)", (ROOT / "docs" / "judging.md").read_text())
    )
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(exprs) >= 10
    for expr in exprs:
        for name in re.findall(r"ragstream_[a-z_]+", expr):
            base = re.sub(r"_(bucket|count|sum)$", "", name)
            assert name in documented or base in documented, (name, expr)
