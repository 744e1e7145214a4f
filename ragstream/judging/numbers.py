"""Numbers, times and days: the values a claim must not change.

`text.tokens` already writes every number and time of day in one canonical form (``three``
and ``3.0`` are ``3``, ``5 PM`` and ``17:0`` are ``@17:00``), so checking them is set
containment: a claim's values must all occur somewhere in the contexts.

Days of the week are checked as sets: a range (``Monday to Friday``, ``Mon-Fri``,
``Tuesday through Sunday``) stands for every day in it, and ``daily``, ``every day``,
``seven days a week`` for all seven. When the contexts name days at all, a claim may name
only days the contexts name ("open Monday to Sunday" against data without Monday is
unsupported); contexts that name no day check nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragstream.judging.text import DAYS, is_number

__all__ = ["days", "unsupported_values"]

_DAY = r"(?:mon|tue|tues|wed|weds|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|rsday|urday)?"
_RANGE = re.compile(
    rf"\b({_DAY})\b\.?\s*(?:-|\u2013|to|through|thru|until)\s*({_DAY})\b", re.IGNORECASE
)
_SINGLE = re.compile(r"\b(mon|tues|wednes|thurs|fri|satur|sun)days?\b", re.IGNORECASE)
_ANY = re.compile(
    r"\b(?:mon|tue|wed|thu|fri|sat|sun|daily|every|7|seven|all|each|24)", re.IGNORECASE
)
_ALL_WEEK = re.compile(
    r"\b(?:daily|every\s+day|7\s+days|seven\s+days|all\s+week|each\s+day|24/7)\b", re.IGNORECASE
)


def _day_index(word: str) -> int | None:
    prefix = word.lower()[:3]
    for i, day in enumerate(DAYS):
        if day.startswith(prefix):
            return i
    return None


def days(text: str) -> frozenset[str]:
    """The days of the week a text names, ranges expanded (``Mon-Wed`` -> three days)."""
    if _ANY.search(text) is None:
        return frozenset()
    found: set[int] = set(range(7)) if _ALL_WEEK.search(text) else set()
    rest = text
    for match in _RANGE.finditer(text):
        first, last = _day_index(match.group(1)), _day_index(match.group(2))
        if first is None or last is None:
            continue
        span = (last - first) % 7
        found.update((first + k) % 7 for k in range(span + 1))
        rest = rest.replace(match.group(0), " ")
    for match in _SINGLE.finditer(rest):
        index = _day_index(match.group(1))
        if index is not None:
            found.add(index)
    return frozenset(DAYS[i] for i in found)


def unsupported_values(
    claim_tokens: Iterable[str],
    claim_text: str,
    context_values: frozenset[str],
    context_days: frozenset[str],
) -> list[str]:
    """The numbers, times and days of a claim that the contexts never state."""
    missing = [t for t in dict.fromkeys(claim_tokens) if is_number(t) and t not in context_values]
    if context_days:
        missing.extend(sorted(days(claim_text) - context_days))
    return missing
