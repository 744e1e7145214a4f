"""Gold verdicts joined with the answers they are about, per partition (SPEC §4).

A feedback event may carry a gold verdict on a query's answer (`answer: {"hallucination":
bool}`). Every answer with a gold verdict is judged, whatever the sampler drew, and the
judge's verdict is compared with the gold one. The verdict may come before or after its
answer; the join follows the retrieval join's rules (`ragstream.join.LabelJoin`):

- an answer is open for `label_ttl` after its event time: a verdict whose time is past that
  does not count (`late`);
- a verdict that comes before its answer waits `pending_ttl` (on the clock) and then
  expires (`expired`);
- verdicts apply in arrival order: the latest one received for a query wins (a compared
  answer's earlier comparison is replaced, in the agreement windows);
- memory is bounded: at most `max_answers` open answers and `max_waiting` waiting verdicts
  per partition, the oldest evicted first (`evicted`).

An open answer is one of: not sampled and kept (its text, so that a later verdict can have
it judged), queued for the judge, or judged (its verdict only). A partition's open answers
and waiting verdicts are its `GoldShare` (part of its `JudgePartition`); `GoldJoin` holds
the settings and counts and says what to do with a share; `JudgingService` submits, records
and counts. Pure: time is passed in.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from ragstream.judging.model import AnswerLike, JudgeInput, Judgment

__all__ = [
    "GOLD_OUTCOMES",
    "GoldJoin",
    "GoldShare",
    "OpenAnswer",
    "Verdict",
    "WaitingGold",
    "verdict_of",
]

Verdict = Literal["hallucination", "faithful", "refusal"]
"""The judge's verdict on an answer: a refusal claims nothing, so it is not flagged."""

GOLD_OUTCOMES = ("compared", "late", "expired", "evicted", "dropped", "failed")
"""What became of gold verdicts: compared with the judge's verdict; past their answer's
label TTL; waited for an answer that never came; evicted by the caps; their answer dropped
by a full judge queue; their answer's judgment failed."""


def verdict_of(judgment: Judgment) -> Verdict:
    """The judge's verdict: `refusal`, `hallucination` (an unsupported claim) or `faithful`."""
    if judgment.refusal:
        return "refusal"
    return "hallucination" if judgment.hallucination else "faithful"


class OpenAnswer(msgspec.Struct, gc=False):
    """An answer within its label TTL, as the gold join keeps it (one per answer: not
    tracked by the cyclic garbage collector, so that holding many costs no collection
    time; it refers to no container that could refer back to it)."""

    ts: float
    """The answer's event time; it is open until ``ts + label_ttl``."""
    labels: Mapping[str, str]
    """Its service labels (the event's own mapping, not copied)."""
    item: JudgeInput | AnswerLike | None = None
    """Kept unsampled (the event itself, or as restored), to be judged if a gold verdict
    comes; None once queued or judged."""
    queued: bool = False
    """Submitted to the judge, no judgment yet."""
    verdict: Verdict | None = None
    judge: str = ""
    """Which judge gave the verdict."""
    gold: bool | None = None
    """The latest gold verdict received (True: hallucinated)."""
    compared: bool | None = None
    """The gold verdict its comparison was recorded with (None: none recorded)."""

    def judge_input(self, partition: int) -> JudgeInput | None:
        """The kept answer as the judge reads it (not drawn by the sampler)."""
        item = self.item
        if item is None or isinstance(item, JudgeInput):
            return item
        return JudgeInput.from_event(item, partition=partition, sampled=False)

    def to_state(self, partition: int) -> dict[str, Any]:
        item = self.judge_input(partition)
        return {
            "ts": self.ts,
            "labels": dict(self.labels),
            "item": None if item is None else item.to_state(),
            "queued": self.queued,
            "verdict": self.verdict,
            "judge": self.judge,
            "gold": self.gold,
            "compared": self.compared,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> OpenAnswer:
        item = state.get("item")
        return cls(
            ts=float(state["ts"]),
            labels={str(k): str(v) for k, v in state["labels"].items()},
            item=None if item is None else JudgeInput.from_state(item),
            queued=bool(state["queued"]),
            verdict=state["verdict"],
            judge=str(state["judge"]),
            gold=state["gold"],
            compared=state["compared"],
        )


@dataclass(frozen=True, slots=True)
class WaitingGold:
    """A gold verdict that came before its answer."""

    hallucination: bool
    ts: float
    """The verdict's event time."""
    arrived: float
    """The clock when it arrived; it waits until ``arrived + pending_ttl``."""


@dataclass(slots=True)
class GoldShare:
    """One partition's open answers and waiting gold verdicts, in arrival order."""

    answers: OrderedDict[str, OpenAnswer] = field(default_factory=OrderedDict)
    """Open answers by query id."""
    waiting: OrderedDict[str, WaitingGold] = field(default_factory=OrderedDict)
    """Gold verdicts waiting for their answer, by query id."""

    def export(self, partition: int) -> dict[str, Any]:
        """Its open answers and waiting verdicts, JSON-friendly."""
        return {
            "answers": [[qid, entry.to_state(partition)] for qid, entry in self.answers.items()],
            "waiting": [[qid, g.hallucination, g.ts, g.arrived] for qid, g in self.waiting.items()],
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any] | None) -> GoldShare:
        """A share from `export` output (None: an empty one)."""
        return cls(
            OrderedDict(
                (str(qid), OpenAnswer.from_state(state))
                for qid, state in (data or {}).get("answers", ())
            ),
            OrderedDict(
                (str(qid), WaitingGold(bool(h), float(ts), float(arrived)))
                for qid, h, ts, arrived in (data or {}).get("waiting", ())
            ),
        )


