"""Vectorized splitting of TREC text files into whitespace-separated fields, chunk by chunk.

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

from ragstream.trec.errors import TrecFormatError, quote

__all__ = ["PAD", "Chunk", "Layout", "read_blocks", "tokenize"]

PAD = 64
"""Zero bytes after each chunk, so fixed-width views of its last fields stay in bounds."""

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
    """The fields of the records of one block of a file.

    Field bounds are kept either as (N, K) start and end offsets, or -- for single-spaced
    lines -- as the (N, K - 1) separator offsets with each line's start and end, from which
    a field's bounds are derived when asked for.
    """

    data: _U8
    """The block's bytes followed by PAD zero bytes."""
    bounds: tuple[_I64, _I64] | tuple[_I64, _I64, _I64]
    """(starts, ends), each (N, K); or (line starts, separators, line ends)."""
    lines: _I64 | None
    """(N,) 1-based line number of each record, or None: consecutive from `first_line`."""
    first_line: int
    """1-based number of the block's first line."""
    n_lines: int
    """Lines in the block, including skipped ones."""

    @property
    def size(self) -> int:
        """Number of records."""
        return int(self.bounds[0].shape[0])

    def field(self, column: int) -> tuple[_I64, _I64]:
        """(N,) start and end offsets (end exclusive) of field `column` of each record."""
        if len(self.bounds) == 2:
            starts, ends = self.bounds
            return starts[:, column], ends[:, column]
        line_starts, separators, line_ends = self.bounds
        last = separators.shape[1]
        start = line_starts if column == 0 else separators[:, column - 1] + 1
        end = line_ends if column == last else separators[:, column]
        return start, end


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
    first_line = 1
    a = data[:size]
    k = len(layout.fields)
    simple = _single_spaced(a, k)
    if simple is not None:
        return Chunk(data, simple, None, first_line, int(simple[0].size))
    token = _token_mask(a, path, first_line)
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
        bounds = (starts.reshape(-1, k), ends.reshape(-1, k))
        return Chunk(data, bounds, None, first_line, n_lines)
    return _tokenize_general(data, size, starts, ends, newlines, layout, path, first_line)


def _single_spaced(a: _U8, k: int) -> tuple[_I64, _I64, _I64] | None:
    """(line starts, separators, line ends) when every line is k fields joined by single
    spaces and ends with a newline (the usual form), found from spaces and newlines alone.

    Proof of the form: there are k - 1 spaces per newline and no other byte <= 32; taking
    the i-th group of k - 1 spaces as line i's separators, every field is non-empty (the
    first starts before the first space, spaces are 2 or more apart, the last space is 2
    or more before the newline), which can only hold if each group lies inside its line.
    """
    if a[-1] != _NEWLINE or a[0] <= 32:
        return None
    spaces = np.flatnonzero(a == 32)
    newlines = np.flatnonzero(a == _NEWLINE)
    n = newlines.size
    if spaces.size != (k - 1) * n or np.count_nonzero(a <= 32) != spaces.size + n:
        return None
    separators = spaces.reshape(n, k - 1)
    line_starts = np.empty(n, dtype=np.int64)
    line_starts[0] = 0
    line_starts[1:] = newlines[:-1] + 1
    if k > 1 and not (
        np.all(separators[:, 0] > line_starts)
        and np.all(np.diff(spaces) >= 2)
        and np.all(separators[:, -1] + 1 < newlines)
    ):
        return None
    if np.any(a[line_starts] == _HASH):
        return None
    return line_starts, separators, newlines


def _token_mask(a: _U8, path: str, first_line: int) -> NDArray[np.bool_]:
    """True on bytes that belong to a field (not C whitespace)."""
    exotic = np.count_nonzero(a < 9) + np.count_nonzero((a - np.uint8(14)) < 18)
    if not exotic:
        return a > 32
    nul = np.flatnonzero(a == 0)
    if nul.size:
        line = first_line + int(np.count_nonzero(a[: nul[0]] == _NEWLINE))
        raise TrecFormatError(path, line, "NUL byte in line")
    token: NDArray[np.bool_] = ~((a == 32) | ((a - np.uint8(9)) < 5))
    return token


def _tokenize_general(
    data: _U8,
    size: int,
    starts: _I64,
    ends: _I64,
    newlines: _I64,
    layout: Layout,
    path: str,
    first_line: int,
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
        raise TrecFormatError(path, first_line + j, reason)
    keep_line = has & ~comment
    keep = keep_line[token_line]
    if layout.extra_fields_ignored:  # the first k tokens of each line
        keep &= np.arange(starts.size) - first_token[token_line] < k
    lines = first_line + np.flatnonzero(keep_line)
    bounds = (starts[keep].reshape(-1, k), ends[keep].reshape(-1, k))
    return Chunk(data, bounds, lines.astype(np.int64), first_line, n_lines)
