"""The numpy reader of TREC files: a parsed file as columns (query blocks, document ids,
one value per line).

Qrels: `qid iter docid rel` per line, as trec_eval reads them.

`iter` is ignored. `rel` is an integer grade; a negative grade means "in the pool but not
judged" to trec_eval: such a document is neither relevant nor gains anything. Lines whose
first byte is `#` are comments. Blank lines and lines with another number of fields (more
than four too) are errors, as in trec_eval. A document judged twice for one query is an
error too (trec_eval stops on it; pytrec_eval's parser asserts).

Runs: `qid Q0 docid rank score tag` per line, as trec_eval reads them.

Only qid, docid and score are used: trec_eval ranks by score (descending, ties by docid
descending in byte order) and ignores the rank column, so its content is not checked; the
Q0 and tag columns are not checked either. Scores are any float spelling Python accepts
(`-3`, `0.25`, `1e-05`, `inf`); NaN is an error. Blank lines and lines starting with `#`
(after optional whitespace) are skipped, as trec_eval does. Every other line must have
at least six fields; whatever follows the sixth (the tag) is ignored, as trec_eval does.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ragstream.trec._ids import PAD, Ids, concat, from_fields
from ragstream.trec._tokenize import Chunk, Layout, read_blocks, tokenize
from ragstream.trec.errors import TrecFormatError, quote

__all__ = ["QRELS_LAYOUT", "RUN_LAYOUT", "TrecTable", "read_qrels", "read_run", "read_table"]

_U64 = NDArray[np.uint64]
_I64 = NDArray[np.int64]


QRELS_LAYOUT = Layout(
    kind="qrels",
    fields=("qid", "iter", "docid", "rel"),
    blank_lines_ok=False,
    comment_after_space=False,
    extra_fields_ignored=False,
)
"""The shape of a qrels line."""


RUN_LAYOUT = Layout(
    kind="run",
    fields=("qid", "Q0", "docid", "rank", "score", "tag"),
    blank_lines_ok=True,
    comment_after_space=True,
    extra_fields_ignored=True,
)
"""The shape of a run line."""


@dataclass(frozen=True)
class TrecTable:
    """The records of one qrels or run file, in file order.

    Consecutive records with the same query id form a *block*; files are normally one
    block per query, so query ids are kept once per block, not once per line.
    """

    path: str
    """The file, as given (for messages)."""
    qids: Ids
    """(B,) the query id of each block."""
    block_starts: _I64
    """(B + 1,) first record of each block, then the number of records."""
    docs: Ids
    """(N,) the document id of each record."""
    values: NDArray[np.float64] | _I64
    """(N,) the score (run, float64) or relevance grade (qrels, int64) of each record."""
    lines: _I64 | None
    """(N,) 1-based line number of each record; None when record i is on line i + 1."""

    @property
    def size(self) -> int:
        """Number of records."""
        return self.docs.size

    def line(self, record: int) -> int:
        """The 1-based line number of a record."""
        return record + 1 if self.lines is None else int(self.lines[record])


def read_qrels(path: str | os.PathLike[str]) -> TrecTable:
    """Parse a qrels file; `values` are the int64 grades. Raises TrecFormatError."""
    return read_table(path, QRELS_LAYOUT, "int")


def read_run(path: str | os.PathLike[str]) -> TrecTable:
    """Parse a run file; `values` are the float64 scores. Raises TrecFormatError."""
    return read_table(path, RUN_LAYOUT, "float")


def read_table(
    path: str | os.PathLike[str],
    layout: Layout,
    value: Literal["float", "int"],
    *,
    workers: int | None = None,
    block_bytes: int = 1 << 23,
) -> TrecTable:
    """Parse a file, keeping the fields `qid`, `docid` and `score` (run) or `rel` (qrels).

    Blocks of about `block_bytes` are parsed by `workers` threads (default: one per CPU, up
    to 4); numpy releases the GIL, so they run in parallel.
    Raises TrecFormatError naming the first malformed line; a file without records is an
    error too.
    """
    name = os.fspath(path)
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
    parts = [part for part in parts if part.docs.size]
    if not parts:
        raise TrecFormatError(name, None, f"no {layout.kind} lines ({' '.join(layout.fields)})")
    qid_parts: list[Ids] = []
    starts: list[_I64] = []
    offset = 0
    previous: bytes | None = None
    for part in parts:
        heads = part.heads
        if previous is not None and previous == part.qids.text(0):  # the block goes on
            heads = heads[1:]
            qid_parts.append(part.qids.take(np.arange(1, part.qids.size)))
        else:
            qid_parts.append(part.qids)
        starts.append(heads + offset)
        previous = part.qids.text(part.qids.size - 1)
        offset += part.docs.size
    lines = None
    records_before = np.cumsum([0] + [part.docs.size for part in parts[:-1]])
    consecutive = all(  # record i on line i + 1 (a block of only comments breaks it too)
        part.lines is None and part.first_line == before + 1
        for part, before in zip(parts, records_before.tolist(), strict=True)
    )
    if not consecutive:
        lines = np.concatenate(
            [
                part.lines
                if part.lines is not None
                else np.arange(part.first_line, part.first_line + part.docs.size)
                for part in parts
            ]
        ).astype(np.int64)
    values: NDArray[np.float64] | _I64 = np.concatenate([part.values for part in parts])
    return TrecTable(
        name,
        concat(qid_parts),
        np.concatenate([*starts, [offset]]).astype(np.int64),
        concat([part.docs for part in parts]),
        values,
        lines,
    )


@dataclass(frozen=True)
class _Block:
    """The kept columns of one block of records."""

    qids: Ids
    heads: _I64
    docs: Ids
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
        no_rows = np.zeros(0, np.int64)
        empty = from_fields(np.zeros(PAD, dtype=np.uint8), no_rows, no_rows)
        return _Block(empty, no_rows, empty, np.zeros(0), None, 1, chunk.n_lines)
    qids = chunk.ids(layout.fields.index("qid"))
    heads = _block_heads(qids)
    column = layout.fields.index("score" if kind == "float" else "rel")
    return _Block(
        qids.take(heads),
        heads,
        chunk.ids(layout.fields.index("docid")),
        _values(chunk, column, kind, path),
        chunk.lines,
        1,
        chunk.n_lines,
    )


def _block_heads(qids: Ids) -> _I64:
    """The first record of each run of equal query ids."""
    words = qids.words
    change = np.ones(qids.size, dtype=bool)
    change[1:] = np.any(words[1:] != words[:-1], axis=1)
    if qids.long_rows.size:  # next to a long id, equal words do not prove equal ids
        rows = np.union1d(qids.long_rows, qids.long_rows + 1)
        rows = rows[(rows > 0) & (rows < qids.size)]
        rows = rows[~change[rows]]
        texts = qids.texts(rows)
        before = qids.texts(rows - 1)
        change[rows] = np.array([a != b for a, b in zip(texts, before, strict=True)], dtype=bool)
    heads: _I64 = np.flatnonzero(change)
    return heads


def _values(
    chunk: Chunk, column: int, kind: Literal["float", "int"], path: str
) -> NDArray[np.float64] | _I64:
    """The column's numbers, converted as Python's float() and int() convert them."""
    values: NDArray[np.float64] | _I64 = (
        np.empty(chunk.size, np.float64) if kind == "float" else np.empty(chunk.size, np.int64)
    )
    starts, ends = chunk.field(column)
    wide = ends - starts > _WIDE
    short, long = np.flatnonzero(~wide), np.flatnonzero(wide)
    bad: list[tuple[int, bytes, str]] = []
    if short.size:
        texts = chunk.texts(column, short)
        try:
            values[short] = texts.astype(values.dtype)
        except (ValueError, OverflowError):
            bad.append(_first_bad(short, texts, kind))
    for row in long.tolist():  # numpy's conversion of wide strings needs 100x their size
        text = chunk.data[starts[row] : ends[row]].tobytes()
        try:
            values[row] = float(text) if kind == "float" else int(text)
        except (ValueError, OverflowError) as error:
            bad.append((row, text, _reason(error, text, kind)))
            break
    if bad:
        row, text, reason = min(bad)
        what = "score" if kind == "float" else "relevance"
        raise TrecFormatError(path, _line(chunk, row), f"{what} {quote(text)} {reason}")
    if kind == "float":
        nan = np.flatnonzero(np.isnan(values))
        if nan.size:
            raise TrecFormatError(path, _line(chunk, int(nan[0])), "score is NaN")
    return values


_DIGITS = re.compile(rb"[+-]?[0-9]+")
_WIDE = 64  # longer fields are converted one by one


def _first_bad(
    rows: _I64, texts: NDArray[np.bytes_], kind: Literal["float", "int"]
) -> tuple[int, bytes, str]:
    """(row, text, reason) of the first text numpy cannot convert, found by bisection
    with the same conversion."""
    dtype = np.float64 if kind == "float" else np.int64
    good, bad = 0, texts.size  # texts[:good] convert, texts[:bad] do not
    while bad - good > 1:
        middle = (good + bad) // 2
        try:
            texts[good:middle].astype(dtype)
            good = middle
        except (ValueError, OverflowError):
            bad = middle
    text = bytes(texts[good])
    try:
        texts[good : good + 1].astype(dtype)
    except (ValueError, OverflowError) as error:
        return int(rows[good]), text, _reason(error, text, kind)
    raise AssertionError("the conversion failed, then succeeded")  # pragma: no cover


def _reason(error: Exception, text: bytes, kind: Literal["float", "int"]) -> str:
    """Why a field is not a value (numpy converts as Python's float() and int() do)."""
    if isinstance(error, OverflowError):  # beyond int64
        return "is out of range"
    if kind == "int" and _DIGITS.fullmatch(text) is not None:  # beyond what int() converts
        return "is out of range"
    return "is not a number" if kind == "float" else "is not an integer"


def _line(chunk: Chunk, row: int) -> int:
    return row + 1 if chunk.lines is None else int(chunk.lines[row])
