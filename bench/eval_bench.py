"""Benchmark of `ragstream eval` against pytrec_eval and ranx on the same TREC files.

Usage: `python -m bench.eval_bench [--queries N] [--docs D]` (or `scripts/bench.sh eval`).

Each tool runs in its own fresh Python process that times its whole flow -- parse both
files, then compute the per-query metrics -- and reports its peak memory (`ru_maxrss`).
`ragstream` is timed three times: the library function `evaluate_files` inside a worker
(by default, i.e. with the compiled scanner `ragstream.trec._trec_reader`; then with the numpy
path, `engine="numpy"`), and the `ragstream eval` command run as a subprocess of a worker
(default path; wall time, interpreter start-up and imports included).
ranx compiles its kernels with numba on first use; its worker times parsing, the first
(cold) `evaluate` call, and a second (warm) call on the same objects: "ranx (warm)" is
parse + warm compute, what a long-lived process would pay after the first file.
Per-query values of every tool are compared with pytrec_eval (trec_eval's C code): the
largest absolute difference is printed for each. Then NIST's trec_eval program runs
(`trec_eval -q`, fetched by scripts/trec_eval.sh; skip with --no-trec-eval) and its output
is compared byte for byte with `ragstream eval -q --format trec` on the same files.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np

from bench.eval_data import generate
from ragstream.metrics import trec_name
from ragstream.trec import DEFAULT_METRICS

__all__ = ["main"]

METRICS = list(DEFAULT_METRICS)
_PYTREC = {m: trec_name(m) for m in METRICS}
_MEASURES = ("recip_rank", "P.5,10", "recall.5,10", "ndcg_cut.5,10")
"""METRICS in trec_eval's -m syntax (pytrec_eval takes the same)."""
_RANX = {m: ("mrr" if m == "rr" else m) for m in METRICS}
_DATA = Path(__file__).resolve().parent / ".data"

Values = dict[str, dict[str, float]]  # metric -> qid -> value


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _work_ragstream(qrels: str, run: str) -> tuple[dict[str, float], Values]:
    from ragstream.trec._compiled import AVAILABLE

    if not AVAILABLE:
        raise SystemExit("ragstream.trec._trec_reader is not built: run `pip install -e .`")
    return _evaluate(qrels, run, "compiled")


def _work_ragstream_numpy(qrels: str, run: str) -> tuple[dict[str, float], Values]:
    return _evaluate(qrels, run, "numpy")


def _evaluate(
    qrels: str, run: str, engine: Literal["compiled", "numpy"]
) -> tuple[dict[str, float], Values]:
    from ragstream.trec import evaluate_files

    start = time.perf_counter()
    result = evaluate_files(qrels, run, METRICS, engine=engine)
    seconds = time.perf_counter() - start
    values = {m: dict(zip(result.qids, result.per_query[m].tolist(), strict=True)) for m in METRICS}
    return {"seconds": seconds}, values


def _work_pytrec(qrels: str, run: str) -> tuple[dict[str, float], Values]:
    import pytrec_eval

    start = time.perf_counter()
    with open(qrels) as f:
        qrel = pytrec_eval.parse_qrel(f)
    with open(run) as f:
        parsed = pytrec_eval.parse_run(f)
    raw = pytrec_eval.RelevanceEvaluator(qrel, set(_MEASURES)).evaluate(parsed)
    seconds = time.perf_counter() - start
    values = {m: {q: v[_PYTREC[m]] for q, v in raw.items()} for m in METRICS}
    return {"seconds": seconds}, values


