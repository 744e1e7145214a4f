"""N processes of one stage in one consumer group: the streaming benchmark's scale-out rows.

The supported way to scale the agent is several processes in one consumer group (its state
is per partition; replicas' windows are summed by Prometheus). `run_group` starts N
`bench.pipeline_stages STAGE` processes with one group id and drives them over their stdin
and stdout, one line each way per step. STAGE is `pipeline` (the agent) or `baseline` (a
plain `getmany` + `orjson.loads` consumer: the like-for-like reference for a member of the
pipeline's group, N plain consumers sharing the same cores and broker):

1. Each process joins the group (a pipeline builds its engine and source first) and prints
   its partitions (`{"assigned": [...]}`) at every change, without consuming. When the
   assignments are disjoint, non-empty and cover the topic, the parent writes `go` to all
   (time *go*).
2. Each process runs its stage as in the single-process row and prints, after every batch
   applied (a pipeline: committed; a baseline: parsed), the next offset of each partition
   in the batch (`{"progress": ...}`). When every partition is applied up to its end, the
   parent writes `stop`.
3. Each process prints its result: events, first and last batch applied (perf_counter, i.e.
   CLOCK_MONOTONIC on Linux, shared by the processes) and the runs of offsets it applied.

Aggregate throughput = total events / (last applied over all processes - go). Exactly once:
per partition, the runs of all processes tile the offsets [0, end) with no gap or overlap.
CPU from go to stop, in cores (CPU seconds / wall seconds): the whole machine's from
/proc/stat, and the broker's (the benchmark's `java` child) from /proc/PID/stat.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragstream.events import Record

__all__ = ["STAGES", "GroupMember", "offset_problems", "run_group"]

STAGES = ("pipeline", "baseline")
"""The stages that can run as members of a group."""

Args = dict[str, Any]


def _emit(obj: Args) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class GroupMember:
    """One process's side of the protocol: assignment lines, `go`, progress, `stop`."""

    def __init__(self) -> None:
        self.owned: set[int] = set()
        self.assignments: list[tuple[float, list[int]]] = []
        """(perf_counter, partitions owned) after every change."""
        self.runs: dict[int, list[list[int]]] = {}
        """Per partition: runs of consecutive offsets applied, [first, last]."""
        self.go = 0.0

    def assigned(self, partitions: set[int]) -> None:
        self.owned |= partitions
        self._report()

    def revoked(self, partitions: set[int]) -> None:
        self.owned -= partitions
        self._report()

    def _report(self) -> None:
        self.assignments.append((time.perf_counter(), sorted(self.owned)))
        _emit({"assigned": sorted(self.owned)})

    def applied(self, batch: Iterable[Record]) -> None:
        """Called after a batch is applied (a pipeline: committed; a baseline: parsed):
        extend the runs, report the next offsets, so that the parent knows when to stop."""
        ends: dict[int, int] = {}
        for m in batch:
            runs = self.runs.setdefault(m.partition, [])
            if runs and runs[-1][1] + 1 == m.offset:
                runs[-1][1] = m.offset
            else:
                runs.append([m.offset, m.offset])
            ends[m.partition] = m.offset + 1
        if ends:
            _emit({"progress": ends})

    async def run(self, work: Callable[[], Awaitable[None]], stop: Callable[[], None]) -> None:
        """Wait for `go`, then await `work()` until it returns; `stop()` is called on the
        `stop` line (or the end of stdin) and must make `work` return after its batch."""
        loop = asyncio.get_running_loop()
        stdin = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
        await stdin.readline()
        self.go = time.perf_counter()

        async def watch() -> None:
            await stdin.readline()
            stop()

        watcher = asyncio.create_task(watch())
        try:
            await work()
        finally:
            watcher.cancel()

    def result(self) -> Args:
        return {
            "go_received": self.go,
            "assignments": self.assignments,
            "runs": {str(p): runs for p, runs in sorted(self.runs.items())},
        }


def offset_problems(results: Sequence[Args], ends: dict[int, int]) -> list[str]:
    """What breaks exactly-once: per partition, the processes' runs of offsets must tile
    [0, end) (a gap is lost events, an overlap doubled ones)."""
    problems: list[str] = []
    for p, end in sorted(ends.items()):
        runs = sorted(run for r in results for run in r["runs"].get(str(p), []))
        expected = 0
        for first, last in runs:
            if first > expected:
                problems.append(f"partition {p}: offsets {expected}-{first - 1} not applied")
            elif first < expected:
                problems.append(f"partition {p}: offsets {first}-{expected - 1} applied twice")
            expected = max(expected, last + 1)
        if expected != end:
            problems.append(f"partition {p}: applied up to {expected}, produced {end}")
    return problems


def _covers(owned: Sequence[set[int] | None], partitions: int) -> bool:
    """Every process owns partitions, none twice, and together all of them."""
    sets = [s for s in owned if s]
    return len(sets) == len(owned) and sum(map(len, sets)) == partitions == len(set().union(*sets))


