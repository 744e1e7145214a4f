"""The judge's verdict on a query's answer as a result record carries it (`JudgeVerdict`):
the scores and flags of the judgment, named as the judge's audit topic names them.

docs/results.md says when a record carries one and when it is null.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JudgeVerdict"]


class JudgeVerdict(BaseModel):
    """One judgment of the query's answer (`ragstream.judging.model.Judgment`): each field
    is the same-named field of the record `judge.publish_topic` holds for it."""

    model_config = ConfigDict(extra="forbid", title="judge verdict")

    judge: str = Field(description="which judge gave it: `lexical` or `openai`")
    model: str | None = Field(description="the judge model (null for the lexical judge)")
    prompt_version: str = Field(description="the judge's prompt or rules version")
    faithfulness: float | None = Field(
        ge=0.0, le=1.0, description="supported claims / claims; null: the answer claims nothing"
    )
    answer_relevance: float | None = Field(
        ge=0.0, le=1.0, description="how well the answer addresses the question; null: undefined"
    )
    context_relevance: float | None = Field(
        ge=0.0, le=1.0, description="mean relevance of the contexts; null: no context"
    )
    hallucination: bool = Field(description="at least one claim the contexts do not support")
    refusal: bool = Field(description="the answer declines to answer from the contexts")
