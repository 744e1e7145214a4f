"""Text normalisation for the lexical judge: sentences, clauses, tokens, a light stemmer.

Deliberately simple and English-only: these helpers are the lexical judge's whole model of
language. A text becomes a list of *tokens*:

- words, lower-cased and stemmed (``indexes`` -> ``index``, ``planned`` -> ``plan``),
  stop words and words that only point at the sources (``passage``, ``provided``,
  ``according``) removed; a hyphenated word also gives its joined form (``Wi-Fi`` ->
  ``wi``, ``fi``, ``wifi``);
- numbers in one canonical form, whether written as digits or words (``3``, ``3.0``,
  ``three`` -> ``3``; ``thirty-one`` -> ``31``; ``10,000`` -> ``10000``);
- times of day as ``@H:MM`` on a 24-hour clock (``11:0``, ``11 AM``, ``11:00 am`` ->
  ``@11:00``; ``5 PM``, ``17:0`` -> ``@17:00``), ISO dates as year, month and day;
- day and month abbreviations spelled out (``Mon`` -> ``monday``, ``Jan`` -> ``january``).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "DAYS",
    "NEGATION",
    "clauses",
    "is_number",
    "sentences",
    "stem",
    "tokens",
]

_STOPWORDS_TEXT = """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves yes may might must shall also etc via per use used using
    s t don doesn didn isn aren wasn weren won wouldn couldn shouldn hasn haven hadn can't
    however therefore additionally overall furthermore moreover well within among
"""

_META_TEXT = """passage passages context contexts article document documents provided given
    mention mentions mentioned according based information source sources states stated
    text texts answer question summary"""
_IGNORED = frozenset((_STOPWORDS_TEXT + _META_TEXT).split())
"""Function words, and words that point at the sources rather than state a fact
("According to passage 2"): never claims, never evidence."""

_UNITS = "zero _ two three four five six seven eight nine ten eleven twelve thirteen"
_TEENS = "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
_TENS = "thirty forty fifty sixty seventy eighty ninety"
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(f"{_UNITS} {_TEENS}".split()) if w != "_"}
_NUMBER_WORDS |= {w: str(10 * i) for i, w in enumerate(_TENS.split(), 3)}
_NUMBER_WORDS["dozen"] = "12"
"""Number words written as digits ("one" is left out: it is mostly a pronoun)."""
_TENS_WORDS = frozenset(["twenty", *_TENS.split()])
_UNIT_WORDS = {w: i for i, w in enumerate(_UNITS.split()) if 1 <= i <= 9} | {"one": 1}
"""The two halves of a compound number word (``twenty-one`` ... ``ninety-nine``)."""

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH_TEXT = """january february march april may june july august september october
    november december"""
_MONTHS = _MONTH_TEXT.split()
_CANONICAL = {
    **{d[:3]: d for d in DAYS},
    **{m[:3]: m for m in _MONTHS if m != "may"},
    "tues": "tuesday",
    "weds": "wednesday",
    "thur": "thursday",
    "thurs": "thursday",
    "sept": "september",
}

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"\u201d')\]]*\s+(?=[\"\u201c'(\[]?[A-Z0-9*\u2022-])|\n+")
_BULLET = re.compile(r"^\s*(?:[*\u2022-]|\d+[.)])\s+")
_CLAUSE = re.compile(
    r";\s+|,?\s+(?:but|however|while|whereas|although|though|yet|except)\s+",
    re.IGNORECASE,
)
_SUBORDINATE = re.compile(
    r"(?:while|although|though|whereas|despite|if|when|since|because)\b", re.IGNORECASE
)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_TIME = re.compile(
    r"\b(\d{1,2})(?::(\d{1,2}))?\s*([ap])\.?\s?m\b\.?|\b(\d{1,2}):(\d{1,2})\b|\b(noon|midnight)\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(
    r"@\d+:\d\d|[^\W\d_]+-\d+\b|\d+(?:,\d{3})*(?:\.\d+)?|[^\W\d_]+(?:['\u2019-][^\W\d_]+)*"
)
NEGATION = re.compile(
    r"\b(?:not|no|never|none|nor|neither|without|lacks?|lacking|unavailable|cannot)\b|n['\u2019]t\b",
    re.IGNORECASE,
)
_NUMERIC_START = frozenset("0123456789@")
_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s")
_DOUBLING = frozenset(("ingly", "edly", "ing", "ed"))


def sentences(text: str) -> list[str]:
    """Split at ``. ! ?`` followed by whitespace and a capital, digit or bullet, and at
    line breaks; list bullets (``*``, ``-``, ``1.``) are dropped; empty pieces too."""
    lines = (_BULLET.sub("", line) for line in text.splitlines())
    pieces = (s.strip() for line in lines for s in _SENTENCE_END.split(line) if s)
    return [s for s in pieces if s]


def clauses(sentence: str) -> list[str]:
    """Split a sentence at clause boundaries: ``;``, contrastive conjunctions (``but``,
    ``while``, ``although``), and the comma that ends a leading subordinate clause
    ("While it has no WiFi, it offers ...")."""
    found: list[str] = []
    for clause in _CLAUSE.split(sentence):
        clause = clause.strip()
        if _SUBORDINATE.match(clause) and ", " in clause:
            found.extend(clause.split(", ", 1))
        elif clause:
            found.append(clause)
    return found


def is_number(token: str) -> bool:
    """Whether a token is a canonical number or time (``42``, ``2.5``, ``@17:00``)."""
    return token[:1] in _NUMERIC_START


_UNDOUBLE = frozenset("bdgkmnprt")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Strip one common English suffix when at least three letters remain (``indexes`` ->
    ``index``, ``rotated`` -> ``rotat``, ``rotating`` -> ``rotat``); a consonant doubled
    before ``-ed``/``-ing`` is undoubled (``planned``, ``planning`` -> ``plan``); ``-ly``
    is an adverb's only after at least four letters and not after ``i``/``p`` (``usually``
    -> ``usual``, but ``family``, ``daily``, ``supply`` stay); ``-ise`` is ``-ize``."""
    if not word[:1].isalpha():
        return word
    word = word.replace("isation", "ization").replace("ise", "ize") if "is" in word else word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix in ("ies", "ied"):
                return word[: -len(suffix)] + "y"
            if suffix == "ly" and (len(word) < 6 or word[-3] in "ip"):
                continue  # family, daily, apply: not an adverb
            word = word[: -len(suffix)]
            if suffix in _DOUBLING and word[-1] == word[-2] and word[-1] in _UNDOUBLE:
                word = word[:-1]
            break
    return word


