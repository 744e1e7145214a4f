"""Offline judging of a file of answers (`ragstream judge`, the RAGTruth bench).

Each line is an answer event (SPEC §1) as the agent reads it, with three allowances of a
file written by hand: `type` may be left out, a context may be a plain string (its text),
and a line may carry a gold verdict ``"gold": {"hallucination": true|false}``. A line is
validated by the agent's own decoder (`ragstream.events.decode_event`) after that
normalisation, so a file is judged exactly when its events would be.

`judge_stream` judges the answers with the agent's `JudgeWorkers` (bounded concurrency,
the judge's cache), charging a `CostBudget` and waiting on a `TokenBucket` when given,
and yields one `JudgedLine` per input line, in input order. `JudgeReport` sums them up:
outcomes, the flagged share and, with gold verdicts, the agreement statistics of
`ragstream.judging.agreement`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from ragstream.events import DecodedAnswer, DecodeError, decode_event
from ragstream.judging.agreement import Confusion, auroc, corrected_rate, proportion
from ragstream.judging.budget import CostBudget, TokenBucket
from ragstream.judging.model import Judge, JudgeError, JudgeInput, Judgment
from ragstream.judging.workers import JudgeWorkers

__all__ = [
    "OUTCOMES",
    "AnswerLine",
    "JudgeReport",
    "JudgedLine",
    "Outcome",
    "judge_stream",
    "parse_answer_line",
]

Outcome = Literal["judged", "refusal", "failed", "invalid"]
OUTCOMES: tuple[Outcome, ...] = ("judged", "refusal", "failed", "invalid")


@dataclass(frozen=True, slots=True)
class AnswerLine:
    """One line of the file: an answer event and its gold verdict, or why it is none."""

    line: int
    """1-based line number."""
    event: DecodedAnswer | None
    gold: bool | None = None
    """The gold verdict (True: hallucinated), None when the line has none."""
    error: str | None = None
    """Why the line is not an answer event (``reason: detail``)."""
    query_id: str | None = None
    """The line's query_id when it could be read, even from an invalid line."""


def _invalid(line: int, reason: str, detail: str, query_id: str | None = None) -> AnswerLine:
    return AnswerLine(line, None, error=f"{reason}: {detail}", query_id=query_id)


def parse_answer_line(text: str | bytes, line: int) -> AnswerLine:
    """Validate one line (see the module docstring); never raises on bad input."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        return _invalid(line, "bad_json", str(error))
    if not isinstance(data, dict):
        return _invalid(line, "not_object", "expected a JSON object")
    raw_id = data.get("query_id")
    query_id = raw_id if isinstance(raw_id, str) else None
    kind = data.setdefault("type", "answer")
    if kind != "answer":
        return _invalid(line, "unknown_type", f"type {kind!r}: only answer events", query_id)
    gold: bool | None = None
    if "gold" in data:
        verdict = data.pop("gold")
        value = verdict.get("hallucination") if isinstance(verdict, dict) else None
        if not isinstance(value, bool):
            return _invalid(
                line, "schema", 'gold: expected {"hallucination": true|false}', query_id
            )
        gold = value
    contexts = data.get("contexts")
    if isinstance(contexts, list):
        data["contexts"] = [{"text": c} if isinstance(c, str) else c for c in contexts]
    try:
        event = decode_event(json.dumps(data, ensure_ascii=False).encode())
    except DecodeError as error:
        return _invalid(line, error.reason, error.detail, query_id)
    except ValueError as error:  # json.dumps of a number JSON cannot hold
        return _invalid(line, "bad_json", str(error), query_id)
    if not isinstance(event, DecodedAnswer):  # `type` was checked above
        return _invalid(line, "unknown_type", "not an answer event", query_id)
    return AnswerLine(line, event, gold, query_id=event.query_id)


@dataclass(frozen=True, slots=True)
class JudgedLine:
    """What became of one line."""

    line: int
    query_id: str | None
    outcome: Outcome
    judgment: Judgment | None = None
    gold: bool | None = None
    error: str | None = None
    """Why the line is ``invalid`` or its judgment ``failed``."""

    @property
    def hallucination(self) -> bool | None:
        """The verdict: False for a refusal (it claims nothing); None when not judged."""
        if self.judgment is None:
            return None
        return False if self.outcome == "refusal" else self.judgment.hallucination

    def as_dict(self) -> dict[str, Any]:
        """The line's output object (``ragstream judge --format jsonl``)."""
        j = self.judgment
        return {
            "line": self.line,
            "query_id": self.query_id,
            "outcome": self.outcome,
            "faithfulness": None if j is None else j.faithfulness,
            "hallucination": self.hallucination,
            "answer_relevance": None if j is None else j.answer_relevance,
            "context_relevance": None if j is None else j.context_relevance,
            "error": self.error,
        }


def _failed(line: AnswerLine, error: str) -> JudgedLine:
    return JudgedLine(line.line, line.query_id, "failed", None, line.gold, error)


async def _wait_for_token(limit: TokenBucket, clock: Callable[[], float]) -> None:
    """Take one token, sleeping until the bucket has refilled one (it refills with time:
    there is no event to wait for)."""
    while True:
        if limit.take(clock()):
            return
        await asyncio.sleep(max(0.001, (1.0 - limit.available(clock())) / limit.rate))


