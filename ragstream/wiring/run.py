"""`ragstream run` assembled: the engine, the Kafka source with its hand-over, dead
letters and judging around one `Agent`."""

from __future__ import annotations

from ragstream.agent import Agent
from ragstream.config import Settings
from ragstream.pipeline.engine import Engine
from ragstream.wiring.engine import engine_config
from ragstream.wiring.judging import engine_judging
from ragstream.wiring.kafka import client_security, dead_letters, kafka_source, state_handover
from ragstream.wiring.results import results_sink

__all__ = ["run_agent"]


async def run_agent(settings: Settings) -> None:
    """Consume the configured topics and serve /metrics until the source ends or SIGTERM.

    Raises `ragstream.sources.kafka.CoPartitionError` when the topics are not
    co-partitioned."""
    security = client_security(settings.kafka.security)  # one token provider for all clients
    # without a results topic the agent reads no final query from the batch reports (the
    # engine keeps their histograms): the queries' table rows need not become objects
    results_on = settings.results.topic is not None
    engine = Engine(engine_config(settings, final_unlabeled=results_on, report_final=results_on))
    handover = state_handover(settings, engine, security)
    source = kafka_source(settings, engine, handover, security)
    letters = dead_letters(settings, security)
    judging = engine_judging(settings, engine, security)
    # a final query's record carries the judge's verdict kept for it (docs/results.md)
    take = None if judging is None else judging.take_verdict
    results = results_sink(settings, engine, security, take)

    async def start() -> None:
        await source.start()
        if letters is not None:
            await letters.start()
        if results is not None:
            await results.start()

    agent = Agent(
        engine,
        source,
        host=settings.http.host,
        port=settings.http.port,
        start_source=start,
        lag=source.lag,
        assigned=lambda: len(source.assignment()),
        starting=lambda: source.unreachable,
        dead_letters=letters,
        judging=judging,
        handover=None if handover is None else handover.counters,
        results=results,
    )
    try:
        await agent.run()
    finally:
        if letters is not None:
            await letters.stop()
        if results is not None:
            await results.stop()
