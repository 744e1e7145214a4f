"""Ids as rows of words: every byte kept, rows ordered and matched exactly as the ids are,
and memory bounded by WIDTH words a row however long the longest id is."""

from __future__ import annotations

import itertools
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstream.trec._ids import PAD, WIDTH, Ids, comparable, concat, from_fields, lex_greater


def _ids(texts: list[bytes]) -> Ids:
    """`texts` laid out in a buffer with junk between them, as fields are in a file."""
    data = bytearray()
    starts = []
    for text in texts:
        data += b"\xff junk "
        starts.append(len(data))
        data += text
    buffer = np.zeros(len(data) + PAD, dtype=np.uint8)
    buffer[: len(data)] = np.frombuffer(bytes(data), dtype=np.uint8)
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    return from_fields(buffer, np.array(starts, dtype=np.int64), lengths)


def _all(ids: Ids) -> list[bytes]:
    return ids.texts(np.arange(ids.size))


def _check_rows(texts: list[bytes], rows: np.ndarray) -> None:
    """Rows compare word by word (and are equal) exactly as the ids compare as bytes."""
    n = len(texts)
    i = np.repeat(np.arange(n), n)
    j = np.tile(np.arange(n), n)
    greater = lex_greater(rows[i], rows[j]).tolist()
    equal = np.all(rows[i] == rows[j], axis=1).tolist()
    for a, b, g, e in zip(i.tolist(), j.tolist(), greater, equal, strict=True):
        assert (g, e) == (texts[a] > texts[b], texts[a] == texts[b]), (texts[a], texts[b])


# Ids around the row width (56, 64, 72 bytes) sharing long prefixes, so that the words
# are equal and the rest decides; and a few far longer.
_PREFIX = b"p" * 60
_TEXT = st.one_of(
    st.binary(min_size=1, max_size=20).filter(lambda b: b"\0" not in b),
    st.builds(
        lambda n, tail: (_PREFIX + tail)[:n] if n <= 60 else _PREFIX + tail,
        st.integers(1, 140),
        st.binary(min_size=0, max_size=80).filter(lambda b: b"\0" not in b),
    ),
    st.sampled_from([b"x" * 5000, b"x" * 5000 + b"y", b"x" * 4999 + b"z", b"x" * 70]),
)


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=30), split=st.integers(0, 30))
def test_rows_order_and_match_as_the_bytes(texts: list[bytes], split: int) -> None:
    split = min(split, len(texts))
    a, b = _ids(texts[:split]), _ids(texts[split:])
    assert _all(a) + _all(b) == texts
    assert a.words.shape[1] <= WIDTH
    rows_a, rows_b = comparable([a, b])
    _check_rows(texts, np.concatenate([rows_a, rows_b]))


def test_many_long_ids_rank_level_by_level() -> None:
    # More long ids than Python ranks alone: the rest after each WIDTH words is ranked
    # with words again, over several levels (ids up to 300 bytes, equal up to the end).
    rng = random.Random(3)
    prefix = bytes(rng.choice(b"ab") for _ in range(300))

    def text() -> bytes:
        shared = rng.choice([0, 56, 63, 64, 120, 128, 129, 192, 250])
        return prefix[:shared] + bytes(rng.choice(b"ab\xff") for _ in range(rng.randrange(1, 9)))

    texts = [text() for _ in range(600)]
    texts += texts[:50]  # equal long ids must match
    ids = _ids(texts)
    assert np.count_nonzero(np.diff(ids.long_offsets) > 8 * WIDTH) > 64  # a third level
    assert _all(ids) == texts
    (rows,) = comparable([ids])
    order = sorted(range(len(texts)), key=lambda i: texts[i])
    ordered = rows[np.array(order)]
    assert not np.any(lex_greater(ordered[:-1], ordered[1:]))
    equal = np.all(ordered[1:] == ordered[:-1], axis=1)
    assert equal.tolist() == [texts[i] == texts[j] for i, j in itertools.pairwise(order)]


def test_take_and_concat_keep_long_ids() -> None:
    texts = [b"a", b"L" * 100, b"b", b"M" * 65, b"c"]
    ids = _ids(texts)
    assert ids.long_rows.tolist() == [1, 3]
    taken = ids.take(np.array([3, 0, 1, 1], dtype=np.int64))
    assert _all(taken) == [texts[3], texts[0], texts[1], texts[1]]
    both = concat([taken, ids])
    assert _all(both) == _all(taken) + texts
    assert both.text(5) == texts[1]


def test_one_long_id_does_not_widen_the_rows() -> None:
    # The case that needed 4.6 GB: 1 MB for every line, because one id was 1 MB long.
    texts = [b"d%d" % i for i in range(5000)] + [b"x" * 1_000_000]
    ids = _ids(texts)
    assert ids.words.nbytes == len(texts) * 8 * WIDTH
    assert ids.long_bytes.size < 1_000_000 + PAD
    assert ids.text(5000) == texts[-1]
    rows_a, rows_b = comparable([ids, _ids([b"x" * 1_000_000, b"d7"])])
    assert rows_a.shape[1] == WIDTH + 1
    assert np.array_equal(rows_a[5000], rows_b[0])
    assert np.array_equal(rows_a[7], rows_b[1])
