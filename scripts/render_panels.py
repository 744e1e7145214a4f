#!/usr/bin/env python3
"""Draws the dashboard's key panels as PNG from a real Prometheus that scraped the demo.

Runs `ragstream demo` (three apps; `app=support`'s quality drops after --drift-at seconds),
with windows short enough for a 3-minute run (30s, 1m, 5m; the z-score compares the 30 s
window with the rest of the 5 m one), scraped every 2 s by a real Prometheus loading
deploy/prometheus/ragstream.rules.yml, then
asks Prometheus's HTTP API for the queries of three panels of grafana/ragstream-dashboard.json
(with its variables substituted as Grafana does) over the run and draws what they return:

  * nDCG@k per label set, with the drift alarms (the dashboard's annotation) shaded;
  * the hallucination ratio with its Wilson 95% band, pooled over replicas, per app;
  * the z-score drift detector's score per label set, with its alarms.

With --exemplars it draws one panel instead, "Median final nDCG@k", with its exemplars as
Grafana shows them: the run gives the demo query ids that are trace ids (`--trace-ids`),
Prometheus stores exemplars (`--enable-feature=exemplar-storage`), and the points are what
`/api/v1/query_exemplars` returns for the panel's exemplar query (docs/drill-down.md).

Grafana does not run here, so matplotlib draws the same series; the figure says so.
Use scripts/render_panels.sh (it installs matplotlib, the `render` extra, and Prometheus).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from ragstream.config.drift import ZScoreSettings  # noqa: E402
from tests.grafana.scraped import substitute  # noqa: E402
from tests.support.agent_process import AgentProcess  # noqa: E402
from tests.support.prometheus import PrometheusServer  # noqa: E402

DASHBOARD = ROOT / "grafana" / "ragstream-dashboard.json"
RULES = ROOT / "deploy" / "prometheus" / "ragstream.rules.yml"
OUTPUT = ROOT / "docs" / "img" / "dashboard-panels.png"
EXEMPLARS_OUTPUT = ROOT / "docs" / "img" / "drill-down-exemplars.png"
STEP = 2.0
WINDOWS = ("30s", "1m", "5m")
DEMO_SETTINGS = (
    # a 3-minute run: windows and a drift window pair of seconds, not of hours, and a
    # Page-Hinkley reference that the run's traffic builds
    f"windows.sizes=[{', '.join(WINDOWS)}]",
    "drift.window_pairs=[[30s, 5m]]",
    "drift.settle=5s",
    "drift.page_hinkley.min_instances=200",
)
COLORS = {"support": "tab:red", "search": "tab:blue", "docs": "tab:green"}

Series = list[tuple[dict[str, str], list[float], list[float]]]


def _panel(dashboard: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    for panel in dashboard["panels"]:
        if panel["title"].startswith(prefix):
            found: dict[str, Any] = panel
            return found
    raise KeyError(f"no panel titled {prefix!r}... in {DASHBOARD}")


def _annotation(dashboard: Mapping[str, Any], name: str) -> str:
    for annotation in dashboard["annotations"]["list"]:
        if annotation["name"] == name:
            return str(annotation["target"]["expr"])
    raise KeyError(name)


class Queries:
    """The dashboard's queries with the variables' values, over [start, end]."""

    def __init__(
        self,
        prom: PrometheusServer,
        dashboard: Mapping[str, Any],
        values: Mapping[str, str],
        start: float,
        end: float,
    ) -> None:
        self.prom, self.values, self.start, self.end = prom, dict(values), start, end
        self.variables = {v["name"]: v for v in dashboard["templating"]["list"]}

    def expr(self, template: str, **override: str) -> str:
        return substitute(template, {**self.values, **override}, self.variables)

    def series(self, template: str, **override: str) -> Series:
        result = self.prom.query_range(self.expr(template, **override), self.start, self.end, STEP)
        out: Series = []
        for item in result:
            times = [float(t) - self.start for t, _ in item["values"]]
            values = [float(v) for _, v in item["values"]]
            out.append((item["metric"], times, values))
        return out


def _spans(series: Series) -> list[tuple[float, float]]:
    """Intervals where any of the series is > 0 (how Grafana turns the annotation's
    samples into regions)."""
    on: set[float] = set()
    for _, times, values in series:
        on |= {t for t, v in zip(times, values, strict=True) if v > 0}
    spans: list[tuple[float, float]] = []
    for t in sorted(on):
        if spans and t - spans[-1][1] <= STEP * 1.5:
            spans[-1] = (spans[-1][0], t)
        else:
            spans.append((t, t))
    return spans


def _legend(labels: Mapping[str, str], keys: Sequence[str]) -> str:
    return " ".join(labels.get(k, "") for k in keys).strip()


def _mark(ax: Axes, drift_at: float, alarms: list[tuple[float, float]]) -> None:
    ax.axvline(drift_at, color="black", linestyle="--", linewidth=1)
    for i, (begin, end) in enumerate(alarms):
        ax.axvspan(
            begin, end + STEP, color="tab:red", alpha=0.08, label="drift alarm" if i == 0 else None
        )


def _quality(ax: Axes, q: Queries, dashboard: Mapping[str, Any], drift_at: float) -> None:
    panel = _panel(dashboard, "nDCG@$k")
    for labels, times, values in q.series(panel["targets"][0]["expr"]):
        app = labels.get("app", "")
        ax.plot(times, values, color=COLORS.get(app), label=_legend(labels, ("app", "index")))
    alarms = _spans(q.series(_annotation(dashboard, "Drift alarms"), app="support"))
    _mark(ax, drift_at, alarms)
    ax.set_title(f"{q.expr(panel['title'])} per label set (window {q.values['window']})")
    ax.set_ylabel("nDCG")
    ax.set_ylim(0, 1)


def _hallucination(ax: Axes, q: Queries, dashboard: Mapping[str, Any], drift_at: float) -> None:
    panel = _panel(dashboard, "Hallucination ratio with")
    exprs = {t["legendFormat"]: t["expr"] for t in panel["targets"]}
    for app in ("support", "search"):
        lines = {name: q.series(expr, app=app, index="$__all") for name, expr in exprs.items()}
        if not all(lines.values()):
            continue
        _, times, ratio = lines["ratio"][0]
        lower = dict(zip(lines["lower"][0][1], lines["lower"][0][2], strict=True))
        upper = dict(zip(lines["upper"][0][1], lines["upper"][0][2], strict=True))
        band = [t for t in times if t in lower and t in upper]
        color = COLORS.get(app)
        ax.fill_between(
            band, [lower[t] for t in band], [upper[t] for t in band], color=color, alpha=0.2,
            label=f"{app}: Wilson 95% interval",
        )  # fmt: skip
        ax.plot(times, ratio, color=color, label=f"{app}: ratio")
    _mark(ax, drift_at, [])
    title = panel["title"].replace(": $app", "")
    ax.set_title(f"{title}, pooled over replicas (window {q.values['window']})")
    ax.set_ylabel("share of judged answers")
    ax.set_ylim(0, 1)


def _drift(ax: Axes, q: Queries, dashboard: Mapping[str, Any], drift_at: float) -> None:
    panel = _panel(dashboard, "Drift score: zscore")
    metric = q.values["drift_metric"]
    for labels, times, values in q.series(panel["targets"][0]["expr"]):
        app = labels.get("app", "")
        shown = [v if math.isfinite(v) else math.nan for v in values]
        label = (
            _legend(labels, ("app", "index", "metric"))
            + f" ({labels.get('window')} vs {labels.get('reference')})"
        )
        ax.plot(times, shown, color=COLORS.get(app), label=label)
    alarms = _spans(
        q.series(_panel(dashboard, "Drift alarms")["targets"][0]["expr"], app="support")
    )
    _mark(ax, drift_at, alarms)
    threshold = ZScoreSettings().threshold  # the agent's default; its direction is "down"
    ax.axhline(
        -threshold, color="gray", linestyle=":", label=f"alarm threshold (z = -{threshold:g})"
    )
    ax.set_title(f"Drift score: zscore of {metric} per label set")
    ax.set_ylabel("z")


def render(
    prom: PrometheusServer, start: float, end: float, drift_at: float, rate: float, out: Path
) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    q = Queries(prom, dashboard, _values(), start, end)
    fig, axes = plt.subplots(3, 1, figsize=(11, 11), sharex=True)
    _quality(axes[0], q, dashboard, drift_at)
    _hallucination(axes[1], q, dashboard, drift_at)
    _drift(axes[2], q, dashboard, drift_at)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize=8, ncols=2)
    axes[-1].set_xlabel(
        f"seconds since the demo started (dashed: the scheduled quality drop at {drift_at:g} s)"
    )
    fig.suptitle(
        "Rendered from Prometheus queries of the dashboard's panels "
        "(grafana/ragstream-dashboard.json) over a run of `ragstream demo`\n"
        f"({rate:g} queries/s, windows {', '.join(WINDOWS)}; all replicas, label sets and "
        "indexes selected)",
        fontsize=11,
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


def _values() -> dict[str, str]:
    """The dashboard variables' values of the figures: everything selected."""
    return {
        "cluster": "",  # this Prometheus attaches none: `cluster=~""` matches every series
        "job": "$__all",
        "app": "$__all",
        "index": "$__all",
        "window": "1m",
        "k": "10",
        "half_life": "1w",
        "drift_metric": "ndcg@10",
        "instance": "$__all",
    }


