"""`ragstream demo`: the agent on built-in synthetic RAG traffic, no Kafka needed."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from pathlib import Path

import click

from ragstream.agent import Agent
from ragstream.cli._settings import CommandLineError, file_settings_options, settings_from_flags
from ragstream.config import HttpSettings
from ragstream.durations import format_duration
from ragstream.exporter.http import AddressInUseError
from ragstream.judging.service import JudgingService
from ragstream.report.console import render_drift, render_generation, render_summary
from ragstream.wiring.demo import demo_agent

__all__ = ["demo"]


@click.command("demo", short_help="Run the agent on synthetic traffic (no Kafka needed).")
@click.option(
    "--duration",
    type=click.FloatRange(min=0),
    default=0.0,
    help="Stop after this many seconds (0: until Ctrl-C).",
)
@click.option(
    "--port",
    type=int,
    default=HttpSettings().port,
    show_default=True,
    envvar="RAGSTREAM_HTTP__PORT",
    help="HTTP port for /metrics (0 picks a free one; env RAGSTREAM_HTTP__PORT, as for `run`).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    envvar="RAGSTREAM_HTTP__HOST",
    help="HTTP address for /metrics (env RAGSTREAM_HTTP__HOST; the image sets 0.0.0.0).",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0.1),
    default=40.0,
    show_default=True,
    help="Queries per second.",
)
@click.option(
    "--drift-at",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="Seconds until retrieval quality drops for app=support.",
)
@click.option(
    "--refresh",
    type=click.FloatRange(min=0.2),
    default=3.0,
    show_default=True,
    help="Seconds between summaries.",
)
@click.option(
    "--label-ttl",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="Seconds a query waits for late labels before its final histograms.",
)
@click.option(
    "--judge-rate",
    type=click.FloatRange(0, 1),
    default=0.3,
    show_default=True,
    help="Share of answers judged (lexical judge).",
)
@click.option(
    "--gold-share",
    type=click.FloatRange(0, 1),
    default=0.2,
    show_default=True,
    help="Share of answers that get a reviewer's gold verdict (a feedback event), which "
    "measures the judge and corrects its hallucination ratio.",
)
@click.option(
    "--seed", type=int, default=7, show_default=True, help="Seed of the synthetic traffic."
)
@click.option(
    "--trace-ids",
    is_flag=True,
    help="Query ids that are OpenTelemetry trace ids, so that the final-query histograms "
    "carry exemplars (docs/drill-down.md); default: q-SEED-N.",
)
@file_settings_options
def demo(
    config_file: Path | None,
    assignments: tuple[str, ...],
    duration: float,
    port: int,
    host: str,
    rate: float,
    drift_at: float,
    refresh: float,
    label_ttl: float,
    judge_rate: float,
    gold_share: float,
    seed: int,
    trace_ids: bool,
) -> None:
    """Run the agent on synthetic traffic, serve /metrics, and print a live summary.

    Three apps send retrieval, answer and feedback events; after --drift-at seconds the
    `support` app's ranking gets worse, its index staler and its answers less faithful: the
    summary shows MRR and nDCG falling in the 1m window first, then in the 5m window, and
    the judged hallucination ratio rising, and the drift detectors raise their alarms. A
    share of the answers (--gold-share) get gold verdicts, so the summary shows the raw
    ratio and the ratio corrected for the judge's measured error, with their intervals.

    Windows, metrics and drift detection are read from --config and --set (as `run` reads
    them, e.g. --set drift.zscore.threshold=4); the traffic, its labels (app, index), the
    label TTL and the address are the options above.
    """
    settings = settings_from_flags(config_file, None, (), None, None, assignments)
    agent, judging = demo_agent(
        settings=settings,
        rate=rate,
        drift_at=drift_at,
        label_ttl=label_ttl,
        judge_rate=judge_rate,
        gold_share=gold_share,
        seed=seed,
        trace_ids=trace_ids,
        host=host,
        port=port,
    )
    try:
        asyncio.run(_demo(agent, judging, duration, drift_at, refresh))
    except AddressInUseError as error:
        raise CommandLineError(
            f"cannot serve /metrics: {error.strerror} (another demo?); choose another port"
            " with --port, or --port 0 for a free one"
        ) from None


async def _demo(
    agent: Agent, judging: JudgingService, duration: float, drift_at: float, refresh: float
) -> None:
    engine = agent.engine
    started = time.time()
    interactive = sys.stdout.isatty()

    async def show() -> None:
        while True:
            await asyncio.sleep(refresh)
            elapsed = time.time() - started
            status = "after" if elapsed >= drift_at else "before"
            head = (
                f"ragstream demo  t+{format_duration(round(elapsed))}  "
                f"{status} the quality drop of app=support (at t+{format_duration(drift_at)})  "
                f"metrics: {agent.server.url}/metrics"
            )
            table = render_summary(engine, time.time())
            judged = render_generation(judging.results, engine.layout, time.time())
            drift = render_drift(engine)
            if interactive:
                click.echo("\x1b[2J\x1b[H", nl=False)
            click.echo(
                f"{head}\n{table}\n\nanswers judged by the lexical heuristic (raw, and"
                f" corrected for its error on gold verdicts):\n{judged}\n"
                f"\ndrift alarms:\n{drift}\n"
            )

    async def stop_later() -> None:
        await asyncio.sleep(duration)
        agent.stop()

    tasks = [asyncio.create_task(show())]
    if duration > 0:
        tasks.append(asyncio.create_task(stop_later()))
    try:
        await agent.run()
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    click.echo(f"stopped; {sum(engine.events.values())} events processed")