def _work_ranx(qrels: str, run: str) -> tuple[dict[str, float], Values]:
    import ranx

    metrics = list(_RANX.values())
    start = time.perf_counter()
    q = ranx.Qrels.from_file(qrels, kind="trec")
    r = ranx.Run.from_file(run, kind="trec")
    parsed = time.perf_counter()
    ranx.evaluate(q, r, metrics, make_comparable=True)  # first call: numba compiles
    done = time.perf_counter()
    ranx.evaluate(q, r, metrics, make_comparable=True)  # compiled: the warm compute
    warm = time.perf_counter() - done
    timings = {
        "seconds": done - start,
        "parse": parsed - start,
        "compute_cold": done - parsed,
        "compute_warm": warm,
        "seconds_warm": parsed - start + warm,
    }
    values = {m: {qid: float(v) for qid, v in r.scores[_RANX[m]].items()} for m in METRICS}
    return timings, values


def _worker(tool: str, qrels: str, run: str, out: str) -> None:
    if tool in _TEXT_WORKERS:
        timings = _TEXT_WORKERS[tool](qrels, run, Path(out).with_suffix(".txt"))
        values: Values = {}
    else:
        timings, values = _WORKERS[tool](qrels, run)
    timings["peak_mb"] = _peak_mb()
    Path(out).write_text(json.dumps({"timings": timings, "values": values}))


def _spawn(tool: str, qrels: Path, run: Path, scratch: Path) -> dict[str, Any]:
    out = scratch / f"{tool}.json"
    command = [sys.executable, "-m", "bench.eval_bench", "--worker", tool]
    subprocess.run([*command, str(qrels), str(run), str(out)], check=True)
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def _eval_args(qrels: str, run: str) -> list[str]:
    return ["-m", "ragstream", "eval", "--qrels", qrels, "--run", run]


def _text_cli_table(qrels: str, run: str, text: Path) -> dict[str, float]:
    """Wall time of the `ragstream eval` command; its peak memory is this worker's only
    child's (RUSAGE_CHILDREN)."""
    return _timed_child(_eval_args(qrels, run), text)


def _text_cli_baseline(qrels: str, run: str, text: Path) -> dict[str, float]:
    """The same command from another source tree (`--baseline`), run there so that its
    `ragstream` package is the one imported."""
    tree = os.environ[_BASELINE]
    env = dict(os.environ, PYTHONPATH=tree)
    return _timed_child(_eval_args(qrels, run), text, cwd=tree, env=env)


def _text_cli(qrels: str, run: str, text: Path) -> dict[str, float]:
    """`ragstream eval -q --format trec`, its output kept to compare with trec_eval's."""
    return _timed_child([*_eval_args(qrels, run), "-q", "--format", "trec"], text)


def _text_trec_eval(qrels: str, run: str, text: Path) -> dict[str, float]:
    """NIST's trec_eval program (C), `trec_eval -q` on the same measures."""
    from tests.support import fetch_trec_eval

    measures = [arg for measure in _MEASURES for arg in ("-m", measure)]
    binary = str(fetch_trec_eval())
    return _timed_child([binary, "-q", *measures, qrels, run], text, python=False)


def _timed_child(
    args: list[str],
    text: Path,
    python: bool = True,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, float]:
    """Run a command, its output written to `text`: its wall time and peak memory."""
    command = [sys.executable, *args] if python else args
    start = time.perf_counter()
    with text.open("wb") as out:
        subprocess.run(command, check=True, stdout=out, cwd=cwd, env=env)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"seconds": seconds, "child_peak_mb": peak}


def _max_diff(values: Values, reference: Values) -> tuple[float, int]:
    """Largest |difference| over the queries both have, and how many queries differ."""
    worst = 0.0
    mismatched = 0
    for metric, ref in reference.items():
        ours = values.get(metric, {})
        common = [q for q in ref if q in ours]
        mismatched = max(mismatched, len(set(ref) ^ set(ours)))
        diff = np.abs(np.array([ours[q] for q in common]) - np.array([ref[q] for q in common]))
        worst = max(worst, float(diff.max(initial=0.0)))
    return worst, mismatched


_NAMES = {
    "ragstream": "ragstream (compiled)",
    "ragstream-numpy": "ragstream (numpy)",
}

_BASELINE = "RAGSTREAM_BENCH_BASELINE"
"""The worker of `--baseline` finds the other source tree in this environment variable."""

