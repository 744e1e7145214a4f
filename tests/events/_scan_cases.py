"""Retrieval events spelled as JSON text in many ways, for the scanner's differential tests.

`cases()` writes one message byte by byte: keys in any order, whitespace between tokens,
numbers spelled exactly in integer, fraction and exponent forms (or at a rounding tie),
strings with and without escapes, sizes at and just over small `Limits`, keys the schema
does not know with values of every JSON type (nested, escaped, non-ASCII, numbers of any
magnitude, at and past the depth limit, malformed), and faults (missing, mistyped or
repeated keys, broken strings, trailing bytes, truncation).
Each message carries its grade: `CLEAN` (msgspec accepts it and the scanner must too),
`UNUSUAL` (msgspec accepts it, the scanner may decline), `UNKNOWN` (no claim) or `INVALID`
(msgspec, with the limits, rejects it). The choices come from a `random.Random` seeded by
hypothesis: a message takes hundreds of choices, and one draw each would be slow.
"""

from __future__ import annotations

import math
import random
import re
import struct
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, localcontext
from typing import TypeVar

from hypothesis import strategies as st

from ragstream.events import DEFAULT_LIMITS, Limits
from ragstream.events.guard import MAX_DEPTH
from ragstream.events.timestamps import MAX_TS, MIN_DOC_TS

__all__ = ["CLEAN", "INVALID", "UNKNOWN", "UNUSUAL", "Case", "cases"]

CLEAN, UNUSUAL, UNKNOWN, INVALID = 0, 1, 2, 3

_T = TypeVar("_T")
_SHORT = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
_ID_CHARS = "abcxyzAZ0189-_.:/ ~"
_ODD_CHARS = '"\\\n\t\r\x00\x1f\x7f/'
_WIDE_CHARS = "éß中😀\u2028\ufeff\U0010ffff\u0800\u00ff"
_INT_TOKEN = re.compile(r"-?[0-9]+")
_BAD_NUMBERS = [b"01", b"1.", b".5", b"+1", b"1e", b"-", b"1E+", b"--1", b"0x1", b"1.e5", b"NaN"]
_BAD_NUMBERS += [b"Infinity", b"-Infinity", b"1e400", b"-1e400", b"1" + b"0" * 310, b"-0x"]
_WRONG_TYPES = [b'"1"', b"true", b"false", b"[]", b"{}", b'"yesterday"', b'""']
_POISON = [b"\\ud800", b"\\udfff", b"\\ud83dx", b"\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80"]
_POISON += [b"\x01", b"\x1f", b"\\x", b"\\u12", b"\\U0041", b'"']
# values of unknown keys: malformed JSON (msgspec checks what it skips), and numbers of any
# magnitude (msgspec skips them without conversion)
_BAD_JUNK = [b"NaN", b"-Infinity", b"tru", b"nul", b"[1,]", b"[,]", b'{"a":1,}', b'{"a" 1}']
_BAD_JUNK += [b"{1:2}", b"[1 2]", b'"\\x"', b'"\\ud800"', b'"\x01"', b'"\xff"', b"01", b"1."]
_BAD_JUNK += [b"-", b"+1", b".5", b"1e", b"0x1", b"'a'", b"[", b"{", b"]", b'"a', b"{}}", b"[]]"]
_HUGE = [b"1e400", b"-1e400", b"1" + b"0" * 400, b"1e-400", b"-0", b"0e99999", b"1E+2"]
_UNKNOWN_KEYS = ["trace_id", "chunk_id", "extra", "Rel", "doc", "score_", "", "é", "type_"]
_RFC3339 = [b'"2024-05-01T12:00:00Z"', b'"1970-01-01T00:00:00+00:00"', b'"0001-01-01T00:00:00Z"']
_LAST_TS = math.nextafter(MAX_TS, 0)
_EVENT_TS = ([-0.0, 0.0, 5e-324, 1e-7, _LAST_TS, 1.7e9], [-5e-324, -1.0, MAX_TS, 1.7e12])
_DOC_TS = (
    [MIN_DOC_TS, -0.0, 5e-324, -1e-300, -1.5e9, _LAST_TS],
    [math.nextafter(MIN_DOC_TS, -math.inf), MAX_TS, -1e11],
)
_REL_OUT = math.nextafter(100.0, 200.0)
_RELS = ([100.0, -100.0, -0.0, 0.0, 1e-320, 0.5, 3], [_REL_OUT, -_REL_OUT, 101, -1e3])
_SCORES = [1.7976931348623157e308, -2.2250738585072014e-308, 5e-324, -0.0, 0.0, 10**19, 10**20]


