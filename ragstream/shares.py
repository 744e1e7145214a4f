"""Deterministic shares by id: a point in [0, 1) fixed by a text, so that "a share s of the
queries" is the same queries on every replica, retry and rerun (those whose point is below
s), and a larger share keeps every query a smaller one chose.

The one implementation behind the results topic's `share` sampling
(`ragstream.sinks.results`) and the judge's sampling draw (`ragstream.judging.sampler`);
plain Python, so that each of them imports only this.
"""

from __future__ import annotations

import hashlib

__all__ = ["share_point"]


def share_point(text: str) -> float:
    """A point in [0, 1) fixed by ``text`` (a query id): the first 8 bytes of its BLAKE2b
    digest, big-endian, / 2^64."""
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64