def _time(match: re.Match[str]) -> str:
    hour_12, minute_12, half, hour_24, minute_24, word = match.groups()
    if word:
        return " @12:00 " if word.lower() == "noon" else " @0:00 "
    if half:
        hour = int(hour_12) % 12 + (12 if half.lower() == "p" else 0)
        minute = int(minute_12 or 0)
    else:
        hour, minute = int(hour_24), int(minute_24)
    if hour > 24 or minute > 59:
        return match.group(0)
    return f" @{hour % 24}:{minute:02d} "


def _date(match: re.Match[str]) -> str:
    year, month, day = match.groups()
    name = _MONTHS[int(month) - 1] if 1 <= int(month) <= 12 else month
    return f" {year} {name} {int(day)} "


def _number(token: str) -> str:
    value = token.replace(",", "")
    if "." in value:
        value = value.rstrip("0").rstrip(".")
    return value.lstrip("0") or "0"


@lru_cache(maxsize=1 << 12)
def tokens(text: str) -> tuple[str, ...]:
    """The normalised content tokens of ``text``, in order, repeats kept."""
    text = _TIME.sub(_time, _ISO_DATE.sub(_date, text.lower()))
    out: list[str] = []
    for raw in _TOKEN.findall(text):
        out.extend(_normalise(raw))
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def _normalise(raw: str) -> tuple[str, ...]:
    """The tokens of one lower-cased raw token (none for a stop word)."""
    if raw[0] == "@":
        return (raw,)
    if raw[0].isdigit():
        return (_number(raw),)
    if raw in _NUMBER_WORDS:
        return (_NUMBER_WORDS[raw],)
    compound = _compound_number(raw)
    if compound is not None:
        return (compound,)
    return tuple(
        stem(_CANONICAL.get(word, word)) for word in _word_forms(raw) if word not in _IGNORED
    )


def _compound_number(raw: str) -> str | None:
    """``thirty-one`` -> ``31`` (a tens word, a hyphen and a unit word), else None."""
    tens, _, unit = raw.partition("-")
    if unit not in _UNIT_WORDS or tens not in _TENS_WORDS:
        return None
    return str(int(_NUMBER_WORDS[tens]) + _UNIT_WORDS[unit])


def _word_forms(raw: str) -> list[str]:
    raw = raw.replace("\u2019", "'")
    if raw.endswith("'s"):
        raw = raw[:-2]
    if "-" not in raw:
        return [raw]
    parts = [p for p in raw.split("-") if p]
    if parts[-1].isdigit():  # a name with a number (COVID-19, GPT-4): not a quantity
        return ["".join(parts)]
    return [*parts, "".join(parts)]
