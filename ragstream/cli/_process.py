"""Process-wide settings of the one-shot `ragstream eval`, made before numpy is imported
and before the join allocates (no click here: the console script makes them early, see
`ragstream.cli._prefetch`)."""

from __future__ import annotations

import os
import sys

__all__ = ["keep_freed_memory", "one_blas_thread", "prepare"]

_PREPARED = [False]


def prepare() -> None:
    """`one_blas_thread` and `keep_freed_memory`, once a process: the console script makes
    them when it guesses the command (`ragstream.cli._prefetch`), the command otherwise."""
    if _PREPARED[0]:
        return
    _PREPARED[0] = True
    one_blas_thread()
    keep_freed_memory()


def keep_freed_memory() -> None:
    """Ask glibc to serve large arrays from its heap and keep freed memory there.

    The evaluation makes many short-lived arrays of tens of megabytes; by default each is
    a fresh `mmap` whose pages fault in one by one and are returned on free. Reusing the
    heap avoids that (1.3-1.6x on numpy temporaries here). Process-wide, so only the
    command does it, never the library; elsewhere than glibc it does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, (1 << 31) - 1)  # M_TRIM_THRESHOLD (an int)
    except (OSError, AttributeError):
        return


def one_blas_thread() -> None:
    """Start numpy's BLAS (OpenBLAS) with one thread unless the environment says otherwise.

    The evaluation does no matrix products, but OpenBLAS starts a thread per CPU when
    numpy is imported, and those threads spin for a while: 0.1-0.3 s of CPU in a 1.2 s
    command, taken from the scanner's threads. Only before numpy is imported does it
    apply; the command does it, never the library.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