_CHILD_ROWS = {
    "cli": "ragstream eval (CLI)",
    "cli-baseline": "ragstream eval (baseline)",
    "cli-q": "ragstream eval -q (trec)",
    "trec_eval": "trec_eval -q (NIST, C)",
}

_WORKERS = {
    "ragstream": _work_ragstream,
    "ragstream-numpy": _work_ragstream_numpy,
    "pytrec_eval": _work_pytrec,
    "ranx": _work_ranx,
}
_TEXT_WORKERS = {
    "cli": _text_cli_table,
    "cli-baseline": _text_cli_baseline,
    "cli-q": _text_cli,
    "trec_eval": _text_trec_eval,
}


def _same_text(ours: Path, theirs: Path) -> str:
    """Whether two outputs are byte-identical, and if not, the first differing line."""
    a, b = ours.read_bytes(), theirs.read_bytes()
    lines_a, lines_b = a.splitlines(), b.splitlines()
    if a == b:
        return f"byte-identical ({len(lines_a):,} lines)"
    for number, (x, y) in enumerate(zip(lines_a, lines_b, strict=False), 1):
        if x != y:
            return f"DIFFERENT at line {number}: {x!r} vs {y!r}"
    return f"DIFFERENT lengths: {len(lines_a):,} vs {len(lines_b):,} lines"


_ROWS = ("ragstream", "ragstream-numpy", "cli", "cli-baseline", "ranx")


