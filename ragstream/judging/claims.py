"""What in an answer is a claim: preambles, remarks about the sources and refusals are not.

An answer is split into sentences (`text.sentences`). Then, in order:

1. a **preamble** at the start of a sentence is cut: ``Sure!``, ``Based on the provided
   passages,``, ``According to passage 2,``, ``Here is a summary:``, ``In summary,``;
2. a sentence that **refuses** ("Unable to answer based on the given passages", "I cannot
   answer the question", "The passages do not provide enough information to answer") is
   a refusal, not a claim; an answer with a refusal and no other claim is a refusal;
3. a **citation** of a source inside a sentence is cut (``(passage 1)``, ``in passages 2
   and 3``): its number is not a claim;
4. a **remark about the sources** ("This is mentioned in passage 2", "The passages do not
   mention the price") states what the contexts say or lack, not a fact about the world:
   not a claim;
5. a sentence that is a heading for what follows (it ends with ``:``) or a courtesy ("Good
   luck!", "I hope this helps") is not a claim;
6. what is left is a claim when it has at least ``min_tokens`` content tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragstream.judging.text import sentences, tokens

__all__ = ["Claims", "extract_claims", "is_refusal_sentence"]

_SOURCE = (
    r"(?:the\s+|these\s+|this\s+|each\s+)?(?:provided\s+|given\s+|above\s+|available\s+|"
    r"retrieved\s+|structured\s+|original\s+|following\s+)*"
    r"(?:passages?|contexts?|articles?|documents?|sources?|texts?|information|data|"
    r"news|excerpts?|search results)(?:\s+\d+)?"
)
_PREAMBLE = re.compile(
    r"^(?:(?:sure|certainly|of course|okay|ok|yes|great|absolutely)\b[!,.:]?\s*)?"
    r"(?:(?:based\s+(?:solely\s+|only\s+)?(?:on|upon)|according\s+to|as\s+(?:stated|mentioned|"
    r"described|noted)\s+in|from|in|per|using)\s+" + _SOURCE + r"(?:\s+provided)?\s*[,:]\s*"
    r"|(?:in\s+summary|to\s+summarize|in\s+conclusion|overall|in\s+short)\s*[,:]\s*"
    r"|here(?:'s|\s+is|\s+are)\b[^:]*:\s*"
    r"|(?:passage|context|document)\s+\d+\s+(?:says|states|mentions|explains|notes|"
    r"describes|suggests|discusses)\s+(?:that\s+)?)?",
    re.IGNORECASE,
)
_REFUSAL = re.compile(
    r"\b(?:unable|not\s+able|cannot|can\s*not|can['\u2019]t|could\s*not|couldn['\u2019]t|impossible)\s+"
    r"(?:to\s+)?(?:be\s+)?(?:answer|determine|provide\s+(?:an?\s+)?(?:answer|response)|"
    r"respond|find\s+(?:an?\s+)?answer)"
    r"|\b(?:not|insufficient|no)\s+(?:enough|sufficient|relevant)?\s*information\s+to\s+"
    r"(?:answer|determine|provide)"
    r"|\bcannot\s+be\s+(?:answered|determined)",
    re.IGNORECASE,
)
_SOURCE_REMARK = re.compile(
    r"\b" + _SOURCE + r"\s+(?:do(?:es)?\s*n['o]?t|did\s*n['o]?t|never)\s+(?:\w+\s+){0,2}?"
    r"(?:mention|provide|specify|state|say|include|contain|address|discuss|give|offer|list)"
    r"|\b(?:is|are|was|were)\s+not\s+(?:mentioned|specified|stated|provided|given|"
    r"included|listed)\s+in\s+"
    + _SOURCE
    + r"|\b(?:mentioned|stated|described|found|discussed)\s+in\s+(?:passage|context|"
    r"document)\s+\d+\s*\.?$",
    re.IGNORECASE,
)


_CITATION = re.compile(
    r"\s*[(\[]?\b(?:according\s+to\s+|as\s+(?:stated|mentioned)\s+in\s+|in\s+|from\s+)?"
    r"(?:passages?|contexts?|documents?|sources?)\s+\d+(?:\s*(?:,|and|&|or)\s*\d+)*"
    r"[)\]]?(?=\W|$)",
    re.IGNORECASE,
)
_COURTESY = re.compile(
    r"(?:good\s+luck|i\s+hope\s+(?:this|that|it)|hope\s+(?:this|that|it)\s+helps|"
    r"let\s+me\s+know|feel\s+free|happy\s+to\s+help|thank\s+you|thanks|enjoy)\b",
    re.IGNORECASE,
)
_SOURCE_WORD = re.compile(
    r"passage|context|article|document|source|text|information|data|news|excerpt|result",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Claims:
    """The claims of one answer, and whether it refuses."""

    claims: tuple[str, ...]
    refusal: bool


def is_refusal_sentence(sentence: str) -> bool:
    """A sentence that declines to answer ("Unable to answer based on given passages")."""
    return _REFUSAL.search(sentence) is not None


def strip_preamble(sentence: str) -> str:
    """The sentence without a leading preamble (``Sure! Based on the passages, ...``)."""
    stripped = _PREAMBLE.sub("", sentence, count=1).strip()
    return stripped[:1].upper() + stripped[1:] if stripped else stripped


def extract_claims(answer: str, min_tokens: int) -> Claims:
    """The answer's claims, in order (see the module docstring for the rules)."""
    claims: list[str] = []
    refused = False
    for sentence in sentences(answer):
        if is_refusal_sentence(sentence):
            refused = True
            continue
        text = strip_preamble(sentence)
        cites = _SOURCE_WORD.search(text) is not None
        if cites:
            text = _CITATION.sub("", text).strip(" ,;")
        if not text or text.endswith(":") or _COURTESY.match(text):
            continue
        if cites and _SOURCE_REMARK.search(text):
            continue
        if len(set(tokens(text))) >= min_tokens:
            claims.append(text)
    return Claims(tuple(claims), refusal=refused and not claims)
