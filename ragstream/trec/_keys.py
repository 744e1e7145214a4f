"""Integer keys for query ids and (query, document) pairs, so joins are sorts, not dicts.

Query ids are factorized exactly (few distinct ids): code order is byte order, the order
trec_eval reports queries in. A (query, document) pair gets a 64-bit key: the query code
in the high bits and a hash of the document words below. Equal pairs always get equal
keys; a hash collision (different documents, same key) is detected by comparing the words
of every pair a decision rests on, and then the keys are rebuilt exactly (dense ranks of
the full rows), which is slower but never wrong.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["doc_keys", "factorize_rows", "pad_words", "rows_equal"]

_U64 = NDArray[np.uint64]
_I64 = NDArray[np.int64]
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def pad_words(words: _U64, width: int) -> _U64:
    """Widen (N, W) words to (N, width) with zero words (NUL padding keeps the order)."""
    if words.shape[1] == width:
        return words
    return np.pad(words, ((0, 0), (0, width - words.shape[1])))


def factorize_rows(words: _U64) -> tuple[_U64, _I64]:
    """Distinct rows in byte order, and the index of each input row among them."""
    if words.shape[0] == 0:
        return words, np.zeros(0, dtype=np.int64)
    order = np.lexsort(words.T[::-1])
    ordered = words[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    codes = np.empty(order.size, dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return ordered[new], codes


def _mix(x: _U64) -> _U64:
    """A cheap bijection of uint64 that spreads low input bits upwards (multiply, fold)."""
    x = x * _M1
    x ^= x >> np.uint64(29)
    return x


def doc_keys(qcodes: _I64, words: _U64, n_queries: int, exact: bool) -> _U64:
    """One uint64 per (query, document): query code on top, document hash (or rank) below.

    `exact=True` replaces the hash by the document's dense rank among `words`, so equal keys
    mean equal pairs; it needs a sort of the rows.
    """
    query_bits = max(1, int(n_queries - 1).bit_length())
    if query_bits > 40:
        raise ValueError(f"too many distinct query ids ({n_queries})")
    low_bits = 64 - query_bits
    if exact:
        _, rank = factorize_rows(words)
        if rank.size and int(rank.max()).bit_length() > low_bits:
            raise ValueError("too many distinct document ids for exact keys")
        low = rank.astype(np.uint64)
    else:
        h = _mix(words[:, 0] ^ _GOLDEN)
        for column in range(1, words.shape[1]):
            h = _mix(h ^ words[:, column]) * _M2
        low = h >> np.uint64(query_bits)
    return (qcodes.astype(np.uint64) << np.uint64(low_bits)) | low


def rows_equal(a: _U64, b: _U64) -> NDArray[np.bool_]:
    """Row-wise equality of two word matrices of the same shape."""
    equal: NDArray[np.bool_] = np.all(a == b, axis=1)
    return equal
