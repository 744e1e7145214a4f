"""Types of the compiled reader built from `_trec_reader.c` (see `ragstream.trec._compiled`)."""

from typing_extensions import Buffer

_Repeat = tuple[int, int, bytes, bytes]

class Cut:
    """How much of each ranking a join keeps, and the kernel (a capsule of
    `ragstream.metrics._ragged.kernel`) that evaluates it; `set` changes them while a join
    runs (the kernel is set once; None leaves it)."""

    def __init__(self, depth: int = 0, level: float = ..., kernel: object = None) -> None: ...
    def set(self, depth: int, level: float = ..., kernel: object = None, /) -> None: ...
    @property
    def depth(self) -> int: ...
    @property
    def level(self) -> float: ...
    @property
    def kernel(self) -> object: ...

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
        Buffer | None,
    ]
    | str
):
    """Join a qrels and a run buffer; a str (the reason) when declining."""
