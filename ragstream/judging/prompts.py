"""Versioned judge prompts and the strict schema of their JSON answers.

One call judges one answer: the model lists the answer's claims with a verdict each, rates
the answer's relevance to the question (1-5), labels each context relevant or not, and says
whether the answer is a refusal (declines to answer from the contexts).
Change `PROMPT_VERSION` whenever a prompt or the schema changes: it is part of the cache
key and of every published judgment.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragstream.judging.model import Claim, Judgment

__all__ = [
    "PROMPT_VERSION",
    "SYSTEM_PROMPT",
    "JudgeReply",
    "ReplyError",
    "judgment_from_reply",
    "parse_reply",
    "repair_messages",
    "user_prompt",
]

PROMPT_VERSION = "judge-v2"

SYSTEM_PROMPT = """\
You are a strict evaluator of answers produced by a retrieval-augmented assistant.
You receive a QUESTION, numbered CONTEXTS (the only evidence the assistant had) and an ANSWER.

1. Split the ANSWER into short, self-contained factual claims. For each claim give the
   verdict "supported" if the CONTEXTS state or directly imply it, otherwise "unsupported"
   (general knowledge that is not in the CONTEXTS is "unsupported").
2. Rate how well the ANSWER addresses the QUESTION, from 1 (not at all) to 5 (fully),
   regardless of whether it is correct.
3. For every context, say whether it is relevant to the QUESTION (true or false).
4. Say whether the ANSWER is a refusal: it declines to answer, for instance because the
   CONTEXTS do not contain the answer ("Unable to answer based on the given passages"),
   instead of answering. A refusal is never a hallucination; list no claims for it.

Reply with one JSON object and nothing else, exactly of this form:
{"refusal": true | false,
 "claims": [{"claim": "<text>", "verdict": "supported" | "unsupported"}],
 "answer_relevance": <integer 1-5>,
 "contexts": [{"index": <context number>, "relevant": true | false}]}
An answer with no factual claim has "claims": []. List every context exactly once."""

_REPAIR_PROMPT = """\
Your reply could not be used: {error}
Reply again with only the JSON object in the required form, and nothing else."""


def user_prompt(question: str, answer: str, contexts: tuple[str, ...] | list[str]) -> str:
    """The user message: the question, the numbered contexts and the answer."""
    numbered = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(contexts))
    return (
        f"QUESTION:\n{question}\n\n"
        f"CONTEXTS ({len(contexts)}):\n{numbered or '(none)'}\n\n"
        f"ANSWER:\n{answer}"
    )


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class ClaimVerdict(_Strict):
    claim: str
    verdict: Literal["supported", "unsupported"]


class ContextLabel(_Strict):
    index: Annotated[int, Field(ge=0)]
    relevant: bool


class JudgeReply(_Strict):
    """The JSON the model must return."""

    claims: list[ClaimVerdict]
    answer_relevance: Annotated[int, Field(ge=1, le=5)]
    contexts: list[ContextLabel]
    refusal: bool = False
    """The answer declines to answer (a model that leaves the key out says it does not)."""


class ReplyError(ValueError):
    """The model's reply is not valid JSON of the required form."""


def _strip_fences(content: str) -> str:
    """Remove a Markdown code fence around the JSON, which many models add."""
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        if text.rstrip().endswith("```"):
            text = text.rstrip()[:-3]
    return text.strip()


def parse_reply(content: str, n_contexts: int) -> JudgeReply:
    """Strictly parse a reply; raises `ReplyError` with a message the model can act on."""
    try:
        data = json.loads(_strip_fences(content))
    except json.JSONDecodeError as exc:
        raise ReplyError(f"not valid JSON ({exc.msg} at position {exc.pos})") from None
    try:
        reply = JudgeReply.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()
        )
        raise ReplyError(f"wrong form ({problems})") from None
    indices = sorted(c.index for c in reply.contexts)
    if indices != list(range(n_contexts)):
        raise ReplyError(
            f"contexts must list every index 0..{n_contexts - 1} exactly once, got {indices}"
        )
    return reply


def repair_messages(
    messages: list[dict[str, str]], bad_reply: str, error: str
) -> list[dict[str, str]]:
    """The conversation extended by the bad reply and a request to fix it."""
    return [
        *messages,
        {"role": "assistant", "content": bad_reply},
        {"role": "user", "content": _REPAIR_PROMPT.format(error=error)},
    ]


def judgment_from_reply(reply: JudgeReply, *, model: str) -> Judgment:
    """Scores from a parsed reply: faithfulness = supported / claims (None without claims),
    answer relevance = (rating - 1) / 4, context relevance = share of relevant contexts.
    A refusal claims nothing: faithfulness None, never a hallucination, whatever claims
    the model listed anyway (they are kept for the audit)."""
    claims = tuple(Claim(c.claim, c.verdict == "supported") for c in reply.claims)
    supported = sum(c.supported for c in claims)
    by_index = {c.index: c.relevant for c in reply.contexts}
    scores = tuple(1.0 if by_index[i] else 0.0 for i in range(len(by_index)))
    scored = bool(claims) and not reply.refusal
    return Judgment(
        faithfulness=supported / len(claims) if scored else None,
        answer_relevance=(reply.answer_relevance - 1) / 4.0,
        context_relevance=sum(scores) / len(scores) if scores else None,
        hallucination=scored and supported < len(claims),
        context_scores=scores,
        claims=claims,
        refusal=reply.refusal,
        judge="openai",
        prompt_version=PROMPT_VERSION,
        model=model,
    )
