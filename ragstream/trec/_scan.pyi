"""Types of the compiled scanner built from `_scan.c` (see `ragstream.trec._compiled`)."""

from typing_extensions import Buffer

_Repeat = tuple[int, int, bytes, bytes]

def join(
    qrels: Buffer,
    run: Buffer,
    keep_best: bool,
    workers: int = 1,
    depth: int = 0,
    level: float = ...,
    /,
) -> (
    tuple[
        list[str],
        int,
        int,
        list[tuple[Buffer, Buffer, Buffer, Buffer]],
        Buffer | None,
        _Repeat | None,
        _Repeat | None,
    ]
    | str
):
    """Join a qrels and a run buffer; a str (the reason) when declining."""
