"""Text forms of a `TrecEvaluation`: trec_eval's `-q` layout, a readable table, and JSON.

`trec`: one `measure<TAB>qid<TAB>value` line per query and measure (with `per_query`), then
one per measure with qid `all` for the mean, measure names padded to 22 characters and
values printed with `%6.4f` -- byte for byte what trec_eval prints (`%-22s\\t%s\\t%6.4f`),
measures in trec_eval's own order (its measure table: map, recip_rank, P, recall, ndcg_cut,
success; cutoffs ascending), whatever order they were asked for in.
With -c (`complete`), each qrels query the run lacks gets its lines too, all 0, among the
others in byte order of the ids, as trec_eval 10 prints them (9.x prints none).
`digits` changes the number of decimals; `None` prints every digit (`repr`, round-trips).
`json`: always full precision.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from ragstream.metrics import MetricSpec, trec_name
from ragstream.trec.evaluate import TrecEvaluation

__all__ = ["Format", "render"]

Format = Literal["table", "json", "trec"]


def _format_value(value: float, digits: int | None) -> str:
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


def _rows(result: TrecEvaluation) -> list[tuple[str, int | None]]:
    """The per-query rows: each evaluated query with its index into `per_query`, and with
    -c each qrels query the run lacks (None: all its values are 0), in byte order of the
    ids, as trec_eval prints them."""
    rows: list[tuple[str, int | None]] = [(qid, i) for i, qid in enumerate(result.qids)]
    if not result.missing:
        return rows
    rows += [(qid, None) for qid in result.missing]
    return sorted(rows, key=lambda row: row[0].encode("utf-8", "surrogateescape"))


def _value(result: TrecEvaluation, name: str, row: int | None) -> float:
    return 0.0 if row is None else float(result.per_query[name][row])


def _trec(result: TrecEvaluation, per_query: bool, digits: int | None) -> str:
    ordered = sorted(result.metrics, key=_trec_position)
    names = [(spec.name, trec_name(spec)) for spec in ordered]
    lines: list[str] = []
    if per_query:
        for qid, row in _rows(result):
            for name, measure in names:
                value = _format_value(_value(result, name, row), digits)
                lines.append(f"{measure:<22}\t{qid}\t{value}")
    for name, measure in names:
        lines.append(f"{measure:<22}\tall\t{_format_value(result.mean[name], digits)}")
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
            qid: {spec.name: _value(result, spec.name, row) for spec in result.metrics}
            for qid, row in _rows(result)
        }
    return out


def _table(result: TrecEvaluation, per_query: bool, digits: int | None) -> str:
    header = ["query", *(spec.name for spec in result.metrics)]
    rows: list[list[str]] = []
    if per_query:
        rows = [
            [qid, *(_format_value(_value(result, s.name, row), digits) for s in result.metrics)]
            for qid, row in _rows(result)
        ]
    rows.append(["all", *(_format_value(result.mean[s.name], digits) for s in result.metrics)])
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
