"""Metric families as the exporter builds them and `ragstream.exporter.text` writes them, with
their prometheus_client form both ways: `to_metrics` for registry users (tests, any
`generate_latest`), `from_metric` for collectors that yield prometheus_client metrics."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.samples import Exemplar as ClientExemplar

from ragstream.pipeline.exemplars import Exemplar

__all__ = ["PREFIX", "Family", "from_metric", "to_metrics"]

PREFIX = "ragstream_"


@dataclass(slots=True)
class Family:
    """One metric family: gauge or counter rows `(label values, value)` (a counter's name
    without `_total`), or histogram rows `(label values, cumulative bucket counts, sum)`
    with the bucket bounds in `bounds`. Names are valid Prometheus names; `name` ends with
    `_<unit>` when `unit` is given, as prometheus_client's do."""

    name: str
    help: str
    labels: tuple[str, ...]
    kind: str = "gauge"
    rows: list[tuple[tuple[str, ...], float]] = field(default_factory=list)
    histograms: list[tuple[tuple[str, ...], list[float], float]] = field(default_factory=list)
    bounds: tuple[str, ...] = ()
    unit: str = ""
    exemplars: dict[tuple[str, ...], dict[int, Exemplar]] = field(default_factory=dict)
    """A histogram's exemplars: by a series' label values, by bucket index (OpenMetrics
    writes each after its bucket's value, as `trace_id`)."""

    def add(self, *values: str, value: float) -> None:
        """One gauge or counter row."""
        self.rows.append((values, float(value)))

    @classmethod
    def single(cls, name: str, help: str, value: float, kind: str = "gauge") -> Family:
        """A family of one series without labels."""
        return cls(name, help, (), kind, [((), float(value))])


def to_metrics(families: Sequence[Family]) -> Iterator[Metric]:
    """The families as prometheus_client metric families."""
    for f in families:
        labels, unit = list(f.labels), f.unit
        if f.kind == "histogram":
            histogram = HistogramMetricFamily(f.name, f.help, labels=labels, unit=unit)
            for values, counts, total in f.histograms:
                held = f.exemplars.get(values, {})
                buckets = [
                    (bound, n, _client_exemplar(held[j])) if j in held else (bound, n)
                    for j, (bound, n) in enumerate(zip(f.bounds, counts, strict=True))
                ]
                histogram.add_metric(list(values), buckets, total)
            yield histogram
            continue
        kind = CounterMetricFamily if f.kind == "counter" else GaugeMetricFamily
        metric = kind(f.name, f.help, labels=labels, unit=unit)
        for values, value in f.rows:
            metric.add_metric(list(values), value)
        yield metric


def _client_exemplar(exemplar: Exemplar) -> ClientExemplar:
    return ClientExemplar({"trace_id": exemplar.trace_id}, exemplar.value, exemplar.ts)


def from_metric(metric: Metric) -> Family:
    """A prometheus_client counter, gauge or histogram as a family; what a family cannot
    hold (another type, timestamps, exemplars other than a bucket's `trace_id` with a
    timestamp, `_created`, label names that differ between
    samples, histograms without a sum or with bounds that differ) raises ValueError."""
    kind = metric.type
    if kind not in ("counter", "gauge", "histogram"):
        raise ValueError(f"{metric.name}: a {kind} metric (the exporter writes no {kind})")
    family = Family(metric.name, metric.documentation, (), kind, unit=metric.unit)
    names: tuple[str, ...] | None = None
    series: dict[tuple[str, ...], tuple[list[str], list[float], list[float]]] = {}
    for s in metric.samples:
        labels = dict(s.labels)
        le = labels.pop("le", None) if kind == "histogram" else None
        names = tuple(labels) if names is None else names
        if s.timestamp is not None or labels.keys() != set(names):
            raise ValueError(f"{metric.name}: a sample the exporter cannot write: {s}")
        values = tuple(labels[n] for n in names)
        suffix = s.name[len(metric.name) :]
        exemplar = s.exemplar
        if exemplar is not None and (
            suffix != "_bucket"
            or set(exemplar.labels) != {"trace_id"}
            or exemplar.timestamp is None
        ):
            raise ValueError(f"{metric.name}: an exemplar the exporter cannot write: {s}")
        if (kind, suffix) in (("gauge", ""), ("counter", "_total")):
            family.rows.append((values, float(s.value)))
        elif kind == "histogram" and suffix in ("_bucket", "_count", "_sum"):
            bounds, counts, total = series.setdefault(values, ([], [], []))
            if suffix == "_bucket" and le is not None:
                if exemplar is not None:
                    family.exemplars.setdefault(values, {})[len(bounds)] = Exemplar(
                        float(exemplar.timestamp),  # type: ignore[arg-type]
                        exemplar.labels["trace_id"],
                        float(exemplar.value),
                    )
                bounds.append(le)
                counts.append(float(s.value))
            elif suffix == "_sum":
                total.append(float(s.value))
        else:
            raise ValueError(f"{metric.name}: a sample the exporter cannot write: {s}")
    for values, (bounds, counts, total) in series.items():
        family.bounds = family.bounds or tuple(bounds)
        if tuple(bounds) != family.bounds or len(total) != 1:
            raise ValueError(f"{metric.name}: a histogram without a sum or with other bounds")
        family.histograms.append((values, counts, total[0]))
    family.labels = names or ()
    return family
