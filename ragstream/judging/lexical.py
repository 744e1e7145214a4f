"""The `lexical` judge (version ``lexical-3``): offline, deterministic, free — a heuristic.

It has no model of meaning; it checks that what an answer states is *made of* what its
contexts say, and that the values it states are the contexts' values. With ``T(x)`` the
normalised content tokens of ``x`` (`text.tokens`: stemmed words without stop words and
source-pointing words, numbers and times of day in one canonical form):

1. **Claims** (`claims.extract_claims`): the answer's sentences without preambles ("Sure!
   Based on the passages, ..."), remarks about the sources ("This is mentioned in passage
   2") and headings; a sentence with fewer than ``min_claim_tokens`` tokens is no claim.
   An answer that refuses ("Unable to answer based on the given passages") and claims
   nothing else is a **refusal**: ``refusal=True``, ``hallucination=False``,
   ``faithfulness=None``.
2. **Evidence units**: the contexts' sentences; a structured context (JSON or a Python
   literal, `structured.parse_record`) gives one unit for all its short fields (a fact
   sheet) and one per sentence of its free text.
3. **Support** of a claim ``s`` with ``W = T(s)``: the share of ``W`` covered by the
   union of at most ``window`` evidence units, chosen greedily (each time the unit that
   covers most of what is left) — a sentence that merges a few context sentences is
   covered::

       support(s) = |W & (U1 | ... | Uk)| / |W|      (1 when W is empty)

4. **Hard failures**, which set a claim's support to 0: with ``check_numbers``, a number
   or time of day the contexts never state, or a day of the week outside the days the
   contexts name (`numbers.unsupported_values`); against a structured context, a yes/no
   attribute stated against its value or stated when the record leaves it unknown
   (`structured.flag_conflicts`).
5. A claim is **supported** iff it has no hard failure and ``support >= threshold``, where
   the threshold is ``support_threshold`` for prose contexts and ``record_threshold`` when
   a context is a structured record (a record is verbalised, never quoted, so its words
   are mostly not the answer's).

Scores: ``faithfulness`` = the mean support of the claims (None without claims);
``hallucination`` = any claim unsupported, or ``faithfulness < answer_threshold``;
answer relevance = ``|T(question) ∩ T(answer)| / |T(question)|``; the relevance of a
context = ``|T(question) ∩ T(context)| / |T(question)|``, overall their mean.

It misses paraphrases with other words, contradictions that keep the words ("the defence
argued" vs "the prosecution argued"), and claims that recombine true words into a false
statement. See docs/judging.md for what it gets right and wrong on real answers.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ragstream.judging.claims import extract_claims
from ragstream.judging.model import Claim, JudgeInput, Judgment
from ragstream.judging.numbers import days, unsupported_values
from ragstream.judging.structured import Record, flag_conflicts, parse_record
from ragstream.judging.text import clauses, is_number, sentences, tokens

__all__ = ["LEXICAL_VERSION", "Evidence", "LexicalJudge", "cover", "overlap"]

LEXICAL_VERSION = "lexical-3"


def overlap(query: set[str], text: set[str] | frozenset[str]) -> float:
    """``|query ∩ text| / |query|``; 0 for an empty query."""
    if not query:
        return 0.0
    return len(query & text) / len(query)


@dataclass(frozen=True, slots=True)
class Evidence:
    """The contexts of one answer, prepared once: units, their index, values, records."""

    units: tuple[frozenset[str], ...]
    index: dict[str, tuple[int, ...]]
    """token -> the units that contain it."""
    values: frozenset[str]
    """Every number and time of day the contexts state."""
    days: frozenset[str]
    """The days of the week the contexts name."""
    records: tuple[Record, ...]
    vocabularies: tuple[frozenset[str], ...]
    """The tokens of each context."""

    @classmethod
    def of(cls, contexts: tuple[str, ...] | list[str]) -> Evidence:
        """Split and index the contexts (see the module docstring, step 2)."""
        units: list[frozenset[str]] = []
        named: set[str] = set()
        records: list[Record] = []
        vocabularies: list[frozenset[str]] = []
        for text in contexts:
            record = parse_record(text)
            if record is not None:
                records.append(record)
            first = len(units)
            for piece in record.units if record is not None else sentences(text):
                found = frozenset(tokens(piece))
                if found:
                    units.append(found)
            vocabularies.append(frozenset().union(*units[first:]))
            named |= days(text)
        index: dict[str, list[int]] = defaultdict(list)
        for i, unit in enumerate(units):
            for token in unit:
                index[token].append(i)
        values = frozenset(t for t in index if is_number(t))
        return cls(
            tuple(units),
            {t: tuple(ids) for t, ids in index.items()},
            values,
            frozenset(named),
            tuple(records),
            tuple(vocabularies),
        )


def cover(words: set[str], evidence: Evidence, window: int) -> float:
    """Share of ``words`` covered by at most ``window`` units chosen greedily (1 when
    ``words`` is empty)."""
    if not words:
        return 1.0
    left = set(words)
    for _ in range(window):
        counts: dict[int, int] = defaultdict(int)
        for token in left:
            for unit in evidence.index.get(token, ()):
                counts[unit] += 1
        if not counts:
            break
        best = max(counts, key=lambda u: (counts[u], -u))
        left -= evidence.units[best]
    return 1 - len(left) / len(words)


@dataclass(frozen=True, slots=True)
class LexicalJudge:
    """Token-coverage judge (see the module docstring for the rules and formulas)."""

    support_threshold: float
    min_claim_tokens: int
    check_numbers: bool
    window: int
    record_threshold: float
    answer_threshold: float
    name: str = "lexical"

    def evaluate(
        self, question: str, answer: str, contexts: tuple[str, ...] | list[str]
    ) -> Judgment:
        """Score one answer (synchronous, pure)."""
        evidence = Evidence.of(contexts)
        found = extract_claims(answer, self.min_claim_tokens)
        question_words = set(tokens(question))
        threshold = self.record_threshold if evidence.records else self.support_threshold
        claims: list[Claim] = []
        supports: list[float] = []
        for text in found.claims:
            fails = self._fails(text, evidence)
            score = 0.0 if fails else cover(set(tokens(text)), evidence, self.window)
            supports.append(score)
            claims.append(Claim(text, score >= threshold and score > 0.0))
        faithfulness = sum(supports) / len(supports) if supports else None
        hallucination = faithfulness is not None and (
            not all(c.supported for c in claims) or faithfulness < self.answer_threshold
        )
        scores = tuple(overlap(question_words, v) for v in evidence.vocabularies)
        return Judgment(
            faithfulness=faithfulness,
            answer_relevance=overlap(question_words, set(tokens(answer)))
            if question_words and not found.refusal
            else None,
            context_relevance=sum(scores) / len(scores) if scores else None,
            hallucination=hallucination,
            context_scores=scores,
            claims=tuple(claims),
            refusal=found.refusal,
            judge=self.name,
            prompt_version=LEXICAL_VERSION,
        )

    def _fails(self, text: str, evidence: Evidence) -> bool:
        """A hard failure: a value the contexts never state, or a yes/no conflict."""
        if self.check_numbers and unsupported_values(
            tokens(text), text, evidence.values, evidence.days
        ):
            return True
        return any(flag_conflicts(c, r) for r in evidence.records for c in clauses(text))

    async def judge(self, item: JudgeInput) -> Judgment:
        """The `Judge` protocol: the same as :meth:`evaluate`."""
        return self.evaluate(item.question, item.answer, item.contexts)

    async def close(self) -> None:
        """Nothing to release."""
