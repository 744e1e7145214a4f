"""`ragstream replay FILE.jsonl`: the agent's pipeline on a file, with the event clock."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any, TextIO

import click

from ragstream.checkpoint.local import CheckpointError
from ragstream.cli._replay_checkpoint import ReplayKeeper, replay_settings
from ragstream.cli._settings import file_settings_options, with_settings
from ragstream.config import Settings
from ragstream.judging.service import JudgingService
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.gc_tuning import tune_gc
from ragstream.report.console import render_replay
from ragstream.report.replay import judging_summary, summary
from ragstream.sinks.results import query_record
from ragstream.sources.jsonl import LineCounts, read_jsonl
from ragstream.wiring import engine_config, replay_judging

__all__ = ["replay"]


@click.command("replay", short_help="Run the pipeline on a file of events, then summarize.")
@click.argument("file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@file_settings_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: the summary for people; json: every counter and mean, for programs.",
)
@click.option(
    "--per-query",
    type=click.Path(path_type=Path, dir_okay=False, writable=True),
    help="Write one JSON line per final query with its metrics: the record of the results "
    "topic (docs/results.md; `ragstream schema --type result`).",
)
@click.option(
    "--input-format",
    type=click.Choice(["ragstream", "otlp_json"]),
    default="ragstream",
    show_default=True,
    help="ragstream: one event per line; otlp_json: one OTLP/JSON traces request per line "
    "(the OpenTelemetry Collector's file exporter), mapped as docs/opentelemetry.md says.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1),
    default=5000,
    show_default=True,
    help="Lines read and applied at a time.",
)
@click.option(
    "--checkpoint-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep a checkpoint here (state and input position, written atomically) and resume "
    "from it: a replay that was stopped, even by SIGKILL, goes on where it stood and ends "
    "with the output of one that never was.",
)
@click.option(
    "--checkpoint-every",
    type=click.IntRange(1),
    default=500_000,
    show_default=True,
    help="Lines between checkpoints (taken after the batch that reaches them, and at the end); "
    "each costs about a second per 20 000 open queries.",
)
@with_settings
def replay(
    settings: Settings,
    file: Path,
    fmt: str,
    per_query: Path | None,
    input_format: str,
    batch_size: int,
    checkpoint_dir: Path | None,
    checkpoint_every: int,
) -> None:
    """Run the pipeline on FILE (one event per line) and print a summary at the end.

    The clock is the event clock (t_now = the largest event time seen), so two replays of
    one file give the same output. Malformed lines are reported on stderr and counted by
    reason, blank lines skipped and counted; the exit status is 0 unless no line of FILE is
    a valid event (then 1).

    With --checkpoint-dir, a checkpoint found there is resumed when it is of FILE (the same
    bytes up to where it stands) and was taken with the same settings; otherwise the replay
    stops with what differs.
    """
    tune_gc()
    config = engine_config(settings, clock="event", drift=False)
    if input_format != "ragstream":  # the file's lines are messages of a trace topic
        config = dataclasses.replace(config, formats=((file.name, input_format),))
    engines: list[Engine] = []  # the judge reads the engine's clock and label sets
    judging = replay_judging(
        settings,
        lambda: engines[0].now(),
        lambda labels: engines[0].labelsets(labels),
        queue_size=batch_size,
        # per-query records carry the verdicts of queries judged while open
        is_open=None if per_query is None else lambda q: engines[0].find_query(q) is not None,
    )
    sides = {} if judging is None else {"judge": judging}
    judge = None if judging is None else settings.judge.model_dump(mode="json")
    fingerprint = replay_settings(config, batch_size, input_format, per_query is not None, judge)
    keeper = ReplayKeeper(checkpoint_dir, file, fingerprint, checkpoint_every)
    try:
        engine, lines = keeper.resume(config, sides)
        out = None if per_query is None else keeper.open_output(per_query)
    except CheckpointError as mismatch:
        raise click.ClickException(str(mismatch)) from mismatch
    engines.append(engine)
    try:
        asyncio.run(_run(file, engine, judging, lines, batch_size, keeper, out))
    finally:
        if out is not None:
            out.close()
    result = {**summary(engine), "lines": {"read": lines.lines, "blank": lines.blank}}
    if judging is not None:
        result["judging"] = judging_summary(engine, judging)
    if fmt == "json":
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        click.echo(render_replay(result))
    if not any(n for (_, outcome), n in engine.events.items() if outcome != "invalid"):
        raise click.ClickException(_no_valid_event(file, engine))


async def _run(
    file: Path,
    engine: Engine,
    judging: JudgingService | None,
    lines: LineCounts,
    batch_size: int,
    keeper: ReplayKeeper,
    out: TextIO | None,
) -> None:
    """Apply the file batch by batch; the judge, when on, judges each batch's sampled
    answers (and those with gold verdicts) before the next batch, as the agent would with
    a judge that keeps up."""
    if judging is not None:
        await judging.start()
    try:
        for batch in read_jsonl(file, batch_size, lines, keeper.digest):
            report = engine.apply(batch)
            for message, problem in report.invalid:
                click.echo(f"{file}:{message.offset}: invalid event ({problem})", err=True)
            _write(out, engine, report.final, judging)
            if judging is not None:
                judging.on_answers(report.answers)
                judging.on_verdicts(report.verdicts)
                await judging.settle()
            keeper.after_batch(engine, lines, out)
        keeper.save(engine, lines, out, done=True)
        _write(out, engine, engine.finish(), judging)
    finally:
        if judging is not None:
            await judging.stop()


def _write(
    out: TextIO | None, engine: Engine, queries: list[Any], judging: JudgingService | None
) -> None:
    """The final queries' records, each with the judge's verdict kept for it."""
    if out is None:
        return
    for query in queries:
        verdicts = (
            None if judging is None else judging.take_verdict(query.partition, query.query_id)
        )
        out.write(json.dumps(query_record(engine, query, verdicts), sort_keys=True) + "\n")


def _no_valid_event(file: Path, engine: Engine) -> str:
    invalid = sum(engine.invalid.values())
    if not invalid:
        return f"{file} held no valid event: it has no event lines"
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(engine.invalid.items()))
    lines = "line" if invalid == 1 else "lines"
    return f"{file} held no valid event: {invalid} {lines}, all invalid ({reasons})"
