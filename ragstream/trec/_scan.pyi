"""Types of the compiled scanner built from `_scan.c` (see `ragstream.trec._compiled`)."""

from typing_extensions import Buffer

_Repeat = tuple[int, int, bytes, bytes]

class Cut:
    """How much of each ranking a join keeps; `set` changes it while a join runs."""

    def __init__(self, depth: int = 0, level: float = ...) -> None: ...
    def set(self, depth: int, level: float = ..., /) -> None: ...
    @property
    def depth(self) -> int: ...
    @property
    def level(self) -> float: ...

def join(
    qrels: Buffer,
    run: Buffer,
    keep_best: bool,
    workers: int = 1,
    cut: Cut | None = None,
    mapped: bool = False,
    /,
) -> (
    tuple[
        tuple[str, ...],
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
