"""Vectorized splitting of TREC text files into whitespace-separated fields, chunk by chunk,
and the fields as ids and as text.

A file is read in blocks cut at a newline. In each block, token boundaries come from one
pass over the bytes (`byte > 32` and its first difference), and newlines from another. The
common case -- every line has exactly the expected number of fields, no comments, no
blank lines -- is *proved* with three vectorized comparisons (the k-th newline lies
between the last field of line k and the first field of line k + 1), so no Python loop
touches a line. Anything else goes through an exact, still vectorized, per-line count that
skips what trec_eval skips (and, in runs, the text after a line's last field, as
trec_eval does) and names the first malformed line.

Whitespace is C `isspace` in the "C" locale: space, \\t, \\n, \\v, \\f, \\r. NUL bytes are an
error (trec_eval cannot read them either).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragstream.trec._ids import PAD, Ids, from_fields
from ragstream.trec.errors import TrecFormatError, quote

__all__ = ["Chunk", "Layout", "read_blocks", "tokenize"]


_NEWLINE = 10
_HASH = 35
_I64 = NDArray[np.int64]
_U8 = NDArray[np.uint8]


@dataclass(frozen=True)
class Layout:
    """The shape of one kind of TREC line."""

    kind: str
    """"qrels" or "run", for messages."""
    fields: tuple[str, ...]
    """Field names in order, e.g. ("qid", "iter", "docid", "rel")."""
    blank_lines_ok: bool
    """Skip whitespace-only lines (trec_eval does in runs) instead of rejecting them."""
    comment_after_space: bool
    """A `#` after leading whitespace starts a comment (runs); else only in column 1."""
    extra_fields_ignored: bool
    """Text after the last field is ignored (runs, as trec_eval); else the line is
    malformed."""


@dataclass(frozen=True)
class Chunk:
    """The fields of the records of one block of a file."""

    data: _U8
    """The block's bytes followed by PAD zero bytes."""
    starts: _I64
    """(N, K) where each field of each record starts in `data`."""
    ends: _I64
    """(N, K) where each field ends (exclusive)."""
    lines: _I64 | None
    """(N,) 1-based line number of each record in the block, or None: record i is on
    line i + 1."""
    n_lines: int
    """Lines in the block, including skipped ones."""

    @property
    def size(self) -> int:
        """Number of records."""
        return int(self.starts.shape[0])

    def field(self, column: int) -> tuple[_I64, _I64]:
        """(N,) start and end offsets (end exclusive) of field `column` of each record."""
        return self.starts[:, column], self.ends[:, column]

    def ids(self, column: int) -> Ids:
        """The ids in field `column` of each record."""
        starts, ends = self.field(column)
        return from_fields(self.data, starts, ends - starts)

    def texts(self, column: int, rows: _I64) -> NDArray[np.bytes_]:
        """Field `column` of some records as a numpy bytes array, as wide as the longest
        (the caller gives short fields only)."""
        starts, ends = self.field(column)
        starts, lengths = starts[rows], ends[rows] - starts[rows]
        width = max(1, int(lengths.max()) if lengths.size else 1)
        index = starts[:, None] + np.arange(width)
        np.minimum(index, self.data.size - 1, out=index)
        matrix = self.data[index]
        matrix *= np.arange(width)[None, :] < lengths[:, None]
        texts: NDArray[np.bytes_] = matrix.view(f"S{width}").ravel()
        return texts


def read_blocks(path: str, block_bytes: int = 1 << 24) -> Iterator[tuple[_U8, int]]:
    """Yield (buffer, size): blocks of whole lines of about `block_bytes`, read with
    `readinto` (no copy), each followed by at least PAD zero bytes in its buffer."""
    carry = np.zeros(0, dtype=np.uint8)
    with open(path, "rb", buffering=0) as handle:
        while True:
            step = max(block_bytes, carry.size)  # a line longer than a block: doubling reads
            buffer = np.empty(carry.size + step + PAD, dtype=np.uint8)
            buffer[: carry.size] = carry
            view = memoryview(buffer)[carry.size : carry.size + step]  # type: ignore[arg-type]
            read = handle.readinto(view)
            total = carry.size + read
            if not read:
                if total:
                    buffer[total : total + PAD] = 0
                    yield buffer, total
                return
            cut = _after_last_newline(buffer, total)
            if cut == 0:  # one line longer than a block: keep reading
                carry = buffer[:total].copy()
                continue
            carry = buffer[cut:total].copy()
            buffer[cut : cut + PAD] = 0
            yield buffer, cut


