"""The corrected rate on real answers: RAGTruth's development half (../shared/data), gold
verdicts on 40% of the answers, and the interval of the corrected rate of all the answers
of a task covering their true rate, in every task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.judge_ragtruth import (
    TASKS,
    answer_line,
    corrected_check,
    half_of,
    has_gold,
    judge_records,
    load_records,
    ragtruth_path,
)
from bench.judge_ragtruth import main as bench_main
from ragstream.cli import main
from ragstream.config.judging import JudgeSettings
from ragstream.judging.offline import JudgeReport

_PATH = ragtruth_path()

pytestmark = pytest.mark.skipif(
    _PATH is None,
    reason="shared/data/ragtruth/ragtruth_dev.jsonl is not beside the project (../shared)",
)


def test_the_corrected_rate_covers_the_true_rate_in_every_task() -> None:
    assert _PATH is not None
    records = load_records(_PATH)
    assert len(records) == 427
    for task in TASKS:
        chosen = [r for r in records if r["task_type"] == task]
        rows, _ = judge_records(chosen, JudgeSettings())
        assert [row.query_id for row in rows] == [str(r["id"]) for r in chosen]
        assert all(row.outcome in ("judged", "refusal") for row in rows), task
        check = corrected_check(chosen, rows)
        gold = sum(has_gold(r) for r in chosen)
        assert check["corrected"]["n_gold"] == gold
        assert 0.3 * len(chosen) < gold < 0.5 * len(chosen), (task, gold)
        truth = check["true_share"]
        corrected = check["corrected"]
        assert corrected["lower"] <= truth <= corrected["upper"], (task, check)
        assert check["covered"] is True


def test_ragstream_judge_reports_what_the_bench_reports(tmp_path: Path) -> None:
    """The command on the answers as a file, and the bench's own run: the same report."""
    assert _PATH is not None
    chosen = [r for r in load_records(_PATH) if r["task_type"] == "QA"]
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(answer_line(r) + "\n" for r in chosen), encoding="utf-8")
    report = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["judge", str(path), "--report", str(report)])
    assert result.exit_code == 0, result.output
    got = json.loads(report.read_text())
    rows, _ = judge_records(chosen, JudgeSettings())
    expected = JudgeReport()
    for row in rows:
        expected.add(row)
    want = expected.as_dict()
    for key in ("outcomes", "flagged", "flagged_share", "gold", "corrected_hallucination_rate"):
        assert got[key] == want[key], key
    assert got["gold"]["answers"] == len(chosen)


def test_the_halves_split_by_source_and_the_bench_reports_one() -> None:
    """study / check by the first byte of blake2b(source_id): every source's answers in one
    half; `--half` judges that half only and says so in its header."""
    assert _PATH is not None
    records = load_records(_PATH)
    halves: dict[str, set[str]] = {"study": set(), "check": set()}
    for record in records:
        halves[half_of(record)].add(str(record["source_id"]))
    assert not halves["study"] & halves["check"]
    counts = {h: sum(half_of(r) == h for r in records) for h in halves}
    assert counts == {"study": 233, "check": 194}
    for half in ("study", "check", "all"):
        result = CliRunner().invoke(bench_main, ["--half", half, "--json"])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert report["half"] == half
        assert report["version"] == "lexical-3"
        expected = len(records) if half == "all" else counts[half]
        assert report["answers"] == expected
        assert sum(report["tasks"][t]["lines"] for t in TASKS) == expected
    text = CliRunner().invoke(bench_main, ["--half", "check"]).output
    assert "half: check (194 answers)" in text.splitlines()[0]