@dataclass(frozen=True)
class Case:
    """One generated message, the limits it is judged by, its grade and why."""

    data: bytes
    limits: Limits
    grade: int
    notes: tuple[str, ...]


def _json_value(token: str) -> float:
    """The double msgspec reads for a number token (an integer token is converted whole,
    so `-0` reads as 0.0)."""
    try:
        return float(int(token)) if _INT_TOKEN.fullmatch(token) else float(token)
    except OverflowError:
        return math.inf


class _Writer:
    """Writes one message, grading it as it goes."""

    def __init__(self, rng: random.Random, limits: Limits) -> None:
        self.rng = rng
        self.limits = limits
        self.spacey = rng.random() < 0.5
        self.faulty = rng.random() < 0.3  # may break something
        self.odd = rng.random() < 0.3  # may add unknown or repeated keys, RFC 3339 times
        self.odd_text = rng.random() < 0.3  # may escape ids, keys and labels or use non-ASCII
        self.odd_numbers = rng.random() < 0.5  # may spell binary values exactly, or ties
        self.grade = CLEAN
        self.repeated = False
        self.notes: list[str] = []

    def mark(self, grade: int, note: str) -> None:
        """Grade the message; once a key repeats, no longer claim it invalid (which of the
        repeats counts is msgspec's business)."""
        self.notes.append(note)
        self.repeated = self.repeated or grade == UNKNOWN
        self.grade = max(self.grade, grade)
        if self.repeated:
            self.grade = min(self.grade, UNKNOWN)

    def one(self, options: Sequence[_T]) -> _T:
        return self.rng.choice(options)

    def fault(self, one_in: int) -> bool:
        return self.faulty and self.rng.randrange(one_in) == 0

    def oddity(self, one_in: int) -> bool:
        return self.odd and self.rng.randrange(one_in) == 0

    def ws(self) -> bytes:
        if not self.spacey:
            return b""
        return "".join(self.rng.choices(" \t\n\r", k=self.rng.randrange(3))).encode()

    def size(self, low: int, limit: int) -> int:
        """A length or count: small, at the limit when that is small, or just outside."""
        edges = [limit] if limit <= 16 else []
        if self.faulty:
            edges += [0, limit + 1] if limit <= 16 else [0]
        if edges and self.rng.random() < 0.3:
            return self.one(edges)
        return self.rng.randint(low, min(limit, 4))

    # -- strings -------------------------------------------------------------------------

    def string(self, text: str, what: str, *, strict: bool = True) -> bytes:
        """`text` as a JSON string, every `step`-th character escaped (`\\n` or `\\u000a`;
        a surrogate pair above the BMP); in ids, labels and keys an escape or a non-ASCII
        character is unusual."""
        step = self.one([0, 0, 1, 2, 3]) if self.odd_text or not strict else 0
        short, form = self.rng.random() < 0.5, self.one(["\\u%04X", "\\u%04x"])
        out: list[str] = []
        escaped = False
        for i, ch in enumerate(text):
            code = ord(ch)
            if ch in '"\\' or code < 0x20 or (step and i % step == 0):
                escaped = True
                if ch in _SHORT and short:
                    out.append("\\" + _SHORT[ch])
                elif code > 0xFFFF:
                    code -= 0x10000
                    out.append(form % (0xD800 + (code >> 10)) + form % (0xDC00 + (code & 0x3FF)))
                else:
                    out.append(form % code)
            else:
                out.append(ch)
        if strict and (escaped or not text.isascii()):
            self.mark(UNUSUAL, f"{what}: escaped or non-ASCII")
        return b'"' + "".join(out).encode() + b'"'

    def char(self, palette: str) -> str:
        if palette:
            return self.one(palette)
        code = self.rng.randrange(0x110000)
        return chr(code) if not 0xD800 <= code < 0xE000 else "?"

    def text(self, what: str, low: int, limit: int, *, strict: bool = True) -> tuple[str, bytes]:
        """A string of a length in [low, limit] (or, when faulty, just outside), and its
        spelling."""
        size = self.size(low, limit)
        plain = strict and not self.odd_text
        palette = _ID_CHARS if plain else self.one([_ID_CHARS, _ODD_CHARS + _WIDE_CHARS, ""])
        if size > 8:  # a long string: one character repeated
            value = self.char(palette) * size
        else:
            value = "".join(self.char(palette) for _ in range(size))
        if not low <= size <= limit:
            self.mark(INVALID, f"{what}: {size} chars, allowed {low}..{limit}")
        return value, self.string(value, what, strict=strict)

    def query(self) -> bytes:
        """Free text: escapes and any character welcome; when faulty, broken at the end."""
        _, spelled = self.text("query", 0, self.limits.max_text_chars, strict=False)
        if self.fault(4):
            poison = self.one(_POISON)  # after the last escape, so that it stays broken
            spelled = spelled[:-1] + poison + b'"'
            self.mark(INVALID, f"query: {poison!r}")
        return spelled

    # -- numbers -------------------------------------------------------------------------

    def decimal(self, value: float) -> Decimal:
        """The exact decimal to spell: the shortest repr, the binary value, or the tie
        between the value and the next double up."""
        how = self.one(["repr", "repr", "exact", "tie"]) if self.odd_numbers else "repr"
        if how == "repr":
            return Decimal(repr(value))
        if how == "exact" or not math.isfinite(up := math.nextafter(value, math.inf)):
            return Decimal(value)
        with localcontext() as ctx:
            ctx.prec = 2000
            return (Decimal(value) + Decimal(up)) / 2

    def number(self, value: float | int, what: str) -> tuple[bytes, float]:
        """An exact spelling of `value` (integer, fraction, exponent form) and the double
        msgspec reads from it."""
        exact = Decimal(value) if isinstance(value, int) else self.decimal(value)
        sign, digit_tuple, exp = exact.as_tuple()
        assert isinstance(exp, int)
        digits = "".join(map(str, digit_tuple))
        minus = "-" if sign else ""
        if exp >= 0 and self.rng.random() < 0.5:
            token = minus + (digits + "0" * exp if digits != "0" else "0")
            if len(token) - len(minus) > 18:
                self.mark(UNUSUAL, f"{what}: an integer of more than 18 digits")
            return token.encode(), _json_value(token)
        padded = digits + "0" * self.rng.randrange(3)
        exp -= len(padded) - len(digits)
        if digits == "0" or self.rng.random() < 0.3:
            lead = self.rng.randrange(3)
            mantissa, power = "0." + "0" * lead + padded, exp + len(padded) + lead
        else:
            point = self.rng.randint(1, len(padded))
            rest = padded[point:]
            mantissa, power = padded[:point] + ("." + rest if rest else ""), exp + len(rest)
        token = minus + mantissa
        if power or self.rng.random() < 0.3:
            plus = "+" if power >= 0 and self.rng.random() < 0.5 else ""
            zeros = "0" * self.rng.randrange(2)
            token += self.one("eE") + plus + ("-" if power < 0 else "") + zeros + str(abs(power))
        number = _json_value(token)
        significant = len(mantissa.replace(".", "").lstrip("0"))
        if significant > 17 or abs(power) > 999 or 0 < abs(number) < sys.float_info.min:
            self.mark(UNUSUAL, f"{what}: a long spelling or a subnormal")
        return token.encode(), number

    def value(self, what: str, pick: Callable[[], float | int], low: float, high: float) -> bytes:
        """A number in [low, high] (high excluded for times), or a wrong one when faulty."""
        if self.fault(8):
            bad = self.one(_BAD_NUMBERS + _WRONG_TYPES)
            self.mark(INVALID, f"{what}: {bad!r}")
            return bad
        if what in ("ts", "t_doc") and self.oddity(8):
            spelled = self.one(_RFC3339[:2] if what == "ts" else _RFC3339)
            self.mark(UNUSUAL, f"{what}: RFC 3339")
            return spelled
        spelled, number = self.number(pick(), what)
        inside = low <= number <= high and (what == "rel" or number < high)
        if not math.isfinite(number) or not inside:
            self.mark(INVALID, f"{what}: {number!r} outside [{low}, {high}]")
        return spelled

    def pick(self, low: float, high: float, specials: tuple[list[float], list[float]]) -> float:
        """A number in [low, high), or near it when faulty: an edge, an integer, a few
        decimals, any double."""
        inside, outside = specials
        how = self.rng.randrange(4)
        if how == 0:
            return self.one(inside + outside if self.faulty else inside)
        if how == 1:
            return self.rng.randint(math.ceil(low), math.floor(high) - 1)
        if how == 2:
            return round(self.rng.uniform(low, high), self.rng.randrange(7))
        return self.rng.uniform(low, high)

    def ts(self) -> bytes:
        low, high = (1.6e9, 1.8e9) if self.rng.random() < 0.3 else (0.0, MAX_TS)
        return self.value("ts", lambda: self.pick(low, high, _EVENT_TS), 0.0, MAX_TS)

    def t_doc(self) -> bytes:
        return self.value(
            "t_doc", lambda: self.pick(MIN_DOC_TS, MAX_TS, _DOC_TS), MIN_DOC_TS, MAX_TS
        )

    def rel(self) -> bytes:
        return self.value("rel", lambda: self.pick(-100.0, 100.0, _RELS), -100.0, 100.0)

    def score(self) -> bytes:
        bits = struct.unpack("<d", self.rng.getrandbits(64).to_bytes(8, "little"))[0]
        picks = [
            round(self.rng.gauss(0, 5), 4),
            self.rng.randint(-(10**6), 10**6),
            self.one(_SCORES),
        ]
        if math.isfinite(bits):
            picks.append(bits)
        return self.value("score", lambda: self.one(picks), -math.inf, math.inf)

    # -- containers ----------------------------------------------------------------------

    def obj(self, members: list[tuple[str, bytes]], what: str) -> bytes:
        """An object of the members, keys spelled and in any order, whitespace around."""
        if members and self.oddity(25):
            members = [*members, self.one(members)]
            self.mark(UNKNOWN, f"{what}: repeated key {members[-1][0]}")
        members = self.rng.sample(members, len(members))
        return self.pairs([(self.string(name, "key"), value) for name, value in members])

    def pairs(self, pairs: list[tuple[bytes, bytes]]) -> bytes:
        """`{key: value, ...}` of spelled keys and values, whitespace around every token."""
        ws = self.ws
        return self.join(b"{}", [key + ws() + b":" + ws() + value for key, value in pairs])

    def join(self, brackets: bytes, parts: list[bytes]) -> bytes:
        inner = b",".join(self.ws() + part + self.ws() for part in parts)
        return brackets[:1] + (inner or self.ws()) + brackets[1:]

    def array(self, items: list[bytes]) -> bytes:
        return self.join(b"[]", items)

    def optional(
        self, members: list[tuple[str, bytes]], name: str, make: Callable[[], bytes]
    ) -> None:
        """Absent, null or a value."""
        how = self.one(["absent", "absent", "null", "value", "value"])
        if how != "absent":
            members.append((name, b"null" if how == "null" else make()))

    def extra_keys(self, members: list[tuple[str, bytes]], depth: int, what: str) -> None:
        """Keys the schema does not know (a qrel's `score` too), each with any JSON value,
        at `depth` (the arrays and objects around the value)."""
        if self.rng.random() < 0.3:
            names = [*_UNKNOWN_KEYS, "score"] if what == "qrel" else _UNKNOWN_KEYS
            for _ in range(self.rng.randint(1, 2)):
                members.append((self.one(names), self.junk(depth, f"{what}: unknown value")))
        if depth == 1 and self.rng.random() < 0.3:  # the trace field: a trace id, or nearly
            text = "".join(self.one("0123456789abcdef") for _ in range(32))
            text = self.one([text, text, text.upper(), "0" * 32, text[1:], text + "0"])
            members.append(("trace_id", self.string(text, f"{what}: trace_id", strict=False)))

    def junk(self, depth: int, what: str) -> bytes:
        """Any JSON value at `depth`: every type, nested, with escapes and non-ASCII, numbers
        of any magnitude, nesting at the guard's limit; when faulty, malformed."""
        if self.fault(10):
            bad = self.one(_BAD_JUNK)
            literal = bad in (b"NaN", b"-Infinity")  # not JSON, but read as floats: declined
            self.mark(UNUSUAL if literal else INVALID, f"{what}: {bad!r}")
            return bad
        if self.oddity(10):  # nested up to the limit, at it, or one past it
            levels = MAX_DEPTH - depth + self.one([-1, 0, 0, 1])
            if depth + levels > MAX_DEPTH:
                self.mark(INVALID, f"{what}: nested too deeply")
            return b"[" * levels + self.junk(depth + levels, what) + b"]" * levels
        kind = self.rng.randrange(7 if depth < 6 else 4)
        if kind == 0:
            return self.one([b"null", b"true", b"false"])
        if kind == 1:
            x = self.rng.uniform(-1e9, 1e9)
            return self.one([*_HUGE, repr(x).encode(), b"%d" % x, b"%.3e" % x])
        if kind <= 3:
            palette = self.one([_ID_CHARS, _ODD_CHARS + _WIDE_CHARS, ""])
            text = "".join(self.char(palette) for _ in range(self.rng.randrange(8)))
            return self.string(text, what, strict=False)
        if kind <= 5:
            items = [self.junk(depth + 1, what) for _ in range(self.rng.randrange(4))]
            return self.array(items)
        pairs = []
        for _ in range(self.rng.randrange(4)):
            key = "".join(self.char(_ID_CHARS + _WIDE_CHARS) for _ in range(self.rng.randrange(4)))
            pairs.append((self.string(key, what, strict=False), self.junk(depth + 1, what)))
        return self.pairs(pairs)

    def drop_required(self, members: list[tuple[str, bytes]], names: int, what: str) -> None:
        if self.fault(20):
            name, _ = members.pop(self.rng.randrange(names))
            self.mark(INVALID, f"{what}: no {name}")

    def count(self, what: str, limit: int) -> int:
        size = self.size(0, limit)
        if size > limit:
            self.mark(INVALID, f"{what}: {size} items, limit {limit}")
        return size

    def doc(self, seen: set[str]) -> bytes:
        doc_id, spelled = self.text("doc_id", 1, self.limits.max_id_chars)
        if doc_id in seen:
            self.mark(UNUSUAL, "results: a repeated doc_id")
        seen.add(doc_id)
        members = [("doc_id", spelled)]
        self.drop_required(members, 1, "doc")
        self.optional(members, "score", self.score)
        self.optional(members, "t_doc", self.t_doc)
        self.optional(members, "rel", self.rel)
        self.extra_keys(members, 3, "doc")
        return self.obj(members, "doc")

    def qrel(self) -> bytes:
        members = [("doc_id", self.text("doc_id", 1, self.limits.max_id_chars)[1])]
        members.append(("rel", self.rel()))
        self.drop_required(members, 2, "qrel")
        self.optional(members, "t_doc", self.t_doc)
        self.extra_keys(members, 3, "qrel")
        return self.obj(members, "qrel")

    def qrels(self) -> bytes:
        return self.array([self.qrel() for _ in range(self.count("qrels", self.limits.max_qrels))])

    def labels(self) -> bytes:
        limit = self.limits.max_label_chars
        pairs = [
            (self.text("label key", 1, limit), self.text("label value", 0, limit))
            for _ in range(self.count("labels", self.limits.max_labels))
        ]
        if len({key for (key, _), _ in pairs}) < len(pairs):
            self.mark(UNKNOWN, "labels: a repeated key")
        return self.pairs([(key, value) for (_, key), (_, value) in pairs])

    def event(self) -> bytes:
        kind = self.one(["feedback", "answer", "Retrieval"]) if self.fault(12) else "retrieval"
        if kind != "retrieval":
            self.mark(INVALID, f"type {kind}")
        members = [
            ("type", self.string(kind, "type")),
            ("query_id", self.text("query_id", 1, self.limits.max_id_chars)[1]),
            ("ts", self.ts()),
        ]
        seen: set[str] = set()
        docs = [self.doc(seen) for _ in range(self.count("results", self.limits.max_results))]
        members.append(("results", self.array(docs)))
        self.drop_required(members, 4, "event")
        self.optional(members, "labels", self.labels)
        if members[-1] == ("labels", b"null"):
            self.mark(INVALID, "labels: null")
        self.optional(members, "query", self.query)
        self.optional(members, "qrels", self.qrels)
        if self.fault(12):
            index = self.rng.randrange(len(members))
            name = members[index][0]
            members[index] = (name, b"null" if name in ("labels", "results") else b"[1]")
            self.mark(INVALID, f"event: {name} of a wrong type")
        self.extra_keys(members, 1, "event")
        return self.ws() + self.obj(members, "event") + self.ws()

    def message(self) -> bytes:
        data = self.event()
        if not self.fault(6):
            return data
        fault = self.one(["garbage", "truncated", "bom", "comma", "array"])
        self.mark(INVALID, f"message: {fault}")
        body = data.rstrip(b" \t\r\n")
        if fault == "garbage":
            return data + self.one([b"x", b"{}", b",", b"]", b"\x00"])
        if fault == "truncated":
            return body[: self.rng.randrange(1, len(body))]
        if fault == "bom":
            return b"\xef\xbb\xbf" + data
        if fault == "comma":
            return body[:-1] + b",}"
        return b"[" + data + b"]"


def _small_limits(rng: random.Random) -> Limits:
    return Limits(
        max_results=rng.randint(1, 4),
        max_qrels=rng.randint(1, 3),
        max_text_chars=rng.randint(1, 6),
        max_id_chars=rng.randint(1, 5),
        max_labels=rng.randint(1, 3),
        max_label_chars=rng.randint(1, 4),
    )


def _case(seed: int) -> Case:
    rng = random.Random(seed)
    limits = DEFAULT_LIMITS if rng.random() < 0.5 else _small_limits(rng)
    writer = _Writer(rng, limits)
    data = writer.message()
    size = writer.one(["any"] * 6 + ["exact", "under" if writer.faulty else "exact"])
    if size == "exact":
        limits = replace(limits, max_message_bytes=len(data))
    elif size == "under" and len(data) > 1:
        limits = replace(limits, max_message_bytes=len(data) - 1)
        writer.mark(INVALID, "message: over max_message_bytes")
    return Case(data, limits, writer.grade, tuple(writer.notes))


def cases() -> st.SearchStrategy[Case]:
    """A graded message and its limits: the schema caps or small ones, and a message size
    limit that is sometimes exactly the message's size, or one byte less."""
    return st.integers(0, 2**64).map(_case)
