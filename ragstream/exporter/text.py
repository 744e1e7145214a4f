"""The Prometheus text format 0.0.4 and OpenMetrics 1.0.0, written from the families as
prometheus_client's encoders write them (the same lines in the same order, byte for byte),
and the format a scrape's Accept header asks for, chosen by prometheus_client's own
negotiation (`choose_encoder`, whose encoder is not used).

The two formats differ in their headers and exemplars: OpenMetrics names a counter without
`_total` in `# HELP`/`# TYPE`, escapes `"` in help texts, writes `# UNIT`, ends with `# EOF`
and writes a histogram bucket's exemplar after its value (`# {trace_id="..."} value ts`).
The sample lines are otherwise the same; counters have no `_created` line (the families
carry no creation time, as prometheus_client writes none for a `CounterMetricFamily`
without one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.exposition import (
    UNDERSCORES,
    _escape,
    _is_legacy_labelname_rune,
    escape_label_name,
    escape_metric_name,
)
from prometheus_client.utils import floatToGoString

from ragstream.exporter.family import Family

__all__ = ["Format", "TextRenderer", "negotiate"]

_OPENMETRICS = "application/openmetrics-text"
_go: Callable[[float], str] = floatToGoString  # a value as prometheus_client writes it


@dataclass(frozen=True, slots=True)
class Format:
    """What to write: OpenMetrics or the text format, the escaping of names the scraper
    asked for (`underscores` unless it named another), and the response's Content-Type."""

    openmetrics: bool
    escaping: str
    content_type: str


def negotiate(accept: str) -> Format:
    """The format prometheus_client would answer an `Accept` header with."""
    _, content_type = choose_encoder(accept)
    escaping = content_type.partition("; escaping=")[2] or UNDERSCORES
    return Format(content_type.startswith(_OPENMETRICS), escaping, content_type)


def _quote(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


# a series' label strings: `{...}` (empty without labels), and a histogram bucket's text
# before and after its `le` value; by label values, by the family's label names (and the
# escaping, and whether a histogram's)
_Strings = tuple[str, str, str]
_Series = dict[tuple[str, ...], _Strings]
_Make = Callable[[tuple[str, ...]], _Strings]
_Kept = dict[tuple[str, ...], _Series]


class TextRenderer:
    """Writes families in either format, keeping each series' label strings from one
    rendering to the next: between two scrapes the series are nearly all the same and only
    their values change, so a scrape formats numbers and little else.

    The strings kept are those of the latest rendering only (each rendering takes over the
    strings it uses), so the memory follows the series exported now, never those once.
    """

    __slots__ = ("_escaping", "_kept", "_new", "_openmetrics", "_out")

    def __init__(self) -> None:
        self._kept: _Kept = {}

    def render(self, families: Iterable[Family], fmt: Format) -> bytes:
        """The exposition of the families."""
        self._openmetrics, self._escaping = fmt.openmetrics, fmt.escaping
        self._new: _Kept = {}
        self._out: list[str] = []
        try:
            for f in families:
                self._header(f)
                (self._histogram if f.kind == "histogram" else self._rows)(f)
            if fmt.openmetrics:
                self._out.append("# EOF\n")
            self._kept = self._new
            return "".join(self._out).encode()
        finally:
            self._out = []

    def _name(self, name: str) -> str:
        """A sample's name: OpenMetrics escapes it as a label name is, without quoting (under
        `values` unlike its `# TYPE` name), as prometheus_client's encoder does."""
        if self._openmetrics:
            return _escape(name, self._escaping, _is_legacy_labelname_rune)
        return escape_metric_name(name, self._escaping)

    def _header(self, f: Family) -> None:
        counter = f.kind == "counter" and not self._openmetrics
        name = escape_metric_name(f.name + "_total" if counter else f.name, self._escaping)
        text = f.help.replace("\\", r"\\").replace("\n", r"\n")
        if self._openmetrics:
            text = text.replace('"', r"\"")
        self._out.append(f"# HELP {name} {text}\n# TYPE {name} {f.kind}\n")
        if self._openmetrics and f.unit:
            self._out.append(f"# UNIT {name} {f.unit}\n")

    def _series(self, f: Family, histogram: bool) -> tuple[_Series, _Series, _Make]:
        """The label strings of a family's series: those this rendering made or took over,
        those of the previous rendering, and how to make one; names sorted as
        prometheus_client sorts them, a histogram's `le` among them."""
        order = sorted(range(len(f.labels)), key=f.labels.__getitem__)
        names = [escape_label_name(f.labels[i], self._escaping) for i in order]
        split = sum(f.labels[i] < "le" for i in order) if histogram else len(order)
        key = (*f.labels, self._escaping, "le" if histogram else "")

        def make(values: tuple[str, ...]) -> _Strings:
            pairs = [f'{names[j]}="{_quote(values[i])}"' for j, i in enumerate(order)]
            before, after = ",".join(pairs[:split]), ",".join(pairs[split:])
            braced = "{" + ",".join(pairs) + "}" if pairs else ""
            return braced, f'{before},le="' if before else 'le="', f'",{after}' if after else '"'

        # families with the same label names in the same order share their strings
        return self._new.setdefault(key, {}), self._kept.get(key, {}), make

    # Values in [0, 1e6) are written by `repr` directly, as floatToGoString writes them.

    def _rows(self, f: Family) -> None:
        name = self._name(f.name + "_total" if f.kind == "counter" else f.name)
        (new, old, make), go, append = self._series(f, False), _go, self._out.append
        for values, value in f.rows:
            found = new[values] = new.get(values) or old.get(values) or make(values)
            value = float(value)  # an int would lose its ".0"
            text = repr(value) if 0.0 <= value < 1e6 else go(value)
            append(f"{name}{found[0]} {text}\n")

    def _histogram(self, f: Family) -> None:
        bucket, count, total_name = (self._name(f.name + s) for s in ("_bucket", "_count", "_sum"))
        bounds = [_quote(b) for b in f.bounds]
        with_sum = not f.bounds or float(f.bounds[0]) >= 0  # prometheus_client's rule
        (new, old, make), go, append = self._series(f, True), _go, self._out.append
        exemplars = f.exemplars if self._openmetrics else {}
        for values, counts, total in f.histograms:
            braced, head, tail = new[values] = new.get(values) or old.get(values) or make(values)
            held = exemplars.get(values)
            for j, (bound, n) in enumerate(zip(bounds, counts, strict=True)):
                text = repr(n) if 0.0 <= n < 1e6 else go(n)
                if held is not None and j in held:  # OpenMetrics: the bucket's exemplar
                    e = held[j]
                    text += f' # {{trace_id="{_quote(e.trace_id)}"}} {go(e.value)} {e.ts!r}'
                append(f"{bucket}{{{head}{bound}{tail}}} {text}\n")
            if with_sum:
                append(f"{count}{braced} {go(counts[-1])}\n")
                append(f"{total_name}{braced} {go(total)}\n")
