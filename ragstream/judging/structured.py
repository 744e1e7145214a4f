"""Contexts that are structured records (JSON or Python literals) rather than prose.

A context that starts with ``{`` or ``[`` and parses (``json.loads``, else
``ast.literal_eval``, which evaluates literals only) is flattened into:

- **units**, the "sentences" claims are matched against: one per leaf, the words of its key
  path and its value (``hours Friday 11:0-21:0``; a key ``OutdoorSeating`` is read as
  ``Outdoor Seating outdoorseating``); a long free-text value (a review) is split into its
  own sentences. A leaf whose value is ``None`` gives no unit: the record does not know it;
- **flags**, yes/no attributes: the key's own words (its *cue*, words shared with other
  flag keys such as ``Restaurants`` dropped) and a polarity — True for ``True``, ``"yes"``,
  ``"free"``; False for ``False``, ``"no"``, ``"none"``; unknown for ``None``. A mapping of
  yes/no leaves (``BusinessParking``) is itself a flag when all its leaves agree.

A claim clause (`text.clauses`) that names a flag must agree with it (`flag_conflicts`): a
False flag stated without a negation over it ("offers outdoor seating" against
``OutdoorSeating: False``), a True flag stated under a negation ("does not take
reservations" against ``True``), or an unknown one stated either way ("has WiFi" or "has
no WiFi" against ``WiFi: None``) is unsupported. A negation is over a word when it comes
before it in the clause, right after it through a copula ("Wi-Fi is not available": at
most four words on, no comma or conjunction between), or ends the clause ("valet and
garage parking are not"); ``rather than`` and ``instead of`` negate what follows. A flag
is named by all its cue words or by its alias. An unknown flag whose cue occurs in the
record's free text is not checked (the text may say it).
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from dataclasses import dataclass

from ragstream.judging.text import NEGATION, sentences, tokens

__all__ = ["Flag", "Record", "flag_conflicts", "parse_record"]

_MAX_CHARS = 200_000
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|_")
_TRUE = frozenset({"true", "yes", "free", "paid", "full_bar", "beer_and_wine"})
_FALSE = frozenset({"false", "no", "none"})
_FREE_TEXT_WORDS = 8
_AFTER = 4
_RATHER = re.compile(r"\b(?:rather\s+than|instead\s+of)\b", re.IGNORECASE)
_COPULA = re.compile(r"(?:is|are|was|were)(?:n't|n\u2019t)?$", re.IGNORECASE)
_BREAK = re.compile(r",$|^(?:and|or|but|that|which|who|while|so)$", re.IGNORECASE)
_TRAILING_NEGATION = re.compile(
    r"\b(?:not|n't|unavailable|none)(?:\s+(?:available|offered|provided|an\s+option))?\W*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Flag:
    """A yes/no attribute of a record: its cue tokens and its polarity (None: unknown)."""

    key: str
    cue: frozenset[str]
    """The key's own words (all must occur)."""
    alias: str
    """The key as one word (``WiFi`` -> ``wifi``), which also names it."""
    polarity: bool | None


@dataclass(frozen=True, slots=True)
class Record:
    """A structured context, flattened."""

    units: tuple[str, ...]
    flags: tuple[Flag, ...]
    free_text_tokens: frozenset[str]