class GoldJoin:
    """The gold join's settings and counts, and what it does with a partition's
    `GoldShare` (see the module docstring)."""

    def __init__(
        self,
        *,
        label_ttl: float,
        pending_ttl: float,
        max_answers: int,
        max_waiting: int,
    ) -> None:
        if label_ttl < 0 or pending_ttl < 0:
            raise ValueError("label_ttl and pending_ttl must be >= 0")
        if max_answers < 1 or max_waiting < 1:
            raise ValueError("max_answers and max_waiting must be >= 1")
        self.label_ttl = label_ttl
        self.pending_ttl = pending_ttl
        self.max_answers = max_answers
        self.max_waiting = max_waiting
        self.outcomes: Counter[str] = Counter(dict.fromkeys(GOLD_OUTCOMES, 0))
        """Gold verdicts by outcome (`GOLD_OUTCOMES`); this process's count."""

    # -- answers -------------------------------------------------------------------------------

    def open(
        self, share: GoldShare, query_id: str, ts: float, labels: Mapping[str, str]
    ) -> bool | None:
        """Open an answer; returns the gold verdict that was waiting for it (None: none)."""
        answers = share.answers
        entry = OpenAnswer(ts, labels)
        if query_id in answers:  # a repeated answer: open again, in arrival order
            del answers[query_id]
        answers[query_id] = entry
        gold = share.waiting.pop(query_id, None)
        if gold is not None:
            if gold.ts > ts + self.label_ttl:
                self.outcomes["late"] += 1
            else:
                entry.gold = gold.hallucination
        while len(answers) > self.max_answers:
            self._lost(answers.popitem(last=False)[1], "evicted")
        return entry.gold

    def keep(self, share: GoldShare | None, query_id: str, item: AnswerLike) -> None:
        """Keep an unsampled answer, in case a gold verdict comes for it."""
        entry = self._entry(share, query_id)
        if entry is not None:
            entry.item = item

    def queued(self, share: GoldShare | None, query_id: str) -> None:
        """The answer went to the judge."""
        entry = self._entry(share, query_id)
        if entry is not None:
            entry.item, entry.queued = None, True

    def judged(
        self, share: GoldShare | None, query_id: str, verdict: Verdict | None, judge: str
    ) -> OpenAnswer | None:
        """The judge came back (``verdict`` None: it failed); the open answer, if it still
        is, to compare when it has a gold verdict. A failed judgment of an answer with a gold
        verdict is counted (`failed`)."""
        entry = self._entry(share, query_id)
        if entry is None:
            return None
        entry.queued = False
        if verdict is None:
            if entry.gold is not None:
                self.outcomes["failed"] += 1
            return None
        entry.verdict, entry.judge = verdict, judge
        return entry

    def dropped(self, share: GoldShare | None, query_id: str) -> None:
        """The answer could not be queued (a full queue): its gold verdict is counted
        `dropped`; the text stays kept, so a later verdict may try again."""
        entry = self._entry(share, query_id)
        if entry is not None and entry.gold is not None:
            self.outcomes["dropped"] += 1

    @staticmethod
    def _entry(share: GoldShare | None, query_id: str) -> OpenAnswer | None:
        return None if share is None else share.answers.get(query_id)

    # -- gold verdicts -------------------------------------------------------------------------

    def verdict(
        self, share: GoldShare, query_id: str, hallucination: bool, ts: float, now: float
    ) -> OpenAnswer | None:
        """A gold verdict in arrival order; the open answer it is for when it counts (its
        `gold` set), None when it is late or waits for its answer."""
        entry = self._entry(share, query_id)
        if entry is None:
            waiting = share.waiting
            waiting[query_id] = WaitingGold(hallucination, ts, now)
            waiting.move_to_end(query_id)
            while len(waiting) > self.max_waiting:
                waiting.popitem(last=False)
                self.outcomes["evicted"] += 1
            return None
        if ts > entry.ts + self.label_ttl:
            self.outcomes["late"] += 1
            return None
        entry.gold = hallucination
        return entry

    # -- time and bounds -----------------------------------------------------------------------

    def expire(self, shares: Iterable[GoldShare], now: float) -> None:
        """Close the shares' answers past their label TTL and drop verdicts that waited too
        long (each partition's oldest first, in arrival order)."""
        for share in shares:
            answers, waiting = share.answers, share.waiting
            while answers and next(iter(answers.values())).ts + self.label_ttl < now:
                self._lost(answers.popitem(last=False)[1], "expired")
            while waiting and next(iter(waiting.values())).arrived + self.pending_ttl < now:
                waiting.popitem(last=False)
                self.outcomes["expired"] += 1

    def _lost(self, entry: OpenAnswer, why: str) -> None:
        """An answer leaves: a gold verdict it holds that was never compared is counted."""
        if entry.gold is not None and entry.compared is None and entry.queued:
            self.outcomes[why] += 1
