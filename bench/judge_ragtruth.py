"""A judge on real answers: RAGTruth's development half, per task type, beside the
published figures.

Usage: ``.venv/bin/python -m bench.judge_ragtruth [--judge lexical|openai] [--config FILE]
[--set judge.KEY=VALUE ...] [--data FILE] [--half study|check|all] [--json]``

Each RAGTruth record becomes an answer event with a gold verdict (its response-level
label) and goes through what ``ragstream judge`` runs (`parse_answer_line`, `judge_stream`,
`JudgeReport`), with the agent's judge settings. Printed per task (QA, Summary, Data2txt)
and overall: precision, recall, F1, balanced accuracy, AUROC of ``1 - faithfulness``,
the flagged share against the true share, and answers per second; then the corrected
rate check: gold verdicts on 40% of the answers (chosen by a hash of the id), the
Rogan-Gladen rate of all the task's answers and whether its interval covers their true
rate. The data file is found in ``shared/data/ragtruth/`` beside the project or above it
(``../shared`` from the main checkout), or given with ``--data``.

``--half`` keeps one half of the file, split by ``source_id`` so that the answers to one
source stay together: *study* when the first byte of ``blake2b(source_id, digest_size=8)``
is even, else *check* (`half_of`). The lexical judge's rules are studied on the study half
and checked on the other, which stands in for RAGTruth's held-out half.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ragstream.cli._settings import file_settings_options, with_settings
from ragstream.config import Settings
from ragstream.config.judging import JudgeSettings
from ragstream.judging.lexical import LEXICAL_VERSION
from ragstream.judging.offline import JudgedLine, JudgeReport, judge_stream, parse_answer_line
from ragstream.judging.prompts import PROMPT_VERSION
from ragstream.judging.sampler import sample_point
from ragstream.wiring.judging import build_judge, build_sampler

__all__ = [
    "GOLD_SHARE",
    "HALVES",
    "PUBLISHED",
    "TASKS",
    "answer_line",
    "corrected_check",
    "half_of",
    "judge_records",
    "load_records",
    "ragtruth_path",
]

TASKS = ("QA", "Summary", "Data2txt")
HALVES = ("study", "check", "all")
GOLD_SHARE = 0.4
"""Share of the answers whose gold verdict the corrected-rate check uses."""
_GOLD_SALT = "ragtruth-gold"
_RELATIVE = Path("shared/data/ragtruth/ragtruth_dev.jsonl")
_TS = 1_700_000_000.0
"""The events' time (RAGTruth has none; judging does not read it)."""

PUBLISHED: dict[str, dict[str, dict[str, float]]] = {
    "F1 (%)": {
        "GPT-4-turbo prompting": {"QA": 45.6, "Summary": 47.6, "Data2txt": 78.3},
        "GPT-3.5-turbo prompting": {"QA": 30.8, "Summary": 37.1, "Data2txt": 77.4},
        "SelfCheckGPT": {"QA": 43.7, "Summary": 40.1, "Data2txt": 74.8},
        "fine-tuned Llama-2-13B": {"QA": 68.2, "Summary": 59.1, "Data2txt": 88.1},
    },
    "balanced accuracy (%)": {"HHEM-2.1-open": {"QA": 74.3, "Summary": 64.4}},
}
"""Response-level results on RAGTruth's full test split, as the data's README quotes them
(paper Table 5; Vectara's HHEM-2.1-open model card)."""

PROTOCOL = (
    "Protocol differences: the published figures are on RAGTruth's whole test split; this "
    "is its development half (a subset: all answers to the first test sources of each "
    "task, the rest a uniform sample), so figures move by a few points from sampling "
    "alone. Both are response-level (an answer with any annotated span is a "
    "hallucination). The judges here read the contexts as the data gives them (QA: three "
    "passages; Summary: the article; Data2txt: RAGTruth's rendering of the structured "
    "data), with the project's prompt, not the paper's."
)


def ragtruth_path(start: Path | None = None) -> Path | None:
    """``shared/data/ragtruth/ragtruth_dev.jsonl`` in the first folder at or above the
    project's parent that has it (None when none has)."""
    root = (start or Path(__file__)).resolve().parent.parent
    for folder in root.parents:
        candidate = folder / _RELATIVE
        if candidate.is_file():
            return candidate
    return None


