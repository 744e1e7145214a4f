"""Event schemas (v1): models, decoding with reason codes, and helpers for producers.

The msgspec Structs (`DecodedRetrieval`, `DecodedAnswer`, `DecodedFeedback`, `structs.py`)
are the schema the agent decodes with: `decode_event` (`decode.py`) returns them, and
`rejections.py` names the reason (`reasons.py`) of a message that is not one. The pydantic
models (`RetrievalEvent`, ..., `models.py`) have the same fields: they give the JSON Schema
(`json_schema.py`) and are what the producer helpers (`builders.py`) build. The engine reads
a batch with `BatchReader` (`batch.py`): the compiled scanner (`scanner.py`) reads retrieval
events of the common shape into `Scanned` records, `decode_event` the rest.
"""

from ragstream.events.batch import BatchReader, Read
from ragstream.events.builders import (
    answer_event,
    encode_event,
    feedback_event,
    message_key,
    retrieval_event,
    verdict_event,
)
from ragstream.events.decode import decode_batch, decode_event
from ragstream.events.limits import DEFAULT_LIMITS, Limits
from ragstream.events.message import Message, Record, value_of
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
    RetrievalEvent,
    RetrievedDoc,
    dedupe_results,
    inline_labels,
)
from ragstream.events.reasons import DECODE_REASONS, DecodeError, IndexedDecodeError
from ragstream.events.structs import (
    DecodedAnswer,
    DecodedDoc,
    DecodedEvent,
    DecodedFeedback,
    DecodedQrel,
    DecodedRetrieval,
    to_decoded,
)
from ragstream.events.timestamps import format_rfc3339, parse_rfc3339

__all__ = [
    "DECODE_REASONS",
    "DEFAULT_LIMITS",
    "EVENT_ADAPTER",
    "MAX_ABS_REL",
    "AnswerEvent",
    "BatchReader",
    "Context",
    "DecodeError",
    "DecodedAnswer",
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
    "Read",
    "Record",
    "RetrievalEvent",
    "RetrievedDoc",
    "answer_event",
    "decode_batch",
    "decode_event",
    "dedupe_results",
    "encode_event",
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
