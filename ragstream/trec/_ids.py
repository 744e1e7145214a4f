"""Ids of any length as rows of 64-bit words, in memory proportional to their bytes.

An id becomes big-endian 64-bit words, zero padded: 8 bytes per word. Rows of words
compare exactly like C `strcmp` on the raw bytes (ids never contain NUL), the order
trec_eval uses, and hash and sort as whole-array operations. A row has at most `WIDTH`
words: an id longer than `8 * WIDTH` bytes keeps its first `WIDTH` words in the row and
the rest of its bytes beside the rows, so that one long id among many short ones does not
widen every row (a file with one 1 MB id would otherwise need 1 MB per line). There is no
limit on the length of an id.

To be compared, hashed or joined, ids go through `comparable`: when none is long the rows
are the words themselves; otherwise every row gets one more word, 0 for ids of at most
`8 * WIDTH` bytes and 1 + the rank (byte order) of the rest of the id after its first
`8 * WIDTH` bytes among the long ids: rows then compare and match exactly as the ids do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "PAD",
    "WIDTH",
    "Ids",
    "comparable",
    "concat",
    "factorize_rows",
    "from_fields",
    "lex_greater",
]

PAD = 64
"""Zero bytes after each block of a file, so fixed-width views of its last fields (ids'
8-byte loads) stay in bounds."""
WIDTH = 8
"""Words kept in a row: ids up to 64 bytes are whole in their row."""
_LONG = 8 * WIDTH
_FEW = 64  # fewer long ids than this are ranked by Python's bytes comparison
_GATHER = 1 << 20  # bytes gathered by one vectorized step

_U64 = NDArray[np.uint64]
_I64 = NDArray[np.int64]
_U8 = NDArray[np.uint8]
_BOOL = NDArray[np.bool_]
# _KEEP[n] keeps the first n bytes (the high ones) of a big-endian word.
_KEEP = np.array([((1 << (8 * n)) - 1) << (8 * (8 - n)) for n in range(9)], dtype=np.uint64)


@dataclass(frozen=True, eq=False)
class Ids:
    """N ids: their first words, and the rest of those longer than WIDTH words."""

    words: _U64
    """(N, W), 1 <= W <= WIDTH: the first 8 W bytes of each id as words, zero padded."""
    long_rows: _I64
    """(M,) ascending: the rows whose id is longer than 8 * WIDTH bytes."""
    long_offsets: _I64
    """(M + 1,) where the rest of each long id starts in `long_bytes`, then the total."""
    long_bytes: _U8
    """The long ids after their first 8 * WIDTH bytes, back to back, then PAD zero bytes."""

    @property
    def size(self) -> int:
        """Number of ids."""
        return int(self.words.shape[0])

    def text(self, row: int) -> bytes:
        """The whole id of one row."""
        head = bytes(self.words[row].astype(">u8").tobytes()).rstrip(b"\0")
        at = int(np.searchsorted(self.long_rows, row))
        if at < self.long_rows.size and int(self.long_rows[at]) == row:
            start, stop = int(self.long_offsets[at]), int(self.long_offsets[at + 1])
            return head + self.long_bytes[start:stop].tobytes()
        return head

    def texts(self, rows: _I64) -> list[bytes]:
        """The whole ids of some rows (vectorized for the ids that fit their row)."""
        if rows.size == 0:
            return []
        width = 8 * self.words.shape[1]
        out: list[bytes] = self.words[rows].astype(">u8").view(f"S{width}").ravel().tolist()
        if self.long_rows.size:
            for i in np.flatnonzero(np.isin(rows, self.long_rows)).tolist():
                out[i] = self.text(int(rows[i]))
        return out

    def take(self, rows: _I64) -> Ids:
        """The ids of `rows`, in that order."""
        words = self.words[rows]
        if not self.long_rows.size:
            return Ids(words, _NO_ROWS, _NO_OFFSETS, _NO_BYTES)
        at = np.minimum(np.searchsorted(self.long_rows, rows), self.long_rows.size - 1)
        is_long = self.long_rows[at] == rows
        source = at[is_long]
        starts = self.long_offsets[source]
        blob, offsets = _gather(self.long_bytes, starts, self.long_offsets[source + 1] - starts)
        return Ids(words, np.flatnonzero(is_long).astype(np.int64), offsets, blob)


_NO_ROWS = np.zeros(0, dtype=np.int64)
_NO_OFFSETS = np.zeros(1, dtype=np.int64)
_NO_BYTES = np.zeros(PAD, dtype=np.uint8)


def from_fields(data: _U8, starts: _I64, lengths: _I64) -> Ids:
    """The ids data[starts[i]:starts[i] + lengths[i]]; `data` ends with PAD zero bytes."""
    words = _words_of(data, starts, np.minimum(lengths, _LONG))
    long_rows = np.flatnonzero(lengths > _LONG).astype(np.int64)
    if not long_rows.size:
        return Ids(words, _NO_ROWS, _NO_OFFSETS, _NO_BYTES)
    blob, offsets = _gather(data, starts[long_rows] + _LONG, lengths[long_rows] - _LONG)
    return Ids(words, long_rows, offsets, blob)


def concat(parts: Sequence[Ids]) -> Ids:
    """The ids of several parts, one after the other."""
    width = max(part.words.shape[1] for part in parts)
    words = np.concatenate([_pad_words(part.words, width) for part in parts])
    if not any(part.long_rows.size for part in parts):
        return Ids(words, _NO_ROWS, _NO_OFFSETS, _NO_BYTES)
    rows, offsets, blobs = [], [np.zeros(1, dtype=np.int64)], []
    n_rows = n_bytes = 0
    for part in parts:
        rows.append(part.long_rows + n_rows)
        offsets.append(part.long_offsets[1:] + n_bytes)
        total = int(part.long_offsets[-1])
        blobs.append(part.long_bytes[:total])
        n_rows += part.size
        n_bytes += total
    blobs.append(np.zeros(PAD, dtype=np.uint8))
    return Ids(words, np.concatenate(rows), np.concatenate(offsets), np.concatenate(blobs))


def comparable(groups: Sequence[Ids]) -> list[_U64]:
    """Rows for the ids of every group that compare (word by word), hash and match across
    all groups exactly as the ids do in byte order."""
    if not any(group.long_rows.size for group in groups):
        width = max(group.words.shape[1] for group in groups)
        return [_pad_words(group.words, width) for group in groups]
    blob = np.concatenate([g.long_bytes[: int(g.long_offsets[-1])] for g in groups] + [_NO_BYTES])
    lengths = np.concatenate([np.diff(group.long_offsets) for group in groups])
    starts = np.cumsum(lengths) - lengths
    ranks = _rank(blob, starts, lengths).astype(np.uint64) + np.uint64(1)
    out, done = [], 0
    for group in groups:
        rows = np.zeros((group.size, WIDTH + 1), dtype=np.uint64)
        rows[:, : group.words.shape[1]] = group.words
        rows[group.long_rows, WIDTH] = ranks[done : done + group.long_rows.size]
        done += group.long_rows.size
        out.append(rows)
    return out


def _rank(data: _U8, starts: _I64, lengths: _I64) -> _I64:
    """Dense ranks, in byte order, of the ids data[starts[i]:starts[i] + lengths[i]].

    Level by level: the first WIDTH words of each id, and for those longer, the rank of
    their rest (the next level). Each level holds only the ids still longer, so memory
    stays proportional to the bytes; a few ids are ranked by Python's bytes comparison.
    """
    levels: list[tuple[_U64, _I64]] = []
    while starts.size > _FEW:
        words = _words_of(data, starts, np.minimum(lengths, _LONG))
        longer = np.flatnonzero(lengths > _LONG)
        levels.append((words, longer))
        starts, lengths = starts[longer] + _LONG, lengths[longer] - _LONG
    spans = zip(starts.tolist(), lengths.tolist(), strict=True)
    texts = [data[s : s + n].tobytes() for s, n in spans]
    order = {text: i for i, text in enumerate(sorted(set(texts)))}
    ranks = np.array([order[text] for text in texts], dtype=np.int64)
    for words, longer in reversed(levels):
        rows = np.zeros((words.shape[0], words.shape[1] + 1), dtype=np.uint64)
        rows[:, :-1] = words
        rows[longer, -1] = ranks.astype(np.uint64) + np.uint64(1)
        _, ranks = factorize_rows(rows)
    return ranks


def _words_of(data: _U8, starts: _I64, lengths: _I64) -> _U64:
    """(N, W) big-endian words of data[starts[i]:starts[i] + lengths[i]], zero padded, with
    W words for the longest (at least 1): one unaligned 8-byte load per word."""
    longest = int(lengths.max()) if lengths.size else 0
    n_words = max(1, -(-longest // 8))
    words = _loads(data)
    out = np.empty((starts.size, n_words), dtype=np.uint64)
    for w in range(n_words):
        offset = starts + 8 * w
        if w and 8 * w + 8 > PAD:  # loads past the end of a long field must stay in bounds
            np.minimum(offset, words.size - 1, out=offset)
        word = words[offset].astype(np.uint64)
        word &= _KEEP[np.clip(lengths - 8 * w, 0, 8)]
        out[:, w] = word
    return out


def _loads(data: _U8) -> NDArray[np.uint64]:
    """Element i is the big-endian word of bytes i..i+7 (an unaligned, overlapping view)."""
    view: NDArray[np.uint64] = np.ndarray((data.size - 7,), dtype=">u8", buffer=data, strides=(1,))
    return view


def _gather(data: _U8, starts: _I64, lengths: _I64) -> tuple[_U8, _I64]:
    """The byte ranges data[starts[i]:starts[i] + lengths[i]] back to back (then PAD zero
    bytes), and where each starts."""
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    blob = np.zeros(total + PAD, dtype=np.uint8)
    i, n = 0, lengths.size
    while i < n:  # ranges of about _GATHER bytes at once: index arrays of bounded size
        j = max(i + 1, int(np.searchsorted(offsets, offsets[i] + _GATHER, side="right")) - 1)
        j = min(j, n)
        lo, hi = int(offsets[i]), int(offsets[j])
        if j == i + 1:  # one range (maybe a long one): a plain copy
            blob[lo:hi] = data[starts[i] : starts[i] + (hi - lo)]
        else:
            shift = np.repeat(starts[i:j] - offsets[i:j], lengths[i:j])
            blob[lo:hi] = data[shift + np.arange(lo, hi)]
        i = j
    return blob, offsets


def _pad_words(words: _U64, width: int) -> _U64:
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


def lex_greater(a: _U64, b: _U64) -> _BOOL:
    """Row-wise `a > b` for word matrices, compared word by word (byte order)."""
    greater = np.zeros(a.shape[0], dtype=bool)
    undecided = np.ones(a.shape[0], dtype=bool)
    for column in range(a.shape[1]):
        greater |= undecided & (a[:, column] > b[:, column])
        undecided &= a[:, column] == b[:, column]
    return greater
