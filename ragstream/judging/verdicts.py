"""Judge verdicts kept until their query is final, for its result record: `VerdictKeeper`.

An answer is judged in the background, usually long before its query is final (the label
TTL). A judgment that comes back while its query is open in the engine's join is kept, as
its verdict (`VERDICT_FIELDS`), in the share of the answer's partition (`JudgePartition.verdicts`,
moved and saved with the partition); when the query becomes final the results sink takes it
(`take`) into the query's record. A judgment whose query is not open (final already, or its
retrieval event not applied yet) is not kept: it is only on `judge.publish_topic`. Each
partition keeps at most `max_per_partition` verdicts, the oldest evicted first. Every
verdict is counted by outcome (`VERDICT_OUTCOMES`). docs/results.md, "Judge verdicts".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from ragstream.judging.model import Judgment
from ragstream.sinks.verdict import JudgeVerdict

__all__ = [
    "VERDICT_FIELDS",
    "VERDICT_OUTCOMES",
    "Kept",
    "VerdictKeeper",
]

VERDICT_FIELDS = tuple(JudgeVerdict.model_fields)
"""The fields of a record's verdict: those of `JudgeVerdict`, taken from `Judgment.as_dict`
(so each equals the same-named field of the judgment's audit record)."""

VERDICT_OUTCOMES = ("kept", "attached", "not_open", "evicted")
"""What became of judge verdicts: kept for their open query (a query judged again keeps its
latest); attached to their query's record when it became final; not kept, their query not
open; evicted by the cap before their query was final."""

Kept = dict[str, dict[str, Any]]
"""One partition's kept verdicts by query id, oldest first."""


class VerdictKeeper:
    """Keeps verdicts of open queries in their partition's `Kept` and hands them to the
    final query's record (see the module docstring); the settings and counts."""

    def __init__(self, is_open: Callable[[str], bool], *, max_per_partition: int) -> None:
        if max_per_partition < 1:
            raise ValueError(f"max_per_partition must be >= 1, not {max_per_partition}")
        self.is_open = is_open
        """Whether a query id is open in the engine's join (read only)."""
        self.max_per_partition = max_per_partition
        self.outcomes: Counter[str] = Counter(dict.fromkeys(VERDICT_OUTCOMES, 0))
        """Verdicts by outcome (`VERDICT_OUTCOMES`); this process's count."""

    def keep(self, kept: Kept, query_id: str, judgment: Judgment) -> bool:
        """Keep the judgment's verdict when its query is open (replacing an earlier one,
        as the newest); the oldest past the cap are evicted. False: not open, not kept."""
        if not self.is_open(query_id):
            self.outcomes["not_open"] += 1
            return False
        kept.pop(query_id, None)
        published = judgment.as_dict()
        kept[query_id] = {name: published[name] for name in VERDICT_FIELDS}
        self.outcomes["kept"] += 1
        while len(kept) > self.max_per_partition:
            del kept[next(iter(kept))]
            self.outcomes["evicted"] += 1
        return True

    def take(self, kept: Kept, query_id: str) -> dict[str, Any] | None:
        """The final query's verdict, taken from its partition's ``kept`` (None: it was not
        judged while open)."""
        verdict = kept.pop(query_id, None)
        if verdict is not None:
            self.outcomes["attached"] += 1
        return verdict

    def restore_counts(self, counts: Mapping[str, Any]) -> None:
        """Count on from a snapshot's counts (`outcomes`)."""
        for outcome, n in counts.items():
            self.outcomes[str(outcome)] = int(n)
