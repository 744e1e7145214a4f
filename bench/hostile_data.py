"""Hostile input for the decoders and the engine: a seeded stream of valid events among
malformed, extreme and adversarial messages.

`hostile_messages(count, seed)` yields `Hostile(category, value, expect)` records, the same
ones for the same arguments. `category` is one of `CATEGORIES` ("valid" for an event as a
producer writes it); `expect` is the reason code the message must get ("ok" for a valid
event) when its construction decides it, None when the decoder decides (it is then held
to the pydantic models' verdict, not to a guess here). The categories:

- `invalid_utf8`: a byte sequence that is not UTF-8 (0xFF, an overlong form, an encoded
  surrogate, a code point above U+10FFFF, a truncated or stray sequence) in a value, a key,
  an unknown field, a nested unknown value; `bad_json`.
- `truncated`: a valid event cut short; `bad_json`.
- `deep_nesting`: arrays, objects or both, up to tens of thousands deep, under an unknown
  key (`ok` up to 200 levels, `bad_json` beyond), a known key, a result or a context.
- `huge_array`, `huge_string`: an unknown member that fills most of `max_bytes`, and lists
  and strings just over the schema's caps (`too_large`).
- `nan_infinity`, `big_integer`, `absurd_timestamp`: non-JSON literals, 400-digit integers
  and times far outside the schema's range, in known and unknown fields.
- `nul_bytes`, `bom`, `lone_surrogate`: raw and escaped NUL, byte order marks before and
  inside the message, unpaired `\\u` surrogate escapes (`bad_json`) next to valid pairs.
- `giant_id`: ids and label keys over their caps, and a message over the size limit.
- `wrong_type`, `duplicate_key`, `garbage`, `whitespace`: mistyped known fields, repeated
  keys, random bytes, and blanks inside and around a message (JSON's and others).

`max_bytes` is the message size limit of the agent under test (`Limits.max_message_bytes`,
1 MiB by default): the big categories fill it, and `giant_id` and `huge_string` exceed it
on purpose. A smaller one keeps a long run (a benchmark of a million messages) or a test
affordable.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

__all__ = ["CATEGORIES", "Hostile", "hostile_messages", "nested"]

MAX_DEPTH = 200
"""The deepest a value may be (`ragstream.events.guard.MAX_DEPTH`, restated: this module
describes the input, it does not read the package)."""
_MAX_MESSAGE_BYTES = 1_048_576
_NOT_UTF8 = [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"]
_SURROGATES = ["\\ud800", "\\udfff", "\\ud800\\u0041", "\\udc00\\ud800", "\\ud83d\\ud83d"]
_PAIRS = ["\\ud83d\\ude00", "\\udbff\\udfff", "\\u00e9", "\\u0000"]


class Hostile(NamedTuple):
    """One generated message."""

    category: str
    """Which kind of input (see the module's docstring)."""
    value: bytes
    """The message's bytes."""
    expect: str | None
    """The reason code it must get ("ok": a valid event), or None: the decoder decides."""


def hostile_messages(
    count: int,
    seed: int = 0,
    *,
    valid_share: float = 0.3,
    max_bytes: int = _MAX_MESSAGE_BYTES,
    start: int = 0,
) -> Iterator[Hostile]:
    """`count` messages: valid events with probability `valid_share`, else one of the
    hostile categories (uniformly), each drawn from `random.Random((seed, index))`.
    `start`: the index of the first one (a slice of a longer stream: the same messages)."""
    hostile = [name for name in CATEGORIES if name != "valid"]
    for index in range(start, start + count):
        rng = random.Random(f"{seed}/{index}")
        base = _event(rng)
        if rng.random() < valid_share:
            yield Hostile("valid", _dumps(base, rng), "ok")
            continue
        category = rng.choice(hostile)
        value, expect = _MAKERS[category](rng, base, max_bytes)
        yield Hostile(category, value, expect)


def nested(depth: int, kind: str, inner: bytes = b"1") -> bytes:
    """`inner` inside `depth` arrays ("array"), objects ("object") or both in turn."""
    if kind == "array":
        return b"[" * depth + inner + b"]" * depth
    if kind == "object":
        return b'{"k":' * depth + inner + b"}" * depth
    opening = b"".join(b"[" if i % 2 else b'{"k":' for i in range(depth))
    closing = b"".join(b"]" if i % 2 else b"}" for i in reversed(range(depth)))
    return opening + inner + closing


# -- valid events -------------------------------------------------------------------------------


def _event(rng: random.Random) -> dict[str, Any]:
    """A valid event of any type; query ids from a small pool, so that labels meet queries."""
    kind = rng.choice(["retrieval", "retrieval", "feedback", "answer"])
    ts: Any = 1_714_564_800 + rng.randint(0, 3600) + rng.choice([0, 0.25])
    if rng.random() < 0.2:
        ts = f"2024-05-01T12:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    event: dict[str, Any] = {"type": kind, "query_id": f"q{rng.randint(0, 40)}", "ts": ts}
    if rng.random() < 0.5:
        event["labels"] = {"app": rng.choice(["a", "b", "é"])}
    if kind == "retrieval":
        docs = rng.sample(range(50), rng.randint(0, 12))
        event["results"] = [
            {"doc_id": f"d{d}", "score": round(rng.uniform(0, 10), 3)}
            | ({"rel": rng.randint(0, 3)} if rng.random() < 0.2 else {})
            for d in docs
        ]
        if rng.random() < 0.2:
            event["qrels"] = [{"doc_id": f"d{d}", "rel": rng.randint(0, 3)} for d in docs[:3]]
        if rng.random() < 0.5:
            event["query"] = rng.choice(["reset password", "café au lait", "日本語"])
    elif kind == "feedback":
        event |= {"doc_id": f"d{rng.randint(0, 50)}", "rel": rng.randint(0, 3), "source": "click"}
    else:
        event |= {
            "question": "how?",
            "answer": "like this",
            "contexts": [{"doc_id": "d1", "text": "some text"}],
        }
    return event


def _dumps(event: dict[str, Any], rng: random.Random) -> bytes:
    """Compact JSON, escaped to ASCII or not."""
    text = json.dumps(event, separators=(",", ":"), ensure_ascii=rng.random() < 0.5)
    return text.encode()


def _member(event: dict[str, Any], member: bytes, rng: random.Random) -> bytes:
    """`event` with a raw member added first or last."""
    body = _dumps(event, rng)
    if rng.random() < 0.5:
        return b"{" + member + b"," + body[1:]
    return body[:-1] + b"," + member + b"}"


# -- the categories -----------------------------------------------------------------------------

Maker = Callable[[random.Random, dict[str, Any], int], tuple[bytes, str | None]]


def _invalid_utf8(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    bad = rng.choice(_NOT_UTF8)
    where = rng.randrange(4)
    if where == 0:  # inside a known string value
        body = _dumps(event, rng)
        at = body.index(b'"query_id":"') + len(b'"query_id":"')
        return body[:at] + bad + body[at:], "bad_json"
    member = [b'"x":"' + bad + b'"', b'"' + bad + b'":1', b'"x":[{"y":["' + bad + b'"]}]'][
        where - 1
    ]
    return _member(event, member, rng), "bad_json"


def _truncated(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    body = _dumps(event, rng)
    return body[: rng.randrange(1, len(body))], "bad_json"


def _deep_nesting(
    rng: random.Random, event: dict[str, Any], max_bytes: int
) -> tuple[bytes, str | None]:
    kind = rng.choice(["array", "object", "mixed"])
    depth = rng.choice(
        [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 1000, 10_000, rng.randint(1, 5 * MAX_DEPTH)]
    )
    depth = min(depth, max_bytes // 8)
    inner = rng.choice([b"1", b'"s"', b"[]", b"{}", b"null"])
    value = nested(depth, kind, inner)
    where = rng.randrange(4)
    if where == 0:  # under an unknown key at the top: `inner` is at depth `depth + 1`
        return _member(event, b'"x":' + value, rng), "ok" if depth < MAX_DEPTH else "bad_json"
    if where == 1:
        key = rng.choice([b"labels", b"results", b"query_id", b"ts", b"contexts"])
        return _member(event, b'"' + key + b'":' + value, rng), None
    if where == 2:  # in a result (its members are at depth 3)
        doc = b'{"doc_id":"d","x":' + value + b"}"
        body = _dumps({**event, "type": "retrieval", "results": []}, rng)
        return body.replace(b'"results":[]', b'"results":[' + doc + b"]"), None
    ctx = b'{"text":"t","x":' + value + b"}"
    answer = {**event, "type": "answer", "question": "", "answer": "", "contexts": []}
    return _dumps(answer, rng).replace(b'"contexts":[]', b'"contexts":[' + ctx + b"]"), None


def _huge_array(
    rng: random.Random, event: dict[str, Any], max_bytes: int
) -> tuple[bytes, str | None]:
    choice = rng.randrange(4)
    if choice == 0:
        n = rng.randint(0, max(0, max_bytes // 2 - 1000))
        return _member(event, b'"x":[' + b",".join([b"0"] * n) + b"]", rng), "ok"
    if choice == 1:
        results = [{"doc_id": f"d{i}"} for i in range(1001)]
        return _dumps({**event, "type": "retrieval", "results": results}, rng), "too_large"
    if choice == 2:
        qrels = [{"doc_id": "d", "rel": 1}] * 10_001
        return _dumps({**event, "type": "retrieval", "results": [], "qrels": qrels}, rng), None
    cited = ["d"] * 1001
    answer = {**event, "type": "answer", "question": "", "answer": "", "contexts": []}
    return _dumps({**answer, "cited_doc_ids": cited}, rng), "too_large"


def _huge_string(
    rng: random.Random, event: dict[str, Any], max_bytes: int
) -> tuple[bytes, str | None]:
    choice = rng.randrange(4)
    if choice == 0:  # exactly fills the message limit, or one byte more
        body = _member(event, b'"x":""', rng)
        fill = max_bytes - len(body) + rng.choice([0, 1])
        if fill < 0:
            return body, "ok"
        value = body.replace(b'"x":""', b'"x":"' + b"a" * fill + b'"')
        return value, "ok" if len(value) <= max_bytes else "too_large"
    if choice == 1:
        text = "é" * 100_001 if rng.random() < 0.5 else "a" * 100_001  # the field or the message
        return _dumps(
            {**event, "type": "retrieval", "results": [], "query": text}, rng
        ), "too_large"
    if choice == 2:  # escapes that count one character each
        n = min(max_bytes // 8, 50_000)
        return _member(event, b'"x":"' + b"\\u00e9" * n + b'"', rng), "ok"
    return _member(event, b'"x":"' + rng.randbytes(64).hex().encode() * 100 + b'"', rng), "ok"


def _nan_infinity(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    literal = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"nan", b"inf", b"1e999"])
    key = rng.choice([b"rel", b"ts", b"x", b"score"])
    return _member(event, b'"' + key + b'":' + literal, rng), None


def _big_integer(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    digits = bytes(rng.choices(b"190", k=400))
    number = rng.choice([b"1", b"-1", b"0."]) + digits
    key = rng.choice([b"rel", b"ts", b"x", b"score"])
    return _member(event, b'"' + key + b'":' + number, rng), None


def _absurd_timestamp(
    rng: random.Random, event: dict[str, Any], _: int
) -> tuple[bytes, str | None]:
    ts = rng.choice(
        [
            1e300,
            -1e300,
            5e-324,
            -1,
            32_503_680_000,
            1_714_564_800_000,
            "9999-12-31T23:59:59Z",
            "+275760-09-13T00:00:00Z",
            "2024-13-45T99:99:99Z",
            "2024-05-01T12:00:00." + "9" * 1000 + "Z",
            " " * 1000,
            "",
            True,
            [],
        ]
    )
    if rng.random() < 0.5:
        return _dumps({**event, "ts": ts}, rng), None
    doc = {"doc_id": "d", "t_doc": ts}
    return _dumps({**event, "type": "retrieval", "results": [doc]}, rng), None


def _nul_bytes(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    body = _dumps(event, rng)
    choice = rng.randrange(3)
    if choice == 0:  # a raw control character in a string: not JSON
        at = body.index(b'"query_id":"') + len(b'"query_id":"')
        return body[:at] + b"\x00" + body[at:], "bad_json"
    if choice == 1:  # between tokens
        at = body.index(b",")
        return body[:at] + b"\x00" + body[at:], "bad_json"
    return body.replace(b'"query_id":"', b'"query_id":"\\u0000', 1), None


def _bom(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    body = _dumps(event, rng)
    choice = rng.randrange(3)
    if choice == 0:
        return b"\xef\xbb\xbf" + body, "bad_json"
    if choice == 1:
        return b"\xff\xfe" + body, "bad_json"
    return _member(event, b'"x":"\xef\xbb\xbf\\ufeff"', rng), "ok"  # U+FEFF is a character


def _lone_surrogate(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    if rng.random() < 0.3:
        return _member(event, b'"x":"' + rng.choice(_PAIRS).encode() + b'"', rng), "ok"
    escape = rng.choice(_SURROGATES).encode()
    where = rng.randrange(3)
    if where == 0:
        return _member(event, b'"x":"a' + escape + b'"', rng), "bad_json"
    if where == 1:
        return _member(event, b'"' + escape + b'":1', rng), "bad_json"
    body = _dumps(event, rng)
    return body.replace(b'"query_id":"', b'"query_id":"' + escape, 1), "bad_json"


def _giant_id(
    rng: random.Random, event: dict[str, Any], max_bytes: int
) -> tuple[bytes, str | None]:
    n = rng.choice([513, 10_000, max_bytes // 2])
    choice = rng.randrange(3)
    if choice == 0:
        return _dumps({**event, "query_id": "q" * n}, rng), "too_large"
    if choice == 1:
        labels = {"k" * min(n, 257): "v"}
        return _dumps({**event, "labels": labels}, rng), "too_large"
    return _dumps({**event, "query_id": "q" * (max_bytes + 1)}, rng), "too_large"


def _wrong_type(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    key = rng.choice(["type", "query_id", "ts", "labels", "results", "rel", "doc_id", "contexts"])
    value: Any = rng.choice([None, True, 0, -1.5, "", "x", [], [1], {}, {"a": 1}])
    return _dumps({**event, key: value}, rng), None


def _duplicate_key(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    key = rng.choice(["type", "query_id", "ts", "labels", "results", "rel", "source"])
    value: Any = rng.choice([None, 1, "retrieval", "feedback", "q1", [], {"app": "a"}])
    return _member(event, json.dumps(key).encode() + b":" + json.dumps(value).encode(), rng), None


def _garbage(rng: random.Random, _: dict[str, Any], max_bytes: int) -> tuple[bytes, str | None]:
    size = rng.choice([1, 2, 16, 256, min(65_536, max_bytes)])
    alphabet = rng.choice([None, b'{}[]":,0123456789.eE-+ \\ntrufalsn', b"\x00\x7f\x80\xff"])
    if alphabet is None:
        return rng.randbytes(size), None
    return bytes(rng.choices(alphabet, k=size)), None


def _whitespace(rng: random.Random, event: dict[str, Any], _: int) -> tuple[bytes, str | None]:
    body = _dumps(event, rng)
    if rng.random() < 0.5:
        blanks = bytes(rng.choice(b" \t\r\n") for _ in range(rng.randint(1, 50)))
        return blanks + b"{" + blanks + body[1:] + blanks, "ok"
    other = rng.choice([b"\x0b", b"\x0c", b"\xc2\xa0", b"\xe2\x80\x8b", b"\x1c"])
    return (other + body) if rng.random() < 0.5 else body.replace(b",", b"," + other, 1), "bad_json"


_MAKERS: dict[str, Maker] = {
    "invalid_utf8": _invalid_utf8,
    "truncated": _truncated,
    "deep_nesting": _deep_nesting,
    "huge_array": _huge_array,
    "huge_string": _huge_string,
    "nan_infinity": _nan_infinity,
    "big_integer": _big_integer,
    "absurd_timestamp": _absurd_timestamp,
    "nul_bytes": _nul_bytes,
    "bom": _bom,
    "lone_surrogate": _lone_surrogate,
    "giant_id": _giant_id,
    "wrong_type": _wrong_type,
    "duplicate_key": _duplicate_key,
    "garbage": _garbage,
    "whitespace": _whitespace,
}
CATEGORIES: tuple[str, ...] = ("valid", *_MAKERS)
"""Every category, "valid" first."""
