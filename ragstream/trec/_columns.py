"""Fields as ids and as numbers, without a Python loop over lines.

Ids become rows of big-endian 64-bit words (`_ids`), gathered with one unaligned load per
word from a strided view of the block.

Numbers are parsed column by column (the i-th byte of every field at once). A decimal such
as `-12.375` takes Clinger's exact fast path: its digits form an integer m < 2^53 and the
value is m / 10^f for f <= 22 fraction digits; both operands are exact doubles, so the one
IEEE division gives the correctly rounded value, the same as C `strtod` and Python
`float`. Other spellings (exponents, inf, very long mantissas) are marked for the caller,
which converts them with Python's rules.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragstream.trec._ids import Ids, from_fields, loads
from ragstream.trec._tokenize import Chunk

__all__ = ["field_bytes", "field_ids", "parse_decimals"]

_U64 = NDArray[np.uint64]
_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]
_BOOL = NDArray[np.bool_]
_POW10 = np.array([10.0**i for i in range(23)], dtype=np.float64)
_ONES = 0x0101010101010101


def _lengths(chunk: Chunk, column: int) -> tuple[_I64, _I64]:
    starts, ends = chunk.field(column)
    return starts, ends - starts


def field_ids(chunk: Chunk, column: int) -> Ids:
    """The ids in field `column` of each record."""
    starts, lengths = _lengths(chunk, column)
    return from_fields(chunk.data, starts, lengths)


def field_bytes(chunk: Chunk, column: int, rows: _I64) -> NDArray[np.bytes_]:
    """Field `column` of some records as a numpy bytes array, as wide as the longest (for
    slow paths: the caller gives short fields only)."""
    starts, lengths = _lengths(chunk, column)
    starts, lengths = starts[rows], lengths[rows]
    width = max(1, int(lengths.max()) if lengths.size else 1)
    index = starts[:, None] + np.arange(width)
    np.minimum(index, chunk.data.size - 1, out=index)
    matrix = chunk.data[index]
    matrix *= np.arange(width)[None, :] < lengths[:, None]
    texts: NDArray[np.bytes_] = matrix.view(f"S{width}").ravel()
    return texts


def _eight_digits(packed: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The 8-digit number whose digit values (0-9) are the bytes of each word, first byte
    most significant (SWAR: pairs, then quads, then the whole word, in three steps)."""
    value = (packed * np.uint64(2561)) >> np.uint64(8)
    value = ((value & np.uint64(0x00FF00FF00FF00FF)) * np.uint64(6553601)) >> np.uint64(16)
    quads = np.uint64(0x0000FFFF0000FFFF)
    return ((value & quads) * np.uint64(42949672960001)) >> np.uint64(32)


def parse_decimals(chunk: Chunk, column: int, allow_dot: bool) -> tuple[_F64, _BOOL]:
    """Values of plain decimals `[+-]digits[.digits]` of at most 8 bytes; the mask marks
    the rows not parsed (longer or other spellings). With `allow_dot=False`, integers only.

    Each field is one 8-byte load seen as 8 byte columns. With the dot at byte p and the
    field length L, the digits before the dot read as a fixed 8-digit number A, those after
    it as B (both read from the bytes with SWAR arithmetic), and the mantissa is
    A / 10^(8-L+1) + B / 10^(8-L): exact integer arithmetic in doubles (everything is below
    10^8), then one correctly rounded division by 10^f.
    """
    starts, lengths = _lengths(chunk, column)
    n = starts.size
    raw = loads(chunk.data)[starts].view(np.uint8).reshape(n, 8)  # bytes in field order
    live = np.arange(8) < lengths[:, None]
    field = raw * live
    digit = field - np.uint8(48)
    is_digit = digit < 10
    is_dot = field == 46
    sign = (field[:, 0] == 45) | (field[:, 0] == 43)
    allowed = is_digit | is_dot | ~live
    allowed[:, 0] |= sign
    ok = allowed.view(np.uint64).ravel() == np.uint64(_ONES)
    ok &= lengths <= 8
    digits64 = is_digit.view(np.uint64).ravel()
    dots64 = is_dot.view(np.uint64).ravel()
    n_dots = np.bitwise_count(dots64)
    ok &= (np.bitwise_count(digits64) >= 1) & (n_dots <= (1 if allow_dot else 0))
    after = ~((dots64 << np.uint64(8)) - np.uint64(1))  # bytes after the dot (none if none)
    before = ~after & ~dots64
    fraction = np.bitwise_count(digits64 & after).astype(np.int64)
    digit *= is_digit
    digits = digit.view(np.uint64).ravel()
    ones = np.uint64(_ONES)
    high = _eight_digits(digits & (before & ones) * np.uint64(0xFF))
    low = _eight_digits(digits & (after & ones) * np.uint64(0xFF))
    length = np.minimum(lengths, 8)
    mantissa = high.astype(np.float64) / _POW10[8 - length + n_dots]
    mantissa += low.astype(np.float64) / _POW10[8 - length]
    values = mantissa / _POW10[fraction]
    np.negative(values, out=values, where=field[:, 0] == 45)
    return values, ~ok