def _after_last_newline(buffer: _U8, size: int) -> int:
    """Offset just after the last newline in buffer[:size], or 0 if there is none."""
    window = 1 << 16
    while True:
        lo = max(0, size - window)
        found = np.flatnonzero(buffer[lo:size] == _NEWLINE)
        if found.size:
            return lo + int(found[-1]) + 1
        if lo == 0:
            return 0
        window *= 16


def tokenize(data: _U8, size: int, layout: Layout, path: str) -> Chunk:
    """Split `data[:size]` (whole lines, PAD zero bytes after) into records of `layout`.

    Line numbers are relative to the block (its first line is 1); raises TrecFormatError
    with such a line number, which the caller shifts.
    """
    a = data[:size]
    k = len(layout.fields)
    token = _token_mask(a, path)
    edges = np.flatnonzero(np.diff(token.view(np.int8), prepend=np.int8(0), append=np.int8(0)))
    starts, ends = edges[0::2], edges[1::2]  # a token starts, then ends: they alternate
    del edges, token
    newlines = np.flatnonzero(a == _NEWLINE)
    if a[-1] != _NEWLINE:
        newlines = np.append(newlines, size)  # the file's last line has no newline
    n_lines = int(newlines.size)
    if starts.size == k * n_lines and (
        np.all(ends[k - 1 :: k] <= newlines)
        and np.all(newlines[:-1] < starts[k::k])
        and not np.any(a[starts[::k]] == _HASH)
    ):
        return Chunk(data, starts.reshape(-1, k), ends.reshape(-1, k), None, n_lines)
    return _tokenize_general(data, starts, ends, newlines, layout, path)


def _token_mask(a: _U8, path: str) -> NDArray[np.bool_]:
    """True on bytes that belong to a field (not C whitespace)."""
    exotic = np.count_nonzero(a < 9) + np.count_nonzero((a - np.uint8(14)) < 18)
    if not exotic:
        return a > 32
    nul = np.flatnonzero(a == 0)
    if nul.size:
        line = 1 + int(np.count_nonzero(a[: nul[0]] == _NEWLINE))
        raise TrecFormatError(path, line, "NUL byte in line")
    token: NDArray[np.bool_] = ~((a == 32) | ((a - np.uint8(9)) < 5))
    return token


def _tokenize_general(
    data: _U8,
    starts: _I64,
    ends: _I64,
    newlines: _I64,
    layout: Layout,
    path: str,
) -> Chunk:
    """Exact per-line field counts: skip comments (and blank run lines), reject the rest."""
    k = len(layout.fields)
    n_lines = int(newlines.size)
    token_line = np.searchsorted(newlines, starts)
    counts = np.bincount(token_line, minlength=n_lines)
    first_token = np.cumsum(counts) - counts
    has = counts > 0
    line_start = np.concatenate(([0], newlines[:-1] + 1))
    comment = np.zeros(n_lines, dtype=bool)
    heads = starts[first_token[has]]
    is_hash = data[heads] == _HASH
    if not layout.comment_after_space:
        is_hash &= heads == line_start[has]
    comment[has] = is_hash
    bad = ~comment & ((counts < k) if layout.extra_fields_ignored else (counts != k))
    if layout.blank_lines_ok:
        bad &= has
    if np.any(bad):
        j = int(np.argmax(bad))
        expected = f"{k} fields ({' '.join(layout.fields)})"
        if not counts[j]:
            reason = f"blank line; expected {expected}"
        else:  # the line without surrounding whitespace (its first 1000 bytes at most)
            line = data[starts[first_token[j]] : ends[first_token[j] + counts[j] - 1]]
            text = line[:1000].tobytes().decode("utf-8", "replace").strip()
            reason = f"expected {expected}, found {counts[j]}: {quote(text)}"
        raise TrecFormatError(path, 1 + j, reason)
    keep_line = has & ~comment
    keep = keep_line[token_line]
    if layout.extra_fields_ignored:  # the first k tokens of each line
        keep &= np.arange(starts.size) - first_token[token_line] < k
    lines = 1 + np.flatnonzero(keep_line)
    fields = starts[keep].reshape(-1, k), ends[keep].reshape(-1, k)
    return Chunk(data, *fields, lines.astype(np.int64), n_lines)
