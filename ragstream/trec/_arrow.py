"""An optional fast reader: pyarrow's multithreaded CSV parser, for uniformly separated files.

TREC fields are separated by runs of C whitespace, which a CSV parser does not know. But
most files are *uniform*: every field non-empty, fields joined by one single-byte
delimiter (a space or a tab), lines ended by `\\n`. On such a file splitting at that
delimiter gives exactly the whitespace-run fields, so pyarrow's reader gives the same
records as `ragstream.trec.table`, faster when its threads have free cores. Uniformity is
proved by one streaming pass over the bytes (every byte <= 32 is the delimiter or `\\n`,
no two of them adjacent, none first), the rest by pyarrow itself (k fields on every line)
and by checks of its output (no comment line, no NaN).

`read_table_arrow` returns None whenever the fast reader does not apply -- pyarrow is not
installed, the file is not uniform, it has comments, or pyarrow reports *any* error -- and
the caller then uses the numpy reader, which accepts the general form and names the first
bad line precisely.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ragstream.trec._ids import Ids, concat, from_fields
from ragstream.trec._tokenize import PAD, Layout
from ragstream.trec.records import TrecTable

__all__ = ["arrow_available", "read_table_arrow"]

_I64 = NDArray[np.int64]
_SLICE = 1 << 20  # bytes per step of the uniformity scan: its temporaries stay in cache
_NEWLINE = 10
_HASH = 35
_BOM = b"\xef\xbb\xbf"


def arrow_available() -> bool:
    """True when pyarrow's CSV reader can be imported (the `fast-eval` extra)."""
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return True


def read_table_arrow(path: str, layout: Layout, value: Literal["float", "int"]) -> TrecTable | None:
    """The file's table read by pyarrow, or None when the numpy reader must be used."""
    if not arrow_available():
        return None
    delimiter = _uniform_delimiter(path)
    if delimiter is None:
        return None
    try:
        return _read(path, layout, value, delimiter)
    except Exception:  # any failure of the accelerator: the reference reader decides
        return None


def _uniform_delimiter(path: str) -> str | None:
    """ " " or "\\t" when every byte <= 32 of the file is that delimiter or a newline, no
    two such bytes are adjacent, and the file neither starts nor ends with a delimiter
    (nor starts with a byte-order mark, which pyarrow would drop)."""
    counts = np.zeros(4, dtype=np.int64)  # bytes <= 32, spaces, tabs, newlines
    buffer = np.empty(_SLICE, dtype=np.uint8)
    previous_sep = True  # a separator "before" the file: a leading one counts as adjacent
    last = -1
    with open(path, "rb", buffering=0) as handle:
        while read := handle.readinto(memoryview(buffer)):  # type: ignore[arg-type]
            chunk = buffer[:read]
            if last < 0 and chunk[:3].tobytes() == _BOM:
                return None
            sep = chunk <= 32
            if (previous_sep and sep[0]) or np.any(sep[1:] & sep[:-1]):
                return None
            counts[0] += np.count_nonzero(sep)
            counts[1] += np.count_nonzero(chunk == 32)
            counts[2] += np.count_nonzero(chunk == 9)
            counts[3] += np.count_nonzero(chunk == _NEWLINE)
            previous_sep = bool(sep[-1])
            last = int(chunk[-1])
    if last < 0 or (last <= 32 and last != _NEWLINE):
        return None
    separators, spaces, tabs, newlines = (int(c) for c in counts)
    if separators == spaces + newlines:
        return " "
    if separators == tabs + newlines:
        return "\t"
    return None


def _read(
    path: str, layout: Layout, value: Literal["float", "int"], delimiter: str
) -> TrecTable | None:
    import pyarrow as pa
    from pyarrow import csv

    value_field = "score" if value == "float" else "rel"
    kept = {
        "qid": pa.binary(),
        "docid": pa.binary(),
        value_field: pa.float64() if value == "float" else pa.int64(),
    }
    table = csv.read_csv(
        path,
        read_options=csv.ReadOptions(column_names=list(layout.fields), block_size=1 << 22),
        parse_options=csv.ParseOptions(
            delimiter=delimiter,
            quote_char=False,
            escape_char=False,
            double_quote=False,
            newlines_in_values=False,
            ignore_empty_lines=False,
        ),
        convert_options=csv.ConvertOptions(
            include_columns=list(kept),
            column_types=kept,
            null_values=[],
            true_values=[],
            false_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )
    n = table.num_rows
    if n == 0 or any(table.column(name).null_count for name in kept):
        return None
    heads, qids = _blocks(table.column("qid"))
    if np.any((qids.words[:, 0] >> np.uint64(56)) == _HASH):  # comments: the numpy reader
        return None
    raw = np.concatenate([np.asarray(c) for c in table.column(value_field).chunks])
    values: NDArray[np.float64] | _I64 = (
        raw.astype(np.float64, copy=False) if value == "float" else raw.astype(np.int64, copy=False)
    )
    if value == "float" and np.any(np.isnan(values)):
        return None  # NaN is an error, reported by the numpy reader with its line
    return TrecTable(
        path,
        qids,
        np.append(heads, n).astype(np.int64),
        _words(table.column("docid")),
        values,
        None,
    )


def _blocks(column: Any) -> tuple[_I64, Ids]:
    """First record of each run of equal query ids, and those ids as words."""
    import pyarrow as pa
    import pyarrow.compute as pc

    heads: list[_I64] = []
    firsts: list[Any] = []
    offset = 0
    previous = None
    for chunk in column.chunks:
        n = len(chunk)
        if not n:
            continue
        change = np.ones(n, dtype=bool)
        change[1:] = pc.not_equal(chunk[1:], chunk[:-1]).to_numpy(zero_copy_only=False)
        if previous is not None and chunk[0].as_py() == previous:
            change[0] = False
        local = np.flatnonzero(change)
        heads.append(local + offset)
        firsts.append(chunk.take(pa.array(local)))
        previous = chunk[n - 1].as_py()
        offset += n
    return np.concatenate(heads).astype(np.int64), _words(pa.chunked_array(firsts))


def _words(column: Any) -> Ids:
    """The ids of a binary column (as the numpy reader makes them)."""
    parts = []
    for chunk in column.chunks:
        if not len(chunk):
            continue
        starts, ends = _offsets(chunk)
        base, size = int(starts[0]), int(ends[-1] - starts[0])
        data = np.zeros(size + PAD, dtype=np.uint8)
        data[:size] = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[base : base + size]
        parts.append(from_fields(data, starts - base, ends - starts))
    return concat(parts)


def _offsets(array: Any) -> tuple[_I64, _I64]:
    n = len(array)
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset : array.offset + n + 1]
    return offsets[:-1].astype(np.int64), offsets[1:].astype(np.int64)
