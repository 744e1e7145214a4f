"""A bounded LRU cache of judgments, keyed on what the judge reads.

Key = blake2b of the JSON list ``[prompt_version, model, question, answer, contexts]``, so
the same input under the same prompt and judge model is never paid for twice, while a new
prompt version or model is judged afresh.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence

from ragstream.judging.model import Judgment

__all__ = ["JudgmentCache", "cache_key"]


def cache_key(
    question: str, answer: str, contexts: Sequence[str], *, prompt_version: str, model: str
) -> str:
    """A 32-hex-digit digest of everything the judgment depends on."""
    payload = json.dumps(
        [prompt_version, model, question, answer, list(contexts)], ensure_ascii=False
    )
    return hashlib.blake2b(payload.encode(), digest_size=16).hexdigest()


class JudgmentCache:
    """At most ``size`` judgments; the least recently used is evicted first."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError("cache size must be >= 0")
        self.size = size
        self._items: OrderedDict[str, Judgment] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Judgment | None:
        """The cached judgment (marked as most recently used), or None; counts hits."""
        found = self._items.get(key)
        if found is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return found

    def put(self, key: str, judgment: Judgment) -> None:
        """Store a judgment, evicting the least recently used beyond ``size``."""
        if self.size == 0:
            return
        self._items[key] = judgment
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
