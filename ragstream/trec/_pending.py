"""A compiled join begun before the metrics are known (no numpy here).

`ragstream eval` imports numpy and the metric registry before it knows the metrics, and so
how much of each ranking to keep (`ranking_depth`). It starts the join first, in a thread
(`start_join(..., background=True)`): the scanner's own threads read the files without the
GIL while the command imports, and `cut` tells them the depth as soon as it is known, with
the metrics' compiled kernel: from then on each query is evaluated as soon as it is joined
(`ragstream.trec._scan`). Rankings joined before keep all their grades, which give the same
values, and are evaluated when their thread ends. Without `background`, the join runs in
`result`, after `cut`.

The files are memory-mapped here, and the mappings stay open until the join is done. The
scanner's threads map in the pages of the pieces they read, and drop the run's once read
(`ragstream.trec._scan.join`'s `mapped`), so that no thread maps the whole run in before
reading and nothing is left to unmap at the end.
"""

from __future__ import annotations

import math
import mmap
import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer

    _Repeat = tuple[int, int, bytes, bytes]  # first line, repeated line, query id, document id
    _Buffers = tuple[Buffer, Buffer, Buffer, Buffer]  # rel, rel_offsets, judged, judged_offsets
    Out = tuple[
        tuple[str, ...],
        int,
        int,
        list[_Buffers] | None,
        Buffer | None,
        _Repeat | None,
        _Repeat | None,
        Buffer | None,
    ]  # fmt: skip

__all__ = ["AVAILABLE", "PendingJoin", "default_workers", "start_join", "usable_cpus"]

try:
    from ragstream.trec import _scan as _compiled_scan
except ImportError:  # not built (no C compiler at install time): the numpy path serves
    _compiled_scan = None  # type: ignore[assignment]

AVAILABLE: bool = _compiled_scan is not None
"""True when the extension was built."""

_SMALL = 1 << 20


class PendingJoin:
    """A join of two files, running (`background`) or to run in `result`."""

    def __init__(
        self,
        qrels: str,
        run: str,
        keep_best: bool,
        workers: int | None,
        background: bool,
    ) -> None:
        assert _compiled_scan is not None  # start_join checks it
        self.keep_best = keep_best
        self._paths = (qrels, run)
        self._cut = _compiled_scan.Cut()
        self._workers = workers
        self._out: Out | str | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        if background:
            # a daemon: a command that stops early (a bad metric name) does not wait for it
            self._thread = threading.Thread(target=self._run, name="ragstream-join", daemon=True)
            self._thread.start()

    def cut(self, depth: int, level: float = math.inf, kernel: object = None) -> None:
        """Keep of the rankings joined from now on their first `depth` grades and on to
        their first grade >= `level` (depth 0: all of them); with `kernel` (a plan's,
        `ragstream.metrics.ragged`; set once), evaluate every ranking instead of keeping
        its grades: those joined from now on at once, the others at the end."""
        self._cut.set(depth, level, kernel)

    def result(self) -> Out | str | None:
        """The scanner's output (see `ragstream.trec._scan.join`), once the join is done;
        None when a file could not be memory-mapped (empty, missing, a pipe); the join's
        exception, if it raised one."""
        if self._thread is None:
            self._run()
        else:
            self._done.wait()
        if self._error is not None:
            raise self._error
        return self._out

    def _run(self) -> None:
        assert _compiled_scan is not None
        maps: list[mmap.mmap] = []
        try:
            for path in self._paths:
                mapped = _map(path)
                if mapped is None:
                    return
                maps.append(mapped)
            qrels, run = maps
            workers = default_workers(len(run)) if self._workers is None else self._workers
            self._out = _compiled_scan.join(qrels, run, self.keep_best, workers, self._cut, True)
        except BaseException as error:  # handed to the caller of result()
            self._error = error
        finally:
            # the output holds no pointer into the files: the caller goes on while a
            # background join unmaps them
            self._done.set()
            for mapped in maps:
                mapped.close()


def start_join(
    qrels: str | os.PathLike[str],
    run: str | os.PathLike[str],
    *,
    keep_best: bool,
    workers: int | None = None,
    background: bool = False,
) -> PendingJoin | None:
    """A join of the files, begun in a thread with `background`; None when the scanner is
    not built. Each file is read in `workers` parts at the same time (default:
    `default_workers`; the scanner clamps it to 1-64)."""
    if _compiled_scan is None:
        return None
    return PendingJoin(os.fspath(qrels), os.fspath(run), keep_best, workers, background)


def default_workers(run_bytes: int) -> int:
    """Threads for a run of this size: one per CPU this process may use, one for runs
    under 1 MiB (where starting threads costs more than it saves)."""
    return 1 if run_bytes < _SMALL else usable_cpus()


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _map(path: str) -> mmap.mmap | None:
    """The file mapped read-only and shared (the scanner maps its pages in), or None."""
    try:
        with open(path, "rb") as handle:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, OverflowError):  # missing, a directory, empty, too large
        return None
