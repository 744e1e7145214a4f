"""The judge's share of one partition: `JudgePartition`.

Held in the partition's `ragstream.pipeline.partitions.PartitionState` (under the name the
judge is attached with), it is what the judge knows of that partition besides the windows:
the sampled answers submitted and not judged yet, the gold join's open answers and waiting
verdicts, and the judge's verdicts kept for open queries' result records
(`ragstream.judging.verdicts`). Its judgment and gold-comparison windows are rows of the
judge's window stores (`JudgeResults`), engine-wide as the engine's own store; `export` and
`drop` reach them by partition. `JudgingService` makes and adopts the shares (adopting queues the
unjudged answers again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragstream.judging.gold import GoldShare
from ragstream.judging.model import JudgeInput
from ragstream.judging.results import JudgeResults
from ragstream.judging.verdicts import Kept

__all__ = ["JudgePartition"]


class JudgePartition:
    """The judge's share of one partition (a `ragstream.pipeline.partitions.SidePartition`)."""

    __slots__ = ("gold", "partition", "pending", "results", "verdicts")

    def __init__(self, partition: int, results: JudgeResults) -> None:
        self.partition = partition
        self.results = results
        """The judge's windows, where this partition's rows are kept."""
        self.pending: dict[int, JudgeInput] | None = None
        """The sampled answers submitted and not judged yet, by the item's identity (the
        same object comes back from the workers); None until the first is submitted or the
        partition is adopted."""
        self.gold: GoldShare | None = None
        """The gold join's open answers and waiting verdicts (None: none yet)."""
        self.verdicts: Kept = {}
        """The judge's verdicts on answers whose queries are open, by query id, oldest
        first: the result records of those queries take them when they are final."""

    def export(self) -> dict[str, Any]:
        """Its unjudged answers, judgment windows, gold comparisons, open answers, waiting
        gold verdicts and kept verdicts, JSON-friendly."""
        p = self.partition
        return {
            "pending": [item.to_state() for item in (self.pending or {}).values()],
            "windows": self.results.store.export_partition(p),
            "agreement": self.results.gold_store.export_partition(p),
            "gold": (self.gold or GoldShare()).export(p),
            "verdicts": [[query_id, verdict] for query_id, verdict in self.verdicts.items()],
        }

    @classmethod
    def adopt(
        cls, partition: int, data: Mapping[str, Any] | None, results: JudgeResults
    ) -> tuple[JudgePartition, list[JudgeInput]]:
        """The share taken over from `export` output (None: empty), its windows put in
        ``results``; with its unjudged answers, to be queued again. Data without kept
        verdicts (an older export) keeps none."""
        share = cls(partition, results)
        share.pending = {}
        share.gold = GoldShare.restore(None if not data else data.get("gold"))
        if not data:
            return share, []
        share.verdicts = {str(q): dict(v) for q, v in data.get("verdicts") or ()}
        for store, key in ((results.store, "windows"), (results.gold_store, "agreement")):
            rows = data.get(key)
            if rows is not None:
                if int(rows["partition"]) != partition:
                    raise ValueError(f"{key} of partition {rows['partition']}, not {partition}")
                store.import_partition(rows)
        return share, [JudgeInput.from_state(state) for state in data.get("pending") or ()]

    def drop(self) -> None:
        """Forget its windows (the rest goes with this object)."""
        self.results.store.drop_partition(self.partition)
        self.results.gold_store.drop_partition(self.partition)
