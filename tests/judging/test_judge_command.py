"""`ragstream judge FILE.jsonl`: outputs, malformed lines, the report, the openai judge."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ragstream.cli import main
from ragstream.judging.agreement import Confusion, corrected_rate
from tests.support.openai_server import OpenAIServer

from ._helpers import refusing_responder

_QUESTION = "Who wrote Hamlet?"
_CONTEXT = "Hamlet is a tragedy written by William Shakespeare around 1600."


def _line(query_id: str, answer: str, gold: bool | None = None, **extra: Any) -> str:
    event: dict[str, Any] = {
        "query_id": query_id,
        "ts": "2024-05-01T12:00:00Z",
        "question": _QUESTION,
        "answer": answer,
        "contexts": [_CONTEXT],
        **extra,
    }
    if gold is not None:
        event["gold"] = {"hallucination": gold}
    return json.dumps(event)


def _file(tmp_path: Path) -> Path:
    lines = [
        _line("q1", "Hamlet was written by William Shakespeare.", False, type="answer"),
        _line("q2", "Hamlet was written by Christopher Marlowe in 1720.", True),
        "",
        "{not json",
        '{"type": "feedback", "query_id": "q3", "ts": 1, "doc_id": "d", "rel": 1, "source": "x"}',
        _line("q4", "Unable to answer based on the given passages.", False),
        _line("q5", "William Shakespeare wrote Hamlet around 1600."),
        _line("q6", "Marlowe wrote Hamlet in 1720, a comedy.", True),
    ]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_jsonl_has_one_object_per_line_in_order_and_stderr_names_bad_lines(
    tmp_path: Path,
) -> None:
    path = _file(tmp_path)
    report = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["judge", str(path), "--report", str(report)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 4, 5, 6, 7, 8]  # line 3 is blank
    assert [r["query_id"] for r in rows] == ["q1", "q2", None, "q3", "q4", "q5", "q6"]
    by_line = {r["line"]: r for r in rows}
    assert by_line[4]["outcome"] == by_line[5]["outcome"] == "invalid"
    assert by_line[4]["hallucination"] is None
    assert set(rows[0]) == {
        "line",
        "query_id",
        "outcome",
        "faithfulness",
        "hallucination",
        "answer_relevance",
        "context_relevance",
        "error",
    }
    assert f"{path}:4: invalid (bad_json" in result.stderr
    assert f"{path}:5: invalid (unknown_type" in result.stderr
    judged = [r for r in rows if r["outcome"] in ("judged", "refusal")]
    assert all(isinstance(r["hallucination"], bool) for r in judged)
    assert by_line[2]["hallucination"] is True  # 1720 is in no context

    got = json.loads(report.read_text())
    assert got["judge"] == "lexical"
    assert got["outcomes"]["invalid"] == 2
    assert got["outcomes"]["judged"] + got["outcomes"]["refusal"] == 5
    # from scratch: the gold lines 1, 2, 6, 8 against the verdicts printed
    gold = {1: False, 2: True, 6: False, 8: True}
    c = Confusion.from_pairs((g, by_line[n]["hallucination"]) for n, g in gold.items())
    assert got["gold"]["confusion"] == c.as_dict()
    flagged = sum(r["hallucination"] for r in judged)
    assert got["flagged"] == flagged
    assert got["corrected_hallucination_rate"] == (
        corrected_rate(flagged, len(judged), c.se_counts, c.sp_counts).as_dict()
    )


def test_table_and_json_formats(tmp_path: Path) -> None:
    path = _file(tmp_path)
    runner = CliRunner()
    table = runner.invoke(main, ["judge", str(path), "--format", "table"])
    assert table.exit_code == 0, table.output
    assert "line  query_id  outcome" in table.stdout
    assert "balanced accuracy" in table.stdout
    assert "corrected rate" in table.stdout
    as_json = runner.invoke(main, ["judge", str(path), "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.stdout)
    assert len(doc["answers"]) == 7
    assert doc["report"]["outcomes"]["invalid"] == 2


def test_a_file_without_a_valid_answer_fails(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("nope\n[]\n")
    result = CliRunner().invoke(main, ["judge", str(path)])
    assert result.exit_code == 1
    assert "held no valid answer event" in result.stderr
    assert len(result.stdout.splitlines()) == 2


@contextmanager
def _server_in_a_thread() -> Iterator[OpenAIServer]:
    """The OpenAI stand-in on a loop of its own (the command runs `asyncio.run`)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = OpenAIServer(refusing_responder, api_key="sk-test")
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_the_openai_judge_with_the_agent_s_settings(tmp_path: Path) -> None:
    path = _file(tmp_path)
    report = tmp_path / "report.json"
    with _server_in_a_thread() as server:
        result = CliRunner().invoke(
            main,
            [
                "judge",
                str(path),
                "--judge",
                "openai",
                "--set",
                f"judge.openai.base_url={server.base_url}",
                "--set",
                "judge.openai.api_key=sk-test",
                "--set",
                "judge.concurrency=3",
                "--report",
                str(report),
            ],
        )
        calls = server.calls
    assert result.exit_code == 0, result.output
    rows = {r["line"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert calls == 5
    assert rows[6]["outcome"] == "refusal"
    assert rows[6]["hallucination"] is False
    assert rows[6]["faithfulness"] is None
    assert rows[2]["hallucination"] is True
    assert rows[8]["hallucination"] is True
    assert rows[1]["hallucination"] is False
    got = json.loads(report.read_text())
    assert got["judge"] == "openai"
    assert got["outcomes"] == {"judged": 4, "refusal": 1, "failed": 0, "invalid": 2}
    assert got["gold"]["confusion"] == {"tp": 2, "fp": 0, "fn": 0, "tn": 2}
