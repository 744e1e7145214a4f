"""A parsed TREC file as columns: query blocks, document ids as words, one value per line."""

from __future__ import annotations

import dataclasses
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragstream.trec._arrow import read_table_arrow
from ragstream.trec._columns import field_bytes, field_words, parse_decimals
from ragstream.trec._keys import pad_words
from ragstream.trec._tokenize import Chunk, Layout, read_blocks, tokenize
from ragstream.trec.errors import TrecFormatError
from ragstream.trec.records import TrecTable

__all__ = ["Reader", "read_table"]

Reader = Literal["numpy", "arrow"]
"""Which parser reads a file: "numpy" (the default) always uses numpy; "arrow" uses
pyarrow's CSV reader (the optional `fast-eval` extra) on uniformly separated files and
numpy otherwise. Both give the same table; on the 2-vCPU machine of docs/benchmarks.md
pyarrow was not faster overall, so it is opt-in."""

_U64 = NDArray[np.uint64]
_I64 = NDArray[np.int64]


def read_table(
    path: str | os.PathLike[str],
    layout: Layout,
    value: Literal["float", "int"],
    *,
    workers: int | None = None,
    block_bytes: int = 1 << 23,
    reader: Reader = "numpy",
) -> TrecTable:
    """Parse a file, keeping the fields `qid`, `docid` and `score` (run) or `rel` (qrels).

    With `reader="arrow"` a uniformly separated file is read by pyarrow when it is
    installed (see `_arrow`); both readers give the same table.
    Otherwise, and whenever the fast reader declines, blocks of about `block_bytes` are
    parsed by `workers` threads (default: one per CPU, up to 4); numpy releases the GIL, so
    they run in parallel.
    Raises TrecFormatError naming the first malformed line; a file without records is an
    error too.
    """
    name = os.fspath(path)
    if reader == "arrow":
        fast = read_table_arrow(name, layout, value)
        if fast is not None:
            return fast
    n_workers = workers or min(4, os.cpu_count() or 1)
    parts: list[_Block] = []
    lines_before = 0

    def collect(future: Future[_Block]) -> None:
        nonlocal lines_before
        try:
            part = future.result()
        except TrecFormatError as error:  # shift the block-relative line number
            line = None if error.line is None else error.line + lines_before
            raise TrecFormatError(error.path, line, error.reason) from None
        parts.append(part.shifted(lines_before))
        lines_before += part.n_lines

    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        pending: deque[Future[_Block]] = deque()
        for data, size in read_blocks(name, block_bytes):
            pending.append(pool.submit(_parse_block, data, size, layout, value, name))
            if len(pending) > n_workers:  # bounded memory: few blocks in flight
                collect(pending.popleft())
        while pending:
            collect(pending.popleft())
    parts = [part for part in parts if part.docs.shape[0]]
    if not parts:
        raise TrecFormatError(name, None, f"no {layout.kind} lines ({' '.join(layout.fields)})")
    qid_parts: list[_U64] = []
    starts: list[_I64] = []
    offset = 0
    previous: _U64 | None = None
    for part in parts:
        heads = part.heads
        if previous is not None and _same_row(previous, part.qids[0]):
            heads = heads[1:]
            qid_parts.append(part.qids[1:])
        else:
            qid_parts.append(part.qids)
        starts.append(heads + offset)
        previous = part.qids[-1]
        offset += part.docs.shape[0]
    lines = None
    if any(part.lines is not None for part in parts):
        lines = np.concatenate(
            [
                part.lines
                if part.lines is not None
                else np.arange(part.first_line, part.first_line + part.docs.shape[0])
                for part in parts
            ]
        ).astype(np.int64)
    values: NDArray[np.float64] | _I64 = np.concatenate([part.values for part in parts])
    return TrecTable(
        name,
        _stack(qid_parts),
        np.concatenate([*starts, [offset]]).astype(np.int64),
        _stack([part.docs for part in parts]),
        values,
        lines,
    )