def _median(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One tool's runs as one: the run of median time (its values), with the range of
    times and the largest peak memory of all runs."""
    ordered = sorted(results, key=lambda result: float(result["timings"]["seconds"]))
    middle: dict[str, Any] = ordered[(len(ordered) - 1) // 2]
    seconds = [float(result["timings"]["seconds"]) for result in ordered]
    middle["timings"]["range"] = (seconds[0], seconds[-1], len(seconds))
    for key in ("peak_mb", "child_peak_mb"):
        if key in middle["timings"]:
            middle["timings"][key] = max(float(r["timings"][key]) for r in results)
    return middle


def main(argv: list[str] | None = None) -> int:
    """Generate (or reuse) the files, run every tool, print one table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=100, help="documents per query")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-ranx", action="store_true", help="skip ranx (numba JIT)")
    parser.add_argument(
        "--no-trec-eval",
        action="store_true",
        help="skip NIST's trec_eval program (about 8 minutes at the default size)",
    )
    parser.add_argument(
        "--only",
        metavar="LIST",
        help="comma-separated rows to run, of: " + ", ".join(_ROWS) + " (pytrec_eval always)",
    )
    parser.add_argument(
        "--baseline",
        metavar="TREE",
        help="also run `ragstream eval` from this source tree (another checkout, its C "
        "extensions built in place): before and after, side by side",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run the tools N times in turn; each row gives the median and the range "
        "(NIST's trec_eval and the -q comparison run once)",
    )
    parser.add_argument("--worker", nargs=4, metavar=("TOOL", "QRELS", "RUN", "OUT"))
    args = parser.parse_args(argv)
    if args.worker:
        _worker(*args.worker)
        return 0
    start = time.perf_counter()
    data = generate(_DATA, args.queries, args.docs, args.seed)
    lines = args.queries * args.docs
    print(f"files: {data.run} ({data.run.stat().st_size / 1e6:.0f} MB, ~{lines:,} run lines)")
    print(f"       {data.qrels} (ready in {time.perf_counter() - start:.1f} s)")
    tools = ["pytrec_eval", "ragstream", "ragstream-numpy", "cli"]
    tools += [] if args.baseline is None else ["cli-baseline"]
    tools += [] if args.no_ranx else ["ranx"]
    if args.only is not None:
        wanted = {"pytrec_eval", *args.only.split(",")}
        unknown = wanted - set(_ROWS) - {"pytrec_eval"}
        if unknown:
            parser.error(f"--only: unknown rows {sorted(unknown)}; known: {', '.join(_ROWS)}")
        tools = [tool for tool in tools if tool in wanted]
    if args.baseline is not None:
        os.environ[_BASELINE] = str(Path(args.baseline).resolve())
    once = [] if args.no_trec_eval else ["cli-q", "trec_eval"]
    with tempfile.TemporaryDirectory() as scratch:
        runs: dict[str, list[dict[str, Any]]] = {tool: [] for tool in tools + once}
        for round_ in range(max(1, args.repeat)):
            for tool in tools + (once if round_ == 0 else []):
                runs[tool].append(_spawn(tool, data.qrels, data.run, Path(scratch)))
        results = {tool: _median(results) for tool, results in runs.items()}
        tools += once
        text = {tool: Path(scratch) / f"{tool}.txt" for tool in _TEXT_WORKERS}
        same = "not run" if args.no_trec_eval else _same_text(text["cli-q"], text["trec_eval"])
        same_table = (
            _same_text(text["cli"], text["cli-baseline"])
            if {"cli", "cli-baseline"} <= set(tools)
            else "not run"
        )
    reference = results["pytrec_eval"]["values"]
    base = results["pytrec_eval"]["timings"]["seconds"]
    n_queries = len(next(iter(reference.values())))
    rows: list[tuple[str, float, float, str, str]] = []
    for tool in tools:
        timings = results[tool]["timings"]
        low, high, count = timings["range"]
        spread = f"{low:.2f}-{high:.2f} ({count})" if count > 1 else ""
        if tool in _CHILD_ROWS:
            seconds, peak = timings["seconds"], timings["child_peak_mb"]
            rows.append((_CHILD_ROWS[tool], seconds, peak, spread, ""))
            continue
        worst, mismatched = _max_diff(results[tool]["values"], reference)
        agree = f"{worst:.1e}" + (f" ({mismatched} queries differ)" if mismatched else "")
        name = _NAMES.get(tool, tool)
        rows.append((name, timings["seconds"], timings["peak_mb"], spread, agree))
        if tool == "ranx":
            rows.append(("ranx (warm)", timings["seconds_warm"], timings["peak_mb"], "", agree))
            print(
                f"ranx: parse {timings['parse']:.1f} s, first evaluate "
                f"{timings['compute_cold']:.1f} s, second {timings['compute_warm']:.1f} s"
            )
    print(f"\n{n_queries:,} evaluated queries, metrics: {', '.join(METRICS)}")
    print(
        f"{'tool':<26}{'seconds':>9}{'queries/s':>12}{'peak MB':>9}{'speed-up':>10}"
        f"  {'range (runs)':<19}max |diff|"
    )
    for tool, seconds, peak, spread, agree in rows:
        print(
            f"{tool:<26}{seconds:>9.2f}{n_queries / seconds:>12,.0f}{peak:>9.0f}"
            f"{base / seconds:>9.1f}x  {spread:<19}{agree}"
        )
    print("(speed-up = pytrec_eval seconds / tool seconds; diff vs pytrec_eval per query)")
    print("(seconds: the median of the runs, which ran in turn)")
    if args.repeat > 1:
        for tool in tools:
            if tool == "pytrec_eval" or len(runs[tool]) < 2:
                continue
            ratios = [
                float(p["timings"]["seconds"]) / float(t["timings"]["seconds"])
                for p, t in zip(runs["pytrec_eval"], runs[tool], strict=False)
            ]
            each = ", ".join(f"{ratio:.1f}x" for ratio in ratios)
            name = _CHILD_ROWS.get(tool, _NAMES.get(tool, tool))
            print(f"(speed-up in each round, {name}: {each})")
    print("(ragstream eval (CLI): wall time of the command, start-up included)")
    if args.baseline is not None:
        print(f"(baseline: {os.environ[_BASELINE]}; its output vs the CLI's: {same_table})")
    print(f"ragstream eval -q --format trec vs trec_eval -q: {same}")
    print(f"(load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
