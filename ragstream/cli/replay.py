"""`ragstream replay FILE.jsonl`: the agent's pipeline on a file, with the event clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

import click

from ragstream.cli._settings import settings_options, with_settings
from ragstream.config import Settings
from ragstream.pipeline.engine import Engine
from ragstream.pipeline.gc import tune_gc
from ragstream.report.replay import query_record, summary
from ragstream.sources.jsonl import read_jsonl
from ragstream.wiring import engine_config

__all__ = ["replay"]

_TABLE_METRICS = ("rr", "ndcg@10", "precision@5", "recall@10")


@click.command("replay")
@click.argument("file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@settings_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.option(
    "--per-query",
    type=click.Path(path_type=Path, dir_okay=False, writable=True),
    help="Write one JSON line per query with its final metrics.",
)
@click.option("--batch-size", type=click.IntRange(1), default=5000, show_default=True)
@with_settings
def replay(
    settings: Settings, file: Path, fmt: str, per_query: Path | None, batch_size: int
) -> None:
    """Run the pipeline on FILE (one event per line) and print a summary at the end.

    The clock is the event clock (t_now = the largest event time seen), so two replays of
    one file give the same output. Malformed lines are counted by reason, never fatal.
    """
    tune_gc()
    engine = Engine(engine_config(settings, clock="event"))
    out: TextIO | None = per_query.open("w", encoding="utf-8") if per_query else None
    try:
        for batch in read_jsonl(file, batch_size):
            report = engine.apply(batch)
            for message, error in report.invalid:
                click.echo(f"{file}:{message.offset}: invalid event ({error})", err=True)
            _write(out, engine, report.final)
        _write(out, engine, engine.finish())
    finally:
        if out is not None:
            out.close()
    result = summary(engine)
    if fmt == "json":
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        click.echo(_table(result))


def _write(out: TextIO | None, engine: Engine, queries: list[Any]) -> None:
    if out is None:
        return
    for query in queries:
        out.write(json.dumps(query_record(engine, query), sort_keys=True) + "\n")


def _cell(value: object) -> str:
    return "-" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)


def _table(result: dict[str, Any]) -> str:
    head = ["label set", "window", "queries", "labeled", *_TABLE_METRICS]
    rows = [head]
    for labelset, windows in result["windows"].items():
        for window, values in windows.items():
            rows.append(
                [labelset, window, str(values["queries"]), str(values["labeled"])]
                + [_cell(values.get(m)) for m in _TABLE_METRICS]
            )
    for labelset, values in result["final"].items():
        rows.append(
            [labelset, "final", str(values["queries"]), str(values["queries"])]
            + [_cell(values.get(m)) for m in _TABLE_METRICS]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    lines.append("events: " + ", ".join(f"{k} {v}" for k, v in result["events"].items()))
    invalid = result["invalid"]
    lines.append("invalid: " + (", ".join(f"{k} {v}" for k, v in invalid.items()) or "none"))
    return "\n".join(lines)
