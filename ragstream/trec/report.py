"""Text forms of a `TrecEvaluation`: trec_eval's `-q` layout, a readable table, and JSON.

`trec`: one `measure<TAB>qid<TAB>value` line per query and measure (with `per_query`), then
one per measure with qid `all` for the mean, measure names padded to 22 characters and
values printed with `%6.4f` -- byte for byte what trec_eval prints (`%-22s\\t%s\\t%6.4f`),
measures in trec_eval's own order (its measure table: map, recip_rank, P, recall, ndcg_cut,
success; cutoffs ascending), whatever order they were asked for in.
`digits` changes the number of decimals; `None` prints every digit (`repr`, round-trips).
`json`: always full precision.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from ragstream.metrics import MetricSpec, trec_name
from ragstream.trec.evaluate import TrecEvaluation

__all__ = ["Format", "format_value", "render"]

Format = Literal["table", "json", "trec"]


def format_value(value: float, digits: int | None) -> str:
    """`%6.4f` for digits=4 (trec_eval), `repr` for None (shortest exact form)."""
    if digits is None:
        return repr(float(value))
    return f"{value:{digits + 2}.{digits}f}"


def render(
    result: TrecEvaluation, fmt: Format, *, per_query: bool = False, digits: int | None = 4
) -> str:
    """The whole report as text, ending with a newline."""
    if fmt == "trec":
        return _trec(result, per_query, digits)
    if fmt == "json":
        return json.dumps(_json(result, per_query), indent=2) + "\n"
    return _table(result, per_query, digits)


def _trec_position(spec: MetricSpec) -> tuple[int, int]:
    """Families in the order of trec_eval's measure table (te_trec_measures), cutoffs
    ascending."""
    return spec.row.trec_position, spec.k or 0


def _trec(result: TrecEvaluation, per_query: bool, digits: int | None) -> str:
    ordered = sorted(result.metrics, key=_trec_position)
    names = [(spec.name, trec_name(spec)) for spec in ordered]
    lines: list[str] = []
    if per_query:
        for i, qid in enumerate(result.qids):
            for name, measure in names:
                value = format_value(result.per_query[name][i], digits)
                lines.append(f"{measure:<22}\t{qid}\t{value}")
    for name, measure in names:
        lines.append(f"{measure:<22}\tall\t{format_value(result.mean[name], digits)}")
    return "\n".join(lines) + "\n"


def _json(result: TrecEvaluation, per_query: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metrics": [spec.name for spec in result.metrics],
        "num_queries": result.num_queries,
        "num_evaluated": len(result.qids),
        "complete": result.complete,
        "mean": {spec.name: result.mean[spec.name] for spec in result.metrics},
    }
    if per_query:
        out["per_query"] = {
            qid: {spec.name: float(result.per_query[spec.name][i]) for spec in result.metrics}
            for i, qid in enumerate(result.qids)
        }
    return out


def _table(result: TrecEvaluation, per_query: bool, digits: int | None) -> str:
    header = ["query", *(spec.name for spec in result.metrics)]
    rows: list[list[str]] = []
    if per_query:
        rows = [
            [qid, *(format_value(result.per_query[s.name][i], digits) for s in result.metrics)]
            for i, qid in enumerate(result.qids)
        ]
    rows.append(["all", *(format_value(result.mean[s.name], digits) for s in result.metrics)])
    widths = [max(len(row[c]) for row in [header, *rows]) for c in range(len(header))]
    out = [
        "  ".join(
            cell.ljust(w) if c == 0 else cell.rjust(w)
            for c, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in [header, *rows]
    ]
    how = "all qrels queries, missing = 0" if result.complete else "queries in both files"
    out.append(f"mean over {result.num_queries} queries ({how})")
    return "\n".join(out) + "\n"