async def _lines(i: int, proc: asyncio.subprocess.Process, queue: asyncio.Queue[Any]) -> None:
    assert proc.stdout is not None
    async for line in proc.stdout:
        if line.strip():
            await queue.put((i, json.loads(line)))
    await queue.put((i, None))


async def _next(queue: asyncio.Queue[Any], results: Sequence[Args | None]) -> tuple[int, Args]:
    i, msg = await queue.get()
    if msg is None and results[i] is None:
        raise RuntimeError(f"group process {i + 1} exited before its result")
    return i, msg or {}


@dataclass
class _Progress:
    """What a group run has seen so far (filled as it goes, read when it times out)."""

    n: int
    ends: dict[int, int]
    procs: list[asyncio.subprocess.Process] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    results: list[Args | None] = field(default_factory=list)
    owned: list[set[int] | None] = field(default_factory=list)
    position: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.results = [None] * self.n
        self.owned = [None] * self.n
        self.position = dict.fromkeys(self.ends, 0)

    def __str__(self) -> str:
        owned = [None if s is None else sorted(s) for s in self.owned]
        return (
            f"partitions owned per process {owned}, applied up to {self.position} of "
            f"{self.ends}, results from {[r is not None for r in self.results]}"
        )


async def run_group(stage: str, n: int, args: Args, ends: dict[int, int], limit: float) -> Args:
    """Run `n` processes of `stage` (one of `STAGES`) in one group on a topic whose
    partition `p` ends at `ends[p]`; their results, the go and stop times, and the
    exactly-once check. Past `limit` seconds it fails with what it was waiting for
    (assignments, positions)."""
    if stage not in STAGES:
        raise ValueError(f"stage {stage!r} cannot run in a group; one of {STAGES}")
    state = _Progress(n, ends)
    try:
        async with asyncio.timeout(limit):
            return await _run(state, stage, args)
    except TimeoutError:
        raise RuntimeError(f"the {stage} group did not finish in {limit:.0f} s: {state}") from None
    finally:
        for proc in state.procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        for task in state.tasks:
            task.cancel()


async def _run(state: _Progress, stage: str, args: Args) -> Args:
    n, ends, queue, results, owned = state.n, state.ends, state.queue, state.results, state.owned
    procs, position = state.procs, state.position
    for i in range(n):  # one after the other: each joins once the one before has its share
        cmd = ["-m", "bench.pipeline_stages", stage, json.dumps({**args, "member": i})]
        proc = await asyncio.create_subprocess_exec(
            sys.executable, *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        procs.append(proc)
        state.tasks.append(asyncio.create_task(_lines(i, proc, queue)))
        while owned[i] is None:
            j, msg = await _next(queue, results)
            if "assigned" in msg:
                owned[j] = set(msg["assigned"])
    while not _covers(owned, len(ends)):
        i, msg = await _next(queue, results)
        if "assigned" in msg:
            owned[i] = set(msg["assigned"])
    cpu_go = _cpu_jiffies()
    go = time.perf_counter()
    await _send(procs, b"go\n")
    while any(position[p] < end for p, end in ends.items()):
        _, msg = await _next(queue, results)
        for p, offset in msg.get("progress", {}).items():
            position[int(p)] = max(position[int(p)], offset)
    stop = time.perf_counter()
    busy, total, broker = (b - a for a, b in zip(cpu_go, _cpu_jiffies(), strict=True))
    await _send(procs, b"stop\n")
    while any(r is None for r in results):
        i, msg = await _next(queue, results)
        if "result" in msg:
            results[i] = msg["result"]
    for proc in procs:
        await proc.wait()
    done = [r for r in results if r is not None]
    return {
        "stage": stage,
        "processes": n,
        "go": go,
        "stop": stop,
        "ends": {str(p): e for p, e in ends.items()},
        "members": done,
        "start_partitions": [sorted(s or ()) for s in owned],
        "machine_cores": busy / total * (os.cpu_count() or 1),
        "broker_cores": broker / os.sysconf("SC_CLK_TCK") / (stop - go),
        "problems": offset_problems(done, ends),
    }


def _cpu_jiffies() -> tuple[int, int, int]:
    """Busy and total jiffies of all CPUs, and the CPU jiffies of this process's `java`
    children (the broker)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    total = sum(ticks)
    busy = total - ticks[3] - ticks[4]  # idle, iowait
    broker = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                head, _, rest = f.read().rpartition(")")
        except OSError:
            continue
        fields = rest.split()  # fields[0] is the state (field 3): ppid is field 4
        if head.endswith("(java") and int(fields[1]) == os.getpid():
            broker += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
    return busy, total, broker


async def _send(procs: Sequence[asyncio.subprocess.Process], line: bytes) -> None:
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(line)
    await asyncio.gather(*(p.stdin.drain() for p in procs if p.stdin is not None))
