"""Text helpers for the lexical judge: sentences, content words, a light stemmer.

Deliberately simple and language-naive (English stop words): the lexical judge is a
heuristic, and these helpers are its whole model of language.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["STOPWORDS", "content_tokens", "numbers", "sentences", "stem"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_TOKEN = re.compile(r"[^\W_]+(?:[.,][0-9]+)*", re.UNICODE)
_NUMBER = re.compile(r"^[0-9]+(?:[.,][0-9]+)*$")

_STOPWORDS_TEXT = """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves yes may might must shall also etc via per use used using
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())

_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s")


def sentences(text: str) -> list[str]:
    """Split at ``. ! ?`` followed by whitespace, and at line breaks; drop empty pieces."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Strip one common English suffix when at least three letters remain (``indexes`` ->
    ``index``, ``rotated`` -> ``rotat``, ``rotating`` -> ``rotat``)."""
    if _NUMBER.match(word):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix in ("ies", "ied"):
                return word[: -len(suffix)] + "y"
            return word[: -len(suffix)]
    return word


def content_tokens(text: str) -> set[str]:
    """Lower-cased, stemmed words of ``text`` that are not stop words."""
    return {stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS}


def numbers(text: str) -> set[str]:
    """Numbers in ``text`` (``42``, ``3.5``, ``10,000``), as written."""
    return {t for t in _TOKEN.findall(text) if _NUMBER.match(t)}
