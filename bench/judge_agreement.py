"""Agreement of the lexical judge with the truth on a generated, labelled set.

Usage: ``python -m bench.judge_agreement [--n 300] [--seed 7] [--threshold 0.5] [--json]``

Prints, for hallucination detection (an answer with any unsupported sentence): accuracy,
precision, recall and F1; for faithfulness: Pearson and Spearman correlation with the true
supported share and the mean absolute error; and per sentence kind, the share the judge
calls supported. The set comes from `bench.judge_data` (see its docstring).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from typing import Any

import numpy as np

from bench.judge_data import Example, generate
from ragstream.judging.lexical import LexicalJudge
from ragstream.judging.text import content_tokens

__all__ = ["agreement", "main"]


def _ranks(x: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Ranks with ties averaged (for Spearman's rho)."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    for value in np.unique(x):
        tied = x == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def agreement(examples: list[Example], judge: LexicalJudge) -> dict[str, Any]:
    """Detection and correlation figures of ``judge`` on ``examples``."""
    tp = fp = tn = fn = 0
    truth: list[float] = []
    scored: list[float] = []
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for ex in examples:
        j = judge.evaluate(ex.question, ex.answer, ex.contexts)
        said = j.hallucination
        tp += said and ex.hallucination
        fp += said and not ex.hallucination
        fn += not said and ex.hallucination
        tn += not said and not ex.hallucination
        if j.faithfulness is not None:
            truth.append(ex.supported_share)
            scored.append(j.faithfulness)
        verdicts = {c.text: c.supported for c in j.claims}
        for s in ex.sentences:
            if len(content_tokens(s.text)) >= judge.min_claim_tokens:
                by_kind[s.kind].append(verdicts[s.text])
    t, f = np.array(truth), np.array(scored)
    n = tp + fp + tn + fn
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    return {
        "examples": n,
        "with_hallucination": tp + fn,
        "accuracy": (tp + tn) / n,
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if tp else 0.0,
        "false_positive_rate": fp / (fp + tn) if fp + tn else float("nan"),
        "pearson": float(np.corrcoef(t, f)[0, 1]),
        "spearman": float(np.corrcoef(_ranks(t), _ranks(f))[0, 1]),
        "faithfulness_mae": float(np.abs(t - f).mean()),
        "called_supported": {k: sum(v) / len(v) for k, v in sorted(by_kind.items())},
        "sentences": {k: len(v) for k, v in sorted(by_kind.items())},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--no-numbers", action="store_true", help="disable the number check")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    judge = LexicalJudge(support_threshold=args.threshold, check_numbers=not args.no_numbers)
    result = agreement(generate(args.n, args.seed), judge)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"lexical judge, {result['examples']} answers (seed {args.seed}), "
        f"{result['with_hallucination']} with an unsupported sentence"
    )
    print("hallucination detection:")
    for key in ("accuracy", "precision", "recall", "f1", "false_positive_rate"):
        print(f"  {key:<20} {result[key]:.3f}")
    print("faithfulness vs true supported share:")
    for key in ("pearson", "spearman", "faithfulness_mae"):
        print(f"  {key:<20} {result[key]:.3f}")
    print("sentences called supported, by kind (truly supported: verbatim, reworded, paraphrase):")
    for kind, share in result["called_supported"].items():
        print(f"  {kind:<20} {share:.3f}  (n={result['sentences'][kind]})")


if __name__ == "__main__":
    main()
