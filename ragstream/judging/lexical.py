"""The `lexical` judge: offline, deterministic, free — and only a heuristic.

It has no model of meaning. A sentence of the answer (a *claim*) counts as supported when
enough of its content words appear in one sentence of the contexts:

    support(s) = max over context sentences c of |W(s) ∩ W(c)| / |W(s)|

where W(.) is the set of stemmed, lower-cased non-stop words; supported iff
``support(s) >= support_threshold``. With ``check_numbers``, a claim that states a number
the contexts never mention is unsupported whatever its overlap. Sentences with fewer than
``min_claim_tokens`` content words ("Sure.", "Yes.") are not claims.

- faithfulness = supported claims / claims (None without claims);
- hallucination = any unsupported claim;
- answer relevance = |W(question) ∩ W(answer)| / |W(question)|;
- context relevance of a context = |W(question) ∩ W(context)| / |W(question)|, overall
  the mean over contexts (None without contexts).

It misses paraphrases that change the words and contradictions that keep them ("is
enabled" vs "is not enabled" — "not" is a stop word). See docs/judging.md for measured
agreement.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragstream.judging.model import Claim, JudgeInput, Judgment
from ragstream.judging.text import content_tokens, numbers, sentences

__all__ = ["LEXICAL_VERSION", "LexicalJudge", "overlap", "support"]

LEXICAL_VERSION = "lexical-1"


def overlap(query: set[str], text: set[str]) -> float:
    """``|query ∩ text| / |query|``; 0 for an empty query."""
    if not query:
        return 0.0
    return len(query & text) / len(query)


def support(claim: set[str], context_sentences: list[set[str]]) -> float:
    """The best containment of the claim's words in one context sentence."""
    return max((overlap(claim, c) for c in context_sentences), default=0.0)


@dataclass(frozen=True, slots=True)
class LexicalJudge:
    """Token-overlap judge (see the module docstring for the formulas)."""

    support_threshold: float = 0.5
    min_claim_tokens: int = 2
    check_numbers: bool = True
    name: str = "lexical"

    def evaluate(
        self, question: str, answer: str, contexts: tuple[str, ...] | list[str]
    ) -> Judgment:
        """Score one answer (synchronous, pure)."""
        context_sentences = [content_tokens(s) for text in contexts for s in sentences(text)]
        context_numbers = set().union(*(numbers(text) for text in contexts))
        claims: list[Claim] = []
        for sentence in sentences(answer):
            words = content_tokens(sentence)
            if len(words) < self.min_claim_tokens:
                continue
            ok = support(words, context_sentences) >= self.support_threshold
            if ok and self.check_numbers and not numbers(sentence) <= context_numbers:
                ok = False
            claims.append(Claim(sentence, ok))
        question_words = content_tokens(question)
        scores = tuple(overlap(question_words, content_tokens(text)) for text in contexts)
        supported = sum(c.supported for c in claims)
        return Judgment(
            faithfulness=supported / len(claims) if claims else None,
            answer_relevance=overlap(question_words, content_tokens(answer))
            if question_words
            else None,
            context_relevance=sum(scores) / len(scores) if scores else None,
            hallucination=supported < len(claims),
            context_scores=scores,
            claims=tuple(claims),
            judge=self.name,
            prompt_version=LEXICAL_VERSION,
        )

    async def judge(self, item: JudgeInput) -> Judgment:
        """The `Judge` protocol: the same as :meth:`evaluate`."""
        return self.evaluate(item.question, item.answer, item.contexts)

    async def close(self) -> None:
        """Nothing to release."""
