"""The JSONL source: line numbers as offsets, blank lines skipped and counted."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ragstream.sources.jsonl import LineCounts, read_jsonl

_LINES = [
    b'{"a": 1}',
    b"",  # a separator
    b"   \t",
    b'{"a": 2}\r',  # CRLF
    b"\r",
    b"\x0c",  # a form feed is not JSON's white space: a message (the decoder refuses it)
    b"\xef\xbb\xbf",  # a byte order mark alone: a message too
    b' {"a": 3} ',
]


def _file(tmp_path: Path, ending: bytes = b"\n\n") -> Path:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(_LINES) + ending)
    return path


def test_blank_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    counts = LineCounts()
    batches = list(read_jsonl(_file(tmp_path), batch_size=2, counts=counts))
    messages = [m for batch in batches for m in batch]
    assert [len(b) for b in batches] == [2, 2, 1]
    assert [(m.offset, m.value) for m in messages] == [
        (1, b'{"a": 1}'),
        (4, b'{"a": 2}'),
        (6, b"\x0c"),
        (7, b"\xef\xbb\xbf"),
        (8, b' {"a": 3} '),
    ]
    # the final newline ends line 8; the empty line after it is line 9, blank
    assert counts == LineCounts(lines=9, blank=4, bytes=_file(tmp_path).stat().st_size)
    assert counts.lines == len(messages) + counts.blank


def test_a_file_without_a_final_newline(tmp_path: Path) -> None:
    counts = LineCounts()
    messages = [m for b in read_jsonl(_file(tmp_path, b""), batch_size=2, counts=counts) for m in b]
    assert len(messages) == 5
    assert counts == LineCounts(lines=8, blank=3, bytes=_file(tmp_path, b"").stat().st_size)


def test_reading_resumes_where_the_counts_stand_and_digests_every_byte(tmp_path: Path) -> None:
    path = _file(tmp_path)
    whole = [(m.offset, m.value) for b in read_jsonl(path, batch_size=2) for m in b]
    counts, digest = LineCounts(), hashlib.sha256()
    batches = read_jsonl(path, batch_size=2, counts=counts, digest=digest)
    first = [(m.offset, m.value) for m in next(batches)]
    batches.close()
    assert counts == LineCounts(lines=4, blank=2, bytes=len(b"\n".join(_LINES[:4]) + b"\n"))
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()[: counts.bytes]).hexdigest()
    rest = [(m.offset, m.value) for b in read_jsonl(path, 2, counts, digest) for m in b]
    assert first + rest == whole
    assert counts == LineCounts(lines=9, blank=4, bytes=path.stat().st_size)
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