@dataclass(frozen=True)
class _Block:
    """The kept columns of one block of records."""

    qids: _U64
    heads: _I64
    docs: _U64
    values: NDArray[np.float64] | _I64
    lines: _I64 | None
    first_line: int
    n_lines: int

    def shifted(self, lines_before: int) -> _Block:
        """The same block with line numbers counted from the start of the file."""
        lines = None if self.lines is None else self.lines + lines_before
        return dataclasses.replace(self, lines=lines, first_line=self.first_line + lines_before)


def _parse_block(
    data: NDArray[np.uint8], size: int, layout: Layout, kind: Literal["float", "int"], path: str
) -> _Block:
    chunk = tokenize(data, size, layout, path)
    if not chunk.size:
        empty = np.zeros((0, 1), dtype=np.uint64)
        no_rows = np.zeros(0, np.int64)
        return _Block(empty, no_rows, empty, np.zeros(0), None, 1, chunk.n_lines)
    qids = field_words(chunk, layout.fields.index("qid"))
    change = np.ones(chunk.size, dtype=bool)
    change[1:] = np.any(qids[1:] != qids[:-1], axis=1)
    heads = np.flatnonzero(change)
    column = layout.fields.index("score" if kind == "float" else "rel")
    return _Block(
        qids[heads],
        heads,
        field_words(chunk, layout.fields.index("docid")),
        _values(chunk, column, kind, layout, path),
        chunk.lines,
        1,
        chunk.n_lines,
    )


def _same_row(a: _U64, b: _U64) -> bool:
    """Two 1-D word rows equal up to zero-word padding."""
    width = max(a.size, b.size)
    return bool(np.array_equal(pad_words(a[None], width), pad_words(b[None], width)))


def _stack(parts: list[_U64]) -> _U64:
    """Concatenate word matrices of different widths (zero words pad, as NUL bytes do)."""
    width = max(p.shape[1] for p in parts)
    return np.concatenate([pad_words(p, width) for p in parts])


def _values(
    chunk: Chunk, column: int, kind: Literal["float", "int"], layout: Layout, path: str
) -> NDArray[np.float64] | _I64:
    floats, slow = parse_decimals(chunk, column, allow_dot=kind == "float")
    values: NDArray[np.float64] | _I64 = floats if kind == "float" else floats.astype(np.int64)
    rows = np.flatnonzero(slow)
    if rows.size:
        texts = field_bytes(chunk, column, rows)
        try:
            values[rows] = texts.astype(values.dtype)
        except (ValueError, OverflowError):
            _raise_first_bad(chunk, rows, texts, kind, layout, path)
    if kind == "float":
        nan = np.flatnonzero(np.isnan(values))
        if nan.size:
            raise TrecFormatError(path, _line(chunk, int(nan[0])), "score is NaN")
    return values


_INT64 = np.iinfo(np.int64)


def _raise_first_bad(
    chunk: Chunk,
    rows: _I64,
    texts: NDArray[np.bytes_],
    kind: Literal["float", "int"],
    layout: Layout,
    path: str,
) -> None:
    what = "score" if kind == "float" else "relevance"
    for row, text in zip(rows.tolist(), texts.tolist(), strict=True):
        shown = text.decode("utf-8", "replace")
        try:
            value = float(text) if kind == "float" else int(text)
        except (ValueError, OverflowError):
            need = "a number" if kind == "float" else "an integer"
            raise TrecFormatError(
                path, _line(chunk, row), f"{what} {shown!r} is not {need}"
            ) from None
        if kind == "int" and not _INT64.min <= value <= _INT64.max:
            raise TrecFormatError(path, _line(chunk, row), f"{what} {shown!r} is out of range")
    raise AssertionError(f"{layout.kind}: a value failed to parse but no line was found")


def _line(chunk: Chunk, row: int) -> int:
    return chunk.first_line + row if chunk.lines is None else int(chunk.lines[row])
