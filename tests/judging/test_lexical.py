"""The lexical judge (`lexical-3`): each rule on constructed sentences, then the whole
RAGTruth development file against balanced-accuracy floors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.judge_ragtruth import half_of, load_records
from ragstream.judging.agreement import Confusion
from ragstream.judging.claims import extract_claims, is_refusal_sentence, strip_preamble
from ragstream.judging.lexical import LEXICAL_VERSION, Evidence, cover, overlap
from ragstream.judging.numbers import days, unsupported_values
from ragstream.judging.structured import flag_conflicts, parse_record
from ragstream.judging.text import NEGATION, clauses, sentences, stem, tokens
from tests.support.defaults import lexical_judge

from ._helpers import item

CONTEXTS = ("Shards are rebalanced every night.", "Backups run weekly.")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("When are the Shards rebalanced?", ("shard", "rebalanc")),
        ("three replicas", ("3", "replica")),
        ("Thirty-one passengers, twenty-five cars", ("31", "passenger", "25", "car")),
        ("3.0 stars, 10,000 rows", ("3", "star", "10000", "row")),
        ("open 11 AM to 9 PM", ("open", "@11:00", "@21:00")),
        ("11:0-21:0", ("@11:00", "@21:00")),
        ("from noon to midnight", ("@12:00", "@0:00")),
        ("Mon and Sept", ("monday", "september")),
        ("2022-01-16", ("2022", "january", "16")),
        ("free Wi-Fi", ("free", "wi", "fi", "wifi")),
        ("the COVID-19 rules", ("covid19", "rul")),
        ("According to the provided passages", ()),
        ("organisations organizations", ("organization", "organization")),
    ],
)
def test_tokens(text: str, expected: tuple[str, ...]) -> None:
    assert tokens(text) == expected


def test_sentences_clauses_stem_negation() -> None:
    assert sentences("One. Two!  Three?\nFour") == ["One.", "Two!", "Three?", "Four"]
    assert sentences("Version 2.5 is out. yes") == ["Version 2.5 is out. yes"]
    assert sentences("Steps:\n* Heat it.\n2. Serve it.") == ["Steps:", "Heat it.", "Serve it."]
    assert clauses("Lot parking is available, but valet is not; it has WiFi.") == [
        "Lot parking is available",
        "valet is not",
        "it has WiFi.",
    ]
    assert clauses("While it has no WiFi, it offers seats, tables, and music.") == [
        "While it has no WiFi",
        "it offers seats, tables, and music.",
    ]
    assert [stem(w) for w in ("indexes", "policies", "rotated", "cats", "42")] == [
        "index",
        "policy",
        "rotat",
        "cat",
        "42",
    ]
    # a doubled consonant before -ed/-ing meets the base; -ly only on adverbs
    assert {stem(w) for w in ("plan", "plans", "planned", "planning")} == {"plan"}
    assert {stem(w) for w in ("hit", "hitting")} == {"hit"}
    assert [stem(w) for w in ("calling", "usually", "family", "daily", "supply")] == [
        "call",
        "usual",
        "family",
        "daily",
        "supply",
    ]
    assert NEGATION.search("It doesn't take cards")
    assert NEGATION.search("no valet parking")
    assert not NEGATION.search("Notes are kept")


@pytest.mark.parametrize(
    ("answer", "claims", "refusal"),
    [
        ("Sure! Based on the provided passages, shards move every night.", 1, False),
        ("According to passage 2, shards move every night.", 1, False),
        ("Here are the steps to follow:", 0, False),
        ("This is mentioned in passage 2.", 0, False),
        ("The passages do not mention the backup schedule.", 0, False),
        ("Unable to answer based on the given passages.", 0, True),
        ("I cannot answer the question from the contexts provided.", 0, True),
        ("There is not enough information to answer the question.", 0, True),
        ("Shards move every night. I cannot determine the backup day.", 1, False),
        ("Sure. Yes!", 0, False),
        ("I hope this helps! Good luck with the garden.", 0, False),
    ],
)
def test_claims(answer: str, claims: int, refusal: bool) -> None:
    found = extract_claims(answer, min_tokens=2)
    assert len(found.claims) == claims
    assert found.refusal is refusal


def test_preamble_is_cut_and_refusal_sentences() -> None:
    assert strip_preamble("Sure! Based on the passages, shards move.") == "Shards move."
    assert strip_preamble("In summary, shards move.") == "Shards move."
    assert extract_claims("In Greek it means reap (passage 1).", 2).claims == (
        "In Greek it means reap.",
    )
    # the cited passage's number is no claim: 1 is in no context, yet nothing is flagged
    cited = "Shards are rebalanced every night (passages 1 and 2)."
    assert lexical_judge().evaluate("q", cited, CONTEXTS).hallucination is False
    assert is_refusal_sentence("Unable to answer based on given passages.")
    assert not is_refusal_sentence("The service is unable to start without a key.")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("open Mon-Wed", {"monday", "tuesday", "wednesday"}),
        ("from Friday through Monday", {"friday", "saturday", "sunday", "monday"}),
        ("closed on Sundays", {"sunday"}),
        (
            "open seven days a week",
            {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"},
        ),
        ("she sat in the sun", set()),
    ],
)
def test_days(text: str, expected: set[str]) -> None:
    assert days(text) == expected


def test_unsupported_values() -> None:
    values = frozenset({"30", "@11:00", "@17:00"})
    weekdays = frozenset({"tuesday", "wednesday"})
    assert (
        unsupported_values(tokens("kept thirty days"), "kept thirty days", values, weekdays) == []
    )
    assert unsupported_values(tokens("kept 45 days"), "kept 45 days", values, weekdays) == ["45"]
    text = "open 11 AM to 7 PM"
    assert unsupported_values(tokens(text), text, values, weekdays) == ["@19:00"]
    text = "open Monday to Wednesday"
    assert unsupported_values(tokens(text), text, values, weekdays) == ["monday"]
    assert unsupported_values(tokens(text), text, values, frozenset()) == []


RECORD = (
    "{'name': 'Cafe X', 'hours': {'Tuesday': '11:0-17:0', 'Wednesday': '11:0-17:0'}, "
    "'attributes': {'OutdoorSeating': False, 'WiFi': 'free', 'Music': None, "
    "'RestaurantsReservations': True, 'RestaurantsTakeOut': True, "
    "'BusinessParking': {'valet': False, 'garage': False, 'lot': True}}, "
    "'review_info': [{'review_text': "
    "'Great coffee and a lovely garden, we will come back again.'}]}"
)


@pytest.mark.parametrize(
    ("clause", "conflicts"),
    [
        ("It offers outdoor seating", ["OutdoorSeating"]),
        ("It has no outdoor seating", []),
        ("Outdoor seating is not available", []),
        ("It offers free WiFi", []),
        ("There is no Wi-Fi", ["WiFi"]),
        ("It has live music", ["Music"]),
        ("It has no music", ["Music"]),
        ("It does not take reservations", ["RestaurantsReservations"]),
        ("It takes reservations", []),
        ("There is no valet", []),
        ("Valet parking is offered", ["valet"]),
        ("Wi-Fi is not available at the cafe", ["WiFi"]),
        ("Lot parking is available, but valet and garage parking are not", []),
        ("It offers takeout and has no valet", []),
        ("It offers take-out but no reservations", ["RestaurantsReservations"]),
        ("It takes reservations and has no outdoor seating", []),
        ("It has a lovely lot and does not have outdoor seating", []),
        ("It has valet parking rather than lot parking", ["valet", "lot"]),
        ("Valet parking isn't offered", []),
        ("A lovely garden", []),
    ],
)
def test_structured_flags(clause: str, conflicts: list[str]) -> None:
    record = parse_record(RECORD)
    assert record is not None
    assert [c for part in clauses(clause) for c in flag_conflicts(part, record)] == conflicts


def test_parse_record() -> None:
    record = parse_record(RECORD)
    assert record is not None
    fields, *free = record.units
    assert "Cafe X" in fields
    assert "11:0-17:0" in fields
    assert "Music" not in fields
    assert free == ["Great coffee and a lovely garden, we will come back again."]
    assert parse_record('{"a": [1, 2], "b": true}') is not None  # JSON as well
    assert parse_record("Shards move nightly.") is None
    assert parse_record("{not a literal") is None


def test_cover_merges_a_few_context_sentences() -> None:
    evidence = Evidence.of(("Alice founded the firm in Paris.", "The firm sells bicycles."))
    words = set(tokens("Alice founded a firm in Paris that sells bicycles."))
    assert cover(words, evidence, 1) == pytest.approx(4 / 6)
    assert cover(words, evidence, 2) == 1.0
    assert cover(set(), evidence, 2) == 1.0
    assert overlap({"a", "b"}, {"b", "c"}) == 0.5
    assert overlap(set(), {"a"}) == 0.0


@pytest.mark.parametrize(
    ("answer", "contexts", "hallucination"),
    [
        # merged sentences, reworded, preamble
        (
            "Sure! Based on the passages, Alice founded the firm in Paris and it sells bicycles.",
            ("Alice founded the firm in Paris.", "The firm sells bicycles."),
            False,
        ),
        # numbers written as words
        ("Backups are kept for thirty days.", ("Backups are kept for 30 days.",), False),
        ("Backups are kept for forty days.", ("Backups are kept for 30 days.",), True),
        # an added unsupported clause on a supported sentence
        (
            "Shards are rebalanced every night, and the cluster doubles its memory each quarter"
            " through automated procurement agreements.",
            CONTEXTS,
            True,
        ),
        # times reformatted from structured data
        ("Cafe X is open from 11 AM to 5 PM on Tuesday and Wednesday.", (RECORD,), False),
        ("Cafe X is open from 11 AM to 9 PM on Tuesday and Wednesday.", (RECORD,), True),
        ("Cafe X is open from Monday to Wednesday.", (RECORD,), True),
        # a yes/no attribute against the record
        ("Cafe X offers free WiFi and takes reservations.", (RECORD,), False),
        ("Cafe X offers outdoor seating and free WiFi.", (RECORD,), True),
    ],
)
def test_rules_on_answers(answer: str, contexts: tuple[str, ...], hallucination: bool) -> None:
    judgment = lexical_judge().evaluate("What about it?", answer, contexts)
    assert judgment.hallucination is hallucination
    assert judgment.refusal is False


def test_a_refusal_is_its_own_outcome() -> None:
    j = lexical_judge().evaluate(
        "When are shards rebalanced?", "Unable to answer based on the given passages.", CONTEXTS
    )
    assert j.refusal is True
    assert j.hallucination is False
    assert j.faithfulness is None
    assert j.claims == ()
    assert j.answer_relevance is None
    assert j.context_scores == (1.0, 0.0)


def test_scores_and_version() -> None:
    judge = lexical_judge()
    j = judge.evaluate(
        "When are shards rebalanced?",
        "Shards are rebalanced every night. The moon is made of green cheese.",
        CONTEXTS,
    )
    assert [c.supported for c in j.claims] == [True, False]
    # support: claim 1 = 1 (shard, rebalanc, every, night all in context 0),
    # claim 2 = 0 (moon, made, green, cheese nowhere)
    assert j.faithfulness == 0.5
    assert j.hallucination is True
    assert j.answer_relevance == 1.0
    assert j.context_scores == (1.0, 0.0)
    assert j.context_relevance == 0.5
    assert (j.judge, j.prompt_version) == ("lexical", LEXICAL_VERSION) == ("lexical", "lexical-3")


def test_thresholds_are_honoured() -> None:
    # claim words {shard, rebalanc, weekly, tuesday}: 3 of 4 covered by the two contexts
    answer = "Shards are rebalanced weekly on tuesday."
    question = "When are shards rebalanced?"
    assert lexical_judge().evaluate(question, answer, CONTEXTS).faithfulness == 0.75
    assert lexical_judge(window=1).evaluate(question, answer, CONTEXTS).faithfulness == 0.5
    loose = lexical_judge(support_threshold=0.7, answer_threshold=0.0)
    strict = lexical_judge(support_threshold=0.8, answer_threshold=0.0)
    assert loose.evaluate(question, answer, CONTEXTS).hallucination is False
    assert strict.evaluate(question, answer, CONTEXTS).hallucination is True
    assert (
        not lexical_judge(support_threshold=0.0, answer_threshold=0.7)
        .evaluate("q", answer, CONTEXTS)
        .hallucination
    )
    assert (
        lexical_judge(support_threshold=0.0, answer_threshold=0.8)
        .evaluate("q", answer, CONTEXTS)
        .hallucination
    )


def test_number_check_can_be_turned_off() -> None:
    contexts = ("Backups are kept for 30 days.",)
    wrong = "Backups are kept for 45 days."
    assert lexical_judge().evaluate("q", wrong, contexts).hallucination is True
    assert lexical_judge(check_numbers=False).evaluate("q", wrong, contexts).hallucination is False


def test_no_claims_and_no_contexts_are_undefined_not_zero() -> None:
    j = lexical_judge().evaluate("When are shards rebalanced?", "Sure. Yes!", ())
    assert j.claims == ()
    assert j.faithfulness is None
    assert j.hallucination is False
    assert j.refusal is False
    assert j.context_relevance is None
    assert lexical_judge().evaluate("the and of", "Shards move.", CONTEXTS).answer_relevance is None


async def test_judge_protocol_matches_evaluate_and_is_deterministic() -> None:
    judge = lexical_judge()
    x = item()
    first = await judge.judge(x)
    assert first == judge.evaluate(x.question, x.answer, x.contexts)
    assert first == lexical_judge().evaluate(x.question, x.answer, x.contexts)


_WORDS = st.sampled_from(["shard", "index", "backup", "night", "weekly", "42", "cache", "the"])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(_WORDS, min_size=1, max_size=6), min_size=0, max_size=4),
    st.lists(st.lists(_WORDS, min_size=1, max_size=6), min_size=1, max_size=3),
)
def test_scores_are_in_range_and_consistent(
    answer_sentences: list[list[str]], contexts: list[list[str]]
) -> None:
    answer = " ".join(" ".join(s).capitalize() + "." for s in answer_sentences)
    ctx = tuple(" ".join(c).capitalize() + "." for c in contexts)
    judge = lexical_judge()
    j = judge.evaluate("shard index backup", answer, ctx)
    for score in (j.faithfulness, j.answer_relevance, j.context_relevance, *j.context_scores):
        assert score is None or 0.0 <= score <= 1.0
    assert j.hallucination == (
        j.faithfulness is not None
        and (not all(c.supported for c in j.claims) or j.faithfulness < judge.answer_threshold)
    )
    assert j == judge.evaluate("shard index backup", answer, ctx)
    # an answer copied from the contexts is fully supported
    copied = judge.evaluate("q", " ".join(ctx), ctx)
    assert copied.faithfulness in (None, 1.0)
    assert copied.hallucination is False


# --- the RAGTruth development file (docs/judging.md) --------------------------------------

_ROOT = Path(__file__).resolve().parents[2]
_DEV = _ROOT.parent / "shared" / "data" / "ragtruth" / "ragtruth_dev.jsonl"
# Measured on the whole file: QA 0.832, Summary 0.655, Data2txt 0.752; the floors keep a
# small margin and are at least the held-out targets (0.70, 0.60, 0.58), which each half
# (study, check: `bench.judge_ragtruth.half_of`) must reach on its own.
_FLOORS = {"QA": 0.80, "Summary": 0.63, "Data2txt": 0.72}
_TARGETS = {"QA": 0.70, "Summary": 0.60, "Data2txt": 0.58}


def _dev_records() -> list[dict[str, Any]]:
    if not _DEV.is_file():
        pytest.skip(f"the RAGTruth development file is not here: {_DEV}")
    return load_records(_DEV)


def _balanced_accuracy(records: list[dict[str, Any]]) -> float:
    judge = lexical_judge()
    pairs = []
    for row in records:
        j = judge.evaluate(row["question"], row["answer"], row["contexts"])
        pairs.append((bool(row["label"]), j.hallucination))
    return Confusion.from_pairs(pairs).balanced_accuracy().value


@pytest.mark.parametrize("task", sorted(_FLOORS))
def test_balanced_accuracy_on_the_ragtruth_development_file(task: str) -> None:
    chosen = [r for r in _dev_records() if r["task_type"] == task]
    assert _balanced_accuracy(chosen) >= _FLOORS[task]
    for half in ("study", "check"):
        part = [r for r in chosen if half_of(r) == half]
        assert _balanced_accuracy(part) >= _TARGETS[task], half
