"""What a judge reads and returns: `JudgeInput`, `Judgment`, `Usage`, and `JudgeError`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["AnswerLike", "Claim", "Judge", "JudgeError", "JudgeInput", "Judgment", "Usage"]


class AnswerLike(Protocol):
    """What judging reads of an answer event: the pydantic `AnswerEvent` and the decoder's
    `DecodedAnswer` both fit."""

    @property
    def query_id(self) -> str: ...
    @property
    def ts(self) -> float: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def question(self) -> str: ...
    @property
    def answer(self) -> str: ...
    @property
    def contexts(self) -> Sequence[Mapping[str, object]]: ...
    @property
    def model(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class JudgeInput:
    """One sampled answer, as the judges read it (built from an `AnswerEvent`)."""

    query_id: str
    """Joins the events of one request."""
    ts: float
    """The answer event's time (Unix seconds); judgments land in the windows here."""
    question: str
    answer: str
    contexts: tuple[str, ...]
    """The chunks given to the model, in prompt order."""
    doc_ids: tuple[str | None, ...] = ()
    """Document id of each context (None where the event did not say)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    model: str | None = None
    """The generator model, if the event named it."""
    partition: int = 0
    """Kafka partition the answer came from (windows are kept per partition)."""
    estimated_cost: float = 0.0
    """Cost (USD) the sampler charged to the budget at admission; reconciled later."""
    admitted_at: float = math.nan
    """Sampler time of admission (for budget reconciliation)."""
    sampled: bool = True
    """Drawn by the sampler: its judgment lands in the windows. False for an answer judged
    only because it has a gold verdict (compared, not counted in the windows' rates)."""

    @classmethod
    def from_event(
        cls,
        event: AnswerLike,
        *,
        partition: int = 0,
        estimated_cost: float = 0.0,
        admitted_at: float = math.nan,
        sampled: bool = True,
    ) -> JudgeInput:
        """The judge's view of an answer event."""
        return cls(
            query_id=event.query_id,
            ts=event.ts,
            question=event.question,
            answer=event.answer,
            contexts=tuple(str(c["text"]) for c in event.contexts),
            doc_ids=tuple(_optional_str(c.get("doc_id")) for c in event.contexts),
            labels=dict(event.labels),
            model=event.model,
            partition=partition,
            estimated_cost=estimated_cost,
            admitted_at=admitted_at,
            sampled=sampled,
        )

    def to_state(self) -> dict[str, Any]:
        """JSON-friendly, for a snapshot of the unjudged answers (`from_state`)."""
        return {
            "query_id": self.query_id,
            "ts": self.ts,
            "question": self.question,
            "answer": self.answer,
            "contexts": list(self.contexts),
            "doc_ids": list(self.doc_ids),
            "labels": dict(self.labels),
            "model": self.model,
            "partition": self.partition,
            "sampled": self.sampled,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> JudgeInput:
        """Inverse of `to_state` (admission time and estimated cost are not kept: a
        restored answer is admitted again)."""
        return cls(
            query_id=str(state["query_id"]),
            ts=float(state["ts"]),
            question=str(state["question"]),
            answer=str(state["answer"]),
            contexts=tuple(str(c) for c in state["contexts"]),
            doc_ids=tuple(_optional_str(d) for d in state["doc_ids"]),
            labels={str(k): str(v) for k, v in state["labels"].items()},
            model=_optional_str(state["model"]),
            partition=int(state["partition"]),
            sampled=bool(state.get("sampled", True)),
        )


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost of the calls behind one judgment (zero for offline or cached ones)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    """USD: ``prompt_tokens · price_in / 1e6 + completion_tokens · price_out / 1e6``."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost + other.cost,
        )


@dataclass(frozen=True, slots=True)
class Claim:
    """One statement of the answer and whether the contexts support it."""

    text: str
    supported: bool


@dataclass(frozen=True, slots=True)
class Judgment:
    """Scores of one answer, each in [0, 1]; None where the score is undefined.

    ``faithfulness`` is None for an answer without claims, ``context_relevance`` for an
    answer given no contexts; neither is ever reported as 0 or averaged in.
    """

    faithfulness: float | None
    """Supported claims / claims."""
    answer_relevance: float | None
    context_relevance: float | None
    """Mean of `context_scores`."""
    hallucination: bool
    """At least one unsupported claim (always False for a refusal, which claims nothing)."""
    context_scores: tuple[float, ...]
    """Relevance of each context to the question, in context order."""
    claims: tuple[Claim, ...] = ()
    refusal: bool = False
    """The answer declines to answer from the contexts ("Unable to answer based on the
    given passages"): its own outcome, counted as a refusal, never as a hallucination;
    ``faithfulness`` is None for it."""
    judge: str = ""
    """Which judge produced it: ``lexical`` or ``openai``."""
    prompt_version: str = ""
    model: str | None = None
    """The judge model (None for the lexical judge)."""
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    """True when served from the cache (no call was paid for)."""

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly form (for the audit topic)."""
        return {
            "faithfulness": self.faithfulness,
            "answer_relevance": self.answer_relevance,
            "context_relevance": self.context_relevance,
            "hallucination": self.hallucination,
            "refusal": self.refusal,
            "context_scores": list(self.context_scores),
            "claims": [{"text": c.text, "supported": c.supported} for c in self.claims],
            "judge": self.judge,
            "prompt_version": self.prompt_version,
            "model": self.model,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "cost_usd": self.usage.cost,
            },
            "cached": self.cached,
        }


class JudgeError(Exception):
    """A judgment that failed; ``reason`` is a bounded label value.

    Reasons: ``timeout``, ``http_error`` (5xx or 429 after retries), ``client_error``
    (other 4xx), ``connection_error``, ``bad_json`` (also after one repair attempt),
    ``circuit_open``, ``internal``.
    """

    def __init__(self, reason: str, message: str = "", *, usage: Usage | None = None) -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason
        self.usage = usage or Usage()
        """Tokens and cost already spent on the failed judgment (e.g. a failed repair)."""


class Judge(Protocol):
    """Scores one answer; raises `JudgeError` when it cannot."""

    @property
    def name(self) -> str: ...

    async def judge(self, item: JudgeInput) -> Judgment: ...

    async def close(self) -> None: ...