def render_exemplars(
    prom: PrometheusServer, start: float, end: float, drift_at: float, rate: float, out: Path
) -> None:
    """The panel "Median final nDCG@k": its query over the run, and the exemplars
    Prometheus returns for it (as Grafana asks: the same expression, the same range)."""
    dashboard = json.loads(DASHBOARD.read_text())
    q = Queries(prom, dashboard, _values(), start, end)
    panel = _panel(dashboard, "Median final nDCG")
    target = next(t for t in panel["targets"] if t.get("exemplar"))
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for labels, times, values in q.series(target["expr"]):
        app = labels.get("app", "")
        ax.plot(
            times, values, color=COLORS.get(app), linewidth=2,
            label=f"{_legend(labels, ('app', 'index'))} final median",
        )  # fmt: skip
    params = [("query", q.expr(target["expr"])), ("start", f"{start:.3f}"), ("end", f"{end:.3f}")]
    found: list[dict[str, Any]] = prom.api("/api/v1/query_exemplars", params)
    lowest: tuple[float, float, str] | None = None
    total = 0
    for group in found:
        app = group["seriesLabels"].get("app", "")
        points = [
            (float(e["timestamp"]) - start, float(e["value"]), e["labels"]["trace_id"])
            for e in group["exemplars"]
        ]
        total += len(points)
        ax.scatter(
            [t for t, _, _ in points], [v for _, v, _ in points], s=9, marker="D",
            color=COLORS.get(app), alpha=0.45, linewidths=0,
        )  # fmt: skip
        if app == "support":  # a low query of the drop (0 happens before it too)
            after = [p for p in points if p[0] > drift_at + 20 and p[1] > 0]
            low = min(after, key=lambda p: p[1], default=None)
            if low is not None and (lowest is None or low[1] < lowest[1]):
                lowest = low
    ax.scatter([], [], s=9, marker="D", color="gray", label="exemplars (one query each)")
    if lowest is not None:
        t, v, trace_id = lowest
        ax.annotate(
            f"trace_id={trace_id}\nnDCG@10 = {v:.3f}", xy=(t, v), xytext=(t + 8, v + 0.12),
            fontsize=8, arrowprops={"arrowstyle": "->", "color": "black"},
        )  # fmt: skip
    _mark(ax, drift_at, [])
    ax.set_title(f"{q.expr(panel['title'])} per label set, with its exemplars")
    ax.set_ylabel("nDCG@10 (final, per query)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8, ncols=2)
    ax.set_xlabel(
        f"seconds since the demo started (dashed: the scheduled quality drop at {drift_at:g} s)"
    )
    fig.suptitle(
        "Rendered from Prometheus (query_range and query_exemplars) for the panel's query "
        "(grafana/ragstream-dashboard.json)\n"
        f"over a run of `ragstream demo --trace-ids` ({rate:g} queries/s, label TTL 10 s); "
        f"{total} exemplars",
        fontsize=10,
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    print(f"wrote {out}: {total} exemplars; annotated: {lowest}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--duration", type=float, default=180.0, help="seconds of demo (%(default)s)"
    )
    parser.add_argument("--drift-at", type=float, default=60.0, help="the drop (%(default)s s)")
    parser.add_argument("--rate", type=float, default=60.0, help="queries/s (%(default)s)")
    parser.add_argument(
        "--exemplars",
        action="store_true",
        help=f"draw the median final nDCG panel with its exemplars (default output: "
        f"{EXEMPLARS_OUTPUT.relative_to(ROOT)})",
    )
    parser.add_argument("--output", type=Path, help=f"default: {OUTPUT.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    output: Path = args.output or (EXEMPLARS_OUTPUT if args.exemplars else OUTPUT)
    with tempfile.TemporaryDirectory(prefix="ragstream-render-") as tmp:
        demo_args = [
            "demo",
            "--host", "127.0.0.1",
            "--rate", f"{args.rate:g}",
            "--drift-at", f"{args.drift_at:g}",
            "--duration", f"{args.duration + 60:g}",
            "--refresh", "3600",
            "--label-ttl", "10",
            *(arg for setting in DEMO_SETTINGS for arg in ("--set", setting)),
            *(["--trace-ids"] if args.exemplars else []),
        ]  # fmt: skip
        features = ["exemplar-storage"] if args.exemplars else []
        with AgentProcess(demo_args, Path(tmp) / "demo.log") as demo:
            start = time.time()
            with PrometheusServer(
                [demo.target], scrape_interval="2s", rule_files=[RULES], features=features
            ) as prom:
                print(f"demo on {demo.url}, Prometheus on {prom.url}: {args.duration:g} s")
                while (left := start + args.duration - time.time()) > 0:
                    time.sleep(min(left, 30.0))
                    print(f"  {time.time() - start:5.0f} s", flush=True)
                draw = render_exemplars if args.exemplars else render
                draw(prom, start, time.time(), args.drift_at, args.rate, output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
