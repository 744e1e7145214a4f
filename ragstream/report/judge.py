"""`ragstream judge --format table`: one row per answer, then the report for people."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragstream.judging.offline import JudgedLine

__all__ = ["render_judge_report", "render_judged_lines"]


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _flag(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
        for row in rows
    )


def render_judged_lines(lines: Sequence[JudgedLine]) -> str:
    """line, query_id, outcome, the scores, the verdict and the gold verdict."""
    head = ["line", "query_id", "outcome", "faithful", "halluc.", "ans.rel", "ctx.rel", "gold"]
    rows = [head]
    for line in lines:
        d = line.as_dict()
        scores = [_score(d[k]) for k in ("faithfulness", "answer_relevance", "context_relevance")]
        scores.insert(1, _flag(d["hallucination"]))
        rows.append([str(line.line), line.query_id or "-", line.outcome, *scores, _flag(line.gold)])
    return _table(rows)


def _estimate(name: str, est: Mapping[str, Any] | None) -> list[str]:
    if est is None or est.get("value") is None:
        return [name, "-", "undefined", str(est.get("n", est.get("n_gold", 0)) if est else 0)]
    n = est.get("n", est.get("n_gold"))
    return [name, f"{est['value']:.3f}", f"[{est['lower']:.3f}, {est['upper']:.3f}]", str(n)]


def render_judge_report(report: Mapping[str, Any]) -> str:
    """The outcomes, the flagged share and, with gold verdicts, the agreement."""
    outcomes = report["outcomes"]
    out = [
        "lines: "
        + ", ".join(f"{k} {outcomes[k]}" for k in ("judged", "refusal", "failed", "invalid"))
        + "\n"
    ]
    rows = [["", "value", "95% interval", "n"]]
    rows.append(_estimate("flagged share", report["flagged_share"]))
    gold = report.get("gold")
    if gold is None:
        out.append(_table(rows))
        out.append("no gold verdicts: agreement and corrected rate need labeled lines\n")
        return "".join(out)
    rows.append(_estimate("true share (gold)", gold["true_share"]))
    rows.append(_estimate("corrected rate", report["corrected_hallucination_rate"]))
    for key, name in (
        ("sensitivity", "sensitivity"),
        ("specificity", "specificity"),
        ("precision", "precision"),
        ("f1", "F1"),
        ("balanced_accuracy", "balanced accuracy"),
        ("auroc", "AUROC (1 - faithfulness)"),
    ):
        rows.append(_estimate(name, gold[key]))
    c = gold["confusion"]
    out.append(_table(rows))
    out.append(
        f"gold answers {gold['answers']}: tp {c['tp']}  fp {c['fp']}  fn {c['fn']}  tn {c['tn']}\n"
    )
    return "".join(out)
