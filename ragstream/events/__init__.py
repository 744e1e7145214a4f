"""Event schemas (v1): models, decoding with reason codes, and helpers for producers.

The pydantic models (`RetrievalEvent`, `AnswerEvent`, `FeedbackEvent`) are the published
contract and what the producer helpers build; `decode_event` returns their msgspec
counterparts (`DecodedRetrieval`, `DecodedAnswer`, `DecodedFeedback`), with the same fields.
"""

from ragstream.events.decode import (
    DECODE_REASONS,
    DecodeError,
    DecodeReason,
    IndexedDecodeError,
    decode_batch,
    decode_event,
    decode_reference,
    decode_rejected,
)
from ragstream.events.decoded import (
    DecodedAnswer,
    DecodedContext,
    DecodedDoc,
    DecodedEvent,
    DecodedFeedback,
    DecodedQrel,
    DecodedRetrieval,
    to_decoded,
)
from ragstream.events.fast import fast_decode
from ragstream.events.json_schema import event_json_schema
from ragstream.events.limits import DEFAULT_LIMITS, Limits
from ragstream.events.message import Message
from ragstream.events.models import (
    EVENT_ADAPTER,
    MAX_ABS_REL,
    AnswerEvent,
    Context,
    Event,
    EventType,
    FeedbackEvent,
    InlineLabel,
    Qrel,
    Ranking,
    RetrievalEvent,
    RetrievedDoc,
    dedupe_results,
    inline_labels,
)
from ragstream.events.producer import (
    TimeLike,
    answer_event,
    encode_event,
    feedback_event,
    message_key,
    retrieval_event,
)
from ragstream.events.timestamps import format_rfc3339, parse_rfc3339

__all__ = [
    "DECODE_REASONS",
    "DEFAULT_LIMITS",
    "EVENT_ADAPTER",
    "MAX_ABS_REL",
    "AnswerEvent",
    "Context",
    "DecodeError",
    "DecodeReason",
    "DecodedAnswer",
    "DecodedContext",
    "DecodedDoc",
    "DecodedEvent",
    "DecodedFeedback",
    "DecodedQrel",
    "DecodedRetrieval",
    "Event",
    "EventType",
    "FeedbackEvent",
    "IndexedDecodeError",
    "InlineLabel",
    "Limits",
    "Message",
    "Qrel",
    "Ranking",
    "RetrievalEvent",
    "RetrievedDoc",
    "TimeLike",
    "answer_event",
    "decode_batch",
    "decode_event",
    "decode_reference",
    "decode_rejected",
    "dedupe_results",
    "encode_event",
    "event_json_schema",
    "fast_decode",
    "feedback_event",
    "format_rfc3339",
    "inline_labels",
    "message_key",
    "parse_rfc3339",
    "retrieval_event",
    "to_decoded",
]
