"""Event schemas (v1): models, decoding with reason codes, and helpers for producers.

The pydantic models (`RetrievalEvent`, `AnswerEvent`, `FeedbackEvent`, `models.py`) are the
published contract and what the builders (`builders.py`) make; `decode_event` returns their
msgspec counterparts (`DecodedRetrieval`, ..., `structs.py`), with the same fields.
Decoding, fastest first: the compiled scanner (`scanner.py`), msgspec (`msgspec_decode.py`,
behind the `guard.py` check), the pydantic reference (`reference.py`, which names every
reason of `reasons.py`); `batch.py` chains them for a batch as the engine reads it.
"""

from ragstream.events.batch import BatchRead, BatchReader, Read
from ragstream.events.builders import (
    TimeLike,
    answer_event,
    encode_event,
    feedback_event,
    message_key,
    retrieval_event,
    verdict_event,
)
from ragstream.events.decode import decode_batch, decode_event, decode_reference, decode_rejected
from ragstream.events.json_schema import event_json_schema
from ragstream.events.limits import DEFAULT_LIMITS, Limits
from ragstream.events.message import Message, Record, value_of
from ragstream.events.models import (
    EVENT_ADAPTER,
    MAX_ABS_REL,
    AnswerEvent,
    AnswerVerdict,
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
from ragstream.events.msgspec_decode import fast_decode
from ragstream.events.reasons import DECODE_REASONS, DecodeError, DecodeReason, IndexedDecodeError
from ragstream.events.structs import (
    DecodedAnswer,
    DecodedContext,
    DecodedDoc,
    DecodedEvent,
    DecodedFeedback,
    DecodedQrel,
    DecodedRetrieval,
    DecodedVerdict,
    to_decoded,
)
from ragstream.events.timestamps import format_rfc3339, parse_rfc3339

__all__ = [
    "DECODE_REASONS",
    "DEFAULT_LIMITS",
    "EVENT_ADAPTER",
    "MAX_ABS_REL",
    "AnswerEvent",
    "AnswerVerdict",
    "BatchRead",
    "BatchReader",
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
    "DecodedVerdict",
    "Event",
    "EventType",
    "FeedbackEvent",
    "IndexedDecodeError",
    "InlineLabel",
    "Limits",
    "Message",
    "Qrel",
    "Ranking",
    "Read",
    "Record",
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
    "value_of",
    "verdict_event",
]
