"""The renderer against prometheus_client's encoders: every rendering, in the format and the
name escaping any Accept header asks for, is byte for byte what prometheus_client writes for
the same families, whatever changed since the last rendering; what it keeps between
renderings is only the latest one's series; and families read back from prometheus_client
metrics are written as prometheus_client writes those metrics."""

from __future__ import annotations

import math
from collections.abc import Iterable

import pytest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import CollectorRegistry
from prometheus_client.samples import Exemplar as ClientExemplar

from ragstream.exporter.family import Family, from_metric, to_metrics
from ragstream.exporter.text import TextRenderer, negotiate
from ragstream.pipeline.exemplars import Exemplar

ACCEPTS = [
    "",  # no header: the text format 0.0.4
    "*/*",
    "application/json",
    "text/plain;version=0.0.4",
    "text/plain; version=1.0.0; escaping=allow-utf-8",
    "text/plain;version=1.0.0;escaping=dots",
    "application/openmetrics-text",
    "application/openmetrics-text; version=1.0.0",
    "application/openmetrics-text;version=1.0.0;escaping=underscores",
    "application/openmetrics-text;version=1.0.0;escaping=dots",
    "application/openmetrics-text;version=1.0.0;escaping=values",
    "application/openmetrics-text;version=1.0.0;escaping=nonsense",
    "application/openmetrics-text;version=2.0.0;escaping=allow-utf-8",
    "application/openmetrics-text;version=0.0.1,text/plain;version=0.0.4",  # too old: text
    # Prometheus 2 (OpenMetrics first), and Prometheus 3 with its default escaping
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
    "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;"
    "escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
]


def _families(apps: list[str], scale: float) -> list[Family]:
    help_text = 'MRR of the "top" \\ results,\nper window.'
    gauge = Family("ragstream_retrieval_mrr", help_text, ("window", "app"))
    # the same label names in the other order: the same values are other series
    swapped = Family("ragstream_swapped", "Swapped.", ("app", "window"))
    sums = Family("ragstream_window_sums", "Sums.", ("metric", "half_life", "window", "app"))
    events = Family("ragstream_things", "Things.", ("app", "service.name"), kind="counter")
    hist = Family(
        "ragstream_query_rr",
        "RR.",
        ("k", "app", "model"),  # `le` sorts between app, k and model
        kind="histogram",
        bounds=("0.05", "0.5", "+Inf"),
    )
    for i, app in enumerate(apps):
        for window in ("5m", "1h"):
            gauge.add(window, app, value=scale * (i + 1) / 7)
            swapped.add(window, app, value=scale)
            sums.add("rr", "", window, app, value=scale * i * 123_456.7)  # Go's exponents
        events.add(app, "svc", value=3.0 * i)
        hist.histograms.append((("10", app, "m"), [0.0, float(i), 2.0 * i], scale * i))
        hist.exemplars[("10", app, "m")] = {  # buckets 0 and 2; none in bucket 1
            0: Exemplar(1_700_000_000.0 + i, f"{i + 1:032x}", 0.0),
            2: Exemplar(1_700_000_000.25 * scale, f'{app}"\\', scale * 1e-7),
        }
    gauge.add("5m", "inf", value=math.inf)
    gauge.add("1h", "-inf", value=-math.inf)
    gauge.add("1h", "nan", value=math.nan)
    gauge.rows.append((("1h", "int"), 3))  # an int, written as 3.0
    latency = Family(
        "ragstream_latency_seconds", "Latency.", (), "histogram", bounds=("0.1", "+Inf")
    )
    latency.histograms.append(((), [1.0, 3.0], 0.7))
    latency.exemplars[()] = {1: Exemplar(12.5, "4bf92f3577b34da6a3ce929d0e0e4736", 1_234_567.0)}
    signed = Family("ragstream_signed", "Signed.", ("app",), "histogram", bounds=("-1", "+Inf"))
    signed.histograms.append((("x",), [1.0, 2.0], -0.5))  # no _count, _sum: negative buckets
    return [
        gauge,
        swapped,
        sums,
        events,
        hist,
        Family.single("ragstream_series", "Series.", 12_345_678),
        Family.single("ragstream_retracts", "Retracts.", 2, "counter"),
        Family("ragstream_empty", "Nothing yet.", ("app",)),
        latency,
        Family("ragstream_size_bytes", "Size.", (), rows=[((), 1024.0)], unit="bytes"),
        signed,
    ]


def encoded(metrics: Iterable[Metric], accept: str) -> tuple[bytes, str]:
    """What prometheus_client answers for these metrics and this Accept header."""
    fixed = list(metrics)

    class _Fixed:
        def collect(self) -> list[Metric]:
            return fixed

    registry = CollectorRegistry()
    registry.register(_Fixed())
    encoder, content_type = choose_encoder(accept)
    return encoder(registry), content_type


def assert_written_as_prometheus_client(renderer: TextRenderer, families: list[Family]) -> None:
    """Every Accept header above: the same bytes and Content-Type as prometheus_client."""
    for accept in ACCEPTS:
        fmt = negotiate(accept)
        assert (renderer.render(families, fmt), fmt.content_type) == encoded(
            to_metrics(families), accept
        ), accept


def test_every_rendering_is_prometheus_clients_as_series_come_and_go() -> None:
    renderer = TextRenderer()
    steps = [
        (["search", "support"], 1.0),
        (["search", "support"], 2.0),  # same series, new values
        (["search", 'he said "hi"\\', "bill\ning"], 3.0),  # one gone, two new
        ([], 4.0),
        (["support"], 5.0),  # back after an absence
    ]
    for apps, scale in steps:
        families = _families(apps, scale)
        assert_written_as_prometheus_client(renderer, families)
        assert_written_as_prometheus_client(TextRenderer(), families)  # as a fresh one
    text = renderer.render(_families(["a"], 1.0), negotiate("")).decode()
    assert 'ragstream_retrieval_mrr{app="inf",window="5m"} +Inf\n' in text
    assert 'ragstream_query_rr_bucket{app="a",k="10",le="0.5",model="m"} 0.0\n' in text
    assert "ragstream_series 1.2345678e+07\n" in text


