"""Helpers for the judging tests: valid judge replies and a sample input."""

from __future__ import annotations

import json
import re
from typing import Any

from ragstream.judging.model import JudgeInput
from tests.support.openai_server import Reply

_CONTEXTS = re.compile(r"CONTEXTS \((\d+)\):")
_ANSWER = re.compile(r"ANSWER:\n(.*)\Z", re.S)


def good_content(
    n_contexts: int, verdicts: tuple[str, ...] = ("supported",), rating: int = 5
) -> str:
    """A valid judge reply: one claim per verdict, every context relevant."""
    return json.dumps(
        {
            "claims": [{"claim": f"claim {i}", "verdict": v} for i, v in enumerate(verdicts)],
            "answer_relevance": rating,
            "contexts": [{"index": i, "relevant": True} for i in range(n_contexts)],
        }
    )


def good_responder(request: dict[str, Any]) -> Reply:
    """Reads the number of contexts from the user prompt and answers validly."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    match = _CONTEXTS.search(user)
    n = int(match.group(1)) if match else 0
    return Reply(content=good_content(n), prompt_tokens=1000, completion_tokens=200)


def item(query_id: str = "q-1", answer: str = "Shards are rebalanced nightly.") -> JudgeInput:
    return JudgeInput(
        query_id=query_id,
        ts=1_800_000_000.0,
        question="When are shards rebalanced?",
        answer=answer,
        contexts=("Shards are rebalanced every night.", "Backups run weekly."),
        doc_ids=("d1", "d2"),
        labels={"app": "support"},
    )


def refusing_responder(request: dict[str, Any]) -> Reply:
    """A judge model: refuses 'Unable...', finds 'Marlowe' unsupported; slower for lower
    query numbers so that answers finish out of order."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    match = _CONTEXTS.search(user)
    n = int(match.group(1)) if match else 0
    answer_match = _ANSWER.search(user)
    answer = answer_match.group(1) if answer_match else ""
    refusal = answer.startswith("Unable")
    verdict = "unsupported" if "Marlowe" in answer else "supported"
    content = {
        "refusal": refusal,
        "claims": [] if refusal else [{"claim": answer, "verdict": verdict}],
        "answer_relevance": 1 if refusal else 5,
        "contexts": [{"index": i, "relevant": True} for i in range(n)],
    }
    delay = 0.05 if "1720" in answer else 0.0
    return Reply(json.dumps(content), delay=delay, prompt_tokens=1000, completion_tokens=0)