async def judge_stream(
    lines: Iterable[AnswerLine],
    judge: Judge,
    *,
    concurrency: int,
    window: int,
    budget: CostBudget | None = None,
    limit: TokenBucket | None = None,
    clock: Callable[[], float] = time.time,
) -> AsyncIterator[JudgedLine]:
    """Judge every valid line with ``judge`` on ``concurrency`` workers, at most ``window``
    lines read ahead of the first unfinished one; yield one `JudgedLine` per line in input
    order. An answer the budget cannot afford fails with reason ``budget``; the token
    bucket, when given, is waited on (offline, nothing is dropped). The judge is closed at
    the end."""
    if window < 1:
        raise ValueError("window must be >= 1")
    done: dict[int, JudgedLine] = {}
    pending: dict[int, tuple[int, AnswerLine]] = {}
    changed = asyncio.Event()

    def on_result(item: JudgeInput, judgment: Judgment) -> None:
        index, line = pending.pop(id(item))
        if budget is not None:
            budget.reconcile(item.admitted_at, item.estimated_cost, judgment.usage.cost, clock())
        outcome: Outcome = "refusal" if judgment.refusal else "judged"
        done[index] = JudgedLine(line.line, line.query_id, outcome, judgment, line.gold)
        changed.set()

    def on_failure(item: JudgeInput, error: JudgeError) -> None:
        index, line = pending.pop(id(item))
        if budget is not None:
            budget.reconcile(
                item.admitted_at, item.estimated_cost, error.usage.cost, clock(), learn=False
            )
        done[index] = _failed(line, f"{error.reason}: {error}")
        changed.set()

    workers = JudgeWorkers(
        judge,
        queue_size=window,
        concurrency=concurrency,
        on_result=on_result,
        on_failure=on_failure,
    )
    await workers.start()
    emitted = 0
    read = 0

    async def ready(behind: int) -> AsyncIterator[JudgedLine]:
        """The finished lines in order, waiting while ``behind`` lines or more are unfinished."""
        nonlocal emitted
        while emitted in done or read - emitted >= behind:
            if emitted in done:
                yield done.pop(emitted)
                emitted += 1
            else:
                await changed.wait()
                changed.clear()

    try:
        for index, line in enumerate(lines):
            read = index + 1
            if line.event is None:
                done[index] = JudgedLine(line.line, line.query_id, "invalid", error=line.error)
            elif budget is not None and not budget.can_afford(clock()):
                done[index] = _failed(line, "budget: the judging budget is spent")
            else:
                if limit is not None:
                    await _wait_for_token(limit, clock)
                now = clock()
                charged = budget.charge(now) if budget is not None else 0.0
                item = JudgeInput.from_event(line.event, estimated_cost=charged, admitted_at=now)
                pending[id(item)] = (index, line)
                workers.submit(item)  # never full: at most `window` lines are outstanding
            async for row in ready(window):
                yield row
        async for row in ready(1):
            yield row
    finally:
        await workers.stop(drain_timeout=0.0)


class JudgeReport:
    """Counts and agreement of judged lines (``ragstream judge --report``)."""

    def __init__(self) -> None:
        self.outcomes: Counter[str] = Counter(dict.fromkeys(OUTCOMES, 0))
        self.failures: Counter[str] = Counter()
        """Failed judgments by reason, invalid lines by decode reason."""
        self.invalid: Counter[str] = Counter()
        self.flagged = 0
        """Hallucinations among the judged answers (refusals included, never flagged)."""
        self.confusion = Confusion()
        self._gold: list[bool] = []
        self._scores: list[float] = []
        self.cost = 0.0
        """USD spent on the judgments (failed ones cost nothing here)."""
        self.cached = 0

    def add(self, row: JudgedLine) -> None:
        self.outcomes[row.outcome] += 1
        if row.outcome == "invalid":
            self.invalid[(row.error or "invalid").partition(":")[0]] += 1
            return
        if row.judgment is None:
            self.failures[(row.error or "failed").partition(":")[0]] += 1
            return
        flagged = bool(row.hallucination)
        self.flagged += flagged
        self.cost += row.judgment.usage.cost
        self.cached += row.judgment.cached
        if row.gold is not None:
            self.confusion += Confusion.from_pairs([(row.gold, flagged)])
            self._gold.append(row.gold)
            self._scores.append(_risk(row.judgment))

    @property
    def judged(self) -> int:
        """Answers with a judgment (``judged`` and ``refusal``)."""
        return self.outcomes["judged"] + self.outcomes["refusal"]

    def as_dict(self) -> dict[str, Any]:
        """The JSON report (docs/judging.md, "Measure your own judge")."""
        c = self.confusion
        flagged_share = proportion(self.flagged, self.judged)
        gold: dict[str, Any] | None = None
        if c.n:
            gold = {
                "answers": c.n,
                "confusion": c.as_dict(),
                "sensitivity": c.sensitivity().as_dict(),
                "specificity": c.specificity().as_dict(),
                "precision": c.precision().as_dict(),
                "f1": c.f1().as_dict(),
                "balanced_accuracy": c.balanced_accuracy().as_dict(),
                "auroc": auroc(self._scores, self._gold).as_dict(),
                "true_share": proportion(c.positives, c.n).as_dict(),
            }
        return {
            "lines": sum(self.outcomes.values()),
            "outcomes": dict(self.outcomes),
            "failures": dict(self.failures),
            "invalid": dict(self.invalid),
            "flagged": self.flagged,
            "flagged_share": flagged_share.as_dict(),
            "gold": gold,
            "corrected_hallucination_rate": corrected_rate(
                self.flagged, self.judged, c.se_counts, c.sp_counts
            ).as_dict(),
            "cost_usd": self.cost,
            "cached": self.cached,
        }


def _risk(judgment: Judgment) -> float:
    """The AUROC score ``1 - faithfulness``; 0 for an answer with no claim (a refusal, or
    nothing to check), which the judge does not flag."""
    return 0.0 if judgment.faithfulness is None else 1.0 - judgment.faithfulness