def test_the_formats_differ_in_their_headers_and_exemplars_only() -> None:
    families = _families(["a"], 1.0)
    text = TextRenderer().render(families, negotiate("")).decode()
    om = TextRenderer().render(families, negotiate("application/openmetrics-text")).decode()
    assert "# TYPE ragstream_things_total counter\n" in text
    assert "# TYPE ragstream_things counter\n" in om
    assert "# UNIT ragstream_size_bytes bytes\n" in om
    assert om.endswith("# EOF\n")
    assert (
        'ragstream_query_rr_bucket{app="a",k="10",le="0.05",model="m"} 0.0'
        ' # {trace_id="00000000000000000000000000000001"} 0.0 1700000000.0\n'
    ) in om
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    exemplars = [line for line in om.splitlines() if " # {trace_id=" in line]
    assert len(exemplars) == 3
    om_samples = [line.partition(" # ")[0] for line in om.splitlines() if not line.startswith("#")]
    assert samples == om_samples


def test_the_text_format_is_the_same_with_or_without_exemplars() -> None:
    families = _families(["a", "b"], 2.0)
    bare = _families(["a", "b"], 2.0)
    for family in bare:
        family.exemplars.clear()
    for accept in ACCEPTS:
        fmt = negotiate(accept)
        with_exemplars = TextRenderer().render(families, fmt)
        without = TextRenderer().render(bare, fmt)
        assert (with_exemplars == without) != fmt.openmetrics, accept


def test_it_keeps_the_label_strings_of_the_latest_rendering_only() -> None:
    renderer = TextRenderer()
    for n in range(5):
        fmt = negotiate("application/openmetrics-text" if n % 2 else "")
        renderer.render(_families([f"app{n}-{i}" for i in range(100)], 1.0), fmt)
    kept = renderer._kept  # the strings it holds between scrapes
    # mrr 2 x 100 + 4, swapped 2 x 100, sums 2 x 100, things 100, rr 100, signed 1, and the
    # series without labels: one of the gauges and counters (series, retracts, size), one of
    # a histogram's
    kept_now = sum(len(strings) for strings in kept.values())
    assert kept_now == 200 + 4 + 200 + 200 + 100 + 100 + 1 + 2
    assert all(
        any(v.startswith("app4-") for v in values)
        or values in ((), ("x",))
        or "inf" in values[-1]
        or values[-1] in ("nan", "int")
        for strings in kept.values()
        for values in strings
    )


def test_prometheus_client_metrics_read_back_are_written_as_prometheus_client_writes_them() -> None:
    counter = CounterMetricFamily("ragstream_judge_tokens", "Tokens used", labels=["kind"])
    counter.add_metric(["prompt"], 12_345_678)
    counter.add_metric(["completion"], 3)
    gauge = GaugeMetricFamily("ragstream_judge_queue_depth", "Waiting", value=4)
    histogram = HistogramMetricFamily(
        "ragstream_judge_latency_seconds",
        "Seconds per judgment",
        buckets=[("0.5", 1), ("1.0", 3), ("+Inf", 4)],
        sum_value=2.5,
    )
    labeled = HistogramMetricFamily("ragstream_x", "X", labels=["app", "zone"], unit="seconds")
    labeled.add_metric(["a", "z"], [("1.0", 1), ("+Inf", 2)], 1.5)
    labeled.add_metric(["b", "z"], [("1.0", 0), ("+Inf", 1)], 3.0)
    traced = HistogramMetricFamily("ragstream_query_mrr", "MRR", labels=["app"])
    traced.add_metric(
        ["a"],
        [("0.5", 1, ClientExemplar({"trace_id": "ab" * 16}, 0.25, 17.5)), ("+Inf", 2)],
        0.75,
    )
    metrics = [counter, gauge, histogram, labeled, traced]
    families = [from_metric(m) for m in metrics]
    for accept in ACCEPTS:
        fmt = negotiate(accept)
        body = TextRenderer().render(families, fmt)
        assert (body, fmt.content_type) == encoded(metrics, accept), accept


def test_what_a_family_cannot_hold_is_refused() -> None:
    info = InfoMetricFamily("ragstream_thing", "Thing", value={"version": "1"})
    created = CounterMetricFamily("ragstream_c", "C", value=1, created=1.0)
    stamped = GaugeMetricFamily("ragstream_g", "G", labels=["a"])
    stamped.add_metric(["x"], 1.0, timestamp=5.0)
    mixed = GaugeMetricFamily("ragstream_m", "M")
    mixed.add_sample("ragstream_m", {"a": "1"}, 1.0)
    mixed.add_sample("ragstream_m", {"b": "1"}, 1.0)
    untimed = HistogramMetricFamily("ragstream_h", "H", labels=["a"])
    untimed.add_metric(["x"], [("+Inf", 1, ClientExemplar({"trace_id": "1"}, 0.5))], 0.5)
    other = HistogramMetricFamily("ragstream_o", "O", labels=["a"])
    other.add_metric(["x"], [("+Inf", 1, ClientExemplar({"span_id": "1"}, 0.5, 1.0))], 0.5)
    for metric in (info, created, stamped, mixed, untimed, other):
        with pytest.raises(ValueError, match=metric.name):
            from_metric(metric)
