from typing_extensions import Buffer

FAMILIES: tuple[str, ...]
"""The families the compiled kernels know, in the order of their codes."""

def ragged(
    rel: Buffer,
    rel_offsets: Buffer,
    judged: Buffer,
    judged_offsets: Buffer,
    codes: bytes,
    ks: Buffer,
    threshold: float,
    discount: Buffer,
    out: Buffer,
    start: int,
    stop: int,
    /,
) -> bool:
    """The metrics `codes` (indices into FAMILIES) with cutoffs `ks` (int64, 0 for none) of
    the CSR rows start..stop, written to `out` (float64, metric after metric); False when
    a grade is not finite."""

def kernel(codes: bytes, ks: Buffer, threshold: float, discount: Buffer, /) -> object:
    """The same metrics for other extensions to evaluate one query at a time: a capsule
    holding a `RaggedKernel` (`_ragged.h`)."""
