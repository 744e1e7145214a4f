"""Service labels as bounded Prometheus label sets: configured keys only, values capped."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

__all__ = ["OTHER", "LabelSetMapper"]

OTHER = "other"
"""The value that label values beyond the cap collapse to."""
_MISSING = ""
_KNOWN_SETS = 4096


@dataclass(slots=True)
class LabelSetMapper:
    """Maps an event's `labels` to a tuple of values for the configured `keys`.

    A key the event does not carry maps to the empty string (Prometheus treats an empty label
    value as absent). Each key admits its first `max_values` distinct values; later ones
    become `other` and are counted in `collapsed` per key.
    """

    keys: Sequence[str]
    max_values: int
    collapsed: dict[str, int] = field(default_factory=dict)
    _seen: dict[str, set[str]] = field(default_factory=dict)
    _known: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    """Label sets whose values are all admitted (or empty), each to itself: such a set
    maps to itself and counts nothing, so most events take one lookup. At most
    `_KNOWN_SETS` of them (bounded whatever the number of keys)."""
    _given: Callable[[Mapping[str, str]], Any] | None = None
    """The values of the keys of labels that carry every key, in one C call (a tuple, or
    the value itself for one key)."""

    def __post_init__(self) -> None:
        self.keys = tuple(self.keys)
        if self.max_values < 1:
            raise ValueError("max_values must be >= 1")
        for key in self.keys:
            self._seen.setdefault(key, set())
            self.collapsed.setdefault(key, 0)
        if self.keys:
            self._given = itemgetter(*self.keys)

    def __call__(
        self, labels: Mapping[str, str] | None, collapsed: MutableMapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """The label set of an event's labels; a value past the cap is counted in
        `collapsed` of this mapper and, when given, in ``collapsed`` (the event's
        partition's count)."""
        if not self.keys:
            return ()
        if not labels:
            return (_MISSING,) * len(self.keys)
        try:  # the usual event carries every key
            given = self._given(labels)  # type: ignore[misc]
            if len(self.keys) == 1:
                given = (given,)
        except KeyError:
            given = tuple([labels.get(key, _MISSING) for key in self.keys])
        return self.of_values(given, collapsed)

    def of_values(
        self, given: tuple[str, ...], collapsed: MutableMapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """`__call__` of the values of the event's labels for `keys`, in their order (the
        empty string for a key it does not carry), as the compiled scanner reads them."""
        known = self._known.get(given)
        if known is not None:
            return known
        return self._admit(given, collapsed)

    def _admit(
        self, given: tuple[str, ...], collapsed: MutableMapping[str, int] | None
    ) -> tuple[str, ...]:
        """The label set of values not all known yet: each counted against its key's cap."""
        values: list[str] = []
        admitted = True
        for key, value in zip(self.keys, given, strict=True):
            seen = self._seen[key]
            if value and value not in seen:
                if len(seen) >= self.max_values:
                    self.collapsed[key] += 1
                    if collapsed is not None:
                        collapsed[key] = collapsed.get(key, 0) + 1
                    value = OTHER
                    admitted = False
                else:
                    seen.add(value)
            values.append(value)
        out = tuple(values)
        if admitted and len(self._known) < _KNOWN_SETS:
            self._known[out] = out
        return out

    def admit(self, labelset: Sequence[str]) -> None:
        """Count the non-empty values of a label set (one of this mapper's tuples, e.g. of
        adopted state) as admitted, whether or not that takes a key past `max_values`."""
        for key, value in zip(self.keys, labelset, strict=False):
            if value:
                self._seen[key].add(value)

    def snapshot(self) -> dict[str, Any]:
        """The admitted values and counts, so a restart keeps the same sets."""
        return {
            "seen": {key: sorted(values) for key, values in self._seen.items()},
            "collapsed": dict(self.collapsed),
        }

    def restore_state(self, data: Mapping[str, Any]) -> None:
        """Load `snapshot()` output into this mapper (same keys)."""
        self._known.clear()  # the admitted values change
        for key in self.keys:
            self._seen[key] = set(data["seen"].get(key, ()))
            self.collapsed[key] = int(data["collapsed"].get(key, 0))
