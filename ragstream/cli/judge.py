"""`ragstream judge FILE.jsonl`: offline judging of answer events, the generation twin of
`ragstream eval`."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import click

from ragstream.cli._settings import file_settings_options, with_settings
from ragstream.config import Settings

__all__ = ["judge_command"]

_PROGRESS_EVERY = 5.0
"""Seconds between progress lines on stderr."""


@click.command("judge", short_help="Judge a file of answers; agreement with gold verdicts.")
@click.argument("file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option(
    "--judge",
    "kind",
    type=click.Choice(["lexical", "openai"]),
    help="The judge (judge.kind) [default: as configured, lexical].",
)
@file_settings_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "table", "json"]),
    default="jsonl",
    show_default=True,
    help="jsonl: one object per input line, as judged; table: one row per line, then the "
    "report; json: {answers: [...], report: {...}}.",
)
@click.option(
    "--report",
    "report_file",
    type=click.Path(path_type=Path, dir_okay=False, writable=True),
    help="Write the JSON report here: outcomes, flagged share; with gold verdicts the "
    "agreement with 95% intervals and the corrected hallucination rate.",
)
@with_settings
def judge_command(
    settings: Settings, file: Path, kind: str | None, fmt: str, report_file: Path | None
) -> None:
    """Judge every answer event of FILE (one a line) with the agent's judge.

    A line is an answer event (`type` may be left out; a context may be a plain string),
    optionally with a gold verdict {"gold": {"hallucination": true|false}}. Each line gets
    an outcome: judged, refusal (the answer declines; never a hallucination), failed (the
    judge could not) or invalid (reported on stderr with its line number). The judge's
    settings are the agent's (--config, --set judge.*): the openai judge runs
    judge.concurrency calls at a time, with its cache, judge.sampling.max_per_second and
    the judge.sampling budgets; every line is judged (the sampling rate does not apply).
    The exit status is 0 unless no line of FILE is a valid answer event (then 1).
    """
    judge_settings = settings.judge
    if kind is not None:
        judge_settings = judge_settings.model_copy(update={"kind": kind})
    from ragstream.judging.offline import JudgeReport
    from ragstream.wiring.judging import build_judge, build_sampler

    sampler = build_sampler(judge_settings)  # its budget and rate limit, not its rate
    judge = build_judge(judge_settings)
    report = JudgeReport()
    collected: list[Any] = []
    started = time.monotonic()

    async def run() -> None:
        from ragstream.judging.offline import judge_stream, parse_answer_line
        from ragstream.sources.jsonl import read_jsonl

        last = started
        batches = read_jsonl(file, batch_size=1000)
        stream = judge_stream(
            (parse_answer_line(m.value, m.offset) for batch in batches for m in batch),
            judge,
            concurrency=judge_settings.concurrency,
            window=judge_settings.queue_size,
            budget=sampler.budget,
            limit=sampler.limit if judge_settings.kind == "openai" else None,
        )
        async for row in stream:
            report.add(row)
            if row.outcome in ("invalid", "failed"):
                click.echo(f"{file}:{row.line}: {row.outcome} ({row.error})", err=True)
            if fmt == "jsonl":
                click.echo(json.dumps(row.as_dict(), allow_nan=False))
            else:
                collected.append(row)
            now = time.monotonic()
            if now - last >= _PROGRESS_EVERY:
                last = now
                done = sum(report.outcomes.values())
                click.echo(
                    f"ragstream judge: {done} lines, {done / (now - started):.1f} lines/s",
                    err=True,
                )

    asyncio.run(run())
    result = report.as_dict()
    result["judge"] = judge_settings.kind
    result["seconds"] = round(time.monotonic() - started, 3)
    if report_file is not None:
        report_file.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
    if fmt == "json":
        answers = [row.as_dict() for row in collected]
        click.echo(json.dumps({"answers": answers, "report": result}, indent=2, allow_nan=False))
    elif fmt == "table":
        from ragstream.report.judge import render_judge_report, render_judged_lines

        click.echo(render_judged_lines(collected) + "\n" + render_judge_report(result), nl=False)
    if report.judged + report.outcomes["failed"] == 0:
        raise click.ClickException(f"{file} held no valid answer event")
