"""Size limits of an event: the caps published in the schema and tighter per-agent limits.

The caps (`MAX_*`) are part of the schema v1 contract: they appear as `maxItems` /
`maxLength` in `ragstream schema`, and the decoder enforces them. An agent may enforce
tighter limits through a `Limits` object; it may not loosen them, because producers rely on
the published schema. The message size is not part of the schema, so `max_message_bytes`
may be set freely. Lengths of strings count Unicode code points.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_CONTEXTS",
    "MAX_ID_CHARS",
    "MAX_LABELS",
    "MAX_LABEL_CHARS",
    "MAX_MESSAGE_BYTES",
    "MAX_QRELS",
    "MAX_RESULTS",
    "MAX_TEXT_CHARS",
    "Limits",
]

MAX_MESSAGE_BYTES = 1_048_576
"""Largest accepted message (bytes), as Kafka's default `max.message.bytes` (1 MiB)."""
MAX_RESULTS = 1_000
"""Most `results` in a retrieval event (trec_eval runs are usually cut at 1000); also the
most `cited_doc_ids` in an answer event."""
MAX_QRELS = 10_000
"""Most `qrels` in a retrieval event."""
MAX_CONTEXTS = 100
"""Most `contexts` in an answer event."""
MAX_TEXT_CHARS = 100_000
"""Longest free text: `query`, `question`, `answer`, and each context's `text`."""
MAX_ID_CHARS = 512
"""Longest identifier: `query_id`, `doc_id`, `model`, `source`."""
MAX_LABELS = 32
"""Most entries in `labels`."""
MAX_LABEL_CHARS = 256
"""Longest label key or value."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits enforced by the decoder; each defaults to the schema cap and may only be lower."""

    max_message_bytes: int = MAX_MESSAGE_BYTES
    """Largest message in bytes, checked before parsing (not capped by the schema)."""
    max_results: int = MAX_RESULTS
    """Most `results` (and `cited_doc_ids`) in one event."""
    max_qrels: int = MAX_QRELS
    """Most `qrels` in one retrieval event."""
    max_contexts: int = MAX_CONTEXTS
    """Most `contexts` in one answer event."""
    max_text_chars: int = MAX_TEXT_CHARS
    """Longest `query`, `question`, `answer` or context `text`."""
    max_id_chars: int = MAX_ID_CHARS
    """Longest `query_id`, `doc_id`, `model` or `source`."""
    max_labels: int = MAX_LABELS
    """Most entries in `labels`."""
    max_label_chars: int = MAX_LABEL_CHARS
    """Longest label key or value."""

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{field.name} must be a positive integer, got {value!r}")
            cap = _CAPS.get(field.name)
            if cap is not None and value > cap:
                raise ValueError(
                    f"{field.name}={value} exceeds the schema v1 cap {cap}; "
                    "limits may only be tightened"
                )

    @property
    def is_default(self) -> bool:
        """True when every schema-level limit equals its cap (so pydantic enforces them all)."""
        return all(getattr(self, name) == cap for name, cap in _CAPS.items())


_CAPS: dict[str, int] = {
    "max_results": MAX_RESULTS,
    "max_qrels": MAX_QRELS,
    "max_contexts": MAX_CONTEXTS,
    "max_text_chars": MAX_TEXT_CHARS,
    "max_id_chars": MAX_ID_CHARS,
    "max_labels": MAX_LABELS,
    "max_label_chars": MAX_LABEL_CHARS,
}

DEFAULT_LIMITS = Limits()
"""The schema caps and a 1 MiB message limit."""
