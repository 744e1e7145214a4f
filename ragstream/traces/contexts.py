"""Which documents the model saw: the contexts of a trace's answer event.

A retriever returns k documents; a reranker, a filter or a plain `docs[:3]` may pass fewer
on to the prompt. The answer is judged against what the model was given:

1. the output documents of the trace's last `RERANKER` span when it has one (in the
   reranker's order), else every retrieved document (retrievers in arrival order, each in
   its order, each doc id once);
2. of those, the ones whose text is in the prompt of the answer's LLM span (its input
   messages), when the prompt holds at least one of them. A document is in the prompt
   when the start of its text (its first 200 characters, whitespace runs read as one
   space) is, as written or escaped as a JSON or Python string literal (a prompt that
   formats a list of documents with `str`). A prompt that quotes none of them (it
   summarizes them, or the LLM span has no input messages) narrows nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

__all__ = ["PREFIX_CHARS", "seen_contexts"]

PREFIX_CHARS = 200
"""How much of a document's start must be in the prompt (a prompt may cut long ones)."""

Context = tuple[str, str]


def seen_contexts(
    retrieved: Sequence[Context], reranked: Sequence[Context] | None, prompt: str | None
) -> list[Context]:
    """(doc id, text) of the documents the model saw (see the module docstring)."""
    pool = list(retrieved if reranked is None else reranked)
    if not prompt or not pool:
        return pool
    squeezed: list[str] = []  # the prompt squeezed, once, when a document needs it
    found = [c for c in pool if _quoted(c[1], prompt, squeezed)]
    return found or pool


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _quoted(document: str, prompt: str, squeezed: list[str]) -> bool:
    """Whether the prompt quotes the document's start (see the module docstring)."""
    head = document[: 2 * PREFIX_CHARS]  # whitespace runs and escapes at most double it
    if head[:PREFIX_CHARS] in prompt:  # as written: the usual case, nothing to squeeze
        return bool(head.strip())
    if not squeezed:
        squeezed.append(_squeeze(prompt))
    text = squeezed[0]
    literals = (head, json.dumps(head, ensure_ascii=False), json.dumps(head), repr(head))
    for i, literal in enumerate(literals):
        start = _squeeze(literal if i == 0 else literal[1:-1])[:PREFIX_CHARS]
        if start and start in text:
            return True
    return False