def _parse(text: str) -> object | None:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or len(stripped) > _MAX_CHARS:
        return None
    try:
        parsed: object = json.loads(stripped)
        return parsed
    except ValueError:
        pass
    try:
        literal: object = ast.literal_eval(stripped)
        return literal
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _polarity(value: object) -> bool | str | None:
    """True/False/None for a yes/no value; ``"other"`` for anything else."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().strip("'\"").lower().removeprefix("u'").strip("'")
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return "other"


def parse_record(text: str) -> Record | None:
    """The flattened record, or None when the text is not a structured literal."""
    data = _parse(text)
    if not isinstance(data, (dict, list)):
        return None
    units: list[str] = []
    texts: list[str] = []
    raw_flags: list[tuple[str, bool | None]] = []
    free: set[str] = set()

    def walk(value: object, path: tuple[str, ...]) -> bool | str | None:
        if isinstance(value, dict):
            polarities = [walk(v, (*path, str(k))) for k, v in value.items()]
            if value and path and len(set(polarities)) == 1 and isinstance(polarities[0], bool):
                raw_flags.append((path[-1], polarities[0]))
            return "other"
        if isinstance(value, list):
            for v in value:
                walk(v, path)
            return "other"
        label = " ".join(f"{_CAMEL.sub(' ', k)} {k.lower()}" for k in path[-2:])
        polarity = _polarity(value)
        if polarity != "other" and path:
            raw_flags.append((path[-1], polarity if isinstance(polarity, bool) else None))
            if polarity is not None:
                units.append(label)
            return polarity
        words = str(value)
        if len(words.split()) >= _FREE_TEXT_WORDS:
            found = sentences(words)
            texts.extend(found)
            free.update(t for s in found for t in tokens(s))
        else:
            units.append(f"{label} {words}")
        return "other"

    walk(data, ())
    return Record((" ; ".join(units), *texts), _flags(raw_flags), frozenset(free))


def _flags(raw: list[tuple[str, bool | None]]) -> tuple[Flag, ...]:
    """Flags with their cues: the key's words not shared with other flag keys; a key
    whose own words keep only one token after stop words ("Take Out") is named by its
    alias only ("takeout")."""
    keyed = [(key, _CAMEL.sub(" ", key).split(), p) for key, p in raw]
    shared = Counter(t for _, parts, _ in keyed for t in set(tokens(" ".join(parts))))
    flags = []
    for key, parts, polarity in keyed:
        cue = frozenset(tokens(" ".join(parts)))
        own = frozenset(t for t in cue if shared[t] == 1) or cue
        own_parts = [w for w in parts if not tokens(w) or set(tokens(w)) <= own]
        alias = "".join(tokens("".join(own_parts).lower()))
        if len(own) == 1 and len(own_parts) > 1:
            own = frozenset()
        if own or alias:
            flags.append(Flag(key, own, alias, polarity))
    return tuple(flags)


def _scoped_tokens(clause: str) -> list[tuple[str, bool]]:
    """The clause's tokens, each with whether a negation scopes over it: a negation cue
    before it in the clause, or one right after it through a copula ("Wi-Fi is not
    available", "valet parking isn't offered"), at most ``_AFTER`` words on and with no
    comma or conjunction in between."""
    words = _RATHER.sub(" not ", clause).split()
    negations = [i for i, word in enumerate(words) if NEGATION.search(word)]
    out: list[tuple[str, bool]] = []
    for i, word in enumerate(words):
        before = bool(negations) and negations[0] < i
        after = any(
            i < j <= i + _AFTER
            and not any(_BREAK.search(w) for w in words[i:j])
            and any(_COPULA.match(w) for w in words[i + 1 : j + 1])
            for j in negations
        )
        out.extend((t, before or after) for t in tokens(word))
    return out


def flag_conflicts(clause: str, record: Record) -> list[str]:
    """The flags this clause contradicts or states without evidence (see the module)."""
    present = set(tokens(clause))
    named: list[tuple[Flag, frozenset[str]]] = []
    for flag in record.flags:
        if flag.cue and flag.cue <= present:
            named.append((flag, flag.cue))
        elif flag.alias in present:
            named.append((flag, frozenset({flag.alias})))
    if not named:
        return []
    scoped = _scoped_tokens(clause)
    whole = _TRAILING_NEGATION.search(clause) is not None
    conflicts = []
    for flag, words in named:
        negated = whole or any(neg for t, neg in scoped if t in words)
        if flag.polarity is None:
            if not flag.cue <= record.free_text_tokens:
                conflicts.append(flag.key)
        elif flag.polarity is negated:
            conflicts.append(flag.key)
    return conflicts
