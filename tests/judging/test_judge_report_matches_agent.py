"""`ragstream judge --report` and the agent give the same agreement and corrected ratio on
the same answers: the file's lines carry the gold verdicts that the agent reads as feedback
events, and the agent samples every answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ragstream.cli import main
from ragstream.config.judging import JudgeSettings, SamplingSettings
from ragstream.events import Message
from ragstream.judging.agreement import Confusion
from ragstream.judging.results import GenerationRead
from ragstream.pipeline.engine import Engine
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic
from ragstream.wiring import judging_service
from tests.support.defaults import agent_settings, engine_config


def _traffic() -> list[dict[str, Any]]:
    config = SyntheticConfig(seed=3, rate=20.0, drift_at=5.0, gold_share=0.6, answer_share=1.0)
    return [
        e.event
        for e in SyntheticTraffic(config).stream(400)
        if e.event["type"] == "answer" or "answer" in e.event
    ]


async def _agent(events: list[dict[str, Any]]) -> tuple[GenerationRead, Confusion]:
    """The agent's window of every answer, and its judge's confusion against gold."""
    engine = Engine(engine_config(clock="event"))
    service = judging_service(
        agent_settings(JudgeSettings(sampling=SamplingSettings(rate=1.0, max_per_second=None))),
        sampler_clock=engine.now,
        window_clock=engine.now,
    )
    engine.attach("judge", service)
    await service.start()
    messages = [Message(json.dumps(e).encode(), 0, i, "t", None) for i, e in enumerate(events)]
    for start in range(0, len(messages), 50):
        report = engine.apply(messages[start : start + 50])
        service.on_answers(report.answers)
        service.on_verdicts(report.verdicts)
        await asyncio.sleep(0)
    await service.stop()
    read = service.results.read(engine.now(), ())["24h"]
    confusion = service.results.confusion(engine.now(), ())
    return read, confusion


def test_the_judge_report_and_the_agent_agree(tmp_path: Path) -> None:
    events = _traffic()
    gold = {e["query_id"]: e["answer"] for e in events if e["type"] == "feedback"}
    answers = [e for e in events if e["type"] == "answer"]
    assert 0.4 * len(answers) < len(gold) < 0.8 * len(answers)
    path = tmp_path / "answers.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for answer in answers:
            line = dict(answer)
            if answer["query_id"] in gold:
                line["gold"] = gold[answer["query_id"]]
            out.write(json.dumps(line) + "\n")
    report_path = tmp_path / "report.json"
    result = CliRunner().invoke(
        main, ["judge", str(path), "--report", str(report_path), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(report_path.read_text(encoding="utf-8"))

    read, confusion = asyncio.run(_agent(events))
    assert report["outcomes"]["judged"] + report["outcomes"]["refusal"] == read.judged
    assert report["flagged"] == read.hallucinations
    assert report["gold"]["confusion"] == confusion.as_dict()
    assert report["gold"]["sensitivity"] == confusion.sensitivity().as_dict()
    assert report["gold"]["specificity"] == confusion.specificity().as_dict()
    assert read.corrected is not None
    assert report["corrected_hallucination_rate"] == read.corrected.as_dict()
    assert read.corrected.n_gold == len(gold)
