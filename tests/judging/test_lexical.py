"""The lexical judge on hand-made cases, with every number computed by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.judging.lexical import LexicalJudge, overlap, support
from ragstream.judging.text import content_tokens, numbers, sentences, stem

from ._helpers import item

CONTEXTS = ("Shards are rebalanced every night.", "Backups run weekly.")


def test_text_helpers() -> None:
    assert sentences("One. Two!  Three?\nFour") == ["One.", "Two!", "Three?", "Four"]
    assert sentences("Version 2.5 is out. Yes") == ["Version 2.5 is out.", "Yes"]
    assert [stem(w) for w in ("indexes", "policies", "rotated", "cats", "is", "42")] == [
        "index",
        "policy",
        "rotat",
        "cat",
        "is",
        "42",
    ]
    assert content_tokens("When are the Shards rebalanced?") == {"shard", "rebalanc"}
    assert numbers("Keep 30 days, 2.5 GB or 10,000 rows") == {"30", "2.5", "10,000"}
    assert overlap({"a", "b"}, {"b", "c"}) == 0.5
    assert overlap(set(), {"a"}) == 0.0
    assert support({"a", "b", "c", "d"}, [{"a"}, {"a", "b", "c"}]) == 0.75


def test_supported_and_unsupported_claims() -> None:
    judge = LexicalJudge()
    j = judge.evaluate(
        "When are shards rebalanced?",
        "Shards are rebalanced every night. The moon is made of green cheese.",
        CONTEXTS,
    )
    assert [c.supported for c in j.claims] == [True, False]
    assert j.faithfulness == 0.5
    assert j.hallucination is True
    # question words {shard, rebalanc}: both in the answer and in context 0, none in 1
    assert j.answer_relevance == 1.0
    assert j.context_scores == (1.0, 0.0)
    assert j.context_relevance == 0.5
    assert j.judge == "lexical"


def test_threshold_on_containment() -> None:
    # claim words {shard, rebalanc, weekly, tuesday}: 2 of 4 in context 0 -> 0.5
    answer = "Shards are rebalanced weekly on tuesday."
    assert LexicalJudge(support_threshold=0.5).evaluate("q", answer, CONTEXTS).faithfulness == 1.0
    assert LexicalJudge(support_threshold=0.6).evaluate("q", answer, CONTEXTS).faithfulness == 0.0


def test_a_number_the_contexts_never_state_is_unsupported() -> None:
    contexts = ("Backups are kept for 30 days.",)
    wrong = "Backups are kept for 45 days."
    assert LexicalJudge().evaluate("q", wrong, contexts).hallucination is True
    assert LexicalJudge(check_numbers=False).evaluate("q", wrong, contexts).hallucination is False
    right = "Backups are kept for 30 days."
    assert LexicalJudge().evaluate("q", right, contexts).faithfulness == 1.0


def test_no_claims_and_no_contexts_are_undefined_not_zero() -> None:
    j = LexicalJudge().evaluate("When are shards rebalanced?", "Sure. Yes!", ())
    assert j.claims == ()
    assert j.faithfulness is None
    assert j.hallucination is False
    assert j.context_relevance is None
    assert j.context_scores == ()
    assert LexicalJudge().evaluate("the and of", "Shards move.", CONTEXTS).answer_relevance is None


async def test_judge_protocol_matches_evaluate() -> None:
    judge = LexicalJudge()
    x = item()
    assert await judge.judge(x) == judge.evaluate(x.question, x.answer, x.contexts)


_WORDS = st.sampled_from(["shard", "index", "backup", "night", "weekly", "42", "cache", "the"])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(_WORDS, min_size=1, max_size=6), min_size=0, max_size=4),
    st.lists(st.lists(_WORDS, min_size=1, max_size=6), min_size=1, max_size=3),
)
def test_scores_are_in_range_and_consistent(
    answer_sentences: list[list[str]], contexts: list[list[str]]
) -> None:
    answer = " ".join(" ".join(s) + "." for s in answer_sentences)
    ctx = tuple(" ".join(c) + "." for c in contexts)
    j = LexicalJudge().evaluate("shard index backup", answer, ctx)
    for score in (j.faithfulness, j.answer_relevance, j.context_relevance, *j.context_scores):
        assert score is None or 0.0 <= score <= 1.0
    if j.claims:
        assert j.faithfulness == pytest.approx(sum(c.supported for c in j.claims) / len(j.claims))
    assert j.hallucination == any(not c.supported for c in j.claims)
    # an answer copied from the contexts is fully supported
    copied = LexicalJudge().evaluate("q", " ".join(ctx), ctx)
    assert copied.faithfulness in (None, 1.0)