def load_records(path: Path) -> list[dict[str, Any]]:
    """The file's records, in file order."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def half_of(record: dict[str, Any]) -> str:
    """``study`` when the first byte of ``blake2b(source_id, digest_size=8)`` is even, else
    ``check``: all the answers to one source fall in the same half."""
    digest = hashlib.blake2b(str(record["source_id"]).encode(), digest_size=8).digest()
    return "study" if digest[0] % 2 == 0 else "check"


def answer_line(record: dict[str, Any], *, gold: bool = True) -> str:
    """The record as an answer event line (`ragstream judge`'s input), with its label as
    the gold verdict when ``gold``."""
    event: dict[str, Any] = {
        "query_id": str(record["id"]),
        "ts": _TS,
        "labels": {"task": record["task_type"], "model": record["model"]},
        "question": record["question"],
        "answer": record["answer"],
        "contexts": list(record["contexts"]),
    }
    if gold:
        event["gold"] = {"hallucination": bool(record["label"])}
    return json.dumps(event, ensure_ascii=False)


def has_gold(record: dict[str, Any]) -> bool:
    """Whether the corrected-rate check uses this record's gold verdict (a hash of the id,
    so the choice is the same on every run and for every judge)."""
    return sample_point(str(record["id"]), _GOLD_SALT) < GOLD_SHARE


async def _judge(records: Sequence[dict[str, Any]], settings: JudgeSettings) -> list[JudgedLine]:
    sampler = build_sampler(settings)
    lines = (parse_answer_line(answer_line(r), i + 1) for i, r in enumerate(records))
    return [
        row
        async for row in judge_stream(
            lines,
            build_judge(settings),
            concurrency=settings.concurrency,
            window=settings.queue_size,
            budget=sampler.budget,
            limit=sampler.limit if settings.kind == "openai" else None,
        )
    ]


def judge_records(
    records: Sequence[dict[str, Any]], settings: JudgeSettings
) -> tuple[list[JudgedLine], float]:
    """Every record judged as `ragstream judge` judges a file, and the seconds it took."""
    started = time.perf_counter()
    rows = asyncio.run(_judge(records, settings))
    return rows, time.perf_counter() - started


def corrected_check(
    records: Sequence[dict[str, Any]], rows: Sequence[JudgedLine]
) -> dict[str, Any]:
    """The report of the answers with gold verdicts on `has_gold` records only, and the
    true share of all of them."""
    report = JudgeReport()
    for record, row in zip(records, rows, strict=True):
        report.add(row if has_gold(record) else dataclasses.replace(row, gold=None))
    truth = sum(bool(r["label"]) for r in records) / len(records)
    corrected = report.as_dict()["corrected_hallucination_rate"]
    return {
        "answers": len(records),
        "flagged_share": report.flagged / report.judged if report.judged else None,
        "true_share": truth,
        "corrected": corrected,
        "covered": corrected["lower"] <= truth <= corrected["upper"],
    }


def _summary(rows: Sequence[JudgedLine], seconds: float) -> dict[str, Any]:
    report = JudgeReport()
    for row in rows:
        report.add(row)
    result = report.as_dict()
    result["seconds"] = seconds
    result["answers_per_second"] = len(rows) / seconds if seconds > 0 else None
    return result


def _version(settings: JudgeSettings) -> str:
    return LEXICAL_VERSION if settings.kind == "lexical" else PROMPT_VERSION


def _machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def _pct(est: dict[str, Any] | None, key: str = "value") -> str:
    if est is None or est.get(key) is None:
        return "-"
    return f"{100 * est[key]:.1f}"


def _render(result: dict[str, Any]) -> str:
    out = [
        f"judge: {result['judge']} ({result['version']}); data: {result['data']}, "
        f"half: {result['half']} ({result['answers']} answers); machine: {result['machine']}",
        "",
        "| task | answers | true share | flagged share | precision | recall | F1 | "
        "balanced accuracy [95%] | AUROC | answers/s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for task in (*TASKS, "overall"):
        r = result["tasks"][task]
        g = r["gold"]
        ba = g["balanced_accuracy"]
        ba_text = (
            f"{_pct(ba)} [{_pct(ba, 'lower')}, {_pct(ba, 'upper')}]"
            if ba["value"] is not None
            else "-"
        )
        rate = r["answers_per_second"]
        out.append(
            f"| {task} | {r['lines']} | {_pct(g['true_share'])} | {_pct(r['flagged_share'])} | "
            f"{_pct(g['precision'])} | {_pct(g['sensitivity'])} | {_pct(g['f1'])} | {ba_text} | "
            f"{_pct(g['auroc'])} | {rate:.0f} |"
            if rate is not None
            else f"| {task} | {r['lines']} | - |"
        )
    out += ["", "Published (RAGTruth full test split, response level):", ""]
    out.append("| method | figure | QA | Summary | Data2txt |")
    out.append("|---|---|---|---|---|")
    for figure, methods in PUBLISHED.items():
        for method, values in methods.items():
            cells = " | ".join(f"{values[t]:.1f}" if t in values else "-" for t in TASKS)
            out.append(f"| {method} | {figure} | {cells} |")
    out += ["", PROTOCOL, ""]
    out.append(f"Corrected rate, gold verdicts on {GOLD_SHARE:.0%} of the answers (by id hash):")
    out += [
        "",
        "| task | answers | gold | flagged share | corrected rate [95%] | true share | covered |",
        "|---|---|---|---|---|---|---|",
    ]
    for task in (*TASKS, "overall"):
        c = result["corrected"][task]
        k = c["corrected"]
        value = "undefined" if k["value"] is None else f"{k['value']:.3f}"
        flagged = "-" if c["flagged_share"] is None else f"{c['flagged_share']:.3f}"
        out.append(
            f"| {task} | {c['answers']} | {k['n_gold']} | {flagged} | "
            f"{value} [{k['lower']:.3f}, {k['upper']:.3f}] | {c['true_share']:.3f} | "
            f"{'yes' if c['covered'] else 'NO'} |"
        )
    return "\n".join(out) + "\n"


@click.command()
@click.option("--judge", "kind", type=click.Choice(["lexical", "openai"]), help="judge.kind")
@file_settings_options
@click.option(
    "--data",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="RAGTruth development half [default: shared/data/ragtruth/ragtruth_dev.jsonl "
    "beside the project or above it].",
)
@click.option(
    "--half",
    type=click.Choice(HALVES),
    default="all",
    show_default=True,
    help="The answers of one half of the file, split by source_id (study: the first byte "
    "of blake2b(source_id, digest_size=8) is even; check: it is odd).",
)
@click.option("--json", "as_json", is_flag=True, help="Every figure as JSON.")
@with_settings
def main(settings: Settings, kind: str | None, data: Path | None, half: str, as_json: bool) -> None:
    """Judge RAGTruth's development half and compare with the published figures."""
    path = data or ragtruth_path()
    if path is None:
        raise click.ClickException(f"no {_RELATIVE} found beside the project; give --data")
    judge_settings = settings.judge
    if kind is not None:
        judge_settings = judge_settings.model_copy(update={"kind": kind})
    records = [r for r in load_records(path) if half in ("all", half_of(r))]
    by_task = {t: [r for r in records if r["task_type"] == t] for t in TASKS}
    tasks: dict[str, Any] = {}
    corrected: dict[str, Any] = {}
    all_rows: list[JudgedLine] = []
    all_records: list[dict[str, Any]] = []
    total = 0.0
    for task, chosen in by_task.items():
        rows, seconds = judge_records(chosen, judge_settings)
        tasks[task] = _summary(rows, seconds)
        corrected[task] = corrected_check(chosen, rows)
        all_rows += rows
        all_records += chosen
        total += seconds
    tasks["overall"] = _summary(all_rows, total)
    corrected["overall"] = corrected_check(all_records, all_rows)
    result = {
        "judge": judge_settings.kind,
        "version": _version(judge_settings),
        "data": str(path),
        "half": half,
        "answers": len(records),
        "machine": _machine(),
        "tasks": tasks,
        "corrected": corrected,
        "published": PUBLISHED,
        "protocol": PROTOCOL,
    }
    click.echo(json.dumps(result, indent=2) if as_json else _render(result), nl=not as_json)


if __name__ == "__main__":
    main()
