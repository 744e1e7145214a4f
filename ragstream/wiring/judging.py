"""The judging side built from the `judge` settings: sampler, judge, service."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ragstream.config import Settings
from ragstream.config.judging import JudgeSettings
from ragstream.judging.budget import CostBudget, TokenBucket
from ragstream.judging.cache import JudgmentCache
from ragstream.judging.circuit import CircuitBreaker
from ragstream.judging.gold import GoldJoin
from ragstream.judging.http import ChatClient
from ragstream.judging.lexical import LexicalJudge
from ragstream.judging.model import Judge
from ragstream.judging.openai_judge import OpenAIJudge, TokenAccount
from ragstream.judging.publisher import JudgmentPublisher
from ragstream.judging.results import JudgeResults
from ragstream.judging.sampler import LabelRule, RetrievalRule, Sampler
from ragstream.judging.service import (
    JudgingService,
    LabelSink,
    RetrievalLookup,
    engine_label_sink,
    engine_lookup,
)
from ragstream.judging.verdicts import VerdictKeeper
from ragstream.pipeline.engine import Engine

__all__ = [
    "build_judge",
    "build_sampler",
    "engine_judging",
    "judging_service",
    "query_open",
    "replay_judging",
]


def build_sampler(settings: JudgeSettings) -> Sampler:
    """The sampler described by ``settings.sampling``."""
    s = settings.sampling
    rules: list[LabelRule | RetrievalRule] = [
        LabelRule(r.key, r.value, r.rate) for r in s.label_rules
    ]
    rules += [RetrievalRule(r.metric, r.below, r.rate) for r in s.retrieval_rules]
    limit = TokenBucket(s.max_per_second, s.burst) if s.max_per_second is not None else None
    budget = None
    if s.budget_per_hour is not None or s.budget_per_day is not None:
        budget = CostBudget(s.budget_per_hour, s.budget_per_day, s.estimated_cost)
    return Sampler(s.rate, rules, limit=limit, budget=budget, salt=s.salt)


def build_judge(settings: JudgeSettings) -> Judge:
    """The configured judge: `LexicalJudge` or an `OpenAIJudge` on the configured endpoint."""
    if settings.kind == "lexical":
        return LexicalJudge(**settings.lexical.model_dump())
    o = settings.openai
    client = ChatClient(
        o.base_url,
        o.model,
        api_key=o.resolve_api_key(),
        timeout=o.timeout,
        max_retries=o.max_retries,
        backoff_initial=o.backoff_initial,
        backoff_max=o.backoff_max,
        retry_after_max=o.retry_after_max,
        json_mode=o.json_mode,
        temperature=o.temperature,
        max_tokens=o.max_tokens,
    )
    return OpenAIJudge(
        client,
        breaker=CircuitBreaker(o.circuit_failures, o.circuit_cooldown),
        cache=JudgmentCache(o.cache_size),
        account=TokenAccount(o.price_prompt_per_1m, o.price_completion_per_1m),
    )


def judging_service(
    settings: Settings,
    *,
    labelset: Callable[[Mapping[str, str]], tuple[str, ...]] = lambda labels: (),
    lookup: RetrievalLookup | None = None,
    on_labels: LabelSink | None = None,
    bootstrap_servers: str | None = None,
    producer_options: Mapping[str, Any] | None = None,
    sampler_clock: Callable[[], float] = time.time,
    window_clock: Callable[[], float] = time.time,
    is_open: Callable[[str], bool] | None = None,
) -> JudgingService:
    """A judging service built from the `judge` section, its windows the agent's
    (`windows`, `metrics.histogram_bins`); ``bootstrap_servers`` is needed only to publish
    judgments; gold verdicts join their answers within `join.label_ttl` and wait
    `join.pending_ttl` for them. With ``is_open`` (whether a query id is open in the join),
    the verdicts of open queries are kept for their result records, at most
    `join.max_open` per partition."""
    judge, windows, join = settings.judge, settings.windows, settings.join
    publisher = None
    if judge.publish_topic is not None:
        if bootstrap_servers is None:
            raise ValueError("judge.publish_topic needs the Kafka bootstrap servers")
        publisher = JudgmentPublisher(
            judge.publish_topic,
            bootstrap_servers=bootstrap_servers,
            queue_size=judge.queue_size,
            drain_timeout=judge.drain_timeout,
            **dict(producer_options or {}),
        )
    return JudgingService(
        build_sampler(judge),
        build_judge(judge),
        JudgeResults(
            labelset=labelset,
            windows=windows.sizes,
            buckets=windows.buckets,
            bins=settings.metrics.histogram_bins,
            horizon=windows.future_tolerance,
            gold_window=judge.gold.window,
        ),
        queue_size=judge.queue_size,
        concurrency=judge.concurrency,
        drain_timeout=judge.drain_timeout,
        lookup=lookup,
        on_labels=on_labels if judge.feed_labels else None,
        label_threshold=judge.label_threshold,
        publisher=publisher,
        sampler_clock=sampler_clock,
        window_clock=window_clock,
        gold=GoldJoin(
            label_ttl=join.label_ttl,
            pending_ttl=join.pending_ttl,
            max_answers=judge.gold.max_answers,
            max_waiting=judge.gold.max_waiting,
        ),
        verdicts=None
        if is_open is None
        else VerdictKeeper(is_open, max_per_partition=join.max_open),
    )


def engine_judging(
    settings: Settings, engine: Engine, producer_options: dict[str, Any] | None = None
) -> JudgingService | None:
    """The judging service of an agent around `engine`, or None when `judge.enabled` is
    false: sampled by the engine's clock, its labels fed back to the engine, its unjudged
    answers and judgment windows kept in the engine's partition states (`Engine.attach`);
    with a results topic, the verdicts of open queries kept there too for their records
    (`JudgingService.take_verdict`)."""
    judge = settings.judge
    if not judge.enabled:
        return None
    metrics = [rule.metric for rule in judge.sampling.retrieval_rules]
    clock = engine.read_clock()
    service = judging_service(
        settings,
        labelset=engine.labelsets,
        lookup=engine_lookup(engine, metrics),
        on_labels=engine_label_sink(engine)[0],
        bootstrap_servers=settings.kafka.bootstrap_servers,
        producer_options=producer_options,
        sampler_clock=clock,
        window_clock=clock,
        is_open=None if settings.results.topic is None else query_open(engine),
    )
    # what is judged is partition state: saved with the offsets, moved on a rebalance
    engine.attach("judge", service)
    return service


def replay_judging(
    settings: Settings,
    clock: Callable[[], float],
    labelset: Callable[[Mapping[str, str]], tuple[str, ...]],
    *,
    queue_size: int,
    is_open: Callable[[str], bool] | None = None,
) -> JudgingService | None:
    """The judging of `ragstream replay`, as the agent's (`engine_judging`) on the event
    ``clock``: the same sampling rate and rules, judge and gold join; None when
    `judge.enabled` is false. The rate limit and the budget do not apply: they depend on
    the agent process's time and spending, which a replay does not have, and without them
    sampling is a pure function of the query id, the same on every replay and resumed
    replay.
    Nothing is published (a replay writes no topic), no label is fed back (the agent's
    labels come back after a judge's delay, which a replay does not have), and the queue
    holds at least ``queue_size`` answers: a replay waits for the judge after each batch
    instead of dropping, so its output does not depend on the judge's speed. With
    ``is_open`` (`replay --per-query`), the verdicts of open queries are kept for their
    records, as the agent's with a results topic."""
    judge = settings.judge
    if not judge.enabled:
        return None
    sampling = judge.sampling.model_copy(
        update={"max_per_second": None, "budget_per_hour": None, "budget_per_day": None}
    )
    judge = judge.model_copy(
        update={
            "publish_topic": None,
            "queue_size": max(judge.queue_size, queue_size),
            "sampling": sampling,
        }
    )
    return judging_service(
        settings.model_copy(update={"judge": judge}),
        labelset=labelset,
        sampler_clock=clock,
        window_clock=clock,
        is_open=is_open,
    )


def query_open(engine: Engine) -> Callable[[str], bool]:
    """Whether a query id is open in the engine's join (a read only)."""
    return lambda query_id: engine.find_query(query_id) is not None
