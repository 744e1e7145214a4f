"""`ragstream replay` judges answers as the agent does: deterministic sampling by query id,
the lexical judge by default, `--set judge.*` honoured; its summary shows the judged windows
and, with gold verdicts in the file, the judge's agreement: equal to a reference computed
from scratch with the same judge on the same answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.config.judging import JudgeSettings
from ragstream.events import AnswerEvent
from ragstream.judging.agreement import Confusion, corrected_rate
from ragstream.judging.gold import verdict_of
from ragstream.judging.model import JudgeInput
from ragstream.judging.sampler import sample_point
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import build_judge


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    path = tmp_path_factory.mktemp("replay-judging") / "events.jsonl"
    traffic = SyntheticTraffic(SyntheticConfig(seed=21, rate=10.0, drift_at=30.0, gold_share=0.4))
    events = [e.event for e in traffic.take(3000)]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path, events


def _replay(path: Path, *settings: str) -> dict[str, Any]:
    args = ["replay", str(path), "--format", "json", "--batch-size", "700"]
    for assignment in settings:
        args += ["--set", assignment]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


def _reference(events: list[dict[str, Any]], rate: float) -> tuple[int, int, Confusion]:
    """Sampled answers and those flagged (no rate limit in a replay), and the confusion
    against every gold verdict, from the lexical judge on each answer."""
    judge = build_judge(JudgeSettings())
    gold = {
        e["query_id"]: e["answer"]["hallucination"]
        for e in events
        if e["type"] == "feedback" and "answer" in e
    }
    answers = [AnswerEvent.model_validate(e) for e in events if e["type"] == "answer"]

    async def verdicts() -> list[str]:
        return [verdict_of(await judge.judge(JudgeInput.from_event(a))) for a in answers]

    flags = dict(zip((a.query_id for a in answers), asyncio.run(verdicts()), strict=True))
    sampled = [q for q in flags if sample_point(q) < rate]
    flagged = sum(flags[q] == "hallucination" for q in sampled)
    pairs = [(g, flags[q] == "hallucination") for q, g in gold.items() if q in flags]
    return len(sampled), flagged, Confusion.from_pairs(pairs)


@pytest.mark.parametrize("rate", [0.05, 0.5])
def test_replay_judges_as_the_agent_and_reports_the_agreement(
    events: tuple[Path, list[dict[str, Any]]], rate: float
) -> None:
    path, lines = events
    result = _replay(path, f"judge.sampling.rate={rate}")
    assert result == _replay(path, f"judge.sampling.rate={rate}")  # deterministic
    judging = result["judging"]
    assert judging["judge"] == "lexical"
    n, flagged, confusion = _reference(lines, rate)
    window = judging["windows"]["all"]["24h"]
    assert window["judged"] == n
    raw = window["hallucination_ratio"]
    assert raw["value"] == pytest.approx(flagged / n, rel=1e-12)
    assert judging["agreement"]["all"]["confusion"] == confusion.as_dict()
    assert judging["agreement"]["all"]["sensitivity"] == confusion.sensitivity().as_dict()
    want = corrected_rate(flagged, n, confusion.se_counts, confusion.sp_counts)
    assert window["corrected_hallucination_ratio"] == want.as_dict()
    assert judging["gold"]["compared"] == confusion.n
    assert judging["samples"]["sampled"] == n


def test_replay_table_shows_the_judged_windows_and_the_agreement(
    events: tuple[Path, list[dict[str, Any]]],
) -> None:
    path, _ = events
    result = CliRunner().invoke(main, ["replay", str(path), "--set", "judge.sampling.rate=0.5"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "answers judged by the lexical judge:" in text
    assert "corrected" in text
    assert "the lexical judge against gold verdicts:" in text
    assert "sensitivity" in text


def test_replay_without_the_judge(events: tuple[Path, list[dict[str, Any]]]) -> None:
    path, _ = events
    assert "judging" not in _replay(path, "judge.enabled=false")
